//! Closing an interrupted turn by what the records establish (Table 04-1),
//! executing nothing.
//!
//! | saved evidence          | result        |
//! |-------------------------|---------------|
//! | call without a start    | `not_executed`|
//! | start without a result  | `unknown`     |
//! | call with a result      | kept          |
//!
//! An edit's start without a result is closed by what its file proves:
//! `applied`, `not_applied` or `unknown` ([`unresolved_call_result`]).
//!
//! A read's start without a result (`read_file`, `list_files`, `search`) is
//! closed `unavailable`: the records establish that it started and no more,
//! and a read opens files read-only in-process, so it cannot have had
//! effects; `unavailable` does not raise the acknowledgement gate, which
//! exists for effects.
//!
//! The turn then ends `interrupted`. Recovery is idempotent: a crash while
//! its records are being written leaves a turn that the next open closes the
//! same way.

use std::path::Path;

use crate::edit::EditRecovery;
use crate::journal::record::{RecordBody, ToolStatus, TurnStatus};
use crate::journal::TornTail;
use crate::supervisor::Evidence;
use crate::transcript::{Call, Transcript, Turn};

/// The output of a recovered `unknown` result, fixed by the specification.
pub const UNKNOWN_OUTPUT: &str =
    "Execution was started but its result was not saved. The operation may have happened. Do not automatically retry it.";

/// The output of a recovered `not_executed` result.
pub const NOT_EXECUTED_OUTPUT: &str =
    "The command was not executed: Mino stopped before this call reached its execution boundary.";

/// The reason recorded on a turn that recovery ends.
pub const INTERRUPTED_REASON: &str =
    "Mino stopped before the turn ended; the turn was recovered without executing commands";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredCall {
    pub call_id: String,
    pub command: String,
    pub status: ToolStatus,
    pub output: String,
    pub exit_code: Option<i32>,
    /// What the command's supervisor saw, for an `unknown` result whose
    /// supervisor left a record. Shown beside the result; never changes it.
    pub evidence: Option<Evidence>,
    /// The diff a kept `success` result of an edit call wrote.
    pub diff: Option<String>,
    /// The edit tool, for an edit call.
    pub edit_tool: Option<crate::edit::EditTool>,
    /// A read call: what it read, with its summary on `success`.
    pub read: Option<crate::read::ReadInfo>,
    /// Who approved it (a rule, the sandbox, the person), if anyone did.
    pub approver: Option<crate::transcript::Approver>,
    /// The sandbox mode its start recorded; `None` when it never started.
    pub sandbox: Option<crate::sandbox::SandboxMode>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredTurn {
    pub turn_id: String,
    pub status: TurnStatus,
    pub calls: Vec<RecoveredCall>,
}

impl RecoveredTurn {
    /// The turn as recovered, with the evidence left beside `journal`.
    pub fn of(turn: &Turn, journal: &Path) -> RecoveredTurn {
        RecoveredTurn {
            turn_id: turn.id.clone(),
            status: turn.end.as_ref().map_or(TurnStatus::Interrupted, |e| e.status),
            calls: turn
                .calls
                .iter()
                .enumerate()
                .filter_map(|(index, call)| {
                    let result = call.result.as_ref()?;
                    Some(RecoveredCall {
                        call_id: call.call_id.clone(),
                        command: call.command(),
                        status: result.status,
                        output: result.output.clone(),
                        exit_code: result.exit_code,
                        evidence: evidence_for(journal, turn, index),
                        diff: call.applied_diff(),
                        edit_tool: crate::edit::EditTool::from_name(&call.name),
                        read: crate::read::ReadInfo::of_call(call),
                        approver: call.approver(),
                        sandbox: call.sandbox,
                    })
                })
                .collect(),
        }
    }
}

/// The supervisor's evidence about the `call_index`-th call of `turn`, read
/// only for a started call whose result is `unknown`: a saved result is what
/// happened, and an unstarted call had no supervisor.
pub fn evidence_for(journal: &Path, turn: &Turn, call_index: usize) -> Option<Evidence> {
    let call = turn.calls.get(call_index)?;
    let unknown = call.started && call.result.as_ref().is_some_and(|r| r.status == ToolStatus::Unknown);
    if !unknown {
        return None;
    }
    crate::supervisor::load_evidence(journal, &turn.id, call_index, &call.call_id)
}

/// What opening a session found and did, for clients to show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Turns this open closed as `interrupted`.
    pub recovered: Vec<RecoveredTurn>,
    /// Turns (recovered now or earlier) with an `unknown` result and no `recovery_ack`.
    pub unacknowledged: Vec<RecoveredTurn>,
    pub torn_tail: Option<TornTail>,
}

