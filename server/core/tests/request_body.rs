//! The request body written from the cached replay of ended turns
//! (`context::RequestCache`) is, byte for byte, the body the whole input
//! rebuilt from the records gives (`ModelClient::request_body` of
//! `Session::context`), through both providers, after every record of
//! varied sessions: texts, calls, every kind of result, runtime notices,
//! crashes and recovery, acknowledgements and compactions.

use mino_core::context::RequestCache;
use mino_core::model::{ModelClient, ModelConfig, ModelRequest, Provider};
use mino_core::{ApprovalDecision, MinoHome, Session, ToolStatus, TurnStatus};
use proptest::prelude::*;
use serde_json::{json, Value};

const INSTRUCTIONS: &str = "Be careful with \"quotes\" and ünïcode.";

fn clients() -> Vec<ModelClient> {
    [Provider::Responses, Provider::ChatCompletions]
        .into_iter()
        .map(|provider| {
            let config = ModelConfig {
                base_url: "http://127.0.0.1:9/v1".into(),
                model: "test-model".into(),
                ..ModelConfig::default()
            };
            ModelClient::with_provider(provider, config).expect("client")
        })
        .collect()
}

/// What the old builder sends: the whole input rebuilt, then serialised.
fn uncached(session: &Session, client: &ModelClient, instructions: &str) -> String {
    let input = session.context();
    let body = client.request_body(&ModelRequest { instructions, input: &input });
    serde_json::to_string(&body).expect("body")
}

/// Caches kept across the whole session (reopens included), one per
/// provider and instructions, as an agent keeps its session's.
struct Caches {
    clients: Vec<ModelClient>,
    caches: Vec<(usize, &'static str, RequestCache)>,
}

impl Caches {
    fn new() -> Caches {
        let clients = clients();
        let mut caches = Vec::new();
        for client in 0..clients.len() {
            for instructions in [INSTRUCTIONS, ""] {
                caches.push((client, instructions, RequestCache::default()));
            }
        }
        Caches { clients, caches }
    }

