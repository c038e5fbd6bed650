//! Damaged files and crashes at random moments: every reopen either recovers
//! honestly or refuses with a clear error, never panics, and never writes to
//! a file it refused.

use std::path::{Path, PathBuf};

use mino_core::transcript::Transcript;
use mino_core::{ApprovalDecision, MinoHome, Session, ToolStatus, TurnStatus};
use serde_json::{json, Value};

fn function_call(call_id: &str, command: &str) -> Value {
    json!({"id": format!("fc_{call_id}"), "type": "function_call", "call_id": call_id, "name": "bash",
           "arguments": json!({"command": command}).to_string()})
}

fn message(text: &str) -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
}

/// A session with a completed turn, a turn with two calls (one result, one
/// refused), and an open turn whose call was started.
fn sample(home: &MinoHome) -> (String, PathBuf) {
    let mut s = Session::create(home, Path::new("/work")).expect("create");
    let t = s.begin_turn("Hello").expect("t1");
    s.record_response_without_usage(&t, vec![message("Hi there!")]).expect("r");
    s.end_turn_without_partial_text(&t, TurnStatus::Completed, None).expect("e");
    let t = s.begin_turn("List and remove").expect("t2");
    s.record_response_without_usage(&t, vec![function_call("a", "ls"), function_call("b", "rm -rf x")]).expect("r");
    s.record_decision(&t, "a", ApprovalDecision::Approved).expect("d");
    s.record_unsandboxed_tool_start(&t, "a", "ls", "/work").expect("s");
    s.record_tool_result(&t, "a", ToolStatus::Success, "file\n", Some(0)).expect("res");
    s.record_decision(&t, "b", ApprovalDecision::Denied).expect("d");
    s.record_tool_result(&t, "b", ToolStatus::Refused, "denied", None).expect("res");
    s.record_response_without_usage(&t, vec![message("Done.")]).expect("r");
    s.end_turn_without_partial_text(&t, TurnStatus::Completed, None).expect("e");
    let t = s.begin_turn("Add milk").expect("t3");
    s.record_response_without_usage(&t, vec![function_call("c", "echo milk >> shopping.txt")]).expect("r");
    s.record_decision(&t, "c", ApprovalDecision::Approved).expect("d");
    s.record_unsandboxed_tool_start(&t, "c", "echo milk >> shopping.txt", "/work").expect("s");
    (s.id().to_string(), s.path().to_path_buf())
}

/// What must hold of any session that opened.
fn assert_honest(transcript: &Transcript, context: &[Value], what: &str) {
    for turn in &transcript.turns {
        assert!(turn.end.is_some(), "{what}: turn {} left open", turn.id);
        for call in &turn.calls {
            let result = call.result.as_ref().unwrap_or_else(|| panic!("{what}: call {} without result", call.call_id));
            if result.recovered {
                let expected = if call.started { ToolStatus::Unknown } else { ToolStatus::NotExecuted };
                assert_eq!(result.status, expected, "{what}: Table 04-1 for {}", call.call_id);
            }
        }
    }
    // Every call in the context has exactly one output, and no output lacks its call.
    let calls: Vec<&str> =
        context.iter().filter(|i| i["type"] == "function_call").filter_map(|i| i["call_id"].as_str()).collect();
    let outputs: Vec<&str> =
        context.iter().filter(|i| i["type"] == "function_call_output").filter_map(|i| i["call_id"].as_str()).collect();
    assert_eq!(calls.len(), outputs.len(), "{what}: pairs");
    for call in &calls {
        assert_eq!(outputs.iter().filter(|o| *o == call).count(), 1, "{what}: one output for {call}");
    }
}

/// Returns whether the session opened.
fn check_reopen(home: &MinoHome, id: &str, path: &Path, what: &str) -> bool {
    let before = std::fs::read(path).expect("read");
    match Session::open(home, id) {
        Ok((session, _report)) => {
            assert_honest(session.transcript(), &session.context(), what);
            drop(session);
            // Recovery is done once: a second open changes nothing.
            let after_first = std::fs::read(path).expect("read");
            let (session, report) = Session::open(home, id).unwrap_or_else(|e| panic!("{what}: second open: {e}"));
            assert!(report.recovered.is_empty() && report.torn_tail.is_none(), "{what}: second open repaired again");
            drop(session);
            assert_eq!(std::fs::read(path).expect("read"), after_first, "{what}: second open wrote");
            true
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains(&path.display().to_string()), "{what}: error names the file: {message}");
            assert_eq!(std::fs::read(path).expect("read"), before, "{what}: a refused file is left unchanged");
            false
        }
    }
}

#[test]
fn truncated_at_every_byte_offset_reopens_honestly_or_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = MinoHome::new(dir.path().join("home"));
    let (id, path) = sample(&home);
    let full = std::fs::read(&path).expect("read");
    let (mut opened, mut refused) = (0, 0);
    for cut in 0..=full.len() {
        std::fs::write(&path, &full[..cut]).expect("write");
        if check_reopen(&home, &id, &path, &format!("cut at {cut}")) {
            opened += 1;
        } else {
            refused += 1;
        }
    }
    // Only cuts inside the header line can refuse (no session header).
    let header_len = full.iter().position(|&b| b == b'\n').expect("newline") + 1;
    assert_eq!(refused, header_len, "opened {opened}, refused {refused}");
}

