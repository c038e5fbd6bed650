//! Approvals are bound to their turn and call, and calls are told apart by
//! (turn, call id) when a model reuses ids: several local model servers
//! number calls `call_0`, `call_1`, … in every response.
//!
//! The attack: turn 1 asks `call_1 = echo harmless`, the person cancels;
//! turn 2 asks `call_1 = echo DANGEROUS`; a stale `{callId: "call_1",
//! decision: "approve"}` from turn 1 must not run it.

use std::path::Path;

use mino_e2e::{
    chat, count_kind, end_of, input_summary, journal_records, next_approval_request, open, session_files, wire,
    work_dir, MockModel, Reply, Server, TIMEOUT,
};
use serde_json::{json, Value};

const NO_PENDING: i64 = wire::error_code::NO_PENDING_APPROVAL;

/// Approves every approval request of `turn_id` until it ends.
async fn approve_all(server: &mut Server, turn_id: &str) -> wire::TurnEnded {
    loop {
        let found = server.next_notification_of(turn_id, TIMEOUT).await;
        match found.method.as_str() {
            wire::method::APPROVAL_REQUEST => {
                let request: wire::ApprovalRequest = found.parse();
                server.approval(&request.turn_id, &request.call_id, wire::Decision::Approve).await.expect("approve");
            }
            wire::method::TURN_ENDED => return found.parse(),
            _ => {}
        }
    }
}

fn journal(home: &Path) -> std::path::PathBuf {
    session_files(home).pop().expect("a session file")
}

/// `(kind, turn_id, call_id)` of every call record on disk.
fn call_records(path: &Path) -> Vec<(String, String, String)> {
    journal_records(path)
        .iter()
        .filter(|r| r["call_id"].is_string())
        .map(|r| {
            let s = |v: &Value| v.as_str().unwrap_or("").to_string();
            (s(&r["kind"]), s(&r["turn_id"]), s(&r["call_id"]))
        })
        .collect()
}

