//! `mino`: Mino's terminal client. It starts `mino-server`, talks to it over
//! stdio (JSON-RPC with `Content-Length` frames) and reproduces the book's
//! terminal: the recovery gate, the banner, restored history, streamed
//! answers and command approvals.

mod app;
mod client;
mod demo;
mod editor;
mod input;
mod markdown;
mod menu;
mod notifications;
mod reads;
mod term;
mod transport;
mod ui;

use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::Stdio;

use mino_protocol::InitializationOptions;

use crate::app::{App, Options, EXIT_FAILURE};
use crate::client::Launch;
use crate::demo::Demo;

const EXIT_USAGE: i32 = 2;

/// What `--help` shows after the options.
const AFTER_HELP: &str = "\
Environment:
  OPENAI_API_KEY    API key for the model service (required without --demo)
  OPENAI_BASE_URL   Model service base URL (default: OpenAI)
  MINO_MODEL        Model name
  MINO_HOME         Where sessions are kept (default: ~/.mino)
  MINO_SERVER       Path of mino-server, if it is not beside mino or on PATH
  RUST_LOG          Show mino-server's log on stderr (otherwise $MINO_HOME/logs/server.log)
  (mino-server --help lists every setting the server reads.)

In the chat: /new starts a new session, /sessions lists this directory's
sessions, /open ID opens one (a unique start of the id will do; its recovery
is shown, and asked about, as at startup); /compact has the model summarise
the conversation so far, so that later questions send the summary instead of
the earlier turns. /model lists the models to choose from; /model NAME
chooses one for this session (it keeps it when reopened; a name the service
does not list is asked about first). /env shows the last command's full
environment. @path attaches a file of the session's directory to the question
(Tab completes the path).

Commands run only after you approve them. Use /exit, Ctrl+D, or Ctrl+C to quit;
Ctrl+C during a turn cancels it.
";

/// mino - a coding agent in your terminal
// A usage error exits 2 (clap's code), as a missing API key does.
#[derive(clap::Parser, Debug)]
#[command(
    name = "mino",
    version,
    override_usage = "mino [--demo] [--session ID | --new]\n       mino --list",
    after_help = AFTER_HELP
)]
struct Args {
    /// Run offline against a scripted model in a temporary directory (no API key, touches none of your files)
    #[arg(long)]
    demo: bool,
    /// Open session ID, from any directory (default: this directory's most recent session that no other Mino has
    /// open, or a new one)
    #[arg(long, value_name = "ID", value_parser = clap::builder::NonEmptyStringValueParser::new(), conflicts_with = "new_session")]
    session: Option<String>,
    /// Start a new session
    #[arg(long = "new")]
    new_session: bool,
    /// List this directory's sessions (id, last active, turns, title, and whether another Mino has one open or one
    /// waits for an acknowledgement) and exit; use it alone
    #[arg(long, conflicts_with_all = ["demo", "session", "new_session"])]
    list: bool,
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// `mino-server` beside this executable, else `$MINO_SERVER`, else from PATH.
fn server_program() -> PathBuf {
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let beside = dir.join("mino-server");
            if beside.is_file() {
                return beside;
            }
        }
    }
    if let Some(p) = std::env::var_os("MINO_SERVER").filter(|v| !v.is_empty()) {
        // Relative to where mino was started, even when the server is
        // started in another directory (the demo's).
        let p = PathBuf::from(p);
        return match (p.is_relative() && p.components().count() > 1, std::env::current_dir()) {
            (true, Ok(cwd)) => cwd.join(p),
            _ => p,
        };
    }
    PathBuf::from("mino-server")
}

/// The server's stderr: inherited when RUST_LOG asks for logs, else appended
/// to `<home>/logs/server.log` so it never garbles the terminal.
fn server_stderr(home: Option<PathBuf>) -> (Stdio, String) {
    if env_set("RUST_LOG") {
        return (Stdio::inherit(), "its log is on stderr".to_owned());
    }
    let Some(home) = home else {
        return (Stdio::null(), "set RUST_LOG=info to see its log".to_owned());
    };
    let dir = home.join("logs");
    let path = dir.join("server.log");
    let file = std::fs::create_dir_all(&dir).and_then(|_| OpenOptions::new().create(true).append(true).open(&path));
    match file {
        Ok(f) => (Stdio::from(f), format!("see {}", path.display())),
        Err(_) => (Stdio::null(), "set RUST_LOG=info to see its log".to_owned()),
    }
}

async fn run(args: Args) -> i32 {
    let mut env = Vec::new();
    let mut cwd = None;
    let demo = if args.demo {
        match Demo::start().await {
            Ok(d) => {
                env.push(("MINO_HOME".to_owned(), d.home().display().to_string()));
                env.push(("OPENAI_BASE_URL".to_owned(), d.base_url()));
                env.push(("OPENAI_API_KEY".to_owned(), "demo".to_owned()));
                cwd = Some(d.work());
                tracing::debug!("demo in {}", d.root().display());
                Some(d)
            }
            Err(e) => {
                eprintln!("mino: could not set up the demo: {e:#}");
                return EXIT_FAILURE;
            }
        }
    } else {
        // Listing asks the model nothing.
        if !args.list && !env_set("OPENAI_API_KEY") && !env_set("OPENAI_BASE_URL") {
            eprintln!(
                "mino: no API key. Set one for the model service:\n\n    export OPENAI_API_KEY=...\n\n\
                 (or OPENAI_BASE_URL for a compatible endpoint), or try Mino offline first:\n\n    mino --demo"
            );
            return EXIT_USAGE;
        }
        None
    };
    let home = match &demo {
        Some(d) => Some(d.home()),
        None => app::mino_home(),
    };
    let (stderr, log_hint) = server_stderr(home);
    let cwd_for_init = match &cwd {
        Some(dir) => Some(dir.clone()),
        None => std::env::current_dir().ok(),
    };
    let workspace = cwd_for_init.clone().unwrap_or_else(|| PathBuf::from("."));
    let init = InitializationOptions {
        cwd: cwd_for_init.map(|d| d.display().to_string()),
        session: args.session,
        new_session: args.new_session,
        ..Default::default()
    };
    let launch = Launch { program: server_program(), cwd, env, stderr };
    match App::start(Options { launch, init, demo, log_hint, workspace }).await {
        Ok(app) if args.list => app.print_sessions().await,
        Ok(app) => app.run().await,
        Err(code) => code,
    }
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    if env_set("RUST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .try_init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mino: cannot start the async runtime: {e}");
            std::process::exit(EXIT_FAILURE);
        }
    };
    let code = runtime.block_on(run(args));
    // The stdin reader thread may be blocked in read(); do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    std::process::exit(code);
}
