//! Turning the Responses API's server-sent events into text deltas and finished output items.

use serde_json::Value;

use super::retry::{classify, AttemptError};
use super::{ModelEvent, ModelResponse};

/// What the stream's events add up to so far, for one attempt.
#[derive(Debug, Default)]
pub(crate) struct ResponseAccumulator {
    /// (output_index, arrival order, item)
    items: Vec<(u64, usize, Value)>,
}

/// What to do after one event.
#[derive(Debug)]
pub(crate) enum Step {
    Continue,
    Done(ModelResponse),
}

/// Parses a whole SSE body as a response stream is parsed (split into
/// uneven chunks, as a network delivers it): `Ok(None)` when it ends without
/// a terminal event. For fuzzing and tests.
pub fn parse_sse_body(bytes: &[u8], chunk: usize) -> Result<Option<ModelResponse>, String> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = bytes.chunks(chunk.max(1)).map(|c| Ok(c.to_vec())).collect();
    let mut events = futures::stream::iter(chunks).eventsource();
    let mut accumulator = ResponseAccumulator::default();
    futures::executor::block_on(async {
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| e.to_string())?;
            match accumulator.handle(&event.event, &event.data, &mut |_| {}) {
                Ok(Step::Continue) => {}
                Ok(Step::Done(response)) => return Ok(Some(response)),
                Err(e) => return Err(format!("{e:?}")),
            }
        }
        Ok(None)
    })
}

/// One server-sent event as the model client sees it: its `event:` field
/// (`message` when there is none) and its data lines joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Parses a whole SSE body into its events as a response stream is parsed
/// (split into chunks of `chunk` bytes), without reading the events' JSON.
/// For benchmarks and tests.
pub fn parse_sse_events(bytes: &[u8], chunk: usize) -> Result<Vec<SseEvent>, String> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = bytes.chunks(chunk.max(1)).map(|c| Ok(c.to_vec())).collect();
    let mut events = futures::stream::iter(chunks).eventsource();
    futures::executor::block_on(async {
        let mut parsed = Vec::new();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| e.to_string())?;
            parsed.push(SseEvent { event: event.event, data: event.data });
        }
        Ok(parsed)
    })
}

impl ResponseAccumulator {
    /// Handles one SSE event. `event_name` is the SSE `event:` field (used only when the JSON
    /// has no `type`), `data` its data. Unknown event types are ignored.
    pub(crate) fn handle(
        &mut self,
        event_name: &str,
        data: &str,
        on_event: &mut dyn FnMut(ModelEvent<'_>),
    ) -> Result<Step, AttemptError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Step::Continue);
        }
        let json: Value = match serde_json::from_str(data) {
            Ok(json) => json,
            Err(err) => {
                tracing::debug!(event = event_name, error = %err, len = data.len(), "unparseable SSE data from the model");
                return Err(AttemptError::retryable(format!(
                    "The model service sent an unreadable event ({event_name}): {err}"
                )));
            }
        };
        let kind = json.get("type").and_then(Value::as_str).unwrap_or(event_name);
        match kind {
            "response.output_text.delta" => {
                if let Some(delta) = json.get("delta").and_then(Value::as_str) {
                    if !delta.is_empty() {
                        on_event(ModelEvent::TextDelta(delta));
                    }
                }
                Ok(Step::Continue)
            }
            "response.output_item.done" => {
                let Some(item) = json.get("item") else {
                    tracing::debug!("response.output_item.done without an item; ignored");
                    return Ok(Step::Continue);
                };
                let order = self.items.len();
                let index = json.get("output_index").and_then(Value::as_u64).unwrap_or(order as u64);
                self.items.push((index, order, item.clone()));
                Ok(Step::Continue)
            }
            "response.completed" => Ok(Step::Done(self.finish(&json, None))),
            "response.incomplete" => {
                let reason = json
                    .pointer("/response/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_string();
                Ok(Step::Done(self.finish(&json, Some(reason))))
            }
            "response.failed" => {
                let error = json.pointer("/response/error");
                Err(event_error(error))
            }
            "error" => {
                // A bare error event carries code/message at the top level; tolerate a nested `error`.
                let error = match json.get("error") {
                    Some(nested) if nested.is_object() => Some(nested),
                    _ => Some(&json),
                };
                Err(event_error(error))
            }
            _ => Ok(Step::Continue),
        }
    }

    /// The finished response. Items come from `response.output_item.done` in output_index
    /// order; if a (compatible) server sent none, the terminal event's `response.output` is used.
    fn finish(&mut self, terminal: &Value, incomplete: Option<String>) -> ModelResponse {
        let mut items = std::mem::take(&mut self.items);
        items.sort_by_key(|(index, order, _)| (*index, *order));
        let mut items: Vec<Value> = items.into_iter().map(|(_, _, item)| item).collect();
        if items.is_empty() {
            if let Some(output) = terminal.pointer("/response/output").and_then(Value::as_array) {
                items = output.clone();
            }
        }
        ModelResponse { items, incomplete }
    }
}

