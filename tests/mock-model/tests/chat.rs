//! The same scripted replies rendered as streamed Chat Completions on `/v1/chat/completions`.

use mino_mock_model::{MockModel, Reply, ScriptedCall};
use serde_json::{json, Value};

fn request_body(include_usage: bool) -> Value {
    json!({
        "model": "local-test",
        "messages": [{"role": "user", "content": "hello"}],
        "stream": true,
        "stream_options": {"include_usage": include_usage},
    })
}

/// The data lines of a chat stream, checking its framing: only `data:` lines, blank-line
/// separated, ending with `[DONE]` when `done` is expected.
async fn chunks(model: &MockModel, include_usage: bool) -> (Vec<Value>, bool) {
    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&request_body(include_usage))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().expect("header").starts_with("text/event-stream"));
    let text = resp.text().await.expect("body");
    assert!(text.is_empty() || text.ends_with("\n\n"), "{text:?}");
    let mut done = false;
    let mut values = Vec::new();
    for block in text.split("\n\n").filter(|block| !block.is_empty()) {
        let data = block.strip_prefix("data: ").expect("a data line only");
        assert!(!done, "nothing after [DONE]");
        if data == "[DONE]" {
            done = true;
        } else {
            values.push(serde_json::from_str(data).expect("JSON chunk"));
        }
    }
    (values, done)
}

fn deltas(chunks: &[Value]) -> Vec<&Value> {
    chunks.iter().filter_map(|c| c["choices"].get(0)).map(|choice| &choice["delta"]).collect()
}

#[tokio::test]
async fn text_streams_as_chunks_then_finish_usage_and_done() {
    let model = MockModel::start(vec![Reply::text("Hi there!")]).await.expect("mock");
    let (chunks, done) = chunks(&model, true).await;
    assert!(done);
    assert!(chunks.iter().all(|c| c["id"] == "chatcmpl-1" && c["object"] == "chat.completion.chunk"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = deltas(&chunks).iter().filter_map(|d| d["content"].as_str()).collect();
    assert_eq!(text, "Hi there!");
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = chunks.last().expect("usage chunk");
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 3);
    assert_eq!(
        usage["usage"]["total_tokens"].as_u64(),
        Some(usage["usage"]["prompt_tokens"].as_u64().expect("prompt") + 3)
    );
    assert_eq!(model.requests()[0].path, "/v1/chat/completions");

    // Without include_usage there is no usage chunk.
    model.push(Reply::text("Hi"));
    let (chunks, done) = self::chunks(&model, false).await;
    assert!(done && chunks.iter().all(|c| c.get("usage").is_none()));
}

#[tokio::test]
async fn calls_stream_id_and_name_first_then_argument_pieces_by_index() {
    let model = MockModel::start(vec![Reply::Calls {
        text: vec!["Let me look.".into()],
        calls: vec![ScriptedCall::new("call_1", "ls -la /tmp/somewhere"), ScriptedCall::new("call_2", "pwd")],
        delay_ms: 0,
    }])
    .await
    .expect("mock");
    let (chunks, done) = chunks(&model, true).await;
    assert!(done);
    let pieces: Vec<&Value> = deltas(&chunks).into_iter().filter_map(|d| d["tool_calls"].get(0)).collect();
    let first: Vec<&&Value> = pieces.iter().filter(|p| p["index"] == 0).collect();
    assert!(first.len() > 2, "the arguments come in several pieces: {first:?}");
    assert_eq!(first[0]["id"], "call_1");
    assert_eq!(first[0]["function"]["name"], "bash");
    assert!(first[1..].iter().all(|p| p.get("id").is_none() && p["function"].get("name").is_none()));
    let arguments: String = first.iter().filter_map(|p| p["function"]["arguments"].as_str()).collect();
    assert_eq!(arguments, json!({"command": "ls -la /tmp/somewhere"}).to_string());
    let second: Vec<&&Value> = pieces.iter().filter(|p| p["index"] == 1).collect();
    assert_eq!(second[0]["id"], "call_2");
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn ends_errors_and_status_codes() {
    let model = MockModel::start(vec![
        Reply::Incomplete { deltas: vec!["cut".into()], reason: "max_output_tokens".into() },
        Reply::Failed { code: "server_error".into(), message: "oops".into() },
        Reply::EndWithoutTerminal { deltas: vec!["half".into()] },
        Reply::Garbled { deltas: vec![], data: "{nope".into() },
        Reply::http_error(429, "rate_limit_exceeded", "Slow down.").with_retry_after(2),
    ])
    .await
    .expect("mock");

    let (chunks, done) = chunks(&model, false).await;
    assert!(done);
    assert_eq!(chunks.last().expect("finish")["choices"][0]["finish_reason"], "length");

    let (chunks, done) = self::chunks(&model, false).await;
    assert!(!done, "an error ends the stream without [DONE]");
    assert_eq!(chunks.last().expect("error")["error"]["code"], "server_error");

    let (chunks, done) = self::chunks(&model, false).await;
    assert!(!done);
    assert!(chunks.iter().all(|c| c["choices"][0]["finish_reason"].is_null()));

    let text = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&request_body(false))
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("body");
    assert!(text.ends_with("data: {nope\n\n"), "{text:?}");

    let resp = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .json(&request_body(false))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    let body: Value = resp.json().await.expect("error body");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
}
