//! The model's `input`, rebuilt from the transcript for every request
//! (section 3 of the specification).
//!
//! - Completed turns enter as they were.
//! - Failed, cancelled and interrupted turns that contain tool calls enter
//!   with every call paired to its result, then a runtime notice.
//! - Turns that ended early without tool calls are left out: their partial
//!   text must not look like a final answer.
//! - The open turn (the one being run) enters as far as it has come.
//! - After a compaction, the input starts with the latest summary; of the
//!   turns it covers, only those kept verbatim ([`kept_verbatim`]:
//!   an `unknown`, `not_executed` or recovered result) follow it, whole;
//!   then every turn after it, as above.
//!
//! [`RequestCache`] writes the request body from these rules without
//! rebuilding the ended turns for every request.
//!
//! Output items are sent back without their ids (`store: false` would reject
//! them), reasoning items with their `encrypted_content`.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::calls::{item_call, ItemCall};
use crate::journal::record::ToolStatus;
use crate::model::BodyFrame;
use crate::transcript::{CallResult, Compaction, Transcript, Turn};

pub use crate::transcript::runtime_notice;

/// The `output` string of a `function_call_output`: `{"status":…,"output":…}`.
pub fn function_output(result: &CallResult) -> String {
    // Serialised straight from borrowed fields (no copy of the output into a
    // `Value` first), keys in the order Mino has always written them
    // (sorted, as a `Value` map wrote them before any dependency asked
    // serde_json to keep insertion order): the replayed text never changes.
    #[derive(Serialize)]
    struct FunctionOutput<'a> {
        output: &'a str,
        status: &'a str,
    }
    serde_json::to_string(&FunctionOutput { output: &result.output, status: result.status.as_str() })
        .unwrap_or_default()
}

pub fn user_message(text: &str) -> Value {
    json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": text }] })
}

/// The user's message of a turn: its text, then each of its images as an
/// `input_image` with a `data:` URL of the kept bytes (checked against the
/// recorded hash). An image that cannot be read becomes a runtime notice in
/// its place, so the model (and, through it, the person) hears that it is
/// missing, and the request is still sent.
fn turn_user_message(turn: &Turn, images_dir: Option<&std::path::Path>) -> Value {
    if turn.images.is_empty() {
        return user_message(&turn.input);
    }
    let mut content = Vec::with_capacity(turn.images.len() + 1);
    if !turn.input.is_empty() {
        content.push(json!({ "type": "input_text", "text": turn.input }));
    }
    for image in &turn.images {
        let read = match images_dir {
            Some(dir) => crate::images::read_checked(&crate::images::path_in(dir, image), image),
            None => Err("the session keeps no images".to_string()),
        };
        match read {
            Ok(bytes) => content.push(json!({
                "type": "input_image",
                "image_url": crate::images::data_url(&image.mime_type, &bytes),
                "detail": "auto",
            })),
            Err(why) => {
                tracing::warn!(turn_id = %turn.id, sha256 = %image.sha256, %why, "an image of the session cannot be sent");
                content.push(json!({ "type": "input_text", "text": crate::images::unavailable_notice(image, &why) }));
            }
        }
    }
    json!({ "type": "message", "role": "user", "content": content })
}

pub fn assistant_message(text: &str) -> Value {
    json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": text }] })
}

/// The text before the summary in the message that replaces the turns it covers.
pub const SUMMARY_PREFIX: &str = "Mino runtime notice: the earlier conversation was compacted. This is the \
summary you wrote of it. Turns whose tool results are unknown, not executed or recovered are not summarised: \
they follow verbatim.\n\n";

/// Whether a turn is replayed verbatim after any summary: it entered the
/// context, and one of its results is `unknown`, `not_executed` or was
/// written by recovery.
pub fn kept_verbatim(turn: &Turn) -> bool {
    turn.is_replayed()
        && turn.calls.iter().any(|call| {
            call.result
                .as_ref()
                .is_some_and(|r| r.recovered || matches!(r.status, ToolStatus::Unknown | ToolStatus::NotExecuted))
        })
}

