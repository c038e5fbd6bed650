//! Listing sessions (`SessionStore::list`, all workspaces, pages of 500)
//! against the floor of reading each journal's first and last 4 KiB: the
//! least any list of titles, turn counts and flags must read.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use mino_core::journal::record::{encode_line, RecordBody};
use mino_core::session_store::{ListScope, SessionStore, PROBE_BYTES};
use mino_core::MinoHome;

use crate::{best, median, Goal};

const SESSIONS: usize = 1_000;
const SESSION_BYTES: u64 = 1 << 20;

pub fn run(quick: bool) -> Result<Vec<Goal>> {
    // A pass takes about 10 ms: even the quick run can afford enough of them
    // for its best to be steady on a busy machine.
    let runs = if quick { 9 } else { 15 };
    let dir = tempfile::tempdir()?;
    let home = MinoHome::new(dir.path().join("home"));
    let sessions = home.ensure_sessions_dir()?;
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace)?;
    write_sessions(&sessions, &workspace)?;
    let store = SessionStore::new(home, &workspace)?;

    let (mut floor, mut list) = (Vec::new(), Vec::new());
    // Alternating, after one untimed pass of each, so both read from a
    // page cache in the same state.
    let _ = (read_ends(&sessions)?, list_all(&store)?);
    for _ in 0..runs {
        let started = Instant::now();
        let files = read_ends(&sessions)?;
        floor.push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let listed = list_all(&store)?;
        list.push(started.elapsed().as_secs_f64());
        ensure!(files == SESSIONS && listed == SESSIONS, "read {files} files and listed {listed} sessions");
    }
    // The best pass of each: what other processes add to a pass (they are
    // many on a shared machine, and a list makes more system calls than the
    // floor, each a chance to be preempted) is noise, not Mino's cost.
    let (floor_median, list_median) = (median(floor.clone()), median(list.clone()));
    let (floor, list) = (best(floor), best(list));
    println!(
        "sessions list, {SESSIONS} sessions of 1 MiB, best of {runs}: floor (first and last 4 KiB of each) {:.1} ms, list {:.1} ms ({:.2}x); medians {:.1} ms and {:.1} ms ({:.2}x)",
        floor * 1e3,
        list * 1e3,
        list / floor,
        floor_median * 1e3,
        list_median * 1e3,
        list_median / floor_median
    );
    Ok(vec![Goal {
        name: format!("list {SESSIONS} sessions of 1 MiB"),
        figure: format!("{:.2}x floor ({:.1} ms vs {:.1} ms)", list / floor, list * 1e3, floor * 1e3),
        goal: "<= 2x".into(),
        met: list / floor <= 2.0,
    }])
}

/// Sessions per `list` call: all of them in one by default;
/// `MINO_BENCH_SESSIONS_PAGE=500` lists them as a client does over the wire
/// (at most 500 a page), each page reading the directory again.
fn page_size() -> usize {
    std::env::var("MINO_BENCH_SESSIONS_PAGE").ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(SESSIONS)
}

/// Every session, page by page.
fn list_all(store: &SessionStore) -> Result<usize> {
    let mut listed = 0;
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list(ListScope::All, page_size(), cursor.as_deref())?;
        listed += page.sessions.len();
        ensure!(page.sessions.iter().all(|e| e.turns > 0 && e.title.is_some() && e.damage.is_none()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(listed),
        }
    }
}

/// The floor: for each file in the directory, its length and its first and
/// last [`PROBE_BYTES`].
fn read_ends(dir: &Path) -> Result<usize> {
    let mut buf = vec![0u8; PROBE_BYTES as usize];
    let mut files = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        file.read_exact_at(&mut buf, 0)?;
        file.read_exact_at(&mut buf, len - PROBE_BYTES)?;
        files += 1;
    }
    Ok(files)
}

/// 1,000 realistic journals of about 1 MiB (`journal_gen`'s turns), each
/// with a header of its own.
fn write_sessions(sessions: &Path, workspace: &Path) -> Result<()> {
    let template = sessions.join("template");
    let probe = crate::journal_gen::write_session(&template, 100)?;
    let records = (100 * SESSION_BYTES / probe.max(1)) as usize;
    crate::journal_gen::write_session(&template, records)?;
    let bytes = std::fs::read(&template)?;
    std::fs::remove_file(&template)?;
    let body = &bytes[bytes.iter().position(|b| *b == b'\n').context("a header line")? + 1..];
    for i in 0..SESSIONS {
        let id = format!("20261129T{:06}-{i:06x}", i);
        let header = RecordBody::Session {
            session_id: id.clone(),
            created_at: "2026-11-29T00:00:00Z".into(),
            cwd: workspace.display().to_string(),
            mino_version: "bench".into(),
            forked_from: None,
        };
        let mut out = std::io::BufWriter::new(File::create(sessions.join(format!("{id}.jsonl")))?);
        out.write_all(&encode_line(1, &header))?;
        out.write_all(body)?;
        out.flush()?;
        // Mino leaves a session's lock file in place once it has opened it.
        File::create(sessions.join(format!("{id}.lock")))?;
    }
    Ok(())
}
