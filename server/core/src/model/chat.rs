//! The Chat Completions provider: `POST {base}/chat/completions` with `stream: true`, as local
//! and self-hosted servers speak it (llama.cpp's server, vLLM, LM Studio, Ollama, gateways).
//!
//! Mino's journal stays provider-neutral: it holds Responses API output items, and the model
//! input is replayed from them as Responses API input items. This module translates both ways:
//!
//! - [`chat_messages`]: replayed input items → Chat Completions `messages`. A response's assistant
//!   output (text and `function_call` items, in any order) folds into one assistant message
//!   with `tool_calls`; each `function_call_output` becomes a `tool` message with its
//!   `tool_call_id`. Reasoning items are dropped: an `encrypted_content` blob can only be read
//!   by the service that made it, and Chat Completions has no standard field to send reasoning
//!   back (servers that stream `reasoning_content` do not expect it in the next request).
//! - [`ChatAccumulator`]: the streamed chunks → the output items the Responses client returns:
//!   a `reasoning` item (its text as a `reasoning_text` part, no `encrypted_content`, so replay
//!   leaves it out as it leaves out any reasoning item without one), a `message` with
//!   `output_text`, and one `function_call` per tool call, with `call_id`, `name`, `arguments`.
//!
//! Retries, errors, the SSE parser and its 64 MiB event bound are the Responses client's own.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::request::{bash_tool, BASH_DESCRIPTION};
use super::retry::{classify, AttemptError};
use super::sse::Step;
use super::{ModelEvent, ModelRequest, ModelResponse, Usage};

/// [`ModelResponse::incomplete`] for a Chat Completions answer that stopped
/// with `finish_reason: "length"`: the prompt and the answer filled the
/// context window (no output limit was sent), which the turn treats as the
/// service refusing the request as too long.
pub const CONTEXT_WINDOW_FULL: &str = "context_window";

/// The `bash` tool in the Chat Completions shape: `{"type":"function","function":{…}}`, with the
/// same name, description, parameters and `strict` as the Responses definition.
pub fn chat_bash_tool() -> Value {
    let flat = bash_tool();
    debug_assert_eq!(flat["description"], BASH_DESCRIPTION);
    chat_tool(&flat)
}

/// One flat Responses tool definition in the Chat Completions shape.
pub fn chat_tool(flat: &Value) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": flat["name"],
            "description": flat["description"],
            "strict": flat["strict"],
            "parameters": flat["parameters"],
        }
    })
}

/// Every tool of [`super::request::tools`], in the Chat Completions shape.
pub fn chat_tools() -> Vec<Value> {
    super::request::tools().iter().map(chat_tool).collect()
}

/// The exact JSON body for one request: the fields of
/// [`super::servers::REQUEST_FIELDS`], each accepted by every server family.
pub(crate) fn body(model: &str, request: &ModelRequest<'_>) -> Value {
    json!({
        "model": model,
        "messages": chat_messages(request.instructions, request.input),
        "tools": chat_tools(),
        "parallel_tool_calls": true,
        "stream": true,
        "stream_options": { "include_usage": true },
    })
}

/// Translates replayed Responses API input items into Chat Completions `messages`, the
/// instructions first as the `system` message. See the module documentation for the rules;
/// items of unknown types are left out, as the Responses replay leaves out what it cannot send.
pub fn chat_messages(instructions: &str, input: &[Value]) -> Vec<Value> {
    let mut messages = Vec::with_capacity(input.len() + 1);
    if !instructions.is_empty() {
        messages.push(json!({ "role": "system", "content": instructions }));
    }
    // Whether the last message is assistant output that later output of the same response
    // may join (no user or tool message came after it).
    let mut assistant_open = false;
    for item in input {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
        match kind {
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
                let text = content_text(item.get("content"));
                match role {
                    "assistant" => {
                        if assistant_open {
                            if let Some(last) = messages.last_mut() {
                                append_content(last, &text);
                                continue;
                            }
                        }
                        messages.push(json!({ "role": "assistant", "content": text }));
                        assistant_open = true;
                    }
                    "system" | "developer" => {
                        messages.push(json!({ "role": "system", "content": text }));
                        assistant_open = false;
                    }
                    _ => {
                        let content = match user_parts(item.get("content")) {
                            Some(parts) => Value::Array(parts),
                            None => Value::String(text),
                        };
                        messages.push(json!({ "role": "user", "content": content }));
                        assistant_open = false;
                    }
                }
            }
            "function_call" => {
                let text = |field: &str| match item.get(field) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                let call = json!({
                    "id": text("call_id"),
                    "type": "function",
                    "function": { "name": text("name"), "arguments": text("arguments") },
                });
                if !assistant_open {
                    messages.push(json!({ "role": "assistant", "content": null }));
                    assistant_open = true;
                }
                if let Some(Value::Object(last)) = messages.last_mut() {
                    match last.get_mut("tool_calls") {
                        Some(Value::Array(calls)) => calls.push(call),
                        _ => {
                            last.insert("tool_calls".into(), json!([call]));
                        }
                    }
                }
            }
            "function_call_output" => {
                let output = match item.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": item.get("call_id").cloned().unwrap_or(Value::Null),
                    "content": output,
                }));
                assistant_open = false;
            }
            // Reasoning (see the module documentation) and anything unknown.
            _ => {}
        }
    }
    messages
}

