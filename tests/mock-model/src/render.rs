//! Turns one [`Reply`] into an HTTP response shaped like the real Responses API.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::{IdCounters, Reply, ScriptedCall};

pub(crate) const DEFAULT_STALL_MS: u64 = 60_000;
const CUT_FLUSH_DELAY: Duration = Duration::from_millis(20);
pub(crate) const ARGUMENT_CHUNK_CHARS: usize = 12;
pub(crate) const REASONING_SUMMARY: &str = "**Planning**\n\nWorking out how to answer the request.";

/// What a reply needs to know about the request it answers.
#[derive(Clone)]
pub(crate) struct RequestCtx {
    pub model: String,
    pub parallel_tool_calls: bool,
    pub input_tokens: u64,
    pub created_at: u64,
    /// `stream_options.include_usage` (Chat Completions): whether a usage chunk ends the stream.
    pub include_usage: bool,
}

impl RequestCtx {
    pub(crate) fn from_body(body: &Value, raw_len: usize) -> RequestCtx {
        RequestCtx {
            model: body.get("model").and_then(Value::as_str).unwrap_or("mock-model").to_owned(),
            parallel_tool_calls: body.get("parallel_tool_calls").and_then(Value::as_bool).unwrap_or(true),
            // Roughly a token per four bytes: plausible numbers for clients that log usage.
            input_tokens: (raw_len as u64).div_ceil(4),
            created_at: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
            include_usage: body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

/// The OpenAI error body, used for scripted HTTP errors and for the server's own 4xx answers.
pub(crate) fn error_response(status: StatusCode, kind: &str, code: Option<&str>, message: &str) -> Response {
    let body = json!({
        "error": { "message": message, "type": kind, "param": null, "code": code }
    });
    (status, axum::Json(body)).into_response()
}

/// The `type` the real service pairs with each status.
pub(crate) fn error_kind(status: u16, code: Option<&str>) -> &'static str {
    match (status, code) {
        (429, Some("insufficient_quota")) => "insufficient_quota",
        (429, _) => "requests",
        (s, _) if s >= 500 => "server_error",
        _ => "invalid_request_error",
    }
}

/// A scripted HTTP error: the same for both APIs.
pub(crate) fn http_error(status: u16, code: Option<&str>, message: &str, retry_after: Option<u64>) -> Response {
    let status_code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = error_response(status_code, error_kind(status, code), code, message);
    if let Some(secs) = retry_after {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

pub(crate) fn render(reply: Reply, ctx: &RequestCtx, ids: &IdCounters) -> Response {
    if let Reply::HttpError { status, code, message, retry_after } = reply {
        return http_error(status, code.as_deref(), &message, retry_after);
    }
    if let Reply::EmptyStream = reply {
        return Sse { steps: Vec::new(), seq: 0 }.into_response();
    }

    let mut turn = Turn::new(ctx, ids);
    turn.start();
    match reply {
        Reply::HttpError { .. } => unreachable!("handled above"),
        Reply::Text { deltas, delay_ms } => {
            turn.message(&deltas, delay_ms, "completed");
            turn.finish("response.completed", "completed", Value::Null, Value::Null);
        }
        Reply::Calls { text, calls, delay_ms } => {
            if !text.is_empty() {
                turn.message(&text, delay_ms, "completed");
            }
            for call in &calls {
                turn.call(call, delay_ms);
            }
            turn.finish("response.completed", "completed", Value::Null, Value::Null);
        }
        Reply::ReasoningThenText { encrypted_content, deltas } => {
            turn.reasoning(&encrypted_content);
            turn.message(&deltas, 0, "completed");
            turn.finish("response.completed", "completed", Value::Null, Value::Null);
        }
        Reply::CutStream { deltas } => {
            turn.open_message_if_any(&deltas);
            turn.sse.cut();
        }
        Reply::EndWithoutTerminal { deltas } => {
            turn.open_message_if_any(&deltas);
        }
        Reply::Stall { deltas, stall_ms } => {
            turn.open_message_if_any(&deltas);
            turn.sse.sleep(stall_ms.unwrap_or(DEFAULT_STALL_MS));
            turn.sse.cut();
        }
        Reply::Failed { code, message } => {
            turn.finish("response.failed", "failed", json!({ "code": code, "message": message }), Value::Null);
        }
        Reply::ErrorEvent { code, message } => {
            turn.sse.event("error", json!({ "code": code, "message": message, "param": null }));
        }
        Reply::StampedText { count, delay_ms } => {
            turn.stamped_message(count, delay_ms);
        }
        Reply::EndlessText { delta } => {
            turn.endless_message(&delta);
        }
        Reply::NamedCall { call_id, name, arguments } => {
            turn.function_call(&call_id, &name, &arguments, 0);
            turn.finish("response.completed", "completed", Value::Null, Value::Null);
        }
        Reply::EmptyStream => unreachable!("handled above"),
        Reply::TextWithoutUsage { deltas } => {
            turn.message(&deltas, 0, "completed");
            turn.finish("response.completed", "completed", Value::Null, Value::Null);
        }
        Reply::LengthStop { deltas } => {
            turn.message(&deltas, 0, "incomplete");
            turn.finish("response.incomplete", "incomplete", Value::Null, json!({ "reason": "max_output_tokens" }));
        }
        Reply::Incomplete { deltas, reason } => {
            turn.message(&deltas, 0, "incomplete");
            turn.finish("response.incomplete", "incomplete", Value::Null, json!({ "reason": reason }));
        }
        Reply::Garbled { deltas, data } => {
            turn.open_message_if_any(&deltas);
            turn.sse.steps.push(Step::Event(format!("event: response.output_text.delta\ndata: {data}\n\n")));
        }
    }
    turn.sse.into_response()
}

/// Builds the events that close a stamped message, from the text its deltas made.
pub(crate) type Closer = Box<dyn FnOnce(&str) -> Vec<String> + Send>;

/// Stands in for the stamp while a stamped delta's event is planned.
pub(crate) const STAMP: &str = "@@STAMP@@";

pub(crate) enum Step {
    Event(String),
    Sleep(Duration),
    /// A text delta rendered when it is sent: `before` + the stamp + `after`.
    Stamped {
        before: String,
        after: String,
    },
    /// The closing events of a stamped message.
    Close(Closer),
    /// This event, sent again and again until the client hangs up.
    Forever(String),
    /// Ends the body with an error, which makes hyper drop the connection without the final
    /// chunk: what a client sees when the network or the upstream dies mid-stream.
    Cut,
}

/// A precomputed event plan, played back lazily so that a client hanging up simply drops the
/// remaining steps (including any sleep in progress).
pub(crate) struct Sse {
    pub(crate) steps: Vec<Step>,
    pub(crate) seq: u64,
}

impl Sse {
    fn event(&mut self, ty: &str, fields: Value) {
        let text = self.render(ty, fields);
        self.steps.push(Step::Event(text));
    }

    fn render(&mut self, ty: &str, fields: Value) -> String {
        // Hand-assembled so `type` and `sequence_number` lead the line as in the real stream
        // (serde_json's map here is sorted, not insertion-ordered).
        let mut data = format!("{{\"type\":{},\"sequence_number\":{}", Value::from(ty), self.seq);
        if let Value::Object(map) = fields {
            for (k, v) in map {
                data.push(',');
                data.push_str(&Value::from(k).to_string());
                data.push(':');
                data.push_str(&v.to_string());
            }
        }
        data.push('}');
        self.seq += 1;
        format!("event: {ty}\ndata: {data}\n\n")
    }

    pub(crate) fn sleep(&mut self, ms: u64) {
        if ms > 0 {
            self.steps.push(Step::Sleep(Duration::from_millis(ms)));
        }
    }

    pub(crate) fn cut(&mut self) {
        self.steps.push(Step::Cut);
    }

    pub(crate) fn into_response(self) -> Response {
        // The state carries the text stamped deltas made so far.
        let state = (VecDeque::from(self.steps), String::new());
        let stream = futures::stream::unfold(state, |(mut steps, mut stamped)| async move {
            loop {
                match steps.pop_front()? {
                    Step::Sleep(d) => tokio::time::sleep(d).await,
                    Step::Event(text) => return Some((Ok(Bytes::from(text)), (steps, stamped))),
                    Step::Forever(text) => {
                        let bytes = Bytes::from(text.clone());
                        steps.push_front(Step::Forever(text));
                        return Some((Ok(bytes), (steps, stamped)));
                    }
                    Step::Stamped { before, after } => {
                        let delta = format!("{} ", crate::monotonic_nanos());
                        let text = format!("{before}{delta}{after}");
                        stamped.push_str(&delta);
                        return Some((Ok(Bytes::from(text)), (steps, stamped)));
                    }
                    Step::Close(close) => {
                        for text in close(&stamped).into_iter().rev() {
                            steps.push_front(Step::Event(text));
                        }
                    }
                    Step::Cut => {
                        // hyper flushes only when the body is pending; erroring straight away
                        // would discard the buffered head and events along with the connection.
                        tokio::time::sleep(CUT_FLUSH_DELAY).await;
                        let err = std::io::Error::new(
                            std::io::ErrorKind::ConnectionAborted,
                            "mock model: scripted stream cut",
                        );
                        return Some((Err(err), (VecDeque::new(), String::new())));
                    }
                }
            }
        });
        let mut response = Response::new(Body::from_stream(stream));
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }
}

/// Builds one response's event sequence and its final `output` array.
struct Turn<'a> {
    sse: Sse,
    ctx: &'a RequestCtx,
    ids: &'a IdCounters,
    resp_id: String,
    output: Vec<Value>,
    output_chars: usize,
    reasoning_chars: usize,
}

impl<'a> Turn<'a> {
    fn new(ctx: &'a RequestCtx, ids: &'a IdCounters) -> Turn<'a> {
        Turn {
            sse: Sse { steps: Vec::new(), seq: 0 },
            ctx,
            ids,
            resp_id: ids.resp(),
            output: Vec::new(),
            output_chars: 0,
            reasoning_chars: 0,
        }
    }

    fn response_object(&self, status: &str, output: Value, usage: Value, error: Value, incomplete: Value) -> Value {
        json!({
            "id": self.resp_id,
            "object": "response",
            "created_at": self.ctx.created_at,
            "status": status,
            "background": false,
            "error": error,
            "incomplete_details": incomplete,
            "instructions": null,
            "max_output_tokens": null,
            "model": self.ctx.model,
            "output": output,
            "parallel_tool_calls": self.ctx.parallel_tool_calls,
            "previous_response_id": null,
            "reasoning": { "effort": null, "summary": null },
            "store": false,
            "temperature": 1.0,
            "text": { "format": { "type": "text" } },
            "tool_choice": "auto",
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "user": null,
            "metadata": {},
        })
    }

    fn start(&mut self) {
        let created = self.response_object("in_progress", json!([]), Value::Null, Value::Null, Value::Null);
        self.sse.event("response.created", json!({ "response": created.clone() }));
        self.sse.event("response.in_progress", json!({ "response": created }));
    }

    /// Opens a message item and streams `deltas` into it; returns (item id, output index, text).
    fn open_message(&mut self, deltas: &[String], delay_ms: u64) -> (String, usize, String) {
        let id = self.ids.msg();
        let index = self.output.len();
        self.sse.sleep(delay_ms);
        self.sse.event(
            "response.output_item.added",
            json!({
                "output_index": index,
                "item": { "id": id, "type": "message", "status": "in_progress",
                          "role": "assistant", "content": [] },
            }),
        );
        self.sse.event(
            "response.content_part.added",
            json!({
                "item_id": id, "output_index": index, "content_index": 0,
                "part": { "type": "output_text", "text": "", "annotations": [] },
            }),
        );
        let mut text = String::new();
        for delta in deltas {
            self.sse.sleep(delay_ms);
            self.sse.event(
                "response.output_text.delta",
                json!({
                    "item_id": id, "output_index": index, "content_index": 0,
                    "delta": delta, "logprobs": [],
                }),
            );
            text.push_str(delta);
        }
        (id, index, text)
    }

    /// The partial message of a stream that will stop short; nothing at all if there is no text.
    fn open_message_if_any(&mut self, deltas: &[String]) {
        if !deltas.is_empty() {
            self.open_message(deltas, 0);
        }
    }

    fn message(&mut self, deltas: &[String], delay_ms: u64, status: &str) {
        let (id, index, text) = self.open_message(deltas, delay_ms);
        self.close_message(&id, index, &text, status);
    }

    /// A message of `count` deltas stamped as they are sent (see [`Reply::StampedText`]),
    /// then `response.completed`; the closing events are built once the text is known.
    fn stamped_message(&mut self, count: usize, delay_ms: u64) {
        let (id, index, _) = self.open_message(&[], delay_ms);
        for _ in 0..count {
            self.sse.sleep(delay_ms);
            let fields = json!({
                "item_id": id, "output_index": index, "content_index": 0,
                "delta": STAMP, "logprobs": [],
            });
            let text = self.sse.render("response.output_text.delta", fields);
            let (before, after) = text.split_once(STAMP).expect("the stamp is in the event");
            self.sse.steps.push(Step::Stamped { before: before.to_owned(), after: after.to_owned() });
        }
        let (ctx, resp_id, seq) = (self.ctx.clone(), self.resp_id.clone(), self.sse.seq);
        self.sse.steps.push(Step::Close(Box::new(move |text: &str| {
            let ids = IdCounters::default();
            let mut tail = Turn {
                sse: Sse { steps: Vec::new(), seq },
                ctx: &ctx,
                ids: &ids,
                resp_id,
                output: Vec::new(),
                output_chars: 0,
                reasoning_chars: 0,
            };
            tail.close_message(&id, index, text, "completed");
            tail.finish("response.completed", "completed", Value::Null, Value::Null);
            tail.sse
                .steps
                .into_iter()
                .filter_map(|step| match step {
                    Step::Event(text) => Some(text),
                    _ => None,
                })
                .collect()
        })));
    }

    /// A message whose text never ends (see [`Reply::EndlessText`]).
    fn endless_message(&mut self, delta: &str) {
        let (id, index, _) = self.open_message(&[], 0);
        let fields = json!({
            "item_id": id, "output_index": index, "content_index": 0,
            "delta": delta, "logprobs": [],
        });
        let text = self.sse.render("response.output_text.delta", fields);
        self.sse.steps.push(Step::Forever(text));
    }

    /// The events that end a message item whose text is `text`.
    fn close_message(&mut self, id: &str, index: usize, text: &str, status: &str) {
        let part = json!({ "type": "output_text", "text": text, "annotations": [] });
        self.sse.event(
            "response.output_text.done",
            json!({
                "item_id": id, "output_index": index, "content_index": 0,
                "text": text, "logprobs": [],
            }),
        );
        self.sse.event(
            "response.content_part.done",
            json!({ "item_id": id, "output_index": index, "content_index": 0, "part": part }),
        );
        let item = json!({
            "id": id, "type": "message", "status": status, "role": "assistant",
            "content": [part],
        });
        self.sse.event("response.output_item.done", json!({ "output_index": index, "item": item.clone() }));
        self.output_chars += text.chars().count();
        self.output.push(item);
    }

    fn call(&mut self, call: &ScriptedCall, delay_ms: u64) {
        let arguments = call.raw_arguments.clone().unwrap_or_else(|| json!({ "command": call.command }).to_string());
        self.function_call(&call.call_id, "bash", &arguments, delay_ms);
    }

    /// One `function_call` item named `name`, its arguments streamed in small deltas.
    fn function_call(&mut self, call_id: &str, name: &str, arguments: &str, delay_ms: u64) {
        let id = self.ids.fc();
        let index = self.output.len();
        self.sse.sleep(delay_ms);
        self.sse.event(
            "response.output_item.added",
            json!({
                "output_index": index,
                "item": { "id": id, "type": "function_call", "status": "in_progress",
                          "arguments": "", "call_id": call_id, "name": name },
            }),
        );
        for chunk in chunks(arguments, ARGUMENT_CHUNK_CHARS) {
            self.sse.sleep(delay_ms);
            self.sse.event(
                "response.function_call_arguments.delta",
                json!({ "item_id": id, "output_index": index, "delta": chunk }),
            );
        }
        self.sse.event(
            "response.function_call_arguments.done",
            json!({ "item_id": id, "output_index": index, "arguments": arguments }),
        );
        let item = json!({
            "id": id, "type": "function_call", "status": "completed",
            "arguments": arguments, "call_id": call_id, "name": name,
        });
        self.sse.event("response.output_item.done", json!({ "output_index": index, "item": item.clone() }));
        self.output_chars += arguments.chars().count();
        self.output.push(item);
    }

    fn reasoning(&mut self, encrypted_content: &str) {
        let id = self.ids.rs();
        let index = self.output.len();
        // The real service only completes `encrypted_content` in `output_item.done`.
        self.sse.event(
            "response.output_item.added",
            json!({
                "output_index": index,
                "item": { "id": id, "type": "reasoning", "summary": [],
                          "encrypted_content": null },
            }),
        );
        self.sse.event(
            "response.reasoning_summary_part.added",
            json!({
                "item_id": id, "output_index": index, "summary_index": 0,
                "part": { "type": "summary_text", "text": "" },
            }),
        );
        for delta in crate::split_words(REASONING_SUMMARY) {
            self.sse.event(
                "response.reasoning_summary_text.delta",
                json!({ "item_id": id, "output_index": index, "summary_index": 0, "delta": delta }),
            );
        }
        self.sse.event(
            "response.reasoning_summary_text.done",
            json!({
                "item_id": id, "output_index": index, "summary_index": 0,
                "text": REASONING_SUMMARY,
            }),
        );
        let part = json!({ "type": "summary_text", "text": REASONING_SUMMARY });
        self.sse.event(
            "response.reasoning_summary_part.done",
            json!({ "item_id": id, "output_index": index, "summary_index": 0, "part": part }),
        );
        let item = json!({
            "id": id, "type": "reasoning", "summary": [part],
            "encrypted_content": encrypted_content,
        });
        self.sse.event("response.output_item.done", json!({ "output_index": index, "item": item.clone() }));
        self.reasoning_chars += REASONING_SUMMARY.len() + encrypted_content.len();
        self.output.push(item);
    }

    fn finish(&mut self, event: &str, status: &str, error: Value, incomplete: Value) {
        let usage = if status == "failed" {
            Value::Null
        } else {
            let reasoning = (self.reasoning_chars as u64).div_ceil(4);
            let output = (self.output_chars as u64).div_ceil(4) + reasoning;
            json!({
                "input_tokens": self.ctx.input_tokens,
                "input_tokens_details": { "cached_tokens": 0 },
                "output_tokens": output,
                "output_tokens_details": { "reasoning_tokens": reasoning },
                "total_tokens": self.ctx.input_tokens + output,
            })
        };
        let output = Value::Array(std::mem::take(&mut self.output));
        let response = self.response_object(status, output, usage, error, incomplete);
        self.sse.event(event, json!({ "response": response }));
    }
}

/// Splits on char boundaries so multi-byte commands still produce valid UTF-8 deltas.
pub(crate) fn chunks(s: &str, max_chars: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(max_chars.max(1)).map(|c| c.iter().collect()).collect()
}
