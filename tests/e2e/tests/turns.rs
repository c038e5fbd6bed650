//! Ordinary turns over the real binary: streamed text, approval, denial, cancel.

use mino_e2e::{input_summary, options_in, wire, work_dir, MockModel, Reply, Server, TIMEOUT};
use serde_json::json;

async fn started(mock: &MockModel) -> (Server, std::path::PathBuf) {
    let mut server = Server::spawn(mock).await;
    let cwd = work_dir(server.home());
    let result = server.initialize(&options_in(&cwd)).await.expect("initialize");
    let caps = Server::capabilities(&result);
    assert_eq!(caps.model, "mock-model");
    assert_eq!(result["serverInfo"]["name"], "mino-server");
    let recovery: wire::RecoveryNotification = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert_eq!(recovery.session_id, caps.session_id);
    assert!(!recovery.acknowledgement_required);
    assert!(recovery.turns.is_empty());
    (server, cwd)
}

async fn chat(server: &mut Server, text: &str) -> String {
    let result: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: text.into(), ..Default::default() })
        .await
        .expect("chat accepted");
    result.turn_id
}

#[tokio::test(flavor = "multi_thread")]
async fn text_streams_in_seq_order_and_the_turn_completes() {
    let mock = MockModel::start(vec![Reply::text("Hello there, how can I help?")]).await.expect("mock");
    let (mut server, _cwd) = started(&mock).await;
    let turn_id = chat(&mut server, "Hi").await;
    let notes = server.turn_notifications(&turn_id, TIMEOUT).await;

    assert_eq!(notes.first().map(|n| n.method.as_str()), Some(wire::method::TURN_STARTED));
    let seqs: Vec<u64> = notes.iter().map(|n| n.seq().expect("seq")).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seq must count up: {seqs:?}");
    assert!(notes.iter().all(|n| n.turn_id() == Some(turn_id.as_str())));
    let text: String = notes
        .iter()
        .filter(|n| n.method == wire::method::TEXT_DELTA)
        .map(|n| n.parse::<wire::TextDelta>().delta)
        .collect();
    assert_eq!(text, "Hello there, how can I help?");
    let ended: wire::TurnEnded = notes.last().expect("turnEnded").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed);
    assert_eq!(ended.text.as_deref(), Some("Hello there, how can I help?"));

    // History shows the turn; a method with optional params works without `params`.
    let history = server.request(wire::method::HISTORY, serde_json::Value::Null).await.expect("history");
    let history: wire::HistoryResult = serde_json::from_value(history).expect("history parses");
    assert_eq!(history.turns.len(), 1);
    assert_eq!(history.turns[0].input, "Hi");
    assert_eq!(history.turns[0].text, "Hello there, how can I help?");
    assert_eq!(history.turns[0].status, Some(wire::TurnStatus::Completed));

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].authorization.as_deref(), Some(format!("Bearer {}", mino_e2e::API_KEY).as_str()));
    assert_eq!(requests[0].body["model"], "mock-model");
}

