//! Approval mode `plan`, end to end: a command and an edit are refused
//! without asking and without running (no `tool_start` in the journal, no
//! `mino/toolStarted`, nothing on disk), the model is told in the runtime's
//! words, leaving the mode is the person's, and a crash in plan mode
//! recovers as any other.

use std::path::Path;

use mino_e2e::{input_summary, journal_records, wire, work_dir, MockModel, Notification, Reply, Server, TIMEOUT};
use serde_json::{json, Value};

/// The output a refused call carries (the core's `outputs::PLAN_MODE`).
const PLAN_MODE_OUTPUT: &str = "Not run: the session is in plan mode, where Mino runs no command and makes no edit. Propose the plan instead; the person decides when to leave plan mode.";
/// The notice's heading in the model's instructions.
const PLAN_NOTICE: &str = "# Runtime notice: plan mode";

fn instructions(body: &Value) -> String {
    body.get("instructions").and_then(Value::as_str).unwrap_or_default().to_string()
}

async fn open_in_plan(server: &mut Server, cwd: &Path) -> wire::ServerCapabilities {
    let options = wire::InitializationOptions {
        cwd: Some(cwd.display().to_string()),
        approval_mode: Some(wire::ApprovalMode::Plan),
        ..Default::default()
    };
    let result = server.initialize(&options).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    Server::capabilities(&result)
}

fn methods(notes: &[Notification]) -> Vec<&str> {
    notes.iter().map(|n| n.method.as_str()).collect()
}

fn kinds(journal: &Path) -> Vec<String> {
    journal_records(journal).iter().map(|r| r["kind"].as_str().unwrap_or("?").to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_refuses_a_command_and_an_edit_and_tells_the_model_then_ask_runs_again() {
    let mock = MockModel::start(vec![
        Reply::call("call_1", "touch ran.txt"),
        Reply::write_file("call_2", "plan.txt", "written\n"),
        Reply::text("The plan: create ran.txt, then plan.txt."),
        Reply::call("call_3", "touch ran.txt"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let caps = open_in_plan(&mut server, &cwd).await;
    assert_eq!(caps.approval_mode, wire::ApprovalMode::Plan);

    let turn = mino_e2e::chat(&mut server, "Set up the files").await;
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let seen = methods(&notes);
    assert!(!seen.contains(&wire::method::APPROVAL_REQUEST), "nothing is asked: {seen:?}");
    assert!(!seen.contains(&wire::method::TOOL_STARTED), "nothing starts: {seen:?}");
    let results: Vec<wire::ToolResult> =
        notes.iter().filter(|n| n.method == wire::method::TOOL_RESULT).map(Notification::parse).collect();
    assert_eq!(results.len(), 2);
    for result in &results {
        assert_eq!(result.status, wire::ToolStatus::Refused);
        assert_eq!(result.output, PLAN_MODE_OUTPUT);
    }
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
    assert!(!cwd.join("ran.txt").exists() && !cwd.join("plan.txt").exists(), "nothing ran");

    // The model was told: the notice in every request's instructions, and
    // each refusal in the runtime's words.
    let requests = mock.requests();
    assert!(requests[..3].iter().all(|r| instructions(&r.body).contains(PLAN_NOTICE)));
    assert_eq!(
        input_summary(&requests[2].body),
        [
            "user: Set up the files",
            "function_call call_1",
            "function_call_output call_1 refused",
            "function_call call_2",
            "function_call_output call_2 refused",
        ]
    );
    let replayed = serde_json::to_string(&requests[2].body["input"]).expect("json");
    assert!(replayed.contains("the session is in plan mode"), "{replayed}");
    let journal = Path::new(&caps.journal_path);
    let recorded = kinds(journal);
    assert!(!recorded.iter().any(|k| k == "tool_start" || k == "approval"), "{recorded:?}");
    let responses: Vec<Value> = journal_records(journal).into_iter().filter(|r| r["kind"] == "response").collect();
    assert!(responses.iter().all(|r| r["instructions"]["plan_mode"] == true), "{responses:?}");

    // The person leaves plan mode: the next command is asked about and runs.
    let settings: wire::SettingsResult =
        server.call(wire::method::SETTINGS_UPDATE, &json!({"approvalMode": "ask"})).await.expect("settings");
    assert_eq!(settings.approval_mode, wire::ApprovalMode::Ask);
    let turn = mino_e2e::chat(&mut server, "Go ahead").await;
    let request = mino_e2e::next_approval_request(&mut server).await;
    assert_eq!(request.call_id, "call_3");
    server.approval(&turn, "call_3", wire::Decision::Approve).await.expect("approve");
    assert_eq!(mino_e2e::end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    assert!(cwd.join("ran.txt").exists());
    assert!(!instructions(&mock.requests()[3].body).contains(PLAN_NOTICE));
}

/// SIGKILL while the model answers after a refusal: the refused result is
/// kept, the turn is interrupted, nothing is to acknowledge (nothing could
/// have run), and the next turn replays the refusal with the notice.
#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_turn_in_plan_mode_recovers_the_refusal_without_acknowledgement() {
    let mock = MockModel::start(vec![
        Reply::call("call_1", "touch ran.txt"),
        Reply::Stall { deltas: vec!["Thinking".into()], stall_ms: None },
        Reply::text("Here is the plan again."),
    ])
    .await
    .expect("mock");
    let mut first = Server::spawn(&mock).await;
    let home_guard = first.keep_home();
    let home = first.home().to_path_buf();
    let cwd = work_dir(&home);
    let caps = open_in_plan(&mut first, &cwd).await;
    let turn = mino_e2e::chat(&mut first, "Plan it").await;
    let _: wire::ToolResult = first.next_notification(wire::method::TOOL_RESULT, TIMEOUT).await.parse();
    let _ = first.next_notification(wire::method::TEXT_DELTA, TIMEOUT).await;
    first.kill().await;

    let mut second = Server::spawn_in(&home, &mock).await;
    let recovery = mino_e2e::open(&mut second, &cwd).await;
    assert!(!recovery.acknowledgement_required);
    assert_eq!(recovery.turns.len(), 1);
    assert_eq!(recovery.turns[0].turn_id, turn);
    assert_eq!(recovery.turns[0].status, wire::TurnStatus::Interrupted);
    assert_eq!(recovery.turns[0].calls[0].result.status, wire::ToolStatus::Refused);
    assert!(!cwd.join("ran.txt").exists());
    assert!(!kinds(Path::new(&caps.journal_path)).iter().any(|k| k == "tool_start"));

    let next = mino_e2e::chat(&mut second, "And now?").await;
    assert_eq!(mino_e2e::end_of(&mut second, &next).await.status, wire::TurnStatus::Completed);
    let last = mock.requests().last().expect("request").body.clone();
    let summary = input_summary(&last);
    assert_eq!(summary[..3], ["user: Plan it", "function_call call_1", "function_call_output call_1 refused"]);
    assert!(summary[3].contains("the previous turn ended with status interrupted"), "{summary:?}");
    drop(home_guard);
}
