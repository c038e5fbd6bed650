//! `mino-server`: Mino's agent over stdio, speaking JSON-RPC 2.0 with the
//! LSP base protocol's `Content-Length` framing. See `docs/protocol.md`.
//!
//! stdout carries only protocol frames; logs go to stderr (`RUST_LOG`).
//! Configuration: `MINO_HOME`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
//! `MINO_MODEL`, `MINO_PROVIDER`, `MINO_COMMAND_TIMEOUT_SECS`; the session is chosen by `initialize`'s options.

#![deny(clippy::print_stdout)]

use mino_server::{handlers, transport};

use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// What language clients append to ask for the stdio transport.
const STDIO_FLAG: &str = "--stdio";

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // A command's supervisor (see mino_core::supervisor): before any runtime,
    // logging or panic hook, which are the server's and not its.
    if args.first().map(String::as_str) == Some(mino_core::supervisor::FLAG) {
        std::process::exit(mino_core::supervisor::main(&args[1..]));
    }
    // `--stdio` names the only transport there is: language clients append it
    // (vscode-languageclient does for `TransportKind.stdio`), so it is a no-op.
    args.retain(|arg| arg != STDIO_FLAG);
    // `--acp`: the Agent Client Protocol front door (docs/acp.md), same core.
    let acp = args.first().map(String::as_str) == Some("--acp");
    if acp && args.len() > 1 {
        anyhow::bail!("--acp takes no other argument (got {:?}); try --help", &args[1..]);
    }
    match args.first().map(String::as_str).filter(|_| !acp) {
        Some("--version" | "-V") => {
            // Not the protocol stream: the server is not serving.
            let mut out = std::io::stdout().lock();
            writeln!(out, "{} {}", handlers::SERVER_NAME, handlers::VERSION)?;
            return Ok(());
        }
        Some("--help" | "-h") => {
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "{name} {version}\n\nMino's agent as a JSON-RPC server on stdin/stdout (LSP base protocol).\n\
                 Started by a client, not by hand. See docs/protocol.md.\n\n\
                 Environment: MINO_HOME, OPENAI_API_KEY, OPENAI_BASE_URL, MINO_MODEL, MINO_PROVIDER, MINO_COMMAND_TIMEOUT_SECS, MINO_SANDBOX, RUST_LOG (logs go to stderr).\n\n\
                 Options:\n  --acp      speak the Agent Client Protocol instead (see docs/acp.md)\n  --stdio    accepted and ignored: stdin/stdout is the only transport (language clients append it)\n  --version  print the version and exit\n  --help     print this help and exit",
                name = handlers::SERVER_NAME,
                version = handlers::VERSION,
            )?;
            return Ok(());
        }
        Some(other) => anyhow::bail!("unknown argument {other:?}; try --help"),
        None => {}
    }

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
        let (service, socket, handle) = handlers::service();
        transport::serve(tokio::io::stdin(), std::io::stdout(), service, socket, handle).await;
    });
    // A blocking stdin read may still be pending (after `exit`); do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    tracing::info!("exiting");
    Ok(())
}