/// The message that stands for the turns a compaction covers.
pub fn summary_message(summary: &str) -> Value {
    user_message(&format!("{SUMMARY_PREFIX}{summary}"))
}

/// Builds the whole `input` array.
pub fn build(transcript: &Transcript) -> Vec<Value> {
    build_through(transcript, transcript.turns.len())
}

/// The `input` array made of the first `end` turns only (the summary
/// request's conversation).
pub fn build_through(transcript: &Transcript, end: usize) -> Vec<Value> {
    let turns = &transcript.turns[..end.min(transcript.turns.len())];
    let mut input = Vec::new();
    let mut after = 0;
    if let Some(compaction) = transcript.compaction.as_ref().filter(|c| c.through < turns.len()) {
        input.push(summary_message(&compaction.summary));
        for (index, turn) in turns[..=compaction.through].iter().enumerate().filter(|(_, t)| kept_verbatim(t)) {
            append_turn_at(&mut input, transcript, index, turn);
        }
        after = compaction.through + 1;
    }
    for (index, turn) in turns.iter().enumerate().skip(after) {
        append_turn_at(&mut input, transcript, index, turn);
    }
    input.extend(rewind_notices(transcript, turns.len()));
    input
}

/// The runtime notices of the rewinds that ended when the transcript held
/// `index` turns: what the model reads before the turn at `index`.
fn rewind_notices(transcript: &Transcript, index: usize) -> impl Iterator<Item = Value> + '_ {
    transcript.rewinds.iter().filter(move |r| r.before_turn == index).map(|r| user_message(&crate::rewind::notice(r)))
}

/// The rewind notices due before turn `index`, then the turn, unless a
/// rewind took it back (it stays in history, out of the model's context).
fn append_turn_at(input: &mut Vec<Value>, transcript: &Transcript, index: usize, turn: &Turn) {
    input.extend(rewind_notices(transcript, index));
    if !turn.rewound {
        append_turn(input, turn, transcript.images_dir.as_deref());
    }
}

/// Whether turn `index` enters the input at its place: after a compaction,
/// a turn it covers does only when kept verbatim (as [`build_through`]).
fn replayed_at(transcript: &Transcript, index: usize) -> bool {
    match &transcript.compaction {
        Some(compaction) if index <= compaction.through => kept_verbatim(&transcript.turns[index]),
        _ => true,
    }
}

/// The request body, written from bytes kept between requests.
///
/// An ended turn's replay never changes: later records about it
/// (`recovery_ack`) do not enter the input, and recovery only ever closes the
/// turn that was open. So each ended turn's items are serialised once, in the
/// wire's form, into a buffer that starts with the body's head; a request
/// writes the open turn's items and the tail after them. What changes the
/// input's beginning (a compaction, a transcript rebuilt after a failed
/// save, another provider, model or instructions) starts the buffer again.
/// The bytes are the only copy of the replayed content the cache holds (no
/// `Value`s are kept), and the body is handed out sharing them.
#[derive(Default)]
pub struct RequestCache {
    /// The head, then the ended turns' items through `turns`, then (past
    /// `prefix_len`) the last request's open turn and tail.
    buffer: Arc<Vec<u8>>,
    prefix_len: usize,
    /// Whether the prefix holds an item (the next one needs a comma).
    prefix_has_items: bool,
    /// What the prefix was written for.
    frame: Option<BodyFrame>,
    compaction: Option<Compaction>,
    /// How many turns the prefix has passed (written or left out), and the
    /// id of the last of them.
    turns: usize,
    last_turn_id: Option<String>,
}

