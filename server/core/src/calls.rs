//! What a model response's output items say about tool calls, read in one
//! place: which items are calls ([`item_call`], [`function_calls`]) and what
//! a bash call's arguments ask to run ([`command_of`]). The transcript, the
//! replayed context, recovery and the turn loop all read calls through here,
//! so every call that runs, recovers or replays is the same call.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// The fields of an output item that say whether it is a call.
#[derive(Deserialize)]
struct ItemHead {
    #[serde(rename = "type")]
    kind: Option<String>,
    call_id: Option<Value>,
    name: Option<Value>,
    arguments: Option<Value>,
}

/// What one output item is, as far as calls go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemCall {
    NotACall,
    /// A `function_call` with this `call_id`.
    Call(String),
    /// A `function_call` without a usable `call_id`: it cannot be answered,
    /// so it is neither run nor replayed.
    Unanswerable,
}

/// Reads one output item: the one place that says what a call is.
pub fn item_call(item: &RawValue) -> ItemCall {
    read_item(item).0
}

/// [`item_call`], with the call's head when it is one.
fn read_item(item: &RawValue) -> (ItemCall, Option<ItemHead>) {
    match serde_json::from_str::<ItemHead>(item.get()) {
        Ok(mut head) if head.kind.as_deref() == Some("function_call") => match head.call_id.take() {
            Some(Value::String(call_id)) if !call_id.is_empty() => (ItemCall::Call(call_id), Some(head)),
            _ => (ItemCall::Unanswerable, None),
        },
        _ => (ItemCall::NotACall, None),
    }
}

/// The function calls among a response's output items: `(call_id, name,
/// arguments)`. This is the only reading of calls: the turn loop, recovery
/// and replay all use it, so every call that runs, recovers or replays is
/// the same call. An item without a string `call_id` cannot be answered and
/// is not a call; odd `name`/`arguments` are kept (as text) so the call gets
/// a `failed` result the model can read.
pub fn function_calls(items: &[Box<RawValue>]) -> Vec<(String, String, String)> {
    let text = |v: Option<Value>| match v {
        Some(Value::String(s)) => s,
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    items
        .iter()
        .filter_map(|item| match read_item(item) {
            (ItemCall::Call(call_id), Some(head)) => Some((call_id, text(head.name), text(head.arguments))),
            _ => None,
        })
        .collect()
}

/// Reads the `command` of a bash call's arguments; the error is written for
/// the model, which sent them.
pub fn command_of(arguments: &str) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_str(arguments)
        .map_err(|e| format!("The bash tool's arguments are not valid JSON ({e}); send {{\"command\": \"...\"}}."))?;
    match value.get("command") {
        Some(serde_json::Value::String(command)) if !command.trim().is_empty() => Ok(command.clone()),
        Some(serde_json::Value::String(_)) => Err("The bash tool's `command` is empty.".into()),
        Some(_) => Err("The bash tool's `command` must be a string.".into()),
        None => Err("The bash tool needs a `command` argument: {\"command\": \"...\"}.".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_for_the_model() {
        assert_eq!(command_of(r#"{"command":"ls"}"#), Ok("ls".into()));
        assert!(command_of("{").unwrap_err().contains("not valid JSON"));
        assert!(command_of(r#"{"cmd":"ls"}"#).unwrap_err().contains("needs a `command`"));
        assert!(command_of(r#"{"command":3}"#).unwrap_err().contains("must be a string"));
    }
}
