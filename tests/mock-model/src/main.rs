//! `mino-mock-model [--port N] [--script FILE.json] [--no-nodelay]` — the mock model as a process, for the Node
//! and Lua tests of the editor clients.
//!
//! Prints exactly one line, `listening <base_url>`, on stdout once bound; logs go to stderr
//! (`RUST_LOG`, default `info`). Exits when stdin closes, so a crashed test runner never leaves
//! it behind, or on SIGTERM / SIGINT. With `--script -` the script is read as one JSON array
//! from stdin; keep stdin open afterwards, as its end still means "exit".

use std::io::{IsTerminal, Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;

use mino_mock_model::{MockModel, MockOptions, Reply};

const USAGE: &str = "usage: mino-mock-model [--port N] [--script FILE.json|-] [--no-nodelay]

Serves a scripted OpenAI Responses API (/v1/responses) and Chat Completions
(/v1/chat/completions) on 127.0.0.1 (port 0 = any free port).
Prints `listening <base_url>` once bound; exits when stdin closes or on SIGTERM.
FILE: JSON array of replies, e.g. [{\"type\":\"text\",\"deltas\":[\"Hi\",\" there!\"]}];
`-` reads it from stdin. --no-nodelay leaves Nagle's algorithm on (TCP_NODELAY unset),
like some local model servers. Control: GET /_mock/requests, POST /_mock/script, POST /_mock/reset.";

struct Args {
    port: u16,
    script: Option<String>,
    options: MockOptions,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { port: 0, script: None, options: MockOptions::default() };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value =
            |name: &str| inline.clone().or_else(|| it.next()).ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--port" => {
                let v = value("--port")?;
                args.port = v.parse().map_err(|_| format!("bad port: {v}"))?;
            }
            "--script" => args.script = Some(value("--script")?),
            "--no-nodelay" => args.options.nodelay = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    Ok(args)
}

fn load_script(source: Option<&str>) -> Result<Vec<Reply>, String> {
    match source {
        None => Ok(Vec::new()),
        Some("-") => {
            // Only the first JSON value is consumed, so stdin stays usable as the lifeline.
            let stdin = std::io::stdin();
            let mut values = serde_json::Deserializer::from_reader(stdin.lock()).into_iter();
            match values.next() {
                Some(Ok(script)) => Ok(script),
                Some(Err(e)) => Err(format!("bad script on stdin: {e}")),
                None => Err("stdin closed before a script was read".into()),
            }
        }
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
            serde_json::from_str(&text).map_err(|e| format!("bad script in {path}: {e}"))
        }
    }
}

/// A plain thread rather than tokio's stdin: a blocked tokio stdin read would hold up runtime
/// shutdown, whereas a detached thread just dies with the process.
fn watch_stdin() -> tokio::sync::oneshot::Receiver<()> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 4096];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = tx.send(());
    });
    rx
}

async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

async fn serve(port: u16, script: Vec<Reply>, options: MockOptions) -> Result<(), String> {
    let stdin_closed = watch_stdin();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let model = MockModel::start_with(addr, script, options).await.map_err(|e| format!("cannot bind {addr}: {e}"))?;
    let mut stdout = std::io::stdout().lock();
    // A test runner that stopped reading stdout is not a reason to stop serving.
    let _ = writeln!(stdout, "listening {}", model.base_url());
    let _ = stdout.flush();
    drop(stdout);
    tracing::info!("mock model listening on {}", model.base_url());
    tokio::select! {
        _ = stdin_closed => tracing::info!("stdin closed, exiting"),
        _ = terminated() => tracing::info!("signal received, exiting"),
    }
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Test runners capture stderr into logs, where colour codes are noise.
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let result = parse_args()
        .map_err(|e| format!("{e}\n{USAGE}"))
        .and_then(|args| Ok((args.port, load_script(args.script.as_deref())?, args.options)))
        .and_then(|(port, script, options)| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start runtime: {e}"))?;
            runtime.block_on(serve(port, script, options))
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mino-mock-model: {e}");
            ExitCode::from(2)
        }
    }
}