impl RecoveryReport {
    pub fn acknowledgement_required(&self) -> bool {
        !self.unacknowledged.is_empty()
    }

    /// Every turn a client should be told about: recovered now, or still
    /// awaiting acknowledgement; each once, in session order.
    pub fn turns(&self) -> Vec<&RecoveredTurn> {
        let mut turns: Vec<&RecoveredTurn> = self.recovered.iter().collect();
        for turn in &self.unacknowledged {
            if !turns.iter().any(|t| t.turn_id == turn.turn_id) {
                turns.push(turn);
            }
        }
        turns
    }

    pub fn repairs(&self) -> Vec<String> {
        self.torn_tail.iter().map(ToString::to_string).collect()
    }
}

/// Table 04-1 for a call without a result: a saved start is not evidence
/// of an outcome (`unknown`); no start means it never ran (`not_executed`).
/// The one place the table is applied: on open, and when a running turn
/// stops between a response and its calls.
pub fn unresolved_result(started: bool) -> (ToolStatus, &'static str) {
    if started {
        (ToolStatus::Unknown, UNKNOWN_OUTPUT)
    } else {
        (ToolStatus::NotExecuted, NOT_EXECUTED_OUTPUT)
    }
}

/// Table 04-1 for one call without a result, edits included: an edit's
/// `tool_start` without a result is classified by what its file holds now
/// ([`crate::edit::recover`]: `applied` / `not_applied`, both verified, or
/// `unknown`, the only one the acknowledgement gate applies to); reads the
/// file, writes nothing. Every other call goes by [`unresolved_result`].
pub fn unresolved_call_result(call: &Call) -> (ToolStatus, String) {
    match (&call.edit, call.started) {
        (Some(edit), true) => {
            let recovered = crate::edit::recover(edit);
            let status = match recovered {
                EditRecovery::Applied => ToolStatus::Applied,
                EditRecovery::NotApplied => ToolStatus::NotApplied,
                EditRecovery::Unknown { .. } => ToolStatus::Unknown,
            };
            (status, recovered.output(edit))
        }
        // A read cannot have had effects: its lost result is unavailable, not unknown.
        (None, true) if crate::read::is_read_call(call) => {
            (ToolStatus::Unavailable, crate::read::UNAVAILABLE_OUTPUT.to_string())
        }
        _ => {
            let (status, output) = unresolved_result(call.started);
            (status, output.to_string())
        }
    }
}

/// The records that close the open turn, if there is one.
pub fn closing_records(transcript: &Transcript) -> Vec<RecordBody> {
    let Some(turn) = transcript.open_turn() else { return Vec::new() };
    let mut records: Vec<RecordBody> = turn
        .calls
        .iter()
        .filter(|call| call.result.is_none())
        .map(|call| {
            let (status, output) = unresolved_call_result(call);
            RecordBody::ToolResult {
                turn_id: turn.id.clone(),
                call_id: call.call_id.clone(),
                status,
                output,
                exit_code: None,
                recovered: true,
            }
        })
        .collect();
    records.push(RecordBody::TurnEnd {
        turn_id: turn.id.clone(),
        status: TurnStatus::Interrupted,
        reason: Some(INTERRUPTED_REASON.to_string()),
        // A crash loses what was streamed of an unfinished response: only
        // text a finished response recorded is on file.
        partial_text: None,
        session_usage: transcript.usage,
    });
    records
}
