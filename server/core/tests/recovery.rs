//! Recovery, context replay and the acknowledgement gate, on real files in
//! temporary homes; no model, no network.

use std::path::{Path, PathBuf};

use mino_core::context;
use mino_core::journal::{Fault, FaultPlan, FaultyFile, JournalError};
use mino_core::recovery::{NOT_EXECUTED_OUTPUT, UNKNOWN_OUTPUT};
use mino_core::{ApprovalDecision, MinoHome, Session, SessionError, ToolStatus, TurnStatus};
use serde_json::{json, Value};

fn home() -> (tempfile::TempDir, MinoHome) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = MinoHome::new(dir.path().join("home"));
    (dir, home)
}

fn function_call(call_id: &str, command: &str) -> Value {
    json!({
        "id": format!("fc_{call_id}"),
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": "bash",
        "arguments": json!({ "command": command }).to_string(),
    })
}

fn message(text: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
        "content": [{ "type": "output_text", "text": text, "annotations": [] }],
    })
}

fn kinds(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read journal")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("line")["kind"].as_str().unwrap_or("").to_string())
        .collect()
}

fn count_kind(path: &Path, kind: &str) -> usize {
    kinds(path).iter().filter(|k| *k == kind).count()
}

/// Where the process stopped: after the response, the first start, the first result.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    Response,
    FirstStart,
    FirstResult,
}

/// A two-call turn that stops (as if the process died) at `stop`. Returns the session id.
fn two_call_turn(home: &MinoHome, stop: Stop) -> String {
    let mut s = Session::create(home, Path::new("/work")).expect("create");
    let t = s.begin_turn("Add milk and eggs to shopping.txt.").expect("begin");
    s.record_response_without_usage(
        &t,
        vec![
            function_call("call_1", "echo milk >> shopping.txt"),
            function_call("call_2", "echo eggs >> shopping.txt"),
        ],
    )
    .expect("response");
    if stop != Stop::Response {
        s.record_decision(&t, "call_1", ApprovalDecision::Approved).expect("approve");
        s.record_unsandboxed_tool_start(&t, "call_1", "echo milk >> shopping.txt", "/work").expect("start");
    }
    if stop == Stop::FirstResult {
        s.record_tool_result(&t, "call_1", ToolStatus::Success, "", Some(0)).expect("result");
    }
    s.id().to_string()
}

fn output_status(item: &Value) -> String {
    let output: Value = serde_json::from_str(item["output"].as_str().expect("output string")).expect("output json");
    output["status"].as_str().unwrap_or("").to_string()
}

#[test]
fn tool_history_recovery_preserves_pairs_and_acknowledgement() {
    for (stop, first, ack) in [
        (Stop::Response, "not_executed", false),
        (Stop::FirstStart, "unknown", true),
        (Stop::FirstResult, "success", false),
    ] {
        let (_dir, home) = home();
        let id = two_call_turn(&home, stop);

        let (session, report) = Session::open(&home, &id).expect("reopen");
        assert_eq!(report.recovered.len(), 1, "{stop:?}: one turn recovered");
        assert_eq!(report.recovered[0].status, TurnStatus::Interrupted);
        let input = session.context();
        assert_eq!(input.len(), 6, "{stop:?}: input, both calls, both results, notice: {input:#?}");
        assert_eq!(input[0]["role"], "user");
        assert_eq!(input[1]["call_id"], "call_1");
        assert_eq!(input[2]["call_id"], "call_2");
        assert!(input[1].get("id").is_none(), "item ids are not sent back with store:false");
        assert_eq!(
            (input[3]["type"].as_str(), input[3]["call_id"].as_str()),
            (Some("function_call_output"), Some("call_1"))
        );
        assert_eq!(
            (input[4]["type"].as_str(), input[4]["call_id"].as_str()),
            (Some("function_call_output"), Some("call_2"))
        );
        assert_eq!(output_status(&input[3]), first, "{stop:?}");
        assert_eq!(output_status(&input[4]), "not_executed", "{stop:?}");
        assert_eq!(input[5]["role"], "assistant");
        assert_eq!(input[5]["content"][0]["text"], context::runtime_notice(TurnStatus::Interrupted));
        assert_eq!(report.acknowledgement_required(), ack, "{stop:?}");
        assert_eq!(session.pending_acknowledgement().is_empty(), !ack);
        drop(session);

        // The requirement survives another open, and recovery does not repeat.
        let (session, report) = Session::open(&home, &id).expect("second reopen");
        assert!(report.recovered.is_empty(), "{stop:?}: nothing left to recover");
        assert_eq!(report.acknowledgement_required(), ack, "{stop:?}: survives reopen");
        assert_eq!(session.context().len(), 6);
        let path = session.path().to_path_buf();
        assert_eq!(count_kind(&path, "turn_end"), 1);
        drop(session);

        if ack {
            let (mut session, _) = Session::open(&home, &id).expect("open to acknowledge");
            let turns = session.acknowledge(None).expect("acknowledge");
            assert_eq!(turns.len(), 1);
            drop(session);
            let (session, report) = Session::open(&home, &id).expect("open after ack");
            assert!(!report.acknowledgement_required(), "a saved recovery_ack clears it for good");
            assert!(session.pending_acknowledgement().is_empty());
            // The model still sees `unknown`: acknowledgement changes no result.
            assert_eq!(output_status(&session.context()[3]), "unknown");
        }
    }
}

