//! The server under a scripted stream of hostile messages: a 10 GB
//! `Content-Length`, truncated frames, 100,000 nested brackets, wrong types
//! for every param of every method, unknown methods, requests before
//! `initialize`, and a flood of 5,000 requests written at once. Each is
//! answered (or, for notifications, dropped) cleanly, the server's memory
//! stays under [`RSS_BOUND_KB`], and it still serves a full turn afterwards.

use mino_e2e::{options_in, wire, work_dir, MockModel, Reply, Server, TIMEOUT};
use serde_json::{json, Value};

/// The bound on the server's peak resident memory (VmHWM) over the whole
/// hostile stream: 200 MB.
const RSS_BOUND_KB: u64 = 200 * 1024;

/// `VmRSS` and `VmHWM` of a process, in kB.
fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error response: {response}"))
}

/// Sends a raw request with a fresh id and drains every answer up to its
/// own: the parse errors for earlier garbage are written before the next
/// frame is even read, so they all come first. Returns those errors.
async fn sync(server: &mut Server) -> Vec<Value> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let id = format!("sync-{}", N.fetch_add(1, Ordering::Relaxed));
    server.send_message(&json!({"jsonrpc": "2.0", "id": id, "method": wire::method::HISTORY})).await;
    let mut before = Vec::new();
    loop {
        let answer = server.next_orphan_response(TIMEOUT).await;
        if answer["id"] == json!(id) {
            return before;
        }
        before.push(answer);
    }
}

/// Takes `n` answers to requests sent raw (their ids are not the client's),
/// skipping the `id: null` parse errors still queued from earlier garbage.
async fn orphans(server: &mut Server, n: usize) -> Vec<Value> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let answer = server.next_orphan_response(TIMEOUT).await;
        if answer["id"].is_null() {
            assert_eq!(code(&answer), -32700, "{answer}");
            continue;
        }
        out.push(answer);
    }
    out
}

