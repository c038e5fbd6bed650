//! Turns one [`Reply`] into an HTTP response shaped like a streamed Chat Completions answer:
//! `data: {chat.completion.chunk}` lines, a chunk with the `finish_reason`, a usage chunk with
//! empty `choices` when the request asked for it (`stream_options.include_usage`), then
//! `data: [DONE]`. The same script as the Responses rendering, in the other API's words.

use serde_json::{json, Value};

use crate::render::{
    chunks, http_error, RequestCtx, Sse, Step, ARGUMENT_CHUNK_CHARS, DEFAULT_STALL_MS, REASONING_SUMMARY, STAMP,
};
use crate::{IdCounters, Reply, ScriptedCall};

pub(crate) fn render_chat(reply: Reply, ctx: &RequestCtx, ids: &IdCounters) -> axum::response::Response {
    if let Reply::HttpError { status, code, message, retry_after } = reply {
        return http_error(status, code.as_deref(), &message, retry_after);
    }
    if let Reply::EmptyStream = reply {
        return Sse { steps: Vec::new(), seq: 0 }.into_response();
    }
    let mut turn = ChatTurn::new(ctx, ids);
    turn.start();
    match reply {
        Reply::HttpError { .. } | Reply::EmptyStream => unreachable!("handled above"),
        Reply::TextWithoutUsage { deltas } => {
            turn.text(&deltas, 0);
            turn.usage = false;
            turn.finish("stop");
        }
        Reply::LengthStop { deltas } => {
            turn.text(&deltas, 0);
            turn.usage = false;
            turn.finish("length");
        }
        Reply::Text { deltas, delay_ms } => {
            turn.text(&deltas, delay_ms);
            turn.finish("stop");
        }
        Reply::Calls { text, calls, delay_ms } => {
            turn.text(&text, delay_ms);
            for call in &calls {
                turn.call(call, delay_ms);
            }
            turn.finish("tool_calls");
        }
        Reply::ReasoningThenText { deltas, .. } => {
            // Chat Completions servers stream their reasoning as text; there is no encrypted form.
            for delta in crate::split_words(REASONING_SUMMARY) {
                turn.delta(json!({ "reasoning_content": delta }));
                turn.reasoning_chars += delta.len();
            }
            turn.text(&deltas, 0);
            turn.finish("stop");
        }
        Reply::CutStream { deltas } => {
            turn.text(&deltas, 0);
            turn.sse.cut();
        }
        Reply::EndWithoutTerminal { deltas } => {
            turn.text(&deltas, 0);
        }
        Reply::Stall { deltas, stall_ms } => {
            turn.text(&deltas, 0);
            turn.sse.sleep(stall_ms.unwrap_or(DEFAULT_STALL_MS));
            turn.sse.cut();
        }
        // One shape for an error inside a chat completion stream: an `error` object, then the end.
        Reply::Failed { code, message } | Reply::ErrorEvent { code, message } => {
            turn.data(json!({ "error": { "message": message, "type": "server_error", "param": null, "code": code } }));
        }
        Reply::Incomplete { deltas, reason } => {
            turn.text(&deltas, 0);
            let finish_reason = match reason.as_str() {
                "max_output_tokens" => "length",
                other => other,
            };
            turn.finish(finish_reason);
        }
        Reply::EndlessText { delta } => {
            let chunk = turn.chunk(json!({ "content": delta }), Value::Null);
            turn.sse.steps.push(Step::Forever(format!("data: {chunk}\n\n")));
        }
        Reply::StampedText { count, delay_ms } => {
            for _ in 0..count {
                turn.sse.sleep(delay_ms);
                let text = format!("data: {}\n\n", turn.chunk(json!({ "content": STAMP }), Value::Null));
                let (before, after) = text.split_once(STAMP).expect("the stamp is in the chunk");
                turn.sse.steps.push(Step::Stamped { before: before.to_owned(), after: after.to_owned() });
            }
            // A stamp is about 16 characters (digits and a space); usage is only plausible.
            turn.output_chars += count * 16;
            turn.finish("stop");
        }
        Reply::NamedCall { call_id, name, arguments } => {
            turn.function_call(0, &call_id, &name, &arguments, 0);
            turn.finish("tool_calls");
        }
        Reply::Garbled { deltas, data } => {
            turn.text(&deltas, 0);
            turn.sse.steps.push(Step::Event(format!("data: {data}\n\n")));
        }
    }
    turn.sse.into_response()
}