#[test]
fn unknown_result_gates_chat_until_acknowledged() {
    let (_dir, home) = home();
    let id = {
        let mut s = Session::create(&home, Path::new("/work")).expect("create");
        let t = s.begin_turn("Add milk to shopping.txt.").expect("begin");
        s.record_response_without_usage(&t, vec![function_call("call_1", "echo milk >> shopping.txt")])
            .expect("response");
        s.record_decision(&t, "call_1", ApprovalDecision::Approved).expect("approve");
        s.record_unsandboxed_tool_start(&t, "call_1", "echo milk >> shopping.txt", "/work").expect("start");
        s.id().to_string()
    };

    let (mut session, report) = Session::open(&home, &id).expect("reopen");
    let path = session.path().to_path_buf();
    assert!(report.acknowledgement_required());
    let call = &report.unacknowledged[0].calls[0];
    assert_eq!(
        (call.call_id.as_str(), call.status, call.output.as_str()),
        ("call_1", ToolStatus::Unknown, UNKNOWN_OUTPUT)
    );

    let input = session.context();
    assert_eq!(input[1]["call_id"], "call_1");
    assert_eq!(input[2]["call_id"], "call_1");
    assert_eq!(
        input[2]["output"].as_str().expect("output"),
        // The exact text the model reads, keys in the order Mino has always
        // written them (whatever order a `Value` map would keep).
        format!(r#"{{"output":"{UNKNOWN_OUTPUT}","status":"unknown"}}"#)
    );
    assert_eq!(input[3]["content"][0]["text"], context::runtime_notice(TurnStatus::Interrupted));

    let refused = session.begin_turn("Is milk on the list now?");
    assert!(matches!(refused, Err(SessionError::AcknowledgementRequired)), "{refused:?}");

    // Declining: nothing is written, and the next open asks again.
    let before = std::fs::read(&path).expect("read");
    drop(session);
    assert_eq!(std::fs::read(&path).expect("read"), before);
    let (mut session, report) = Session::open(&home, &id).expect("reopen");
    assert!(report.acknowledgement_required(), "still asks");
    assert_eq!(std::fs::read(&path).expect("read"), before, "opening again writes nothing");

    let acknowledged = session.acknowledge(None).expect("ack");
    assert_eq!(acknowledged, vec!["turn-1".to_string()]);
    assert_eq!(count_kind(&path, "recovery_ack"), 1);
    let t2 = session.begin_turn("Is milk on the list now?").expect("chat after ack");
    assert_eq!(t2, "turn-2");
    let input = session.context();
    assert_eq!(input.len(), 5, "recovered turn, then the new question: {input:#?}");
    assert_eq!(input[4]["content"][0]["text"], "Is milk on the list now?");
    assert_eq!(count_kind(&path, "recovery_ack"), 1, "exactly one recovery_ack");
}

#[test]
fn not_executed_never_requires_acknowledgement() {
    let (_dir, home) = home();
    let id = two_call_turn(&home, Stop::Response);
    let (mut session, report) = Session::open(&home, &id).expect("reopen");
    assert!(!report.acknowledgement_required());
    assert_eq!(report.recovered[0].calls[0].output, NOT_EXECUTED_OUTPUT);
    session.begin_turn("next").expect("no gate for not_executed");
}

#[test]
fn completed_turns_replay_and_early_ends_without_calls_are_left_out() {
    let (_dir, home) = home();
    let mut s = Session::create(&home, Path::new("/work")).expect("create");
    let t1 = s.begin_turn("Hello").expect("t1");
    s.record_response_without_usage(&t1, vec![message("Hi there!")]).expect("r1");
    s.end_turn_without_partial_text(&t1, TurnStatus::Completed, None).expect("end1");
    let t2 = s.begin_turn("Tell me a long story").expect("t2");
    s.record_response_without_usage(&t2, vec![message("Once upon")]).expect("r2");
    s.end_turn_without_partial_text(&t2, TurnStatus::Cancelled, Some("cancelled by the user".into())).expect("end2");
    let t3 = s.begin_turn("List files").expect("t3");
    s.record_response_without_usage(&t3, vec![function_call("c1", "ls")]).expect("r3");
    s.record_decision(&t3, "c1", ApprovalDecision::Denied).expect("deny");
    s.record_tool_result(&t3, "c1", ToolStatus::Refused, "denied", None).expect("refused");
    s.end_turn_without_partial_text(&t3, TurnStatus::Failed, Some("limit reached".into())).expect("end3");

    let input = s.context();
    let texts: Vec<String> = input.iter().map(|i| i.to_string()).collect();
    assert_eq!(input.len(), 6, "{texts:#?}");
    assert_eq!(input[1]["content"][0]["text"], "Hi there!");
    assert!(
        !texts.iter().any(|t| t.contains("Once upon") || t.contains("long story")),
        "cancelled text-only turn left out"
    );
    assert_eq!(input[2]["content"][0]["text"], "List files");
    assert_eq!(output_status(&input[4]), "refused");
    assert_eq!(input[5]["content"][0]["text"], context::runtime_notice(TurnStatus::Failed));
}

// ------------------------------------------------------------------ journal file

fn write_session(home: &MinoHome) -> (String, PathBuf) {
    let mut s = Session::create(home, Path::new("/work")).expect("create");
    let t = s.begin_turn("Hello").expect("begin");
    s.record_response_without_usage(&t, vec![message("Hi")]).expect("response");
    s.end_turn_without_partial_text(&t, TurnStatus::Completed, None).expect("end");
    (s.id().to_string(), s.path().to_path_buf())
}

#[test]
fn a_torn_last_line_is_cut_and_reported() {
    let (_dir, home) = home();
    let (id, path) = write_session(&home);
    let good = std::fs::read(&path).expect("read");
    for torn in [&b"{\"v\":2,\"seq\":5,\"kind\":\"us"[..], b"garbage that is not json\n"] {
        let mut bytes = good.clone();
        bytes.extend_from_slice(torn);
        std::fs::write(&path, &bytes).expect("write");
        let (session, report) = Session::open(&home, &id).expect("opens");
        let tail = report.torn_tail.clone().expect("torn tail reported");
        assert_eq!(tail.offset, good.len() as u64);
        assert_eq!(tail.line, 5);
        assert_eq!(std::fs::read(&path).expect("read"), good, "cut back to the last whole record");
        assert!(report.repairs()[0].contains("torn last line"));
        drop(session);
    }
}

#[test]
fn a_garbled_middle_line_is_refused_and_the_file_left_alone() {
    let (_dir, home) = home();
    let (id, path) = write_session(&home);
    let text = std::fs::read_to_string(&path).expect("read");
    let garbled = text.replacen("Hello", "Hellp", 1);
    std::fs::write(&path, &garbled).expect("write");
    let err = Session::open(&home, &id).err().expect("refused");
    let message = err.to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("line 2") && message.contains("checksum"),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(&path).expect("read"), garbled);

    // A missing record (a gap in seq) is refused too.
    let lines: Vec<&str> = text.lines().collect();
    let gapped = format!("{}\n{}\n{}\n", lines[0], lines[1], lines[3]);
    std::fs::write(&path, &gapped).expect("write");
    let message = Session::open(&home, &id).err().expect("gap refused").to_string();
    assert!(message.contains("line 3") && message.contains("seq 4"), "{message}");
}

