//! Turning the Responses API's server-sent events into text deltas and finished output items.
//!
//! The event stream is parsed by `sse-stream`, which scans each byte once however the
//! network splits a line (the parser it replaced re-scanned its whole buffer on every chunk,
//! so one event of a few MB on a single line cost seconds to tens of seconds of CPU). Its
//! buffers are bounded here: more than [`MAX_EVENT_BYTES`] without a complete event fails
//! the stream.

use std::convert::Infallible;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Buf;
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::retry::{classify, AttemptError};
use super::{ModelEvent, ModelResponse, Usage};

/// The most a response stream may carry between two events (so, the largest event):
/// 64 MiB. A model event is one text delta or one finished output item; the largest
/// expected are a few MB. Past this the stream fails rather than letting memory grow
/// without bound.
pub const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// One server-sent event as the model client sees it: its `event:` field
/// (`message` when there is none) and its data lines joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Why an event stream stopped short.
#[derive(Debug)]
pub(crate) enum SseError<E> {
    /// The bytes under the parser failed (network, stall).
    Transport(E),
    /// More than `limit` bytes arrived without completing an event.
    TooLarge { limit: usize },
    /// Not a readable event stream (e.g. a field that is not UTF-8).
    Malformed(String),
}

/// What the bounded byte stream under the parser yields as its error.
#[derive(Debug)]
enum Bounded<E> {
    Transport(E),
    TooLarge,
}

impl<E: fmt::Display> fmt::Display for Bounded<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bounded::Transport(err) => err.fmt(f),
            Bounded::TooLarge => f.write_str("event too large"),
        }
    }
}

impl<E: std::error::Error> std::error::Error for Bounded<E> {}

/// The events of an SSE byte stream. Blocks without data (the spec dispatches no event for
/// them) are skipped. Fails with [`SseError::TooLarge`] once more than `limit` bytes have
/// arrived since the last complete block (counted as chunks arrive, so the parser never holds
/// more than `limit` plus one chunk). After an error the stream ends.
pub(crate) fn sse_events<S, B, E>(bytes: S, limit: usize) -> impl Stream<Item = Result<SseEvent, SseError<E>>>
where
    S: Stream<Item = Result<B, E>>,
    B: Buf,
    E: std::error::Error + Send + Sync + 'static,
{
    // Shared between the counting layer below the parser and the reset above it.
    let since_block = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&since_block);
    let bounded = bytes.map(move |chunk| {
        let chunk = chunk.map_err(Bounded::Transport)?;
        let seen = counted.fetch_add(chunk.remaining(), Ordering::Relaxed).saturating_add(chunk.remaining());
        if seen > limit {
            return Err(Bounded::TooLarge);
        }
        Ok(chunk)
    });
    sse_stream::SseByteStream::new(bounded).filter_map(move |block| {
        let item = match block {
            Ok(block) => {
                since_block.store(0, Ordering::Relaxed);
                block.data.map(|data| {
                    let event = block.event.filter(|name| !name.is_empty()).unwrap_or_else(|| "message".to_string());
                    Ok(SseEvent { event, data })
                })
            }
            Err(sse_stream::Error::Body(err)) => Some(Err(match err.downcast::<Bounded<E>>() {
                Ok(bounded) => match *bounded {
                    Bounded::Transport(err) => SseError::Transport(err),
                    Bounded::TooLarge => SseError::TooLarge { limit },
                },
                Err(other) => SseError::Malformed(other.to_string()),
            })),
            Err(other) => Some(Err(SseError::Malformed(other.to_string()))),
        };
        futures::future::ready(item)
    })
}

/// A whole body as a stream of `chunk`-byte pieces, as a network delivers it.
fn chunked(bytes: &[u8], chunk: usize) -> impl Stream<Item = Result<&[u8], Infallible>> {
    futures::stream::iter(bytes.chunks(chunk.max(1)).map(Ok))
}

fn describe<E: fmt::Display>(err: SseError<E>) -> String {
    match err {
        SseError::Transport(err) => err.to_string(),
        SseError::TooLarge { limit } => format!("more than {limit} bytes without a complete event"),
        SseError::Malformed(err) => err,
    }
}

/// Parses a whole SSE body into its events as a response stream is parsed
/// (split into chunks of `chunk` bytes), without reading the events' JSON.
/// For benchmarks and tests.
pub fn parse_sse_events(bytes: &[u8], chunk: usize) -> Result<Vec<SseEvent>, String> {
    futures::executor::block_on(async {
        let mut events = std::pin::pin!(sse_events(chunked(bytes, chunk), MAX_EVENT_BYTES));
        let mut parsed = Vec::new();
        while let Some(event) = events.next().await {
            parsed.push(event.map_err(describe)?);
        }
        Ok(parsed)
    })
}

