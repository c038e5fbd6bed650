//! The turn loop against the mock model over real HTTP on loopback, with
//! real bash commands in a temporary directory.

use std::path::PathBuf;
use std::time::Duration;

use mino_core::agent::Events;
use mino_core::agent::{Agent, AgentEvent, TurnLimits};
use mino_core::bash::{BashTool, Limits};
use mino_core::journal::{Fault, FaultPlan, FaultyFile, JournalFile};
use mino_core::model::{ModelClient, ModelConfig, RetryPolicy};
use mino_core::{ApprovalDecision, MinoHome, Session, ToolStatus, TurnStatus};
use mino_mock_model::{MockModel, Reply, ScriptedCall};
use serde_json::Value;

const SENTINEL_KEY: &str = "sk-test-SENTINEL-0123456789";
/// The command supervisor, built by cargo with this crate for its tests.
const SUPERVISOR: &str = env!("CARGO_BIN_EXE_mino-supervisor");

struct Harness {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    journal: PathBuf,
    mock: MockModel,
    agent: Agent,
    events: Events,
    last_seq: u64,
}

async fn harness_with(script: Vec<Reply>, limits: TurnLimits, bash_limits: Limits) -> Harness {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let home = MinoHome::new(dir.path().join("home"));
    let session = Session::create(&home, &cwd).expect("session");
    let journal = session.path().to_path_buf();
    let mock = MockModel::start(script).await.expect("mock");
    let config = ModelConfig {
        base_url: mock.base_url(),
        api_key: Some(SENTINEL_KEY.into()),
        model: "test-model".into(),
        retry: RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(20),
        },
        stall_timeout: Duration::from_millis(500),
        connect_timeout: Duration::from_secs(5),
    };
    let model = ModelClient::new(config).expect("client");
    let bash = BashTool::new(cwd.clone(), bash_limits, SUPERVISOR.into());
    let (agent, events) = Agent::new(session, model, bash, "Be careful.".into(), limits);
    Harness { _dir: dir, cwd, journal, mock, agent, events, last_seq: 0 }
}

async fn harness(script: Vec<Reply>) -> Harness {
    harness_with(script, TurnLimits::default(), Limits::default()).await
}

impl Harness {
    async fn next(&mut self) -> AgentEvent {
        let numbered = tokio::time::timeout(Duration::from_secs(20), self.events.recv())
            .await
            .expect("an event within 20 s")
            .expect("events open");
        // A response's usage and a settings change are no turn events: they take no seq.
        let turn_event =
            !matches!(numbered.event, AgentEvent::ResponseUsage { .. } | AgentEvent::SettingsChanged { .. });
        if turn_event {
            assert!(numbered.seq > self.last_seq, "seq counts up: {} after {}", numbered.seq, self.last_seq);
            self.last_seq = numbered.seq;
        }
        numbered.event
    }

    /// Collects events to the turn's end, answering approvals with `decide`.
    async fn run(&mut self, decide: Option<ApprovalDecision>) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        loop {
            let event = self.next().await;
            if let (AgentEvent::ApprovalRequest { turn_id, call_id, .. }, Some(d)) = (&event, decide) {
                self.agent.approve(turn_id, call_id, d).expect("approve");
            }
            let end = matches!(event, AgentEvent::TurnEnded { .. });
            events.push(event);
            if end {
                return events;
            }
        }
    }

    fn input_of_request(&self, n: usize) -> Vec<Value> {
        let requests = self.mock.requests();
        requests[n].body["input"].as_array().cloned().unwrap_or_default()
    }
}

fn ended(events: &[AgentEvent]) -> (TurnStatus, Option<String>, Option<String>) {
    match events.last() {
        Some(AgentEvent::TurnEnded { status, reason, text, .. }) => (*status, reason.clone(), text.clone()),
        other => panic!("last event is not TurnEnded: {other:?}"),
    }
}

fn results(events: &[AgentEvent]) -> Vec<(String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { call_id, status, output, .. } => Some((call_id.clone(), *status, output.clone())),
            _ => None,
        })
        .collect()
}

fn output_of(item: &Value) -> Value {
    serde_json::from_str(item["output"].as_str().expect("output")).expect("json output")
}