/// A request body sharing the cache's buffer.
struct SharedBody(Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedBody {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl RequestCache {
    /// The bytes of the body for the transcript's next model request: equal
    /// to serialising `ModelClient::request_body` of [`build`]'s input.
    pub fn body(&mut self, transcript: &Transcript, frame: &BodyFrame) -> Result<Bytes, serde_json::Error> {
        if !self.holds_prefix_of(transcript, frame) {
            self.start(transcript, frame)?;
        }
        // A copy only if an earlier body is still being sent.
        let buffer = Arc::make_mut(&mut self.buffer);
        buffer.truncate(self.prefix_len);
        let turns = &transcript.turns;
        while self.turns < turns.len() && !turns[self.turns].is_open() {
            if replayed_at(transcript, self.turns) {
                write_turn(buffer, &mut self.prefix_has_items, frame, self.turns, transcript)?;
            }
            self.last_turn_id = Some(turns[self.turns].id.clone());
            self.turns += 1;
        }
        self.prefix_len = buffer.len();
        // The open turn, as far as it has come: written for this request only.
        let mut has_items = self.prefix_has_items;
        for index in self.turns..turns.len() {
            write_turn(buffer, &mut has_items, frame, index, transcript)?;
        }
        let notices: Vec<Value> = rewind_notices(transcript, turns.len()).collect();
        write_items(buffer, &mut has_items, frame.wire_items(notices))?;
        buffer.extend_from_slice(&frame.tail);
        Ok(Bytes::from_owner(SharedBody(Arc::clone(&self.buffer))))
    }

    /// Whether the prefix is still the beginning of this transcript's body.
    fn holds_prefix_of(&self, transcript: &Transcript, frame: &BodyFrame) -> bool {
        self.frame.as_ref() == Some(frame)
            && self.compaction == transcript.compaction
            && match self.turns.checked_sub(1) {
                None => true,
                Some(last) => transcript
                    .turns
                    .get(last)
                    .is_some_and(|turn| !turn.is_open() && self.last_turn_id.as_deref() == Some(turn.id.as_str())),
            }
    }

    /// Starts the buffer again: the head, then the summary if any.
    fn start(&mut self, transcript: &Transcript, frame: &BodyFrame) -> Result<(), serde_json::Error> {
        // A new buffer rather than a cleared one: the old one may still be
        // shared with a body being sent.
        let mut buffer = frame.head.clone();
        self.prefix_has_items = frame.has_leading_items;
        if let Some(compaction) = &transcript.compaction {
            let summary = vec![summary_message(&compaction.summary)];
            write_items(&mut buffer, &mut self.prefix_has_items, frame.wire_items(summary))?;
        }
        self.prefix_len = buffer.len();
        self.buffer = Arc::new(buffer);
        self.frame = Some(frame.clone());
        self.compaction = transcript.compaction.clone();
        self.turns = 0;
        self.last_turn_id = None;
        Ok(())
    }
}

/// Appends one turn's replayed items in the wire's form.
fn write_turn(
    buffer: &mut Vec<u8>,
    has_items: &mut bool,
    frame: &BodyFrame,
    index: usize,
    transcript: &Transcript,
) -> serde_json::Result<()> {
    let mut items = Vec::new();
    append_turn_at(&mut items, transcript, index, &transcript.turns[index]);
    write_items(buffer, has_items, frame.wire_items(items))
}

fn write_items(buffer: &mut Vec<u8>, has_items: &mut bool, items: Vec<Value>) -> serde_json::Result<()> {
    for item in items {
        if *has_items {
            buffer.push(b',');
        }
        serde_json::to_writer(&mut *buffer, &item)?;
        *has_items = true;
    }
    Ok(())
}

fn append_turn(input: &mut Vec<Value>, turn: &Turn, images_dir: Option<&std::path::Path>) {
    if !turn.is_replayed() {
        return;
    }
    input.push(turn_user_message(turn, images_dir));
    for (index, items) in turn.responses.iter().enumerate() {
        // The transcript read this response's calls in item order, so the
        // k-th call item is the k-th call: each call sent is exactly one whose
        // output follows below, even when the model repeated an id.
        let mut calls = turn.calls.iter().filter(|c| c.response_index == index);
        for item in items {
            match item_call(item) {
                ItemCall::Call(_) => {
                    if let Some(call) = calls.next() {
                        input.push(json!({
                            "type": "function_call",
                            "call_id": call.call_id,
                            "name": call.name,
                            "arguments": call.arguments,
                        }));
                    }
                }
                ItemCall::Unanswerable => {}
                ItemCall::NotACall => input.extend(replay_item(item)),
            }
        }
        for call in turn.calls.iter().filter(|c| c.response_index == index) {
            // Every call of a finished response has a result before the next
            // request (runtime) or the turn's end (recovery); a call still
            // waiting belongs to the running turn and is not sent yet.
            if let Some(result) = &call.result {
                input.push(json!({
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": function_output(result),
                }));
            }
        }
    }
    if let Some(notice) = turn.notice() {
        input.push(assistant_message(&notice));
    }
}

/// A field present in the JSON text, `null` included (as `Value::get` sees it).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The members of an output item that replay reads, borrowed from its JSON
/// text unparsed: the rest of the item (ids, statuses, annotations) is
/// skipped without being built.
#[derive(Deserialize)]
struct ItemFields<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "present")]
    kind: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    content: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    call_id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    name: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    encrypted_content: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    summary: Option<&'a RawValue>,
}

