//! Malformed input gets JSON-RPC errors and the server keeps serving.

use mino_e2e::{options_in, wire, work_dir, MockModel, Reply, Server, TIMEOUT};
use serde_json::{json, Value};

fn code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error response: {response}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_input_is_answered_and_a_turn_still_completes() {
    let mock = MockModel::start(vec![Reply::text("Still fine.")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());

    // Before initialize: the LSP error.
    let err = server.request(wire::method::CHAT, json!({"text": "too early"})).await.expect_err("not initialized");
    assert_eq!(err.code, -32002);
    let err = server.request(wire::method::HISTORY, Value::Null).await.expect_err("not initialized");
    assert_eq!(err.code, -32002);

    // Garbage that is not a frame.
    server.send_raw(b"this is not a frame\r\n\r\n").await;
    let response = server.next_orphan_response(TIMEOUT).await;
    assert_eq!(code(&response), -32700);
    assert_eq!(response["id"], Value::Null);

    // A frame whose body is not JSON.
    let body = "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": ";
    server.send_raw(&mino_framing::frame(body.as_bytes())).await;
    assert_eq!(code(&server.next_orphan_response(TIMEOUT).await), -32700);

    // A bad Content-Length.
    server.send_raw(b"Content-Length: lots\r\n\r\n").await;
    assert_eq!(code(&server.next_orphan_response(TIMEOUT).await), -32700);

    // JSON that is not a request.
    server.send_message(&json!([1, 2, 3])).await;
    assert_eq!(code(&server.next_orphan_response(TIMEOUT).await), -32600);
    server.send_message(&json!({"jsonrpc": "2.0", "id": {"no": 1}, "method": "mino/chat"})).await;
    assert_eq!(code(&server.next_orphan_response(TIMEOUT).await), -32600);

    // Now initialize, and it works.
    server.initialize(&options_in(&cwd)).await.expect("initialize after garbage");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;

    // Unknown method.
    let err = server.request("mino/nope", json!({})).await.expect_err("unknown method");
    assert_eq!(err.code, -32601);
    // An unknown notification is ignored (nothing to answer).
    server.notify("mino/unknownNotification", json!({"x": 1})).await;
    // Missing and wrong params.
    let err = server.request(wire::method::CHAT, Value::Null).await.expect_err("missing params");
    assert_eq!(err.code, -32602);
    let err = server.request(wire::method::CHAT, json!({"txt": "typo"})).await.expect_err("wrong params");
    assert_eq!(err.code, -32602);
    let err = server
        .request(wire::method::APPROVAL, json!({"turnId": "turn-1", "callId": "c", "decision": "maybe"}))
        .await
        .expect_err("bad decision");
    assert_eq!(err.code, -32602);
    let err = server.request(wire::method::CANCEL, json!("turn-1")).await.expect_err("params not an object");
    assert_eq!(err.code, -32602);
    // Optional params may be left out, or be null.
    let ack = server.request(wire::method::ACKNOWLEDGE, Value::Null).await.expect("acknowledge without params");
    assert_eq!(ack, json!({"acknowledged": []}));
    let err = server
        .request(wire::method::ACKNOWLEDGE, json!({"turnIds": ["turn-9"]}))
        .await
        .expect_err("nothing to acknowledge");
    assert_eq!(err.code, wire::error_code::UNKNOWN_TURN);
    // A second initialize is refused.
    let err = server.request("initialize", json!({"capabilities": {}})).await.expect_err("initialized once");
    assert_eq!(err.code, -32600);

    // More garbage between valid frames, then a full turn.
    server.send_raw(b"\x00\x01garbage without end").await;
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Are you ok?".into(), ..Default::default() })
        .await
        .expect("chat");
    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed);
    assert_eq!(ended.text.as_deref(), Some("Still fine."));
    let response = server.next_orphan_response(TIMEOUT).await;
    assert_eq!(code(&response), -32700, "the garbage was answered too");
}

/// Two `initialize` requests back to back: the first wins, the second is
/// refused, and the server goes on serving the first one's session.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_initialize_is_refused_and_the_first_stands() {
    let mock = MockModel::start(vec![Reply::text("Still here.")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let options = serde_json::to_value(options_in(&cwd)).expect("options");
    for id in [901, 902] {
        server
            .send_message(&json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
                                   "params": {"processId": null, "capabilities": {}, "initializationOptions": options}}))
            .await;
    }
    let mut answers = [server.next_orphan_response(TIMEOUT).await, server.next_orphan_response(TIMEOUT).await];
    answers.sort_by_key(|r| r["id"].as_i64());
    assert!(answers[0].get("result").is_some(), "the first initialize succeeds: {}", answers[0]);
    assert!(answers[1].get("error").is_some(), "the second is refused: {}", answers[1]);
    server.notify("initialized", json!({})).await;
    let turn =
        server.request(wire::method::CHAT, json!({"text": "Hello?"})).await.expect("chat after a double initialize");
    assert!(turn["turnId"].is_string());
    let sessions = mino_e2e::session_files(server.home()).len();
    assert_eq!(sessions, 1, "the refused initialize created no session");
}