#[test]
fn a_record_from_a_newer_mino_is_refused_byte_for_byte() {
    let (_dir, home) = home();
    let (id, path) = write_session(&home);
    let mut body = br#"{"v":2,"seq":5,"kind":"checkpoint","turn_id":"turn-1""#.to_vec();
    let crc = crc32fast_hash(&body);
    body.extend_from_slice(format!(",\"crc\":\"{crc:08x}\"}}\n").as_bytes());
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.extend_from_slice(&body);
    // Also a torn tail after it: a refused file is not repaired either.
    bytes.extend_from_slice(b"{\"v\":2");
    std::fs::write(&path, &bytes).expect("write");
    let err = Session::open(&home, &id).err().expect("refused");
    assert!(matches!(err, SessionError::Journal(JournalError::Newer { line: 5, .. })), "{err}");
    assert!(err.to_string().contains("newer Mino"), "{err}");
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "byte for byte as it was");
}

fn crc32fast_hash(bytes: &[u8]) -> u32 {
    // The journal's checksum is CRC-32 (IEEE); computed here independently.
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn a_second_opener_is_refused_until_the_first_is_gone() {
    let (_dir, home) = home();
    let (id, _path) = write_session(&home);
    let (first, _) = Session::open(&home, &id).expect("first");
    let err = Session::open(&home, &id).err().expect("second refused");
    assert!(matches!(err, SessionError::Journal(JournalError::Locked { .. })), "{err}");
    assert!(err.to_string().contains("open in another Mino process"), "{err}");
    drop(first);
    Session::open(&home, &id).expect("lock released with its holder");
}

#[test]
fn session_ids_and_symlinks_cannot_escape_the_sessions_directory() {
    let (dir, home) = home();
    let (_id, path) = write_session(&home);
    for bad in ["../../etc/passwd", "/etc/passwd", "a/b"] {
        assert!(matches!(Session::open(&home, bad), Err(SessionError::Home(_))), "{bad}");
    }
    let outside = dir.path().join("outside.jsonl");
    std::fs::copy(&path, &outside).expect("copy");
    std::os::unix::fs::symlink(&outside, home.sessions_dir().join("linked.jsonl")).expect("symlink");
    let err = Session::open(&home, "linked").err().expect("symlink refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

// ------------------------------------------------------------------ fault injection

/// The records of a two-call turn and a final answer, the way the turn loop
/// writes them. Stops at the first failed save, as the turn loop does.
fn run_turn(session: &mut Session) -> Result<(), SessionError> {
    let t = session.begin_turn("Add milk and eggs.")?;
    session.record_response_without_usage(
        &t,
        vec![function_call("call_1", "echo milk"), function_call("call_2", "echo eggs")],
    )?;
    session.record_decision(&t, "call_1", ApprovalDecision::Approved)?;
    session.record_unsandboxed_tool_start(&t, "call_1", "echo milk", "/work")?;
    session.record_tool_result(&t, "call_1", ToolStatus::Success, "", Some(0))?;
    session.record_decision(&t, "call_2", ApprovalDecision::Approved)?;
    session.record_unsandboxed_tool_start(&t, "call_2", "echo eggs", "/work")?;
    session.record_tool_result(&t, "call_2", ToolStatus::Success, "", Some(0))?;
    session.record_response_without_usage(&t, vec![message("Done.")])?;
    session.end_turn_without_partial_text(&t, TurnStatus::Completed, None)?;
    Ok(())
}

/// What a line says, without what differs between sessions.
fn essence(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|mut v| {
            for key in ["crc", "session_id", "created_at"] {
                v.as_object_mut().map(|o| o.remove(key));
            }
            v
        })
        .collect()
}

#[test]
fn a_failure_at_every_write_and_sync_of_a_turn_reopens_honestly() {
    let (_dir, home) = home();
    let clean = {
        let mut s = Session::create(&home, Path::new("/work")).expect("create");
        run_turn(&mut s).expect("clean turn");
        essence(s.path())
    };
    let (writes, syncs) = (clean.len() - 1, 6);
    let mut plans = Vec::new();
    for nth in 1..=writes {
        for fault in [Fault::NoSpace, Fault::Io, Fault::ShortWrite] {
            plans.push(FaultPlan::Write { nth, fault });
        }
    }
    for nth in 1..=syncs {
        plans.push(FaultPlan::Sync { nth, fault: Fault::Io });
    }
    let mut failures = 0;
    for plan in plans {
        let mut s = Session::create(&home, Path::new("/work")).expect("create");
        let id = s.id().to_string();
        let path = s.path().to_path_buf();
        s.journal_mut().wrap_file(|f| Box::new(FaultyFile::new(f, plan).0));
        let result = run_turn(&mut s);
        let err = result.expect_err(&format!("{plan:?} must fail the turn"));
        failures += 1;
        assert!(err.to_string().contains(&path.display().to_string()), "{plan:?}: error names the file: {err}");
        // Refuses further turns until reopened.
        assert!(s.begin_turn("more").is_err(), "{plan:?}: broken session refuses");
        drop(s);

        // What is on disk is exactly a synced prefix of the clean run.
        let on_disk = essence(&path);
        assert!(on_disk.len() < clean.len() && on_disk[..] == clean[..on_disk.len()], "{plan:?}: {on_disk:#?}");
        let (session, report) = Session::open(&home, &id).unwrap_or_else(|e| panic!("{plan:?}: reopen: {e}"));
        let turn = session.transcript().turns.last();
        if let Some(turn) = turn {
            assert!(turn.end.is_some(), "{plan:?}: turn closed");
            for call in &turn.calls {
                let result = call.result.as_ref().expect("every call has a result");
                let expected = match (call.started, result.recovered) {
                    (true, true) => ToolStatus::Unknown,
                    (false, true) => ToolStatus::NotExecuted,
                    (_, false) => result.status,
                };
                assert_eq!(result.status, expected, "{plan:?}: Table 04-1");
            }
            assert_eq!(report.acknowledgement_required(), turn.has_unknown_result(), "{plan:?}");
        }
    }
    assert!(failures >= 30, "the matrix ran: {failures}");
}

#[test]
fn a_last_line_from_a_newer_mino_is_refused_not_cut() {
    let (_dir, home) = home();
    let (id, path) = write_session(&home);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.extend_from_slice(
        b"{\"v\":4,\"seq\":5,\"kind\":\"user\",\"turn_id\":\"turn-2\",\"text\":\"x\",\"crc32c\":\"0badf00d\"}\n",
    );
    std::fs::write(&path, &bytes).expect("write");
    let err = Session::open(&home, &id).err().expect("refused");
    assert!(err.to_string().contains("newer Mino"), "{err}");
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "left byte for byte");
}

#[test]
fn odd_function_call_items_are_read_once_everywhere() {
    let (_dir, home) = home();
    let mut s = Session::create(&home, Path::new("/work")).expect("create");
    let t = s.begin_turn("Do two things").expect("begin");
    let object_arguments =
        json!({"type": "function_call", "call_id": "c1", "name": "bash", "arguments": {"command": "ls"}});
    let no_call_id = json!({"type": "function_call", "name": "bash", "arguments": "{}"});
    s.record_response_without_usage(&t, vec![object_arguments, no_call_id, function_call("c2", "pwd")])
        .expect("response");
    let calls: Vec<String> = s.transcript().turn(&t).expect("turn").calls.iter().map(|c| c.call_id.clone()).collect();
    assert_eq!(calls, ["c1", "c2"], "a call without call_id cannot be answered and is not a call");
    let id = s.id().to_string();
    drop(s);
    let (session, _) = Session::open(&home, &id).expect("reopen");
    let input = session.context();
    let sent: Vec<&str> =
        input.iter().filter(|i| i["type"] == "function_call").filter_map(|i| i["call_id"].as_str()).collect();
    let answered: Vec<&str> =
        input.iter().filter(|i| i["type"] == "function_call_output").filter_map(|i| i["call_id"].as_str()).collect();
    assert_eq!(sent, ["c1", "c2"]);
    assert_eq!(answered, ["c1", "c2"], "every call sent has exactly one output: {input:#?}");
    assert!(input.iter().all(|i| i["arguments"].is_null() || i["arguments"].is_string()), "arguments replay as text");
}

#[test]
fn a_failed_save_leaves_nothing_unsaved_in_the_transcript() {
    let (_dir, home) = home();
    let mut s = Session::create(&home, Path::new("/work")).expect("create");
    let t = s.begin_turn("Add milk").expect("begin");
    s.record_response_without_usage(&t, vec![function_call("c1", "echo milk >> shopping.txt")]).expect("response");
    s.record_decision(&t, "c1", ApprovalDecision::Approved).expect("approve");
    s.record_unsandboxed_tool_start(&t, "c1", "echo milk >> shopping.txt", "/work").expect("start");
    s.journal_mut().wrap_file(|f| Box::new(FaultyFile::new(f, FaultPlan::Sync { nth: 1, fault: Fault::Io }).0));
    assert!(s.record_tool_result(&t, "c1", ToolStatus::Success, "", Some(0)).is_err());
    let call = s.transcript().turn(&t).expect("turn").calls[0].clone();
    assert!(call.started, "the synced start is still known");
    assert_eq!(call.result, None, "the result that failed to save is not shown as saved");
}

#[test]
fn empty_and_oversized_questions_open_no_turn() {
    let (_dir, home) = home();
    let mut s = Session::create(&home, Path::new("/work")).expect("create");
    let before = std::fs::read(s.path()).expect("read");
    for text in ["".to_string(), "  \n".to_string(), "x".repeat(mino_core::session::MAX_INPUT_BYTES + 1)] {
        let err = s.begin_turn(&text).expect_err("refused");
        assert!(matches!(err, SessionError::InvalidInput(_)), "{err}");
    }
    assert_eq!(std::fs::read(s.path()).expect("read"), before, "nothing written");
    s.begin_turn(&"x".repeat(mino_core::session::MAX_INPUT_BYTES)).expect("the limit itself is accepted");
}

// ------------------------------------------------------------ repeated call ids
//
// Several local model servers number calls `call_0`, `call_1`, … in every
// response, so one id names different calls in different turns, and even in
// different responses of one turn. A call is the pair (turn, call id); within
// a turn, a record names the earliest call with that id that has no result
// yet (see docs/journal.md).

/// `(type, call_id, command or output status)` of each call item of `input`.
fn call_items(input: &[Value]) -> Vec<(String, String, String)> {
    input
        .iter()
        .filter_map(|item| {
            let kind = item["type"].as_str()?;
            let what = match kind {
                "function_call" => {
                    serde_json::from_str::<Value>(item["arguments"].as_str()?).ok()?["command"].as_str()?.to_string()
                }
                "function_call_output" => output_status(item),
                _ => return None,
            };
            Some((kind.to_string(), item["call_id"].as_str()?.to_string(), what))
        })
        .collect()
}

fn item(kind: &str, call_id: &str, what: &str) -> (String, String, String) {
    (kind.to_string(), call_id.to_string(), what.to_string())
}

#[test]
fn a_call_id_repeated_across_turns_pairs_each_call_with_its_own_result() {
    let (_dir, home) = home();
    let mut s = Session::create(&home, Path::new("/work")).expect("create");
    let t1 = s.begin_turn("Say something harmless").expect("t1");
    s.record_response_without_usage(&t1, vec![function_call("call_1", "echo harmless")]).expect("r1");
    s.record_tool_result(&t1, "call_1", ToolStatus::NotExecuted, "cancelled", None).expect("closed");
    s.end_turn_without_partial_text(&t1, TurnStatus::Cancelled, Some("cancelled by the user".into())).expect("end1");
    let t2 = s.begin_turn("Now something else").expect("t2");
    s.record_response_without_usage(&t2, vec![function_call("call_1", "echo second")]).expect("r2");
    s.record_decision(&t2, "call_1", ApprovalDecision::Approved).expect("approve");
    s.record_unsandboxed_tool_start(&t2, "call_1", "echo second", "/work").expect("start");
    s.record_tool_result(&t2, "call_1", ToolStatus::Success, "second\n", Some(0)).expect("result");
    s.record_response_without_usage(&t2, vec![message("Done.")]).expect("r3");
    s.end_turn_without_partial_text(&t2, TurnStatus::Completed, None).expect("end2");

    let expected = vec![
        item("function_call", "call_1", "echo harmless"),
        item("function_call_output", "call_1", "not_executed"),
        item("function_call", "call_1", "echo second"),
        item("function_call_output", "call_1", "success"),
    ];
    assert_eq!(call_items(&s.context()), expected);
    let first = &s.transcript().turn(&t1).expect("t1").calls[0];
    assert_eq!((first.decision, first.started), (None, false), "turn 2's approval and start stay in turn 2");
    let id = s.id().to_string();
    drop(s);
    let (session, report) = Session::open(&home, &id).expect("reopen");
    assert!(report.recovered.is_empty());
    assert_eq!(call_items(&session.context()), expected, "the file pairs them the same way");
}

/// A turn whose second response repeats the first response's `call_0`; the
/// process dies after the second `call_0` started.
#[test]
fn a_call_id_repeated_across_responses_of_one_turn_recovers_each_call_after_a_crash_in_the_second() {
    let (_dir, home) = home();
    let id = {
        let mut s = Session::create(&home, Path::new("/work")).expect("create");
        let t = s.begin_turn("Two steps").expect("begin");
        s.record_response_without_usage(&t, vec![function_call("call_0", "echo one")]).expect("r1");
        s.record_decision(&t, "call_0", ApprovalDecision::Approved).expect("approve 1");
        s.record_unsandboxed_tool_start(&t, "call_0", "echo one", "/work").expect("start 1");
        s.record_tool_result(&t, "call_0", ToolStatus::Success, "one\n", Some(0)).expect("result 1");
        s.record_response_without_usage(&t, vec![function_call("call_0", "echo two >> list.txt")])
            .expect("r2 repeats call_0");
        s.record_decision(&t, "call_0", ApprovalDecision::Approved).expect("approve 2");
        s.record_unsandboxed_tool_start(&t, "call_0", "echo two >> list.txt", "/work").expect("start 2");
        let calls = &s.transcript().turn(&t).expect("turn").calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].result.as_ref().map(|r| r.output.as_str()), Some("one\n"), "the first keeps its result");
        assert!(calls[1].started && calls[1].result.is_none(), "the second start is the second call's");
        s.id().to_string()
    };

    let expected = vec![
        item("function_call", "call_0", "echo one"),
        item("function_call_output", "call_0", "success"),
        item("function_call", "call_0", "echo two >> list.txt"),
        item("function_call_output", "call_0", "unknown"),
    ];
    let (session, report) = Session::open(&home, &id).expect("reopen");
    assert_eq!(report.recovered.len(), 1);
    let recovered: Vec<(&str, &str, ToolStatus)> =
        report.recovered[0].calls.iter().map(|c| (c.call_id.as_str(), c.command.as_str(), c.status)).collect();
    assert_eq!(
        recovered,
        [("call_0", "echo one", ToolStatus::Success), ("call_0", "echo two >> list.txt", ToolStatus::Unknown)]
    );
    assert!(report.acknowledgement_required(), "the second call_0 may have run");
    assert_eq!(call_items(&session.context()), expected);
    let path = session.path().to_path_buf();
    drop(session);
    // Reopening recovers nothing more and pairs the same way.
    let (session, report) = Session::open(&home, &id).expect("second reopen");
    assert!(report.recovered.is_empty());
    assert_eq!(call_items(&session.context()), expected);
    assert_eq!(count_kind(&path, "tool_result"), 2, "one result each, nothing rewritten");
}

