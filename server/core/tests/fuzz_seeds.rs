//! The fuzzers' seed corpus (tests/fuzz/corpus) is what the readers accept:
//! a seed that no longer parses would make the fuzzers start from nothing.

use std::path::Path;

fn corpus(target: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz/corpus").join(target).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn journal_seeds_verify() {
    let (records, torn) = mino_core::journal::verify_bytes(&corpus("journal_reader", "milk.jsonl")).expect("verifies");
    assert_eq!((records, torn), (8, None));
    let (records, torn) = mino_core::journal::verify_bytes(&corpus("journal_reader", "torn.jsonl")).expect("verifies");
    assert_eq!(records, 7);
    assert!(torn.is_some(), "the torn seed has a torn tail");
}

#[test]
fn sse_seeds_parse() {
    let text = corpus("sse_parser", "text.sse");
    let response = mino_core::model::parse_sse_body(&text[1..], 7).expect("parses").expect("completed");
    assert_eq!(response.items.len(), 1);
    let failed = corpus("sse_parser", "failed.sse");
    assert!(mino_core::model::parse_sse_body(&failed[1..], 1).is_err(), "response.failed is an error");
}
