//! The conversation as the journal's records establish it: turns, the calls
//! the model asked for, what was decided, started and saved for each.
//!
//! A [`Transcript`] is only ever built by applying records in file order, so
//! it cannot claim anything the file does not hold.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::calls::{self, function_calls};
use crate::edit::{self, EditArgs, EditStartRecord, EditTool};
use crate::journal::record::{ApprovalDecision, ApprovedBy, RecordBody, RecordedLimits, ToolStatus, TurnStatus};
use crate::rules::Rule;
use crate::sandbox::SandboxMode;
use crate::usage::Usage;

#[derive(Debug, Clone)]
pub struct SessionHeader {
    pub session_id: String,
    pub created_at: String,
    pub cwd: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    pub status: ToolStatus,
    pub output: String,
    pub exit_code: Option<i32>,
    /// Written by recovery rather than by a run.
    pub recovered: bool,
}

#[derive(Debug, Clone)]
pub struct Call {
    pub call_id: String,
    pub name: String,
    /// The arguments exactly as the model sent them (a JSON text).
    pub arguments: String,
    /// Which response of the turn asked for it.
    pub response_index: usize,
    pub decision: Option<ApprovalDecision>,
    /// Who approved it when the person did not (rules or the sandbox).
    pub approved_by: Option<ApprovedBy>,
    /// The rules that approved it (with `approved_by: Rule`).
    pub rules: Vec<Rule>,
    /// The sandbox mode its `tool_start` recorded (`Off` when none was).
    pub sandbox: Option<SandboxMode>,
    pub started: bool,
    /// An edit's `tool_start` fields (path, hashes): what recovery checks
    /// the file against.
    pub edit: Option<EditStartRecord>,
    /// The directory it ran in (its `tool_start`'s `cwd`), else the one its
    /// approval showed.
    pub directory: Option<String>,
    /// What its approval showed: the environment and limits (absent for
    /// edits and in files written before they were journaled).
    pub environment: Option<std::collections::BTreeMap<String, String>>,
    pub limits: Option<RecordedLimits>,
    pub result: Option<CallResult>,
}

/// Who approved a call, as its `approval` record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approver {
    User,
    /// The first rule that covered it (a command of several parts may have
    /// needed more; all are in [`Call::rules`]).
    Rule(Rule),
    Sandbox,
    /// A read inside the session's directory, which never asks.
    Workspace,
}

impl Approver {
    /// Who an `approval` record with `approved_by` and `rules` names.
    pub fn of(approved_by: Option<ApprovedBy>, rules: &[Rule]) -> Approver {
        match approved_by {
            None => Approver::User,
            Some(ApprovedBy::Sandbox) => Approver::Sandbox,
            Some(ApprovedBy::Workspace) => Approver::Workspace,
            // A rule approval always names its rules; without one, no rule
            // can be shown, and the decision is shown as it was recorded.
            Some(ApprovedBy::Rule) => rules.first().cloned().map_or(Approver::User, Approver::Rule),
        }
    }
}

impl Call {
    /// Who approved the call; `None` when it was not approved.
    pub fn approver(&self) -> Option<Approver> {
        (self.decision == Some(ApprovalDecision::Approved)).then(|| Approver::of(self.approved_by, &self.rules))
    }

    /// The command for display: the `command` argument, or the raw arguments
    /// when the model sent something that is not a bash call; for an edit
    /// call, its one-line summary (`edit_file src/main.rs`).
    pub fn command(&self) -> String {
        if let Some(tool) = EditTool::from_name(&self.name) {
            return match EditArgs::parse(tool, &self.arguments) {
                Ok(args) => edit::summary(tool, args.path()),
                Err(_) => format!("{} {}", tool.as_str(), self.arguments),
            };
        }
        if let Some(tool) = crate::read::ReadTool::from_name(&self.name) {
            return match crate::read::ReadArgs::parse(tool, &self.arguments) {
                Ok(args) => args.summary(),
                Err(_) => format!("{} {}", tool.as_str(), self.arguments),
            };
        }
        calls::command_of(&self.arguments).unwrap_or_else(|_| self.arguments.clone())
    }

    /// Whether the call is one of the read tools' (recovery closes a started
    /// read as `unavailable`: a read has no effects to acknowledge).
    pub fn is_read(&self) -> bool {
        crate::read::ReadTool::from_name(&self.name).is_some()
    }