/// Builds one chat completion's chunks.
struct ChatTurn<'a> {
    sse: Sse,
    ctx: &'a RequestCtx,
    id: String,
    calls: usize,
    output_chars: usize,
    reasoning_chars: usize,
    /// Whether a usage chunk ends the stream when the request asks for one.
    usage: bool,
}

impl<'a> ChatTurn<'a> {
    fn new(ctx: &'a RequestCtx, ids: &'a IdCounters) -> ChatTurn<'a> {
        ChatTurn {
            sse: Sse { steps: Vec::new(), seq: 0 },
            ctx,
            id: ids.chatcmpl(),
            calls: 0,
            output_chars: 0,
            reasoning_chars: 0,
            usage: true,
        }
    }

    /// A `chat.completion.chunk` with one choice.
    fn chunk(&self, delta: Value, finish_reason: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.ctx.created_at,
            "model": self.ctx.model,
            "system_fingerprint": null,
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason }],
        })
    }

    fn data(&mut self, value: Value) {
        self.sse.steps.push(Step::Event(format!("data: {value}\n\n")));
    }

    fn delta(&mut self, delta: Value) {
        let chunk = self.chunk(delta, Value::Null);
        self.data(chunk);
    }

    /// The first chunk names the role, with empty content, as OpenAI's does.
    fn start(&mut self) {
        self.delta(json!({ "role": "assistant", "content": "", "refusal": null }));
    }

    fn text(&mut self, deltas: &[String], delay_ms: u64) {
        for delta in deltas {
            self.sse.sleep(delay_ms);
            self.delta(json!({ "content": delta }));
            self.output_chars += delta.chars().count();
        }
    }

    fn call(&mut self, call: &ScriptedCall, delay_ms: u64) {
        let arguments = call.raw_arguments.clone().unwrap_or_else(|| json!({ "command": call.command }).to_string());
        let index = self.calls;
        self.function_call(index, &call.call_id, "bash", &arguments, delay_ms);
    }

    /// One tool call: its id and name first (with empty arguments), then the arguments in
    /// pieces, every chunk carrying the call's `index`.
    fn function_call(&mut self, index: usize, call_id: &str, name: &str, arguments: &str, delay_ms: u64) {
        self.sse.sleep(delay_ms);
        self.delta(json!({ "tool_calls": [{
            "index": index, "id": call_id, "type": "function",
            "function": { "name": name, "arguments": "" },
        }] }));
        for piece in chunks(arguments, ARGUMENT_CHUNK_CHARS) {
            self.sse.sleep(delay_ms);
            self.delta(json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }));
        }
        self.output_chars += arguments.chars().count();
        self.calls = index + 1;
    }

    /// The finish chunk, the usage chunk when asked for, and `[DONE]`.
    fn finish(&mut self, finish_reason: &str) {
        let chunk = self.chunk(json!({}), Value::from(finish_reason));
        self.data(chunk);
        if self.ctx.include_usage && self.usage {
            let reasoning = (self.reasoning_chars as u64).div_ceil(4);
            let completion = (self.output_chars as u64).div_ceil(4) + reasoning;
            let usage = json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.ctx.created_at,
                "model": self.ctx.model,
                "choices": [],
                "usage": {
                    "prompt_tokens": self.ctx.input_tokens,
                    "completion_tokens": completion,
                    "total_tokens": self.ctx.input_tokens + completion,
                    "prompt_tokens_details": { "cached_tokens": 0 },
                    "completion_tokens_details": { "reasoning_tokens": reasoning },
                },
            });
            self.data(usage);
        }
        self.sse.steps.push(Step::Event("data: [DONE]\n\n".to_string()));
    }
}
