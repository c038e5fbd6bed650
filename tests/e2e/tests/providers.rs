//! The Chat Completions provider over the real binary: a whole session, the
//! milk story included, with the model spoken to at `/v1/chat/completions`.

use mino_e2e::{chat, end_of, next_approval_request, open, wire, work_dir, MockModel, Reply, Server, Spawn, TIMEOUT};
use serde_json::{json, Value};

fn chat_completions_server(home: &std::path::Path, mock: &MockModel) -> Spawn {
    Spawn {
        home: Some(home.to_path_buf()),
        base_url: Some(mock.base_url()),
        env: vec![("MINO_PROVIDER".into(), "chat-completions".into())],
        ..Spawn::default()
    }
}

/// The `tool` messages of a Chat Completions request, as (call id, content).
fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (m["tool_call_id"].as_str().unwrap_or("").to_string(), m["content"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

/// A command killed with the server between its start and its result is
/// `unknown` under Chat Completions as under the Responses API: the gate
/// holds chat until it is acknowledged, nothing reruns, and the next request
/// carries the unknown result as the call's `tool` message.
#[tokio::test(flavor = "multi_thread")]
async fn the_milk_story_under_chat_completions() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let buy = format!("echo milk >> bought.txt; {}", mino_e2e::KILL_SERVER);
    let mock = MockModel::start(vec![
        Reply::text("Hello from a local model."),
        Reply::call("call_milk", &buy),
        Reply::text("Milk may have been bought already; I will not buy it again."),
    ])
    .await
    .expect("mock");

    let mut first = Server::spawn_with(chat_completions_server(home.path(), &mock)).await;
    open(&mut first, &cwd).await;
    let hello = chat(&mut first, "Hi").await;
    let ended = end_of(&mut first, &hello).await;
    assert_eq!(ended.status, wire::TurnStatus::Completed);
    assert_eq!(ended.text.as_deref(), Some("Hello from a local model."));

    let turn = chat(&mut first, "Buy milk").await;
    let request = next_approval_request(&mut first).await;
    assert_eq!(request.command, buy);
    first
        .send_message(&json!({"jsonrpc": "2.0", "id": 7000, "method": wire::method::APPROVAL,
            "params": {"turnId": request.turn_id, "callId": request.call_id, "decision": "approve"}}))
        .await;
    first.wait(TIMEOUT).await;
    assert_eq!(std::fs::read_to_string(cwd.join("bought.txt")).expect("bought"), "milk\n");

    let mut second = Server::spawn_with(chat_completions_server(home.path(), &mock)).await;
    let recovery = open(&mut second, &cwd).await;
    assert!(recovery.acknowledgement_required);
    assert_eq!(recovery.unacknowledged_turn_ids, vec![turn.clone()]);
    assert_eq!(recovery.turns[0].calls[0].result.status, wire::ToolStatus::Unknown);

    let refused = second.request(wire::method::CHAT, json!({"text": "Buy milk again"})).await.expect_err("gated");
    assert_eq!(refused.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    second.request(wire::method::ACKNOWLEDGE, json!({})).await.expect("acknowledge");
    let next = chat(&mut second, "Did you buy milk?").await;
    assert_eq!(end_of(&mut second, &next).await.status, wire::TurnStatus::Completed);

    let requests = mock.requests();
    assert!(requests.iter().all(|r| r.path == "/v1/chat/completions"), "every request went to chat/completions");
    let last = requests.last().expect("a request");
    let tools = tool_messages(&last.body);
    assert_eq!(tools.len(), 1, "{:#}", last.body);
    assert_eq!(tools[0].0, "call_milk");
    assert!(tools[0].1.contains("The operation may have happened. Do not automatically retry it."), "{}", tools[0].1);
    assert!(last.body["messages"].to_string().contains("Did you buy milk?"));
    assert_eq!(std::fs::read_to_string(cwd.join("bought.txt")).expect("bought"), "milk\n", "nothing reran");
    second.close_stdin();
}

/// A provider name Mino does not know stops `initialize` with a message
/// naming the variable and the valid names; no session is touched.
#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_provider_is_refused_by_name() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut spawn = chat_completions_server(home.path(), &mock);
    spawn.env = vec![("MINO_PROVIDER".into(), "ollama".into())];
    let mut server = Server::spawn_with(spawn).await;
    let err = server.initialize(&mino_e2e::options_in(&cwd)).await.expect_err("refused");
    assert!(
        err.message.contains("MINO_PROVIDER") && err.message.contains("chat-completions"),
        "the message names the variable and the valid names: {}",
        err.message
    );
    assert!(
        !home.path().join("sessions").exists()
            || std::fs::read_dir(home.path().join("sessions")).map(|d| d.count()).unwrap_or(0) == 0
    );
}

/// `$MINO_HOME/config.toml` chooses the provider, the address and the model
/// when the environment does not; a file with an error stops `initialize`
/// with its path and line, and no session is opened half-configured.
#[tokio::test(flavor = "multi_thread")]
async fn the_config_file_is_read_and_an_error_in_it_is_named_by_line() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![Reply::text("Configured by file.")]).await.expect("mock");
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "# Mino's settings\nprovider = \"chat-completions\"\nbase_url = \"{}\"\nmodel = \"from-file\"\n",
            mock.base_url()
        ),
    )
    .expect("config");
    let mut spawn = Spawn { home: Some(home.path().to_path_buf()), ..Spawn::default() };
    // The harness points the server at an unreachable address unless told otherwise;
    // an empty variable counts as unset, so the file's address is used.
    spawn.env = vec![("OPENAI_BASE_URL".into(), String::new()), ("MINO_MODEL".into(), String::new())];
    let mut server = Server::spawn_with(spawn).await;
    let result = server.initialize(&mino_e2e::options_in(&cwd)).await.expect("initialize");
    assert_eq!(Server::capabilities(&result).model, "from-file");
    server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    let turn = chat(&mut server, "Hi").await;
    assert_eq!(end_of(&mut server, &turn).await.text.as_deref(), Some("Configured by file."));
    assert_eq!(mock.requests()[0].path, "/v1/chat/completions");
    assert_eq!(mock.requests()[0].body["model"], "from-file");
    server.close_stdin();
    server.wait(TIMEOUT).await;

    std::fs::write(&config, "provider = \"chat-completions\"\ncommand_timeout_secs = 0\n").expect("config");
    let sessions_before = std::fs::read_dir(home.path().join("sessions")).expect("sessions").count();
    let mut server = Server::spawn_in(home.path(), &mock).await;
    let err = server.initialize(&mino_e2e::options_in(&cwd)).await.expect_err("refused");
    let at = format!("{}:2", config.display());
    assert!(err.message.contains(&at) && err.message.contains("command_timeout_secs"), "{}", err.message);
    let sessions_after = std::fs::read_dir(home.path().join("sessions")).expect("sessions").count();
    assert_eq!(sessions_before, sessions_after, "no session was created or touched");
}

/// What llama-cpp-python's `chatml-function-calling` did with Mino's
/// `"tool_choice": "auto"` (answer 200, then nothing): Mino now sends no
/// `tool_choice`, and a service that answers an empty stream anyway is told
/// as exactly that, retried once, not four times. Before, every turn failed
/// "The model's stream ended before the response was finished (gave up
/// after 5 attempts)".
#[tokio::test(flavor = "multi_thread")]
async fn an_empty_stream_is_said_as_such_and_not_retried_as_transient() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    // Each empty stream is followed by its unstreamed diagnostic request.
    let mock = MockModel::start(vec![Reply::EmptyStream; 4]).await.expect("mock");
    let mut server = Server::spawn_with(chat_completions_server(home.path(), &mock)).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Hi").await;
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Failed);
    let reason = ended.reason.unwrap_or_default();
    assert!(reason.contains("answered with an empty stream; its log may say why"), "{reason}");
    let retries = notes.iter().filter(|n| n.method == wire::method::RETRYING).count();
    assert_eq!(retries, 1, "one retry of the same failure");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.body.get("tool_choice").is_none()), "no tool_choice is sent");
}