#[test]
fn a_response_may_not_repeat_the_id_of_a_call_still_waiting_for_its_result() {
    let (_dir, home) = home();
    let mut s = Session::create(&home, Path::new("/work")).expect("create");
    let t = s.begin_turn("Two steps").expect("begin");
    s.record_response_without_usage(&t, vec![function_call("call_0", "echo one")]).expect("r1");
    let refused = s.record_response_without_usage(&t, vec![function_call("call_0", "echo two")]);
    assert!(refused.is_err(), "the earlier call_0 has no result yet: {refused:?}");
}

/// Two calls with one id in ONE response: records name them in order (the
/// earliest without a result), so each keeps its own result and replay
/// sends each call with exactly one output.
#[test]
fn duplicate_ids_in_one_response_are_resolved_and_replayed_in_order() {
    let (_dir, home) = home();
    let id = {
        let mut s = Session::create(&home, Path::new("/work")).expect("create");
        let t = s.begin_turn("Two at once").expect("begin");
        s.record_response_without_usage(&t, vec![function_call("call_0", "echo a"), function_call("call_0", "echo b")])
            .expect("a response with a repeated id is recorded as received");
        s.record_decision(&t, "call_0", ApprovalDecision::Approved).expect("approve a");
        s.record_unsandboxed_tool_start(&t, "call_0", "echo a", "/work").expect("start a");
        s.id().to_string()
    };
    let (session, report) = Session::open(&home, &id).expect("reopen");
    let recovered: Vec<(&str, ToolStatus)> =
        report.recovered[0].calls.iter().map(|c| (c.command.as_str(), c.status)).collect();
    assert_eq!(recovered, [("echo a", ToolStatus::Unknown), ("echo b", ToolStatus::NotExecuted)]);
    assert_eq!(
        call_items(&session.context()),
        [
            item("function_call", "call_0", "echo a"),
            item("function_call", "call_0", "echo b"),
            item("function_call_output", "call_0", "unknown"),
            item("function_call_output", "call_0", "not_executed"),
        ]
    );
}

