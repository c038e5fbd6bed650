//! `mino-mock-model [--port N] [--script FILE.json|-] [--no-nodelay]` — the mock model as a process, for the Node
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

/// Serves a scripted OpenAI Responses API (/v1/responses) and Chat Completions
/// (/v1/chat/completions) on 127.0.0.1.
///
/// Prints `listening <base_url>` once bound; exits when stdin closes or on SIGTERM.
/// Control: GET /_mock/requests, POST /_mock/script, POST /_mock/reset.
#[derive(clap::Parser, Debug)]
#[command(name = "mino-mock-model")]
struct Args {
    /// The port to listen on (0 = any free port)
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// A JSON array of replies, e.g. [{"type":"text","deltas":["Hi"," there!"]}]; `-` reads it from stdin
    #[arg(long, value_name = "FILE.json|-")]
    script: Option<String>,
    /// Leave Nagle's algorithm on (TCP_NODELAY unset), like some local model servers
    #[arg(long)]
    no_nodelay: bool,
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
    // A usage error exits 2, as every failure here does.
    let args = <Args as clap::Parser>::parse();
    let options = MockOptions { nodelay: !args.no_nodelay };
    let result = load_script(args.script.as_deref()).map(|script| (args.port, script, options)).and_then(
        |(port, script, options)| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start runtime: {e}"))?;
            runtime.block_on(serve(port, script, options))
        },
    );
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mino-mock-model: {e}");
            ExitCode::from(2)
        }
    }
}
