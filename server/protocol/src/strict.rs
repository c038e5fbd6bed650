//! One reading of every message: a key named twice in one JSON object.
//!
//! `serde_json` keeps the last of two equal keys without a word, so
//! `{"decision":"deny","decision":"approve"}` approves while a proxy, a log
//! viewer or a client reading the first key shows a deny. Both of Mino's
//! front doors (`mino/*` and ACP) refuse a message in which any object, at
//! any depth, names a key twice, and it decides nothing.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};

/// A key named twice in one object, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    pub key: String,
    /// The object's place in the message, e.g. `params.outcome` (empty for the message itself).
    pub path: String,
}

impl fmt::Display for DuplicateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = if self.path.is_empty() { "the message".to_string() } else { format!("`{}`", self.path) };
        write!(
            f,
            "duplicate key {:?} in {place}: a message must name each key once (Mino refuses it rather than guess \
             which value was meant, and it decides nothing); send the key once",
            self.key
        )
    }
}

/// The first key named twice in one object of `json`, at any depth; `None`
/// when there is none or `json` is not JSON (its parser then says why).
pub fn duplicate_key(json: &[u8]) -> Option<DuplicateKey> {
    let found = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let _ = Check { path: &mut Vec::new(), found: &found }.deserialize(&mut deserializer);
    found.into_inner()
}

/// A value walked for duplicate keys, at `path`; the first is put in `found`.
struct Check<'a> {
    path: &'a mut Vec<String>,
    found: &'a RefCell<Option<DuplicateKey>>,
}

impl<'de> DeserializeSeed<'de> for Check<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            self.path.push(format!("[{index}]"));
            let next = seq.next_element_seed(Check { path: self.path, found: self.found });
            self.path.pop();
            if next?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key.clone()) {
                *self.found.borrow_mut() = Some(DuplicateKey { key, path: self.path.concat() });
                return Err(A::Error::custom("duplicate key"));
            }
            self.path.push(if self.path.is_empty() { key } else { format!(".{key}") });
            let value = map.next_value_seed(Check { path: self.path, found: self.found });
            self.path.pop();
            value?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_named_twice_at_any_depth_is_found_with_its_place() {
        let dup = |s: &str| duplicate_key(s.as_bytes());
        assert_eq!(dup(r#"{"a":1,"b":{"c":[1,{"d":2}]}}"#), None);
        assert_eq!(dup(r#"{"a":1,"a":2}"#), Some(DuplicateKey { key: "a".into(), path: String::new() }));
        assert_eq!(
            dup(r#"{"result":{"outcome":{"outcome":"selected","optionId":"reject","optionId":"allow"}}}"#),
            Some(DuplicateKey { key: "optionId".into(), path: "result.outcome".into() })
        );
        assert_eq!(
            dup(r#"{"params":{"items":[{"x":1},{"x":1,"x":2}]}}"#),
            Some(DuplicateKey { key: "x".into(), path: "params.items[1]".into() })
        );
        // Escapes name the same key.
        assert_eq!(dup(r#"{"answer":"not-now","\u0061nswer":"acknowledge"}"#).map(|d| d.key), Some("answer".into()));
        // Not JSON: nothing found here; the parser says what is wrong.
        assert_eq!(dup("{nope"), None);
        let text = dup(r#"{"params":{"decision":"deny","decision":"approve"}}"#).expect("found").to_string();
        assert!(text.contains(r#"duplicate key "decision" in `params`"#), "{text}");
    }
}
