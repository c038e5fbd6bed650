//! The file-edit tools end to end: the real server over stdio, the model
//! mocked at the HTTP wire scripting `edit_file` / `write_file` calls.
//!
//! The crash tests need a server built with `--features failpoints` and are
//! skipped without one (see `mino_e2e::failpoints_server_bin`).

use std::path::{Path, PathBuf};

use mino_e2e::{
    chat, end_of, failpoints_server_bin, input_summary, journal_records, next_approval_request, open, options_in,
    session_files, wire, work_dir, MockModel, Reply, Server, Spawn, TIMEOUT,
};
use serde_json::{json, Value};

const LIST: &str = "bread\nbutter\njam\n";
const EDITED: &str = "bread\nbutter\nmilk\njam\n";

fn add_milk() -> Reply {
    Reply::edit_file("call_1", "shopping.txt", "butter\n", "butter\nmilk\n", false)
}

/// `(call_id, status, output)` of every `function_call_output` in a model request.
fn outputs(body: &Value) -> Vec<(String, String, String)> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| {
            let output: Value = item["output"].as_str().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
            (
                item["call_id"].as_str().unwrap_or_default().to_string(),
                output["status"].as_str().unwrap_or_default().to_string(),
                output["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// A server on a fresh home whose session works in `<home>/work`, holding
/// `shopping.txt` with [`LIST`].
async fn started(mock: &MockModel) -> (Server, PathBuf) {
    let mut server = Server::spawn(mock).await;
    let cwd = work_dir(server.home());
    std::fs::write(cwd.join("shopping.txt"), LIST).expect("write the list");
    let recovery = open(&mut server, &cwd).await;
    assert!(recovery.turns.is_empty());
    (server, cwd)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

async fn history(server: &mut Server) -> wire::HistoryResult {
    let result = server.request(wire::method::HISTORY, json!({})).await.expect("history");
    serde_json::from_value(result).expect("history result")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_edit_changes_the_file_and_its_diff_is_shown_returned_and_kept() {
    let mock = MockModel::start(vec![add_milk(), Reply::text("Milk is on the list.")]).await.expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn = chat(&mut server, "Add milk after butter.").await;

    let request = next_approval_request(&mut server).await;
    assert_eq!(request.command, "edit_file shopping.txt");
    let edit = request.edit.expect("an edit's approval request carries the edit");
    assert_eq!(edit.tool, wire::EditToolName::EditFile);
    assert_eq!(edit.path, "shopping.txt");
    assert!(!edit.new_file && !edit.leaves_workspace);
    assert_eq!(edit.size, EDITED.len() as u64);
    assert_eq!(edit.diff, "--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,3 +1,4 @@\n bread\n butter\n+milk\n jam\n");
    assert_eq!(read(&cwd.join("shopping.txt")), LIST, "nothing is written before the approval");

    server.approval(&turn, "call_1", wire::Decision::Approve).await.expect("approve");
    let notifications = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notifications.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("a toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Success);
    assert_eq!(result.diff.as_deref(), Some(edit.diff.as_str()));
    assert_eq!(result.output, format!("Edited shopping.txt: replaced 1 occurrence of old_text.\n\n{}", edit.diff));
    let ended: wire::TurnEnded = notifications.last().expect("turnEnded").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed);
    assert_eq!(read(&cwd.join("shopping.txt")), EDITED);

    // The model was offered the edit tools, and heard what was written.
    let requests = mock.requests();
    let tools: Vec<&str> =
        requests[0].body["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(tools, ["bash", "edit_file", "write_file", "read_file", "list_files", "search"]);
    assert_eq!(outputs(&requests[1].body), [("call_1".to_string(), "success".to_string(), result.output.clone())]);

    // History shows the edit and the diff written.
    let history = history(&mut server).await;
    let call = &history.turns[0].calls[0];
    assert_eq!(call.command, "edit_file shopping.txt");
    assert_eq!(call.tool, Some(wire::ToolName::EditFile));
    let kept = call.result.as_ref().expect("result");
    assert_eq!(kept.status, wire::ToolStatus::Success);
    assert_eq!(kept.diff.as_deref(), Some(edit.diff.as_str()));

    // The execution boundary is on file as docs/journal.md specifies.
    let journal = session_files(server.home()).pop().expect("journal");
    let start = journal_records(&journal).into_iter().find(|r| r["kind"] == "tool_start").expect("tool_start");
    assert_eq!(start["v"], 3);
    assert_eq!(start["tool"], "edit_file");
    assert!(start.get("command").is_none());
    let real = std::fs::canonicalize(cwd.join("shopping.txt")).expect("canonical");
    assert_eq!(start["path"], real.display().to_string());
    assert_eq!(start["before_size"], LIST.len());
    assert_eq!(start["after_size"], EDITED.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_edit_leaves_the_file_unchanged() {
    let mock = MockModel::start(vec![add_milk(), Reply::text("Okay.")]).await.expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn = chat(&mut server, "Add milk after butter.").await;
    let request = next_approval_request(&mut server).await;
    assert!(request.edit.is_some());
    server.approval(&turn, "call_1", wire::Decision::Deny).await.expect("deny");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    assert_eq!(read(&cwd.join("shopping.txt")), LIST);
    let told = outputs(&mock.requests()[1].body);
    assert_eq!(told[0].1, "refused");
    assert!(told[0].2.contains("denied this edit"), "{told:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ambiguous_edit_is_refused_without_asking_and_the_model_is_told_why() {
    let mock = MockModel::start(vec![
        Reply::edit_file("call_1", "shopping.txt", "b", "B", false),
        Reply::text("I will be more precise."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn = chat(&mut server, "Capitalise the b.").await;
    let notifications = server.turn_notifications(&turn, TIMEOUT).await;
    let methods: Vec<&str> = notifications.iter().map(|n| n.method.as_str()).collect();
    assert!(!methods.contains(&wire::method::APPROVAL_REQUEST), "nobody is asked: {methods:?}");
    assert!(!methods.contains(&wire::method::TOOL_STARTED), "{methods:?}");
    let result: wire::ToolResult =
        notifications.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Failed);
    assert!(result.output.contains("occurs 2 times in `shopping.txt`"), "{}", result.output);
    assert_eq!(read(&cwd.join("shopping.txt")), LIST);
    let told = outputs(&mock.requests()[1].body);
    assert_eq!(told, [("call_1".to_string(), "failed".to_string(), result.output)]);
    // Nothing about it reached the execution boundary.
    let journal = session_files(server.home()).pop().expect("journal");
    assert!(!journal_records(&journal).iter().any(|r| r["kind"] == "tool_start" || r["kind"] == "approval"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_changed_while_its_edit_awaits_approval_is_not_written() {
    let mock = MockModel::start(vec![add_milk(), Reply::text("I will read it again.")]).await.expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn = chat(&mut server, "Add milk after butter.").await;
    let request = next_approval_request(&mut server).await;
    assert!(request.edit.is_some());
    // Someone else edits the file while the person looks at the diff.
    let theirs = "bread\nbutter\ncheese\njam\n";
    std::fs::write(cwd.join("shopping.txt"), theirs).expect("change the file");
    server.approval(&turn, "call_1", wire::Decision::Approve).await.expect("approve");
    let notifications = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notifications.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Failed);
    assert!(result.output.contains("was changed since this edit was proposed"), "{}", result.output);
    assert!(result.output.contains("Nothing was written"), "{}", result.output);
    assert_eq!(result.diff, None);
    assert_eq!(read(&cwd.join("shopping.txt")), theirs, "their change is kept, nothing written over it");
    let told = outputs(&mock.requests()[1].body);
    assert_eq!(told, [("call_1".to_string(), "failed".to_string(), result.output)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_path_outside_the_session_directory_is_asked_with_that_fact_and_denial_keeps_it() {
    let mock = MockModel::start(vec![
        Reply::edit_file("call_1", "../notes.txt", "old\n", "new\n", false),
        Reply::text("Okay."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let outside = cwd.parent().expect("home").join("notes.txt");
    std::fs::write(&outside, "old\n").expect("write outside");
    let turn = chat(&mut server, "Update my notes.").await;
    let request = next_approval_request(&mut server).await;
    assert_eq!(request.command, "edit_file ../notes.txt");
    let edit = request.edit.expect("edit");
    assert!(edit.leaves_workspace);
    let real = std::fs::canonicalize(&outside).expect("canonical");
    assert_eq!(edit.path, real.display().to_string(), "shown as the absolute path it writes");
    server.approval(&turn, "call_1", wire::Decision::Deny).await.expect("deny");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    assert_eq!(read(&outside), "old\n");
}

/// Runs the milk edit with `failpoint` set to panic (the server aborts
/// there), lets `meanwhile` act on the work directory, then reopens the
/// session with a clean server. `None` when no failpoints build is at hand.
async fn crash_at(
    failpoint: &str,
    mock: &MockModel,
    meanwhile: impl FnOnce(&Path),
) -> Option<(Server, wire::RecoveryNotification, PathBuf, tempfile::TempDir)> {
    let Some(bin) = failpoints_server_bin() else {
        eprintln!("skipped: set MINO_E2E_FAILPOINTS=1 (or MINO_SERVER_FAILPOINTS_BIN) to run the failpoint tests");
        return None;
    };
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    std::fs::write(cwd.join("shopping.txt"), LIST).expect("write the list");
    let mut first = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: Some(bin),
        failpoints: Some(format!("{failpoint}=panic")),
        ..Default::default()
    })
    .await;
    first.initialize(&options_in(&cwd)).await.expect("initialize");
    let turn = chat(&mut first, "Add milk after butter.").await;
    let _ = next_approval_request(&mut first).await;
    // The server may die before it answers, so the decision is sent
    // without waiting for the response.
    first
        .send_message(&json!({"jsonrpc": "2.0", "id": 1000, "method": wire::method::APPROVAL,
            "params": {"turnId": turn, "callId": "call_1", "decision": "approve"}}))
        .await;
    let status = first.wait(TIMEOUT).await;
    assert!(!status.success(), "the failpoint crashed the server: {status:?}");
    assert!(first.stderr().contains(failpoint), "the failpoint fired: {}", first.stderr());
    meanwhile(&cwd);

    let mut second = Server::spawn_in(home.path(), mock).await;
    second.initialize(&options_in(&cwd)).await.expect("reopen");
    let recovery = second.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    Some((second, recovery, cwd, home))
}

/// The next turn's model input: the edit's call, its recovered result and
/// the runtime notice, then the new question.
async fn next_turn_input(server: &mut Server, mock: &MockModel) -> (Vec<String>, Vec<(String, String, String)>) {
    let turn = chat(server, "Is milk on the list now?").await;
    end_of(server, &turn).await;
    let last = mock.requests().pop().expect("a request");
    (input_summary(&last.body), outputs(&last.body))
}

fn the_recovered_edit(recovery: &wire::RecoveryNotification) -> &wire::RecoveredCallView {
    let call = &recovery.turns[0].calls[0];
    assert_eq!(call.command, "edit_file shopping.txt");
    assert_eq!(call.tool, Some(wire::ToolName::EditFile));
    call
}

fn assert_replayed_with_notice(summary: &[String], status: &str) {
    assert_eq!(
        summary[..3],
        [
            "user: Add milk after butter.".to_string(),
            "function_call call_1".to_string(),
            format!("function_call_output call_1 {status}")
        ],
        "{summary:?}"
    );
    assert!(summary[3].starts_with("assistant: Mino runtime notice: the previous turn ended with status interrupted"));
    assert_eq!(summary[4], "user: Is milk on the list now?");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_before_the_write_recovers_as_not_applied_without_the_gate() {
    let mock = MockModel::start(vec![add_milk(), Reply::text("Not yet.")]).await.expect("mock");
    let Some((mut server, recovery, cwd, _home)) = crash_at("agent::before_edit_write", &mock, |_| {}).await else {
        return;
    };
    let call = the_recovered_edit(&recovery);
    assert_eq!(call.result.status, wire::ToolStatus::NotApplied);
    assert!(call.result.output.contains("so the edit was not applied and nothing was changed"));
    assert!(!recovery.acknowledgement_required, "a verified outcome needs no acknowledgement");
    assert_eq!(read(&cwd.join("shopping.txt")), LIST);
    let (summary, told) = next_turn_input(&mut server, &mock).await;
    assert_replayed_with_notice(&summary, "not_applied");
    assert_eq!(told[0].2, call.result.output);
    assert_eq!(read(&cwd.join("shopping.txt")), LIST, "not retried");
    let journal = session_files(server.home()).pop().expect("journal");
    let result = journal_records(&journal).into_iter().find(|r| r["kind"] == "tool_result").expect("result");
    assert_eq!((result["v"].clone(), result["recovered"].clone()), (json!(3), json!(true)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_with_only_the_temporary_file_written_recovers_as_not_applied() {
    let mock = MockModel::start(vec![add_milk(), Reply::text("Not yet.")]).await.expect("mock");
    let Some((_server, recovery, cwd, _home)) = crash_at("edit::after_temp_file", &mock, |_| {}).await else {
        return;
    };
    assert_eq!(the_recovered_edit(&recovery).result.status, wire::ToolStatus::NotApplied);
    assert!(!recovery.acknowledgement_required);
    assert_eq!(read(&cwd.join("shopping.txt")), LIST);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_write_before_the_result_recovers_as_applied() {
    let mock = MockModel::start(vec![add_milk(), Reply::text("Yes.")]).await.expect("mock");
    let Some((mut server, recovery, cwd, _home)) = crash_at("edit::after_rename", &mock, |_| {}).await else {
        return;
    };
    let call = the_recovered_edit(&recovery);
    assert_eq!(call.result.status, wire::ToolStatus::Applied);
    assert!(call.result.output.contains("so the edit was applied. It was not repeated."));
    assert!(!recovery.acknowledgement_required);
    assert_eq!(read(&cwd.join("shopping.txt")), EDITED);
    let (summary, _) = next_turn_input(&mut server, &mock).await;
    assert_replayed_with_notice(&summary, "applied");
    assert_eq!(read(&cwd.join("shopping.txt")), EDITED, "not repeated");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_result_was_saved_keeps_it() {
    let mock = MockModel::start(vec![add_milk(), Reply::text("Yes.")]).await.expect("mock");
    let Some((mut server, recovery, cwd, _home)) = crash_at("session::after_tool_result_sync", &mock, |_| {}).await
    else {
        return;
    };
    let call = the_recovered_edit(&recovery);
    assert_eq!(call.result.status, wire::ToolStatus::Success);
    assert!(call.result.output.starts_with("Edited shopping.txt: replaced 1 occurrence"));
    assert!(call.result.diff.as_deref().is_some_and(|d| d.contains("+milk")));
    assert!(!recovery.acknowledgement_required);
    assert_eq!(read(&cwd.join("shopping.txt")), EDITED);
    let (summary, _) = next_turn_input(&mut server, &mock).await;
    assert_replayed_with_notice(&summary, "success");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_changed_by_someone_else_before_reopening_is_unknown_behind_the_gate() {
    let mock = MockModel::start(vec![add_milk(), Reply::text("I cannot tell.")]).await.expect("mock");
    let Some((mut server, recovery, cwd, home)) = crash_at("agent::before_edit_write", &mock, |cwd| {
        std::fs::write(cwd.join("shopping.txt"), "tea\n").expect("someone else's change")
    })
    .await
    else {
        return;
    };
    let call = the_recovered_edit(&recovery);
    assert_eq!(call.result.status, wire::ToolStatus::Unknown);
    assert!(call.result.output.contains("held other content"), "{}", call.result.output);
    assert!(recovery.acknowledgement_required);
    let err = server.request(wire::method::CHAT, json!({"text": "Is milk on the list now?"})).await.expect_err("gate");
    assert_eq!(err.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    server.request(wire::method::ACKNOWLEDGE, Value::Null).await.expect("acknowledge");
    let (summary, _) = next_turn_input(&mut server, &mock).await;
    assert_replayed_with_notice(&summary, "unknown");
    assert_eq!(read(&cwd.join("shopping.txt")), "tea\n", "recovery wrote nothing");
    let journal = session_files(home.path()).pop().expect("journal");
    assert_eq!(journal_records(&journal).iter().filter(|r| r["kind"] == "recovery_ack").count(), 1);
}

/// Under Chat Completions the edit tools are offered in that API's shape,
/// and an approved `write_file` creates the file, the model hearing it.
#[tokio::test(flavor = "multi_thread")]
async fn under_chat_completions_a_write_file_call_creates_the_file() {
    let mock = MockModel::start(vec![Reply::write_file("call_1", "notes.txt", "milk\n"), Reply::text("Written.")])
        .await
        .expect("mock");
    let mut server = Server::spawn_with(Spawn {
        base_url: Some(mock.base_url()),
        env: vec![("MINO_PROVIDER".into(), "chat-completions".into())],
        ..Default::default()
    })
    .await;
    let cwd = work_dir(server.home());
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Start a notes file with milk.").await;
    let request = next_approval_request(&mut server).await;
    let edit = request.edit.expect("edit");
    assert_eq!((edit.tool, edit.new_file, edit.path.as_str()), (wire::EditToolName::WriteFile, true, "notes.txt"));
    assert_eq!(edit.diff, "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+milk\n");
    server.approval(&turn, "call_1", wire::Decision::Approve).await.expect("approve");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    assert_eq!(read(&cwd.join("notes.txt")), "milk\n");
    let requests = mock.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["bash", "edit_file", "write_file", "read_file", "list_files", "search"]);
    let said = requests[1].body.to_string();
    assert!(said.contains("Created notes.txt (5 bytes)."), "{said}");
}

/// Forty lines with `TODO` on lines 3, 21 and 39: far enough apart that
/// replacing every `TODO` is a diff of three hunks.
fn three_todos() -> String {
    (1..=40).map(|n| if n % 18 == 3 { format!("line {n} TODO\n") } else { format!("line {n}\n") }).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_approved_in_part_writes_only_the_accepted_hunks_and_journals_them() {
    let mock = MockModel::start(vec![
        Reply::edit_file("call_1", "notes.txt", "TODO", "DONE", true),
        Reply::text("Two of them are done."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let before = three_todos();
    std::fs::write(cwd.join("notes.txt"), &before).expect("write notes");
    let turn = chat(&mut server, "Mark every TODO done.").await;
    let request = next_approval_request(&mut server).await;
    let edit = request.edit.expect("an edit");
    assert_eq!(edit.diff.matches("\n@@ ").count(), 3, "three hunks: {}", edit.diff);

    // Hunks that cannot apply are refused, decide nothing, and the call still waits.
    for (params, names) in [
        (json!({"decision": "approve", "acceptedHunks": [3]}), "hunk 3 does not exist"),
        (json!({"decision": "approve", "acceptedHunks": []}), "no hunk was accepted"),
        (json!({"decision": "deny", "acceptedHunks": [0]}), "goes only with decision \"approve\""),
    ] {
        let mut params = params;
        params["turnId"] = json!(turn);
        params["callId"] = json!("call_1");
        let refused = server.request(wire::method::APPROVAL, params).await.expect_err("refused");
        assert_eq!(refused.code, -32602, "{refused}");
        assert!(refused.message.contains(names), "{refused}");
    }
    assert_eq!(read(&cwd.join("notes.txt")), before);

    // The person keeps the first and the last hunk and drops the middle one.
    server
        .request(
            wire::method::APPROVAL,
            json!({"turnId": turn, "callId": "call_1", "decision": "approve", "acceptedHunks": [2, 0]}),
        )
        .await
        .expect("approve two hunks");
    let notifications = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notifications.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("a toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Success);

    let expected = before.replace("line 3 TODO", "line 3 DONE").replace("line 39 TODO", "line 39 DONE");
    assert_eq!(read(&cwd.join("notes.txt")), expected, "only the accepted hunks landed");
    let diff = result.diff.expect("the diff written");
    assert_eq!(diff.matches("\n@@ ").count(), 2, "{diff}");
    assert!(diff.contains("+line 3 DONE") && diff.contains("+line 39 DONE") && !diff.contains("line 21"), "{diff}");
    // The model hears that only part was written, and what.
    let told = outputs(&mock.requests()[1].body);
    assert_eq!(told[0].2, result.output);
    assert!(
        result.output.starts_with(
            "Edited notes.txt: the person accepted 2 of the 3 hunks of the proposed diff (hunks 1 and 3) and rejected the rest"
        ),
        "{}",
        result.output
    );
    assert!(result.output.ends_with(&diff), "{}", result.output);

    // The journal holds exactly what was approved: the hunks, and the hash of the content written.
    let journal = session_files(server.home()).pop().expect("journal");
    let records = journal_records(&journal);
    let approval = records.iter().find(|r| r["kind"] == "approval").expect("approval");
    assert_eq!(approval["decision"], "approved");
    assert_eq!(approval["accepted_hunks"], json!([0, 2]));
    let start = records.iter().find(|r| r["kind"] == "tool_start").expect("tool_start");
    use sha2::Digest;
    let hash: String = sha2::Sha256::digest(expected.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(start["after_sha256"], hash);
    assert_eq!(start["after_size"], expected.len());

    // History shows the diff written, and a reopened session reads the records back.
    let history = history(&mut server).await;
    assert_eq!(history.turns[0].calls[0].result.as_ref().and_then(|r| r.diff.as_deref()), Some(diff.as_str()));
    let home = server.home().to_path_buf();
    server.kill().await;
    let mut reopened = Server::spawn_in(&home, &mock).await;
    let recovery = open(&mut reopened, &cwd).await;
    assert!(recovery.turns.is_empty() && recovery.repairs.is_empty(), "{recovery:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn accepted_hunks_are_refused_for_a_command() {
    let mock = MockModel::start(vec![Reply::call("call_1", "echo hi"), Reply::text("Done.")]).await.expect("mock");
    let (mut server, _cwd) = started(&mock).await;
    let turn = chat(&mut server, "Say hi.").await;
    let _ = next_approval_request(&mut server).await;
    let refused = server
        .request(
            wire::method::APPROVAL,
            json!({"turnId": turn, "callId": "call_1", "decision": "approve", "acceptedHunks": [0]}),
        )
        .await
        .expect_err("refused");
    assert_eq!(refused.code, -32602, "{refused}");
    assert!(refused.message.contains("is a command, not an edit"), "{refused}");
    // It still waits: a plain denial is taken.
    server.approval(&turn, "call_1", wire::Decision::Deny).await.expect("deny");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
}