#[tokio::test]
async fn text_streams_in_order_and_the_turn_completes() {
    let mut h = harness(vec![Reply::Text { deltas: vec!["Hi".into(), " there!".into()], delay_ms: 0 }]).await;
    let turn = h.agent.chat("Hello").await.expect("chat");
    let events = h.run(None).await;
    assert_eq!(events[0], AgentEvent::TurnStarted { turn_id: turn.clone(), input: "Hello".into() });
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["Hi", " there!"]);
    assert_eq!(ended(&events), (TurnStatus::Completed, None, Some("Hi there!".into())));

    let body = &h.mock.requests()[0].body;
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["instructions"], "Be careful.");
    assert_eq!(body["include"][0], "reasoning.encrypted_content");
    assert_eq!(body["tools"][0]["name"], "bash");
    assert_eq!(body["input"][0]["content"][0]["text"], "Hello");
    assert_eq!(h.mock.requests()[0].authorization.as_deref(), Some(format!("Bearer {SENTINEL_KEY}").as_str()));
    let journal = std::fs::read_to_string(&h.journal).expect("journal");
    assert!(journal.contains("\"kind\":\"turn_end\""));
    assert!(!journal.contains(SENTINEL_KEY), "the API key is never written to the journal");
}

#[tokio::test]
async fn an_approved_call_runs_and_the_next_request_holds_the_pair() {
    let mut h = harness(vec![Reply::call("call_1", "echo hello"), Reply::text("It printed hello.")]).await;
    h.agent.chat("Say hello").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let request = events.iter().find_map(|e| match e {
        AgentEvent::ApprovalRequest { command, directory, environment, limits, .. } => {
            Some((command.clone(), directory.clone(), environment.clone(), *limits))
        }
        _ => None,
    });
    let (command, directory, environment, limits) = request.expect("approval requested");
    assert_eq!(command, "echo hello");
    assert_eq!(directory, h.cwd.display().to_string());
    assert!(environment.contains_key("PATH"));
    assert_eq!(limits, Limits::default());
    let order: Vec<&str> = events
        .iter()
        .map(|e| match e {
            AgentEvent::TurnStarted { .. } => "started",
            AgentEvent::TextDelta { .. } => "text",
            AgentEvent::Retrying { .. } => "retrying",
            AgentEvent::ApprovalRequest { .. } => "approval",
            AgentEvent::ToolStarted { .. } => "tool_started",
            AgentEvent::ToolOutput { .. } => "output",
            AgentEvent::ToolResult { .. } => "result",
            AgentEvent::TurnEnded { .. } => "ended",
            AgentEvent::SessionOpened { .. } => "session_opened",
            AgentEvent::CompactionStarted { .. } | AgentEvent::CompactionEnded { .. } => "compaction",
            AgentEvent::ResponseUsage { .. } => "usage",
            AgentEvent::SettingsChanged { .. } => "settings",
            AgentEvent::InstructionsChanged { .. } => "instructions",
            AgentEvent::ToolTerminal { .. } => "terminal",
            AgentEvent::McpStatus { .. } => "mcp",
        })
        .collect();
    let first_text = order.iter().position(|e| *e == "text").expect("text");
    // Each response's usage once it is recorded: the first's before its call is asked about.
    assert_eq!(&order[..first_text], ["started", "usage", "approval", "tool_started", "output", "result"]);
    assert_eq!(order.iter().filter(|e| **e == "usage").count(), 2, "one per response");
    assert_eq!(results(&events), [("call_1".to_string(), ToolStatus::Success, "hello\n".to_string())]);
    assert_eq!(ended(&events).0, TurnStatus::Completed);

    let input = h.input_of_request(1);
    assert_eq!(input.len(), 3);
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[1]["call_id"], "call_1");
    assert!(input[1].get("id").is_none());
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], "call_1");
    assert_eq!(output_of(&input[2]), serde_json::json!({"status": "success", "output": "hello\n"}));
}

#[tokio::test]
async fn a_denied_call_is_refused_and_the_turn_goes_on() {
    let mut h = harness(vec![Reply::call("call_1", "touch denied.txt"), Reply::text("Understood.")]).await;
    h.agent.chat("Make a file").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Denied)).await;
    assert_eq!(results(&events)[0].1, ToolStatus::Refused);
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::ToolStarted { .. })));
    assert!(!h.cwd.join("denied.txt").exists(), "nothing ran");
    assert_eq!(ended(&events).0, TurnStatus::Completed);
    assert_eq!(output_of(&h.input_of_request(1)[2])["status"], "refused");
}

#[tokio::test]
async fn bad_arguments_become_a_failed_result_the_model_reads() {
    let call =
        ScriptedCall { call_id: "call_1".into(), command: String::new(), raw_arguments: Some("{not json".into()) };
    let mut h =
        harness(vec![Reply::Calls { text: vec![], calls: vec![call], delay_ms: 0 }, Reply::text("Sorry.")]).await;
    h.agent.chat("Do it").await.expect("chat");
    let events = h.run(None).await;
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::ApprovalRequest { .. })), "nothing to approve");
    let (_, status, output) = &results(&events)[0];
    assert_eq!(*status, ToolStatus::Failed);
    assert!(output.contains("not valid JSON"), "{output}");
    assert_eq!(ended(&events).0, TurnStatus::Completed);
}

