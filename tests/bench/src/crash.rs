//! The crash comparison: each agent is asked to run [`CRASH_COMMAND`], the
//! bench approves it, and one second after `ran` appears in `side` the server
//! is SIGKILLed (only the server's own process). It is restarted on the same
//! home and the same session (Mino) or thread (the peer) is resumed; the bench
//! records what each tells the client, what each sends the model in the next
//! request (from the mock's recorded requests), whether anything reruns, and
//! whether the command kept acting after the server died (`late` in `side`).
//!
//! Nothing here judges: the report quotes what was observed.

use std::cell::Cell;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mino_mock_model::Reply;
use mino_protocol::method;
use serde_json::{json, Value};

use crate::mock_stream::MockHost;
use crate::peers::{call_reply, start, Agent, Dirs};

pub const CRASH_COMMAND: &str = "echo ran >> side; sleep 5; echo late >> side";
const CALL_ID: &str = "call_crash";
/// After `ran`, the server lives this long before SIGKILL.
const KILL_AFTER: Duration = Duration::from_secs(1);
/// `late` is due 5 s after `ran`; `side` is read this long after `ran`.
const LATE_CHECK: Duration = Duration::from_millis(7_000);
const WAIT: Duration = Duration::from_secs(60);

pub struct CrashReport {
    pub agent: Agent,
    /// The run's scratch directory (home and work are in it), for the report to name as `$RUN`.
    pub run_dir: String,
    /// The approval question as the client got it (its `params`).
    pub asked: Value,
    /// What the peer said it runs (the command of its `commandExecution` item), if it said.
    pub executed_as: Option<String>,
    /// Milliseconds from approval to `ran` in `side`.
    pub ran_after_ms: u128,
    /// What reopening told the client: the answer and the notifications up to the next turn.
    pub told: Vec<(String, Value)>,
    /// Mino: the answer to a chat sent before acknowledging.
    pub chat_before_ack: Option<Value>,
    /// The input items of the next model request, from the interrupted call on.
    pub next_items: Vec<Value>,
    /// How the next turn ended.
    pub next_turn: Value,
    /// Approval questions asked after the restart.
    pub approvals_after_restart: usize,
    pub side: String,
    /// Seconds from the kill to the check of `side`.
    pub checked_after_kill: f64,
}

impl CrashReport {
    pub fn ran_count(&self) -> usize {
        self.side.lines().filter(|l| *l == "ran").count()
    }
    pub fn late(&self) -> bool {
        self.side.lines().any(|l| l == "late")
    }
}

fn read_side(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

pub fn crash_one(agent: Agent, host: &MockHost) -> Result<CrashReport> {
    let dirs = Dirs::new()?;
    let base = host.mock.base_url();
    let mut running = start(agent, &dirs, &base, None)?;
    running.server.seen = Some(Vec::new());
    host.mock.push(call_reply(agent, CALL_ID, CRASH_COMMAND));
    running.send("Append ran and, five seconds later, late to side.")?;
    let request = running.wait_approval_request()?;
    let approved = Instant::now();
    running.approve(&request)?;

    let side = dirs.work.join("side");
    let ran_at = loop {
        if read_side(&side).lines().any(|l| l == "ran") {
            break Instant::now();
        }
        if approved.elapsed() > WAIT {
            bail!("{}: `ran` never appeared in {}", agent.name(), side.display());
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    std::thread::sleep(KILL_AFTER.saturating_sub(ran_at.elapsed()));
    let seen_before = running.server.seen.take().unwrap_or_default();
    let executed_as = seen_before
        .iter()
        .chain(std::iter::once(&request))
        .find(|m| m["method"] == "item/started" && m["params"]["item"]["type"] == "commandExecution")
        .and_then(|m| m["params"]["item"]["command"].as_str())
        .map(str::to_owned);
    let session = running.session.clone();
    running.server.kill()?;
    let killed_at = Instant::now();

    let requests_before = host.mock.requests().len();
    host.mock.push(Reply::text("I see the command's outcome is not known; I will not run it again."));
    let mut again = start(agent, &dirs, &base, Some(&session))?;
    again.server.seen = Some(Vec::new());
    let mut told = vec![(answer_name(agent), again.opened["result"].clone())];
    let mut chat_before_ack = None;
    if agent == Agent::Mino {
        let recovery = again.server.wait_for(WAIT, |m| m["method"] == method::RECOVERY)?;
        told.push((method::RECOVERY.to_string(), recovery["params"].clone()));
        let id = again.server.request(method::CHAT, json!({ "text": "What happened to the command?" }))?;
        chat_before_ack = Some(again.server.wait_reply(id, WAIT)?);
        let id = again.server.request(method::ACKNOWLEDGE, json!({}))?;
        let ack = again.server.wait_response(id, WAIT)?;
        told.push(("mino/acknowledge (answer)".into(), ack["result"].clone()));
    }
    let approvals = Cell::new(0usize);
    again.send("What happened to the command?")?;
    let end_method = if agent == Agent::Mino { method::TURN_ENDED } else { "turn/completed" };
    let approval_method =
        if agent == Agent::Mino { method::APPROVAL_REQUEST } else { "item/commandExecution/requestApproval" };
    let ended = again.server.wait_for(WAIT, |m| {
        if m["method"] == approval_method {
            approvals.set(approvals.get() + 1);
        }
        m["method"] == end_method
    })?;
    for m in again.server.seen.take().unwrap_or_default() {
        // Errors and warnings the peer sends about the resumed thread (the rest is the new turn).
        let name = m["method"].as_str().unwrap_or_default();
        if agent == Agent::Peer && matches!(name, "error" | "warning") {
            told.push((name.to_string(), m["params"].clone()));
        }
    }
    again.finish()?;

    let next = host
        .mock
        .requests()
        .get(requests_before)
        .map(|r| r.body.clone())
        .context("no model request after the restart")?;
    let input = next["input"].as_array().cloned().unwrap_or_default();
    let from = input.iter().position(|item| item["call_id"] == CALL_ID).unwrap_or(input.len().saturating_sub(1));
    let next_items = input[from..].to_vec();

    std::thread::sleep(LATE_CHECK.saturating_sub(ran_at.elapsed()));
    let side_text = read_side(&side);
    Ok(CrashReport {
        agent,
        run_dir: dirs.root().display().to_string(),
        asked: request["params"].clone(),
        executed_as,
        ran_after_ms: (ran_at - approved).as_millis(),
        told,
        chat_before_ack,
        next_items,
        next_turn: ended["params"].clone(),
        approvals_after_restart: approvals.get(),
        side: side_text,
        checked_after_kill: killed_at.elapsed().as_secs_f64(),
    })
}

fn answer_name(agent: Agent) -> String {
    match agent {
        Agent::Mino => "initialize (answer)".into(),
        Agent::Peer => "thread/resume (answer)".into(),
    }
}

/// Shortens long strings inside a value (instructions, tool lists), keeping its shape.
pub fn shorten(value: &Value, max: usize) -> Value {
    match value {
        Value::String(s) if s.chars().count() > max => {
            let head: String = s.chars().take(max).collect();
            Value::String(format!("{head}… ({} chars)", s.chars().count()))
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| shorten(v, max)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), shorten(v, max))).collect()),
        other => other.clone(),
    }
}