/// Every params shape that is wrong for `method`, as the server's handlers
/// type them.
fn wrong_params(method: &str) -> Vec<Value> {
    let common = vec![json!(1), json!("text"), json!(true), json!([1, 2]), json!({"unexpected": {"deep": [1, 2, 3]}})];
    let specific = match method {
        wire::method::CHAT => vec![
            json!({}),
            json!({"text": null}),
            json!({"text": 5}),
            json!({"text": ["a"]}),
            json!({"text": {"a": 1}}),
        ],
        wire::method::APPROVAL => vec![
            json!({}),
            json!({"callId": 1, "decision": "approve"}),
            json!({"callId": "call_1"}),
            json!({"callId": "call_1", "decision": "approve"}),
            json!({"turnId": 1, "callId": "call_1", "decision": "approve"}),
            json!({"turnId": null, "callId": "call_1", "decision": "approve"}),
            json!({"turnId": "turn-1", "callId": "call_1"}),
            json!({"callId": "call_1", "decision": "maybe"}),
            json!({"callId": "call_1", "decision": true}),
            json!({"callId": null, "decision": "approve"}),
            json!({"callId": ["call_1"], "decision": "approve"}),
        ],
        wire::method::ACKNOWLEDGE => {
            vec![json!({"turnIds": "turn-1"}), json!({"turnIds": [1, 2]}), json!({"turnIds": {"turn-1": true}})]
        }
        wire::method::CANCEL => {
            vec![json!({}), json!({"turnId": 7}), json!({"turnId": null}), json!({"turnId": ["turn-1"]})]
        }
        _ => vec![],
    };
    common.into_iter().chain(specific).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_stream_is_answered_memory_stays_bounded_and_a_turn_still_completes() {
    let mock =
        MockModel::start(vec![Reply::call("call_1", "echo survived > after.txt"), Reply::text("Still standing.")])
            .await
            .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let pid = server.pid().expect("pid");
    let cwd = work_dir(server.home());
    let mut answered = 0usize;

    // Requests before initialize, every method: -32002.
    for method in [
        wire::method::CHAT,
        wire::method::APPROVAL,
        wire::method::ACKNOWLEDGE,
        wire::method::CANCEL,
        wire::method::HISTORY,
        "shutdown",
    ] {
        let err = server.request(method, json!({})).await.expect_err("before initialize");
        assert_eq!(err.code, -32002, "{method}: {err}");
        answered += 1;
    }
    // Unknown methods before initialize are refused too, never served.
    let err = server.request("mino/doesNotExist", json!({})).await.expect_err("unknown");
    assert!([-32002, -32601].contains(&err.code), "{err}");
    answered += 1;

    // A claimed 10 GB body: refused at once (nothing is allocated for it)
    // and the stream resynchronises at the next header.
    server.send_raw(b"Content-Length: 10000000000\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":99,\"me").await;
    let response = server.next_orphan_response(TIMEOUT).await;
    assert_eq!(code(&response), -32700, "{response}");
    assert!(response["error"]["message"].as_str().unwrap_or_default().contains("exceeds"), "{response}");
    answered += 1;
    // The same with a length that does not fit in 64 bits.
    server.send_raw(b"Content-Length: 99999999999999999999999\r\n\r\n").await;
    assert_eq!(code(&server.next_orphan_response(TIMEOUT).await), -32700);
    answered += 1;
    // A frame right after them is read.
    let err = server.request(wire::method::HISTORY, Value::Null).await.expect_err("still uninitialized");
    assert_eq!(err.code, -32002);
    answered += 1;

    // Truncated frames: a body shorter than its length (the next bytes are
    // taken as its rest), a header cut off and followed by garbage.
    let partial = br#"{"jsonrpc":"2.0","id":7,"#;
    let mut raw = format!("Content-Length: {}\r\n\r\n", partial.len() + 40).into_bytes();
    raw.extend_from_slice(partial);
    raw.extend_from_slice(&[b'x'; 40]);
    server.send_raw(&raw).await;
    assert_eq!(code(&server.next_orphan_response(TIMEOUT).await), -32700);
    answered += 1;
    server.send_raw(b"Content-Len\r\n\r\n").await;
    assert_eq!(code(&server.next_orphan_response(TIMEOUT).await), -32700);
    answered += 1;
    // 20 KB of bytes without any header, then a blank line: answered in
    // chunks, at least one error each.
    server.send_raw(&vec![b'z'; 20 * 1024]).await;
    server.send_raw(b"\r\n\r\n").await;
    let errors = sync(&mut server).await;
    assert!(!errors.is_empty());
    for e in &errors {
        assert_eq!(code(e), -32700, "{e}");
        assert!(e["id"].is_null());
    }
    answered += errors.len() + 1;

    // Initialize.
    server.initialize(&options_in(&cwd)).await.expect("initialize after garbage");
    // Drain the chunked garbage answers that may still be queued.
    let history = server.request(wire::method::HISTORY, Value::Null).await.expect("history");
    assert!(history["turns"].as_array().is_some_and(Vec::is_empty));

    // 100,000 nested brackets, bare and inside params (ids so their answers
    // are told apart from the garbage's).
    let deep = format!(r#"{{"jsonrpc":"2.0","id":"bare","method":{}"#, "[".repeat(100_000));
    server.send_raw(&mino_framing::frame(deep.as_bytes())).await;
    assert_eq!(code(&server.next_orphan_response(TIMEOUT).await), -32700);
    answered += 1;
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"mino/chat","params":{{"text":{}{}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    server.send_raw(&mino_framing::frame(deep_params.as_bytes())).await;
    let response = server.next_orphan_response(TIMEOUT).await;
    assert!([-32700, -32602].contains(&code(&response)), "{response}");
    answered += 1;
    // Deep but within serde's limit, as a notification: dropped silently.
    let nested = format!(r#"{{"jsonrpc":"2.0","method":"x/y","params":{}{}}}"#, "[".repeat(100), "]".repeat(100));
    server.send_raw(&mino_framing::frame(nested.as_bytes())).await;

    // Wrong types for every param of every method.
    let mut wrong = 0;
    for method in [
        wire::method::CHAT,
        wire::method::APPROVAL,
        wire::method::ACKNOWLEDGE,
        wire::method::CANCEL,
        wire::method::HISTORY,
    ] {
        for params in wrong_params(method) {
            match server.request(method, params.clone()).await {
                Err(e) => {
                    assert!([-32602, -32600].contains(&e.code), "{method} {params}: {e}");
                }
                // History ignores what it does not know; nothing else may accept.
                Ok(result) => assert!(
                    method == wire::method::HISTORY || (method == wire::method::ACKNOWLEDGE && params.is_object()),
                    "{method} accepted {params}: {result}"
                ),
            }
            wrong += 1;
        }
    }
    answered += wrong;
    // Wrong `initializationOptions` types and a second initialize.
    for options in [json!({"session": 5}), json!({"cwd": []}), json!({"newSession": "yes"})] {
        let err = server
            .request("initialize", json!({"processId": null, "capabilities": {}, "initializationOptions": options}))
            .await
            .expect_err("refused");
        assert!([-32602, -32600].contains(&err.code), "{options}: {err}");
        answered += 1;
    }

    // Unknown methods after initialize: -32601.
    for method in ["mino/doesNotExist", "workspace/symbol", "", "$/nothing/here"] {
        let err = server.request(method, json!({})).await.expect_err("unknown");
        assert_eq!(err.code, -32601, "{method:?}: {err}");
        answered += 1;
    }

    // The flood: 5,000 requests in one write, a mix of the above.
    let mut flood = Vec::new();
    let kinds = 5;
    for i in 0..5_000u64 {
        let message = match i % kinds {
            0 => json!({"jsonrpc":"2.0","id": 100_000 + i,"method":"mino/history"}),
            1 => json!({"jsonrpc":"2.0","id": 100_000 + i,"method":"mino/nope","params":{}}),
            2 => {
                json!({"jsonrpc":"2.0","id": 100_000 + i,"method":"mino/approval","params":{"turnId":"turn-1","callId":"call_x","decision":"approve"}})
            }
            3 => {
                json!({"jsonrpc":"2.0","id": 100_000 + i,"method":"mino/chat","params":{"text": 1}})
            }
            _ => {
                json!({"jsonrpc":"2.0","id": 100_000 + i,"method":"mino/cancel","params":{"turnId":"turn-9"}})
            }
        };
        flood.extend_from_slice(&mino_e2e::frame(&message));
    }
    server.send_raw(&flood).await;
    let answers = orphans(&mut server, 5_000).await;
    let mut ids: Vec<u64> = answers.iter().map(|a| a["id"].as_u64().expect("every flood answer has its id")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5_000, "every request answered exactly once");
    for a in &answers {
        let i = a["id"].as_u64().unwrap_or_default() - 100_000;
        match i % kinds {
            0 => assert!(a.get("result").is_some(), "{a}"),
            1 => assert_eq!(code(a), -32601, "{a}"),
            2 => assert_eq!(code(a), wire::error_code::NO_PENDING_APPROVAL, "{a}"),
            3 => assert_eq!(code(a), -32602, "{a}"),
            _ => assert_eq!(code(a), wire::error_code::UNKNOWN_TURN, "{a}"),
        }
    }
    answered += 5_000;

    let (rss, hwm) = memory_kb(pid);
    println!(
        "hostile stream: {answered} messages answered; server VmRSS {rss} kB, VmHWM (peak) {hwm} kB, bound {RSS_BOUND_KB} kB"
    );
    assert!(hwm < RSS_BOUND_KB, "peak memory {hwm} kB is over {RSS_BOUND_KB} kB");

    // A full turn still works, with an approved command.
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Are you still there?".into(), ..Default::default() })
        .await
        .expect("chat");
    let request: wire::ApprovalRequest =
        server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    let _ = server
        .request(
            wire::method::APPROVAL,
            json!({"turnId": request.turn_id, "callId": request.call_id, "decision": "approve"}),
        )
        .await
        .expect("approve");
    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let end: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(end.status, wire::TurnStatus::Completed, "{:?}", end.reason);
    assert_eq!(std::fs::read_to_string(cwd.join("after.txt")).expect("ran"), "survived\n");
    server.close_stdin();
    assert!(server.wait(TIMEOUT).await.success());
}

/// A real body near the frame cap (8 MiB of chat text) is read whole and
/// answered: a question that large is refused with a clear error (it would be
/// replayed in every later request), memory stays under the bound, and a
/// normal question works afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_body_is_read_and_memory_stays_bounded() {
    let mock = MockModel::start(vec![Reply::text("That was short.")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let pid = server.pid().expect("pid");
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let text = "a".repeat(8 * 1024 * 1024);
    let err = server
        .call::<_, wire::ChatResult>(wire::method::CHAT, &wire::ChatParams { text, ..Default::default() })
        .await
        .expect_err("8 MiB question refused");
    assert_eq!(err.code, -32602, "{}", err.message);
    assert!(err.message.contains("at most"), "{}", err.message);
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "A short one.".into(), ..Default::default() })
        .await
        .expect("a normal question afterwards");
    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let end: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(end.status, wire::TurnStatus::Completed, "{:?}", end.reason);
    let (rss, hwm) = memory_kb(pid);
    println!("8 MiB body: VmRSS {rss} kB, VmHWM {hwm} kB, bound {RSS_BOUND_KB} kB");
    assert!(hwm < RSS_BOUND_KB, "peak memory {hwm} kB");
    server.close_stdin();
    assert!(server.wait(TIMEOUT).await.success());
}
