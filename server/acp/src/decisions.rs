//! Incoming lines that name a key twice: refused before the crate reads them.
//!
//! The crate parses with `serde_json`, which keeps the last of two equal
//! keys: `{"optionId":"reject","optionId":"allow"}` would allow while a
//! proxy or a client reading the first key shows a reject. Every message
//! with a key named twice, at any depth, is refused and decides nothing:
//! a request is answered with an error naming the key; the client's answer
//! to one of Mino's questions (a permission, the gate's form) reaches the
//! crate as an error answer instead, so the question fails (the prompt's
//! answer, or the log, names the key) and nothing is approved; a
//! notification is dropped. Each is also told to the client as an error
//! with a null id.

use mino_protocol::strict;
use serde_json::{json, Value};

use mino_protocol::jsonrpc_code::INVALID_REQUEST;

/// What becomes of an incoming line.
#[derive(Debug, PartialEq, Eq)]
pub enum Screened {
    /// Handed to the crate as it is.
    Pass(String),
    /// Refused: `reply` goes to the client; `instead`, when there is one,
    /// is handed to the crate in the line's place (an error answer).
    Refused { instead: Option<String>, reply: String },
}

fn error(id: Value, message: &str) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": INVALID_REQUEST, "message": message } }).to_string()
}

pub fn screen(line: String) -> Screened {
    let Some(duplicate) = strict::duplicate_key(line.as_bytes()) else { return Screened::Pass(line) };
    let message: serde_json::Map<String, Value> = match serde_json::from_str(&line) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let id_named_twice = duplicate.key == "id" && duplicate.path.is_empty();
    let id = message.get("id").filter(|id| !id_named_twice && (id.is_number() || id.is_string())).cloned();
    let is_answer =
        !message.contains_key("method") && (message.contains_key("result") || message.contains_key("error"));
    tracing::warn!(key = %duplicate.key, path = %duplicate.path, answer = is_answer, ?id, "refused an ACP message with a duplicate key");
    let why = format!("Invalid request: {duplicate}");
    match (is_answer, id) {
        (true, Some(id)) => Screened::Refused {
            instead: Some(error(id.clone(), &format!("the client's answer was refused: {why}"))),
            reply: error(Value::Null, &format!("your answer to request {id} was refused and decided nothing: {why}")),
        },
        (true, None) => Screened::Refused {
            instead: None,
            reply: error(Value::Null, &format!("an answer was refused and decided nothing: {why}")),
        },
        (false, Some(id)) => Screened::Refused { instead: None, reply: error(id, &why) },
        (false, None) => Screened::Refused { instead: None, reply: error(Value::Null, &why) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> (Option<Value>, Value) {
        match screen(line.to_string()) {
            Screened::Pass(_) => panic!("{line} passed"),
            Screened::Refused { instead, reply } => {
                (instead.map(|i| serde_json::from_str(&i).expect("JSON")), serde_json::from_str(&reply).expect("JSON"))
            }
        }
    }

    #[test]
    fn an_answer_naming_a_key_twice_becomes_an_error_answer_naming_it() {
        let line = r#"{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"reject","optionId":"allow"}}}"#;
        let (instead, reply) = refused(line);
        let instead = instead.expect("an error answer instead");
        assert_eq!(instead["id"], 3);
        assert!(instead.get("result").is_none());
        let text = instead["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(r#"duplicate key "optionId" in `result.outcome`"#), "{text}");
        assert_eq!(reply["id"], Value::Null);
        assert!(reply["error"]["message"].as_str().is_some_and(|m| m.contains("optionId")), "{reply}");
    }

    #[test]
    fn a_request_naming_a_key_twice_is_answered_an_error_and_never_reaches_the_crate() {
        let (instead, reply) = refused(
            r#"{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"a","sessionId":"b"}}"#,
        );
        assert_eq!(instead, None);
        assert_eq!(reply["id"], "p");
        assert_eq!(reply["error"]["code"], INVALID_REQUEST);
        let (instead, reply) = refused(r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#);
        assert_eq!(instead, None, "the id named twice answers nothing");
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(
            screen(r#"{"jsonrpc":"2.0","id":1,"result":{"a":{"b":1},"c":{"b":2}}}"#.into()),
            Screened::Pass(r#"{"jsonrpc":"2.0","id":1,"result":{"a":{"b":1},"c":{"b":2}}}"#.into())
        );
    }
}
