//! The edit call: an `edit_file` / `write_file` call from its proposal
//! (the diff the person approves) to its saved result.

use super::*;

/// What the person approves for an edit call (`mino/approvalRequest`'s `edit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditApproval {
    pub tool: EditTool,
    /// Relative to the session's directory when inside it, else absolute
    /// (every symbolic link resolved): where the edit writes.
    pub path: String,
    pub new_file: bool,
    /// Size in bytes of the file's content after the edit.
    pub size: u64,
    /// The unified diff from the content now to the content after.
    pub diff: String,
    /// The path is outside the session's directory.
    pub leaves_workspace: bool,
    /// Why the path is protected ([`crate::protect::why_protected`]): the
    /// edit is asked about whatever rule or mode is in force.
    pub protected: Option<String>,
    /// The file written, absolute, every symbolic link resolved.
    pub absolute_path: PathBuf,
    /// The whole content before the edit (`None` for a new file) and after
    /// it, as the proposal computed them: for diff views (ACP's `diff`
    /// content) that need both sides, without reading the file again.
    pub old_text: Option<Arc<str>>,
    pub new_text: Arc<str>,
    /// `old_text` (and the diff) is the text the person's editor holds,
    /// with changes not saved ([`crate::buffers::OpenBuffers`]): applying
    /// writes those changes too.
    pub from_editor: bool,
}