/// Parses a whole SSE body as a response stream is parsed (split into
/// uneven chunks, as a network delivers it): `Ok(None)` when it ends without
/// a terminal event. For fuzzing and tests.
pub fn parse_sse_body(bytes: &[u8], chunk: usize) -> Result<Option<ModelResponse>, String> {
    let mut accumulator = ResponseAccumulator::default();
    futures::executor::block_on(async {
        let mut events = std::pin::pin!(sse_events(chunked(bytes, chunk), MAX_EVENT_BYTES));
        while let Some(event) = events.next().await {
            let event = event.map_err(describe)?;
            match accumulator.handle(&event.event, &event.data, &mut |_| {}) {
                Ok(Step::Continue) => {}
                Ok(Step::Done(response)) => return Ok(Some(response)),
                Err(e) => return Err(format!("{e:?}")),
            }
        }
        Ok(None)
    })
}

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
                    .unwrap_or("no reason given")
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
        let usage = terminal.pointer("/response/usage").filter(|u| u.is_object()).map(Usage::from_responses);
        ModelResponse { items, incomplete, usage }
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

    /// Every shape the parser takes apart: a byte order mark, comments, `\n`, `\r\n` and `\r`
    /// line ends, `event:` and `id:` fields, data continuation lines (one with a second
    /// leading space, which is data), a `data` field without a colon, multi-byte UTF-8, a
    /// block without data (no event), an empty event name, and a final block the stream cuts
    /// off (dropped).
    const MIXED: &[u8] = b"\xEF\xBB\xBF: a comment first\n\
        event: response.output_text.delta\r\n\
        id: 7\r\n\
        data: {\"type\":\"response.output_text.delta\",\r\n\
        data:  \"delta\":\"h\xC3\xA9llo \xE2\x9C\x93\"}\r\n\
        \r\n\
        :keep-alive\r\r\
        data:second\rdata\r\r\
        event: metadata only\n\n\
        event: \ndata: x\n\n\
        data: cut off";

    fn mixed_events() -> Vec<SseEvent> {
        let event = |event: &str, data: &str| SseEvent { event: event.into(), data: data.into() };
        vec![
            event(
                "response.output_text.delta",
                "{\"type\":\"response.output_text.delta\",\n \"delta\":\"h\u{e9}llo \u{2713}\"}",
            ),
            event("message", "second\n"),
            event("message", "x"),
        ]
    }

    /// The events of `chunks` fed one after another, with a bound of `limit` bytes.
    fn events_of(chunks: &[&[u8]], limit: usize) -> Vec<Result<SseEvent, SseError<Infallible>>> {
        let stream = futures::stream::iter(chunks.iter().copied().map(Ok::<_, Infallible>));
        futures::executor::block_on(sse_events(stream, limit).collect())
    }

    fn ok(events: Vec<Result<SseEvent, SseError<Infallible>>>) -> Vec<SseEvent> {
        events.into_iter().map(|event| event.expect("an event")).collect()
    }

    #[test]
    fn every_two_way_split_gives_the_same_events() {
        assert_eq!(ok(events_of(&[MIXED], MAX_EVENT_BYTES)), mixed_events());
        for at in 0..=MIXED.len() {
            let (head, tail) = MIXED.split_at(at);
            assert_eq!(ok(events_of(&[head, tail], MAX_EVENT_BYTES)), mixed_events(), "split at byte {at}");
        }
    }

    #[test]
    fn byte_by_byte_gives_the_same_events() {
        let bytes: Vec<&[u8]> = MIXED.chunks(1).collect();
        assert_eq!(ok(events_of(&bytes, MAX_EVENT_BYTES)), mixed_events());
        assert_eq!(parse_sse_events(MIXED, 1), Ok(mixed_events()));
    }

    /// A whole response stream whose one text delta is `text`, on a single line.
    fn one_delta_stream(text: &str) -> Vec<u8> {
        let delta = json!({"type": "response.output_text.delta", "output_index": 0, "delta": text});
        let done = json!({"type": "response.completed", "response": {"output": [{"type": "message", "id": "m"}]}});
        format!("event: response.output_text.delta\ndata: {delta}\n\nevent: response.completed\ndata: {done}\n\n")
            .into_bytes()
    }

    #[test]
    fn a_4_mb_single_line_event_parses() {
        let text = "Sixteen bytes \u{2713}".repeat(4 * 1024 * 1024 / 16);
        let stream = one_delta_stream(&text);
        let events = parse_sse_events(&stream, 16 * 1024).expect("parses");
        assert_eq!(events.len(), 2);
        let delta: Value = serde_json::from_str(&events[0].data).expect("json");
        assert_eq!(delta["delta"].as_str(), Some(text.as_str()));
        let response = parse_sse_body(&stream, 16 * 1024).expect("parses").expect("completed");
        assert_eq!(response.items.len(), 1);
    }

    #[test]
    fn an_event_over_the_bound_fails_the_stream() {
        let line = format!("data: {}\n\n", "x".repeat(2000));
        let chunks: Vec<&[u8]> = line.as_bytes().chunks(100).collect();
        let events = events_of(&chunks, 1024);
        assert!(matches!(events.as_slice(), [Err(SseError::TooLarge { limit: 1024 })]), "{events:?}");
    }

    #[test]
    fn the_bound_is_per_event_not_per_stream() {
        let stream = "data: twenty bytes of data\n\n".repeat(400);
        let chunks: Vec<&[u8]> = stream.as_bytes().chunks(100).collect();
        let events = ok(events_of(&chunks, 1024));
        assert_eq!(events.len(), 400);
    }

    #[test]
    fn transport_errors_and_unreadable_bytes_end_the_stream() {
        let broken = futures::stream::iter([
            Ok(&b"data: a\n\n"[..]),
            Err(std::io::Error::other("connection reset")),
            Ok(&b"data: b\n\n"[..]),
        ]);
        let events: Vec<_> = futures::executor::block_on(sse_events(broken, MAX_EVENT_BYTES).collect());
        assert!(
            matches!(events.as_slice(), [Ok(SseEvent { data, .. }), Err(SseError::Transport(_))] if data == "a"),
            "{events:?}"
        );
        let events = events_of(&[b"data: \xFF\xFE\n\n", b"data: b\n\n"], MAX_EVENT_BYTES);
        assert!(matches!(events.as_slice(), [Err(SseError::Malformed(_))]), "{events:?}");
    }

    #[test]
    fn unparseable_data_is_a_retryable_stream_failure() {
        let mut acc = ResponseAccumulator::default();
        let step = acc.handle("response.output_text.delta", "{not json", &mut |_| {});
        assert!(matches!(step, Err(AttemptError::Retryable { .. })));
    }
}
