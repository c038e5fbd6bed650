//! The mock model over real HTTP: the SSE framing Mino relies on, for each
//! kind of scripted reply, and the requests it records.

use std::time::{Duration, Instant};

use futures::StreamExt;
use mino_mock_model::{MockModel, Reply, ScriptedCall, NO_REPLY_LEFT};
use serde_json::{json, Value};

#[derive(Debug)]
struct Event {
    name: String,
    data: Value,
}

/// Parses SSE text, checking the framing Mino relies on: `event:` then one `data:` line, blank
/// line separation, `type` equal to the event name, sequence numbers counting from 0.
fn parse_sse(text: &str) -> Vec<Event> {
    assert!(text.is_empty() || text.ends_with("\n\n"), "stream must end on a frame boundary: {text:?}");
    let events: Vec<Event> = text
        .split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let lines: Vec<&str> = block.split('\n').collect();
            assert_eq!(lines.len(), 2, "frame is event + data: {block:?}");
            let name = lines[0].strip_prefix("event: ").expect("event line");
            let data: Value =
                serde_json::from_str(lines[1].strip_prefix("data: ").expect("data line")).expect("data is JSON");
            assert_eq!(data["type"], name, "type repeats the event name");
            assert!(
                lines[1].starts_with(&format!("data: {{\"type\":\"{name}\",\"sequence_number\":")),
                "type and sequence_number lead: {}",
                lines[1]
            );
            Event { name: name.to_owned(), data }
        })
        .collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.data["sequence_number"], i as u64, "sequence of {}", e.name);
    }
    events
}

fn names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

fn request_body() -> Value {
    json!({
        "model": "gpt-test",
        "instructions": "be brief",
        "input": [{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}],
        "stream": true,
        "store": false,
    })
}

async fn post(model: &MockModel, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/responses", model.base_url()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn stream_events(model: &MockModel) -> Vec<Event> {
    let resp = post(model, &request_body()).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    parse_sse(&resp.text().await.unwrap())
}

/// Reads a stream to its end or its transport error; returns the text and whether it errored.
async fn read_until_end(resp: reqwest::Response) -> (String, bool) {
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => text.push_str(std::str::from_utf8(&bytes).unwrap()),
            Err(_) => return (text, true),
        }
    }
    (text, false)
}

