//! A session file replaced (rename over it: an editor's save, a sync tool, a
//! backup restore) or deleted while a server has it open: the lock still
//! keeps a second server out, and the first one notices at its next save
//! point, stops the turn, runs nothing and claims nothing.

use std::path::{Path, PathBuf};

use mino_e2e::{count_kind, options_in, wire, work_dir, MockModel, Reply, Server, TIMEOUT};
use serde_json::json;

/// The words every refusal of a replaced or deleted journal carries.
const REPLACED: &str = "was replaced or deleted while Mino had it open";

/// A server with a session open (its `mino/recovery` taken), and its journal.
async fn opened(mock: &MockModel) -> (Server, PathBuf, wire::ServerCapabilities) {
    let mut server = Server::spawn(mock).await;
    let cwd = work_dir(server.home());
    let caps = Server::capabilities(&server.initialize(&options_in(&cwd)).await.expect("initialize"));
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    (server, cwd, caps)
}

/// Replaces `path` the way an editor saves: a copy of the same bytes,
/// renamed over it (a new inode at the same path).
fn replace_with_copy(path: &Path) {
    let copy = path.with_extension("jsonl.editor-save");
    std::fs::copy(path, &copy).expect("copy the journal");
    std::fs::rename(&copy, path).expect("rename the copy over the journal");
}

