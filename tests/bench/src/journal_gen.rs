//! A realistic session file of a given number of records, written directly
//! (no syncs): turns of a question, a response with text and a call, its
//! approval (with what it showed: directory, environment, limits), start and
//! result (a few KiB of output), a final answer, the end (with the session's
//! tokens so far), each response with the tokens it used, as Mino writes them.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use mino_core::journal::record::{
    encode_line, ApprovalDecision, ApprovalFacts, RecordBody, RecordedLimits, ToolStatus, TurnStatus,
};
use mino_core::usage::Usage;
use serde_json::json;
use serde_json::value::{to_raw_value, RawValue};

fn raw(v: serde_json::Value) -> Result<Box<RawValue>> {
    Ok(to_raw_value(&v)?)
}

fn prose(words: usize, salt: usize) -> String {
    const WORDS: [&str; 12] =
        ["the", "list", "shopping", "milk", "file", "command", "approve", "result", "model", "turn", "eggs", "bread"];
    (0..words).map(|i| WORDS[(i * 7 + salt) % WORDS.len()]).collect::<Vec<_>>().join(" ")
}

/// Writes at least `records` records, ending on a whole turn, and returns the file's size in bytes.
pub fn write_session(path: &Path, records: usize) -> Result<u64> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut seq = 0u64;
    let mut bytes = 0u64;
    let mut put = |body: RecordBody, out: &mut std::io::BufWriter<std::fs::File>| -> Result<()> {
        seq += 1;
        let line = encode_line(seq, &body);
        bytes += line.len() as u64;
        out.write_all(&line)?;
        Ok(())
    };
    put(
        RecordBody::Session {
            session_id: "bench".into(),
            created_at: "2026-11-29T00:00:00Z".into(),
            cwd: "/work".into(),
            mino_version: "bench".into(),
            forked_from: None,
        },
        &mut out,
    )?;
    let mut written = 1;
    let mut turn = 0usize;
    let mut session_usage = Usage::default();
    let environment: std::collections::BTreeMap<String, String> = [
        ("HOME", "/home/ana"),
        ("LANG", "C.UTF-8"),
        ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
        ("TERM", "dumb"),
        ("TMPDIR", "/tmp"),
        ("USER", "ana"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    while written < records {
        turn += 1;
        let turn_id = format!("turn-{turn}");
        let call_id = format!("call_{turn}");
        let command = format!("grep -n milk shopping.txt | head -n {turn}");
        // Each request re-sends the context: input grows with the session.
        let tokens = |output: u64| Usage {
            input_tokens: 2_000 + 900 * turn as u64,
            output_tokens: output,
            total_tokens: 2_000 + 900 * turn as u64 + output,
            cached_input_tokens: Some(1_024 * turn as u64),
            reasoning_tokens: None,
        };
        let (first, second) = (tokens(60), tokens(180));
        session_usage += first;
        session_usage += second;
        let bodies = vec![
            RecordBody::User { turn_id: turn_id.clone(), text: prose(40, turn), images: Vec::new() },
            RecordBody::Response {
                turn_id: turn_id.clone(),
                usage: Some(first),
                instructions: None,
                items: vec![
                    raw(
                        json!({"id": format!("rs_{turn}"), "type": "reasoning", "summary": [], "encrypted_content": "gAAAA".repeat(60)}),
                    )?,
                    raw(
                        json!({"id": format!("msg_{turn}a"), "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": prose(60, turn + 1), "annotations": []}]}),
                    )?,
                    raw(
                        json!({"id": format!("fc_{turn}"), "type": "function_call", "status": "completed", "call_id": call_id, "name": "bash", "arguments": json!({"command": command}).to_string()}),
                    )?,
                ],
            },
            RecordBody::Approval {
                turn_id: turn_id.clone(),
                call_id: call_id.clone(),
                decision: ApprovalDecision::Approved,
                approved_by: None,
                decided_by: None,
                rules: Vec::new(),
                facts: ApprovalFacts {
                    cwd: Some("/work".into()),
                    environment: Some(environment.clone()),
                    limits: Some(RecordedLimits { timeout_seconds: 120, output_limit_bytes: 65_536 }),
                    accepted_hunks: None,
                },
            },
            RecordBody::ToolStart {
                turn_id: turn_id.clone(),
                call_id: call_id.clone(),
                command: Some(command),
                edit: None,
                cwd: "/work".into(),
                sandbox: None,
                mcp: None,
            },
            RecordBody::ToolResult {
                turn_id: turn_id.clone(),
                call_id: call_id.clone(),
                status: ToolStatus::Success,
                output: (0..60).map(|i| format!("{i}: milk {}\n", prose(6, i + turn))).collect(),
                exit_code: Some(0),
                recovered: false,
            },
            RecordBody::Response {
                turn_id: turn_id.clone(),
                usage: Some(second),
                instructions: None,
                items: vec![raw(
                    json!({"id": format!("msg_{turn}b"), "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": prose(120, turn + 2), "annotations": []}]}),
                )?],
            },
            RecordBody::TurnEnd {
                turn_id,
                status: TurnStatus::Completed,
                reason: None,
                partial_text: None,
                session_usage: Some(session_usage),
            },
        ];
        // Whole turns only: a session that ends mid-turn makes opening
        // append and sync recovery records, a cost measured on its own.
        for body in bodies {
            put(body, &mut out)?;
            written += 1;
        }
    }
    out.flush()?;
    Ok(bytes)
}

/// Gives the session file at `path` another id and directory (its header, record 1),
/// so that a client opening `cwd` finds it as that folder's session.
pub fn rehome(path: &Path, session_id: &str, cwd: &str) -> Result<()> {
    let bytes = std::fs::read(path)?;
    let first_end = bytes.iter().position(|b| *b == b'\n').ok_or_else(|| anyhow::anyhow!("no header line"))?;
    let header = RecordBody::Session {
        session_id: session_id.into(),
        created_at: "2026-11-29T00:00:00Z".into(),
        cwd: cwd.into(),
        mino_version: "bench".into(),
        forked_from: None,
    };
    let mut out = encode_line(1, &header);
    out.extend_from_slice(&bytes[first_end + 1..]);
    std::fs::write(path, out)?;
    Ok(())
}