/// A user message's content as Chat Completions parts, when it carries an
/// image (`input_image` becomes an `image_url` part with the same `data:`
/// URL; text parts become `text` parts, in order); `None` for text alone,
/// which is sent as a plain string as before.
fn user_parts(content: Option<&Value>) -> Option<Vec<Value>> {
    let parts = content?.as_array()?;
    if !parts.iter().any(|p| p.get("type").and_then(Value::as_str) == Some("input_image")) {
        return None;
    }
    Some(
        parts
            .iter()
            .filter_map(|part| match part.get("type").and_then(Value::as_str)? {
                "input_image" => Some(json!({
                    "type": "image_url",
                    "image_url": { "url": part.get("image_url")?.as_str()? },
                })),
                "input_text" | "text" => Some(json!({ "type": "text", "text": part.get("text")?.as_str()? })),
                _ => None,
            })
            .collect(),
    )
}

/// The text of a message's `content`: a string as is, or its text parts (`input_text`,
/// `output_text`, `text`, and a `refusal`'s words) joined by blank lines.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|part| match part.get("type").and_then(Value::as_str)? {
                    "input_text" | "output_text" | "text" => part.get("text")?.as_str(),
                    "refusal" => part.get("refusal")?.as_str(),
                    _ => None,
                })
                .collect();
            texts.join("\n\n")
        }
        _ => String::new(),
    }
}

/// Adds `text` to an assistant message's content (null when it only had tool calls).
fn append_content(message: &mut Value, text: &str) {
    if text.is_empty() {
        return;
    }
    let joined = match message.get("content").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing}\n\n{text}"),
        _ => text.to_string(),
    };
    message["content"] = Value::String(joined);
}

/// One tool call as its deltas arrive: id and name first, the arguments in pieces.
#[derive(Debug, Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