fn ended(notes: &[mino_e2e::Notification]) -> wire::TurnEnded {
    notes.last().expect("turnEnded").parse()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_journal_replaced_while_a_call_awaits_approval_runs_nothing_and_names_the_file() {
    let marker_name = "ran.txt";
    let mock = MockModel::start(vec![Reply::call("call_1", &format!("touch {marker_name}")), Reply::text("done")])
        .await
        .expect("mock");
    let (mut server, cwd, caps) = opened(&mock).await;
    let journal = PathBuf::from(&caps.journal_path);
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "touch it".into(), ..Default::default() })
        .await
        .expect("chat");
    let request: wire::ApprovalRequest =
        server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    assert_eq!(request.call_id, "call_1");

    replace_with_copy(&journal);
    let replaced = std::fs::read(&journal).expect("journal");

    // The decision is delivered; the turn's save point finds the file gone
    // from under it and stops before anything is spawned.
    let _ = server
        .request(wire::method::APPROVAL, json!({ "turnId": turn.turn_id, "callId": "call_1", "decision": "approve" }))
        .await;
    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let end = ended(&notes);
    assert_eq!(end.status, wire::TurnStatus::Failed, "{end:?}");
    let reason = end.reason.unwrap_or_default();
    assert!(reason.contains(&caps.journal_path), "the reason names the file: {reason}");
    assert!(reason.contains(REPLACED), "the reason says what happened: {reason}");
    assert!(
        notes.iter().all(|n| n.method != wire::method::TOOL_STARTED && n.method != wire::method::TOOL_RESULT),
        "nothing was started or claimed: {notes:?}"
    );
    assert!(!cwd.join(marker_name).exists(), "the command did not run");
    assert_eq!(mock.requests().len(), 1, "no model request after the failed save");
    assert_eq!(std::fs::read(&journal).expect("journal"), replaced, "the file at the path was not written");

    // The session takes no further turns, and says why.
    let err = server.request(wire::method::CHAT, json!({ "text": "again" })).await.expect_err("broken");
    assert_eq!(err.code, wire::error_code::JOURNAL_FAILURE, "{err}");
    assert!(err.message.contains(&caps.journal_path) && err.message.contains(REPLACED), "{err}");
    server.close_stdin();
    assert!(server.wait(TIMEOUT).await.success());

    // Reopened, the file at the path tells the truth: the call never ran.
    let mut again = Server::spawn_in(server.home(), &mock).await;
    again.initialize(&options_in(&cwd)).await.expect("reopen");
    let recovery: wire::RecoveryNotification = again.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    let call = &recovery.turns.first().expect("the turn was recovered").calls[0];
    assert_eq!(call.result.status, wire::ToolStatus::NotExecuted);
    assert!(!recovery.acknowledgement_required);
    assert_eq!(count_kind(&journal, "tool_start"), 0);
    assert!(!cwd.join(marker_name).exists(), "recovery runs nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_journal_fails_the_next_turn_instead_of_completing_it() {
    let mock = MockModel::start(vec![Reply::text("first answer"), Reply::text("never asked")]).await.expect("mock");
    let (mut server, _cwd, caps) = opened(&mock).await;
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "hello".into(), ..Default::default() })
        .await
        .expect("chat");
    assert_eq!(ended(&server.turn_notifications(&turn.turn_id, TIMEOUT).await).status, wire::TurnStatus::Completed);

    std::fs::remove_file(&caps.journal_path).expect("unlink the journal");
    let err = server.request(wire::method::CHAT, json!({ "text": "still saving?" })).await.expect_err("refused");
    assert_eq!(err.code, wire::error_code::JOURNAL_FAILURE, "{err}");
    assert!(err.message.contains(&caps.journal_path), "names the file: {err}");
    assert!(err.message.contains(REPLACED) && err.message.contains("no longer exists"), "says what happened: {err}");
    assert_eq!(mock.requests().len(), 1, "the model was not asked");
    assert!(
        server.notification_log().iter().filter(|n| n.method == wire::method::TURN_ENDED).count() == 1,
        "no second turn was announced, let alone completed"
    );
    assert!(!Path::new(&caps.journal_path).exists(), "nothing recreated the file");

    server.close_stdin();
    assert!(server.wait(TIMEOUT).await.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_journal_deleted_during_a_turn_ends_it_failed_not_completed() {
    let mock =
        MockModel::start(vec![Reply::call("call_1", "echo hi"), Reply::text("never asked")]).await.expect("mock");
    let (mut server, _cwd, caps) = opened(&mock).await;
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "echo".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;
    std::fs::remove_file(&caps.journal_path).expect("unlink the journal");
    let _ = server
        .request(wire::method::APPROVAL, json!({ "turnId": turn.turn_id, "callId": "call_1", "decision": "deny" }))
        .await;
    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let end = ended(&notes);
    assert_eq!(end.status, wire::TurnStatus::Failed, "{end:?}");
    let reason = end.reason.unwrap_or_default();
    assert!(reason.contains(&caps.journal_path) && reason.contains(REPLACED), "{reason}");
    assert!(notes.iter().all(|n| n.method != wire::method::TOOL_RESULT), "no result claimed: {notes:?}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_journal_is_still_locked_against_a_second_server() {
    let mock = MockModel::start(vec![Reply::text("first answer")]).await.expect("mock");
    let (mut first, cwd, caps) = opened(&mock).await;
    let turn: wire::ChatResult = first
        .call(wire::method::CHAT, &wire::ChatParams { text: "hello".into(), ..Default::default() })
        .await
        .expect("chat");
    first.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let journal = PathBuf::from(&caps.journal_path);
    replace_with_copy(&journal);
    let before = std::fs::read(&journal).expect("journal");

    let mut second = Server::spawn_in(first.home(), &mock).await;
    let options = wire::InitializationOptions { session: Some(caps.session_id.clone()), ..options_in(&cwd) };
    let err = second.initialize(&options).await.expect_err("the session is still locked");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains("open in another Mino process"), "{err}");
    // Deleting it does not unlock it either.
    std::fs::remove_file(&journal).expect("unlink");
    std::fs::write(&journal, &before).expect("restore from a backup");
    let mut third = Server::spawn_in(first.home(), &mock).await;
    let err = third.initialize(&options).await.expect_err("still locked");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains("open in another Mino process"), "{err}");
    assert_eq!(std::fs::read(&journal).expect("journal"), before, "the refused servers wrote nothing");

    // The first server is still running and answering.
    let history: wire::HistoryResult = first.call(wire::method::HISTORY, &json!({})).await.expect("history");
    assert_eq!(history.turns.len(), 1);
    first.close_stdin();
    assert!(first.wait(TIMEOUT).await.success());

    // Once it is gone, the session opens again.
    let mut fourth = Server::spawn_in(first.home(), &mock).await;
    fourth.initialize(&options).await.expect("the lock died with its holder");
}