#[tokio::test]
async fn the_request_limit_ends_the_turn_failed() {
    let script = (0..9).map(|i| Reply::call(&format!("call_{i}"), "true")).collect();
    let mut h = harness(script).await;
    h.agent.chat("Loop").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let (status, reason, _) = ended(&events);
    assert_eq!(status, TurnStatus::Failed);
    assert!(reason.unwrap_or_default().contains("8 model requests"));
    assert_eq!(h.mock.requests().len(), 8);
    assert_eq!(results(&events).len(), 8, "every call of the eight responses has its result");
}

#[tokio::test]
async fn the_call_limit_closes_the_rest_not_executed() {
    let calls: Vec<(String, String)> = (0..18).map(|i| (format!("call_{i}"), "true".to_string())).collect();
    let refs: Vec<(&str, &str)> = calls.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let mut h = harness(vec![Reply::calls(&refs)]).await;
    h.agent.chat("Many").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let results = results(&events);
    assert_eq!(results.len(), 18);
    assert!(results[..16].iter().all(|r| r.1 == ToolStatus::Success));
    assert!(results[16..].iter().all(|r| r.1 == ToolStatus::NotExecuted));
    let (status, reason, _) = ended(&events);
    assert_eq!(status, TurnStatus::Failed);
    assert!(reason.unwrap_or_default().contains("16 tool calls"));
    // Replayed next time with every pair and the notice.
    let input = h.agent.with_session(|s| s.context());
    assert_eq!(input.len(), 1 + 18 + 18 + 1);
}

#[tokio::test]
async fn retryable_failures_are_retried() {
    for failure in [
        Reply::http_error(429, "rate_limit_exceeded", "Slow down").with_retry_after(0),
        Reply::http_error(500, None, "boom"),
        Reply::CutStream { deltas: vec!["partial".into()] },
        Reply::Failed { code: "server_error".into(), message: "try later".into() },
    ] {
        let mut h = harness(vec![failure.clone(), Reply::text("Recovered.")]).await;
        h.agent.chat("Hi").await.expect("chat");
        let events = h.run(None).await;
        assert_eq!(ended(&events).0, TurnStatus::Completed, "{failure:?}");
        assert_eq!(h.mock.requests().len(), 2, "{failure:?}");
    }
}

#[tokio::test]
async fn fatal_errors_are_not_retried_and_say_what_to_do() {
    for (failure, needle) in [
        (Reply::http_error(401, "invalid_api_key", "Incorrect API key"), "OPENAI_API_KEY"),
        (Reply::http_error(400, "context_length_exceeded", "too long"), "too long for the model"),
        (Reply::http_error(429, "insufficient_quota", "no quota"), "quota"),
    ] {
        let mut h = harness(vec![failure.clone(), Reply::text("never")]).await;
        h.agent.chat("Hi").await.expect("chat");
        let events = h.run(None).await;
        let (status, reason, _) = ended(&events);
        assert_eq!(status, TurnStatus::Failed, "{failure:?}");
        let reason = reason.unwrap_or_default();
        assert!(reason.contains(needle), "{reason}");
        assert!(!reason.contains(SENTINEL_KEY));
        assert_eq!(h.mock.requests().len(), 1, "{failure:?} not retried");
    }
}

#[tokio::test]
async fn cancel_while_the_model_streams() {
    let deltas = (0..50).map(|i| format!("word{i} ")).collect();
    let mut h = harness(vec![Reply::Text { deltas, delay_ms: 100 }]).await;
    let turn = h.agent.chat("Tell a story").await.expect("chat");
    loop {
        if let AgentEvent::TextDelta { .. } = h.next().await {
            break;
        }
    }
    h.agent.cancel(&turn).expect("cancel");
    let events = h.run(None).await;
    assert_eq!(ended(&events).0, TurnStatus::Cancelled);
    // A text-only turn that ended early is left out of later context.
    assert!(h.agent.with_session(|s| s.context()).is_empty());
}

#[tokio::test]
async fn cancel_while_an_approval_is_pending() {
    let mut h = harness(vec![Reply::call("call_1", "touch never.txt")]).await;
    let turn = h.agent.chat("Make a file").await.expect("chat");
    loop {
        if let AgentEvent::ApprovalRequest { .. } = h.next().await {
            break;
        }
    }
    h.agent.cancel(&turn).expect("cancel");
    let events = h.run(None).await;
    assert_eq!(results(&events)[0].1, ToolStatus::NotExecuted);
    assert_eq!(ended(&events).0, TurnStatus::Cancelled);
    assert!(
        h.agent.approve(&turn, "call_1", ApprovalDecision::Approved).is_err(),
        "approving after cancel runs nothing"
    );
    assert!(!h.cwd.join("never.txt").exists());
}

