//! Framing mistakes a client can make are answered at once, not left
//! waiting for bytes that will never come.

use mino_e2e::{options_in, wire, work_dir, MockModel, Server, TIMEOUT};
use serde_json::{json, Value};

/// A request whose headers end with a bare `\n\n` (not `\r\n\r\n`) is
/// refused at once with `-32700` naming the problem, without the client
/// sending anything more; the next, well-framed request is served.
#[tokio::test(flavor = "multi_thread")]
async fn a_header_ending_in_bare_newlines_is_refused_at_once() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;

    let body = json!({"jsonrpc": "2.0", "id": "lf", "method": wire::method::HISTORY}).to_string();
    server.send_raw(format!("Content-Length: {}\n\n{body}", body.len()).as_bytes()).await;
    // Nothing more is written until the answer is in.
    let response = server.next_orphan_response(TIMEOUT).await;
    assert_eq!(response["error"]["code"], -32700, "{response}");
    assert_eq!(response["id"], Value::Null, "{response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(r"headers must end with \r\n\r\n"), "{message}");

    // Its body was skipped, not read as garbage in front of the next frame:
    // the next answer is the next request's, not another parse error.
    server.send_message(&json!({"jsonrpc": "2.0", "id": "next", "method": wire::method::HISTORY})).await;
    let next = server.next_orphan_response(TIMEOUT).await;
    assert_eq!(next["id"], "next", "{next}");
    assert!(next["result"]["turns"].is_array(), "{next}");
}

/// Header lines ended by a lone `\r` or `\n` (`\r\r`, or the mixed
/// `\n\r\n`) are refused at once too. Before, the request waited for bytes
/// that never came and, once the next request arrived, the two were read as
/// one frame: the next request's body was cut at the first one's length and
/// it was never answered.
#[tokio::test(flavor = "multi_thread")]
async fn header_lines_ending_in_a_lone_cr_or_lf_are_refused_at_once() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;

    for (name, ending) in [("mixed", "\n\r\n"), ("cr", "\r\r"), ("lf then crlf", "\n\r\n\r\n")] {
        let body = json!({"jsonrpc": "2.0", "id": name, "method": wire::method::HISTORY}).to_string();
        server.send_raw(format!("Content-Length: {}{ending}{body}", body.len()).as_bytes()).await;
        // Nothing more is written until the answer is in.
        let response = server.next_orphan_response(TIMEOUT).await;
        assert_eq!(response["error"]["code"], -32700, "{name}: {response}");
        let message = response["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(r"headers must end with \r\n\r\n"), "{name}: {message}");

        // The next, well-framed request is answered as itself.
        let next = format!("after {name}");
        server.send_message(&json!({"jsonrpc": "2.0", "id": next, "method": wire::method::HISTORY})).await;
        let answer = server.next_orphan_response(TIMEOUT).await;
        assert_eq!(answer["id"], next.as_str(), "{name}: {answer}");
        assert!(answer["result"]["turns"].is_array(), "{name}: {answer}");
    }
}

/// A request whose `id` is `null` is refused with `-32600`, as
/// docs/protocol.md says, and is not served: before, it was answered as
/// a `mino/history` with `id: null`, indistinguishable from the answer to an
/// unreadable frame.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_with_a_null_id_is_refused() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;

    server.send_message(&json!({"jsonrpc": "2.0", "id": null, "method": wire::method::HISTORY})).await;
    let response = server.next_orphan_response(TIMEOUT).await;
    assert_eq!(response["id"], Value::Null, "{response}");
    assert_eq!(response["error"]["code"], -32600, "{response}");
    assert!(response.get("result").is_none(), "served: {response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("id must be a number or a string"), "{message}");
}

/// The `Content-Type` charset is read case-insensitively: `UTF-8` and
/// `utf8` are UTF-8 too, and the request is served.
#[tokio::test(flavor = "multi_thread")]
async fn an_upper_case_charset_is_accepted() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;

    for (id, charset) in [("upper", "UTF-8"), ("short", "utf8"), ("lower", "utf-8")] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": wire::method::HISTORY}).to_string();
        let frame = format!(
            "Content-Type: application/vscode-jsonrpc; charset={charset}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        server.send_raw(frame.as_bytes()).await;
        let response = server.next_orphan_response(TIMEOUT).await;
        assert_eq!(response["id"], id, "charset={charset}: {response}");
        assert!(response["result"]["turns"].is_array(), "charset={charset}: {response}");
    }
}