#[tokio::test(flavor = "multi_thread")]
async fn approved_command_runs_and_its_result_goes_back_to_the_model() {
    let mock = MockModel::start(vec![Reply::call("call_1", "echo approved-output"), Reply::text("It printed.")])
        .await
        .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn_id = chat(&mut server, "Run echo").await;

    let request: wire::ApprovalRequest =
        server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    assert_eq!(request.turn_id, turn_id);
    assert_eq!(request.call_id, "call_1");
    assert_eq!(request.command, "echo approved-output");
    assert_eq!(request.directory, cwd.display().to_string());
    assert!(request.environment.contains_key("PATH"));
    assert!(!request.environment.contains_key("OPENAI_API_KEY"), "the key must not reach commands");
    assert!(request.limits.timeout_seconds > 0);

    // A decision for a call nobody asked about is refused.
    let err = server
        .call::<_, wire::EmptyResult>(
            wire::method::APPROVAL,
            &wire::ApprovalParams {
                turn_id: turn_id.clone(),
                call_id: "call_nope".into(),
                decision: wire::Decision::Approve,
                reason: None,
                rule: None,
                accepted_hunks: None,
            },
        )
        .await
        .expect_err("no such pending call");
    assert_eq!(err.code, wire::error_code::NO_PENDING_APPROVAL);

    // A second chat while this one runs is refused.
    let err = server.request(wire::method::CHAT, json!({"text": "again"})).await.expect_err("turn in progress");
    assert_eq!(err.code, wire::error_code::TURN_IN_PROGRESS);

    let _: wire::EmptyResult = server
        .call(
            wire::method::APPROVAL,
            &wire::ApprovalParams {
                turn_id: turn_id.clone(),
                call_id: "call_1".into(),
                decision: wire::Decision::Approve,
                reason: None,
                rule: None,
                accepted_hunks: None,
            },
        )
        .await
        .expect("approval accepted");
    let notes = server.turn_notifications(&turn_id, TIMEOUT).await;
    let methods: Vec<&str> = notes.iter().map(|n| n.method.as_str()).collect();
    assert!(methods.contains(&wire::method::TOOL_STARTED), "{methods:?}");
    let output: String = notes
        .iter()
        .filter(|n| n.method == wire::method::TOOL_OUTPUT)
        .map(|n| n.parse::<wire::ToolOutput>().chunk)
        .collect();
    assert!(output.contains("approved-output"), "{output:?}");
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Success);
    assert_eq!(result.exit_code, Some(0));
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed);

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        input_summary(&requests[1].body),
        vec!["user: Run echo", "function_call call_1", "function_call_output call_1 success"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn denied_command_is_refused_and_the_model_sees_the_pair() {
    let mock = MockModel::start(vec![Reply::call("call_1", "rm -rf build"), Reply::text("Understood, not deleting.")])
        .await
        .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    std::fs::create_dir_all(cwd.join("build")).expect("build dir");
    let turn_id = chat(&mut server, "Clean up").await;
    let request: wire::ApprovalRequest =
        server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    let _: wire::EmptyResult = server
        .call(
            wire::method::APPROVAL,
            &wire::ApprovalParams {
                turn_id: turn_id.clone(),
                call_id: request.call_id,
                decision: wire::Decision::Deny,
                reason: None,
                rule: None,
                accepted_hunks: None,
            },
        )
        .await
        .expect("deny accepted");
    let notes = server.turn_notifications(&turn_id, TIMEOUT).await;
    assert!(notes.iter().all(|n| n.method != wire::method::TOOL_STARTED), "a denied call never starts");
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Refused);
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
    assert!(cwd.join("build").exists(), "the denied command did not run");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        input_summary(&requests[1].body),
        vec!["user: Clean up", "function_call call_1", "function_call_output call_1 refused"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_while_approval_is_pending_ends_the_turn_cancelled() {
    let mock = MockModel::start(vec![Reply::call("call_1", "touch never.txt"), Reply::text("ok")]).await.expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn_id = chat(&mut server, "Touch a file").await;
    let _ = server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;

    let err = server
        .call::<_, wire::EmptyResult>(wire::method::CANCEL, &wire::CancelParams { turn_id: "turn-99".into() })
        .await
        .expect_err("unknown turn");
    assert_eq!(err.code, wire::error_code::UNKNOWN_TURN);

    let _: wire::EmptyResult = server
        .call(wire::method::CANCEL, &wire::CancelParams { turn_id: turn_id.clone() })
        .await
        .expect("cancel accepted");
    let notes = server.turn_notifications(&turn_id, TIMEOUT).await;
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Cancelled);
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::NotExecuted);
    assert!(!cwd.join("never.txt").exists());
    assert_eq!(mock.requests().len(), 1, "no model request after the cancel");

    // The session goes on.
    mock.push(Reply::text("Next answer."));
    let next = chat(&mut server, "And now?").await;
    let notes = server.turn_notifications(&next, TIMEOUT).await;
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
}
