//! Mino beside the agent server people would pick instead: OpenAI's Codex
//! `app-server` (JSON-RPC over stdio, one message per line), pinned to
//! [`PEER_PACKAGE`]@[`PEER_VERSION`] and installed by `scripts/bench peers`.
//! Both run against the same mock model (`tests/mock-model`) on loopback, in
//! one run, alternating repetition by repetition, so both see the machine in
//! the same state; every figure is a ratio of the two.
//!
//! Measured (median of [`REPS`] repetitions each):
//! - start-up to ready: spawn until the server can take a turn (Mino:
//!   `initialize` answered, the session created; the peer: `initialize` and
//!   `thread/start` answered, the thread created), each with a fresh home;
//! - one tool turn with one approved command: send → turn end, split into
//!   send → approval request, approval → the command's result, result → turn
//!   end;
//! - text relay: 20,000 stamped deltas as fast as the mock sends them
//!   (deltas/s read by the client), and deltas 1 ms apart after an approved
//!   call (p50, p99 of read time minus send time, beside the same stream read
//!   straight from the mock; the ratio compares what each agent adds over
//!   that direct read), from an endpoint that sets `TCP_NODELAY` and from one
//!   that does not.
//!
//! `crash.rs` adds the crash comparison; `comparison.rs` writes docs/comparison.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mino_mock_model::{MockModel, MockOptions, Reply};
use mino_protocol::method;
use serde_json::{json, Value};

use crate::client::{DeltaLog, Server, Wire};
use crate::median;
use crate::mock_stream::{direct_once, latencies_ms, percentile, MockHost};

pub const PEER_PACKAGE: &str = "@openai/codex";
pub const PEER_VERSION: &str = "0.169.0";
pub const PEER_NAME: &str = "Codex app-server";
/// Repetitions of every measurement, per agent.
pub const REPS: usize = 7;
const RELAY_DELTAS: usize = 20_000;
const PACED_DELTAS: usize = 1_000;
/// How many times faster Mino must be, per measurement.
const STARTUP_GOAL: f64 = 10.0;
const TURN_GOAL: f64 = 10.0;
const RELAY_GOAL: f64 = 3.0;
const P99_GOAL: f64 = 3.0;
/// The first deltas of a paced stream, where an endpoint without `TCP_NODELAY`
/// meets the client's delayed ACKs.
const EARLY_DELTAS: usize = 40;
/// The command of the tool turn, the same for both.
const TURN_COMMAND: &str = "echo ok";
const WAIT: Duration = Duration::from_secs(60);

pub const PEER_WIRE: Wire = Wire { content_length: false, delta_method: "\"item/agentMessage/delta\"" };

/// The peer's native binary: `MINO_BENCH_PEER` (set by `scripts/bench peers`, which installs it).
pub fn peer_bin() -> Result<PathBuf> {
    let path = std::env::var_os("MINO_BENCH_PEER")
        .map(PathBuf::from)
        .context("MINO_BENCH_PEER is not set: run `scripts/bench peers`, which installs the peer and sets it")?;
    if !path.exists() {
        bail!("MINO_BENCH_PEER={} does not exist; `scripts/bench peers` installs it", path.display());
    }
    Ok(path)
}

pub fn peer_version() -> String {
    peer_bin()
        .ok()
        .and_then(|bin| Command::new(bin).arg("--version").output().ok())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

pub fn mino_version() -> String {
    crate::client::server_bin()
        .ok()
        .and_then(|bin| Command::new(bin).arg("--version").output().ok())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Agent {
    Mino,
    Peer,
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::Mino => "Mino",
            Agent::Peer => PEER_NAME,
        }
    }
}

/// The scratch directories of one agent's run: its home (`MINO_HOME` or
/// `CODEX_HOME`) and the directory commands run in. Kept under the bench's
/// cache rather than /tmp, where the peer refuses to set up its helpers.
pub struct Dirs {
    root: tempfile::TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl Dirs {
    pub fn new() -> Result<Dirs> {
        let parent = scratch_parent()?;
        let root = tempfile::Builder::new().prefix("run-").tempdir_in(&parent)?;
        let home = root.path().join("home");
        let work = root.path().join("work");
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&work)?;
        Ok(Dirs { root, home, work })
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }
}

