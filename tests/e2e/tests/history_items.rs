//! `mino/history` items: each turn's content in the order it happened, each
//! call with what its approval showed, a cancelled turn's cut text (shown,
//! never sent to the model again), and sessions written before any of this
//! still opening.

use mino_e2e::{
    chat, end_of, journal_records, next_approval_request, open, session_files, wire, work_dir, MockModel, Reply,
    Server, TIMEOUT,
};
use mino_mock_model::ScriptedCall;
use serde_json::{json, Value};

async fn history(server: &mut Server) -> wire::HistoryResult {
    server.call(wire::method::HISTORY, &wire::HistoryParams::default()).await.expect("history")
}

/// `text <t>`, `call <id>`, `notice`: the shape of a turn's items.
fn shape(items: &[wire::HistoryItem]) -> Vec<String> {
    items
        .iter()
        .map(|item| match item {
            wire::HistoryItem::Text { text } => format!("text {text}"),
            wire::HistoryItem::Call { call } => format!("call {}", call.call_id),
            wire::HistoryItem::Notice { .. } => "notice".to_string(),
        })
        .collect()
}

fn call_of<'a>(items: &'a [wire::HistoryItem], call_id: &str) -> &'a wire::HistoryCall {
    items
        .iter()
        .find_map(|item| match item {
            wire::HistoryItem::Call { call } if call.call_id == call_id => Some(call),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no call {call_id} in {items:?}"))
}

/// Text, a call (approved), more text with a second call, and the server
/// killed while that call awaits approval: reopened, the turn's items are in
/// that order, the approved call carries the directory, environment and
/// limits its approval showed, and the interrupted turn ends with its notice.
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_turn_comes_back_in_the_order_it_happened_with_each_calls_approval_facts() {
    let mock = MockModel::start(vec![
        Reply::Calls {
            text: vec!["Let me ".into(), "look.".into()],
            calls: vec![ScriptedCall::new("call_1", "echo hi")],
            delay_ms: 0,
        },
        Reply::Calls {
            text: vec!["Now the ".into(), "other one.".into()],
            calls: vec![ScriptedCall::new("call_2", "echo two")],
            delay_ms: 0,
        },
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let home = server.home().to_path_buf();
    let _keep = server.keep_home();
    let cwd = work_dir(&home);
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Look around").await;
    let asked = next_approval_request(&mut server).await;
    assert_eq!(asked.call_id, "call_1");
    server.approval(&turn, "call_1", wire::Decision::Approve).await.expect("approve");
    let second = next_approval_request(&mut server).await;
    assert_eq!(second.call_id, "call_2");
    server.kill().await;

    let mut reopened = Server::spawn_in(&home, &mock).await;
    let recovery = open(&mut reopened, &cwd).await;
    assert_eq!(recovery.turns.len(), 1, "the turn was recovered");
    let result = history(&mut reopened).await;
    let turn = &result.turns[0];
    assert_eq!(turn.status, Some(wire::TurnStatus::Interrupted));
    assert_eq!(
        shape(&turn.items),
        ["text Let me look.", "call call_1", "text Now the other one.", "call call_2", "notice"],
        "{:#?}",
        turn.items
    );
    let call = call_of(&turn.items, "call_1");
    // Exactly what the approval card showed.
    assert_eq!(call.directory.as_deref(), Some(asked.directory.as_str()));
    assert_eq!(call.environment.as_ref(), Some(&asked.environment));
    assert_eq!(call.limits.as_ref(), Some(&asked.limits));
    assert_eq!(call.result.as_ref().map(|r| r.status), Some(wire::ToolStatus::Success));
    // Never decided: nothing an approval showed is on file for it.
    let undecided = call_of(&turn.items, "call_2");
    assert_eq!(undecided.result.as_ref().map(|r| r.status), Some(wire::ToolStatus::NotExecuted));
    assert_eq!((undecided.directory.as_ref(), undecided.environment.as_ref()), (None, None));
    // The grouped fields stay as older clients read them.
    assert_eq!(turn.text, "Let me look.\n\nNow the other one.");
    assert_eq!(turn.calls.iter().map(|c| c.call_id.as_str()).collect::<Vec<_>>(), ["call_1", "call_2"]);
    assert_eq!(turn.notices.len(), 1);
    let wire::HistoryItem::Notice { text } = turn.items.last().expect("items") else { panic!("no notice last") };
    assert_eq!(text, &turn.notices[0]);
}

/// A cancel while the model streams its second response: the text streamed
/// so far is in the history, after the call, and the next request to the
/// model (read at the mock's wire) holds the call and its result but not
/// that text.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_turns_cut_text_is_in_history_and_never_in_the_next_request() {
    let deltas: Vec<String> = (0..60).map(|i| format!("half{i} ")).collect();
    let mock = MockModel::start(vec![
        Reply::Calls {
            text: vec!["Checking.".into()],
            calls: vec![ScriptedCall::new("call_1", "echo hi")],
            delay_ms: 0,
        },
        Reply::Text { deltas, delay_ms: 100 },
        Reply::text("Fine."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Check it").await;
    next_approval_request(&mut server).await;
    server.approval(&turn, "call_1", wire::Decision::Approve).await.expect("approve");
    server.next_notification(wire::method::TOOL_RESULT, TIMEOUT).await;
    server.next_notification(wire::method::TEXT_DELTA, TIMEOUT).await; // "Checking."
    let first_cut = server.next_notification(wire::method::TEXT_DELTA, TIMEOUT).await;
    assert_eq!(first_cut.params["delta"], "half0 ");
    server.request(wire::method::CANCEL, json!({ "turnId": turn })).await.expect("cancel");
    let ended = end_of(&mut server, &turn).await;
    assert_eq!(ended.status, wire::TurnStatus::Cancelled);
    let streamed: String = server
        .notification_log()
        .iter()
        .filter(|n| n.method == wire::method::TEXT_DELTA)
        .filter_map(|n| n.params["delta"].as_str().map(str::to_string))
        .filter(|d| d.starts_with("half"))
        .collect();

    let result = history(&mut server).await;
    let items = &result.turns[0].items;
    assert_eq!(shape(items), ["text Checking.", "call call_1", format!("text {streamed}").as_str(), "notice"]);
    // The cut text is only in `items`: `text` keeps the finished responses'.
    assert_eq!(result.turns[0].text, "Checking.");
    let journal = session_files(server.home()).pop().expect("journal");
    let end = journal_records(&journal).into_iter().rfind(|r| r["kind"] == "turn_end").expect("turn_end");
    assert_eq!(end["partial_text"], Value::String(streamed.clone()), "kept in the turn's end: {end}");
    assert_eq!(end["v"], 2, "an optional field older Minos ignore");

    let next = chat(&mut server, "Go on").await;
    end_of(&mut server, &next).await;
    let requests = mock.requests();
    let last = serde_json::to_string(&requests.last().expect("a request").body["input"]).expect("json");
    assert!(last.contains("call_1") && last.contains("Checking."), "the call is replayed: {last}");
    assert!(!last.contains("half0"), "the cut text reached the model: {last}");
}

/// A session written before items existed (no approval facts, no partial
/// text, no session usage) opens, lists and shows its history, the facts
/// absent.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_written_before_the_new_fields_still_opens_and_lists() {
    let mock = MockModel::start(vec![Reply::text("Still here.")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let home = server.home().to_path_buf();
    let cwd = std::fs::canonicalize(work_dir(&home)).expect("cwd");
    // An older Mino's file: v 2 records as it wrote them, checksums included.
    let sessions = home.join("sessions");
    std::fs::create_dir_all(&sessions).expect("sessions dir");
    let id = "20261101T101500-0a1b2c";
    let dir = cwd.display().to_string();
    let bodies = [
        json!({"kind": "session", "session_id": id, "created_at": "2026-11-01T10:15:00Z", "cwd": dir, "mino_version": "0.1.0"}),
        json!({"kind": "user", "turn_id": "turn-1", "text": "List files"}),
        json!({"kind": "response", "turn_id": "turn-1", "items": [
            {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "Listing.", "annotations": []}]},
            {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"}
        ]}),
        json!({"kind": "approval", "turn_id": "turn-1", "call_id": "call_1", "decision": "approved"}),
        json!({"kind": "tool_start", "turn_id": "turn-1", "call_id": "call_1", "command": "ls", "cwd": dir}),
        json!({"kind": "tool_result", "turn_id": "turn-1", "call_id": "call_1", "status": "success", "output": "a.txt\n", "exit_code": 0}),
        json!({"kind": "response", "turn_id": "turn-1", "items": [
            {"id": "msg_2", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": "One file.", "annotations": []}]}
        ]}),
        json!({"kind": "turn_end", "turn_id": "turn-1", "status": "completed"}),
    ];
    let mut file = String::new();
    for (seq, body) in bodies.iter().enumerate() {
        let mut record = json!({"v": 2, "seq": seq + 1});
        for (k, v) in body.as_object().expect("object") {
            record[k] = v.clone();
        }
        let text = serde_json::to_string(&record).expect("json");
        let covered = &text[..text.len() - 1];
        file.push_str(&format!("{covered},\"crc\":\"{:08x}\"}}\n", crc32fast::hash(covered.as_bytes())));
    }
    std::fs::write(sessions.join(format!("{id}.jsonl")), file).expect("write the old session");

    let mut options = mino_e2e::options_in(&cwd);
    options.session = Some(id.into());
    server.initialize(&options).await.expect("the older session opens");
    let recovery: wire::RecoveryNotification = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert!(recovery.turns.is_empty());
    let result = history(&mut server).await;
    let turn = &result.turns[0];
    assert_eq!(shape(&turn.items), ["text Listing.", "call call_1", "text One file."]);
    let call = call_of(&turn.items, "call_1");
    assert_eq!(call.directory.as_deref(), Some(dir.as_str()), "the start's cwd is the directory");
    assert_eq!((call.environment.as_ref(), call.limits.as_ref()), (None, None), "not journaled then");
    assert!(result.usage.is_none());
    let list: wire::SessionsListResult = server
        .call(
            wire::method::SESSIONS_LIST,
            &wire::SessionsListParams { scope: Some(wire::ListScope::All), ..Default::default() },
        )
        .await
        .expect("list");
    let entry = list.sessions.iter().find(|e| e.session_id == id).expect("listed");
    assert_eq!((entry.turns, entry.usage), (1, None));

    // A new turn in it: the new fields appear, the old records stay as they were.
    let turn = chat(&mut server, "And now?").await;
    end_of(&mut server, &turn).await;
    let history = history(&mut server).await;
    assert_eq!(shape(&history.turns[1].items), ["text Still here."]);
}
