//! A read call's step of a turn (the read tools themselves are
//! `crate::read`): from its arguments to its saved result.
//!
//! Inside the session's directory a read runs without asking, in every
//! approval mode: the mode is never consulted, so no mode (present or
//! added later) can make a read inside ask, or a read outside run
//! unasked. Its `approval` (`approved_by: workspace`) and `tool_start` are
//! synced before it reads, and its result before the next model request,
//! as for every call. A path outside the workspace (or leading out of it)
//! is asked about like any call, and nothing about the path (not even
//! whether it exists) reaches the model before the approval: a refusal
//! answers as the denial of any command.

use super::*;
use crate::read::{self as read_tools, Place, ReadArgs, ReadOutcome, ReadTool};

/// A read that was cancelled before it was approved.
const READ_CANCELLED_BEFORE_START: &str = "The turn was cancelled before this read was approved; nothing was read.";
/// A read that was cancelled after its start was saved.
const READ_CANCELLED_BEFORE_READ: &str = "The turn was cancelled before this read ran; nothing was read.";
/// A read of a path outside the workspace that the person refused.
const READ_REFUSED: &str = "The user denied this read; nothing was read.";

impl Agent {
    /// One `read_file` / `list_files` / `search` call. Returns whether the
    /// turn was cancelled during it.
    pub(super) async fn handle_read_call(
        &self,
        turn_id: &str,
        call_id: &str,
        tool: ReadTool,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        let args = match ReadArgs::parse(tool, arguments) {
            Ok(args) => args,
            Err(why) => {
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why, None).await?;
                return Ok(false);
            }
        };
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::NOT_RUN_AFTER_CANCEL, None).await?;
            return Ok(true);
        }
        let summary = args.summary();
        let directory = lock(&self.state.bash).cwd().to_path_buf();
        let located = blocking({
            let args = args.clone();
            move || -> Result<(Workspace, Place), String> {
                let workspace = Workspace::new(&directory).map_err(|e| {
                    format!(
                        "The session's directory {} cannot be resolved ({e}); nothing was read.",
                        directory.display()
                    )
                })?;
                let place = read_tools::locate(&workspace, &args)?;
                Ok((workspace, place))
            }
        })
        .await;
        let (workspace, place) = match located {
            Ok(located) => located,
            Err(why) => {
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why, None).await?;
                return Ok(false);
            }
        };
        let directory_path = lock(&self.state.bash).cwd().to_path_buf();
        let directory = directory_path.display().to_string();
        let (target, approved_by, info) = match place {
            Place::Inside(target) => (Ok(target), Some(ApprovedBy::Workspace), args.info(None, false)),
            Place::Outside { shown, target } => {
                let approval_mode = lock(&self.state.policy).approval_mode;
                let request = AgentEvent::ApprovalRequest {
                    turn_id: turn_id.to_string(),
                    call_id: call_id.to_string(),
                    command: summary.clone(),
                    directory: directory.clone(),
                    // Nothing runs: no environment, no command limits.
                    environment: BTreeMap::new(),
                    limits: bash::Limits { timeout: Duration::ZERO, output_limit: 0, kill_grace: Duration::ZERO },
                    edit: None,
                    sandbox: SandboxMode::Off,
                    approval_mode,
                    // A read outside is asked about each time.
                    suggested_rule: None,
                    deny_rules: Vec::new(),
                    read: Some(args.info(Some(shown.display().to_string()), true)),
                    mcp: None,
                };
                let decision = self.wait_for_decision(turn_id, call_id, None, request, cancel).await;
                match self.grant_rule(turn_id, call_id, decision).await? {
                    None => {
                        self.save_result(turn_id, call_id, ToolStatus::NotExecuted, READ_CANCELLED_BEFORE_START, None)
                            .await?;
                        return Ok(true);
                    }
                    // No hunks are offered for a read; were some accepted, nothing is read.
                    Some(Answer::Deny { reason }) => {
                        self.record_denial(turn_id, call_id, reason, READ_REFUSED, ApprovalFacts::default()).await?;
                        return Ok(false);
                    }
                    Some(Answer::ApproveHunks(_)) => {
                        self.record_denial(turn_id, call_id, None, READ_REFUSED, ApprovalFacts::default()).await?;
                        return Ok(false);
                    }
                    Some(Answer::Approve) => (target, None, args.info(None, true)),
                }
            }
        };
        let (t, c, cmd, dir) = (turn_id.to_string(), call_id.to_string(), summary.clone(), directory);
        self.with_session_io(move |s| {
            s.record_approval_of(
                &t,
                &c,
                ApprovalDecision::Approved,
                (approved_by, Vec::new()),
                ApprovalFacts::default(),
            )?;
            // Reads run in-process, outside any sandbox: they change nothing.
            s.record_tool_start(&t, &c, &cmd, &dir, SandboxMode::Off)
        })
        .await?;
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::Cancelled, READ_CANCELLED_BEFORE_READ, None).await?;
            return Ok(true);
        }
        self.emit(AgentEvent::ToolStarted {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary,
            approver: Approver::of(approved_by, &[]),
            sandbox: SandboxMode::Off,
            tool: Some(CallTool::Read(tool)),
            read: Some(info),
        });
        // A file open in the person's editor is read as the editor holds it
        // (unsaved changes included), when a front door can ask; only inside
        // the workspace, as for edits.
        let editor_text = match (&target, tool, approved_by.as_ref()) {
            (Ok(_), ReadTool::ReadFile, Some(ApprovedBy::Workspace)) => {
                self.editor_text(Path::new(&directory_path), args.path(), cancel).await
            }
            _ => None,
        };
        let outcome = match target {
            Ok(target) => {
                blocking(move || {
                    editor_text
                        .and_then(|text| read_tools::run_on_editor_text(&args, &target, &text))
                        .unwrap_or_else(|| read_tools::run(&workspace, &args, &target))
                })
                .await
            }
            // Outside and approved: only now may the model learn why it cannot be read.
            Err(why) => ReadOutcome { status: ToolStatus::Failed, output: why },
        };
        fail::fail_point!("agent::before_read_result");
        self.save_result(turn_id, call_id, outcome.status, &outcome.output, None).await?;
        Ok(false)
    }
}
