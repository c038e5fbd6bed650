//! The model client against the scripted Responses API server, over real HTTP.

use std::time::{Duration, Instant};

use mino_core::model::{
    bash_tool, parse_retry_hint, ModelClient, ModelConfig, ModelError, ModelEvent, ModelRequest, ModelResponse,
    DEFAULT_BASE_URL,
};
use mino_mock_model::{MockModel, Reply};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::support::{ask, mock, model_config, Heard};

const KEY: &str = "sk-test-very-secret";

/// A stall timeout no quiet mock reaches: at 300 ms, a test's first request
/// on a loaded machine (the test run's two lanes) stalled out, was retried,
/// and heard the mock's second reply. The stall tests set their own.
fn config(base_url: &str) -> ModelConfig {
    model_config(base_url, KEY, "test-model", Duration::from_secs(5))
}

fn input() -> Vec<Value> {
    vec![json!({"type":"message","role":"user","content":[{"type":"input_text","text":"Hello"}]})]
}

async fn run_with(client: &ModelClient, cancel: &CancellationToken) -> (Result<ModelResponse, ModelError>, Heard) {
    ask(client, &input(), cancel).await
}

async fn run(mock: &MockModel) -> (Result<ModelResponse, ModelError>, Heard) {
    let client = ModelClient::new(config(&mock.base_url())).expect("client");
    run_with(&client, &CancellationToken::new()).await
}

fn message_text(item: &Value) -> String {
    item["content"].as_array().into_iter().flatten().filter_map(|part| part["text"].as_str()).collect()
}