/// A turn cancelled mid-response keeps the text streamed so far in its
/// `turn_end`: history shows it after the turn's calls, and the model's
/// context never holds it, fresh or reopened (a turn with calls is replayed
/// with its finished responses and the notice; one without calls not at all).
#[test]
fn the_cut_text_of_a_cancelled_turn_is_shown_but_never_replayed() {
    use mino_core::transcript::TurnItem;
    let (_dir, home) = home();
    let mut s = Session::create(&home, Path::new("/work")).expect("create");
    let t = s.begin_turn("List the files.").expect("begin");
    s.record_response_without_usage(&t, vec![message("Looking."), function_call("call_1", "ls")]).expect("response");
    s.record_decision(&t, "call_1", ApprovalDecision::Approved).expect("approve");
    s.record_unsandboxed_tool_start(&t, "call_1", "ls", "/work").expect("start");
    s.record_tool_result(&t, "call_1", ToolStatus::Success, "a.txt\nb.txt\n", Some(0)).expect("result");
    s.end_turn(&t, TurnStatus::Cancelled, Some("cancelled by the user".into()), Some("Two files: a.t".into()))
        .expect("end");
    let t2 = s.begin_turn("And a poem?").expect("begin");
    s.end_turn(&t2, TurnStatus::Failed, Some("the stream broke".into()), Some("Roses are".into())).expect("end");
    let id = s.id().to_string();

    let check = |s: &Session| {
        let context = serde_json::to_string(&s.context()).expect("json");
        assert!(context.contains("Looking.") && context.contains("runtime notice"), "{context}");
        assert!(!context.contains("Two files") && !context.contains("Roses"), "cut text replayed: {context}");
        assert!(!context.contains("And a poem?"), "a text-only turn that ended early is left out: {context}");
        let turns = &s.transcript().turns;
        assert_eq!(
            turns[0].items(),
            [
                TurnItem::Text("Looking.".into()),
                TurnItem::Call(0),
                TurnItem::Text("Two files: a.t".into()),
                TurnItem::Notice(mino_core::transcript::runtime_notice(TurnStatus::Cancelled)),
            ]
        );
        assert_eq!(turns[0].text(), "Looking.", "the grouped text holds finished responses only");
        assert_eq!(turns[1].items(), [TurnItem::Text("Roses are".into())]);
    };
    check(&s);
    drop(s);
    let (reopened, _) = Session::open(&home, &id).expect("reopen");
    check(&reopened);
}
