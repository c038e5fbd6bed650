//! The crash matrix: scripted turns crashed at every save point and between
//! every pair of records (failpoints, action `panic`, which aborts the
//! server), and by real SIGKILLs from outside at seeded random moments; after
//! each crash a new server reopens the session and everything it does is
//! checked against a model of what the records establish (Table 04-1).
//!
//! - `failpoint_matrix` needs a server built with `--features failpoints`
//!   (`MINO_E2E_FAILPOINTS=1` or `MINO_SERVER_FAILPOINTS_BIN`, see
//!   `mino_e2e::failpoints_server_bin`); it is skipped otherwise.
//! - `random_sigkills` needs nothing and runs by default; `MINO_CRASH_SEED`
//!   and `MINO_CRASH_KILLS` change its seed and count.
//!
//! Every command of a scripted turn checks, before doing anything, that its
//! own approval and `tool_start` are in the journal (else it writes to
//! `violations.txt`), then appends its call id to `count.txt`. After each
//! crash the model checks:
//! - every call of the interrupted turn is closed by Table 04-1
//!   (result kept / `unknown` / `not_executed`), and the turn ends `interrupted`;
//! - no command ran twice, none ran without its approval and `tool_start` on
//!   file, and at a failpoint the crashed call ran exactly when the point is
//!   after its spawn;
//! - acknowledgement is asked exactly when a start lacks its result;
//! - the journal before the reopen is a byte prefix of the journal after it
//!   (nothing on file is lost or rewritten), and recovery appends only
//!   `recovered` results and one `interrupted` end;
//! - the next model request's input replays the records as the spec says
//!   (pairs, then the runtime notice; text-only unfinished turns left out);
//! - nothing reruns after the reopen, and a third open finds nothing to recover.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mino_e2e::{
    failpoints_server_bin, input_summary, options_in, session_files, wire, work_dir, MockModel, Reply, Server, Spawn,
    TIMEOUT,
};
use mino_mock_model::ScriptedCall;
use serde_json::{json, Value};

const UNKNOWN_OUTPUT: &str = "Execution was started but its result was not saved. The operation may have happened. Do not automatically retry it.";
const CONTINUATION: &str = "What happened before?";

/// A deterministic generator (splitmix64), so every run picks the same moments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A scripted turn: the model's replies and the person's decisions.
#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// One call, approved, then a final answer.
    Approve,
    /// Two calls in one response (the first approved, the second denied),
    /// a second round with one approved call, then a final answer.
    TwoRounds,
}

impl Scenario {
    const ALL: [Scenario; 2] = [Scenario::Approve, Scenario::TwoRounds];

    fn name(self) -> &'static str {
        match self {
            Scenario::Approve => "approve",
            Scenario::TwoRounds => "two-rounds",
        }
    }

    /// `delay_ms` slows the stream (for the SIGKILL runs), `sleep` the commands.
    fn replies(self, home: &Path, marker: &str, delay_ms: u64, sleep: &str) -> Vec<Reply> {
        let call = |id: &str| ScriptedCall::new(id, counting_command(home, id, marker, sleep));
        let words = |s: &str| mino_mock_model::split_words(s);
        match self {
            Scenario::Approve => vec![
                Reply::Calls { text: words("Sure, appending now."), calls: vec![call("call_1")], delay_ms },
                Reply::Text { deltas: words("Done: appended once."), delay_ms },
            ],
            Scenario::TwoRounds => vec![
                Reply::Calls { text: words("Two things."), calls: vec![call("call_1"), call("call_2")], delay_ms },
                Reply::Calls { text: words("One more."), calls: vec![call("call_3")], delay_ms },
                Reply::Text { deltas: words("All done."), delay_ms },
            ],
        }
    }

    fn approves(self, call_id: &str) -> bool {
        !matches!((self, call_id), (Scenario::TwoRounds, "call_2"))
    }
}

