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
//!
//! Whether an `unknown` result keeps chat shut until the person acknowledges
//! it is decided here alone ([`acknowledgement_required`]), both for an open
//! session's transcript ([`unacknowledged`]) and for a session listed from
//! the last records of its journal ([`LastTurnGate`]).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;

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
                        read: call.read_info(),
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
    /// A rewind Mino stopped during, closed now by what the files hold.
    pub rewind: Option<RecoveredRewind>,
}

/// A rewind closed by recovery: its plan and what each planned file's
/// bytes proved (`restored`/`removed`, `not_restored`, `changed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredRewind {
    pub turn_id: String,
    pub plan: crate::rewind::RewindPlan,
    pub outcomes: Vec<crate::rewind::FileOutcome>,
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
            (recovered.status(), recovered.output(edit))
        }
        // A read cannot have had effects: its lost result is unavailable, not unknown.
        (None, true) if call.is_read() => (ToolStatus::Unavailable, crate::read::UNAVAILABLE_OUTPUT.to_string()),
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

/// What a turn's records say about the acknowledgement gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateFacts {
    /// A `recovery_ack` of the turn is on file.
    pub acknowledged: bool,
    /// A `tool_result` of the turn is `unknown`.
    pub unknown_result: bool,
    /// A call of the turn started and has no result, and no process runs
    /// the turn: opening the session will close the call by Table 04-1,
    /// `unknown` for a command.
    pub unresolved_start: bool,
}

/// The gate's one rule: an `unknown` result, recorded or about to be
/// recorded by recovery, with no `recovery_ack` keeps chat shut.
pub fn acknowledgement_required(facts: GateFacts) -> bool {
    !facts.acknowledged && (facts.unknown_result || facts.unresolved_start)
}

/// Whether `turn` (of an open session, already recovered) holds an `unknown`
/// result awaiting acknowledgement.
pub fn awaits_acknowledgement(turn: &Turn) -> bool {
    acknowledgement_required(GateFacts {
        acknowledged: turn.acknowledged,
        unknown_result: turn.has_unknown_result(),
        unresolved_start: false,
    })
}

/// The turns of an open session awaiting acknowledgement, in session order.
pub fn unacknowledged(transcript: &Transcript) -> Vec<&Turn> {
    transcript.turns.iter().filter(|turn| awaits_acknowledgement(turn)).collect()
}

/// The [`GateFacts`] of a journal's last turn, from its records read walking
/// back from the last one (a listing reads only a file's end). Only the
/// last turn can wait, since chat is gated while an `unknown` result waits;
/// which records settle it:
///
/// - `recovery_ack`: nothing waits;
/// - `turn_end` `completed`: nothing waits. Mino writes an `unknown` result
///   only while closing a turn that did not complete (recovery, or a turn
///   stopped with calls unresolved), in the run of `tool_result` records
///   right before its `turn_end`; so for any other `turn_end`, that run is
///   read back to its first record, and an `unknown` in it waits;
/// - a last turn without `turn_end`: running when `busy`; else it crashed,
///   and opening will record `unknown` for each call started without a
///   result, so the turn is read back to its `user` record to find one.
#[derive(Debug)]
pub struct LastTurnGate {
    busy: bool,
    reading: Option<Reading>,
    /// Results seen (walking back) per call id, to pair them with starts.
    results: HashMap<String, u32>,
    facts: GateFacts,
}

#[derive(Debug)]
enum Reading {
    /// A non-`completed` `turn_end`: its closing run of results.
    ClosingRun,
    /// No `turn_end`, nobody holds it: the whole turn.
    Crashed,
}

impl LastTurnGate {
    /// `busy`: a process holds the session, so an open last turn is
    /// running, not crashed.
    pub fn new(busy: bool) -> Self {
        Self { busy, reading: None, results: HashMap::new(), facts: GateFacts::default() }
    }

    /// The last turn's record before those already given; `Break` once the
    /// facts are settled.
    pub fn record_before(&mut self, body: RecordBody) -> ControlFlow<()> {
        match (&self.reading, body) {
            (None, RecordBody::RecoveryAck { .. }) => {
                self.facts.acknowledged = true;
                ControlFlow::Break(())
            }
            (None, RecordBody::TurnEnd { status: TurnStatus::Completed, .. }) => ControlFlow::Break(()),
            (None, RecordBody::TurnEnd { .. }) => {
                self.reading = Some(Reading::ClosingRun);
                ControlFlow::Continue(())
            }
            (None, _) if self.busy => ControlFlow::Break(()),
            (None, body) => {
                self.reading = Some(Reading::Crashed);
                self.crashed_record(body)
            }
            (Some(_), RecordBody::ToolResult { status: ToolStatus::Unknown, .. }) => {
                self.facts.unknown_result = true;
                self.facts.unresolved_start = false;
                ControlFlow::Break(())
            }
            (Some(Reading::ClosingRun), RecordBody::ToolResult { .. }) => ControlFlow::Continue(()),
            (Some(Reading::ClosingRun), _) => ControlFlow::Break(()),
            (Some(Reading::Crashed), body) => self.crashed_record(body),
        }
    }

    /// One record of a crashed last turn: `Break` once its `user` record is
    /// reached (the turn has been read whole).
    fn crashed_record(&mut self, body: RecordBody) -> ControlFlow<()> {
        match body {
            RecordBody::ToolResult { call_id, .. } => *self.results.entry(call_id).or_default() += 1,
            RecordBody::ToolStart { call_id, .. } => match self.results.get_mut(&call_id) {
                Some(n) if *n > 0 => *n -= 1,
                _ => self.facts.unresolved_start = true,
            },
            RecordBody::User { .. } => return ControlFlow::Break(()),
            _ => {}
        }
        ControlFlow::Continue(())
    }

    /// What the records given so far establish.
    pub fn facts(&self) -> GateFacts {
        self.facts
    }
}