/// What a chat completion's chunks add up to so far, for one attempt.
#[derive(Debug, Default)]
pub(crate) struct ChatAccumulator {
    text: String,
    refusal: String,
    reasoning: String,
    /// Tool calls by their `index`.
    calls: BTreeMap<u64, PendingCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl ChatAccumulator {
    /// One SSE event's data. Chunks are `chat.completion.chunk` objects; `[DONE]` ends the
    /// stream; a chunk with an `error` object is the server failing mid-stream.
    pub(crate) fn handle(
        &mut self,
        data: &str,
        on_event: &mut dyn FnMut(ModelEvent<'_>),
    ) -> Result<Step, AttemptError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        if data == "[DONE]" {
            return match self.finish() {
                Some(response) => Ok(Step::Done(response)),
                None => Err(AttemptError::retryable(
                    "The model's stream ended ([DONE]) before any choice had a finish_reason",
                )),
            };
        }
        let chunk: Value = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(err) => {
                tracing::debug!(error = %err, len = data.len(), "unparseable chat completion chunk from the model");
                return Err(AttemptError::retryable(format!(
                    "The model service sent an unreadable chat completion chunk: {err}"
                )));
            }
        };
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(chunk_error(error));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage::from_chat(usage));
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(Step::Continue);
        };
        // Mino asks for one choice; any other index is not its answer.
        for choice in choices.iter().filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0) {
            if let Some(delta) = choice.get("delta") {
                self.delta(delta, on_event);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
            }
        }
        Ok(Step::Continue)
    }

    fn delta(&mut self, delta: &Value, on_event: &mut dyn FnMut(ModelEvent<'_>)) {
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.text.push_str(text);
                on_event(ModelEvent::TextDelta(text));
            }
        }
        if let Some(refusal) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.push_str(refusal);
        }
        // `reasoning_content` (llama.cpp, vLLM, DeepSeek) or `reasoning` (Ollama, gateways).
        // Kept, not streamed: the Responses client does not stream reasoning either.
        for field in ["reasoning_content", "reasoning"] {
            if let Some(reasoning) = delta.get(field).and_then(Value::as_str) {
                self.reasoning.push_str(reasoning);
            }
        }
        let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else { return };
        for call in calls {
            // `index` joins the pieces of one call; a server that leaves it out sends each call
            // whole, so each such call is a new one.
            let index = match call.get("index").and_then(Value::as_u64) {
                Some(index) => index,
                None => self.calls.keys().next_back().map_or(0, |last| last.saturating_add(1)),
            };
            let pending = self.calls.entry(index).or_default();
            if let Some(id) = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
                pending.id = id.to_string();
            }
            if let Some(function) = call.get("function") {
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    // Most servers send the name once; a few repeat it whole on every piece.
                    if pending.name != name {
                        pending.name.push_str(name);
                    }
                }
                if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                    pending.arguments.push_str(arguments);
                }
            }
        }
    }

    /// The end of the stream without `[DONE]`: finished if a finish_reason came (some servers
    /// close the connection instead of sending the sentinel), else None (a cut stream).
    pub(crate) fn at_end(&mut self) -> Option<ModelResponse> {
        self.finish()
    }

    /// The finished response, in Responses API output items. `finish_reason` maps to Mino's
    /// ends: `stop` and `tool_calls` complete the response; `length` is cut short by a full
    /// context window ([`CONTEXT_WINDOW_FULL`]: Mino sends no output limit, so the only
    /// limit a `length` stop can have met is the window) and keeps only calls whose
    /// arguments are whole JSON; `content_filter` is cut short (`content_filter`) without
    /// any call, as a refusal.
    fn finish(&mut self) -> Option<ModelResponse> {
        let reason = self.finish_reason.take()?;
        let incomplete = match reason.as_str() {
            "length" => Some(CONTEXT_WINDOW_FULL.to_string()),
            "content_filter" => Some("content_filter".to_string()),
            _ => None,
        };
        let mut items = Vec::new();
        if !self.reasoning.is_empty() {
            items.push(json!({
                "type": "reasoning",
                "summary": [],
                "content": [{ "type": "reasoning_text", "text": std::mem::take(&mut self.reasoning) }],
            }));
        }
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(json!({ "type": "output_text", "text": std::mem::take(&mut self.text), "annotations": [] }));
        }
        if !self.refusal.is_empty() {
            content.push(json!({ "type": "refusal", "refusal": std::mem::take(&mut self.refusal) }));
        }
        if !content.is_empty() {
            let status = if incomplete.is_some() { "incomplete" } else { "completed" };
            items.push(json!({ "type": "message", "role": "assistant", "status": status, "content": content }));
        }
        for (_, call) in std::mem::take(&mut self.calls) {
            let keep = match reason.as_str() {
                "content_filter" => false,
                "length" => serde_json::from_str::<Map<String, Value>>(&call.arguments).is_ok(),
                _ => true,
            };
            if !keep {
                tracing::warn!(finish_reason = %reason, name = %call.name, "a tool call of a cut-short answer is left out");
                continue;
            }
            // Mino needs a call id to pair the result with the call; a server that sends none
            // gets one made up, unique enough for one conversation.
            let call_id = if call.id.is_empty() { format!("call_{:016x}", fastrand::u64(..)) } else { call.id };
            items.push(json!({
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": call.name,
                "arguments": call.arguments,
            }));
        }
        Some(ModelResponse { items, incomplete, usage: self.usage.take() })
    }
}

