//! MCP: the time Mino adds to a tool call, and a session's start-up with
//! five stdio servers, each against a floor measured in the same run with
//! the same real servers (npm's `@modelcontextprotocol/server-everything`
//! and `server-filesystem`, and the Python SDK's server of tests/mcp-servers;
//! `scripts/bench` points to them through `scripts/test mcp-env`).
//!
//! - A call: the bench speaks MCP itself to server-everything (`initialize`,
//!   then `tools/call echo` one after another: the floor, each call's round
//!   trip), then runs the same calls through `mino-server`, a workspace rule
//!   (`every/echo`) approving them without a question, and times each from
//!   `mino/toolStarted` (the start synced, the call about to be sent) to
//!   `mino/toolResult` (the result saved), as the bench's reading thread
//!   read their frames. Mino's added time is the median
//!   of those minus the floor's median. `MINO_HOME` is on tmpfs when there
//!   is one, so the result's sync is not a disk's (the `turn` part measures
//!   syncs). Goal: under 1 ms.
//! - Start-up: each server alone through Mino (from `initialize` sent to its
//!   `mino/mcp/status` ready), then all five at once (to the last ready),
//!   and the floor: the bench starting the five itself, concurrently, each
//!   to its `tools/list` answer. Goal: the five through Mino within 25% and
//!   100 ms of the floor (started concurrently: near the slowest, not the sum).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mino_core::rules::{file, Rule, RuleKind, RuleScope};
use mino_core::MinoHome;
use mino_mock_model::Reply;
use serde_json::{json, Value};

use crate::client::{Server, READ_AT};
use crate::mock_stream::MockHost;
use crate::{best, median, Goal};

const WAIT: Duration = Duration::from_secs(120);

fn var(name: &str) -> Result<String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .with_context(|| format!("{name} is not set: run through scripts/bench, which sets it (scripts/test mcp-env)"))
}

/// One stdio server: its name, program and arguments.
#[derive(Clone)]
struct Stdio3 {
    name: String,
    program: String,
    args: Vec<String>,
}

impl Stdio3 {
    fn table(&self) -> String {
        format!(
            "[mcp_servers.{}]\ncommand = {:?}\nargs = {:?}\nstartup_timeout_sec = 120\n",
            self.name, self.program, self.args
        )
    }
}

/// The five servers of the start-up part, and the one of the call part.
fn servers(dir: &Path) -> Result<Vec<Stdio3>> {
    let everything = var("MINO_TEST_MCP_EVERYTHING")?;
    let filesystem = var("MINO_TEST_MCP_FILESYSTEM")?;
    let (python, script) = (var("MINO_TEST_MCP_PYTHON")?, var("MINO_TEST_MCP_SERVER_PY")?);
    let dir = dir.display().to_string();
    let s = |name: &str, program: &str, args: Vec<String>| Stdio3 { name: name.into(), program: program.into(), args };
    Ok(vec![
        s("every", "node", vec![everything.clone(), "stdio".into()]),
        s("every2", "node", vec![everything, "stdio".into()]),
        s("fs", "node", vec![filesystem.clone(), dir.clone()]),
        s("fs2", "node", vec![filesystem, dir]),
        s("py", &python, vec![script, "--transport".into(), "stdio".into()]),
    ])
}

