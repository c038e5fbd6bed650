//! A stdio MCP server under its supervisor (`mino_core::mcp::process`):
//! it never outlives the process that started it, whatever kills that
//! process; its stderr goes to the log, never to the protocol stream; the
//! values of its `env` never reach the log. Real processes throughout;
//! waits poll /proc with a deadline.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use mino_core::mcp::process::{spawn_stdio, McpSpawnError, StdioServerSpec, MAX_STDERR_LINE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SUPERVISOR: &str = env!("CARGO_BIN_EXE_mino-supervisor");
const HOST: &str = env!("CARGO_BIN_EXE_mino-mcp-host");

/// A shell that forks a grandchild, then becomes a long sleep itself.
const FORKING_SERVER: &str = "sleep 300 & exec sleep 300";

/// Whatever kills the parent, the group is gone within this.
const GONE_WITHIN: Duration = Duration::from_millis(1500);

fn spec(name: &str, script: &str) -> StdioServerSpec {
    StdioServerSpec {
        name: name.into(),
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: BTreeMap::new(),
        cwd: None,
    }
}

/// (pid, state, ppid, pgrp) of every process, from /proc/<pid>/stat.
fn processes() -> Vec<(u32, char, u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
        // The name may hold spaces and parentheses: the fields follow the last `)`.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split(' ');
        let state = fields.next()?.chars().next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        Some((pid, state, ppid, pgrp))
    })
    .collect()
}

/// Live (not zombie) members of process group `pgid`.
fn live_members(pgid: u32) -> Vec<u32> {
    processes().into_iter().filter(|&(_, state, _, pgrp)| pgrp == pgid && state != 'Z').map(|(pid, ..)| pid).collect()
}

fn alive(pid: u32) -> bool {
    processes().into_iter().any(|(p, state, ..)| p == pid && state != 'Z')
}

/// Polls `done` until it holds or `within` has passed; true if it held.
fn wait_for(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigkill_of_the_parent_stops_the_server_group_grandchildren_included() {
    let mut host = std::process::Command::new(HOST)
        .args([SUPERVISOR, "sh", "-c", FORKING_SERVER])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start mino-mcp-host");
    let mut line = String::new();
    std::io::BufReader::new(host.stdout.take().expect("stdout")).read_line(&mut line).expect("read the pid");
    let pid: u32 = line.trim().parse().unwrap_or_else(|_| panic!("the host printed no pid: {line:?}"));
    assert!(wait_for(Duration::from_secs(10), || live_members(pid).len() >= 2), "the shell's background sleep started");
    let supervisor: Vec<u32> =
        processes().into_iter().filter(|&(_, _, ppid, _)| ppid == host.id()).map(|(p, ..)| p).collect();
    assert_eq!(supervisor.len(), 1, "one supervisor, the host's child");

    host.kill().expect("SIGKILL the host");
    let killed = Instant::now();
    let _ = host.wait();
    let gone = wait_for(GONE_WITHIN, || live_members(pid).is_empty());
    assert!(gone, "after {:?} the server's group still has {:?}", killed.elapsed(), live_members(pid));
    // The figure in docs/reliability.md (`-- --nocapture` shows it).
    eprintln!("the server's group was gone {:?} after the SIGKILL of its parent", killed.elapsed());
    assert!(wait_for(GONE_WITHIN, || !alive(supervisor[0])), "the supervisor exited too");
}

#[tokio::test]
async fn stop_stops_the_group_and_returns_once_it_is_gone() {
    let child = spawn_stdio(&spec("forking", FORKING_SERVER), Path::new(SUPERVISOR)).await.expect("spawn");
    let pid = child.pid().expect("pid");
    assert!(wait_for(Duration::from_secs(10), || live_members(pid).len() >= 2), "the background sleep started");
    let started = Instant::now();
    child.stop().await;
    let took = started.elapsed();
    // SIGKILL is delivered by the time the supervisor has reaped the
    // leader, but the grandchild's exit may lag a moment behind.
    assert!(wait_for(Duration::from_millis(200), || live_members(pid).is_empty()), "left: {:?}", live_members(pid));
    assert!(took < GONE_WITHIN, "stop took {took:?}");
}

#[tokio::test]
async fn dropping_the_child_stops_the_group() {
    let child = spawn_stdio(&spec("dropped", FORKING_SERVER), Path::new(SUPERVISOR)).await.expect("spawn");
    let pid = child.pid().expect("pid");
    assert!(wait_for(Duration::from_secs(10), || live_members(pid).len() >= 2), "the background sleep started");
    drop(child);
    assert!(wait_for(GONE_WITHIN, || live_members(pid).is_empty()), "left: {:?}", live_members(pid));
}

#[tokio::test]
async fn a_server_that_exits_takes_what_it_left_in_its_group() {
    let mut child =
        spawn_stdio(&spec("exiting", "sleep 300 & echo started; exit 0"), Path::new(SUPERVISOR)).await.expect("spawn");
    let pid = child.pid().expect("pid");
    // The background sleep holds stdout open: end of file comes only when
    // the supervisor has killed it.
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(10), child.stdout.read_to_string(&mut out))
        .await
        .expect("stdout closed once the shell exited")
        .expect("read");
    assert_eq!(out, "started\n");
    assert!(wait_for(GONE_WITHIN, || live_members(pid).is_empty()), "left: {:?}", live_members(pid));
    child.stop().await;
}