/// The model input's calls as `(call_id, command)` and outputs as
/// `(call_id, status: output)`, in order.
fn calls_and_outputs(body: &Value) -> Vec<String> {
    let items = body["input"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|item| {
            let inner = |field: &str| -> Value {
                item[field].as_str().and_then(|s| serde_json::from_str(s).ok()).unwrap_or(Value::Null)
            };
            match item["type"].as_str()? {
                "function_call" => {
                    Some(format!("call {} `{}`", item["call_id"].as_str()?, inner("arguments")["command"].as_str()?))
                }
                "function_call_output" => {
                    let output = inner("output");
                    Some(format!(
                        "output {} {}: {}",
                        item["call_id"].as_str()?,
                        output["status"].as_str()?,
                        output["output"].as_str()?.trim_end()
                    ))
                }
                _ => None,
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stale_approval_from_a_cancelled_turn_runs_nothing_in_the_next_turn_with_the_same_call_id() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let harmless = cwd.join("harmless.txt");
    let dangerous = cwd.join("dangerous.txt");
    let mock = MockModel::start(vec![
        Reply::call("call_1", &format!("echo harmless > {}", harmless.display())),
        Reply::call("call_1", &format!("echo DANGEROUS > {}", dangerous.display())),
        Reply::text("Understood, nothing ran."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;

    // Turn 1 asks for call_1; the person cancels while it waits.
    let first = chat(&mut server, "Do something harmless.").await;
    let request = next_approval_request(&mut server).await;
    assert_eq!((request.turn_id.as_str(), request.call_id.as_str()), (first.as_str(), "call_1"));
    server.request(wire::method::CANCEL, json!({"turnId": first})).await.expect("cancel");
    assert_eq!(end_of(&mut server, &first).await.status, wire::TurnStatus::Cancelled);

    // Turn 2 asks for a different command under the same call id.
    let second = chat(&mut server, "Now something else.").await;
    let request = next_approval_request(&mut server).await;
    assert_eq!((request.turn_id.as_str(), request.call_id.as_str()), (second.as_str(), "call_1"));
    assert!(request.command.contains("DANGEROUS"));

    // The decision turn 1's prompt would have sent: refused, naming turn and call.
    let err = server.approval(&first, "call_1", wire::Decision::Approve).await.expect_err("stale approval");
    assert_eq!(err.code, NO_PENDING, "{err}");
    assert!(err.message.contains(&first) && err.message.contains("call_1"), "{err}");
    assert_eq!(err.data, Some(json!({"turnId": first, "callId": "call_1"})));
    let path = journal(home.path());
    assert_eq!(count_kind(&path, "approval"), 0, "the refused decision left no approval on disk");
    assert_eq!(count_kind(&path, "tool_start"), 0);

    // The pending call still waits for its own decision; deny it and let the
    // turn end, so anything the stale approval set off would have happened.
    server.approval(&second, "call_1", wire::Decision::Deny).await.expect("deny the pending call");
    assert_eq!(end_of(&mut server, &second).await.status, wire::TurnStatus::Completed);
    assert!(!dangerous.exists(), "the stale approval ran turn 2's command");
    assert!(!harmless.exists(), "the cancelled call ran");
    let records = journal_records(&path);
    let decided: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["kind"] == "approval")
        .map(|r| (r["turn_id"].as_str().unwrap_or(""), r["decision"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(decided, [(second.as_str(), "denied")], "only the person's own decision is on file");
    assert_eq!(count_kind(&path, "tool_start"), 0, "nothing started");
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_naming_another_turn_is_refused_and_the_right_one_runs_the_command_once() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let count = cwd.join("count.txt");
    let mock =
        MockModel::start(vec![Reply::call("call_1", &format!("echo x >> {}", count.display())), Reply::text("Done.")])
            .await
            .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Count once.").await;
    let request = next_approval_request(&mut server).await;
    assert_eq!(request.turn_id, turn);

    for wrong in ["turn-2", "turn-0", "", " turn-1", "TURN-1", "turn-1\u{0}", "*"] {
        assert_ne!(wrong, turn);
        let err = server.approval(wrong, "call_1", wire::Decision::Approve).await.expect_err("wrong turn");
        assert_eq!(err.code, NO_PENDING, "{wrong:?}: {err}");
        assert!(err.message.contains("call_1") && err.message.contains(wrong), "{err}");
    }
    // Without turnId the params are invalid: the client must say which turn.
    let err = server
        .request(wire::method::APPROVAL, json!({"callId": "call_1", "decision": "approve"}))
        .await
        .expect_err("turnId is required");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("turnId"), "the error names the missing field: {err}");
    assert!(!count.exists(), "a refused approval ran the command");

    server.approval(&turn, "call_1", wire::Decision::Approve).await.expect("the right turn and call");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    assert_eq!(std::fs::read_to_string(&count).expect("ran"), "x\n");
    let path = journal(home.path());
    assert_eq!(count_kind(&path, "approval"), 1);
    assert_eq!(count_kind(&path, "tool_start"), 1);
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

/// `call_0` in turn 1, and `call_0` in both responses of turn 2: every call
/// runs as its own, and every later request (and a reopened session) sends
/// each call followed by its own output.
#[tokio::test(flavor = "multi_thread")]
async fn repeated_call_ids_across_turns_and_responses_replay_each_call_with_its_own_output() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::call("call_0", "echo first"),
        Reply::text("One."),
        Reply::call("call_0", "echo second"),
        Reply::call("call_0", "echo third"),
        Reply::text("Two."),
        Reply::text("Three."),
        Reply::text("Four."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;
    let t1 = chat(&mut server, "First.").await;
    assert_eq!(approve_all(&mut server, &t1).await.status, wire::TurnStatus::Completed);
    let t2 = chat(&mut server, "Second and third.").await;
    assert_eq!(approve_all(&mut server, &t2).await.status, wire::TurnStatus::Completed);
    let t3 = chat(&mut server, "Anything else?").await;
    assert_eq!(end_of(&mut server, &t3).await.status, wire::TurnStatus::Completed);

    let expected = [
        "call call_0 `echo first`",
        "output call_0 success: first",
        "call call_0 `echo second`",
        "output call_0 success: second",
        "call call_0 `echo third`",
        "output call_0 success: third",
    ];
    let requests = mock.requests();
    assert_eq!(calls_and_outputs(&requests[5].body), expected, "turn 3's request");
    assert_eq!(
        input_summary(&requests[5].body),
        [
            "user: First.",
            "function_call call_0",
            "function_call_output call_0 success",
            "assistant: One.",
            "user: Second and third.",
            "function_call call_0",
            "function_call_output call_0 success",
            "function_call call_0",
            "function_call_output call_0 success",
            "assistant: Two.",
            "user: Anything else?",
        ]
    );
    // On disk each record names its turn; within turn 2 the records of the
    // first call_0 all come before the second response.
    let path = journal(home.path());
    let on_disk: Vec<String> =
        call_records(&path).iter().map(|(kind, turn, call)| format!("{kind} {turn} {call}")).collect();
    assert_eq!(
        on_disk,
        [
            format!("approval {t1} call_0"),
            format!("tool_start {t1} call_0"),
            format!("tool_result {t1} call_0"),
            format!("approval {t2} call_0"),
            format!("tool_start {t2} call_0"),
            format!("tool_result {t2} call_0"),
            format!("approval {t2} call_0"),
            format!("tool_start {t2} call_0"),
            format!("tool_result {t2} call_0"),
        ]
    );
    server.close_stdin();
    server.wait(TIMEOUT).await;

    // Reopened from the file, the session replays the same pairs.
    let mut server = Server::spawn_in(home.path(), &mock).await;
    let recovery = open(&mut server, &cwd).await;
    assert!(recovery.turns.is_empty(), "nothing to recover");
    let history: wire::HistoryResult = server.call(wire::method::HISTORY, &json!({})).await.expect("history");
    let commands: Vec<Vec<(String, String)>> = history
        .turns
        .iter()
        .map(|t| {
            t.calls
                .iter()
                .map(|c| (c.command.clone(), c.result.as_ref().map_or(String::new(), |r| r.output.clone())))
                .collect()
        })
        .collect();
    assert_eq!(
        commands,
        [
            vec![("echo first".to_string(), "first\n".to_string())],
            vec![
                ("echo second".to_string(), "second\n".to_string()),
                ("echo third".to_string(), "third\n".to_string())
            ],
            vec![],
        ],
        "history shows each call with its own result"
    );
    let t4 = chat(&mut server, "And now?").await;
    assert_eq!(end_of(&mut server, &t4).await.status, wire::TurnStatus::Completed);
    assert_eq!(calls_and_outputs(&mock.requests()[6].body), expected, "the reopened session's request");
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

/// A crash inside the second `call_0` of one turn: the first keeps its
/// result, the second is `unknown`, and the next request pairs them so.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_in_the_second_call_with_a_repeated_id_recovers_each_call_by_its_own_records() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    // `$PPID` is the command's supervisor; KILL_SERVER kills the server itself.
    let second_command = format!("echo two >> list.txt; {}", mino_e2e::KILL_SERVER);
    let mock = MockModel::start(vec![
        Reply::call("call_0", "echo one >> list.txt; echo appended one"),
        Reply::call("call_0", &second_command),
        Reply::text("The second append may have run."),
    ])
    .await
    .expect("mock");
    let mut first = Server::spawn_in(home.path(), &mock).await;
    open(&mut first, &cwd).await;
    let turn = chat(&mut first, "Append one, then two.").await;
    for _ in 0..2 {
        let request = next_approval_request(&mut first).await;
        // The server may die before it answers the second: do not wait for it.
        first
            .send_message(&json!({"jsonrpc": "2.0", "id": 7000, "method": wire::method::APPROVAL,
                "params": {"turnId": request.turn_id, "callId": request.call_id, "decision": "approve"}}))
            .await;
    }
    first.wait(TIMEOUT).await;
    assert_eq!(std::fs::read_to_string(cwd.join("list.txt")).expect("list"), "one\ntwo\n");

    let mut second = Server::spawn_in(home.path(), &mock).await;
    let recovery = open(&mut second, &cwd).await;
    assert_eq!(recovery.unacknowledged_turn_ids, vec![turn.clone()]);
    let calls: Vec<(String, String, wire::ToolStatus)> =
        recovery.turns[0].calls.iter().map(|c| (c.call_id.clone(), c.command.clone(), c.result.status)).collect();
    assert_eq!(
        calls,
        [
            ("call_0".to_string(), "echo one >> list.txt; echo appended one".to_string(), wire::ToolStatus::Success),
            ("call_0".to_string(), second_command.clone(), wire::ToolStatus::Unknown),
        ]
    );
    second.request(wire::method::ACKNOWLEDGE, json!({})).await.expect("acknowledge");
    let next = chat(&mut second, "Is two on the list?").await;
    assert_eq!(end_of(&mut second, &next).await.status, wire::TurnStatus::Completed);
    let last = mock.requests().last().cloned().expect("a request");
    let pairs = calls_and_outputs(&last.body);
    assert_eq!(pairs.len(), 4, "{pairs:#?}");
    assert_eq!(pairs[0], "call call_0 `echo one >> list.txt; echo appended one`");
    assert_eq!(pairs[1], "output call_0 success: appended one");
    assert_eq!(pairs[2], format!("call call_0 `{second_command}`"));
    assert!(pairs[3].starts_with("output call_0 unknown: "), "{}", pairs[3]);
    assert_eq!(std::fs::read_to_string(cwd.join("list.txt")).expect("list"), "one\ntwo\n", "nothing reran");
    second.close_stdin();
    second.wait(TIMEOUT).await;
}

/// `body` (which names a key twice, so no `serde_json::Value` can hold it)
/// in a `Content-Length` frame.
fn raw_frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// A decision that names a key twice means one thing to a reader of the
/// first key and another to one of the last: `"decision":"deny","decision":
/// "approve"` ran the command (serde keeps the last), and `"turnIds":[],
/// "turnIds":[...]` acknowledged. Both are refused with `-32600` naming the
/// key, and decide nothing: the command does not run until a real answer
/// (a deny, here), and the gate stays closed until a real acknowledgement.
#[tokio::test(flavor = "multi_thread")]
async fn a_decision_naming_a_key_twice_is_refused_naming_it_and_decides_nothing() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::call("call_1", "touch approved-by-a-duplicate.txt"),
        Reply::text("Not run."),
        Reply::call("call_2", mino_e2e::KILL_SERVER),
        Reply::text("After the gate."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Touch it.").await;
    let request = next_approval_request(&mut server).await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":9001,"method":"mino/approval","params":{{"turnId":{},"callId":{},"decision":"deny","decision":"approve"}}}}"#,
        json!(request.turn_id),
        json!(request.call_id)
    );
    server.send_raw(&raw_frame(&body)).await;
    let refused = server.next_orphan_response(TIMEOUT).await;
    assert_eq!(refused["id"], 9001, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"duplicate key "decision" in `params`"#), "{message}");
    // Nothing was decided: the call still waits, and a real deny decides it.
    server.approval(&request.turn_id, &request.call_id, wire::Decision::Deny).await.expect("the call still waits");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    assert!(!cwd.join("approved-by-a-duplicate.txt").exists(), "the duplicate approved the command");

    // An `unknown` result: the server dies while its command runs.
    let turn = chat(&mut server, "Run it.").await;
    let request = next_approval_request(&mut server).await;
    server
        .send_message(&json!({"jsonrpc": "2.0", "id": 7000, "method": wire::method::APPROVAL,
            "params": {"turnId": request.turn_id, "callId": request.call_id, "decision": "approve"}}))
        .await;
    server.wait(TIMEOUT).await;
    let mut server = Server::spawn_in(home.path(), &mock).await;
    let recovery = open(&mut server, &cwd).await;
    assert_eq!(recovery.unacknowledged_turn_ids, vec![turn.clone()]);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":9002,"method":"mino/acknowledge","params":{{"turnIds":[],"turnIds":[{}]}}}}"#,
        json!(turn)
    );
    server.send_raw(&raw_frame(&body)).await;
    let refused = server.next_orphan_response(TIMEOUT).await;
    assert_eq!(refused["id"], 9002, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"duplicate key "turnIds" in `params`"#), "{message}");
    // The gate is still closed.
    let chat_refused = server
        .call::<_, wire::ChatResult>(
            wire::method::CHAT,
            &wire::ChatParams { text: "Go on.".into(), ..Default::default() },
        )
        .await
        .expect_err("the gate is still closed");
    assert_eq!(chat_refused.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED, "{chat_refused:?}");
    assert_eq!(count_kind(&journal(home.path()), "recovery_ack"), 0);
    server.request(wire::method::ACKNOWLEDGE, json!({})).await.expect("acknowledge");
    let next = chat(&mut server, "Go on.").await;
    assert_eq!(end_of(&mut server, &next).await.status, wire::TurnStatus::Completed);
}
