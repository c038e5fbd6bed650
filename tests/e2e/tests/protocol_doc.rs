//! docs/protocol.md says what the real server does: its `mino/retrying`
//! example is what the server sends, and a server without `OPENAI_API_KEY`
//! behaves as its environment table says. (That the doc and `mino-protocol`
//! name the same methods, notifications, error codes and statuses is checked
//! next to the crate: server/protocol/tests/protocol_doc.rs.)

use mino_e2e::{options_in, wire, work_dir, workspace_root, MockModel, Reply, Server, Spawn, TIMEOUT};
use serde_json::Value;

fn protocol_doc() -> String {
    std::fs::read_to_string(workspace_root().join("docs/protocol.md")).expect("docs/protocol.md")
}

/// The `mino/retrying` example's `reason` is exactly what the server sends
/// for the failure it shows: a 503 whose message is `overloaded`.
#[tokio::test(flavor = "multi_thread")]
async fn the_retrying_example_is_what_the_server_sends() {
    let doc = protocol_doc();
    let example: Value = doc
        .lines()
        .find(|line| line.starts_with('{') && line.contains(r#""method":"mino/retrying""#))
        .map(|line| serde_json::from_str(line).expect("the example is JSON"))
        .expect("a mino/retrying example in docs/protocol.md");
    let documented = example["params"]["reason"].as_str().expect("the example's reason").to_string();

    let mock =
        MockModel::start(vec![Reply::http_error(503, None, "overloaded").with_retry_after(0), Reply::text("ok")])
            .await
            .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Hello".into(), ..Default::default() })
        .await
        .expect("chat");
    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let retrying = notes.iter().find(|n| n.method == wire::method::RETRYING).expect("a mino/retrying");
    assert_eq!(retrying.params["reason"].as_str(), Some(documented.as_str()), "{}", retrying.params);
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed);
}

/// Without `OPENAI_API_KEY` and with an `OPENAI_BASE_URL` of its own (a
/// local server), the turn is served, and no `Authorization` header is
/// sent; a service there that wants a key answers 401, and the turn ends
/// `failed` with the reason docs/protocol.md gives.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_key_a_custom_base_url_is_asked_without_authorization() {
    let mock = MockModel::start(vec![
        Reply::text("No key needed here."),
        Reply::http_error(401, "invalid_api_key", "You didn't provide an API key."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_with(Spawn {
        base_url: Some(mock.base_url()),
        env: vec![("OPENAI_API_KEY".into(), String::new())],
        ..Default::default()
    })
    .await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;

    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Hello".into(), ..Default::default() })
        .await
        .expect("chat");
    let ended: wire::TurnEnded = server.turn_notifications(&turn.turn_id, TIMEOUT).await.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed, "{:?}", ended.reason);
    assert_eq!(ended.text.as_deref(), Some("No key needed here."));

    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Again".into(), ..Default::default() })
        .await
        .expect("chat");
    let ended: wire::TurnEnded = server.turn_notifications(&turn.turn_id, TIMEOUT).await.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Failed);
    assert_eq!(
        ended.reason.as_deref(),
        Some("The model service rejected the API key (401): You didn't provide an API key. Check OPENAI_API_KEY.")
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.authorization.is_none()), "{:?}", requests[0].authorization);
    let doc = protocol_doc();
    assert!(
        doc.contains("The model service rejected the API key (401): <its message>. Check OPENAI_API_KEY."),
        "docs/protocol.md gives the reason"
    );
}