#[tokio::test]
async fn cancel_while_a_command_runs_kills_its_group() {
    // The background subshell prints "started" itself, so once its output
    // arrives it is running; the marker (unique to this test process) is in
    // its command line.
    let marker = format!("touch survived-{}.txt", std::process::id());
    let command = format!("(echo started; sleep 30; {marker}) & sleep 30");
    let mut h = harness(vec![Reply::call("call_1", &command)]).await;
    let turn = h.agent.chat("Wait").await.expect("chat");
    loop {
        match h.next().await {
            AgentEvent::ApprovalRequest { turn_id, call_id, .. } => {
                h.agent.approve(&turn_id, &call_id, ApprovalDecision::Approved).expect("approve")
            }
            AgentEvent::ToolOutput { .. } => break,
            _ => {}
        }
    }
    assert!(!processes_with(&marker).is_empty(), "the check sees the background subshell before the cancel");
    h.agent.cancel(&turn).expect("cancel");
    let events = h.run(None).await;
    let (_, status, output) = &results(&events)[0];
    assert_eq!(*status, ToolStatus::Cancelled);
    assert!(output.starts_with("started\n"), "output so far kept: {output}");
    assert_eq!(ended(&events).0, TurnStatus::Cancelled);
    let survivors = processes_with(&marker);
    assert!(survivors.is_empty(), "no child outlives the cancelled turn: {survivors:?}");
}

/// Live processes whose command line contains `marker`, read from /proc
/// directly so the check cannot be skipped for want of a tool like pgrep.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("list /proc") {
        let entry = entry.expect("/proc entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // A process may exit between the listing and this read; a zombie's
        // command line is empty.
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

#[tokio::test]
async fn a_command_over_its_timeout_is_killed() {
    let limits =
        Limits { timeout: Duration::from_millis(500), kill_grace: Duration::from_millis(200), ..Limits::default() };
    let mut h = harness_with(
        vec![Reply::call("call_1", "trap '' TERM; echo begun; sleep 30"), Reply::text("It timed out.")],
        TurnLimits::default(),
        limits,
    )
    .await;
    h.agent.chat("Wait").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let (_, status, output) = &results(&events)[0];
    assert_eq!(*status, ToolStatus::TimedOut);
    assert!(output.contains("begun") && output.contains("timed out"), "{output}");
}

#[tokio::test]
async fn output_is_capped_keeping_head_and_tail() {
    let limits = Limits { output_limit: 1000, ..Limits::default() };
    let mut h =
        harness_with(vec![Reply::call("call_1", "seq 1 100000"), Reply::text("Long.")], TurnLimits::default(), limits)
            .await;
    h.agent.chat("Count").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let (_, status, output) = &results(&events)[0];
    assert_eq!(*status, ToolStatus::Success);
    assert!(output.starts_with("1\n2\n3\n"), "{output}");
    assert!(output.trim_end().ends_with("100000"), "{output}");
    assert!(output.contains("bytes of output cut"), "{output}");
    assert!(output.len() < 1200);
}

#[tokio::test]
async fn a_failing_command_reports_its_exit_code() {
    let mut h = harness(vec![Reply::call("call_1", "echo oops >&2; exit 3"), Reply::text("It failed.")]).await;
    h.agent.chat("Fail").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let exit = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult { status, exit_code, output, .. } => Some((*status, *exit_code, output.clone())),
        _ => None,
    });
    let (status, code, output) = exit.expect("result");
    assert_eq!((status, code), (ToolStatus::Failed, Some(3)));
    assert!(output.contains("oops") && output.contains("exit code 3"), "{output}");
}

#[tokio::test]
async fn the_command_environment_holds_no_api_key() {
    // The key is in Mino's own environment, as it is in production.
    std::env::set_var("OPENAI_API_KEY", SENTINEL_KEY);
    let mut h = harness(vec![Reply::call("call_1", "env"), Reply::text("ok")]).await;
    h.agent.chat("env").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let (_, status, output) = &results(&events)[0];
    assert_eq!(*status, ToolStatus::Success);
    assert!(output.contains("PATH="), "{output}");
    assert!(!output.contains(SENTINEL_KEY) && !output.contains("OPENAI_API_KEY"), "{output}");
    let journal = std::fs::read_to_string(&h.journal).expect("journal");
    assert!(!journal.contains(SENTINEL_KEY));
}

#[tokio::test]
async fn no_command_runs_before_its_tool_start_is_on_file() {
    let mut h = harness(vec![]).await;
    let journal = h.journal.display().to_string();
    h.mock.push(Reply::call(
        "call_1",
        &format!("grep -c '\"kind\":\"tool_start\"' '{journal}'; grep -c '\"decision\":\"approved\"' '{journal}'"),
    ));
    h.mock.push(Reply::text("checked"));
    h.agent.chat("Check").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    assert_eq!(results(&events)[0].2, "1\n1\n", "the command saw its approval and tool_start in the file");
}