/// The bench's own MCP client over a server's stdio: one JSON-RPC message a line.
struct Direct {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Direct {
    fn spawn(server: &Stdio3, cwd: &Path) -> Result<Direct> {
        let mut child = Command::new(&server.program)
            .args(&server.args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", server.program))?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        Ok(Direct { child, stdin, stdout, next_id: 1 })
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        line.push(b'\n');
        self.stdin.write_all(&line)?;
        self.stdin.flush()?;
        let mut text = String::new();
        loop {
            text.clear();
            if self.stdout.read_line(&mut text)? == 0 {
                bail!("the server closed its output during {method}");
            }
            // Notifications (logging, progress) are passed over.
            let Ok(message) = serde_json::from_str::<Value>(&text) else { continue };
            if message.get("id").and_then(Value::as_u64) == Some(id) && message.get("method").is_none() {
                if let Some(error) = message.get("error") {
                    bail!("{method} failed: {error}");
                }
                return Ok(message);
            }
        }
    }

    /// `initialize`, `notifications/initialized`, `tools/list`.
    fn handshake(&mut self) -> Result<()> {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mino-bench", "version": "0"}}),
        )?;
        self.stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        self.request("tools/list", json!({}))?;
        Ok(())
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `MINO_HOME` on tmpfs when there is one.
fn home_dir() -> Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    Ok(if shm.is_dir() { tempfile::tempdir_in(shm)? } else { tempfile::tempdir()? })
}

/// A `mino-server` with `servers` configured, opened on `cwd` in approval
/// mode `rules`; returns it once `initialize` is answered.
fn mino_with(home: &Path, cwd: &Path, servers: &[Stdio3], base_url: &str) -> Result<Server> {
    let config: String = servers.iter().map(Stdio3::table).collect::<Vec<_>>().join("\n");
    std::fs::write(home.join("config.toml"), config)?;
    let mut server = Server::spawn(home, base_url)?;
    // What comes before the answer is kept: a server may be ready by then.
    server.seen = Some(Vec::new());
    server
        .initialize(json!({"cwd": cwd.display().to_string(), "approvalMode": "rules"}))
        .context("mino-server did not answer initialize")?;
    // The session (and its MCP servers) starts once the client says it is initialized.
    server.notify("initialized", json!({}))?;
    Ok(server)
}

/// Waits until every one of `names` has said `ready`; a failure ends the run.
fn wait_ready(server: &mut Server, names: &[String]) -> Result<()> {
    fn take(note: &Value, ready: &mut Vec<String>) -> Result<()> {
        if note["method"] != "mino/mcp/status" {
            return Ok(());
        }
        let status = &note["params"];
        let name = status["server"].as_str().unwrap_or_default().to_string();
        match status["state"].as_str() {
            Some("ready") if !ready.contains(&name) => ready.push(name),
            Some("failed" | "exited") => bail!("MCP server {name} did not start: {}", status["reason"]),
            _ => {}
        }
        Ok(())
    }
    let mut ready: Vec<String> = Vec::new();
    for note in server.seen.take().unwrap_or_default() {
        take(&note, &mut ready)?;
    }
    while ready.len() < names.len() {
        let note = server
            .wait_for(WAIT, |m| m["method"] == "mino/mcp/status")
            .with_context(|| format!("MCP servers not ready in time: {ready:?} of {names:?}"))?;
        take(&note, &mut ready)?;
    }
    Ok(())
}

pub fn run(quick: bool) -> Result<Vec<Goal>> {
    let calls = if quick { 30 } else { 200 };
    let reps = if quick { 2 } else { 5 };
    let work = tempfile::tempdir()?;
    let cwd = work.path().canonicalize()?;
    let all = servers(&cwd)?;
    let host = MockHost::start()?;
    let base = host.mock.base_url();
    let mut goals = call_overhead(&host, &base, &all[0], &cwd, calls)?;
    goals.extend(startup(&base, &all, &cwd, reps)?);
    Ok(goals)
}

fn call_overhead(host: &MockHost, base: &str, every: &Stdio3, cwd: &Path, calls: usize) -> Result<Vec<Goal>> {
    let message = "the same words each time";
    // The floor: the bench's own client, the same server, the same calls.
    let mut direct = Direct::spawn(every, cwd)?;
    direct.handshake()?;
    let mut floor = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        let answer = direct.request("tools/call", json!({"name": "echo", "arguments": {"message": message}}))?;
        floor.push(t.elapsed().as_secs_f64());
        if !answer.to_string().contains(message) {
            bail!("server-everything's echo did not echo: {answer}");
        }
    }
    drop(direct);

