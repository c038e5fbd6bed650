//! `mino-server`: Mino's agent over stdio, speaking JSON-RPC 2.0 with the
//! LSP base protocol's `Content-Length` framing. See `docs/protocol.md`.
//!
//! stdout carries only protocol frames; logs go to stderr (`RUST_LOG`).
//! Configuration: the environment variables of `mino_core::settings` (listed
//! by `--help`); the session is chosen by `initialize`'s options.

#![deny(clippy::print_stdout)]

use mino_server::{handlers, transport};

use std::time::Duration;

use anyhow::Context;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// `mino-server`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = handlers::SERVER_NAME,
    version = handlers::VERSION,
    about = "Mino's agent as a JSON-RPC server on stdin/stdout (LSP base protocol).\nStarted by a client, not by hand. See docs/protocol.md.",
    long_about = None,
    after_help = mino_core::settings::help()
)]
struct Cli {
    /// Speak the Agent Client Protocol instead (see docs/acp.md)
    #[arg(long)]
    acp: bool,
    /// Accepted and ignored: stdin/stdout is the only transport (language clients append it)
    // vscode-languageclient appends it for `TransportKind.stdio`.
    #[arg(long)]
    stdio: bool,
}

/// A refused command line, said as `unknown argument "--x"; try --help` when
/// an argument is unknown, else as clap says it.
fn usage_error(error: &clap::Error) -> String {
    let invalid = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) if error.kind() == ErrorKind::UnknownArgument => arg.clone(),
        _ => return error.render().to_string().trim_start_matches("error: ").trim_end().to_string(),
    };
    let suggestion = match error.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(arg)) => format!(" (did you mean {arg}?)"),
        _ => String::new(),
    };
    format!("unknown argument {invalid:?}{suggestion}; try --help")
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A command's supervisor (see mino_core::supervisor): before any runtime,
    // logging or panic hook, which are the server's and not its.
    if args.first().map(String::as_str) == Some(mino_core::supervisor::FLAG) {
        std::process::exit(mino_core::supervisor::main(&args[1..]));
    }
    // An MCP server's supervisor (see mino_core::mcp::process), likewise.
    if args.first().map(String::as_str) == Some(mino_core::mcp::process::FLAG) {
        std::process::exit(mino_core::mcp::process::main(&args[1..]));
    }
    let cli = match Cli::try_parse_from(std::iter::once(handlers::SERVER_NAME.to_string()).chain(args)) {
        Ok(cli) => cli,
        // `--help` and `--version`: printed on stdout, which is not the
        // protocol stream here since the server is not serving.
        Err(e) if !e.use_stderr() => {
            e.print().context("cannot print")?;
            return Ok(());
        }
        Err(e) => anyhow::bail!("{}", usage_error(&e)),
    };
    // `--stdio` names the only transport there is, so it changes nothing.
    let Cli { acp, stdio: _ } = cli;

    // What the sandbox can enforce is probed (forked children) while this
    // process is still single-threaded and before the hardening below, so
    // no fork of a hardened server is ever made dumpable again.
    let support = mino_core::sandbox::detect();
    // Before any thread starts: the key leaves the environment block, the
    // process becomes non-dumpable, no core dumps (mino_core::hardening).
    // SAFETY: no other thread exists yet; the runtime is built below.
    let hardening = unsafe { mino_core::hardening::harden_process() };

    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")))
        .init();

    // A panic anywhere (a turn's task included) is a crash: the agent's state
    // can no longer be trusted, and a turn task that died would leave the
    // session wedged with a turn that never ends. Abort instead, so the client
    // sees the server exit and the next start recovers the session from its
    // journal, as after any other crash.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        tracing::error!("panic: {info}; aborting, the session will be recovered when it is next opened");
        std::process::abort();
    }));

    tracing::info!(%hardening, "process hardening");
    tracing::debug!(?support, "sandbox support");

    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();

    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    runtime.block_on(async {
        if acp {
            return mino_acp::serve_stdio().await;
        }
        transport::serve(tokio::io::stdin(), std::io::stdout(), handlers::service()).await;
    });
    // A blocking stdin read may still be pending (after `exit`); do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    tracing::info!("exiting");
    Ok(())
}