    fn check(&mut self, session: &mut Session, what: &str) {
        for (client, instructions, cache) in &mut self.caches {
            let client = &self.clients[*client];
            let frame = client.body_frame(instructions).expect("frame");
            let cached = cache.body(session.transcript(), &frame).expect("cached body");
            let expected = uncached(session, client, instructions);
            assert_eq!(
                std::str::from_utf8(&cached).expect("utf-8"),
                expected,
                "{:?}, instructions {instructions:?}, after {what}",
                client.provider()
            );
        }
        // And through the session's own cache.
        for client in &self.clients {
            let body = session.request_body(client, INSTRUCTIONS).expect("session body");
            assert_eq!(std::str::from_utf8(&body).expect("utf-8"), uncached(session, client, INSTRUCTIONS), "{what}");
        }
    }
}

fn response_items(param: u8, turn: usize, step: usize) -> Vec<Value> {
    let mut items = Vec::new();
    if param & 1 != 0 {
        items.push(json!({"id": format!("rs_{turn}_{step}"), "type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}], "encrypted_content": "gAAAA=="}));
    }
    if param & 2 != 0 {
        // Chat Completions' reasoning: no encrypted content, not replayed.
        items.push(json!({"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "hm"}]}));
    }
    if param & 4 != 0 {
        items.push(json!({"id": format!("msg_{turn}_{step}"), "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": format!("Answer {turn}.{step}: \"ok\"\n</end>"), "annotations": []}]}));
    }
    let calls = (param >> 3) % 3;
    for k in 0..calls {
        // Ids repeat across responses and turns, as some servers number them.
        let call_id = if param & 0x40 != 0 { format!("call_{k}") } else { format!("call_{turn}_{step}_{k}") };
        items.push(json!({"id": format!("fc_{turn}_{step}_{k}"), "type": "function_call", "status": "completed", "call_id": call_id, "name": "bash", "arguments": json!({"command": format!("echo {k}")}).to_string()}));
    }
    if param & 0x80 != 0 {
        items.push(json!({"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}));
        items.push(json!({"type": "web_search_call", "id": "ws_1"}));
    }
    items
}

/// Runs `ops` against a fresh session, checking every cache after each.
fn run(ops: &[(u8, u8)]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = MinoHome::new(dir.path().join("home"));
    let mut session = Session::create(&home, dir.path()).expect("session");
    let id = session.id().to_string();
    let mut caches = Caches::new();
    let mut step = 0;
    for &(kind, param) in ops {
        step += 1;
        let open = session.transcript().open_turn().map(|t| t.id.clone());
        let pending: Vec<String> = session
            .transcript()
            .open_turn()
            .map(|t| t.calls.iter().filter(|c| c.result.is_none()).map(|c| c.call_id.clone()).collect())
            .unwrap_or_default();
        let what = match (kind % 6, open) {
            (0, None) => {
                if !session.pending_acknowledgement().is_empty() {
                    session.acknowledge(None).expect("acknowledge");
                }
                session.begin_turn(&format!("Question {step} with \"quotes\"\n and ✓")).expect("begin");
                "a user message"
            }
            (1, Some(turn)) if pending.is_empty() => {
                let turns = session.transcript().turns.len();
                session.record_response_without_usage(&turn, response_items(param, turns, step)).expect("response");
                "a response"
            }
            (2, Some(turn)) if !pending.is_empty() => {
                let call = &pending[0];
                let started =
                    session.transcript().open_turn().and_then(|t| t.pending_call(call)).is_some_and(|c| c.started);
                match param % 4 {
                    _ if started => {
                        session.record_tool_result(&turn, call, ToolStatus::Success, "late", Some(0)).expect("result");
                    }
                    0 => {
                        session.record_decision(&turn, call, ApprovalDecision::Denied).expect("deny");
                        session.record_tool_result(&turn, call, ToolStatus::Refused, "denied", None).expect("result");
                    }
                    1 => {
                        // Started, no result: a crash now leaves it unknown.
                        session.record_decision(&turn, call, ApprovalDecision::Approved).expect("approve");
                        session.record_unsandboxed_tool_start(&turn, call, "echo", "/w").expect("start");
                    }
                    _ => {
                        session.record_decision(&turn, call, ApprovalDecision::Approved).expect("approve");
                        session.record_unsandboxed_tool_start(&turn, call, "echo", "/w").expect("start");
                        let status = if param % 4 == 2 { ToolStatus::Success } else { ToolStatus::Failed };
                        let output = format!("line \"{step}\"\n\u{7}tab\t✓");
                        session.record_tool_result(&turn, call, status, &output, Some(0)).expect("result");
                    }
                }
                "a call's records"
            }
            (2, Some(turn)) | (3, Some(turn)) => {
                let status = match param % 3 {
                    _ if !pending.is_empty() => [TurnStatus::Failed, TurnStatus::Cancelled][usize::from(param % 2)],
                    0 => TurnStatus::Completed,
                    1 => TurnStatus::Failed,
                    _ => TurnStatus::Cancelled,
                };
                session.close_unresolved_calls(&turn).expect("close");
                session.end_turn_without_partial_text(&turn, status, None).expect("end");
                "a turn's end"
            }
            (4, _) => {
                drop(session);
                session = Session::open(&home, &id).expect("reopen").0;
                "a reopen (recovery)"
            }
            (5, _) => {
                let transcript = session.transcript();
                let after = transcript.compaction.as_ref().map_or(0, |c| c.through + 1);
                let last_ended = transcript.turns.iter().rposition(|t| !t.is_open()).filter(|&i| i >= after);
                let Some(through) = last_ended.map(|i| transcript.turns[i].id.clone()) else { continue };
                session.record_compaction(&through, format!("Summary {step}: \"so far\""), None).expect("compaction");
                "a compaction"
            }
            _ => continue,
        };
        caches.check(&mut session, &format!("{what} (op {step})"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_cached_body_is_the_rebuilt_body_byte_for_byte(ops in proptest::collection::vec((0u8..6, any::<u8>()), 1..60)) {
        run(&ops);
    }
}

/// A fixed session touching every case at least once.
#[test]
fn a_varied_session_gives_the_rebuilt_body_after_every_record() {
    let ops = [
        (0, 0),
        (1, 0b0000_0101),
        (3, 0), // a completed text turn
        (0, 0),
        (1, 0b0001_1111),
        (2, 2),
        (2, 3),
        (1, 0b0000_0100),
        (3, 0), // two calls, then text
        (0, 0),
        (1, 0b1100_1001),
        (2, 0),
        (3, 1), // a denied call, failed: notice
        (0, 0),
        (1, 0b0000_0100),
        (3, 1), // failed without calls: left out
        (0, 0),
        (1, 0b0000_1000),
        (2, 1),
        (4, 0), // started, crash: unknown, recovered
        (0, 0),
        (1, 0b0101_0000),
        (4, 0), // no start, crash: not_executed
        (5, 0), // compaction keeps the recovered turns verbatim
        (0, 0),
        (1, 0b0100_1000),
        (2, 2),
        (1, 0b0100_1000),
        (2, 2),
        (1, 4),
        (3, 0), // repeated ids
        (0, 0),
        (1, 0b0000_1000),
        (5, 0),
        (2, 2),
        (1, 4),
        (3, 0), // compaction while a turn is open
        (5, 0),
        (0, 0),
        (4, 0),
        (1, 4),
        (3, 2),
    ];
    run(&ops);
}

/// A compaction and recovery change what the cached prefix holds: the next
/// body starts with the summary, and a turn recovery closed enters it.
#[test]
fn a_compaction_and_recovery_change_the_next_body() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = MinoHome::new(dir.path().join("home"));
    let mut session = Session::create(&home, dir.path()).expect("session");
    let id = session.id().to_string();
    let client = &clients()[0];
    let frame = client.body_frame(INSTRUCTIONS).expect("frame");
    let mut cache = RequestCache::default();

    let turn = session.begin_turn("the old question").expect("begin");
    session.record_response_without_usage(&turn, response_items(4, 1, 1)).expect("response");
    session.end_turn_without_partial_text(&turn, TurnStatus::Completed, None).expect("end");
    let before = cache.body(session.transcript(), &frame).expect("body");
    assert!(String::from_utf8_lossy(&before).contains("the old question"));

    session.record_compaction(&turn, "SUMMARY-TEXT".into(), None).expect("compaction");
    let after = cache.body(session.transcript(), &frame).expect("body");
    let after = String::from_utf8_lossy(&after).into_owned();
    assert!(after.contains("SUMMARY-TEXT"), "{after}");
    assert!(!after.contains("the old question"), "the covered turn is no longer sent: {after}");
    assert_eq!(after, uncached(&session, client, INSTRUCTIONS));

    // A call started, then a crash: recovery closes it `unknown` on open,
    // and the next body carries the turn with that result and its notice.
    let turn = session.begin_turn("run it").expect("begin");
    session.record_response_without_usage(&turn, response_items(0b0000_1000, 2, 1)).expect("response");
    let call = session.transcript().turns[1].calls[0].call_id.clone();
    session.record_decision(&turn, &call, ApprovalDecision::Approved).expect("approve");
    session.record_unsandboxed_tool_start(&turn, &call, "echo", "/w").expect("start");
    let open = String::from_utf8_lossy(&cache.body(session.transcript(), &frame).expect("body")).into_owned();
    assert!(!open.contains("function_call_output"), "a call without a result is not sent: {open}");
    drop(session);
    let (session, _) = Session::open(&home, &id).expect("reopen");
    let recovered = String::from_utf8_lossy(&cache.body(session.transcript(), &frame).expect("body")).into_owned();
    assert!(recovered.contains(r#"\"status\":\"unknown\""#), "{recovered}");
    assert!(recovered.contains("Mino runtime notice"), "{recovered}");
    assert!(recovered.contains("SUMMARY-TEXT"), "{recovered}");
    assert_eq!(recovered, uncached(&session, client, INSTRUCTIONS));
}
