//! The bash call: a model's call dispatched to its tool, a command decided
//! by the rules, the sandbox or the person, then run under its supervisor
//! once its approval and `tool_start` are synced.

use super::*;

/// Live output streamed to the client per call; the saved result has its own cap.
pub const LIVE_OUTPUT_LIMIT: usize = 1024 * 1024;

impl Agent {
    /// One call, from approval to saved result. Returns whether the turn was
    /// cancelled during it.
    pub(super) async fn handle_call(
        &self,
        turn_id: &str,
        call_id: &str,
        name: &str,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        if lock(&self.state.policy).approval_mode.refuses_unasked(name) {
            // Refused without asking and without a `tool_start`: recovery
            // can only ever find it not executed.
            tracing::info!(turn_id, call_id, "refused: plan mode");
            self.save_result(turn_id, call_id, ToolStatus::Refused, outputs::PLAN_MODE, None).await?;
            return Ok(false);
        }
        if let Some(tool) = EditTool::from_name(name) {
            return self.handle_edit_call(turn_id, call_id, tool, arguments, cancel).await;
        }
        if let Some(tool) = crate::read::ReadTool::from_name(name) {
            return self.handle_read_call(turn_id, call_id, tool, arguments, cancel).await;
        }
        if crate::mcp::McpManager::is_mcp_name(name) {
            return self.handle_mcp_call(turn_id, call_id, name, arguments, cancel).await;
        }
        if name != "bash" {
            let output = format!("Unknown tool `{name}`; the tools are `bash`, `edit_file`, `write_file`, `read_file`, `list_files` and `search`.");
            self.save_result(turn_id, call_id, ToolStatus::Failed, &output, None).await?;
            return Ok(false);
        }
        let command = match crate::calls::command_of(arguments) {
            Ok(command) => command,
            Err(why) => {
                self.save_result(turn_id, call_id, ToolStatus::Failed, &why, None).await?;
                return Ok(false);
            }
        };
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::NOT_RUN_AFTER_CANCEL, None).await?;
            return Ok(true);
        }

        // What would approve it without asking, decided from the policy as
        // it stands now; the mode shown is the mode it runs in.
        let granted = self.with_session(|s| s.transcript().rules.clone());
        let (sandbox, approval_mode, by_rules, by_sandbox, deny_rules) = {
            let policy = lock(&self.state.policy);
            let by_rules = crate::policy::command_decision(&policy, &granted, &command);
            let deny_rules = crate::policy::deny_rules_in_reach(&policy, &granted, &command);
            (policy.sandbox, policy.approval_mode, by_rules, policy.sandbox_approves(), deny_rules)
        };
        let automatic = match by_rules {
            // Deny wins over allow rules and over the sandbox.
            Some(RuleDecision::Denied(rules)) => return self.deny_by_rules(turn_id, call_id, rules).await,
            // ... and so does a deny rule the command might reach unseen.
            _ if !deny_rules.is_empty() => None,
            Some(RuleDecision::Allowed(rules)) => Some((ApprovedBy::Rule, rules)),
            None => by_sandbox.then(|| (ApprovedBy::Sandbox, Vec::new())),
        };
        if let Some((by, rules)) = automatic {
            tracing::info!(turn_id, call_id, approved_by = ?by, "approved without asking");
            return self.run_approved(turn_id, call_id, &command, (Some(by), rules), sandbox, cancel).await;
        }

        let (request, facts) = {
            let bash = lock(&self.state.bash);
            let facts = bash.approval_facts();
            (
                AgentEvent::ApprovalRequest {
                    turn_id: turn_id.to_string(),
                    call_id: call_id.to_string(),
                    command: command.clone(),
                    directory: bash.cwd().display().to_string(),
                    environment: bash.environment().clone(),
                    limits: bash.limits(),
                    edit: None,
                    sandbox,
                    approval_mode,
                    suggested_rule: crate::policy::SuggestedRule::for_command(&command),
                    deny_rules,
                    read: None,
                    mcp: None,
                },
                facts,
            )
        };
        let decision = self.wait_for_decision(turn_id, call_id, None, request, cancel).await;
        match self.grant_rule(turn_id, call_id, decision).await? {
            None => {
                self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::CANCELLED_BEFORE_START, None)
                    .await?;
                Ok(true)
            }
            Some(Answer::Deny { reason }) => {
                self.record_denial(turn_id, call_id, reason, outputs::REFUSED, facts).await?;
                Ok(false)
            }
            Some(Answer::Approve) => {
                self.run_approved(turn_id, call_id, &command, (None, Vec::new()), sandbox, cancel).await
            }
            // `decide` refuses hunks for a command; were one to arrive, nothing runs.
            Some(Answer::ApproveHunks(_)) => {
                self.record_denial(turn_id, call_id, None, outputs::REFUSED, facts).await?;
                Ok(false)
            }
        }
    }

    /// Runs an approved call: its approval (saying who approved it) and its
    /// start (saying the sandbox) are synced first, then it runs in that
    /// sandbox and its result is saved. Returns whether the turn was
    /// cancelled during it.
    pub(super) async fn run_approved(
        &self,
        turn_id: &str,
        call_id: &str,
        command: &str,
        (approved_by, rules): (Option<ApprovedBy>, Vec<Rule>),
        sandbox: SandboxMode,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        let approver = Approver::of(approved_by, &rules);
        let bash = BashTool::clone(&lock(&self.state.bash)).with_sandbox(sandbox);
        let directory = bash.cwd().display().to_string();
        let facts = bash.approval_facts();
        // Started now, it gets ready while the approval and start are
        // synced; it runs nothing until it is given the command below, and
        // exits unused if it is dropped (a failed save, a cancel). With the
        // editor's terminals, the editor starts it, and only once both are
        // synced: asking the editor is the first thing that leaves Mino.
        let terminals = lock(&self.state.command_terminals).clone();
        let supervisor = terminals.is_none().then(|| bash.start_supervisor());
        let (t, c, cmd) = (turn_id.to_string(), call_id.to_string(), command.to_string());
        let evidence = self
            .with_session_io(move |s| {
                s.record_approval_of(&t, &c, ApprovalDecision::Approved, (approved_by, rules), facts)?;
                s.record_tool_start(&t, &c, &cmd, &directory, sandbox)?;
                Ok::<_, SessionError>(s.evidence_target(&t, &c))
            })
            .await?;
        if cancel.is_cancelled() {
            // Cancelled while the start was being saved: the start is
            // on file, so the result says plainly that it never ran.
            self.save_result(turn_id, call_id, ToolStatus::Cancelled, outputs::CANCELLED_BEFORE_SPAWN, None).await?;
            return Ok(true);
        }
        // The approval and tool_start are on disk: only now may it run.
        self.emit(AgentEvent::ToolStarted {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: command.to_string(),
            approver,
            sandbox,
            tool: None,
            read: None,
        });
        let (supervisor, terminal) = match (supervisor, terminals) {
            (Some(supervisor), _) => (supervisor, None),
            (None, None) => (bash.start_supervisor(), None),
            (None, Some(terminals)) => {
                let asked = bash.start_in_terminal(&*terminals, turn_id, call_id);
                let started = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => None,
                    started = asked => Some(started),
                };
                let Some(started) = started else {
                    self.save_result(turn_id, call_id, ToolStatus::Cancelled, outputs::CANCELLED_BEFORE_SPAWN, None)
                        .await?;
                    return Ok(true);
                };
                let (supervisor, terminal_id, note) = match started {
                    Ok((supervisor, id)) => (supervisor, Some(id), None),
                    // Nothing has run: Mino runs it itself, as without a terminal.
                    Err(why) => (bash.start_supervisor(), None, Some(outputs::terminal_fallback(&why))),
                };
                self.emit(AgentEvent::ToolTerminal {
                    turn_id: turn_id.to_string(),
                    call_id: call_id.to_string(),
                    terminal_id: terminal_id.clone(),
                    note,
                });
                (supervisor, terminal_id.map(|id| (terminals, id)))
            }
        };
        fail::fail_point!("agent::before_spawn");
        let mut streamed = 0usize;
        let mut on_output = |stream: Stream, chunk: &str| {
            // The saved result keeps head and tail within the output
            // limit; live output stops too, so a runaway command
            // cannot flood the client (or the server's queues).
            if streamed >= LIVE_OUTPUT_LIMIT {
                return;
            }
            streamed += chunk.len();
            let chunk = if streamed >= LIVE_OUTPUT_LIMIT {
                format!("{chunk}\n[live output stopped after {LIVE_OUTPUT_LIMIT} bytes; the result keeps the head and tail]\n")
            } else {
                chunk.to_string()
            };
            // The command is running (it has written output).
            fail::fail_point!("agent::after_spawn");
            self.emit(AgentEvent::ToolOutput {
                turn_id: turn_id.to_string(),
                call_id: call_id.to_string(),
                stream,
                chunk,
            })
        };
        let (outcome, settle) = bash.run_recorded(supervisor, command, evidence, &mut on_output, cancel).await;
        fail::fail_point!("agent::before_tool_result");
        // Unsaved, `settle` is dropped: the supervisor hears that
        // and leaves its evidence for the unknown result.
        self.save_result(turn_id, call_id, outcome.status, &outcome.output, outcome.exit_code).await?;
        settle.saved().await;
        if let Some((terminals, id)) = terminal {
            // The result is Mino's and saved; the editor's terminal is tidied
            // up without holding up the turn.
            tokio::spawn(terminals.finish(id, outcome.status == ToolStatus::Cancelled));
        }
        Ok(outcome.status == ToolStatus::Cancelled)
    }
}
