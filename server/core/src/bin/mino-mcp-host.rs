//! A stand-in for `mino-server` in the core's tests: starts one MCP server
//! with `mino_core::mcp::process::spawn_stdio` (its supervisor being
//! `mino-supervisor`), prints the server's pid on stdout and waits, so a
//! test can SIGKILL it and see that the server's group goes too.
//!
//! Usage: `mino-mcp-host <supervisor> <command> [args...]`

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use mino_core::mcp::process::{spawn_stdio, StdioServerSpec};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [supervisor, command, rest @ ..] = args.as_slice() else {
        eprintln!("usage: mino-mcp-host <supervisor> <command> [args...]; it is run by mino-core's tests");
        std::process::exit(2);
    };
    let spec = StdioServerSpec {
        name: "host".into(),
        command: command.clone(),
        args: rest.to_vec(),
        env: BTreeMap::new(),
        cwd: None,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mino-mcp-host: cannot start a runtime: {e}");
            std::process::exit(1);
        }
    };
    runtime.block_on(async {
        match spawn_stdio(&spec, Path::new(supervisor)).await {
            Ok(child) => {
                let mut out = std::io::stdout();
                let _ = writeln!(out, "{}", child.pid().unwrap_or(0));
                let _ = out.flush();
                // Holds the child (and its pipes) until killed.
                std::future::pending::<()>().await;
                drop(child);
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    });
}