/// Both ways a failed save ends a turn (a save point inside the turn, or the
/// `turn_end` itself) report `failed` with a reason saying the end is not on
/// file, and no `turn_end` is in the file: nothing claims an outcome the disk
/// does not hold.
#[tokio::test]
async fn a_turn_stopped_by_a_failed_save_says_its_end_is_not_on_file() {
    // Sync 2 is the approval + tool_start save point of a call; of a text-only
    // turn it is the turn_end.
    for script in [vec![Reply::call("call_1", "true"), Reply::text("never")], vec![Reply::text("done")]] {
        let mut h = harness(script).await;
        h.agent.with_session(|s| {
            s.journal_mut().wrap_file(|f| Box::new(FaultyFile::new(f, FaultPlan::Sync { nth: 2, fault: Fault::Io }).0))
        });
        h.agent.chat("Go").await.expect("chat");
        let events = h.run(Some(ApprovalDecision::Approved)).await;
        let (status, reason, _) = ended(&events);
        assert_eq!(status, TurnStatus::Failed);
        let reason = reason.unwrap_or_default();
        assert!(reason.contains("its end is not on file"), "{reason}");
        let journal = std::fs::read_to_string(&h.journal).expect("journal");
        assert!(!journal.contains("\"turn_end\""), "no turn_end on file: {journal}");
    }
}

#[tokio::test]
async fn a_failed_save_stops_the_turn_before_anything_runs() {
    let mut h = harness(vec![Reply::call("call_1", "touch ran.txt"), Reply::text("never")]).await;
    // Sync 1 is the user record; sync 2 is the approval + tool_start save point.
    h.agent.with_session(|s| {
        s.journal_mut().wrap_file(|f| Box::new(FaultyFile::new(f, FaultPlan::Sync { nth: 2, fault: Fault::Io }).0))
    });
    h.agent.chat("Touch").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let (status, reason, _) = ended(&events);
    assert_eq!(status, TurnStatus::Failed);
    assert!(reason.unwrap_or_default().contains("could not be saved"));
    assert!(!h.cwd.join("ran.txt").exists(), "nothing spawned after a failed save");
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::ToolStarted { .. })));
    assert_eq!(h.mock.requests().len(), 1, "no model request after a failed save");
    let refused = h.agent.chat("again").await;
    assert!(refused.is_err(), "the session refuses turns until reopened");
    let turns = h.agent.with_session(|s| s.transcript().turns.clone());
    assert!(turns[0].calls.is_empty(), "what the failed save cut from the file is not shown either");
}

#[tokio::test]
async fn an_approval_after_cancel_runs_nothing() {
    for _ in 0..20 {
        let mut h = harness(vec![Reply::call("call_1", "touch ran.txt")]).await;
        let turn = h.agent.chat("Touch").await.expect("chat");
        loop {
            if let AgentEvent::ApprovalRequest { .. } = h.next().await {
                break;
            }
        }
        h.agent.cancel(&turn).expect("cancel");
        assert!(h.agent.approve(&turn, "call_1", ApprovalDecision::Approved).is_err(), "approval after cancel refused");
        let events = h.run(None).await;
        assert_eq!(ended(&events).0, TurnStatus::Cancelled);
        assert!(!h.cwd.join("ran.txt").exists(), "nothing ran after the cancel");
    }
}

#[tokio::test]
async fn a_command_that_exited_is_not_called_timed_out_while_its_output_drains() {
    let limits =
        Limits { timeout: Duration::from_millis(500), kill_grace: Duration::from_secs(2), ..Limits::default() };
    let mut h = harness_with(
        vec![Reply::call("call_1", "(setsid sleep 5 &); echo done; exit 0"), Reply::text("ok")],
        TurnLimits::default(),
        limits,
    )
    .await;
    h.agent.chat("Go").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let (_, status, output) = &results(&events)[0];
    assert_eq!(*status, ToolStatus::Success, "{output}");
}

#[tokio::test]
async fn text_streamed_before_a_retry_is_announced_void() {
    let mut h = harness(vec![Reply::CutStream { deltas: vec!["Hel".into()] }, Reply::text("Hello")]).await;
    h.agent.chat("Hi").await.expect("chat");
    let events = h.run(None).await;
    let retry = events.iter().position(|e| matches!(e, AgentEvent::Retrying { .. })).expect("retry announced");
    let first_delta = events.iter().position(|e| matches!(e, AgentEvent::TextDelta { .. })).expect("delta");
    assert!(first_delta < retry);
    assert_eq!(ended(&events).2.as_deref(), Some("Hello"));
}

