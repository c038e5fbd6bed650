//! One open conversation: its journal, its transcript, and the rules that
//! hold between them: records are applied to the transcript only once they
//! are written, save points are synced before the next step, and no turn
//! starts while an unknown result awaits acknowledgement.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;

use crate::context;
use crate::home::{self, HomeError, MinoHome};
use crate::journal::record::{ApprovalDecision, ApprovalFacts, RecordBody, ToolStatus, TurnStatus, PARTIAL_TEXT_LIMIT};
use crate::journal::{Journal, JournalError};
use crate::model::{encode_error, ModelClient, ModelError};
use crate::recovery::{self, RecoveredTurn, RecoveryReport};
use crate::transcript::{SessionHeader, Transcript};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error("no session {id} in {dir}")]
    NotFound { id: String, dir: PathBuf },
    #[error("Acknowledge unknown tool results before continuing")]
    AcknowledgementRequired,
    #[error("turn {0} is still running; wait for it to end or cancel it")]
    TurnInProgress(String),
    #[error("turn {0} has no unknown result awaiting acknowledgement")]
    NothingToAcknowledge(String),
    #[error("{0}")]
    Usage(String),
    /// The user's input cannot open a turn (empty, or too large).
    #[error("{0}")]
    InvalidInput(String),
    /// The question's images could not be kept: nothing was recorded.
    #[error("The question's images could not be saved, so the question was not sent: {0}")]
    ImageStore(String),
}

/// The largest input that opens a turn. It is replayed in every later model
/// request, and held several times over in memory while a request is built.
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;

pub struct Session {
    journal: Journal,
    transcript: Transcript,
    /// The ended turns' replay, serialised once (`context::RequestCache`).
    request_cache: context::RequestCache,
    /// The bounds of the store of before-content (settings).
    blob_limits: crate::blobs::Limits,
}

impl Session {
    /// Starts a new session whose commands run in `cwd`.
    pub fn create(home: &MinoHome, cwd: &Path) -> Result<Session, SessionError> {
        home.ensure_sessions_dir()?;
        let session_id = home::new_session_id();
        let path = home.session_path(&session_id)?;
        let header = RecordBody::Session {
            session_id,
            created_at: home::now_rfc3339(),
            cwd: cwd.display().to_string(),
            mino_version: env!("CARGO_PKG_VERSION").to_string(),
            forked_from: None,
        };
        let journal = Journal::create(&path, &header)?;
        let RecordBody::Session { session_id, created_at, cwd, .. } = header else {
            unreachable!("the header was built above as a session record")
        };
        let mut transcript = Transcript::new(SessionHeader { session_id, created_at, cwd });
        transcript.images_dir = Some(crate::images::dir_for(&path));
        Ok(Session {
            journal,
            transcript,
            request_cache: context::RequestCache::default(),
            blob_limits: crate::blobs::Limits::default(),
        })
    }

    /// Opens a session, verifies it, and closes an interrupted turn by
    /// Table 04-1. Nothing is executed. Recovery's records are synced
    /// before this returns.
    pub fn open(home: &MinoHome, id: &str) -> Result<(Session, RecoveryReport), SessionError> {
        let path = home.session_path(id)?;
        if !path.exists() && path.symlink_metadata().is_err() {
            return Err(SessionError::NotFound { id: id.to_string(), dir: home.sessions_dir() });
        }
        Self::open_path(&path)
    }