fn event_error(error: Option<&Value>) -> AttemptError {
    let code = error.and_then(|e| e.get("code")).and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_string);
    let message = error.and_then(|e| e.get("message")).and_then(Value::as_str).unwrap_or("");
    classify(None, code, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelError;
    use serde_json::json;

    fn feed(acc: &mut ResponseAccumulator, events: &[Value], texts: &mut Vec<String>) -> Result<Step, AttemptError> {
        let mut last = Ok(Step::Continue);
        for event in events {
            let name = event["type"].as_str().unwrap_or("message").to_string();
            let mut on_event = |e: ModelEvent<'_>| {
                if let ModelEvent::TextDelta(t) = e {
                    texts.push(t.to_string());
                }
            };
            last = acc.handle(&name, &event.to_string(), &mut on_event);
            if !matches!(last, Ok(Step::Continue)) {
                break;
            }
        }
        last
    }

    #[test]
    fn unknown_event_types_and_done_sentinel_are_ignored() {
        let mut acc = ResponseAccumulator::default();
        let mut calls = 0;
        let mut on_event = |_: ModelEvent<'_>| calls += 1;
        let step = acc.handle(
            "response.brand_new_thing",
            r#"{"type":"response.brand_new_thing","sequence_number":3,"obfuscation":"x","whatever":{"a":1}}"#,
            &mut on_event,
        );
        assert!(matches!(step, Ok(Step::Continue)));
        let step = acc.handle("message", "[DONE]", &mut on_event);
        assert!(matches!(step, Ok(Step::Continue)));
        let step = acc.handle(
            "response.reasoning_summary_text.delta",
            r#"{"type":"response.reasoning_summary_text.delta","delta":"hm"}"#,
            &mut on_event,
        );
        assert!(matches!(step, Ok(Step::Continue)));
        assert_eq!(calls, 0);
        assert!(acc.items.is_empty());
    }

    #[test]
    fn items_are_ordered_by_output_index() {
        let mut acc = ResponseAccumulator::default();
        let mut texts = Vec::new();
        let step = feed(
            &mut acc,
            &[
                json!({"type":"response.output_text.delta","output_index":1,"delta":"Hi"}),
                json!({"type":"response.output_item.done","output_index":1,"item":{"type":"message","id":"msg_1"}}),
                json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","encrypted_content":"enc"}}),
                json!({"type":"response.completed","response":{"status":"completed","output":[]}}),
            ],
            &mut texts,
        );
        let Ok(Step::Done(response)) = step else { panic!("{step:?}") };
        assert_eq!(texts, vec!["Hi"]);
        assert_eq!(response.items[0]["type"], "reasoning");
        assert_eq!(response.items[1]["type"], "message");
        assert_eq!(response.incomplete, None);
    }

    #[test]
    fn completed_output_is_a_fallback_when_no_item_events_came() {
        let mut acc = ResponseAccumulator::default();
        let step = feed(
            &mut acc,
            &[json!({"type":"response.completed","response":{"output":[{"type":"message","id":"m"}]}})],
            &mut Vec::new(),
        );
        let Ok(Step::Done(response)) = step else { panic!("{step:?}") };
        assert_eq!(response.items.len(), 1);
    }

    #[test]
    fn incomplete_and_failures() {
        let mut acc = ResponseAccumulator::default();
        let step = feed(
            &mut acc,
            &[json!({"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"}}})],
            &mut Vec::new(),
        );
        let Ok(Step::Done(response)) = step else { panic!("{step:?}") };
        assert_eq!(response.incomplete.as_deref(), Some("max_output_tokens"));

        let failed = |code: &str| {
            feed(
                &mut ResponseAccumulator::default(),
                &[json!({"type":"response.failed","response":{"error":{"code":code,"message":"m"}}})],
                &mut Vec::new(),
            )
        };
        assert!(matches!(failed("rate_limit_exceeded"), Err(AttemptError::Retryable { .. })));
        assert!(matches!(failed("server_error"), Err(AttemptError::Retryable { .. })));
        assert!(matches!(failed("context_length_exceeded"), Err(AttemptError::Fatal(ModelError::Fatal { .. }))));
        let bare = feed(
            &mut ResponseAccumulator::default(),
            &[json!({"type":"error","code":"insufficient_quota","message":"no money","param":null})],
            &mut Vec::new(),
        );
        assert!(matches!(bare, Err(AttemptError::Fatal(ModelError::Fatal { .. }))));
        let no_code =
            feed(&mut ResponseAccumulator::default(), &[json!({"type":"error","message":"hiccup"})], &mut Vec::new());
        assert!(matches!(no_code, Err(AttemptError::Retryable { .. })));
    }

    #[test]
    fn unparseable_data_is_a_retryable_stream_failure() {
        let mut acc = ResponseAccumulator::default();
        let step = acc.handle("response.output_text.delta", "{not json", &mut |_| {});
        assert!(matches!(step, Err(AttemptError::Retryable { .. })));
    }
}