#[tokio::test]
async fn text_reply_streams_the_documented_sequence_and_records_the_request() {
    let model = MockModel::start(vec![Reply::text("Hi there!")]).await.unwrap();
    assert!(model.base_url().starts_with("http://127.0.0.1:"));
    assert!(model.base_url().ends_with("/v1"));

    let events = stream_events(&model).await;
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let created = &events[0].data["response"];
    assert_eq!(created["id"], "resp_1");
    assert_eq!(created["object"], "response");
    assert_eq!(created["status"], "in_progress");
    assert_eq!(created["model"], "gpt-test");
    assert!(created["created_at"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(created["output"], json!([]));

    assert_eq!(events[2].data["item"]["id"], "msg_1");
    assert_eq!(events[2].data["item"]["type"], "message");
    assert_eq!(events[4].data["delta"], "Hi");
    assert_eq!(events[5].data["delta"], " there!");
    assert_eq!(events[5].data["item_id"], "msg_1");
    assert_eq!(events[6].data["text"], "Hi there!");
    assert_eq!(events[8].data["item"]["status"], "completed");
    assert_eq!(events[8].data["item"]["content"], json!([{"type":"output_text","text":"Hi there!","annotations":[]}]));
    let done = &events[9].data["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], "Hi there!");
    assert!(done["usage"]["total_tokens"].as_u64().unwrap() > 0);

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body, request_body());
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(requests[0].path, "/v1/responses");
}

#[tokio::test]
async fn calls_reply_streams_text_then_one_item_per_call() {
    let model = MockModel::start(vec![Reply::Calls {
        text: vec!["Let me".into(), " look.".into()],
        calls: vec![
            ScriptedCall::new("call_1", "ls -la"),
            ScriptedCall::new("call_2", "echo \"milk\" >> shopping.txt"),
        ],
        delay_ms: 0,
    }])
    .await
    .unwrap();
    let events = stream_events(&model).await;

    let n = names(&events);
    assert_eq!(n[..2], ["response.created", "response.in_progress"]);
    assert_eq!(*n.last().unwrap(), "response.completed");
    // Items open and close in order, never interleaved.
    let item_events: Vec<(&str, u64, String)> = events
        .iter()
        .filter(|e| e.name.starts_with("response.output_item."))
        .map(|e| {
            (
                e.name.as_str(),
                e.data["output_index"].as_u64().unwrap(),
                e.data["item"]["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        item_events,
        [
            ("response.output_item.added", 0, "msg_1".into()),
            ("response.output_item.done", 0, "msg_1".into()),
            ("response.output_item.added", 1, "fc_1".into()),
            ("response.output_item.done", 1, "fc_1".into()),
            ("response.output_item.added", 2, "fc_2".into()),
            ("response.output_item.done", 2, "fc_2".into()),
        ]
    );

    for (index, item_id, call_id, command) in
        [(1, "fc_1", "call_1", "ls -la"), (2, "fc_2", "call_2", "echo \"milk\" >> shopping.txt")]
    {
        let expected_args = json!({ "command": command }).to_string();
        let deltas: String = events
            .iter()
            .filter(|e| e.name == "response.function_call_arguments.delta" && e.data["item_id"] == item_id)
            .map(|e| {
                assert_eq!(e.data["output_index"], index);
                e.data["delta"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(deltas, expected_args);
        let added =
            events.iter().find(|e| e.name == "response.output_item.added" && e.data["item"]["id"] == item_id).unwrap();
        assert_eq!(
            added.data["item"],
            json!({"id": item_id, "type":"function_call", "status":"in_progress",
                   "arguments":"", "call_id": call_id, "name":"bash"})
        );
        let args_done = events
            .iter()
            .find(|e| e.name == "response.function_call_arguments.done" && e.data["item_id"] == item_id)
            .unwrap();
        assert_eq!(args_done.data["arguments"], expected_args);
        let done =
            events.iter().find(|e| e.name == "response.output_item.done" && e.data["item"]["id"] == item_id).unwrap();
        assert_eq!(
            done.data["item"],
            json!({"id": item_id, "type":"function_call", "status":"completed",
                   "arguments": expected_args, "call_id": call_id, "name":"bash"})
        );
    }
    let output = &events.last().unwrap().data["response"]["output"];
    assert_eq!(output.as_array().unwrap().len(), 3);
    assert_eq!(output[0]["content"][0]["text"], "Let me look.");
    assert_eq!(output[2]["call_id"], "call_2");
}

#[tokio::test]
async fn a_named_call_carries_its_tool_name_and_verbatim_arguments() {
    let arguments = r#"{"cmd":"echo ran >> side","sandbox_permissions":"require_escalated"}"#;
    let model = MockModel::start(vec![Reply::NamedCall {
        call_id: "call_7".into(),
        name: "exec_command".into(),
        arguments: arguments.into(),
    }])
    .await
    .unwrap();
    let events = stream_events(&model).await;
    let added = events.iter().find(|e| e.name == "response.output_item.added").unwrap();
    assert_eq!(added.data["item"]["name"], "exec_command");
    let done = events.iter().find(|e| e.name == "response.output_item.done").unwrap();
    assert_eq!(
        done.data["item"],
        json!({"id": "fc_1", "type": "function_call", "status": "completed",
               "arguments": arguments, "call_id": "call_7", "name": "exec_command"})
    );
    let last = events.last().unwrap();
    assert_eq!(last.name, "response.completed");
    assert_eq!(last.data["response"]["output"][0]["name"], "exec_command");
}

#[tokio::test]
async fn edit_tool_calls_carry_their_names_and_json_arguments() {
    let model = MockModel::start(vec![
        Reply::edit_file("call_e", "src/a \"b\".rs", "let x = 1;\n", "let x = 2;\n", true),
        Reply::write_file("call_w", "notes.txt", "milk\r\neggs\n"),
    ])
    .await
    .unwrap();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let events = stream_events(&model).await;
        let done = events.iter().find(|e| e.name == "response.output_item.done").unwrap();
        let item = &done.data["item"];
        let arguments: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
        seen.push((item["call_id"].clone(), item["name"].clone(), arguments));
    }
    assert_eq!(
        seen,
        vec![
            (
                json!("call_e"),
                json!("edit_file"),
                json!({"path": "src/a \"b\".rs", "old_text": "let x = 1;\n", "new_text": "let x = 2;\n", "replace_all": true})
            ),
            (json!("call_w"), json!("write_file"), json!({"path": "notes.txt", "content": "milk\r\neggs\n"})),
        ]
    );
}

#[tokio::test]
async fn raw_arguments_are_sent_verbatim_and_convenience_constructors_work() {
    let model = MockModel::start(vec![
        Reply::Calls {
            text: vec![],
            calls: vec![ScriptedCall {
                call_id: "call_x".into(),
                command: String::new(),
                raw_arguments: Some("{\"command\": 42".into()),
            }],
            delay_ms: 0,
        },
        Reply::call("call_1", "echo milk >> shopping.txt"),
        Reply::calls(&[("call_a", "true"), ("call_b", "false")]),
    ])
    .await
    .unwrap();
    let events = stream_events(&model).await;
    let done = events.iter().find(|e| e.name == "response.output_item.done").unwrap();
    assert_eq!(done.data["item"]["arguments"], "{\"command\": 42");

    let events = stream_events(&model).await;
    assert_eq!(names(&events)[2], "response.output_item.added");
    let done = events.iter().find(|e| e.name == "response.output_item.done").unwrap();
    assert_eq!(done.data["item"]["call_id"], "call_1");
    assert_eq!(done.data["item"]["arguments"], "{\"command\":\"echo milk >> shopping.txt\"}");
    assert_eq!(events[0].data["response"]["id"], "resp_2");

    let events = stream_events(&model).await;
    let calls: Vec<&Value> =
        events.iter().filter(|e| e.name == "response.output_item.done").map(|e| &e.data["item"]["call_id"]).collect();
    assert_eq!(calls, [&json!("call_a"), &json!("call_b")]);
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn http_error_has_status_openai_body_and_retry_after() {
    let model = MockModel::start(vec![
        Reply::HttpError {
            status: 429,
            code: Some("rate_limit_exceeded".into()),
            message: "Rate limit reached".into(),
            retry_after: Some(7),
        },
        Reply::http_error(500, None, "boom"),
        Reply::http_error(400, "context_length_exceeded", "too long"),
    ])
    .await
    .unwrap();

    let resp = post(&model, &request_body()).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "7");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {"message": "Rate limit reached", "type": "requests",
                         "param": null, "code": "rate_limit_exceeded"}})
    );

    let resp = post(&model, &request_body()).await;
    assert_eq!(resp.status(), 500);
    assert!(resp.headers().get("retry-after").is_none());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], Value::Null);
    assert_eq!(body["error"]["type"], "server_error");

    let resp = post(&model, &request_body()).await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "context_length_exceeded");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn exhausted_script_answers_a_visible_text() {
    let model = MockModel::start(vec![]).await.unwrap();
    let events = stream_events(&model).await;
    let done = &events.last().unwrap().data;
    assert_eq!(done["type"], "response.completed");
    assert_eq!(done["response"]["output"][0]["content"][0]["text"], NO_REPLY_LEFT);

    model.push(Reply::text("pushed"));
    let events = stream_events(&model).await;
    assert_eq!(events.last().unwrap().data["response"]["output"][0]["content"][0]["text"], "pushed");
}

#[tokio::test]
async fn control_endpoints_drive_and_inspect_the_script() {
    let model = MockModel::start(vec![]).await.unwrap();
    let root = model.base_url().trim_end_matches("/v1").to_owned();
    let client = reqwest::Client::new();

    let resp = client
        .post(format!("{root}/_mock/script"))
        .body(r#"[{"type":"text","deltas":["from"," json"]},{"type":"http_error","status":503,"code":null,"message":"down","retry_after":2}]"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap()["queued"], 2);
    // A lone reply is accepted too.
    let resp =
        client.post(format!("{root}/_mock/script")).body(r#"{"type":"text","deltas":["third"]}"#).send().await.unwrap();
    assert_eq!(resp.json::<Value>().await.unwrap()["queued"], 3);
    let resp = client.post(format!("{root}/_mock/script")).body("not json").send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(model.remaining(), 3);

    let events = stream_events(&model).await;
    assert_eq!(events.last().unwrap().data["response"]["output"][0]["content"][0]["text"], "from json");
    let resp = post(&model, &json!({"model": "m", "input": []})).await;
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers()["retry-after"], "2");

    let recorded: Vec<Value> = client.get(format!("{root}/_mock/requests")).send().await.unwrap().json().await.unwrap();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0]["body"], request_body());
    assert_eq!(recorded[0]["authorization"], "Bearer sk-test");
    assert_eq!(recorded[0]["path"], "/v1/responses");
    assert_eq!(recorded[1]["body"], json!({"model": "m", "input": []}));

    let resp = client.post(format!("{root}/_mock/reset")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(model.requests().is_empty());
    assert_eq!(model.remaining(), 0);
    // Ids restart so a reused bin gives every test the same ids.
    let events = stream_events(&model).await;
    assert_eq!(events[0].data["response"]["id"], "resp_1");
    assert_eq!(events[2].data["item"]["id"], "msg_1");
}

#[tokio::test]
async fn unknown_paths_and_bad_bodies_get_openai_errors() {
    let model = MockModel::start(vec![Reply::text("unused")]).await.unwrap();
    let client = reqwest::Client::new();

    let resp = client.post(format!("{}/completions", model.base_url())).json(&json!({})).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["param"], Value::Null);
    assert_eq!(body["error"]["code"], Value::Null);
    assert!(body["error"]["message"].as_str().unwrap().contains("/v1/completions"));

    let resp = client.get(format!("{}/responses", model.base_url())).send().await.unwrap();
    assert_eq!(resp.status(), 404);

    let resp = client.post(format!("{}/responses", model.base_url())).body("{not json").send().await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["type"], "invalid_request_error");
    // Recorded, but it did not consume the scripted reply.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body, json!("{not json"));
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn cut_stream_drops_the_connection_after_the_deltas() {
    let model = MockModel::start(vec![Reply::CutStream { deltas: vec!["par".into(), "tial".into()] }]).await.unwrap();
    let (text, errored) = read_until_end(post(&model, &request_body()).await).await;
    assert!(errored, "a cut stream is a transport error");
    assert_eq!(
        names(&parse_sse(&text)),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
        ]
    );
}

