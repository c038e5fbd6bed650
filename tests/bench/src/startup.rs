//! Start-up: spawning `mino-server` until `initialize` is answered, with an
//! empty `MINO_HOME` (a new session is created: directory, `SOUL.md`, the
//! header synced) and with a 100k-record session (opened, verified, replayed
//! into the transcript). Floors: spawning `mino-server --version` and
//! waiting for it (exec, dynamic loading, process exit), plus for the big
//! session the parse floor of `open.rs` (read the file, parse each line into
//! a `serde_json::Value`).

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::client::{server_bin, Server};
use crate::mock_stream::MockHost;
use crate::{best, child, Goal};

fn start_once(home: &std::path::Path, base_url: &str, options: serde_json::Value) -> Result<f64> {
    let started = Instant::now();
    let mut server = Server::spawn(home, base_url)?;
    server.initialize(options)?;
    let secs = started.elapsed().as_secs_f64();
    server.finish()?;
    Ok(secs)
}

pub fn run(quick: bool) -> Result<Vec<Goal>> {
    let runs = if quick { 5 } else { 9 };
    let host = MockHost::start()?;
    let base = host.mock.base_url();
    let bin = server_bin()?;

    let mut floor = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let status = Command::new(&bin).arg("--version").stdout(Stdio::null()).status()?;
        floor.push(t.elapsed().as_secs_f64());
        if !status.success() {
            bail!("mino-server --version failed");
        }
    }
    let floor = best(floor);

    let mut empty = Vec::new();
    for _ in 0..runs {
        let home = tempfile::tempdir()?;
        empty.push(start_once(home.path(), &base, json!({}))?);
    }
    let empty = best(empty);

    let home = tempfile::tempdir()?;
    let sessions = home.path().join("sessions");
    std::fs::create_dir_all(&sessions)?;
    let path = sessions.join("bench.jsonl");
    let bytes = crate::journal_gen::write_session(&path, 100_000)?;
    let p = path.to_str().context("utf-8 path")?;
    let _ = std::fs::read(&path)?;
    let mut parse = Vec::new();
    let mut big = Vec::new();
    for _ in 0..runs.min(5) {
        parse.push(child(&["floor", p])?["secs"].as_f64().unwrap_or(f64::NAN));
        big.push(start_once(home.path(), &base, json!({ "session": "bench" }))?);
    }
    let (parse, big) = (best(parse), best(big));
    let ms = |s: f64| s * 1e3;
    println!(
        "start-up to initialize answered: empty MINO_HOME {:.1} ms (spawn floor {:.1} ms), 100k-record session ({:.0} MiB) {:.1} ms (floor: spawn + parse {:.1} ms, {:.2}x)",
        ms(empty),
        ms(floor),
        bytes as f64 / 1048576.0,
        ms(big),
        ms(floor + parse),
        big / (floor + parse)
    );
    Ok(vec![
        Goal {
            name: "start-up, empty MINO_HOME (spawn to initialize answered)".into(),
            figure: format!("{:.1} ms (spawn+exit of --version {:.1} ms)", ms(empty), ms(floor)),
            goal: "report".into(),
            met: true,
        },
        Goal {
            name: "start-up, 100k-record session".into(),
            figure: format!(
                "{:.1} ms ({:.2}x spawn + parse floor {:.1} ms)",
                ms(big),
                big / (floor + parse),
                ms(floor + parse)
            ),
            goal: "report".into(),
            met: true,
        },
    ])
}