/// An `error` object inside the stream (`{"error":{"message","type","code"}}`); servers put
/// either an OpenAI code string or an HTTP status number in `code`.
fn chunk_error(error: &Value) -> AttemptError {
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    match error.get("code") {
        Some(Value::Number(n)) => {
            let status = n.as_u64().and_then(|n| u16::try_from(n).ok()).filter(|s| (400..600).contains(s));
            match status {
                Some(status) => classify(Some(status), None, message, None),
                None => classify(None, None, message, None),
            }
        }
        Some(Value::String(code)) if !code.is_empty() => classify(None, Some(code.clone()), message, None),
        _ => classify(None, None, message, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(chunks: &[Value]) -> (Result<Step, AttemptError>, Vec<String>) {
        let mut acc = ChatAccumulator::default();
        let mut texts = Vec::new();
        let mut last = Ok(Step::Continue);
        for chunk in chunks {
            let mut on_event = |e: ModelEvent<'_>| {
                if let ModelEvent::TextDelta(t) = e {
                    texts.push(t.to_string());
                }
            };
            last = acc.handle(&chunk.to_string(), &mut on_event);
        }
        if matches!(last, Ok(Step::Continue)) {
            last = acc.handle("[DONE]", &mut |_| {});
        }
        (last, texts)
    }

    #[test]
    fn reasoning_is_kept_as_an_item_and_not_streamed() {
        let (step, texts) = feed(&[
            json!({"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Think"}}]}),
            json!({"choices":[{"index":0,"delta":{"reasoning":"ing."}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}),
        ]);
        let Ok(Step::Done(response)) = step else { panic!("{step:?}") };
        assert_eq!(texts, vec!["Hi"]);
        assert_eq!(response.items[0]["type"], "reasoning");
        assert_eq!(response.items[0]["content"][0]["text"], "Thinking.");
        assert!(response.items[0].get("encrypted_content").is_none());
        assert_eq!(response.items[1]["content"][0]["text"], "Hi");
    }

    #[test]
    fn content_filter_drops_calls_and_is_cut_short() {
        let (step, _) = feed(&[json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":0,"id":"call_1","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}
        ]},"finish_reason":"content_filter"}]})]);
        let Ok(Step::Done(response)) = step else { panic!("{step:?}") };
        assert_eq!(response.incomplete.as_deref(), Some("content_filter"));
        assert!(response.items.is_empty(), "{:?}", response.items);
    }

    #[test]
    fn length_keeps_only_calls_with_whole_arguments() {
        let (step, _) = feed(&[
            json!({"choices":[{"index":0,"delta":{"tool_calls":[
                {"index":0,"id":"call_1","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},
                {"index":1,"id":"call_2","function":{"name":"bash","arguments":"{\"command\":\"rm -"}}
            ]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}),
        ]);
        let Ok(Step::Done(response)) = step else { panic!("{step:?}") };
        assert_eq!(response.incomplete.as_deref(), Some(CONTEXT_WINDOW_FULL));
        assert_eq!(response.items.len(), 1, "{:?}", response.items);
        assert_eq!(response.items[0]["call_id"], "call_1");
    }

    #[test]
    fn a_stream_closed_after_its_finish_reason_is_finished() {
        let mut acc = ChatAccumulator::default();
        assert!(acc.at_end().is_none(), "no finish_reason yet: a cut stream");
        let chunk = json!({"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]});
        assert!(matches!(acc.handle(&chunk.to_string(), &mut |_| {}), Ok(Step::Continue)));
        let response = acc.at_end().expect("finished without [DONE]");
        assert_eq!(response.items.len(), 1);
        assert_eq!(response.incomplete, None);
    }

    #[test]
    fn calls_without_index_or_id_are_still_calls() {
        let (step, _) = feed(&[
            json!({"choices":[{"index":0,"delta":{"tool_calls":[
                {"function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},
                {"function":{"name":"bash","arguments":"{\"command\":\"pwd\"}"}}
            ]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        ]);
        let Ok(Step::Done(response)) = step else { panic!("{step:?}") };
        assert_eq!(response.items.len(), 2);
        assert!(response.items[0]["call_id"].as_str().is_some_and(|id| id.starts_with("call_")));
        assert_ne!(response.items[0]["call_id"], response.items[1]["call_id"]);
        assert_eq!(response.items[1]["arguments"], "{\"command\":\"pwd\"}");
    }

    #[test]
    fn errors_in_the_stream_are_classified() {
        let retryable = ChatAccumulator::default()
            .handle(r#"{"error":{"message":"overloaded","type":"server_error","code":503}}"#, &mut |_| {});
        assert!(matches!(retryable, Err(AttemptError::Retryable { .. })), "{retryable:?}");
        let fatal = ChatAccumulator::default()
            .handle(r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#, &mut |_| {});
        assert!(matches!(fatal, Err(AttemptError::Fatal(_))), "{fatal:?}");
        let early = ChatAccumulator::default().handle("[DONE]", &mut |_| {});
        assert!(matches!(early, Err(AttemptError::Retryable { .. })), "{early:?}");
    }

    #[test]
    fn the_tool_keeps_the_responses_definition() {
        let tool = chat_bash_tool();
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["name"], "bash");
        assert_eq!(tool["function"]["parameters"], bash_tool()["parameters"]);
        assert_eq!(tool["function"]["strict"], true);
    }

    #[test]
    fn the_edit_tools_are_offered_in_the_chat_shape_too() {
        let names: Vec<Value> = chat_tools().iter().map(|t| t["function"]["name"].clone()).collect();
        assert_eq!(
            names,
            vec![
                json!("bash"),
                json!("edit_file"),
                json!("write_file"),
                json!("read_file"),
                json!("list_files"),
                json!("search")
            ]
        );
        let edit = &chat_tools()[1];
        assert_eq!(edit["function"]["parameters"], crate::edit::edit_file_tool()["parameters"]);
        assert_eq!(edit["function"]["strict"], true);
    }
}