/// The members of a message's content part that replay reads.
#[derive(Deserialize)]
struct PartFields<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "present")]
    kind: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    text: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    refusal: Option<&'a RawValue>,
}

/// The string a JSON text holds, borrowed when it has no escapes.
fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(raw.get()).ok().map(Cow::Owned),
    }
}

fn json_string(raw: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(raw.get()).ok()
}

fn json_value(raw: &RawValue) -> Option<Value> {
    serde_json::from_str::<Value>(raw.get()).ok()
}

/// One saved output item as it is sent back (see [`replayable`]), read
/// straight from its JSON text. Builds the same value as parsing the item
/// into a `Value` and calling [`replayable`], which it falls back to for a
/// text the typed reading does not take (a repeated member, a content part
/// that is not an object).
fn replay_item(item: &RawValue) -> Option<Value> {
    match replay_typed(item) {
        Ok(replayed) => replayed,
        Err(()) => replayable(&serde_json::from_str::<Value>(item.get()).ok()?),
    }
}

fn replay_typed(item: &RawValue) -> Result<Option<Value>, ()> {
    let fields: ItemFields<'_> = serde_json::from_str(item.get()).map_err(|_| ())?;
    let Some(kind) = fields.kind.and_then(json_str) else { return Ok(None) };
    Ok(match kind.as_ref() {
        "message" => {
            let Some(parts) = fields.content.and_then(|c| serde_json::from_str::<Vec<&RawValue>>(c.get()).ok()) else {
                return Ok(None);
            };
            let mut content = Vec::with_capacity(parts.len());
            for part in parts {
                let part: PartFields<'_> = serde_json::from_str(part.get()).map_err(|_| ())?;
                let Some(kind) = part.kind.and_then(json_str) else { continue };
                match kind.as_ref() {
                    "output_text" => {
                        if let Some(text) = part.text.and_then(json_string) {
                            content.push(json!({ "type": "output_text", "text": text }));
                        }
                    }
                    "refusal" => {
                        if let Some(refusal) = part.refusal.and_then(json_string) {
                            content.push(json!({ "type": "refusal", "refusal": refusal }));
                        }
                    }
                    _ => {}
                }
            }
            if content.is_empty() {
                return Ok(None);
            }
            Some(json!({ "type": "message", "role": "assistant", "content": content }))
        }
        "function_call" => {
            let (Some(call_id), Some(name), Some(arguments)) = (fields.call_id, fields.name, fields.arguments) else {
                return Ok(None);
            };
            let (Some(call_id), Some(name), Some(arguments)) =
                (json_value(call_id), json_value(name), json_value(arguments))
            else {
                return Err(());
            };
            Some(json!({ "type": "function_call", "call_id": call_id, "name": name, "arguments": arguments }))
        }
        "reasoning" => {
            let Some(encrypted) = fields.encrypted_content.and_then(json_string) else { return Ok(None) };
            let summary = match fields.summary {
                Some(summary) => json_value(summary).ok_or(())?,
                None => json!([]),
            };
            Some(json!({ "type": "reasoning", "summary": summary, "encrypted_content": encrypted }))
        }
        _ => None,
    })
}