#[tokio::test]
async fn stdin_and_stdout_pass_through_untouched() {
    let McpChildParts { mut stdin, mut stdout, guard } = parts(
        spawn_stdio(
            &StdioServerSpec { name: "cat".into(), command: "cat".into(), ..Default::default() },
            Path::new(SUPERVISOR),
        )
        .await
        .expect("spawn"),
    );
    let sent: Vec<u8> = (0..1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let writer = {
        let sent = sent.clone();
        tokio::spawn(async move {
            stdin.write_all(&sent).await.expect("write");
            // Closing stdin ends `cat`.
        })
    };
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stdout.read_to_end(&mut received))
        .await
        .expect("cat ended at end of its input")
        .expect("read");
    writer.await.expect("writer");
    assert!(received == sent, "{} bytes came back for {} sent, or different ones", received.len(), sent.len());
    guard.stop().await;
}

struct McpChildParts {
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    guard: mino_core::mcp::process::McpGuard,
}

fn parts(child: mino_core::mcp::process::McpChild) -> McpChildParts {
    let (stdin, stdout, guard) = child.into_parts();
    McpChildParts { stdin, stdout, guard }
}

#[tokio::test]
async fn a_missing_command_or_directory_is_named_with_its_server() {
    let missing =
        StdioServerSpec { name: "ghost".into(), command: "mino-no-such-mcp-server".into(), ..Default::default() };
    let error = spawn_stdio(&missing, Path::new(SUPERVISOR)).await.err().expect("no such command");
    assert!(matches!(error, McpSpawnError::CommandNotFound { .. }), "{error:?}");
    let said = error.to_string();
    assert!(said.starts_with("MCP server `ghost`: command `mino-no-such-mcp-server` not found"), "{said}");

    let by_path = StdioServerSpec { command: "/nonexistent/mcp-server".into(), ..missing.clone() };
    let said = spawn_stdio(&by_path, Path::new(SUPERVISOR)).await.err().expect("no such path").to_string();
    assert_eq!(said, "MCP server `ghost`: command `/nonexistent/mcp-server` does not exist");

    let no_dir = StdioServerSpec { command: "sh".into(), cwd: Some("/nonexistent/dir".into()), ..missing };
    let said = spawn_stdio(&no_dir, Path::new(SUPERVISOR)).await.err().expect("no such cwd").to_string();
    assert_eq!(said, "MCP server `ghost`: cwd /nonexistent/dir does not exist");
}

/// Everything logged by this test binary, at every level.
fn log() -> &'static Mutex<Vec<u8>> {
    static LOG: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();
    static INSTALLED: OnceLock<()> = OnceLock::new();
    let log = LOG.get_or_init(|| Mutex::new(Vec::new()));
    INSTALLED.get_or_init(|| {
        struct Writer;
        impl Write for Writer {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if let Some(log) = LOG.get() {
                    log.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
                }
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let _ = tracing_subscriber::fmt()
            .with_writer(|| Writer)
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .try_init();
    });
    log
}

fn logged() -> String {
    String::from_utf8_lossy(&log().lock().unwrap_or_else(|e| e.into_inner())).into_owned()
}

#[tokio::test]
async fn stderr_reaches_the_log_and_not_stdout_and_env_values_stay_out_of_the_log() {
    log();
    let secret = "s3cr3t-value-4242";
    let mut spec = spec(
        "noisy",
        // The secret reaches the server (it compares it), Mino's own
        // environment beyond the allowlist does not (CARGO_MANIFEST_DIR is
        // set for this test by cargo), and the server prints its secret on
        // stderr, as a careless one would.
        r#"echo "stderr line one; token=$MINO_TEST_TOKEN" >&2
           test "$MINO_TEST_TOKEN" = s3cr3t-value-4242 && echo "got the token"
           echo "manifest dir: ${CARGO_MANIFEST_DIR:-unset}""#,
    );
    spec.env.insert("MINO_TEST_TOKEN".into(), secret.into());
    let mut child = spawn_stdio(&spec, Path::new(SUPERVISOR)).await.expect("spawn");
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(10), child.stdout.read_to_string(&mut out))
        .await
        .expect("the script ended")
        .expect("read");
    child.stop().await;
    assert_eq!(out, "got the token\nmanifest dir: unset\n", "stdout holds only what the server wrote there");
    let log = logged();
    let line = log.lines().find(|l| l.contains("stderr line one")).unwrap_or_else(|| panic!("not logged:\n{log}"));
    assert!(line.contains("server=noisy"), "{line}");
    assert!(line.contains("token=[redacted]"), "{line}");
    assert!(!log.contains(secret), "the secret is in the log:\n{log}");
    // The variable's name may be logged, and is (at debug).
    assert!(log.contains("MINO_TEST_TOKEN"), "{log}");
}