/// A client may start the next turn the moment it hears `TurnEnded`; the
/// ended turn's task must not then clear the new turn's running state (its
/// approvals would be lost and it could never be approved or cancelled).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_turn_can_start_the_moment_one_ends() {
    let turns = 30;
    let mut script = Vec::new();
    for i in 0..turns {
        script.push(Reply::call(&format!("call_{i}"), "true"));
        script.push(Reply::text("Done."));
    }
    let mut h = harness(script).await;
    for i in 0..turns {
        h.agent.chat(&format!("Run true ({i})")).await.expect("chat");
        let events = h.run(Some(ApprovalDecision::Approved)).await;
        assert_eq!(ended(&events).0, TurnStatus::Completed, "turn {i}: {events:?}");
    }
}

// ------------------------------------------------------------ repeated call ids

async fn next_approval_request(h: &mut Harness) -> (String, String, String) {
    loop {
        if let AgentEvent::ApprovalRequest { turn_id, call_id, command, .. } = h.next().await {
            return (turn_id, call_id, command);
        }
    }
}

/// `(type, call_id)` of the call items of a request's input.
fn call_items(input: &[Value]) -> Vec<(String, String)> {
    input
        .iter()
        .filter(|i| i["type"] == "function_call" || i["type"] == "function_call_output")
        .map(|i| (i["type"].as_str().unwrap_or("").to_string(), i["call_id"].as_str().unwrap_or("").to_string()))
        .collect()
}

#[tokio::test]
async fn a_stale_approval_from_a_cancelled_turn_does_not_approve_the_same_call_id_in_the_next() {
    let mut h = harness(vec![
        Reply::call("call_1", "echo harmless > harmless.txt"),
        Reply::call("call_1", "echo DANGEROUS > dangerous.txt"),
    ])
    .await;
    let first = h.agent.chat("Something harmless").await.expect("chat");
    let (turn, call, _) = next_approval_request(&mut h).await;
    assert_eq!((turn.as_str(), call.as_str()), (first.as_str(), "call_1"));
    h.agent.cancel(&first).expect("cancel");
    assert_eq!(ended(&h.run(None).await).0, TurnStatus::Cancelled);

    let second = h.agent.chat("Something else").await.expect("chat");
    let (turn, call, command) = next_approval_request(&mut h).await;
    assert_eq!(
        (turn.as_str(), call.as_str(), command.as_str()),
        (second.as_str(), "call_1", "echo DANGEROUS > dangerous.txt")
    );
    let stale = h.agent.approve(&first, "call_1", ApprovalDecision::Approved);
    let message = stale.expect_err("the old turn's approval is refused").to_string();
    assert!(message.contains(&first) && message.contains("call_1"), "names turn and call: {message}");
    let wrong_call = h.agent.approve(&second, "call_2", ApprovalDecision::Approved);
    assert!(wrong_call.is_err(), "a call that is not waiting is refused");
    // The pending call still waits for its own decision.
    h.agent.approve(&second, "call_1", ApprovalDecision::Denied).expect("the right turn and call are accepted");
    let events = h.run(None).await;
    assert_eq!(results(&events)[0].1, ToolStatus::Refused);
    assert!(!h.cwd.join("dangerous.txt").exists() && !h.cwd.join("harmless.txt").exists(), "nothing ran");
}

#[tokio::test]
async fn a_call_id_repeated_in_the_next_response_of_one_turn_runs_as_its_own_call() {
    let mut h =
        harness(vec![Reply::call("call_0", "echo one"), Reply::call("call_0", "echo two"), Reply::text("Both ran.")])
            .await;
    h.agent.chat("Two steps").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    assert_eq!(ended(&events).0, TurnStatus::Completed);
    let outputs: Vec<(String, ToolStatus, String)> = results(&events);
    assert_eq!(
        outputs,
        [
            ("call_0".to_string(), ToolStatus::Success, "one\n".to_string()),
            ("call_0".to_string(), ToolStatus::Success, "two\n".to_string())
        ]
    );
    let input = h.input_of_request(2);
    let pairs = call_items(&input);
    let expected: Vec<(String, String)> =
        ["function_call", "function_call_output", "function_call", "function_call_output"]
            .iter()
            .map(|k| (k.to_string(), "call_0".to_string()))
            .collect();
    assert_eq!(pairs, expected);
    let outputs: Vec<String> = input
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| output_of(i)["output"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(outputs, ["one\n", "two\n"], "each call followed by its own output");
}

#[tokio::test]
async fn a_duplicate_id_inside_one_response_is_not_run_and_says_why() {
    let mut h = harness(vec![
        Reply::calls(&[("call_0", "echo first > first.txt"), ("call_0", "echo second > second.txt")]),
        Reply::text("Noted."),
    ])
    .await;
    h.agent.chat("Two at once").await.expect("chat");
    let events = h.run(Some(ApprovalDecision::Approved)).await;
    let asked: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalRequest { command, .. } => Some(command.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["echo first > first.txt"], "only the first call with the id is put to the person");
    assert!(h.cwd.join("first.txt").exists());
    assert!(!h.cwd.join("second.txt").exists(), "the duplicate never ran");
    let outcomes = results(&events);
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[1].1, ToolStatus::Failed);
    assert!(outcomes[1].2.contains("call_0") && outcomes[1].2.contains("echo second"), "{}", outcomes[1].2);
    let input = h.input_of_request(1);
    assert_eq!(
        call_items(&input).iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["function_call", "function_call", "function_call_output", "function_call_output"],
        "each call sent once, with exactly one output"
    );
}