/// The lock file deleted while a call awaits approval (a careless
/// `rm sessions/*.lock`): a second server is still kept out (the journal
/// itself is locked too), and the first, at the approval's save point, finds
/// its lock gone, runs nothing and leaves the file as it was.
#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_lock_file_keeps_a_second_server_out_and_stops_the_first_at_its_next_save_point() {
    let marker_name = "ran.txt";
    let mock = MockModel::start(vec![Reply::call("call_1", &format!("touch {marker_name}"))]).await.expect("mock");
    let (mut first, cwd, caps) = opened(&mock).await;
    let journal = PathBuf::from(&caps.journal_path);
    let turn: wire::ChatResult = first
        .call(wire::method::CHAT, &wire::ChatParams { text: "touch it".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = first.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;

    std::fs::remove_file(journal.with_extension("lock")).expect("delete the lock file");
    let mut second = Server::spawn_in(first.home(), &mock).await;
    let options = wire::InitializationOptions { session: Some(caps.session_id.clone()), ..options_in(&cwd) };
    let err = second.initialize(&options).await.expect_err("still locked");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains("open in another Mino process"), "{err}");
    let before = std::fs::read(&journal).expect("journal");

    let _ = first
        .request(wire::method::APPROVAL, json!({ "turnId": turn.turn_id, "callId": "call_1", "decision": "approve" }))
        .await;
    let end = ended(&first.turn_notifications(&turn.turn_id, TIMEOUT).await);
    assert_eq!(end.status, wire::TurnStatus::Failed, "{end:?}");
    let reason = end.reason.unwrap_or_default();
    // (The refused second server left a new lock file at the path.)
    assert!(reason.contains(".lock") && reason.contains(REPLACED), "names the lock file: {reason}");
    assert!(!cwd.join(marker_name).exists(), "the command did not run");
    // Nothing is claimed on file: what was not saved is dropped, nothing added.
    assert!(before.starts_with(&std::fs::read(&journal).expect("journal")), "the file only lost unsaved records");
    assert_eq!(count_kind(&journal, "approval") + count_kind(&journal, "tool_start"), 0);
}

/// The journal replaced while an approved command runs: the command's
/// result cannot be saved to the file at the path, so the turn ends failed
/// without claiming the result, and the file at the path (a copy holding
/// the `tool_start`) reopens with the call `unknown`, to be acknowledged.
#[tokio::test(flavor = "multi_thread")]
async fn a_journal_replaced_while_a_command_runs_claims_no_result_and_reopens_unknown() {
    let mock = MockModel::start(vec![
        Reply::call("call_1", "touch started; while [ ! -e go ]; do sleep 0.05; done; echo finished"),
        Reply::text("never asked"),
    ])
    .await
    .expect("mock");
    let (mut server, cwd, caps) = opened(&mock).await;
    let journal = PathBuf::from(&caps.journal_path);
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "run it".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;
    server
        .request(wire::method::APPROVAL, json!({ "turnId": turn.turn_id, "callId": "call_1", "decision": "approve" }))
        .await
        .expect("approved");
    let _ = server.next_notification(wire::method::TOOL_STARTED, TIMEOUT).await;
    let deadline = std::time::Instant::now() + TIMEOUT;
    while !cwd.join("started").exists() {
        assert!(std::time::Instant::now() < deadline, "the command never started");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    replace_with_copy(&journal);
    std::fs::write(cwd.join("go"), "").expect("let the command finish");

    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let end = ended(&notes);
    assert_eq!(end.status, wire::TurnStatus::Failed, "{end:?}");
    assert!(end.reason.unwrap_or_default().contains(REPLACED));
    assert!(notes.iter().all(|n| n.method != wire::method::TOOL_RESULT), "no result claimed: {notes:?}");
    assert_eq!(mock.requests().len(), 1, "the model was not asked again");
    server.close_stdin();
    assert!(server.wait(TIMEOUT).await.success());

    let mut again = Server::spawn_in(server.home(), &mock).await;
    again.initialize(&options_in(&cwd)).await.expect("reopen");
    let recovery: wire::RecoveryNotification = again.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    let call = &recovery.turns.first().expect("the turn was recovered").calls[0];
    assert_eq!(call.result.status, wire::ToolStatus::Unknown);
    assert!(recovery.acknowledgement_required);
}
