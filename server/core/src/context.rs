//! The model's `input`, rebuilt from the transcript for every request
//! (section 3 of the specification).
//!
//! - Completed turns enter as they were.
//! - Failed, cancelled and interrupted turns that contain tool calls enter
//!   with every call paired to its result, then a runtime notice.
//! - Turns that ended early without tool calls are left out: their partial
//!   text must not look like a final answer.
//! - The open turn (the one being run) enters as far as it has come.
//!
//! Output items are sent back without their ids (`store: false` would reject
//! them), reasoning items with their `encrypted_content`.

use serde_json::{json, Value};

use crate::journal::record::TurnStatus;
use crate::transcript::{CallResult, Transcript, Turn};

/// The notice that follows a replayed turn that did not complete.
pub fn runtime_notice(status: TurnStatus) -> String {
    format!(
        "Mino runtime notice: the previous turn ended with status {}. Tool results above are retained; no command was automatically retried.",
        status.as_str()
    )
}

/// The `output` string of a `function_call_output`: `{"status":…,"output":…}`.
pub fn function_output(result: &CallResult) -> String {
    json!({ "status": result.status.as_str(), "output": result.output }).to_string()
}

pub fn user_message(text: &str) -> Value {
    json!({ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": text }] })
}

pub fn assistant_message(text: &str) -> Value {
    json!({ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": text }] })
}

/// Builds the whole `input` array.
pub fn build(transcript: &Transcript) -> Vec<Value> {
    let mut input = Vec::new();
    for turn in &transcript.turns {
        append_turn(&mut input, turn);
    }
    input
}

fn append_turn(input: &mut Vec<Value>, turn: &Turn) {
    let ended_early = turn.end.as_ref().map(|e| e.status).filter(|s| *s != TurnStatus::Completed);
    if ended_early.is_some() && !turn.has_calls() {
        return;
    }
    input.push(user_message(&turn.input));
    for (index, items) in turn.responses.iter().enumerate() {
        input.extend(
            items
                .iter()
                .filter_map(|item| serde_json::from_str::<Value>(item.get()).ok())
                .filter_map(|item| replayable(&item)),
        );
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
    if let Some(status) = ended_early {
        input.push(assistant_message(&runtime_notice(status)));
    }
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
