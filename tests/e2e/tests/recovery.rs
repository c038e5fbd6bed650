//! Crashes and what the next server makes of them: the milk story (killed
//! after `tool_start` is synced, before `tool_result`), a kill while an
//! approval is pending, and a kill while text streams. Each runs under both
//! providers (`responses::…` and `chat_completions::…`): recovery does not
//! depend on the wire the model speaks.

use mino_e2e::{
    count_kind, input_summary, journal_records, options_in, replayed_items, session_files, under_both_providers, wire,
    work_dir, MockModel, Provider, Reply, Server, TIMEOUT,
};
use serde_json::Value;

/// Appends milk, then kills the server (its supervisor is the command's
/// parent, the server the parent of that) before the result is saved.
const MILK: &str = "echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)";

const NOTICE_INTERRUPTED: &str = "Mino runtime notice: the previous turn ended with status interrupted. Tool results above are retained; no command was automatically retried.";

under_both_providers!(
    milk_story_unknown_result_is_replayed_after_acknowledgement,
    kill_while_approval_is_pending_recovers_not_executed_without_acknowledgement,
    kill_during_streaming_leaves_the_turn_out_of_context,
);

/// Every model request went through `provider`'s endpoint.
fn assert_all_through(mock: &MockModel, provider: Provider) {
    let paths: Vec<String> = mock.requests().iter().map(|r| r.path.clone()).collect();
    assert!(paths.iter().all(|p| p == provider.path()), "every request through {}: {paths:?}", provider.path());
}

async fn initialize(
    server: &mut Server,
    cwd: &std::path::Path,
) -> (wire::ServerCapabilities, wire::RecoveryNotification) {
    let result = server.initialize(&options_in(cwd)).await.expect("initialize");
    let recovery = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    (Server::capabilities(&result), recovery)
}

async fn milk_story_unknown_result_is_replayed_after_acknowledgement(provider: Provider) {
    let mock = MockModel::start(vec![
        Reply::call("call_1", MILK),
        Reply::text("The earlier append may have run; I can check shopping.txt if you approve."),
    ])
    .await
    .expect("mock");

    // First life: the approved command appends milk, then kills the server
    // after tool_start was synced and before tool_result could be written.
    let mut first = Server::spawn_with(provider.spawn(None, &mock)).await;
    let _home = first.keep_home();
    let home = first.home().to_path_buf();
    let cwd = work_dir(&home);
    let (caps, recovery) = initialize(&mut first, &cwd).await;
    assert!(recovery.turns.is_empty());
    let turn: wire::ChatResult = first
        .call(wire::method::CHAT, &wire::ChatParams { text: "Add milk to shopping.txt.".into(), ..Default::default() })
        .await
        .expect("chat");
    let request: wire::ApprovalRequest = first.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    assert_eq!(request.call_id, "call_1");
    // The server may die before it answers: do not wait for the response.
    first
        .send_message(&serde_json::json!({"jsonrpc": "2.0", "id": 1000, "method": wire::method::APPROVAL,
            "params": {"turnId": turn.turn_id, "callId": "call_1", "decision": "approve"}}))
        .await;
    let status = first.wait(TIMEOUT).await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "the command killed the server: {status:?}");

    let journal = std::path::PathBuf::from(&caps.journal_path);
    let records = journal_records(&journal);
    let kinds: Vec<&str> = records.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert!(kinds.contains(&"tool_start"), "{kinds:?}");
    assert!(!kinds.contains(&"tool_result"), "killed before the result: {kinds:?}");
    assert_eq!(std::fs::read_to_string(cwd.join("shopping.txt")).expect("shopping.txt"), "milk\n");

    // Second life.
    let mut second = Server::spawn_with(provider.spawn(Some(&home), &mock)).await;
    let (caps2, recovery) = initialize(&mut second, &cwd).await;
    assert_eq!(caps2.session_id, caps.session_id, "the most recent session is reopened");
    assert!(recovery.acknowledgement_required);
    assert_eq!(recovery.unacknowledged_turn_ids, vec![turn.turn_id.clone()]);
    assert_eq!(recovery.turns.len(), 1);
    assert_eq!(recovery.turns[0].status, wire::TurnStatus::Interrupted);
    assert_eq!(recovery.turns[0].calls.len(), 1);
    let call = &recovery.turns[0].calls[0];
    assert_eq!(call.call_id, "call_1");
    assert_eq!(call.command, MILK);
    assert_eq!(call.result.status, wire::ToolStatus::Unknown);

    // Nothing continues before the acknowledgement.
    let err = second
        .request(wire::method::CHAT, serde_json::json!({"text": "Is milk on the list now?"}))
        .await
        .expect_err("refused until acknowledged");
    assert_eq!(err.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    assert_eq!(err.message, "Acknowledge unknown tool results before continuing");
    assert_eq!(count_kind(&journal, "recovery_ack"), 0);

    // No `params` member: every pending turn.
    let ack = second.request(wire::method::ACKNOWLEDGE, Value::Null).await.expect("acknowledge");
    let ack: wire::AcknowledgeResult = serde_json::from_value(ack).expect("ack result");
    assert_eq!(ack.acknowledged, vec![turn.turn_id.clone()]);
    assert_eq!(count_kind(&journal, "recovery_ack"), 1, "exactly one recovery_ack");

    let next: wire::ChatResult = second
        .call(wire::method::CHAT, &wire::ChatParams { text: "Is milk on the list now?".into(), ..Default::default() })
        .await
        .expect("chat after acknowledgement");
    let notes = second.turn_notifications(&next.turn_id, TIMEOUT).await;
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        input_summary(&requests[1].body),
        vec![
            "user: Add milk to shopping.txt.".to_string(),
            "function_call call_1".to_string(),
            "function_call_output call_1 unknown".to_string(),
            format!("assistant: {NOTICE_INTERRUPTED}"),
            "user: Is milk on the list now?".to_string(),
        ]
    );
    // The replayed call keeps its arguments; the result says "unknown" honestly.
    let input = replayed_items(&requests[1].body);
    assert_eq!(input[1]["arguments"], serde_json::json!({ "command": MILK }).to_string());
    let output: Value = serde_json::from_str(input[2]["output"].as_str().expect("output")).expect("output JSON");
    assert_eq!(output["status"], "unknown");
    assert_eq!(
        output["output"],
        "Execution was started but its result was not saved. The operation may have happened. Do not automatically retry it."
    );
    // Nothing was rerun.
    assert_eq!(std::fs::read_to_string(cwd.join("shopping.txt")).expect("shopping.txt"), "milk\n");
    assert_eq!(count_kind(&journal, "recovery_ack"), 1);
    assert_eq!(session_files(&home).len(), 1);
    assert_all_through(&mock, provider);
}