/// The command of `call_id`: refuses to count itself unless its approval and
/// `tool_start` are in the journal, then appends its id to `count.txt`, then
/// writes output (so `agent::after_spawn` fires after the append).
fn counting_command(home: &Path, call_id: &str, marker: &str, sleep: &str) -> String {
    let sessions = home.join("sessions");
    let work = home.join("work");
    let approval = format!(r#""kind":"approval","turn_id":"[^"]*","call_id":"{call_id}","decision":"approved""#);
    let start = format!(r#""kind":"tool_start","turn_id":"[^"]*","call_id":"{call_id}""#);
    format!(
        "if grep -qs '{approval}' {s}/*.jsonl && grep -qs '{start}' {s}/*.jsonl; \
         then echo {call_id} >> {w}/count.txt; else echo {call_id} >> {w}/violations.txt; fi; \
         {sleep}echo ran {call_id} # {marker}",
        s = sessions.display(),
        w = work.display(),
    )
}

fn unique_marker(tag: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("mino-crash-{}-{tag}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

fn pgrep(marker: &str) -> bool {
    std::process::Command::new("pgrep").args(["-f", marker]).output().map(|o| o.status.success()).unwrap_or(false)
}

/// Waits (bounded) until no command of this run is alive: a command orphaned
/// by a killed server finishes on its own.
async fn wait_commands_gone(marker: &str) {
    let deadline = Instant::now() + TIMEOUT;
    while pgrep(marker) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Life {
    /// The turn ended (the failpoint was not reached, or was after the end).
    Ended,
    /// The server died on its own (a failpoint fired).
    Crashed,
    /// We SIGKILLed it.
    Killed,
}

/// When to SIGKILL the server: once `notifications` turn notifications have
/// arrived, `delay` later.
#[derive(Debug, Clone, Copy)]
struct KillAt {
    notifications: usize,
    delay: Duration,
}

/// Drives one scripted turn without waiting on any response (the server may
/// die at any moment): approvals are sent as their requests arrive.
async fn drive(server: &mut Server, scenario: Scenario, kill: Option<KillAt>) -> Life {
    let pid = server.pid().expect("pid");
    server
        .send_message(&json!({"jsonrpc": "2.0", "id": 5000, "method": wire::method::CHAT,
            "params": {"text": "Append to the count file."}}))
        .await;
    let started = Instant::now();
    let mut armed: Option<Instant> = None;
    let mut seen = 0;
    let mut id = 5001;
    loop {
        let log = server.notification_log();
        for n in &log[seen..] {
            if n.method == wire::method::APPROVAL_REQUEST {
                let call_id = n.params["callId"].as_str().expect("callId").to_string();
                let turn_id = n.turn_id().expect("turnId").to_string();
                let decision = if scenario.approves(&call_id) { "approve" } else { "deny" };
                id += 1;
                server
                    .send_message(&json!({"jsonrpc": "2.0", "id": id, "method": wire::method::APPROVAL,
                        "params": {"turnId": turn_id, "callId": call_id, "decision": decision}}))
                    .await;
            } else if n.method == wire::method::TURN_ENDED {
                return Life::Ended;
            }
        }
        seen = log.len();
        if let Some(kill) = kill {
            let turn_notes = log.iter().filter(|n| n.method != wire::method::RECOVERY).count();
            if armed.is_none() && turn_notes >= kill.notifications {
                armed = Some(Instant::now());
            }
            if armed.is_some_and(|t| t.elapsed() >= kill.delay) {
                server.kill().await;
                return Life::Killed;
            }
        }
        if is_dead(pid) {
            let _ = server.wait(TIMEOUT).await;
            return Life::Crashed;
        }
        assert!(started.elapsed() < TIMEOUT * 2, "the turn neither ended nor crashed; stderr:\n{}", server.stderr());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// ------------------------------------------------------------------ the model

/// A call as the records establish it.
#[derive(Debug, Clone, Default)]
struct CallModel {
    approved: bool,
    started: bool,
    result: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct TurnModel {
    id: String,
    input: String,
    /// Per response: its summary items (as `input_summary` writes them) and its call ids.
    responses: Vec<(Vec<String>, Vec<String>)>,
    calls: BTreeMap<String, CallModel>,
    end: Option<String>,
    acked: bool,
}

fn parse_records(bytes: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(bytes);
    let mut records = Vec::new();
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break; // a torn tail; the reopen cuts it
        }
        match serde_json::from_str(line) {
            Ok(v) => records.push(v),
            Err(_) => break,
        }
    }
    records
}

fn turns_of(records: &[Value]) -> Vec<TurnModel> {
    let mut turns: Vec<TurnModel> = Vec::new();
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    for r in records {
        let kind = r["kind"].as_str().unwrap_or_default();
        let turn_id = s(r, "turn_id");
        if kind == "user" {
            turns.push(TurnModel { id: turn_id, input: s(r, "text"), ..Default::default() });
            continue;
        }
        let Some(turn) = turns.iter_mut().find(|t| t.id == turn_id) else {
            continue;
        };
        match kind {
            "response" => {
                let mut summary = Vec::new();
                let mut calls = Vec::new();
                for item in r["items"].as_array().into_iter().flatten() {
                    match item["type"].as_str() {
                        Some("function_call") => {
                            let call_id = s(item, "call_id");
                            summary.push(format!("function_call {call_id}"));
                            turn.calls.entry(call_id.clone()).or_default();
                            calls.push(call_id);
                        }
                        Some("reasoning") => summary.push("reasoning".into()),
                        Some("message") => {
                            let text: String = item["content"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|p| p["text"].as_str())
                                .collect();
                            summary.push(format!("assistant: {text}"));
                        }
                        _ => {}
                    }
                }
                turn.responses.push((summary, calls));
            }
            "approval" => turn.calls.entry(s(r, "call_id")).or_default().approved = r["decision"] == "approved",
            "tool_start" => turn.calls.entry(s(r, "call_id")).or_default().started = true,
            "tool_result" => turn.calls.entry(s(r, "call_id")).or_default().result = Some(s(r, "status")),
            "turn_end" => turn.end = Some(s(r, "status")),
            "recovery_ack" => turn.acked = true,
            _ => {}
        }
    }
    turns
}

/// Table 04-1 applied to the last turn if it has no end.
fn recover(mut turns: Vec<TurnModel>) -> (Vec<TurnModel>, Option<usize>) {
    let mut recovered = None;
    if let Some(last) = turns.last_mut() {
        if last.end.is_none() {
            for call in last.calls.values_mut() {
                if call.result.is_none() {
                    call.result = Some(if call.started { "unknown" } else { "not_executed" }.into());
                }
            }
            last.end = Some("interrupted".into());
            recovered = Some(turns.len() - 1);
        }
    }
    (turns, recovered)
}

fn unacknowledged(turns: &[TurnModel]) -> Vec<String> {
    turns
        .iter()
        .filter(|t| !t.acked && t.calls.values().any(|c| c.result.as_deref() == Some("unknown")))
        .map(|t| t.id.clone())
        .collect()
}

/// The model input the spec prescribes for these turns, then the new question.
fn replay(turns: &[TurnModel], question: &str) -> Vec<String> {
    let mut out = Vec::new();
    for turn in turns {
        let status = turn.end.as_deref().unwrap_or("running");
        let has_calls = !turn.calls.is_empty();
        if status != "completed" && !has_calls {
            continue;
        }
        out.push(format!("user: {}", turn.input));
        for (summary, calls) in &turn.responses {
            out.extend(summary.iter().cloned());
            for call_id in calls {
                let status = turn.calls[call_id].result.clone().unwrap_or_default();
                out.push(format!("function_call_output {call_id} {status}"));
            }
        }
        if status != "completed" {
            out.push(format!("assistant: Mino runtime notice: the previous turn ended with status {status}. Tool results above are retained; no command was automatically retried."));
        }
    }
    out.push(format!("user: {question}"));
    out
}

fn count_lines(path: &Path) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        *counts.entry(line.trim().to_string()).or_insert(0) += 1;
    }
    counts
}

/// What one crash was checked against, for the printed matrix.
struct Verdict {
    /// e.g. `call_1=unknown ack` or `completed`.
    summary: String,
    violations: Vec<String>,
}

/// Where a failpoint sits relative to the crashed call's spawn: the call left
/// `unknown` ran iff the point is after the spawn.
fn ran_at_point(point: &str) -> Option<bool> {
    match point {
        "journal::after_tool_start_append" | "journal::after_tool_start_sync" | "agent::before_spawn" => Some(false),
        "agent::after_spawn" | "agent::before_tool_result" | "journal::after_tool_result_append" => Some(true),
        _ => None,
    }
}

/// After a crash: the checks that need no server (commands, counts), then a
/// reopen with a clean server, acknowledgement as required, one more turn,
/// and a third open. `point` is the failpoint that fired, if any.
async fn check_after_crash(home: &Path, marker: &str, point: Option<&str>, bin: Option<PathBuf>) -> Verdict {
    let mut v = Vec::new();
    wait_commands_gone(marker).await;
    let journal = session_files(home).pop().expect("a session file");
    let before = std::fs::read(&journal).expect("journal");
    let records = parse_records(&before);
    let (expected_turns, recovered_index) = recover(turns_of(&records));
    let crashed = expected_turns.last().cloned().unwrap_or_default();
    let work = home.join("work");
    let counts = count_lines(&work.join("count.txt"));
    let violations_file = std::fs::read_to_string(work.join("violations.txt")).unwrap_or_default();
    if !violations_file.is_empty() {
        v.push(format!("a command ran without its approval and tool_start on file: {violations_file:?}"));
    }
    for (call_id, n) in &counts {
        let call = crashed.calls.get(call_id);
        if *n > 1 {
            v.push(format!("{call_id} ran {n} times"));
        }
        if !call.is_some_and(|c| c.approved && c.started) {
            v.push(format!("{call_id} ran without a synced approval and tool_start"));
        }
    }
    for (call_id, call) in &crashed.calls {
        let ran = counts.get(call_id).copied().unwrap_or(0);
        match call.result.as_deref() {
            Some("success") if ran != 1 => v.push(format!("{call_id}: success on file but ran {ran} times")),
            Some("refused" | "not_executed") if ran != 0 => v.push(format!("{call_id}: {:?} but ran", call.result)),
            Some("unknown") => {
                if let Some(expected) = point.and_then(ran_at_point) {
                    if (ran == 1) != expected {
                        v.push(format!("{call_id}: unknown at {point:?}, ran {ran} times, expected ran={expected}"));
                    }
                }
            }
            _ => {}
        }
    }
    let expected_ack = unacknowledged(&expected_turns);

    // Reopen.
    let mock = MockModel::start(vec![Reply::text("It may have run; nothing was retried.")]).await.expect("mock");
    let cwd = work_dir(home);
    let mut server = Server::spawn_with(Spawn {
        home: Some(home.to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: bin.clone(),
        ..Default::default()
    })
    .await;
    server.initialize(&options_in(&cwd)).await.expect("reopen");
    let recovery: wire::RecoveryNotification = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    let after_open = std::fs::read(&journal).expect("journal");
    if !after_open.starts_with(&before) {
        v.push("the reopen changed or lost bytes that were on file".into());
    }
    let added = parse_records(&after_open[before.len().min(after_open.len())..]);
    for r in &added {
        let ok = (r["kind"] == "tool_result" && r["recovered"] == true)
            || (r["kind"] == "turn_end" && r["status"] == "interrupted");
        if !ok {
            v.push(format!("recovery appended an unexpected record: {r}"));
        }
    }
    let mut summary = String::new();
    match recovered_index {
        Some(i) => {
            let turn = &expected_turns[i];
            let got = recovery.turns.iter().find(|t| t.turn_id == turn.id);
            match got {
                None => v.push(format!("turn {} was not reported as recovered", turn.id)),
                Some(got) => {
                    if got.status != wire::TurnStatus::Interrupted {
                        v.push(format!("{} recovered as {:?}", turn.id, got.status));
                    }
                    for call in &got.calls {
                        let status = serde_json::to_value(call.result.status).unwrap_or_default();
                        let want = turn.calls.get(&call.call_id).and_then(|c| c.result.clone());
                        if status.as_str() != want.as_deref() {
                            v.push(format!("{}: recovered {status}, Table 04-1 says {want:?}", call.call_id));
                        }
                        if call.result.status == wire::ToolStatus::Unknown && call.result.output != UNKNOWN_OUTPUT {
                            v.push(format!("{}: unknown output is {:?}", call.call_id, call.result.output));
                        }
                    }
                    if got.calls.len() != turn.calls.len() {
                        v.push(format!("{} calls recovered, {} on file", got.calls.len(), turn.calls.len()));
                    }
                }
            }
            summary.push_str("interrupted");
            for (id, c) in &turn.calls {
                summary.push_str(&format!(" {id}={}", c.result.as_deref().unwrap_or("?")));
            }
        }
        None => {
            if added.iter().any(|r| r["kind"] == "turn_end") {
                v.push("a finished turn was recovered".into());
            }
            summary.push_str(crashed.end.as_deref().unwrap_or("no turn"));
        }
    }
    if recovery.acknowledgement_required == expected_ack.is_empty() || recovery.unacknowledged_turn_ids != expected_ack
    {
        v.push(format!(
            "acknowledgement: server says {:?}, model says {expected_ack:?}",
            recovery.unacknowledged_turn_ids
        ));
    }

    // Continue: the gate, then one turn, whose request must replay the records.
    let chat = server.request(wire::method::CHAT, json!({"text": CONTINUATION})).await;
    let chat = if expected_ack.is_empty() {
        chat
    } else {
        summary.push_str(" ack");
        match chat {
            Err(e) if e.code == wire::error_code::ACKNOWLEDGEMENT_REQUIRED => {}
            other => v.push(format!("chat before acknowledgement answered {other:?}")),
        }
        let ack = server.request(wire::method::ACKNOWLEDGE, Value::Null).await.expect("acknowledge");
        if ack["acknowledged"] != json!(expected_ack) {
            v.push(format!("acknowledged {ack}, expected {expected_ack:?}"));
        }
        server.request(wire::method::CHAT, json!({"text": CONTINUATION})).await
    };
    match chat {
        Ok(result) => {
            let turn_id = result["turnId"].as_str().expect("turnId").to_string();
            let notes = server.turn_notifications(&turn_id, TIMEOUT).await;
            let end: wire::TurnEnded = notes.last().expect("end").parse();
            if end.status != wire::TurnStatus::Completed {
                v.push(format!("the next turn ended {:?}: {:?}", end.status, end.reason));
            }
            let requests = mock.requests();
            match requests.first() {
                None => v.push("no model request after the reopen".into()),
                Some(request) => {
                    let got = input_summary(&request.body);
                    let want = replay(&expected_turns, CONTINUATION);
                    if got != want {
                        v.push(format!("replay differs:\n  got  {got:?}\n  want {want:?}"));
                    }
                    for item in request.body["input"].as_array().into_iter().flatten() {
                        if item["type"] == "function_call_output" {
                            let output: Value =
                                serde_json::from_str(item["output"].as_str().unwrap_or("")).unwrap_or_default();
                            if output["status"] == "unknown" && output["output"] != UNKNOWN_OUTPUT {
                                v.push(format!("unknown replayed with {output}"));
                            }
                        }
                    }
                }
            }
        }
        Err(e) => v.push(format!("chat after the reopen failed: {e}")),
    }
    server.close_stdin();
    let status = server.wait(TIMEOUT).await;
    if !status.success() {
        v.push(format!("the reopened server exited {status:?}"));
    }
    if count_lines(&work.join("count.txt")) != counts {
        v.push("a command ran again after the reopen".into());
    }

    // A third open: nothing left to recover, the acknowledgement holds.
    let mut third = Server::spawn_with(Spawn {
        home: Some(home.to_path_buf()),
        base_url: Some(mock.base_url()),
        bin,
        ..Default::default()
    })
    .await;
    third.initialize(&options_in(&cwd)).await.expect("third open");
    let again: wire::RecoveryNotification = third.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    if again.acknowledgement_required
        || again.turns.iter().any(|t| !recovery.turns.iter().any(|r| r.turn_id == t.turn_id))
    {
        v.push(format!("the third open recovered again: {again:?}"));
    }
    third.close_stdin();
    let _ = third.wait(TIMEOUT).await;
    Verdict { summary, violations: v }
}

/// One run of `scenario` with `FAILPOINTS=<spec>` on `bin`; `None` when the
/// failpoint was not reached (the turn ended normally).
async fn failpoint_run(bin: &Path, scenario: Scenario, point: &str, hit: u32) -> (Life, Verdict) {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let marker = unique_marker("fp");
    let mock = MockModel::start(scenario.replies(home.path(), &marker, 0, "")).await.expect("mock");
    let spec = if hit <= 1 { format!("{point}=panic") } else { format!("{point}={}*off->panic", hit - 1) };
    let mut server = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: Some(bin.to_path_buf()),
        failpoints: Some(spec),
        ..Default::default()
    })
    .await;
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let life = drive(&mut server, scenario, None).await;
    let mut verdict = match life {
        Life::Crashed => {
            let mut verdict = check_after_crash(home.path(), &marker, Some(point), None).await;
            if !server.stderr().contains(point) {
                verdict.violations.push(format!("the server died, but not at {point}"));
            }
            verdict
        }
        _ => {
            server.close_stdin();
            let _ = server.wait(TIMEOUT).await;
            Verdict { summary: "not reached".into(), violations: Vec::new() }
        }
    };
    for violation in &mut verdict.violations {
        *violation = format!("{} {point}#{hit}: {violation}", scenario.name());
    }
    (life, verdict)
}

/// A crash while the next server opens the session (recovery writes) or
/// acknowledges: the first server crashes at `agent::before_tool_result`
/// (an `unknown` result), the second at `point`, the third is checked.
async fn reopen_run(bin: &Path, point: &str, hit: u32) -> (Life, Verdict) {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let marker = unique_marker("reopen");
    let scenario = Scenario::Approve;
    let mock = MockModel::start(scenario.replies(home.path(), &marker, 0, "")).await.expect("mock");
    let mut first = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: Some(bin.to_path_buf()),
        failpoints: Some("agent::before_tool_result=panic".into()),
        ..Default::default()
    })
    .await;
    first.initialize(&options_in(&cwd)).await.expect("initialize");
    assert_eq!(drive(&mut first, scenario, None).await, Life::Crashed);
    wait_commands_gone(&marker).await;

    let spec = if hit <= 1 { format!("{point}=panic") } else { format!("{point}={}*off->panic", hit - 1) };
    let mut second = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: Some(bin.to_path_buf()),
        failpoints: Some(spec),
        ..Default::default()
    })
    .await;
    let init = json!({"processId": null, "capabilities": {},
        "initializationOptions": {"cwd": cwd.display().to_string()}});
    second.send_message(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})).await;
    if point.starts_with("session::after_ack") {
        // The open succeeds; the acknowledgement crashes.
        let answer = second.next_orphan_response(TIMEOUT).await;
        assert!(answer.get("result").is_some(), "initialize: {answer}");
        second.send_message(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})).await;
        second.next_notification(wire::method::RECOVERY, TIMEOUT).await;
        second.send_message(&json!({"jsonrpc": "2.0", "id": 2, "method": wire::method::ACKNOWLEDGE})).await;
    }
    let status = second.wait(TIMEOUT).await;
    let mut verdict = check_after_crash(home.path(), &marker, None, None).await;
    if status.success() || !second.stderr().contains(point) {
        verdict.violations.push(format!("the second server did not crash at {point}: {status:?}"));
    }
    for violation in &mut verdict.violations {
        *violation = format!("reopen {point}#{hit}: {violation}");
    }
    (Life::Crashed, verdict)
}