    /// A journaled read call as clients see it: whether it left the
    /// workspace is what its approval says (a person decided it, or no one
    /// had to), the summary what its saved result says. `None` for a call
    /// that is not a read or whose arguments could not be read.
    pub fn read_info(&self) -> Option<crate::read::ReadInfo> {
        let tool = crate::read::ReadTool::from_name(&self.name)?;
        let args = crate::read::ReadArgs::parse(tool, &self.arguments).ok()?;
        let asked = self.decision.is_some() && self.approved_by != Some(ApprovedBy::Workspace);
        let info = args.info(None, asked);
        Some(match &self.result {
            Some(r) => info.with_result(r.status, &r.output),
            None => info,
        })
    }

    /// The diff an edit call wrote, as its saved `success` result holds it
    /// (cut at the result's limit); `None` for anything else.
    pub fn applied_diff(&self) -> Option<String> {
        let result = self.result.as_ref().filter(|r| r.status == ToolStatus::Success)?;
        EditTool::from_name(&self.name)?;
        edit::diff_of_output(&result.output).map(str::to_string)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEnd {
    pub status: TurnStatus,
    pub reason: Option<String>,
    /// What was streamed of a response that never finished; shown, never
    /// replayed.
    pub partial_text: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Turn {
    pub id: String,
    pub input: String,
    /// The images the question carried, as its `user` record names them.
    pub images: Vec<crate::images::ImageRef>,
    /// Each model response's output items, as received (JSON text, parsed
    /// only when replayed or shown).
    pub responses: Vec<Vec<Box<RawValue>>>,
    pub calls: Vec<Call>,
    pub end: Option<TurnEnd>,
    pub acknowledged: bool,
    /// A rewind (`rewind_end`) took this turn back: it stays in history,
    /// and leaves the model's context.
    pub rewound: bool,
    /// The tokens of the turn's responses, summed; `None` when the service
    /// reported none.
    pub usage: Option<Usage>,
}

impl Turn {
    pub fn has_calls(&self) -> bool {
        !self.calls.is_empty()
    }

    pub fn is_open(&self) -> bool {
        self.end.is_none()
    }

    /// How the turn ended, when it did not complete.
    pub fn ended_early(&self) -> Option<TurnStatus> {
        self.end.as_ref().map(|e| e.status).filter(|s| *s != TurnStatus::Completed)
    }

    /// Whether the turn enters later context: completed turns do, and turns
    /// that ended early do only when they contain tool calls (whose effects
    /// the model must hear of); their partial text alone must not look like
    /// a final answer.
    pub fn is_replayed(&self) -> bool {
        self.ended_early().is_none() || self.has_calls()
    }

    /// The runtime notice that follows the turn in context and history.
    pub fn notice(&self) -> Option<String> {
        self.ended_early().filter(|_| self.has_calls()).map(runtime_notice)
    }

    pub fn has_unknown_result(&self) -> bool {
        self.calls.iter().any(|c| c.result.as_ref().is_some_and(|r| r.status == ToolStatus::Unknown))
    }

    /// The assistant's text of the whole turn, responses joined by blank lines.
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        for item in self.responses.iter().flatten() {
            let Ok(item) = serde_json::from_str::<Value>(item.get()) else { continue };
            if let Some(text) = message_text(&item) {
                if !text.is_empty() {
                    parts.push(text);
                }
            }
        }
        parts.join("\n\n")
    }

    /// The turn's content in the order it happened: each response's text and
    /// calls as its items came, then the text of a response that never
    /// finished, then the runtime notice. What a client shows live, rebuilt.
    pub fn items(&self) -> Vec<TurnItem> {
        let mut items = Vec::new();
        // The response the last item's text came from, while it is last.
        let mut text_of_response: Option<usize> = None;
        for (response_index, response) in self.responses.iter().enumerate() {
            // The k-th call item of a response is the k-th call read from it.
            let mut calls = self.calls.iter().enumerate().filter(|(_, c)| c.response_index == response_index);
            for item in response {
                match calls::item_call(item) {
                    calls::ItemCall::Call(_) => {
                        if let Some((index, _)) = calls.next() {
                            items.push(TurnItem::Call(index));
                            text_of_response = None;
                        }
                    }
                    calls::ItemCall::Unanswerable => {}
                    calls::ItemCall::NotACall => {
                        let Ok(item) = serde_json::from_str::<Value>(item.get()) else { continue };
                        let Some(text) = message_text(&item).filter(|t| !t.is_empty()) else { continue };
                        // Messages in a row of one response are one text, as
                        // it was streamed.
                        match items.last_mut() {
                            Some(TurnItem::Text(last)) if text_of_response == Some(response_index) => {
                                last.push_str(&text)
                            }
                            _ => items.push(TurnItem::Text(text)),
                        }
                        text_of_response = Some(response_index);
                    }
                }
            }
        }
        if let Some(partial) = self.end.as_ref().and_then(|e| e.partial_text.clone()) {
            items.push(TurnItem::Text(partial));
        }
        if let Some(notice) = self.notice() {
            items.push(TurnItem::Notice(notice));
        }
        items
    }

    /// The call a record naming `call_id` in this turn is about: the
    /// earliest call with that id still without a result.
    ///
    /// Model servers may reuse ids (several number calls `call_0`, `call_1`,
    /// … in every response). Across turns the turn id tells calls apart.
    /// Within a turn, every call of a response has its result before the
    /// next request, so a later response's `call_0` is the only unresolved
    /// one by then; and calls of one response are handled (and closed by
    /// recovery) in order, so a duplicate id inside one response names the
    /// first of them until it has its result, then the next.
    pub fn pending_call(&self, call_id: &str) -> Option<&Call> {
        self.calls.iter().find(|c| c.call_id == call_id && c.result.is_none())
    }

    fn pending_call_mut(&mut self, call_id: &str) -> Option<&mut Call> {
        self.calls.iter_mut().find(|c| c.call_id == call_id && c.result.is_none())
    }
}

/// One piece of a turn's content, in the order it happened
/// ([`Turn::items`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnItem {
    /// A response's text (messages in a row joined), or the text streamed of
    /// a response that never finished.
    Text(String),
    /// The call at this index of [`Turn::calls`].
    Call(usize),
    /// A runtime notice ([`Turn::notice`]).
    Notice(String),
}

/// The text of an assistant `message` output item.
pub fn message_text(item: &Value) -> Option<String> {
    if item.get("type")?.as_str()? != "message" {
        return None;
    }
    let mut text = String::new();
    for part in item.get("content")?.as_array()? {
        match part.get("type").and_then(Value::as_str) {
            Some("output_text") => text.push_str(part.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("refusal") => text.push_str(part.get("refusal").and_then(Value::as_str).unwrap_or("")),
            _ => {}
        }
    }
    Some(text)
}

/// The notice that follows a replayed turn that did not complete.
pub fn runtime_notice(status: TurnStatus) -> String {
    format!(
        "Mino runtime notice: the previous turn ended with status {}. Tool results above are retained; no command was automatically retried.",
        status.as_str()
    )
}

#[derive(Debug, Clone)]
pub struct Transcript {
    pub header: SessionHeader,
    pub turns: Vec<Turn>,
    /// The tokens of every response on file, summed; `None` when the
    /// service reported none.
    pub usage: Option<Usage>,
    /// The rules granted in this session (`rule` records) and not revoked
    /// since (`rule_revoke`), in the order granted.
    pub rules: Vec<Rule>,
    /// The latest `compaction` record: what the model's input starts with
    /// instead of the turns it covers (`compaction.rs`).
    pub compaction: Option<Compaction>,
    /// The input tokens of the last model request of the conversation, as
    /// the service reported them; `None` when it did not, or when a
    /// compaction came after it (what the next request sends is then much
    /// less). Automatic compaction compares it with the context window.
    pub last_input_tokens: Option<u64>,
    /// The model the person chose for this session (the last `model`
    /// record); `None`: the configured model.
    pub model: Option<String>,
    /// Where the session keeps its images (`images::dir_for` of its file):
    /// what a replay reads a question's images from. `None` for a
    /// transcript not read from a session file.
    pub images_dir: Option<std::path::PathBuf>,
    /// The rewinds that ended, in order.
    pub rewinds: Vec<crate::journal::rewind_record::RewindDone>,
    /// A `rewind` record without its `rewind_end` (turn id, plan): Mino
    /// stopped during it, and opening the session closes it.
    open_rewind: Option<(String, crate::journal::rewind_record::RewindPlan)>,
    by_id: HashMap<String, usize>,
}

/// What a `compaction` record established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    /// The index in [`Transcript::turns`] of the last turn it covers.
    pub through: usize,
    pub through_turn_id: String,
    pub summary: String,
}

impl Transcript {
    /// A transcript holding only the session header.
    pub fn new(header: SessionHeader) -> Transcript {
        Transcript {
            header,
            turns: Vec::new(),
            usage: None,
            rules: Vec::new(),
            compaction: None,
            last_input_tokens: None,
            model: None,
            images_dir: None,
            rewinds: Vec::new(),
            open_rewind: None,
            by_id: HashMap::new(),
        }
    }