async fn kill_while_approval_is_pending_recovers_not_executed_without_acknowledgement(provider: Provider) {
    let mock =
        MockModel::start(vec![Reply::call("call_1", "touch created.txt"), Reply::text("Noted.")]).await.expect("mock");
    let mut first = Server::spawn_with(provider.spawn(None, &mock)).await;
    let _home = first.keep_home();
    let home = first.home().to_path_buf();
    let cwd = work_dir(&home);
    let (caps, _) = initialize(&mut first, &cwd).await;
    let turn: wire::ChatResult = first
        .call(wire::method::CHAT, &wire::ChatParams { text: "Create a file".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = first.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;
    first.kill().await;

    let mut second = Server::spawn_with(provider.spawn(Some(&home), &mock)).await;
    let (_, recovery) = initialize(&mut second, &cwd).await;
    assert!(!recovery.acknowledgement_required);
    assert!(recovery.unacknowledged_turn_ids.is_empty());
    assert_eq!(recovery.turns.len(), 1);
    assert_eq!(recovery.turns[0].turn_id, turn.turn_id);
    assert_eq!(recovery.turns[0].status, wire::TurnStatus::Interrupted);
    assert_eq!(recovery.turns[0].calls[0].result.status, wire::ToolStatus::NotExecuted);
    assert!(!cwd.join("created.txt").exists());

    let next: wire::ChatResult = second
        .call(wire::method::CHAT, &wire::ChatParams { text: "What happened?".into(), ..Default::default() })
        .await
        .expect("chat works");
    let notes = second.turn_notifications(&next.turn_id, TIMEOUT).await;
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
    let requests = mock.requests();
    assert_eq!(
        input_summary(&requests[1].body),
        vec![
            "user: Create a file".to_string(),
            "function_call call_1".to_string(),
            "function_call_output call_1 not_executed".to_string(),
            format!("assistant: {NOTICE_INTERRUPTED}"),
            "user: What happened?".to_string(),
        ]
    );
    assert_eq!(count_kind(std::path::Path::new(&caps.journal_path), "recovery_ack"), 0);
    assert_all_through(&mock, provider);
}

async fn kill_during_streaming_leaves_the_turn_out_of_context(provider: Provider) {
    let slow = Reply::Text { deltas: (0..40).map(|i| format!("word{i} ")).collect(), delay_ms: 250 };
    let mock = MockModel::start(vec![slow, Reply::text("Fresh answer.")]).await.expect("mock");
    let mut first = Server::spawn_with(provider.spawn(None, &mock)).await;
    let _home = first.keep_home();
    let home = first.home().to_path_buf();
    let cwd = work_dir(&home);
    let _ = initialize(&mut first, &cwd).await;
    let turn: wire::ChatResult = first
        .call(wire::method::CHAT, &wire::ChatParams { text: "Tell me a long story".into(), ..Default::default() })
        .await
        .expect("chat");
    let delta: wire::TextDelta = first.next_notification(wire::method::TEXT_DELTA, TIMEOUT).await.parse();
    assert_eq!(delta.turn_id, turn.turn_id);
    first.kill().await;

    let mut second = Server::spawn_with(provider.spawn(Some(&home), &mock)).await;
    let (_, recovery) = initialize(&mut second, &cwd).await;
    assert!(!recovery.acknowledgement_required);
    assert_eq!(recovery.turns.len(), 1);
    assert_eq!(recovery.turns[0].status, wire::TurnStatus::Interrupted);
    assert!(recovery.turns[0].calls.is_empty());

    let next: wire::ChatResult = second
        .call(wire::method::CHAT, &wire::ChatParams { text: "Short one please".into(), ..Default::default() })
        .await
        .expect("chat");
    let notes = second.turn_notifications(&next.turn_id, TIMEOUT).await;
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        input_summary(&requests[1].body),
        vec!["user: Short one please"],
        "the interrupted text-only turn is left out"
    );

    let history: wire::HistoryResult =
        second.call(wire::method::HISTORY, &serde_json::json!({})).await.expect("history");
    assert_eq!(history.turns.len(), 2);
    assert_eq!(history.turns[0].status, Some(wire::TurnStatus::Interrupted));
    assert_all_through(&mock, provider);
}