impl Agent {
    /// One `edit_file` / `write_file` call, from proposal to saved result.
    /// Returns whether the turn was cancelled during it.
    ///
    /// A call that cannot be proposed (bad arguments, `old_text` absent or
    /// ambiguous, a binary file…) gets a `failed` result saying why, and
    /// nobody is asked. Otherwise the person approves the diff; the
    /// approval and the `tool_start` (path and hashes) are synced before
    /// [`edit::apply`] writes, and `apply` refuses, writing nothing, when
    /// the file changed since the proposal.
    pub(super) async fn handle_edit_call(
        &self,
        turn_id: &str,
        call_id: &str,
        tool: EditTool,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        let args = match EditArgs::parse(tool, arguments) {
            Ok(args) => args,
            Err(why) => {
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why.to_string(), None).await?;
                return Ok(false);
            }
        };
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::NOT_RUN_AFTER_CANCEL, None).await?;
            return Ok(true);
        }
        let summary = edit::summary(tool, args.path());
        let directory = lock(&self.state.bash).cwd().to_path_buf();
        let editor_text = self.editor_text(&directory, args.path(), cancel).await;
        // Reading and hashing up to 4 MiB (and diffing) is blocking work.
        let proposed = blocking(move || -> Result<(Workspace, EditProposal), (String, Option<PathBuf>)> {
            let workspace = Workspace::new(&directory).map_err(|e| {
                let why = format!(
                    "The session's directory {} cannot be resolved ({e}); nothing was written.",
                    directory.display()
                );
                (why, None)
            })?;
            let proposal = edit::propose_with_editor_text(&workspace, &args, editor_text.as_deref())
                .map_err(|r| (r.error.to_string(), r.outside))?;
            Ok((workspace, proposal))
        })
        .await;
        let (workspace, proposal) = match proposed {
            Ok(proposed) => proposed,
            Err((why, Some(outside))) => {
                return self.ask_before_telling(turn_id, call_id, tool, &summary, why, outside, cancel).await;
            }
            Err((why, None)) => {
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why, None).await?;
                return Ok(false);
            }
        };
        let directory = lock(&self.state.bash).cwd().display().to_string();
        let relative = workspace.display_path(&proposal.path);
        let granted = self.with_session(|s| s.transcript().rules.clone());
        let protected = {
            let home = lock(&self.state.bash).home().map(Path::to_path_buf);
            crate::protect::why_protected(Path::new(&directory), home.as_deref(), &proposal.path)
        };
        let (approval_mode, by_rules) = {
            let policy = lock(&self.state.policy);
            let by_rules = crate::policy::edit_decision(
                &policy,
                &granted,
                &relative,
                proposal.leaves_workspace,
                protected.is_some(),
            );
            (policy.approval_mode, by_rules)
        };
        let request = AgentEvent::ApprovalRequest {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary.clone(),
            directory: directory.clone(),
            // Nothing runs: no environment, no command limits.
            environment: BTreeMap::new(),
            limits: bash::Limits { timeout: Duration::ZERO, output_limit: 0, kill_grace: Duration::ZERO },
            edit: Some(EditApproval {
                tool,
                path: relative.clone(),
                new_file: proposal.new_file,
                size: proposal.after.size,
                diff: proposal.diff.clone(),
                leaves_workspace: proposal.leaves_workspace,
                protected: protected.clone(),
                absolute_path: proposal.path.clone(),
                old_text: proposal.before_content().map(Arc::from),
                new_text: Arc::from(proposal.after_content()),
                from_editor: proposal.from_editor,
            }),
            // The sandbox covers commands only.
            sandbox: SandboxMode::Off,
            approval_mode,
            // A rule would never approve a protected path: none is offered.
            suggested_rule: crate::policy::SuggestedRule::for_path(&relative, proposal.leaves_workspace)
                .filter(|_| protected.is_none()),
            deny_rules: Vec::new(),
            read: None,
            mcp: None,
        };
        let (decision, rules) = match by_rules {
            Some(RuleDecision::Denied(rules)) => return self.deny_by_rules(turn_id, call_id, rules).await,
            Some(RuleDecision::Allowed(rules)) => (Some(Answer::Approve), rules),
            None => {
                let hunks = Some(proposal.hunk_count());
                let decision = self.wait_for_decision(turn_id, call_id, hunks, request, cancel).await;
                (self.grant_rule(turn_id, call_id, decision).await?, Vec::new())
            }
        };
        // Approved in part: the proposal becomes the accepted hunks alone,
        // computed from the content it was made from, and that is what is
        // journaled (the approval names the hunks, tool_start hashes the
        // narrowed content) and written.
        let (decision, proposal, accepted_hunks) = match decision {
            Some(Answer::ApproveHunks(hunks)) => match proposal.narrowed(&hunks) {
                Ok(narrowed) => {
                    let accepted = narrowed.narrowed.as_ref().map(|n| n.accepted.iter().map(|&i| i as u32).collect());
                    (Some(Answer::Approve), narrowed, accepted)
                }
                // Checked by `decide`; were it not, nothing is written.
                Err(why) => {
                    let output = format!("Not applied: {why}. Nothing was written.");
                    self.save_result(turn_id, call_id, ToolStatus::Failed, &output, None).await?;
                    return Ok(false);
                }
            },
            other => (other, proposal, None),
        };
        let approved_by = (!rules.is_empty()).then_some(ApprovedBy::Rule);
        let approver = Approver::of(approved_by, &rules);
        match decision {
            None => {
                self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::EDIT_CANCELLED_BEFORE_START, None)
                    .await?;
                Ok(true)
            }
            Some(Answer::Deny { reason }) => {
                self.record_denial(turn_id, call_id, reason, outputs::EDIT_REFUSED, ApprovalFacts::default()).await?;
                Ok(false)
            }
            // Made plain above, with the proposal narrowed; were it not, nothing is written.
            Some(Answer::ApproveHunks(_)) => {
                let output = "Not applied: the accepted hunks were not applied to the proposal. Nothing was written.";
                self.save_result(turn_id, call_id, ToolStatus::Failed, output, None).await?;
                Ok(false)
            }
            Some(Answer::Approve) => {
                let (t, c, start) = (turn_id.to_string(), call_id.to_string(), proposal.start_record());
                let facts = ApprovalFacts { accepted_hunks, ..ApprovalFacts::default() };
                // What a rewind puts back, kept (and synced) before the start
                // record that lets the write happen.
                let before = proposal.before_on_disk().map(str::to_string).zip(start.before_sha256.clone());
                self.with_session_io(move |s| {
                    if let Some((content, sha256)) = before {
                        s.keep_before_content(content.as_bytes(), &sha256);
                    }
                    s.record_approval_of(&t, &c, ApprovalDecision::Approved, (approved_by, rules), facts)?;
                    s.record_edit_start(&t, &c, start, &directory)
                })
                .await?;
                if cancel.is_cancelled() {
                    self.save_result(
                        turn_id,
                        call_id,
                        ToolStatus::Cancelled,
                        outputs::EDIT_CANCELLED_BEFORE_WRITE,
                        None,
                    )
                    .await?;
                    return Ok(true);
                }
                // The approval and tool_start are on disk: only now may it write.
                self.emit(AgentEvent::ToolStarted {
                    turn_id: turn_id.to_string(),
                    call_id: call_id.to_string(),
                    command: summary,
                    approver,
                    sandbox: SandboxMode::Off,
                    tool: Some(CallTool::Edit(tool)),
                    read: None,
                });
                fail::fail_point!("agent::before_edit_write");
                let applied = blocking(move || edit::apply(&workspace, &proposal)).await;
                fail::fail_point!("agent::before_tool_result");
                match applied {
                    Ok(applied) => {
                        self.save_result_with_diff(
                            turn_id,
                            call_id,
                            ToolStatus::Success,
                            &applied.output,
                            None,
                            Some(applied.diff),
                        )
                        .await?
                    }
                    Err(refused) => {
                        self.save_result(turn_id, call_id, ToolStatus::Failed, &refused.to_string(), None).await?
                    }
                }
                Ok(false)
            }
        }
    }

    /// An edit outside the workspace that cannot be proposed: the reason
    /// (the file is absent, lacks `old_text`, already holds the content,
    /// is binary or too large…) tells the model something about a file
    /// outside, so it is told only once the person approved, as for any
    /// edit there. The person sees the path and the reason instead of a
    /// diff; a denial answers exactly as the denial of a real diff, so the
    /// model cannot tell the two apart. Nothing is written either way.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn ask_before_telling(
        &self,
        turn_id: &str,
        call_id: &str,
        tool: EditTool,
        summary: &str,
        why: String,
        outside: PathBuf,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        let directory = lock(&self.state.bash).cwd().display().to_string();
        let approval_mode = lock(&self.state.policy).approval_mode;
        let shown = outside.display().to_string();
        let request = AgentEvent::ApprovalRequest {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary.to_string(),
            directory,
            environment: BTreeMap::new(),
            limits: bash::Limits { timeout: Duration::ZERO, output_limit: 0, kill_grace: Duration::ZERO },
            edit: Some(EditApproval {
                tool,
                path: shown.clone(),
                new_file: false,
                size: 0,
                diff: outputs::unproposable_outside(&shown, &why),
                leaves_workspace: true,
                absolute_path: outside,
                // Both sides empty: a diff view shows no change (none is proposed).
                old_text: Some(Arc::from("")),
                new_text: Arc::from(""),
                protected: None,
                from_editor: false,
            }),
            sandbox: SandboxMode::Off,
            approval_mode,
            suggested_rule: None,
            deny_rules: Vec::new(),
            read: None,
            mcp: None,
        };
        // No diff is proposed, so there are no hunks to narrow.
        let decision = self.wait_for_decision(turn_id, call_id, None, request, cancel).await;
        match self.grant_rule(turn_id, call_id, decision).await? {
            None => {
                self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::EDIT_CANCELLED_BEFORE_START, None)
                    .await?;
                Ok(true)
            }
            Some(Answer::Deny { reason }) => {
                self.record_denial(turn_id, call_id, reason, outputs::EDIT_REFUSED, ApprovalFacts::default()).await?;
                Ok(false)
            }
            // With no hunks offered, a narrowed approval is refused before it gets here.
            Some(Answer::Approve | Answer::ApproveHunks(_)) => {
                let (t, c) = (turn_id.to_string(), call_id.to_string());
                self.with_session_io(move |s| s.record_approval(&t, &c, ApprovalDecision::Approved, None, Vec::new()))
                    .await?;
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why, None).await?;
                Ok(false)
            }
        }
    }
}