fn scratch_parent() -> Result<PathBuf> {
    let base = match std::env::var_os("MINO_BENCH_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?).join(".cache/mino-bench"),
    };
    let dir = base.join("scratch");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// A running agent server with its session (Mino) or thread (the peer) open.
pub struct Running {
    pub agent: Agent,
    pub server: Server,
    /// Mino's session id or the peer's thread id.
    pub session: String,
    /// What opening the session answered (Mino: `initialize`; the peer: `thread/start` or `thread/resume`).
    pub opened: Value,
}

/// The peer pointed at the mock: a provider of its own speaking the Responses
/// API, asking before anything acts, its home in `home`.
fn peer_command(home: &Path, work: &Path, base_url: &str) -> Result<Command> {
    let mut command = Command::new(peer_bin()?);
    command
        .arg("app-server")
        .args(["-c", "model_provider=\"mock\""])
        .args(["-c", &format!("model_providers.mock={{name=\"mock\",base_url=\"{base_url}\",wire_api=\"responses\"}}")])
        .args(["-c", "model=\"bench-model\""])
        .args(["-c", "approval_policy=\"on-request\""])
        .env("CODEX_HOME", home)
        .env("RUST_LOG", "warn")
        .current_dir(work);
    Ok(command)
}

/// Starts `agent` and opens a new session (or `resume`s one), returning once it can take a turn.
pub fn start(agent: Agent, dirs: &Dirs, base_url: &str, resume: Option<&str>) -> Result<Running> {
    match agent {
        Agent::Mino => {
            let mut server = Server::spawn(&dirs.home, base_url)?;
            let work = dirs.work.to_str().context("utf-8 path")?;
            let options = match resume {
                Some(id) => json!({ "session": id, "cwd": work }),
                None => json!({ "newSession": true, "cwd": work }),
            };
            let opened = server.initialize(options)?;
            server.notify("initialized", json!({}))?;
            let session = opened["result"]["capabilities"]["experimental"]["mino"]["sessionId"]
                .as_str()
                .context("initialize named no session")?
                .to_string();
            Ok(Running { agent, server, session, opened })
        }
        Agent::Peer => {
            let mut server = Server::spawn_command(peer_command(&dirs.home, &dirs.work, base_url)?, PEER_WIRE)?;
            let id = server.request("initialize", json!({ "clientInfo": { "name": "mino-bench", "version": "0" } }))?;
            server.wait_response(id, WAIT)?;
            server.notify("initialized", json!({}))?;
            let id = match resume {
                Some(thread) => server.request("thread/resume", json!({ "threadId": thread }))?,
                None => server.request("thread/start", json!({ "cwd": dirs.work }))?,
            };
            let opened = server.wait_response(id, WAIT)?;
            let session = opened["result"]["thread"]["id"].as_str().context("the peer named no thread")?.to_string();
            Ok(Running { agent, server, session, opened })
        }
    }
}

impl Running {
    /// Sends the user's text; returns Mino's turn id or the peer's.
    pub fn send(&mut self, text: &str) -> Result<String> {
        match self.agent {
            Agent::Mino => {
                let id = self.server.request(method::CHAT, json!({ "text": text }))?;
                let answer = self.server.wait_response(id, WAIT)?;
                Ok(answer["result"]["turnId"].as_str().unwrap_or_default().to_string())
            }
            Agent::Peer => {
                let id = self.server.request(
                    "turn/start",
                    json!({ "threadId": self.session, "input": [{ "type": "text", "text": text }] }),
                )?;
                let answer = self.server.wait_response(id, WAIT)?;
                Ok(answer["result"]["turn"]["id"].as_str().unwrap_or_default().to_string())
            }
        }
    }

    /// Waits for the approval question and returns it.
    pub fn wait_approval_request(&mut self) -> Result<Value> {
        let wanted = match self.agent {
            Agent::Mino => method::APPROVAL_REQUEST,
            Agent::Peer => "item/commandExecution/requestApproval",
        };
        self.server.wait_for(WAIT, |m| m["method"] == wanted)
    }

    /// Approves the call the question asked about.
    pub fn approve(&mut self, request: &Value) -> Result<()> {
        match self.agent {
            Agent::Mino => {
                let params = &request["params"];
                self.server.request(
                    method::APPROVAL,
                    json!({ "turnId": params["turnId"], "callId": params["callId"], "decision": "approve" }),
                )?;
                Ok(())
            }
            Agent::Peer => self.server.respond(&request["id"], json!({ "decision": "accept" })),
        }
    }

    /// Waits for the command's result and returns it.
    pub fn wait_tool_result(&mut self) -> Result<Value> {
        match self.agent {
            Agent::Mino => self.server.wait_for(WAIT, |m| m["method"] == method::TOOL_RESULT),
            Agent::Peer => self.server.wait_for(WAIT, |m| {
                m["method"] == "item/completed" && m["params"]["item"]["type"] == "commandExecution"
            }),
        }
    }

    /// Waits for the end of the turn and returns its notification.
    pub fn wait_turn_end(&mut self) -> Result<Value> {
        let wanted = match self.agent {
            Agent::Mino => method::TURN_ENDED,
            Agent::Peer => "turn/completed",
        };
        self.server.wait_for(Duration::from_secs(300), |m| m["method"] == wanted)
    }

    pub fn finish(self) -> Result<DeltaLog> {
        self.server.finish()
    }
}

/// A model reply calling the agent's command tool once with `command`.
pub fn call_reply(agent: Agent, call_id: &str, command: &str) -> Reply {
    match agent {
        Agent::Mino => Reply::call(call_id, command),
        // The peer runs commands through `exec_command`. Its sandbox is in force
        // under `on-request`; a call asking to run outside it is what makes the
        // peer ask the person, as Mino always does.
        Agent::Peer => Reply::NamedCall {
            call_id: call_id.into(),
            name: "exec_command".into(),
            arguments: json!({
                "cmd": command,
                "sandbox_permissions": "require_escalated",
                "justification": "Run the command the user asked for.",
            })
            .to_string(),
        },
    }
}

struct TurnParts {
    to_approval: f64,
    approval_to_result: f64,
    result_to_end: f64,
    total: f64,
}

fn tool_turn(running: &mut Running, mock: &MockModel, i: usize) -> Result<TurnParts> {
    mock.push(call_reply(running.agent, &format!("call_turn_{i}"), TURN_COMMAND));
    mock.push(Reply::text("It printed ok."));
    let started = Instant::now();
    running.send(&format!("Run echo ok, please ({i})."))?;
    let request = running.wait_approval_request()?;
    let asked = Instant::now();
    running.approve(&request)?;
    let result = running.wait_tool_result()?;
    let resulted = Instant::now();
    let ended = running.wait_turn_end()?;
    let done = Instant::now();
    check_turn(running.agent, &result, &ended)?;
    Ok(TurnParts {
        to_approval: (asked - started).as_secs_f64(),
        approval_to_result: (resulted - asked).as_secs_f64(),
        result_to_end: (done - resulted).as_secs_f64(),
        total: (done - started).as_secs_f64(),
    })
}

fn check_turn(agent: Agent, result: &Value, ended: &Value) -> Result<()> {
    let ok = match agent {
        Agent::Mino => result["params"]["status"] == "success" && ended["params"]["status"] == "completed",
        Agent::Peer => {
            result["params"]["item"]["status"] == "completed" && ended["params"]["turn"]["status"] == "completed"
        }
    };
    if !ok {
        bail!("{}'s tool turn did not complete: result {}, end {}", agent.name(), result["params"], ended["params"]);
    }
    Ok(())
}

/// One fresh server streaming `count` stamped deltas `delay_ms` apart. With
/// `after_call`, the stream is the turn's second model response, after a call
/// of `true` approved at once: the request for it then follows the previous
/// response by a few milliseconds, as in any tool turn (which is what meets an
/// endpoint without `TCP_NODELAY` at its worst; see docs/performance.md).
pub fn relay_once(agent: Agent, host: &MockHost, count: usize, delay_ms: u64, after_call: bool) -> Result<DeltaLog> {
    let dirs = Dirs::new()?;
    let mut running = start(agent, &dirs, &host.mock.base_url(), None)?;
    if after_call {
        host.mock.push(call_reply(agent, "call_relay", "true"));
    }
    host.mock.push(Reply::StampedText { count, delay_ms });
    running.send("Stream, please.")?;
    if after_call {
        let request = running.wait_approval_request()?;
        running.approve(&request)?;
    }
    running.wait_turn_end()?;
    let log = running.finish()?;
    if log.deltas.len() != count {
        bail!("{}: {} of {count} deltas arrived", agent.name(), log.deltas.len());
    }
    Ok(log)
}

/// Per-run percentiles of a paced stream, the median run reported.
#[derive(Default)]
struct Paced {
    p50: Vec<f64>,
    p99: Vec<f64>,
    early_max: Vec<f64>,
}

impl Paced {
    fn add(&mut self, log: &DeltaLog) {
        let lat = latencies_ms(log);
        self.early_max.push(lat.iter().take(EARLY_DELTAS).copied().fold(0.0, f64::max));
        self.p50.push(percentile(lat.clone(), 0.5));
        self.p99.push(percentile(lat, 0.99));
    }
    fn p50(&self) -> f64 {
        median(self.p50.clone())
    }
    fn p99(&self) -> f64 {
        median(self.p99.clone())
    }
    fn early(&self) -> f64 {
        median(self.early_max.clone())
    }
}

pub struct Row {
    pub measurement: String,
    pub mino: String,
    pub peer: String,
    pub ratio: f64,
    /// `None`: reported only.
    pub goal: Option<f64>,
}

impl Row {
    pub fn met(&self) -> bool {
        self.goal.is_none_or(|g| self.ratio >= g)
    }
}

pub struct Measured {
    pub rows: Vec<Row>,
    /// Lines printed before the table (the splits behind the figures).
    pub notes: Vec<String>,
    /// The first model request each agent sent, as the mock recorded it.
    pub first_request: [Value; 2],
}

fn ms(s: f64) -> String {
    format!("{:.1} ms", s * 1e3)
}

pub fn measure(quick: bool) -> Result<Measured> {
    let reps = if quick { 3 } else { REPS };
    let (relay_count, paced_count) = if quick { (5_000, 300) } else { (RELAY_DELTAS, PACED_DELTAS) };
    let endpoint = MockHost::start()?;
    let base = endpoint.mock.base_url();
    let agents = [Agent::Mino, Agent::Peer];
    let mut notes = Vec::new();
    let mut rows = Vec::new();
    let say = |line: String, notes: &mut Vec<String>| {
        println!("{line}");
        notes.push(line);
    };

    // Start-up to ready, fresh home each time, alternating. One unmeasured
    // start each first, so neither pays for cold file caches.
    let mut startup: [Vec<f64>; 2] = [vec![], vec![]];
    let mut first_request = [Value::Null, Value::Null];
    for (k, &agent) in agents.iter().enumerate() {
        let dirs = Dirs::new()?;
        let mut running = start(agent, &dirs, &base, None)?;
        // A plain text turn, to record what each sends the model.
        let before = endpoint.mock.requests().len();
        endpoint.mock.push(Reply::text("Hello."));
        running.send("Hello.")?;
        running.wait_turn_end()?;
        first_request[k] = endpoint.mock.requests().get(before).map(|r| r.body.clone()).unwrap_or(Value::Null);
        running.finish()?;
    }
    for _ in 0..reps {
        for (k, &agent) in agents.iter().enumerate() {
            let dirs = Dirs::new()?;
            let t = Instant::now();
            let running = start(agent, &dirs, &base, None)?;
            startup[k].push(t.elapsed().as_secs_f64());
            running.finish()?;
        }
    }
    let (s_mino, s_peer) = (median(startup[0].clone()), median(startup[1].clone()));
    say(format!("start-up to ready ({reps} each): Mino {}, {PEER_NAME} {}", ms(s_mino), ms(s_peer)), &mut notes);
    rows.push(Row {
        measurement: "start-up to ready (spawn, fresh home, until a turn can be sent)".into(),
        mino: ms(s_mino),
        peer: ms(s_peer),
        ratio: s_peer / s_mino,
        goal: Some(STARTUP_GOAL),
    });

    // Tool turns: one server each, a warm-up turn each, then turns alternating.
    let mut servers = Vec::new();
    let mut dirs_kept = Vec::new();
    for &agent in &agents {
        let dirs = Dirs::new()?;
        let mut running = start(agent, &dirs, &base, None)?;
        tool_turn(&mut running, &endpoint.mock, 0)?;
        servers.push(running);
        dirs_kept.push(dirs);
    }
    let mut parts: [Vec<TurnParts>; 2] = [vec![], vec![]];
    for i in 1..=reps {
        for (k, running) in servers.iter_mut().enumerate() {
            parts[k].push(tool_turn(running, &endpoint.mock, i)?);
        }
    }
    for running in servers {
        running.finish()?;
    }
    let part = |k: usize, f: fn(&TurnParts) -> f64| median(parts[k].iter().map(f).collect());
    let t_total = [part(0, |p| p.total), part(1, |p| p.total)];
    for (k, &agent) in agents.iter().enumerate() {
        say(
            format!(
                "tool turn ({reps} each): {} {} = to approval request {} + approval to result {} + result to end {}",
                agent.name(),
                ms(t_total[k]),
                ms(part(k, |p| p.to_approval)),
                ms(part(k, |p| p.approval_to_result)),
                ms(part(k, |p| p.result_to_end)),
            ),
            &mut notes,
        );
    }
    rows.push(Row {
        measurement: format!("tool turn, one approved `{TURN_COMMAND}` (send to turn end)"),
        mino: ms(t_total[0]),
        peer: ms(t_total[1]),
        ratio: t_total[1] / t_total[0],
        goal: Some(TURN_GOAL),
    });
    for (name, f) in [
        ("send to approval request", (|p: &TurnParts| p.to_approval) as fn(&TurnParts) -> f64),
        ("approval to command result", |p: &TurnParts| p.approval_to_result),
        ("command result to turn end", |p: &TurnParts| p.result_to_end),
    ] {
        let (a, b) = (part(0, f), part(1, f));
        rows.push(Row {
            measurement: format!("  of which {name}"),
            mino: ms(a),
            peer: ms(b),
            ratio: b / a,
            goal: None,
        });
    }

    // Relay throughput.
    let mut rates: [Vec<f64>; 2] = [vec![], vec![]];
    let mut mock_rates: [Vec<f64>; 2] = [vec![], vec![]];
    for _ in 0..reps {
        for (k, &agent) in agents.iter().enumerate() {
            let log = relay_once(agent, &endpoint, relay_count, 0, false)?;
            let (first, last) = (log.deltas[0], log.deltas[relay_count - 1]);
            rates[k].push((relay_count - 1) as f64 / ((last.0 - first.0) as f64 / 1e9));
            mock_rates[k].push((relay_count - 1) as f64 / ((last.1.saturating_sub(first.1)).max(1) as f64 / 1e9));
        }
    }
    let rate = [median(rates[0].clone()), median(rates[1].clone())];
    say(
        format!(
            "relay {relay_count} deltas, no delay ({reps} each): Mino {:.0} deltas/s (mock sent {:.0}/s), {PEER_NAME} {:.0} deltas/s (mock sent {:.0}/s)",
            rate[0],
            median(mock_rates[0].clone()),
            rate[1],
            median(mock_rates[1].clone())
        ),
        &mut notes,
    );
    rows.push(Row {
        measurement: format!("text relay, {relay_count} deltas as fast as the endpoint sends"),
        mino: format!("{:.0} deltas/s", rate[0]),
        peer: format!("{:.0} deltas/s", rate[1]),
        ratio: rate[0] / rate[1],
        goal: Some(RELAY_GOAL),
    });

    // Paced deltas, from an endpoint with TCP_NODELAY and from one without.
    let nagle = MockHost::start_with(MockOptions { nodelay: false })?;
    for (label, endpoint, goal) in
        [("endpoint sets TCP_NODELAY", &endpoint, Some(P99_GOAL)), ("endpoint without TCP_NODELAY", &nagle, None)]
    {
        let mut paced: [Paced; 2] = [Paced::default(), Paced::default()];
        let mut floor = Paced::default();
        for _ in 0..reps {
            for (k, &agent) in agents.iter().enumerate() {
                paced[k].add(&relay_once(agent, endpoint, paced_count, 1, true)?);
            }
            floor.add(&direct_once(&endpoint.mock, paced_count, 1)?);
        }
        say(
            format!(
                "paced {paced_count} deltas 1 ms apart, {label} ({reps} each): p50/p99/max of first {EARLY_DELTAS}: Mino {:.3}/{:.3}/{:.2} ms, {PEER_NAME} {:.3}/{:.3}/{:.2} ms, read directly {:.3}/{:.3}/{:.2} ms",
                paced[0].p50(),
                paced[0].p99(),
                paced[0].early(),
                paced[1].p50(),
                paced[1].p99(),
                paced[1].early(),
                floor.p50(),
                floor.p99(),
                floor.early()
            ),
            &mut notes,
        );
        // What each agent adds on top of reading the endpoint directly, the
        // same stream in the same run: the loopback and the mock's own timing
        // are in both and are not the agent's.
        let with_floor = |x: f64, f: f64| format!("{x:.3} ms (direct {f:.3}, adds {:.3})", x - f);
        let added_ratio = |mino: f64, peer: f64, f: f64| (peer - f).max(0.001) / (mino - f).max(0.001);
        rows.push(Row {
            measurement: format!("paced deltas 1 ms apart, p50 latency added over a direct read, {label}"),
            mino: with_floor(paced[0].p50(), floor.p50()),
            peer: with_floor(paced[1].p50(), floor.p50()),
            ratio: added_ratio(paced[0].p50(), paced[1].p50(), floor.p50()),
            goal: None,
        });
        rows.push(Row {
            measurement: format!("paced deltas 1 ms apart, p99 latency added over a direct read, {label}"),
            mino: with_floor(paced[0].p99(), floor.p99()),
            peer: with_floor(paced[1].p99(), floor.p99()),
            ratio: added_ratio(paced[0].p99(), paced[1].p99(), floor.p99()),
            goal,
        });
        rows.push(Row {
            measurement: format!("paced deltas, worst of the first {EARLY_DELTAS} added over a direct read, {label}"),
            mino: with_floor(paced[0].early(), floor.early()),
            peer: with_floor(paced[1].early(), floor.early()),
            ratio: added_ratio(paced[0].early(), paced[1].early(), floor.early()),
            goal: None,
        });
    }
    Ok(Measured { rows, notes, first_request })
}

pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(&format!("| measurement | Mino | {PEER_NAME} | Mino ahead by | goal | met |\n"));
    out.push_str("|---|---|---|---|---|---|\n");
    for r in rows {
        let goal = r.goal.map(|g| format!(">= {g:.0}x")).unwrap_or_else(|| "report".into());
        out.push_str(&format!(
            "| {} | {} | {} | {:.1}x | {} | {} |\n",
            r.measurement,
            r.mino,
            r.peer,
            r.ratio,
            goal,
            if r.met() { "yes" } else { "NO" }
        ));
    }
    out
}
