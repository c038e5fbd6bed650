//! Crash injection at the journal's save points through `FAILPOINTS`, with a
//! server built with `--features failpoints` (a panic aborts the server).
//! Skipped unless `MINO_E2E_FAILPOINTS=1` or `MINO_SERVER_FAILPOINTS_BIN` is
//! set (see `mino_e2e::failpoints_server_bin`).

use mino_e2e::{
    count_kind, failpoints_server_bin, input_summary, options_in, wire, work_dir, MockModel, Reply, Server, Spawn,
    TIMEOUT,
};

/// Runs the milk command with `failpoint` set to panic, then reopens the
/// session with a clean server. Returns the reopened server and recovery.
async fn crash_at(
    failpoint: &str,
    mock: &MockModel,
) -> Option<(Server, wire::RecoveryNotification, std::path::PathBuf, tempfile::TempDir)> {
    let Some(bin) = failpoints_server_bin() else {
        eprintln!("skipped: set MINO_E2E_FAILPOINTS=1 (or MINO_SERVER_FAILPOINTS_BIN) to run the failpoint tests");
        return None;
    };
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mut first = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: Some(bin),
        failpoints: Some(format!("{failpoint}=panic")),
        ..Default::default()
    })
    .await;
    first.initialize(&options_in(&cwd)).await.expect("initialize");
    let turn: wire::ChatResult = first
        .call(wire::method::CHAT, &wire::ChatParams { text: "Add milk to shopping.txt.".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = first.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;
    first
        .send_message(&serde_json::json!({"jsonrpc": "2.0", "id": 1000, "method": wire::method::APPROVAL,
            "params": {"turnId": turn.turn_id, "callId": "call_1", "decision": "approve"}}))
        .await;
    let status = first.wait(TIMEOUT).await;
    assert!(!status.success(), "the failpoint crashed the server: {status:?}");
    assert!(first.stderr().contains(failpoint), "the failpoint fired: {}", first.stderr());

    let mut second = Server::spawn_in(home.path(), mock).await;
    second.initialize(&options_in(&cwd)).await.expect("reopen");
    let recovery = second.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    Some((second, recovery, cwd, home))
}

async fn acknowledge_and_continue(server: &mut Server, mock: &MockModel) {
    let err = server
        .request(wire::method::CHAT, serde_json::json!({"text": "Is milk on the list now?"}))
        .await
        .expect_err("gate");
    assert_eq!(err.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    let _ = server.request(wire::method::ACKNOWLEDGE, serde_json::Value::Null).await.expect("acknowledge");
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Is milk on the list now?".into(), ..Default::default() })
        .await
        .expect("chat");
    server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let requests = mock.requests();
    let last = requests.last().expect("a request");
    let summary = input_summary(&last.body);
    assert_eq!(
        summary[..3],
        ["user: Add milk to shopping.txt.", "function_call call_1", "function_call_output call_1 unknown"]
    );
    assert!(summary[3].starts_with("assistant: Mino runtime notice"), "{summary:?}");
    assert_eq!(summary[4], "user: Is milk on the list now?");
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_after_the_command_ran_before_its_result_was_saved() {
    let mock = MockModel::start(vec![Reply::call("call_1", "echo milk >> shopping.txt"), Reply::text("Maybe.")])
        .await
        .expect("mock");
    let Some((mut server, recovery, cwd, home)) = crash_at("agent::before_tool_result", &mock).await else {
        return;
    };
    assert!(recovery.acknowledgement_required);
    assert_eq!(recovery.turns[0].calls[0].result.status, wire::ToolStatus::Unknown);
    assert_eq!(std::fs::read_to_string(cwd.join("shopping.txt")).expect("ran once"), "milk\n");
    acknowledge_and_continue(&mut server, &mock).await;
    assert_eq!(std::fs::read_to_string(cwd.join("shopping.txt")).expect("not rerun"), "milk\n");
    let journal = mino_e2e::session_files(home.path()).pop().expect("journal");
    assert_eq!(count_kind(&journal, "recovery_ack"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_after_tool_start_was_synced_before_the_command_was_spawned() {
    let mock = MockModel::start(vec![Reply::call("call_1", "echo milk >> shopping.txt"), Reply::text("Maybe.")])
        .await
        .expect("mock");
    let Some((mut server, recovery, cwd, _home)) = crash_at("journal::after_tool_start_sync", &mock).await else {
        return;
    };
    // A saved start is enough for `unknown`, even though nothing ran.
    assert!(recovery.acknowledgement_required);
    assert_eq!(recovery.turns[0].calls[0].result.status, wire::ToolStatus::Unknown);
    assert!(!cwd.join("shopping.txt").exists());
    acknowledge_and_continue(&mut server, &mock).await;
    assert!(!cwd.join("shopping.txt").exists());
}