    // Through Mino: a workspace rule approves every call, so no question is asked.
    let home = home_dir()?;
    let rule = Rule::new(Rule::new_id(), RuleKind::Mcp, &format!("{}/echo", every.name), RuleScope::Workspace)?;
    let rules = file::workspace_rules_path(&MinoHome::new(home.path().to_path_buf()), cwd)?;
    file::append(&rules, cwd, &rule)?;
    // A turn makes at most 8 model requests: 5 calls and the answer each.
    const PER_TURN: usize = 5;
    let turns = calls.div_ceil(PER_TURN);
    for turn in 0..turns {
        for i in 0..PER_TURN {
            host.mock.push(Reply::NamedCall {
                call_id: format!("c{turn}_{i}"),
                name: format!("mcp__{}__echo", every.name),
                arguments: json!({"message": format!("{message} {turn} {i}")}).to_string(),
            });
        }
        host.mock.push(Reply::text("done"));
    }
    let mut server = mino_with(home.path(), cwd, std::slice::from_ref(every), base)?;
    wait_ready(&mut server, std::slice::from_ref(&every.name))?;
    let mut through = Vec::with_capacity(turns * PER_TURN);
    for _ in 0..turns {
        // The answer ({turnId}) is passed over by the loop below, whatever its order.
        server.request("mino/chat", json!({"text": "echo"}))?;
        let mut started: Option<u64> = None;
        loop {
            let note = server
                .wait_for(WAIT, |m| {
                    matches!(
                        m["method"].as_str(),
                        Some("mino/toolStarted" | "mino/toolResult" | "mino/turnEnded" | "mino/approvalRequest")
                    )
                })
                .with_context(|| format!("the turn did not go on ({} calls timed)", through.len()))?;
            match note["method"].as_str() {
                Some("mino/toolStarted") => started = note[READ_AT].as_u64(),
                Some("mino/toolResult") => {
                    let status = note["params"]["status"].as_str().unwrap_or_default();
                    if status != "success" {
                        bail!("an MCP call through Mino ended {status}: {}", note["params"]);
                    }
                    if let (Some(t), Some(now)) = (started.take(), note[READ_AT].as_u64()) {
                        through.push(now.saturating_sub(t) as f64 / 1e9);
                    }
                }
                Some("mino/approvalRequest") => bail!("the rule did not approve the call: {}", note["params"]),
                _ => {
                    if note["params"]["status"] != "completed" {
                        bail!("a turn of MCP calls ended {}", note["params"]);
                    }
                    break;
                }
            }
        }
    }
    let calls = through.len();
    server.finish()?;
    if calls != turns * PER_TURN {
        bail!("{calls} of {} calls through Mino were timed", turns * PER_TURN);
    }
    let (floor_median, through_median) = (median(floor.clone()), median(through.clone()));
    let added = through_median - floor_median;
    let us = |s: f64| s * 1e6;
    let tmpfs = if home.path().starts_with("/dev/shm") { "MINO_HOME on tmpfs" } else { "MINO_HOME on disk" };
    println!(
        "MCP call (server-everything echo, {calls} calls): direct median {:.0} µs (best {:.0}), through Mino median {:.0} µs (best {:.0}); Mino adds {:.0} µs at the median ({tmpfs})",
        us(floor_median),
        us(best(floor)),
        us(through_median),
        us(best(through)),
        us(added)
    );
    Ok(vec![Goal {
        name: "MCP tool call, time Mino adds (median, toolStarted→toolResult − direct round trip)".into(),
        figure: format!(
            "{:.0} µs (direct {:.0} µs, through Mino {:.0} µs; {tmpfs})",
            us(added),
            us(floor_median),
            us(through_median)
        ),
        goal: "< 1 ms".into(),
        met: added < 1e-3,
    }])
}

fn startup(base: &str, all: &[Stdio3], cwd: &Path, reps: usize) -> Result<Vec<Goal>> {
    let names: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
    let through_mino = |servers: &[Stdio3]| -> Result<f64> {
        let home = home_dir()?;
        let t = Instant::now();
        let mut server = mino_with(home.path(), cwd, servers, base)?;
        let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
        wait_ready(&mut server, &names)?;
        let secs = t.elapsed().as_secs_f64();
        server.finish()?;
        Ok(secs)
    };
    let mut singles: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
    let mut together = Vec::new();
    let mut floor = Vec::new();
    for _ in 0..reps {
        for (i, server) in all.iter().enumerate() {
            singles[i].push(through_mino(std::slice::from_ref(server))?);
        }
        together.push(through_mino(all)?);
        floor.push(direct_concurrently(all, cwd)?);
    }
    let singles: Vec<f64> = singles.into_iter().map(best).collect();
    let (together, floor) = (best(together), best(floor));
    let slowest = singles.iter().copied().fold(0.0, f64::max);
    let sum: f64 = singles.iter().sum();
    let ms = |s: f64| s * 1e3;
    let each: Vec<String> = names.iter().zip(&singles).map(|(n, s)| format!("{n} {:.0} ms", ms(*s))).collect();
    println!(
        "MCP start-up, 5 stdio servers: through Mino {:.0} ms; alone {} (slowest {:.0} ms, sum {:.0} ms); the bench starting the 5 itself concurrently {:.0} ms; {:.2}x the slowest, {:.2}x the sum",
        ms(together),
        each.join(", "),
        ms(slowest),
        ms(sum),
        ms(floor),
        together / slowest,
        together / sum
    );
    Ok(vec![Goal {
        name: "MCP session start-up, 5 stdio servers (to the last ready)".into(),
        figure: format!(
            "{:.0} ms (floor: the 5 started directly at once {:.0} ms; slowest alone {:.0} ms, sum {:.0} ms; {:.2}x slowest)",
            ms(together),
            ms(floor),
            ms(slowest),
            ms(sum),
            together / slowest
        ),
        goal: "≤ floor × 1.25 + 100 ms".into(),
        met: together <= floor * 1.25 + 0.1,
    }])
}

/// The floor of the start-up: the five started by the bench at once, each
/// to its `tools/list` answer; the time until the last.
fn direct_concurrently(all: &[Stdio3], cwd: &Path) -> Result<f64> {
    let cwd: PathBuf = cwd.to_path_buf();
    let t = Instant::now();
    let handles: Vec<_> = all
        .iter()
        .cloned()
        .map(|server| {
            let cwd = cwd.clone();
            std::thread::spawn(move || -> Result<Direct> {
                let mut direct = Direct::spawn(&server, &cwd)?;
                direct.handshake()?;
                Ok(direct)
            })
        })
        .collect();
    let mut started = Vec::new();
    for handle in handles {
        started.push(handle.join().map_err(|_| anyhow::anyhow!("a start thread panicked"))??);
    }
    let secs = t.elapsed().as_secs_f64();
    drop(started);
    Ok(secs)
}