#[tokio::test]
async fn end_without_terminal_closes_cleanly_and_short() {
    let model = MockModel::start(vec![Reply::EndWithoutTerminal { deltas: vec![] }]).await.unwrap();
    let (text, errored) = read_until_end(post(&model, &request_body()).await).await;
    assert!(!errored);
    assert_eq!(names(&parse_sse(&text)), ["response.created", "response.in_progress"]);
}

#[tokio::test]
async fn stall_sends_the_start_then_goes_silent() {
    let model = MockModel::start(vec![Reply::Stall { deltas: vec!["hm".into()], stall_ms: Some(400) }]).await.unwrap();
    let started = Instant::now();
    let resp = post(&model, &request_body()).await;
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    // The opening events must reach the client while the stall is still running.
    while !text.contains("response.output_text.delta") {
        let chunk = stream.next().await.unwrap().unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(started.elapsed() < Duration::from_millis(350));
    let silent = tokio::time::timeout(Duration::from_millis(150), stream.next()).await;
    assert!(silent.is_err(), "nothing more during the stall");
    // Then the connection is dropped.
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.unwrap();
    assert!(matches!(end, Some(Err(_)) | None));
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test]
async fn terminal_variants_end_as_documented() {
    let model = MockModel::start(vec![
        Reply::Failed { code: "rate_limit_exceeded".into(), message: "Please try again in 11.054s".into() },
        Reply::ErrorEvent { code: "server_error".into(), message: "oops".into() },
        Reply::Incomplete { deltas: vec!["cut".into(), " off".into()], reason: "max_output_tokens".into() },
        Reply::ReasoningThenText { encrypted_content: "gAAAAopaque".into(), deltas: vec!["Done.".into()] },
    ])
    .await
    .unwrap();

    let events = stream_events(&model).await;
    assert_eq!(names(&events), ["response.created", "response.in_progress", "response.failed"]);
    let failed = &events[2].data["response"];
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"], json!({"code":"rate_limit_exceeded","message":"Please try again in 11.054s"}));

    let events = stream_events(&model).await;
    assert_eq!(names(&events), ["response.created", "response.in_progress", "error"]);
    assert_eq!(events[2].data["code"], "server_error");
    assert_eq!(events[2].data["message"], "oops");
    assert_eq!(events[2].data["param"], Value::Null);

    let events = stream_events(&model).await;
    let last = events.last().unwrap();
    assert_eq!(last.name, "response.incomplete");
    assert_eq!(last.data["response"]["status"], "incomplete");
    assert_eq!(last.data["response"]["incomplete_details"], json!({"reason":"max_output_tokens"}));
    assert_eq!(last.data["response"]["output"][0]["content"][0]["text"], "cut off");

    let events = stream_events(&model).await;
    let added = &events[2].data["item"];
    assert_eq!(added["type"], "reasoning");
    assert_eq!(added["id"], "rs_1");
    let reasoning_done = events.iter().find(|e| e.name == "response.output_item.done").unwrap();
    assert_eq!(reasoning_done.data["output_index"], 0);
    assert_eq!(reasoning_done.data["item"]["encrypted_content"], "gAAAAopaque");
    assert_eq!(reasoning_done.data["item"]["summary"][0]["type"], "summary_text");
    let output = &events.last().unwrap().data["response"]["output"];
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(output[1]["type"], "message");
    assert_eq!(output[1]["content"][0]["text"], "Done.");
}

#[tokio::test]
async fn delay_ms_paces_the_deltas() {
    let model = MockModel::start(vec![Reply::text("one two three").with_delay_ms(40)]).await.unwrap();
    let started = Instant::now();
    stream_events(&model).await;
    // One sleep before the item and one before each of the three deltas.
    assert!(started.elapsed() >= Duration::from_millis(160));
}

#[tokio::test]
async fn stamped_text_sends_each_delta_with_its_send_time() {
    let script: Vec<Reply> =
        serde_json::from_value(json!([{"type": "stamped_text", "count": 3, "delay_ms": 5}])).unwrap();
    assert_eq!(script[0], Reply::StampedText { count: 3, delay_ms: 5 });
    let model = MockModel::start(script).await.unwrap();
    let before = mino_mock_model::monotonic_nanos();
    let events = stream_events(&model).await;
    let after = mino_mock_model::monotonic_nanos();
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let deltas: Vec<&str> = events[4..7].iter().map(|e| e.data["delta"].as_str().unwrap()).collect();
    let stamps: Vec<u64> = deltas.iter().map(|d| d.strip_suffix(' ').unwrap().parse().unwrap()).collect();
    assert!(stamps.windows(2).all(|w| w[1] - w[0] >= 4_000_000), "paced: {stamps:?}");
    assert!(stamps[0] >= before && stamps[2] <= after, "{before} <= {stamps:?} <= {after}");
    assert_eq!(events[4].data["item_id"], "msg_1");
    let text = deltas.concat();
    assert_eq!(events[7].data["text"], text.as_str());
    assert_eq!(events[9].data["item"]["content"][0]["text"], text.as_str());
    let done = &events[10].data["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["id"], "resp_1");
    assert_eq!(done["output"][0]["content"][0]["text"], text.as_str());
    assert_eq!(done["usage"]["output_tokens"], (text.len() as u64).div_ceil(4));
}

#[tokio::test]
async fn wait_for_requests_wakes_on_arrival_and_gives_up_on_timeout() {
    let model = MockModel::start(vec![Reply::text("a")]).await.unwrap();
    let none = model.wait_for_requests(1, Duration::from_millis(50)).await;
    assert!(none.is_empty());

    let client_model = model.clone();
    let client = tokio::spawn(async move { stream_events(&client_model).await });
    let got = model.wait_for_requests(1, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body["model"], "gpt-test");
    client.await.unwrap();
}

#[tokio::test]
async fn shutdown_refuses_new_connections() {
    let model = MockModel::start(vec![]).await.unwrap();
    model.shutdown().await;
    let err = reqwest::Client::new()
        .post(format!("{}/responses", model.base_url()))
        .json(&request_body())
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
}

#[test]
fn replies_serialize_with_a_snake_case_type_tag() {
    let script: Vec<Reply> = serde_json::from_value(json!([
        {"type": "text", "deltas": ["Hi"]},
        {"type": "calls", "calls": [{"call_id": "call_1", "command": "ls"}]},
        {"type": "reasoning_then_text", "encrypted_content": "x", "deltas": []},
        {"type": "http_error", "status": 429, "code": "rate_limit_exceeded", "message": "m"},
        {"type": "cut_stream", "deltas": []},
        {"type": "end_without_terminal", "deltas": []},
        {"type": "stall"},
        {"type": "failed", "code": "server_error", "message": "m"},
        {"type": "error_event", "code": "server_error", "message": "m"},
        {"type": "incomplete", "deltas": [], "reason": "content_filter"},
    ]))
    .unwrap();
    assert_eq!(script[0], Reply::Text { deltas: vec!["Hi".into()], delay_ms: 0 });
    assert_eq!(script[1], Reply::call("call_1", "ls"));
    assert_eq!(script[6], Reply::Stall { deltas: vec![], stall_ms: None });
    assert_eq!(
        serde_json::to_value(Reply::http_error(401, "invalid_api_key", "bad key")).unwrap(),
        json!({"type":"http_error","status":401,"code":"invalid_api_key","message":"bad key","retry_after":null})
    );
}

#[test]
fn text_splits_into_word_sized_deltas() {
    let Reply::Text { deltas, .. } = Reply::text("Hi there!") else { panic!() };
    assert_eq!(deltas, ["Hi", " there!"]);
    let Reply::Text { deltas, .. } = Reply::text("  a\n\nb  c ") else { panic!() };
    assert_eq!(deltas.concat(), "  a\n\nb  c ");
    assert_eq!(deltas, ["  a", "\n\nb", "  c", " "]);
}