/// A journal file whose first sync waits until the test lets it finish.
struct HeldSync {
    inner: Box<dyn JournalFile>,
    entered: std::sync::mpsc::Sender<()>,
    release: std::sync::mpsc::Receiver<()>,
    held: bool,
}

impl JournalFile for HeldSync {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> std::io::Result<usize> {
        self.inner.write_at(buf, offset)
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        if !self.held {
            self.held = true;
            let _ = self.entered.send(());
            let _ = self.release.recv();
        }
        self.inner.sync_data()
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
}

/// A slow disk does not hold up the person: `mino/cancel` is answered while
/// the user's record is still being synced, and the turn then ends
/// `cancelled` on file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_is_answered_while_the_user_record_is_being_synced() {
    let mut h = harness(vec![Reply::text("never asked")]).await;
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    h.agent.with_session(|s| {
        s.journal_mut()
            .wrap_file(|inner| Box::new(HeldSync { inner, entered: entered_tx, release: release_rx, held: false }))
    });
    let agent = h.agent.clone();
    let chat = tokio::spawn(async move { agent.chat("Hi").await });
    entered.recv_timeout(Duration::from_secs(20)).expect("the user record's sync began");
    // From a thread of its own, so a cancel stuck behind the sync cannot
    // hang the test: it fails instead.
    let agent = h.agent.clone();
    let (answered_tx, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = answered_tx.send(agent.cancel("turn-1").is_ok());
    });
    let cancelled = answered.recv_timeout(Duration::from_secs(10));
    release.send(()).expect("release the sync");
    assert_eq!(cancelled, Ok(true), "cancel answered while the sync was still running");
    let turn = chat.await.expect("chat task").expect("chat");
    assert_eq!(turn, "turn-1");
    let events = h.run(None).await;
    assert_eq!(ended(&events).0, TurnStatus::Cancelled);
    assert_eq!(h.mock.requests().len(), 0, "a turn cancelled before it began asks the model nothing");
    let journal = std::fs::read_to_string(&h.journal).expect("journal");
    assert!(journal.contains("\"turn_end\"") && journal.contains("cancelled"), "{journal}");
}

/// `Agent::switch`: refused while a turn runs; afterwards the old session is
/// released, `SessionOpened` comes first, stamped with the new session, and
/// the next turn's events and commands belong to the new session.
#[tokio::test]
async fn a_switch_waits_for_no_turn_and_moves_events_and_commands_to_the_new_session() {
    let mut h = harness(vec![
        Reply::call("call_1", "pwd"),
        Reply::text("first"),
        Reply::call("call_2", "pwd"),
        Reply::text("second"),
    ])
    .await;
    let home = MinoHome::new(h._dir.path().join("home"));
    let other = h._dir.path().join("other");
    std::fs::create_dir_all(&other).expect("other dir");
    let other = other.canonicalize().expect("canonical");
    let mut store = mino_core::SessionStore::new(home.clone(), &h.cwd).expect("store");
    let old_id = h.agent.with_session(|s| s.id().to_string());

    let turn = h.agent.chat("one").await.expect("chat");
    loop {
        if let AgentEvent::ApprovalRequest { .. } = h.next().await {
            break;
        }
    }
    let target = other.clone();
    let refused = h.agent.switch(move |s| store.new_session(s, Some(&target))).await;
    assert!(
        matches!(&refused, Err(mino_core::agent::AgentError::Session(mino_core::SessionError::TurnInProgress(t))) if *t == turn),
        "{:?}",
        refused.as_ref().err()
    );
    h.agent.approve(&turn, "call_1", ApprovalDecision::Approved).expect("approve");
    h.run(None).await;

    let mut store = mino_core::SessionStore::new(home.clone(), &h.cwd).expect("store");
    let target = other.clone();
    let info = h.agent.switch(move |s| store.new_session(s, Some(&target))).await.expect("no turn runs").expect("new");
    assert_ne!(info.session_id, old_id);
    let opened = tokio::time::timeout(Duration::from_secs(20), h.events.recv()).await.expect("event").expect("open");
    assert_eq!(opened.session_id, info.session_id);
    assert!(matches!(&opened.event, AgentEvent::SessionOpened { recovery } if recovery.turns().is_empty()));
    // Released: another opener can take the old session now.
    drop(Session::open(&home, &old_id).expect("the old session is released"));

    let turn = h.agent.chat("two").await.expect("chat in the new session");
    assert_eq!(turn, "turn-1", "a new session counts its own turns");
    let numbered = tokio::time::timeout(Duration::from_secs(20), h.events.recv()).await.expect("event").expect("open");
    assert_eq!(numbered.seq, opened.seq, "the switch took no seq");
    assert_eq!(numbered.session_id, info.session_id);
    loop {
        let numbered =
            tokio::time::timeout(Duration::from_secs(20), h.events.recv()).await.expect("event").expect("open");
        assert_eq!(numbered.session_id, info.session_id);
        match numbered.event {
            AgentEvent::ApprovalRequest { turn_id, call_id, directory, .. } => {
                assert_eq!(directory, other.display().to_string(), "commands run in the new session's directory");
                h.agent.approve(&turn_id, &call_id, ApprovalDecision::Approved).expect("approve");
            }
            AgentEvent::ToolResult { output, .. } => assert_eq!(output, format!("{}\n", other.display())),
            AgentEvent::TurnEnded { status, .. } => {
                assert_eq!(status, TurnStatus::Completed);
                break;
            }
            _ => {}
        }
    }
}