#[tokio::test]
async fn stderr_is_bounded_per_line_and_in_rate() {
    log();
    let long = MAX_STDERR_LINE + 5000;
    let script = format!(
        "head -c {long} /dev/zero | tr '\\0' L >&2; echo >&2; i=0; while [ $i -lt 1000 ]; do echo flood-$i >&2; i=$((i+1)); done"
    );
    let child = spawn_stdio(&spec("flood", &script), Path::new(SUPERVISOR)).await.expect("spawn");
    let pid = child.pid().expect("pid");
    assert!(wait_for(Duration::from_secs(20), || !alive(pid)), "the script ended");
    child.stop().await;
    let log = logged();
    let line = log.lines().find(|l| l.contains("server=flood") && l.contains("LLLL")).expect("the long line");
    assert!(line.contains("[… 5000 more bytes]"), "{}", &line[line.len().saturating_sub(80)..]);
    assert!(line.len() < MAX_STDERR_LINE + 200, "cut: {} bytes", line.len());
    let flood = log.lines().filter(|l| l.contains("server=flood") && l.contains("flood-")).count();
    assert!(flood < 1000, "every line of a flood was logged");
    assert!(log.lines().any(|l| l.contains("server=flood") && l.contains("lines of stderr not logged")), "the count");
}

#[tokio::test]
async fn a_server_that_ignores_sigterm_is_killed_within_the_bound() {
    let child = spawn_stdio(&spec("stubborn", "trap '' TERM; sleep 300 & exec sleep 300"), Path::new(SUPERVISOR))
        .await
        .expect("spawn");
    let pid = child.pid().expect("pid");
    assert!(wait_for(Duration::from_secs(10), || live_members(pid).len() >= 2), "the background sleep started");
    let dropped = Instant::now();
    drop(child);
    assert!(
        wait_for(GONE_WITHIN, || live_members(pid).is_empty()),
        "left after {:?}: {:?}",
        dropped.elapsed(),
        live_members(pid)
    );
    eprintln!("a server ignoring SIGTERM was gone {:?} after its guard was dropped", dropped.elapsed());
}

/// The signals pending for `pid` (its own and its thread group's), from
/// /proc/<pid>/status.
fn pending_signals(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
        .filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
        .fold(0, |a, b| a | b)
}

#[tokio::test]
async fn the_supervisor_has_its_own_name_and_outlasts_sigterm_sighup_and_sigint() {
    let McpChildParts { mut stdin, stdout, guard } = parts(
        spawn_stdio(
            &StdioServerSpec { name: "cat".into(), command: "cat".into(), ..Default::default() },
            Path::new(SUPERVISOR),
        )
        .await
        .expect("spawn"),
    );
    let pid = guard.pid().expect("pid");
    let supervisor = processes().into_iter().find(|&(p, ..)| p == pid).map(|(_, _, ppid, _)| ppid).expect("its parent");
    let comm = std::fs::read_to_string(format!("/proc/{supervisor}/comm")).expect("comm");
    assert_eq!(comm.trim(), "mino-mcp-superv", "out of reach of `pkill mino-server`");
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        // SAFETY: kill(2) on a pid of our own child's process; no memory involved.
        unsafe { libc::kill(supervisor as i32, signal) };
    }
    assert!(wait_for(Duration::from_secs(5), || pending_signals(supervisor) == 0), "the signals were taken");
    assert!(alive(supervisor) && alive(pid), "the supervisor and the server outlast the signals");
    let mut lines = tokio::io::BufReader::new(stdout);
    stdin.write_all(b"still here\n").await.expect("write");
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(10), tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut line))
        .await
        .expect("an answer")
        .expect("read");
    assert_eq!(line, "still here\n");
    drop(stdin);
    guard.stop().await;
}

#[tokio::test]
async fn the_server_inherits_no_descriptor_beyond_its_stdio() {
    let mut child = spawn_stdio(&spec("fds", "ls /proc/$$/fd"), Path::new(SUPERVISOR)).await.expect("spawn");
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(10), child.stdout.read_to_string(&mut out))
        .await
        .expect("ls ended")
        .expect("read");
    child.stop().await;
    assert_eq!(out.split_whitespace().collect::<Vec<_>>(), ["0", "1", "2"]);
}