    pub fn open_path(path: &Path) -> Result<(Session, RecoveryReport), SessionError> {
        let mut transcript: Option<Transcript> = None;
        let opened = Journal::open(path, |record| match (&mut transcript, record.body) {
            (None, RecordBody::Session { session_id, created_at, cwd, .. }) => {
                transcript = Some(Transcript::new(SessionHeader { session_id, created_at, cwd }));
                Ok(())
            }
            (Some(t), body) => t.apply_owned(body),
            (None, _) => Err("the session header must be record 1".into()),
        })?;
        // Journal::open refuses a file whose record 1 is not the header.
        let Some(mut transcript) = transcript else {
            return Err(JournalError::Corrupt {
                path: path.to_path_buf(),
                line: 1,
                reason: "no session header".into(),
            }
            .into());
        };
        transcript.images_dir = Some(crate::images::dir_for(path));
        let mut session = Session {
            journal: opened.journal,
            transcript,
            request_cache: context::RequestCache::default(),
            blob_limits: crate::blobs::Limits::default(),
        };
        let mut report = RecoveryReport { torn_tail: opened.torn_tail, ..Default::default() };
        let closing = recovery::closing_records(&session.transcript);
        if !closing.is_empty() {
            for body in &closing {
                session.append(body)?;
                fail::fail_point!("session::after_recovery_append");
            }
            session.journal.sync()?;
            fail::fail_point!("session::after_recovery_sync");
            if let Some(turn) = session.transcript.turns.last() {
                report.recovered.push(RecoveredTurn::of(turn, path));
            }
        }
        // A rewind Mino stopped during: what each file's bytes prove now
        // is recorded (recovery writes no file) and reported.
        if let Some((turn_id, plan)) = session.transcript.open_rewind().cloned() {
            let outcomes = crate::rewind::recover(&plan);
            session.append(&RecordBody::RewindEnd {
                turn_id: turn_id.clone(),
                outcomes: outcomes.clone(),
                recovered: true,
            })?;
            session.journal.sync()?;
            report.rewind = Some(recovery::RecoveredRewind { turn_id, plan, outcomes });
        }
        report.unacknowledged =
            recovery::unacknowledged(&session.transcript).into_iter().map(|t| RecoveredTurn::of(t, path)).collect();
        Ok((session, report))
    }

    pub fn id(&self) -> &str {
        &self.transcript.header.session_id
    }

    /// The bounds the store of before-content keeps from now on.
    pub fn set_blob_limits(&mut self, limits: crate::blobs::Limits) {
        self.blob_limits = limits;
    }

    pub fn blob_limits(&self) -> crate::blobs::Limits {
        self.blob_limits
    }

    /// The directory the session was created for, as its header records it:
    /// where its commands run, whichever directory opened it.
    pub fn cwd(&self) -> &str {
        &self.transcript.header.cwd
    }