    /// A rewind whose plan is on file and whose end is not: (turn id, plan).
    pub fn open_rewind(&self) -> Option<&(String, crate::journal::rewind_record::RewindPlan)> {
        self.open_rewind.as_ref()
    }

    pub fn turn(&self, turn_id: &str) -> Option<&Turn> {
        self.by_id.get(turn_id).map(|&i| &self.turns[i])
    }

    /// The last turn, if it has not ended.
    pub fn open_turn(&self) -> Option<&Turn> {
        self.turns.last().filter(|t| t.is_open())
    }

    /// Applies one record; on error (naming what is inconsistent) nothing changed.
    pub fn apply(&mut self, body: &RecordBody) -> Result<(), String> {
        self.check(body)?;
        self.apply_checked(body.clone());
        Ok(())
    }

    /// [`Transcript::apply`] without a copy, for records read from the file.
    pub fn apply_owned(&mut self, body: RecordBody) -> Result<(), String> {
        self.check(&body)?;
        self.apply_checked(body);
        Ok(())
    }

    fn apply_checked(&mut self, body: RecordBody) {
        match body {
            RecordBody::Session { .. } => {}
            RecordBody::User { turn_id, text, images } => {
                self.by_id.insert(turn_id.clone(), self.turns.len());
                self.turns.push(Turn {
                    id: turn_id,
                    input: text,
                    images,
                    responses: Vec::new(),
                    calls: Vec::new(),
                    end: None,
                    acknowledged: false,
                    rewound: false,
                    usage: None,
                });
            }
            RecordBody::Response { items, usage, .. } => {
                if let Some(usage) = usage {
                    *self.usage.get_or_insert_with(Usage::default) += usage;
                }
                self.last_input_tokens = usage.map(|u| u.input_tokens);
                let Some(turn) = self.turns.last_mut() else { return };
                if let Some(usage) = usage {
                    *turn.usage.get_or_insert_with(Usage::default) += usage;
                }
                let response_index = turn.responses.len();
                for (call_id, name, arguments) in function_calls(&items) {
                    turn.calls.push(Call {
                        call_id,
                        name,
                        arguments,
                        response_index,
                        decision: None,
                        approved_by: None,
                        rules: Vec::new(),
                        sandbox: None,
                        started: false,
                        edit: None,
                        directory: None,
                        environment: None,
                        limits: None,
                        result: None,
                    });
                }
                turn.responses.push(items);
            }
            RecordBody::Approval { call_id, decision, approved_by, rules, facts, .. } => {
                if let Some(call) = self.last_call_mut(&call_id) {
                    call.decision = Some(decision);
                    call.approved_by = approved_by;
                    call.rules = rules;
                    call.directory = facts.cwd;
                    call.environment = facts.environment;
                    call.limits = facts.limits;
                }
            }
            RecordBody::ToolStart { call_id, sandbox, edit, cwd, .. } => {
                if let Some(call) = self.last_call_mut(&call_id) {
                    call.started = true;
                    call.sandbox = Some(sandbox.unwrap_or_default());
                    call.edit = edit;
                    call.directory = Some(cwd);
                }
            }
            RecordBody::Rule { rule, .. } => self.rules.push(rule),
            RecordBody::RuleRevoke { id } => self.rules.retain(|r| r.id() != id),
            RecordBody::Compaction { through_turn_id, summary, usage } => {
                // The summary request's tokens are the session's, not a turn's.
                if let Some(usage) = usage {
                    *self.usage.get_or_insert_with(Usage::default) += usage;
                }
                self.last_input_tokens = None;
                if let Some(&through) = self.by_id.get(&through_turn_id) {
                    self.compaction = Some(Compaction { through, through_turn_id, summary });
                }
            }
            RecordBody::Model { model } => self.model = Some(model),
            RecordBody::Rewind { turn_id, plan, .. } => self.open_rewind = Some((turn_id, plan)),
            RecordBody::RewindEnd { outcomes, recovered, .. } => {
                if let Some((_, plan)) = self.open_rewind.take() {
                    for id in &plan.turns {
                        if let Some(&i) = self.by_id.get(id) {
                            self.turns[i].rewound = true;
                        }
                    }
                    let before_turn = self.turns.len();
                    self.rewinds.push(crate::journal::rewind_record::RewindDone {
                        plan,
                        outcomes,
                        recovered,
                        before_turn,
                    });
                }
            }
            RecordBody::ToolResult { call_id, status, output, exit_code, recovered, .. } => {
                if let Some(call) = self.last_call_mut(&call_id) {
                    call.result = Some(CallResult { status, output, exit_code, recovered });
                }
            }
            RecordBody::TurnEnd { status, reason, partial_text, .. } => {
                if let Some(turn) = self.turns.last_mut() {
                    turn.end = Some(TurnEnd { status, reason, partial_text });
                }
            }
            RecordBody::RecoveryAck { turn_id } => {
                if let Some(&i) = self.by_id.get(&turn_id) {
                    self.turns[i].acknowledged = true;
                }
            }
        }
    }