/// An output item as it may be sent back: ids and statuses dropped, only the
/// fields the API accepts as input.
fn replayable(item: &Value) -> Option<Value> {
    match item.get("type")?.as_str()? {
        "message" => {
            let content: Vec<Value> = item
                .get("content")?
                .as_array()?
                .iter()
                .filter_map(|part| match part.get("type")?.as_str()? {
                    "output_text" => Some(json!({ "type": "output_text", "text": part.get("text")?.as_str()? })),
                    "refusal" => Some(json!({ "type": "refusal", "refusal": part.get("refusal")?.as_str()? })),
                    _ => None,
                })
                .collect();
            if content.is_empty() {
                return None;
            }
            Some(json!({ "type": "message", "role": "assistant", "content": content }))
        }
        "function_call" => Some(json!({
            "type": "function_call",
            "call_id": item.get("call_id")?,
            "name": item.get("name")?,
            "arguments": item.get("arguments")?,
        })),
        "reasoning" => {
            let encrypted = item.get("encrypted_content")?.as_str()?;
            Some(json!({
                "type": "reasoning",
                "summary": item.get("summary").cloned().unwrap_or_else(|| json!([])),
                "encrypted_content": encrypted,
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_replay_builds_what_the_value_replay_builds() {
        let items = [
            r#"{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi \"there\"\n","annotations":[]},{"type":"refusal","refusal":"no"},{"type":"other"},{"type":"output_text"},{"type":"output_text","text":5}]}"#,
            r#"{"type":"message","content":[]}"#,
            r#"{"type":"message","content":{"type":"output_text","text":"not an array"}}"#,
            r#"{"type":"message","content":["not an object",{"type":"output_text","text":"kept"}]}"#,
            r#"{"type":"message","content":[{"type":"output_text","text":"first","text":"last"}]}"#,
            r#"{"type":"mess\u0061ge","content":[{"type":"output_text","text":"escaped type"}]}"#,
            r#"{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}"#,
            r#"{"type":"function_call","call_id":null,"name":"bash","arguments":{"command":"ls"}}"#,
            r#"{"type":"function_call","name":"bash","arguments":"{}"}"#,
            r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"gAAAA"}"#,
            r#"{"type":"reasoning","encrypted_content":"gAAAA"}"#,
            r#"{"type":"reasoning","summary":null,"encrypted_content":"gAAAA"}"#,
            r#"{"type":"reasoning","summary":[]}"#,
            r#"{"type":"reasoning","encrypted_content":7}"#,
            r#"{"type":"web_search_call","id":"ws_1"}"#,
            r#"{"type":7}"#,
            r#"{"kind":"message"}"#,
            r#"{"type":"message","type":"function_call","call_id":"c","name":"n","arguments":"a"}"#,
            r#"[1,2]"#,
            r#""text""#,
        ];
        for item in items {
            let raw: Box<RawValue> = serde_json::from_str(item).unwrap();
            let expected = serde_json::from_str::<Value>(item).ok().and_then(|v| replayable(&v));
            assert_eq!(replay_item(&raw), expected, "{item}");
        }
    }

    #[test]
    fn function_output_is_the_json_text_a_value_would_write() {
        let result = CallResult {
            status: ToolStatus::Success,
            output: "a \"quoted\"\nline\u{7}".into(),
            exit_code: Some(0),
            recovered: false,
        };
        // The exact text the model reads, as Mino has always written it:
        // `output` then `status`, escaped as JSON (whether or not some
        // dependency makes `Value` maps keep insertion order).
        assert_eq!(function_output(&result), r#"{"output":"a \"quoted\"\nline\u0007","status":"success"}"#);
    }
}