#[tokio::test]
async fn text_deltas_stream_in_order_and_items_are_returned() {
    let mock = mock(vec![Reply::Text { deltas: vec!["Hi".into(), " there".into(), "!".into()], delay_ms: 5 }]).await;
    let (result, heard) = run(&mock).await;
    let response = result.expect("response");
    assert_eq!(heard.deltas, vec!["Hi", " there", "!"]);
    assert!(heard.retries.is_empty());
    assert_eq!(response.incomplete, None);
    assert_eq!(response.items.len(), 1, "{:?}", response.items);
    assert_eq!(response.items[0]["type"], "message");
    assert_eq!(response.items[0]["role"], "assistant");
    assert!(response.items[0]["id"].is_string(), "ids are kept");
    assert_eq!(message_text(&response.items[0]), "Hi there!");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn usage_of_the_finished_response_is_reported() {
    let mock = mock(vec![Reply::text("Hi there!"), Reply::call("call_1", "ls")]).await;
    let (result, _) = run(&mock).await;
    let usage = result.expect("response").usage.expect("usage of response.completed");
    // The mock counts a token per four bytes of the request body and of the answer.
    let body_len = serde_json::to_vec(&mock.requests()[0].body).expect("body").len() as u64;
    assert_eq!(usage.input_tokens, body_len.div_ceil(4));
    assert_eq!(usage.output_tokens, 3, "\"Hi there!\" is 9 characters");
    assert_eq!(usage.total_tokens, usage.input_tokens + 3);
    assert_eq!(usage.cached_input_tokens, Some(0));
    assert_eq!(usage.reasoning_tokens, Some(0));
    let (result, _) = run(&mock).await;
    let usage = result.expect("response").usage.expect("usage of a response with a call");
    assert!(usage.output_tokens > 0 && usage.total_tokens == usage.input_tokens + usage.output_tokens, "{usage:?}");
}

#[tokio::test]
async fn function_call_items_carry_call_id() {
    let mock = mock(vec![Reply::calls(&[("call_1", "ls -la"), ("call_2", "pwd")])]).await;
    let (result, heard) = run(&mock).await;
    let response = result.expect("response");
    assert!(heard.deltas.is_empty());
    let calls: Vec<&Value> = response.items.iter().filter(|i| i["type"] == "function_call").collect();
    assert_eq!(calls.len(), 2, "{:?}", response.items);
    assert_eq!(calls[0]["call_id"], "call_1");
    assert_eq!(calls[1]["call_id"], "call_2");
    assert_ne!(calls[0]["id"], calls[0]["call_id"], "item id is not the call id");
    assert_eq!(calls[0]["name"], "bash");
    let args: Value = serde_json::from_str(calls[0]["arguments"].as_str().expect("arguments")).expect("json");
    assert_eq!(args, json!({"command": "ls -la"}));
}

#[tokio::test]
async fn reasoning_item_with_encrypted_content_is_returned() {
    let mock = mock(vec![Reply::ReasoningThenText {
        encrypted_content: "gAAAA-opaque".into(),
        deltas: vec!["Done".into(), ".".into()],
    }])
    .await;
    let (result, heard) = run(&mock).await;
    let response = result.expect("response");
    assert_eq!(heard.deltas.concat(), "Done.");
    assert_eq!(response.items.len(), 2, "{:?}", response.items);
    assert_eq!(response.items[0]["type"], "reasoning");
    assert_eq!(response.items[0]["encrypted_content"], "gAAAA-opaque");
    assert_eq!(response.items[1]["type"], "message");
}

#[tokio::test]
async fn request_body_and_headers() {
    let mock = mock(vec![Reply::text("ok"), Reply::text("ok")]).await;
    let client = ModelClient::new(config(&format!("{}/", mock.base_url()))).expect("client");
    let (result, _) = run_with(&client, &CancellationToken::new()).await;
    result.expect("response");

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[0].authorization.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    let body = &requests[0].body;
    let input = input();
    assert_eq!(body, &client.request_body(&ModelRequest { instructions: "Be brief.", input: &input }));
    let tools: Vec<serde_json::Value> =
        [bash_tool(), mino_core::edit::edit_file_tool(), mino_core::edit::write_file_tool()]
            .into_iter()
            .chain(mino_core::read::tools())
            .collect();
    assert_eq!(
        body,
        &json!({
            "model": "test-model",
            "instructions": "Be brief.",
            "input": input,
            "tools": tools,
            "parallel_tool_calls": true,
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
        })
    );
    let tool = &body["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["name"], "bash");
    assert_eq!(tool["strict"], true);
    assert!(tool.get("function").is_none(), "flat form, not nested under `function`");
    assert_eq!(tool["parameters"]["required"], json!(["command"]));
    assert_eq!(tool["parameters"]["additionalProperties"], false);
    assert_eq!(tool["parameters"]["properties"]["command"]["type"], "string");

    // No key with an overridden base URL: no Authorization header at all.
    let keyless = ModelClient::new(ModelConfig { api_key: None, ..config(&mock.base_url()) }).expect("client");
    let (result, _) = run_with(&keyless, &CancellationToken::new()).await;
    result.expect("response");
    assert_eq!(mock.requests()[1].authorization, None);
}

#[tokio::test]
async fn missing_key_for_the_default_service() {
    let client = ModelClient::new(ModelConfig { api_key: None, ..config(DEFAULT_BASE_URL) }).expect("client");
    let (result, _) = run_with(&client, &CancellationToken::new()).await;
    assert!(matches!(result, Err(ModelError::MissingApiKey)), "{result:?}");
    let client =
        ModelClient::new(ModelConfig { api_key: None, ..config("https://api.openai.com/v1/") }).expect("client");
    let (result, _) = run_with(&client, &CancellationToken::new()).await;
    assert!(matches!(result, Err(ModelError::MissingApiKey)), "{result:?}");
}

#[tokio::test]
async fn retries_429_honouring_retry_after() {
    let mock = mock(vec![
        Reply::http_error(429, "rate_limit_exceeded", "Rate limit reached.").with_retry_after(0),
        Reply::http_error(429, "rate_limit_exceeded", "Rate limit reached.").with_retry_after(7),
        Reply::text("Recovered"),
    ])
    .await;
    let (result, heard) = run(&mock).await;
    let response = result.expect("response");
    assert_eq!(message_text(&response.items[0]), "Recovered");
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(heard.retries.len(), 2, "{:?}", heard.retries);
    // Retry-After: 0 is honoured as is (not the ~5 ms exponential backoff) ...
    assert_eq!(heard.retries[0].0, 1);
    assert_eq!(heard.retries[0].1, Duration::ZERO);
    assert!(heard.retries[0].2.contains("429"), "{}", heard.retries[0].2);
    // ... and Retry-After: 7 is capped at max_backoff (50 ms).
    assert_eq!(heard.retries[1].0, 2);
    assert_eq!(heard.retries[1].1, Duration::from_millis(50));
}

#[test]
fn retry_hints_in_messages() {
    assert_eq!(parse_retry_hint("Please try again in 11.054s."), Some(Duration::from_millis(11_054)));
    assert_eq!(parse_retry_hint("Please try again in 250ms."), Some(Duration::from_millis(250)));
    assert_eq!(parse_retry_hint("Something broke."), None);
}

#[tokio::test]
async fn retries_500() {
    let mock = mock(vec![Reply::http_error(500, None, "The server had an error."), Reply::text("ok")]).await;
    let (result, heard) = run(&mock).await;
    result.expect("response");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(heard.retries.len(), 1);
    let delay = heard.retries[0].1;
    assert!(delay >= Duration::from_micros(4_400) && delay <= Duration::from_micros(5_600), "{delay:?}");
}

#[tokio::test]
async fn retries_a_cut_stream_and_voids_its_text() {
    let mock = mock(vec![
        Reply::CutStream { deltas: vec!["Half".into()] },
        Reply::EndWithoutTerminal { deltas: vec!["Again".into()] },
        Reply::text("Whole answer"),
    ])
    .await;
    let (result, heard) = run(&mock).await;
    let response = result.expect("response");
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(heard.retries.len(), 2, "{:?}", heard.retries);
    // The failed attempts' text came first, each followed by the Retrying event that voids it.
    assert_eq!(heard.deltas.first().map(String::as_str), Some("Half"));
    assert_eq!(message_text(&response.items[0]), "Whole answer");
    assert!(heard.retries[0].2.contains("broke off"), "{}", heard.retries[0].2);
    assert!(heard.retries[1].2.contains("ended before"), "{}", heard.retries[1].2);
}

#[tokio::test]
async fn retries_a_stalled_stream() {
    let mock =
        mock(vec![Reply::Stall { deltas: vec!["Thinking".into()], stall_ms: Some(5_000) }, Reply::text("ok")]).await;
    let config = ModelConfig { stall_timeout: Duration::from_millis(300), ..config(&mock.base_url()) };
    let client = ModelClient::new(config).expect("client");
    let started = Instant::now();
    let (result, heard) = run_with(&client, &CancellationToken::new()).await;
    result.expect("response");
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(heard.retries.len(), 1);
    assert!(heard.retries[0].2.contains("stalled"), "{}", heard.retries[0].2);
}

#[tokio::test]
async fn retries_response_failed_rate_limit_with_message_hint() {
    let mock = mock(vec![
        Reply::Failed { code: "rate_limit_exceeded".into(), message: "Slow down. Please try again in 12ms.".into() },
        Reply::ErrorEvent { code: "server_error".into(), message: "Oops.".into() },
        Reply::text("ok"),
    ])
    .await;
    let (result, heard) = run(&mock).await;
    result.expect("response");
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(heard.retries.len(), 2);
    assert_eq!(heard.retries[0].1, Duration::from_millis(12));
    assert!(heard.retries[0].2.contains("rate_limit_exceeded"), "{}", heard.retries[0].2);
}

#[tokio::test]
async fn no_retry_on_context_length_exceeded() {
    let mock = mock(vec![
        Reply::http_error(400, "context_length_exceeded", "Your input exceeds the context window of this model."),
        Reply::text("never"),
    ])
    .await;
    let (result, heard) = run(&mock).await;
    match result {
        Err(ModelError::Fatal { reason, code, status }) => {
            assert_eq!(
                reason,
                "The conversation is too long for the model (context_length_exceeded): \
                 Your input exceeds the context window of this model."
            );
            assert_eq!(code.as_deref(), Some("context_length_exceeded"));
            assert_eq!(status, Some(400));
        }
        other => panic!("{other:?}"),
    }
    assert!(heard.retries.is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn no_retry_on_401_and_the_key_never_shows() {
    let mock = mock(vec![
        Reply::http_error(401, "invalid_api_key", format!("Incorrect API key provided: {KEY}.")),
        Reply::text("never"),
    ])
    .await;
    let (result, _) = run(&mock).await;
    let err = result.expect_err("401 is fatal");
    let text = err.to_string();
    assert!(text.starts_with("The model service rejected the API key (401): "), "{text}");
    assert!(text.ends_with("Check OPENAI_API_KEY."), "{text}");
    assert!(!text.contains(KEY), "{text}");
    assert!(!format!("{err:?}").contains(KEY));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn no_retry_on_insufficient_quota() {
    let mock = mock(vec![
        Reply::http_error(429, "insufficient_quota", "You exceeded your current quota.").with_retry_after(0),
        Reply::text("never"),
    ])
    .await;
    let (result, heard) = run(&mock).await;
    match result {
        Err(ModelError::Fatal { reason, code, status }) => {
            assert_eq!(
                reason,
                "The API account has no quota left (insufficient_quota): You exceeded your current quota. \
                 Check your plan and billing."
            );
            assert_eq!(code.as_deref(), Some("insufficient_quota"));
            assert_eq!(status, Some(429));
        }
        other => panic!("{other:?}"),
    }
    assert!(heard.retries.is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn no_retry_on_a_fatal_in_stream_error() {
    let mock = mock(vec![
        Reply::Failed { code: "context_length_exceeded".into(), message: "Too long.".into() },
        Reply::text("never"),
    ])
    .await;
    let (result, _) = run(&mock).await;
    assert!(matches!(result, Err(ModelError::Fatal { status: None, .. })), "{result:?}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn gives_up_after_max_retries_plus_one_attempts() {
    let mock = mock(vec![
        Reply::http_error(503, None, "Overloaded."),
        Reply::http_error(502, None, "Bad gateway."),
        Reply::http_error(500, "server_error", "Broken."),
        Reply::text("never"),
    ])
    .await;
    let mut cfg = config(&mock.base_url());
    cfg.retry.max_retries = 2;
    let client = ModelClient::new(cfg).expect("client");
    let (result, heard) = run_with(&client, &CancellationToken::new()).await;
    match result {
        Err(err @ ModelError::RetriesExhausted { .. }) => {
            let text = err.to_string();
            let ModelError::RetriesExhausted { reason, attempts } = err else { unreachable!() };
            assert_eq!(attempts, 3);
            assert!(reason.contains("500") && reason.contains("Broken."), "{reason}");
            assert!(text.ends_with("(gave up after 3 attempts)"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(heard.retries.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn unreachable_service_is_retried_then_reported() {
    let mock = mock(vec![]).await;
    mock.shutdown().await;
    let mut cfg = config(&mock.base_url());
    cfg.retry.max_retries = 1;
    let client = ModelClient::new(cfg).expect("client");
    let (result, heard) = run_with(&client, &CancellationToken::new()).await;
    match result {
        Err(ModelError::RetriesExhausted { reason, attempts }) => {
            assert_eq!(attempts, 2);
            assert!(reason.starts_with("Could not reach the model service at http://127.0.0.1:"), "{reason}");
            assert!(!reason.contains(KEY));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(heard.retries.len(), 1);
}

#[tokio::test]
async fn incomplete_reason_is_reported() {
    let mock =
        mock(vec![Reply::Incomplete { deltas: vec!["Par".into(), "tial".into()], reason: "max_output_tokens".into() }])
            .await;
    let (result, heard) = run(&mock).await;
    let response = result.expect("response");
    assert_eq!(response.incomplete.as_deref(), Some("max_output_tokens"));
    assert_eq!(heard.deltas.concat(), "Partial");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn cancel_during_a_slow_stream() {
    let deltas: Vec<String> = (0..50).map(|i| format!("w{i} ")).collect();
    let mock = mock(vec![Reply::Text { deltas, delay_ms: 200 }]).await;
    let client = ModelClient::new(config(&mock.base_url())).expect("client");
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let input = input();
    let request = ModelRequest { instructions: "Be brief.", input: &input };
    let mut deltas = 0;
    let mut on_event = |event: ModelEvent<'_>| {
        if let ModelEvent::TextDelta(_) = event {
            deltas += 1;
            canceller.cancel();
        }
    };
    let started = Instant::now();
    let result = client.respond(&request, &mut on_event, &cancel).await;
    let elapsed = started.elapsed();
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert_eq!(deltas, 1);
    // The stream would run 10 s; the bound is loose for a loaded machine.
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn cancel_during_a_stalled_stream_and_during_backoff() {
    // Stalled: cancelled well before the stall timeout. The token fires on
    // the first delta, so the stream is known to be open and then silent.
    let mock = mock(vec![Reply::Stall { deltas: vec!["Hel".into()], stall_ms: Some(60_000) }]).await;
    let mut cfg = config(&mock.base_url());
    cfg.stall_timeout = Duration::from_secs(30);
    cfg.retry.max_backoff = Duration::from_secs(60);
    let client = ModelClient::new(cfg).expect("client");
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let stalled_input = input();
    let request = ModelRequest { instructions: "Be brief.", input: &stalled_input };
    let mut deltas = Vec::new();
    let mut on_event = |event: ModelEvent<'_>| {
        if let ModelEvent::TextDelta(text) = event {
            deltas.push(text.to_string());
            canceller.cancel();
        }
    };
    let started = Instant::now();
    let result = client.respond(&request, &mut on_event, &cancel).await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert_eq!(deltas, vec!["Hel".to_string()], "cancelled while the stream was open");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    // Backoff: a 60 s Retry-After sleep ends as soon as the token fires.
    mock.push(Reply::http_error(429, "rate_limit_exceeded", "Slow down.").with_retry_after(60));
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let input = input();
    let request = ModelRequest { instructions: "", input: &input };
    let mut delays = Vec::new();
    let mut on_event = |event: ModelEvent<'_>| {
        if let ModelEvent::Retrying { delay, .. } = event {
            delays.push(delay);
            canceller.cancel();
        }
    };
    let started = Instant::now();
    let result = client.respond(&request, &mut on_event, &cancel).await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(delays, vec![Duration::from_secs(60)]);

    // Already cancelled: no request at all.
    let before = mock.requests().len();
    let (result, _) = run_with(&client, &cancel).await;
    assert!(matches!(result, Err(ModelError::Cancelled)));
    assert_eq!(mock.requests().len(), before);
}

/// A local server without `TCP_NODELAY` holds each small write until the previous one is
/// ACKed; on a reused connection Linux delays those ACKs (up to 40 ms), because the client
/// sent its request right after reading the previous response. A fresh connection starts in
/// quick-ACK mode, so over plain http (local servers: no TLS handshake to pay) every request
/// gets its own.
#[tokio::test]
async fn each_request_to_a_plain_http_endpoint_opens_its_own_connection() {
    let mock = mock(vec![Reply::text("One."), Reply::text("Two."), Reply::text("Three.")]).await;
    let client = ModelClient::new(config(&mock.base_url())).expect("client");
    for expected in ["One.", "Two.", "Three."] {
        let (result, heard) = run_with(&client, &CancellationToken::new()).await;
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(heard.deltas.concat(), expected);
    }
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(mock.connections(), 3, "each request on a connection of its own");
}

/// The turn loop runs `respond` inside spawned tasks: its future must be `Send`.
#[allow(dead_code)]
fn respond_future_is_send(
    client: &ModelClient,
    request: &ModelRequest<'_>,
    on_event: &mut (dyn FnMut(ModelEvent<'_>) + Send),
    cancel: &CancellationToken,
) {
    fn is_send<T: Send>(_: &T) {}
    fn is_send_sync<T: Send + Sync + Clone>() {}
    is_send(&client.respond(request, on_event, cancel));
    is_send_sync::<ModelClient>();
}

/// As [`run`], with a stall timeout long enough for the mock (a debug build) to encode an
/// event of many MB before it sends it.
async fn run_patiently(mock: &MockModel) -> (Result<ModelResponse, ModelError>, Heard) {
    let config = ModelConfig { stall_timeout: Duration::from_secs(60), ..config(&mock.base_url()) };
    let client = ModelClient::new(config).expect("client");
    run_with(&client, &CancellationToken::new()).await
}

#[tokio::test]
async fn a_4_mb_delta_on_a_single_line_arrives_whole() {
    let text = "A long answer, sent as one delta \u{2713}\n".repeat(4 * 1024 * 1024 / 36);
    assert!(text.len() >= 4 * 1024 * 1024);
    let mock = mock(vec![Reply::Text { deltas: vec![text.clone()], delay_ms: 0 }]).await;
    let (result, heard) = run_patiently(&mock).await;
    let response = result.expect("response");
    assert!(heard.retries.is_empty(), "{:?}", heard.retries);
    assert_eq!(heard.deltas.len(), 1);
    assert!(heard.deltas[0] == text, "the delta arrived changed ({} of {} bytes)", heard.deltas[0].len(), text.len());
    assert!(message_text(&response.items[0]) == text);
}

#[tokio::test]
async fn an_event_over_the_size_bound_fails_the_request_without_a_retry() {
    let text = "x".repeat(mino_core::model::MAX_EVENT_BYTES + 1024);
    // Only the oversized event: the mock renders each event before its
    // first byte, and the four 64 MiB events of a whole answer took longer
    // than the stall timeout on a loaded machine; the retry that followed
    // hid what this test is about.
    let mock = mock(vec![
        Reply::EndWithoutTerminal { deltas: vec![text] },
        Reply::Text { deltas: vec!["Not asked for".into()], delay_ms: 0 },
    ])
    .await;
    let (result, heard) = run_patiently(&mock).await;
    match result {
        Err(ModelError::Fatal { reason, .. }) => {
            assert!(reason.contains("more than 64 MiB without completing an event"), "{reason}")
        }
        other => panic!("expected a fatal error, got {other:?} after the retries {:?}", heard.retries),
    }
    assert!(heard.deltas.is_empty(), "no part of the oversized event is passed on");
    assert!(heard.retries.is_empty());
    assert_eq!(mock.requests().len(), 1);
}