/// Hits tried per failpoint and scenario (the n-th time it is met); a
/// point met more often (text deltas) is tried at its first hits only.
const MAX_HITS: u32 = 3;

/// Every failpoint between the records of a turn, in the order they are met.
const TURN_POINTS: [&str; 16] = [
    "session::after_user_append",
    "session::after_user_sync",
    "agent::before_model_request",
    "agent::after_text_delta",
    "agent::after_model_response",
    "session::after_response_append",
    "session::after_approval_append",
    "journal::after_tool_start_append",
    "journal::after_tool_start_sync",
    "agent::before_spawn",
    "agent::after_spawn",
    "agent::before_tool_result",
    "journal::after_tool_result_append",
    "session::after_tool_result_sync",
    "session::after_turn_end_append",
    "session::after_turn_end_sync",
];

/// Crashes while the next server repairs the journal or acknowledges, with
/// the hits to try.
const REOPEN_POINTS: [(&str, u32); 5] = [
    ("session::after_recovery_append", 1),
    ("session::after_recovery_append", 2),
    ("session::after_recovery_sync", 1),
    ("session::after_ack_append", 1),
    ("session::after_ack_sync", 1),
];

#[tokio::test(flavor = "multi_thread")]
async fn failpoint_matrix() {
    let Some(bin) = failpoints_server_bin() else {
        eprintln!(
            "skipped: set MINO_E2E_FAILPOINTS=1 (or MINO_SERVER_FAILPOINTS_BIN) to run the failpoint crash matrix"
        );
        return;
    };
    let started = Instant::now();
    let mut rows: Vec<String> = Vec::new();
    let mut violations: Vec<String> = Vec::new();
    let (mut runs, mut crashes) = (0, 0);
    for point in TURN_POINTS {
        for scenario in Scenario::ALL {
            let mut cells = Vec::new();
            for hit in 1..=MAX_HITS {
                let (life, verdict) = failpoint_run(&bin, scenario, point, hit).await;
                runs += 1;
                violations.extend(verdict.violations);
                if life != Life::Crashed {
                    break;
                }
                crashes += 1;
                cells.push(format!("#{hit}: {}", verdict.summary));
            }
            rows.push(format!(
                "| {point} | {} | {} |",
                scenario.name(),
                if cells.is_empty() { "not reached".into() } else { cells.join("; ") }
            ));
        }
    }
    for (point, hit) in REOPEN_POINTS {
        let (_, verdict) = reopen_run(&bin, point, hit).await;
        runs += 1;
        crashes += 1;
        violations.extend(verdict.violations);
        rows.push(format!("| {point} | reopen | #{hit}: {} |", verdict.summary));
    }
    let points = TURN_POINTS.len() + 4;
    println!("\ncrash matrix (failpoints, action panic = abort):");
    println!("| failpoint | scenario | crashes: what the next open found |");
    println!("|---|---|---|");
    for row in &rows {
        println!("{row}");
    }
    println!(
        "\nfailpoints: {points}, scenarios: {} + reopen, runs: {runs}, crashes: {crashes}, violations: {}, {:.1}s",
        Scenario::ALL.len(),
        violations.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(violations.is_empty(), "violations:\n{}", violations.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn random_sigkills() {
    let seed: u64 = std::env::var("MINO_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0004);
    let kills: u64 = std::env::var("MINO_CRASH_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let mut rng = Rng(seed);
    let started = Instant::now();
    let mut violations = Vec::new();
    let mut rows = Vec::new();
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut landed = 0;
    for run in 0..kills {
        let scenario = Scenario::ALL[rng.below(Scenario::ALL.len() as u64) as usize];
        // Armed after a random number of the turn's notifications (a turn
        // sends 12 or 19; the last few are too close to its end for a kill
        // to land), then a random delay: the stream is slowed and each
        // command sleeps, so kills land in every phase.
        let most = match scenario {
            Scenario::Approve => 10,
            Scenario::TwoRounds => 16,
        };
        let kill = KillAt { notifications: rng.below(most) as usize, delay: Duration::from_millis(rng.below(120)) };
        let home = tempfile::tempdir().expect("home");
        let cwd = work_dir(home.path());
        let marker = unique_marker("kill");
        let mock = MockModel::start(scenario.replies(home.path(), &marker, 15, "sleep 0.1; ")).await.expect("mock");
        let mut server = Server::spawn_with(Spawn {
            home: Some(home.path().to_path_buf()),
            base_url: Some(mock.base_url()),
            ..Default::default()
        })
        .await;
        server.initialize(&options_in(&cwd)).await.expect("initialize");
        let life = drive(&mut server, scenario, Some(kill)).await;
        let verdict = if life == Life::Killed {
            landed += 1;
            check_after_crash(home.path(), &marker, None, None).await
        } else {
            server.close_stdin();
            let _ = server.wait(TIMEOUT).await;
            Verdict { summary: "ended before the kill".into(), violations: Vec::new() }
        };
        *tally.entry(verdict.summary.clone()).or_default() += 1;
        rows.push(format!(
            "| {run} | {} | notification {} + {} ms | {} |",
            scenario.name(),
            kill.notifications,
            kill.delay.as_millis(),
            verdict.summary
        ));
        violations.extend(
            verdict.violations.into_iter().map(|x| format!("run {run} ({}, kill at {kill:?}): {x}", scenario.name())),
        );
    }
    println!("\nrandom SIGKILLs (seed {seed:#x}):");
    println!("| run | scenario | kill armed at | what the next open found |");
    println!("|---|---|---|---|");
    for row in &rows {
        println!("{row}");
    }
    println!("\noutcomes: {tally:?}");
    println!(
        "runs: {kills}, kills that landed mid-turn: {landed}, violations: {}, {:.1}s",
        violations.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(violations.is_empty(), "violations:\n{}", violations.join("\n"));
}