#[test]
fn random_byte_flips_never_panic_and_never_write_to_a_refused_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = MinoHome::new(dir.path().join("home"));
    let (id, path) = sample(&home);
    let full = std::fs::read(&path).expect("read");
    let mut rng = fastrand::Rng::with_seed(0x5eed_0004);
    for round in 0..400 {
        let mut bytes = full.clone();
        let flips = 1 + rng.usize(..3);
        for _ in 0..flips {
            let at = rng.usize(..bytes.len());
            bytes[at] ^= 1 + rng.u8(..255);
        }
        std::fs::write(&path, &bytes).expect("write");
        check_reopen(&home, &id, &path, &format!("round {round}"));
    }
}

/// A model of what the records must say after any crash, driven by random
/// operations with crashes (process death, and power loss of unsynced bytes).
#[test]
fn random_operations_with_crashes_keep_every_promise() {
    for seed in 0..60u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let dir = tempfile::tempdir().expect("tempdir");
        let home = MinoHome::new(dir.path().join("home"));
        let mut session = Session::create(&home, Path::new("/work")).expect("create");
        let id = session.id().to_string();
        let path = session.path().to_path_buf();
        // call id -> (start synced, synced result status)
        let mut synced_starts: Vec<String> = Vec::new();
        let mut synced_results: Vec<(String, ToolStatus)> = Vec::new();
        let mut call_counter = 0;
        for _step in 0..40 {
            let op = rng.u8(..10);
            if op == 0 {
                // Crash: the process dies; with power loss, unsynced bytes may go too.
                let (synced, written) = (session.journal().synced_len(), session.journal().len());
                let synced_bytes = std::fs::read(&path).expect("read")[..synced as usize].to_vec();
                drop(session);
                if rng.bool() && written > synced {
                    let keep = synced + rng.u64(..=(written - synced));
                    let f = std::fs::OpenOptions::new().write(true).open(&path).expect("open");
                    f.set_len(keep).expect("truncate");
                }
                let (reopened, _) = Session::open(&home, &id).unwrap_or_else(|e| panic!("seed {seed}: reopen: {e}"));
                assert_eq!(
                    &std::fs::read(&path).expect("read")[..synced as usize],
                    &synced_bytes[..],
                    "seed {seed}: synced bytes kept"
                );
                session = reopened;
                let transcript = session.transcript();
                assert_honest(transcript, &session.context(), &format!("seed {seed}"));
                for turn in &transcript.turns {
                    for call in &turn.calls {
                        let status = call.result.as_ref().map(|r| r.status);
                        if let Some((_, saved)) = synced_results.iter().find(|(c, _)| *c == call.call_id) {
                            assert_eq!(status, Some(*saved), "seed {seed}: a synced result is kept");
                        } else if synced_starts.contains(&call.call_id) {
                            assert_eq!(
                                status,
                                Some(ToolStatus::Unknown),
                                "seed {seed}: a synced start without result is unknown"
                            );
                        }
                    }
                }
                let pending = session.pending_acknowledgement();
                let unknown_turns: Vec<String> = transcript
                    .turns
                    .iter()
                    .filter(|t| t.has_unknown_result() && !t.acknowledged)
                    .map(|t| t.id.clone())
                    .collect();
                assert_eq!(pending, unknown_turns, "seed {seed}: gate derived from records");
                continue;
            }
            if !session.pending_acknowledgement().is_empty() {
                if rng.bool() {
                    session.acknowledge(None).expect("ack");
                }
                continue;
            }
            let open = session.transcript().open_turn().map(|t| (t.id.clone(), t.calls.clone()));
            match open {
                None => {
                    session.begin_turn("go").expect("begin");
                }
                Some((turn_id, calls)) => {
                    if let Some(call) = calls.iter().find(|c| c.result.is_none()) {
                        let cid = call.call_id.clone();
                        if call.decision.is_none() {
                            let approve = rng.u8(..4) != 0;
                            if approve {
                                session.record_decision(&turn_id, &cid, ApprovalDecision::Approved).expect("d");
                                session.record_unsandboxed_tool_start(&turn_id, &cid, "true", "/work").expect("start");
                                synced_starts.push(cid);
                            } else {
                                session.record_decision(&turn_id, &cid, ApprovalDecision::Denied).expect("d");
                                session.record_tool_result(&turn_id, &cid, ToolStatus::Refused, "no", None).expect("r");
                                synced_results.push((cid, ToolStatus::Refused));
                            }
                        } else {
                            session.record_tool_result(&turn_id, &cid, ToolStatus::Success, "", Some(0)).expect("r");
                            synced_results.push((cid, ToolStatus::Success));
                        }
                    } else if rng.u8(..3) == 0 {
                        session.end_turn_without_partial_text(&turn_id, TurnStatus::Completed, None).expect("end");
                    } else {
                        let n = 1 + rng.usize(..3);
                        let items = (0..n)
                            .map(|_| {
                                call_counter += 1;
                                function_call(&format!("c{call_counter}"), "true")
                            })
                            .collect();
                        session.record_response_without_usage(&turn_id, items).expect("response");
                    }
                }
            }
        }
    }
}