    pub fn path(&self) -> &Path {
        self.journal.path()
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// For fault injection in tests.
    #[cfg(feature = "testing")]
    pub fn journal_mut(&mut self) -> &mut Journal {
        &mut self.journal
    }

    /// The model's `input` as the records stand.
    pub fn context(&self) -> Vec<Value> {
        context::build(&self.transcript)
    }

    /// The bytes of the next model request's body through `model`: those of
    /// its `request_body` for [`Session::context`], written from the ended
    /// turns' replay kept since earlier requests.
    pub fn request_body(&mut self, model: &ModelClient, instructions: &str) -> Result<Bytes, ModelError> {
        self.request_body_with_tools(model, instructions, &std::sync::Arc::new(Vec::new()))
    }

    /// [`Session::request_body`] offering `extra_tools` too (the MCP tools).
    pub fn request_body_with_tools(
        &mut self,
        model: &ModelClient,
        instructions: &str,
        extra_tools: &std::sync::Arc<Vec<Value>>,
    ) -> Result<Bytes, ModelError> {
        let frame = model.body_frame_with_tools(instructions, extra_tools)?;
        self.request_cache.body(&self.transcript, &frame).map_err(encode_error)
    }

    /// Turns with an `unknown` result and no `recovery_ack`.
    pub fn pending_acknowledgement(&self) -> Vec<String> {
        recovery::unacknowledged(&self.transcript).into_iter().map(|t| t.id.clone()).collect()
    }

    /// Appends and syncs one `recovery_ack` per turn (all pending ones when
    /// `turn_ids` is `None`). Returns the acknowledged turns.
    pub fn acknowledge(&mut self, turn_ids: Option<&[String]>) -> Result<Vec<String>, SessionError> {
        let pending = self.pending_acknowledgement();
        let chosen: Vec<String> = match turn_ids {
            None => pending,
            Some(ids) => {
                if let Some(bad) = ids.iter().find(|id| !pending.contains(id)) {
                    return Err(SessionError::NothingToAcknowledge(bad.clone()));
                }
                let mut ids = ids.to_vec();
                let mut seen = std::collections::HashSet::new();
                ids.retain(|id| seen.insert(id.clone()));
                ids
            }
        };
        for turn_id in &chosen {
            self.append(&RecordBody::RecoveryAck { turn_id: turn_id.clone() })?;
            fail::fail_point!("session::after_ack_append");
        }
        self.sync()?;
        fail::fail_point!("session::after_ack_sync");
        Ok(chosen)
    }

    /// The id the next turn opened by [`Session::begin_turn`] gets.
    pub fn next_turn_id(&self) -> String {
        format!("turn-{}", self.transcript.turns.len() + 1)
    }

    /// Opens a turn with the user's input, synced before anything is asked
    /// of the model. Refused while acknowledgement is pending or a turn runs.
    pub fn begin_turn(&mut self, text: &str) -> Result<String, SessionError> {
        self.begin_turn_with_images(text, Vec::new())
    }

    /// [`Session::begin_turn`] with the question's images: checked against
    /// the bounds (`images::check`), each kept beside the session and synced
    /// (file and directory) before the `user` record that names them is
    /// written, so no record ever names an image the disk lacks.
    pub fn begin_turn_with_images(
        &mut self,
        text: &str,
        images: Vec<crate::images::ImageInput>,
    ) -> Result<String, SessionError> {
        if let Some(cause) = self.journal.is_broken() {
            return Err(JournalError::Broken { path: self.path().to_path_buf(), cause: cause.to_string() }.into());
        }
        if let Some(open) = self.transcript.open_turn() {
            return Err(SessionError::TurnInProgress(open.id.clone()));
        }
        if !self.pending_acknowledgement().is_empty() {
            return Err(SessionError::AcknowledgementRequired);
        }
        if text.trim().is_empty() && images.is_empty() {
            return Err(SessionError::InvalidInput("the question is empty; send some text".into()));
        }
        if text.len() > MAX_INPUT_BYTES {
            return Err(SessionError::InvalidInput(format!(
                "the question is {} bytes; at most {MAX_INPUT_BYTES} bytes are accepted (put large content in a file and ask about it)",
                text.len()
            )));
        }
        let checked = crate::images::check(images).map_err(|e| SessionError::InvalidInput(e.to_string()))?;
        if !checked.is_empty() {
            let dir = crate::images::dir_for(self.path());
            crate::images::store(&dir, &checked).map_err(SessionError::ImageStore)?;
            fail::fail_point!("session::after_images_sync");
        }
        let images = checked.into_iter().map(|image| image.reference).collect();
        let turn_id = self.next_turn_id();
        self.append(&RecordBody::User { turn_id: turn_id.clone(), text: text.to_string(), images })?;
        fail::fail_point!("session::after_user_append");
        self.sync()?;
        fail::fail_point!("session::after_user_sync");
        Ok(turn_id)
    }

    /// A test's shortcut: [`Session::record_response`] without the tokens
    /// or the instructions used.
    #[cfg(any(test, feature = "testing"))]
    pub fn record_response_without_usage(&mut self, turn_id: &str, items: Vec<Value>) -> Result<(), SessionError> {
        self.record_response(turn_id, items, None, None)
    }

    /// A finished model response, with the tokens the service reported and
    /// the instructions in force, written through but not synced: if it is
    /// lost, its calls were never started and the turn recovers honestly.
    pub fn record_response(
        &mut self,
        turn_id: &str,
        items: Vec<Value>,
        usage: Option<crate::usage::Usage>,
        instructions: Option<crate::project_instructions::InstructionsUsed>,
    ) -> Result<(), SessionError> {
        let items = items
            .iter()
            .map(serde_json::value::to_raw_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SessionError::Usage(format!("a model output item could not be serialised: {e}")))?;
        self.append(&RecordBody::Response { turn_id: turn_id.to_string(), items, usage, instructions })?;
        fail::fail_point!("session::after_response_append");
        Ok(())
    }

    /// The person's decision, written through; synced with `tool_start`
    /// (approve) or with the `refused` result (deny).
    pub fn record_decision(
        &mut self,
        turn_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), SessionError> {
        self.record_approval(turn_id, call_id, decision, None, Vec::new())
    }

    /// A decision made by rules or the sandbox rather than the person
    /// (`approved_by`; on a denial it is written as `decided_by`), naming
    /// the rules that made it; written through like
    /// [`Self::record_decision`].
    pub fn record_approval(
        &mut self,
        turn_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
        approved_by: Option<crate::journal::record::ApprovedBy>,
        rules: Vec<crate::rules::Rule>,
    ) -> Result<(), SessionError> {
        self.record_approval_of(turn_id, call_id, decision, (approved_by, rules), ApprovalFacts::default())
    }

    /// [`Self::record_approval`] with what the approval showed (a command's
    /// directory, environment and limits), journaled so history can show it
    /// again.
    pub fn record_approval_of(
        &mut self,
        turn_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
        (approved_by, rules): (Option<crate::journal::record::ApprovedBy>, Vec<crate::rules::Rule>),
        facts: ApprovalFacts,
    ) -> Result<(), SessionError> {
        // A decision the person did not make: `approved_by` on an approval,
        // `decided_by` on a denial (deny rules).
        let (approved_by, decided_by) = match decision {
            ApprovalDecision::Approved => (approved_by, None),
            ApprovalDecision::Denied => (None, approved_by),
        };
        self.append(&RecordBody::Approval {
            turn_id: turn_id.into(),
            call_id: call_id.into(),
            decision,
            approved_by,
            decided_by,
            rules,
            facts,
        })?;
        fail::fail_point!("session::after_approval_append");
        Ok(())
    }

    /// A rule the person granted while answering `call_id`, synced: only
    /// once this returns Ok may the rule apply to anything.
    pub fn record_rule(&mut self, turn_id: &str, call_id: &str, rule: crate::rules::Rule) -> Result<(), SessionError> {
        self.append(&RecordBody::Rule { turn_id: turn_id.into(), call_id: call_id.into(), rule })?;
        self.sync()
    }

    /// Revokes a rule this session granted, synced before this returns.
    pub fn record_rule_revoke(&mut self, id: &str) -> Result<(), SessionError> {
        self.append(&RecordBody::RuleRevoke { id: id.into() })?;
        self.sync()
    }

    /// The model this session's requests name from now on, synced: the
    /// session keeps it when reopened. Refused while a turn is open.
    pub fn record_model(&mut self, model: &str) -> Result<(), SessionError> {
        self.append(&RecordBody::Model { model: model.into() })?;
        self.sync()
    }

    /// A test's shortcut: [`Session::record_tool_start`] for a command run
    /// without the sandbox.
    #[cfg(any(test, feature = "testing"))]
    pub fn record_unsandboxed_tool_start(
        &mut self,
        turn_id: &str,
        call_id: &str,
        command: &str,
        cwd: &str,
    ) -> Result<(), SessionError> {
        self.record_tool_start(turn_id, call_id, command, cwd, crate::sandbox::SandboxMode::Off)
    }

    /// The execution boundary of a command that runs in `sandbox` (recorded
    /// unless `off`): the approval and this start are on disk when this
    /// returns Ok, and only then may the command be spawned.
    pub fn record_tool_start(
        &mut self,
        turn_id: &str,
        call_id: &str,
        command: &str,
        cwd: &str,
        sandbox: crate::sandbox::SandboxMode,
    ) -> Result<(), SessionError> {
        self.append_tool_start(RecordBody::ToolStart {
            turn_id: turn_id.into(),
            call_id: call_id.into(),
            command: Some(command.into()),
            edit: None,
            cwd: cwd.into(),
            sandbox: (sandbox != crate::sandbox::SandboxMode::Off).then_some(sandbox),
            mcp: None,
        })
    }

    /// The execution boundary of an MCP tool call: synced before
    /// `tools/call` is sent. `summary` is what history shows as its command.
    pub fn record_mcp_start(
        &mut self,
        turn_id: &str,
        call_id: &str,
        summary: &str,
        cwd: &str,
        mcp: crate::journal::record::McpStartRecord,
    ) -> Result<(), SessionError> {
        self.append_tool_start(RecordBody::ToolStart {
            turn_id: turn_id.into(),
            call_id: call_id.into(),
            command: Some(summary.into()),
            edit: None,
            cwd: cwd.into(),
            sandbox: None,
            mcp: Some(mcp),
        })
    }

    /// Keeps a file's content before an edit in the session's store
    /// (`blobs`), synced, for a rewind. Past a bound, or when it cannot be
    /// written, the edit still goes on: the rewind of that file will say its
    /// before-content was not kept (logged here).
    pub fn keep_before_content(&self, bytes: &[u8], sha256: &str) {
        let dir = crate::blobs::dir_for(self.path());
        match crate::blobs::keep(&dir, bytes, sha256, self.blob_limits) {
            Ok(crate::blobs::Kept::Kept) => {}
            Ok(crate::blobs::Kept::NotKept(why)) => tracing::info!("before-content not kept: {why}"),
            Err(e) => tracing::warn!("before-content not kept: {e}"),
        }
    }

    /// The execution boundary of an edit: the approval and this start (`v`
    /// 3, the proposal's path and hashes) are on disk when this returns Ok,
    /// and only then may the file be written.
    pub fn record_edit_start(
        &mut self,
        turn_id: &str,
        call_id: &str,
        edit: crate::edit::EditStartRecord,
        cwd: &str,
    ) -> Result<(), SessionError> {
        self.append_tool_start(RecordBody::ToolStart {
            turn_id: turn_id.into(),
            call_id: call_id.into(),
            command: None,
            edit: Some(edit),
            cwd: cwd.into(),
            // An edit runs nothing: no sandbox.
            sandbox: None,
            mcp: None,
        })
    }

    /// A call's `tool_start`, appended and synced: the point after which it
    /// may act (commands, reads, MCP calls and edits alike).
    fn append_tool_start(&mut self, start: RecordBody) -> Result<(), SessionError> {
        self.append(&start)?;
        fail::fail_point!("journal::after_tool_start_append");
        self.sync()?;
        fail::fail_point!("journal::after_tool_start_sync");
        Ok(())
    }

    /// Where the supervisor of a started call leaves its evidence: named by
    /// the turn and the call's place in it (see `supervisor::evidence_path`).
    pub fn evidence_target(&self, turn_id: &str, call_id: &str) -> Option<crate::supervisor::EvidenceTarget> {
        let turn = self.transcript.turns.iter().rev().find(|t| t.id == turn_id)?;
        let call_index = turn.calls.iter().position(|c| c.call_id == call_id && c.started && c.result.is_none())?;
        Some(crate::supervisor::EvidenceTarget {
            path: crate::supervisor::evidence_path(self.path(), turn_id, call_index)?,
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            call_index,
        })
    }

    /// The supervisor's evidence about the `call_index`-th call of `turn`,
    /// for a call whose result is `unknown` (the only ones it can add to).
    pub fn evidence(&self, turn: &crate::transcript::Turn, call_index: usize) -> Option<crate::supervisor::Evidence> {
        crate::recovery::evidence_for(self.path(), turn, call_index)
    }

    /// A call's outcome, synced before this returns (and so before the next
    /// model request).
    pub fn record_tool_result(
        &mut self,
        turn_id: &str,
        call_id: &str,
        status: ToolStatus,
        output: &str,
        exit_code: Option<i32>,
    ) -> Result<(), SessionError> {
        self.append(&RecordBody::ToolResult {
            turn_id: turn_id.into(),
            call_id: call_id.into(),
            status,
            output: output.into(),
            exit_code,
            recovered: false,
        })?;
        fail::fail_point!("journal::after_tool_result_append");
        self.sync()?;
        fail::fail_point!("session::after_tool_result_sync");
        Ok(())
    }

    /// Closes by Table 04-1 any call of the open turn still without a
    /// result (a turn that stopped on an error between a response and its
    /// calls), so the turn can end with every call paired.
    pub fn close_unresolved_calls(&mut self, turn_id: &str) -> Result<(), SessionError> {
        let Some(turn) = self.transcript.open_turn().filter(|t| t.id == turn_id) else { return Ok(()) };
        let open: Vec<(String, ToolStatus, String)> = turn
            .calls
            .iter()
            .filter(|c| c.result.is_none())
            .map(|c| {
                let (status, output) = recovery::unresolved_call_result(c);
                (c.call_id.clone(), status, output)
            })
            .collect();
        for (call_id, status, output) in open {
            self.record_tool_result(turn_id, &call_id, status, &output, None)?;
        }
        Ok(())
    }

    /// The model's summary of the turns through `through_turn_id`, synced
    /// before this returns: no request replays it before it is on disk.
    /// (A crash before the sync leaves either no record or the whole one,
    /// checksummed; either way the session is consistent.)
    pub fn record_compaction(
        &mut self,
        through_turn_id: &str,
        summary: String,
        usage: Option<crate::usage::Usage>,
    ) -> Result<(), SessionError> {
        self.append(&RecordBody::Compaction { through_turn_id: through_turn_id.into(), summary, usage })?;
        self.sync()?;
        fail::fail_point!("compaction::after_record_sync");
        Ok(())
    }

    /// The plan for rewinding `turn_id` and every later turn
    /// ([`crate::rewind::plan`]); writes nothing.
    pub fn rewind_plan(&self, turn_id: &str) -> Result<crate::rewind::RewindPlan, crate::rewind::PlanError> {
        let root = std::fs::canonicalize(self.cwd()).unwrap_or_else(|_| PathBuf::from(self.cwd()));
        crate::rewind::plan(&self.transcript, turn_id, &crate::blobs::dir_for(self.path()), &root, self.blob_limits)
    }

    /// The `rewind` record: the confirmed plan, synced before any file is touched.
    pub fn record_rewind(
        &mut self,
        turn_id: &str,
        digest: &str,
        plan: crate::rewind::RewindPlan,
    ) -> Result<(), SessionError> {
        self.append(&RecordBody::Rewind { turn_id: turn_id.into(), digest: digest.into(), plan })?;
        self.sync()
    }

    /// The `rewind_end` record, synced: the rewound turns leave the
    /// model's context from here on.
    pub fn record_rewind_end(
        &mut self,
        turn_id: &str,
        outcomes: Vec<crate::rewind::FileOutcome>,
        recovered: bool,
    ) -> Result<(), SessionError> {
        self.append(&RecordBody::RewindEnd { turn_id: turn_id.into(), outcomes, recovered })?;
        // Earlier turns left the context: no cached prefix still holds.
        self.request_cache = context::RequestCache::default();
        self.sync()
    }

    /// A test's shortcut: [`Session::end_turn`] with no partial text.
    #[cfg(any(test, feature = "testing"))]
    pub fn end_turn_without_partial_text(
        &mut self,
        turn_id: &str,
        status: TurnStatus,
        reason: Option<String>,
    ) -> Result<(), SessionError> {
        self.end_turn(turn_id, status, reason, None)
    }

    /// Ends the turn, synced, keeping the text streamed of a response that
    /// never finished (`partial_text`, cut at [`PARTIAL_TEXT_LIMIT`]): shown
    /// in history, never replayed. The record also carries the session's
    /// tokens so far, for the session list.
    pub fn end_turn(
        &mut self,
        turn_id: &str,
        status: TurnStatus,
        reason: Option<String>,
        partial_text: Option<String>,
    ) -> Result<(), SessionError> {
        let partial_text = partial_text.filter(|t| !t.trim().is_empty()).map(|mut text| {
            if text.len() > PARTIAL_TEXT_LIMIT {
                let mut cut = PARTIAL_TEXT_LIMIT;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            text
        });
        self.append(&RecordBody::TurnEnd {
            turn_id: turn_id.into(),
            status,
            reason,
            partial_text,
            session_usage: self.transcript.usage,
        })?;
        fail::fail_point!("session::after_turn_end_append");
        self.sync()?;
        fail::fail_point!("session::after_turn_end_sync");
        Ok(())
    }

    /// Writes a record through, then applies it: the transcript never holds
    /// what the file does not.
    /// A save point. If it fails, the journal has cut the file back to what
    /// was synced, and the transcript follows it.
    fn sync(&mut self) -> Result<(), SessionError> {
        if let Err(e) = self.journal.sync() {
            self.forget_unsaved();
            return Err(e.into());
        }
        Ok(())
    }

    /// After a failed save: rebuilds the transcript from what the file holds,
    /// so nothing shown (history, results) claims what the disk does not.
    fn forget_unsaved(&mut self) {
        let header = self.transcript.header.clone();
        let mut rebuilt = Transcript::new(header);
        rebuilt.images_dir = self.transcript.images_dir.clone();
        // From the open file, not the path: a journal replaced or deleted
        // while open is why some saves fail, and the path then names
        // something else (or nothing).
        let read = self.journal.saved_bytes().map_err(|e| e.to_string()).and_then(|bytes| {
            crate::journal::visit_bytes(&bytes, |record| match record.body {
                RecordBody::Session { .. } => Ok(()),
                body => rebuilt.apply_owned(body),
            })
            .map_err(|e| e.to_string())
        });
        if let Err(e) = read {
            tracing::error!(path = %self.journal.path().display(), error = %e, "could not re-read the session after a failed save");
        }
        self.transcript = rebuilt;
        self.request_cache = context::RequestCache::default();
    }

    fn append(&mut self, body: &RecordBody) -> Result<(), SessionError> {
        self.transcript
            .check(body)
            .map_err(|reason| SessionError::Usage(format!("refusing to write an inconsistent record: {reason}")))?;
        match self.journal.append(body) {
            Ok(_) => {}
            // Refused before a byte was written: the journal is still whole,
            // so this is not a failed save and the turn can end on file.
            Err(e @ JournalError::TooLarge { .. }) => return Err(SessionError::Usage(e.to_string())),
            Err(e) => {
                self.forget_unsaved();
                return Err(e.into());
            }
        }
        // Checked above, so this cannot fail.
        let _ = self.transcript.apply(body);
        Ok(())
    }
}