// ------------------------------------------------------------ history items

/// Text, a call, more text cut short by a cancel: the transcript keeps all
/// of it in the order it happened (the cut text in the turn's end), the
/// call with what its approval showed; the next request's input holds the
/// call and the notice but never the cut text.
#[tokio::test]
async fn a_cancelled_turn_keeps_its_order_and_partial_text_without_replaying_it() {
    let deltas: Vec<String> = (0..50).map(|i| format!("half{i} ")).collect();
    let mut h = harness(vec![
        Reply::Calls {
            text: vec!["Let me ".into(), "look.".into()],
            calls: vec![ScriptedCall::new("call_1", "echo hi")],
            delay_ms: 0,
        },
        Reply::Text { deltas, delay_ms: 100 },
        Reply::text("Fine."),
    ])
    .await;
    let turn = h.agent.chat("Look around").await.expect("chat");
    let mut after_result = String::new();
    let mut seen_result = false;
    loop {
        match h.next().await {
            AgentEvent::ApprovalRequest { turn_id, call_id, .. } => {
                h.agent.approve(&turn_id, &call_id, ApprovalDecision::Approved).expect("approve")
            }
            AgentEvent::ToolResult { .. } => seen_result = true,
            AgentEvent::TextDelta { delta, .. } if seen_result => {
                after_result.push_str(&delta);
                break;
            }
            _ => {}
        }
    }
    h.agent.cancel(&turn).expect("cancel");
    let events = h.run(None).await;
    for event in &events {
        if let AgentEvent::TextDelta { delta, .. } = event {
            after_result.push_str(delta);
        }
    }
    assert_eq!(ended(&events).0, TurnStatus::Cancelled);
    assert!(after_result.starts_with("half0 "), "{after_result:?}");

    let (items, call) = h.agent.with_session(|s| {
        let t = s.transcript().turns[0].clone();
        (t.items(), t.calls[0].clone())
    });
    use mino_core::transcript::TurnItem;
    assert_eq!(
        items,
        [
            TurnItem::Text("Let me look.".into()),
            TurnItem::Call(0),
            TurnItem::Text(after_result.clone()),
            TurnItem::Notice(mino_core::transcript::runtime_notice(TurnStatus::Cancelled)),
        ]
    );
    assert_eq!(call.directory.as_deref(), Some(h.cwd.display().to_string().as_str()));
    let environment = call.environment.expect("environment journaled");
    assert!(environment.contains_key("PATH"));
    assert!(!environment.values().any(|v| v.contains(SENTINEL_KEY)), "no secret in the journaled environment");
    let limits = call.limits.expect("limits journaled");
    assert_eq!(limits.timeout_seconds, Limits::default().timeout.as_secs());
    assert_eq!(limits.output_limit_bytes, Limits::default().output_limit as u64);
    let journal = std::fs::read_to_string(&h.journal).expect("journal");
    assert!(journal.contains("\"partial_text\""), "the cut text is on file");

    // The next request: the call and the notice, never the cut text.
    h.agent.chat("Go on").await.expect("chat");
    let events = h.run(None).await;
    assert_eq!(ended(&events).0, TurnStatus::Completed);
    let input = serde_json::to_string(&h.input_of_request(2)).expect("json");
    assert!(input.contains("echo hi") && input.contains("runtime notice"), "{input}");
    assert!(!input.contains("half0"), "the cut text was replayed: {input}");

    // Reopened from the file, the same items.
    let path = h.journal.clone();
    drop(h.agent);
    let (reopened, _) = Session::open_path(&path).expect("reopen");
    assert_eq!(reopened.transcript().turns[0].items()[2], TurnItem::Text(after_result));
}