    /// Whether `body` may follow the records applied so far.
    pub fn check(&self, body: &RecordBody) -> Result<(), String> {
        // While a rewind is open only its end may follow: files are being
        // put back and nothing else may happen meanwhile.
        if let Some((open, _)) = &self.open_rewind {
            return match body {
                RecordBody::RewindEnd { turn_id, .. } if turn_id == open => Ok(()),
                other => Err(format!("a `{}` record while the rewind of turn {open} has not ended", other.kind())),
            };
        }
        match body {
            RecordBody::Session { .. } => Err("a second session header".into()),
            RecordBody::User { turn_id, .. } => {
                if let Some(open) = self.open_turn() {
                    return Err(format!("turn {turn_id} opens while turn {} has not ended", open.id));
                }
                if self.by_id.contains_key(turn_id) {
                    return Err(format!("turn {turn_id} opens twice"));
                }
                Ok(())
            }
            RecordBody::Response { turn_id, items, .. } => {
                let turn = self.open_turn_named(turn_id)?;
                // A repeated id is fine once the earlier call has its result
                // (see `Turn::pending_call`); before that, a record could not
                // say which of the two it is about.
                for (call_id, _, _) in function_calls(items) {
                    if turn.pending_call(&call_id).is_some() {
                        return Err(format!(
                            "a response repeats call {call_id} of turn {turn_id} before that call has a result"
                        ));
                    }
                }
                Ok(())
            }
            RecordBody::Approval { turn_id, call_id, .. } => {
                let call = self.open_call(turn_id, call_id)?;
                if call.decision.is_some() {
                    return Err(format!("call {call_id} decided twice"));
                }
                Ok(())
            }
            RecordBody::ToolStart { turn_id, call_id, edit, .. } => {
                let call = self.open_call(turn_id, call_id)?;
                // An edit's start names the tool its call asked for; a
                // command's start is never an edit call's.
                match (edit, EditTool::from_name(&call.name)) {
                    (Some(edit), Some(tool)) if edit.tool == tool => {}
                    (None, None) => {}
                    (Some(edit), _) => {
                        return Err(format!(
                            "the start of call {call_id} is a {} edit, but the call is `{}`",
                            edit.tool.as_str(),
                            call.name
                        ))
                    }
                    (None, Some(tool)) => {
                        return Err(format!("the start of {} call {call_id} has no edit fields", tool.as_str()))
                    }
                }
                if call.decision != Some(ApprovalDecision::Approved) {
                    return Err(format!("call {call_id} started without a recorded approval"));
                }
                if call.started {
                    return Err(format!("call {call_id} started twice"));
                }
                Ok(())
            }
            RecordBody::ToolResult { turn_id, call_id, .. } => self.open_call(turn_id, call_id).map(|_| ()),
            RecordBody::TurnEnd { turn_id, .. } => {
                let turn = self.open_turn_named(turn_id)?;
                if let Some(call) = turn.calls.iter().find(|c| c.result.is_none()) {
                    return Err(format!("turn {turn_id} ends while call {} has no result", call.call_id));
                }
                Ok(())
            }
            RecordBody::RecoveryAck { turn_id } => match self.turn(turn_id) {
                Some(turn) if turn.end.is_some() => Ok(()),
                Some(_) => Err(format!("acknowledges turn {turn_id} before it ended")),
                None => Err(format!("acknowledges unknown turn {turn_id}")),
            },
            RecordBody::Rule { turn_id, call_id, rule } => {
                let call = self.open_call(turn_id, call_id)?;
                if call.decision.is_some() {
                    return Err(format!("rule {} granted for call {call_id} after its decision", rule.id()));
                }
                if self.rules.iter().any(|r| r.id() == rule.id()) {
                    return Err(format!("rule {} granted twice", rule.id()));
                }
                Ok(())
            }
            RecordBody::RuleRevoke { id } => match self.rules.iter().any(|r| r.id() == id) {
                true => Ok(()),
                false => Err(format!("revokes rule {id}, which this session has not granted (or already revoked)")),
            },
            RecordBody::Compaction { through_turn_id, .. } => {
                let Some(&index) = self.by_id.get(through_turn_id) else {
                    return Err(format!("a compaction through unknown turn {through_turn_id}"));
                };
                if self.turns[index].is_open() {
                    return Err(format!("a compaction through turn {through_turn_id}, which has not ended"));
                }
                if self.compaction.as_ref().is_some_and(|c| c.through >= index) {
                    return Err(format!("a compaction through turn {through_turn_id}, which an earlier one covers"));
                }
                Ok(())
            }
            RecordBody::Rewind { turn_id, plan, .. } => {
                if let Some(open) = self.open_turn() {
                    return Err(format!("a rewind while turn {} has not ended", open.id));
                }
                match self.turn(turn_id) {
                    None => Err(format!("a rewind of unknown turn {turn_id}")),
                    Some(turn) if turn.rewound => Err(format!("a rewind of turn {turn_id}, already rewound")),
                    Some(_) if plan.turns.first() != Some(turn_id) => {
                        Err(format!("a rewind of turn {turn_id} whose plan does not start with it"))
                    }
                    Some(_) => match plan.turns.iter().find(|t| !self.by_id.contains_key(*t)) {
                        Some(unknown) => Err(format!("a rewind naming unknown turn {unknown}")),
                        None => Ok(()),
                    },
                }
            }
            RecordBody::RewindEnd { turn_id, .. } => {
                Err(format!("the end of a rewind of turn {turn_id} that is not open"))
            }
            RecordBody::Model { model } => match self.open_turn() {
                Some(open) => Err(format!("model {model:?} chosen while turn {} has not ended", open.id)),
                None if model.trim().is_empty() => Err("a model record naming no model".into()),
                None => Ok(()),
            },
        }
    }

    fn open_turn_named(&self, turn_id: &str) -> Result<&Turn, String> {
        match self.turns.last() {
            Some(turn) if turn.id == turn_id && turn.is_open() => Ok(turn),
            _ => Err(format!("record for turn {turn_id}, which is not the open turn")),
        }
    }

    /// The call of the open turn `turn_id` that a record naming `call_id` is
    /// about (see [`Turn::pending_call`]).
    fn open_call(&self, turn_id: &str, call_id: &str) -> Result<&Call, String> {
        let turn = self.open_turn_named(turn_id)?;
        turn.pending_call(call_id).ok_or_else(|| {
            if turn.calls.iter().any(|c| c.call_id == call_id) {
                format!("record for call {call_id} of turn {turn_id}, which already has its result")
            } else {
                format!("record for call {call_id}, which turn {turn_id} never asked for")
            }
        })
    }

    /// Records are checked before they are applied, so the open turn is the
    /// last one and the call is its pending call with that id.
    fn last_call_mut(&mut self, call_id: &str) -> Option<&mut Call> {
        self.turns.last_mut()?.pending_call_mut(call_id)
    }
}
