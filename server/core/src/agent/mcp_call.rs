//! An MCP tool call's step of a turn (the client itself is `crate::mcp`):
//! from the model's call to its saved result, with the same save points as
//! a command. The person approves every call unless an MCP
//! rule decides it (`rules` and `sandboxed-auto` modes; deny wins; a tool's
//! annotations are shown, never trusted); a rule granted while answering is
//! synced before anything is sent, and the `approval` and the
//! `tool_start` (server, tool, arguments) are synced before `tools/call`
//! is sent, and the result before the next model request. A start without
//! a saved result is recovered `unknown`, like a command's.

use super::*;
use crate::journal::record::McpStartRecord;
use crate::mcp::{McpApproval, McpManager};

const MCP_REFUSED: &str = "The user denied this MCP tool call; it was not sent to the server.";
const MCP_CANCELLED_BEFORE_START: &str =
    "The turn was cancelled before this MCP tool call was approved; it was not sent to the server.";
const MCP_CANCELLED_BEFORE_SEND: &str =
    "The turn was cancelled after this MCP tool call was approved and before it was sent; it was not sent to the server.";

impl Agent {
    /// The session's MCP servers.
    pub fn mcp(&self) -> &McpManager {
        &self.state.mcp
    }

    /// Adds `servers` to the session's and starts them all in the
    /// background (concurrently, each within its start-up limit); their
    /// states arrive as [`AgentEvent::McpStatus`].
    pub fn start_mcp(&self, servers: Vec<crate::mcp::McpServerConfig>) -> Option<tokio::task::JoinHandle<()>> {
        if servers.is_empty() && self.state.mcp.is_empty() {
            return None;
        }
        let weak = Arc::downgrade(&self.state);
        self.state.mcp.set_notifier(move |status| {
            if let Some(state) = weak.upgrade() {
                Agent { state }.emit(AgentEvent::McpStatus { status });
            }
        });
        self.state.mcp.add(servers);
        self.state.mcp.set_workspace(lock(&self.state.bash).cwd().to_path_buf());
        let manager = self.state.mcp.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no runtime to start the MCP servers on");
            return None;
        };
        Some(runtime.spawn(async move { manager.start_all().await }))
    }

    /// One call of an MCP tool (`mcp__<server>__<tool>`). Returns whether
    /// the turn was cancelled during it.
    pub(super) async fn handle_mcp_call(
        &self,
        turn_id: &str,
        call_id: &str,
        name: &str,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        let Some(tool) = self.state.mcp.resolve(name) else {
            let states: Vec<String> =
                self.state.mcp.statuses().iter().map(|s| format!("`{}` {}", s.server, s.state.as_str())).collect();
            let output = format!(
                "No MCP server offers the tool `{name}` now (servers: {}); nothing was called.",
                if states.is_empty() { "none".to_string() } else { states.join(", ") }
            );
            self.save_result(turn_id, call_id, ToolStatus::Failed, &output, None).await?;
            return Ok(false);
        };
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::NotExecuted, outputs::NOT_RUN_AFTER_CANCEL, None).await?;
            return Ok(true);
        }
        let summary = crate::mcp::summary(&tool.server, &tool.tool, arguments);
        let directory = lock(&self.state.bash).cwd().display().to_string();
        let granted = self.with_session(|s| s.transcript().rules.clone());
        let (approval_mode, by_rules) = {
            let policy = lock(&self.state.policy);
            (policy.approval_mode, crate::policy::mcp_decision(&policy, &granted, &tool.server, &tool.tool))
        };
        let approved_by = match by_rules {
            Some(RuleDecision::Denied(rules)) => return self.deny_by_rules(turn_id, call_id, rules).await,
            Some(RuleDecision::Allowed(rules)) => {
                tracing::info!(turn_id, call_id, "MCP call approved by a rule without asking");
                (Some(ApprovedBy::Rule), rules)
            }
            None => match self
                .ask_mcp(turn_id, call_id, &tool, &summary, &directory, approval_mode, arguments, cancel)
                .await?
            {
                Some(approved) => approved,
                None => return Ok(cancel.is_cancelled()),
            },
        };
        let start =
            McpStartRecord { server: tool.server.clone(), tool: tool.tool.clone(), arguments: arguments.to_string() };
        let approver = Approver::of(approved_by.0, &approved_by.1);
        let (t, c, cmd, dir) = (turn_id.to_string(), call_id.to_string(), summary.clone(), directory);
        let target = self
            .with_session_io(move |s| {
                s.record_approval_of(&t, &c, ApprovalDecision::Approved, approved_by, ApprovalFacts::default())?;
                s.record_mcp_start(&t, &c, &cmd, &dir, start)?;
                Ok::<_, SessionError>(s.evidence_target(&t, &c))
            })
            .await?;
        // The server's supervisor hears of the call before it is sent and
        // of its end once its result is saved: were Mino to stop between
        // the two, it leaves evidence of what became of the server.
        let tracker = self.state.mcp.call_tracker(&tool.server);
        let tracked = target.map(|target| {
            let told =
                tracker.begin(&crate::mcp::process::InFlightCall { target: target.clone(), tool: tool.tool.clone() });
            (target, told)
        });
        let result = self.send_mcp_call(turn_id, call_id, &tool, arguments, summary, approver, cancel).await;
        if let Some((target, true)) = &tracked {
            tracker.end(target);
        }
        result
    }

    /// Sends the approved, started call and saves its result.
    #[allow(clippy::too_many_arguments)]
    async fn send_mcp_call(
        &self,
        turn_id: &str,
        call_id: &str,
        tool: &crate::mcp::OfferedTool,
        arguments: &str,
        summary: String,
        approver: Approver,
        cancel: &CancellationToken,
    ) -> Result<bool, SessionError> {
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::Cancelled, MCP_CANCELLED_BEFORE_SEND, None).await?;
            return Ok(true);
        }
        // The approval and tool_start are on disk: only now is the call sent.
        self.emit(AgentEvent::ToolStarted {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary,
            approver,
            sandbox: SandboxMode::Off,
            tool: None,
            read: None,
        });
        fail::fail_point!("agent::before_mcp_call");
        let outcome = self.state.mcp.call(tool, arguments, cancel).await;
        fail::fail_point!("agent::before_tool_result");
        self.save_result(turn_id, call_id, outcome.status, &outcome.output, None).await?;
        Ok(outcome.status == ToolStatus::Cancelled)
    }
}

impl Agent {
    /// Asks the person about an MCP call and grants the rule their answer
    /// carries (synced, and written to the workspace rules file for a
    /// workspace rule) before anything is sent. `Some` approver facts when
    /// approved; `None` when it is not to be sent, its result saved
    /// (refused, or `not_executed` on a cancel).
    #[allow(clippy::too_many_arguments)]
    async fn ask_mcp(
        &self,
        turn_id: &str,
        call_id: &str,
        tool: &crate::mcp::OfferedTool,
        summary: &str,
        directory: &str,
        approval_mode: ApprovalMode,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<(Option<ApprovedBy>, Vec<Rule>)>, SessionError> {
        let timeout = self.state.mcp.tool_timeout(&tool.server);
        let request = AgentEvent::ApprovalRequest {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary.to_string(),
            directory: directory.to_string(),
            // The server's environment is its own (and may hold secrets): not shown.
            environment: BTreeMap::new(),
            limits: bash::Limits { timeout, output_limit: bash::DEFAULT_OUTPUT_LIMIT, kill_grace: Duration::ZERO },
            edit: None,
            sandbox: SandboxMode::Off,
            approval_mode,
            // This tool; its server's every tool is the same with `*`.
            suggested_rule: crate::policy::SuggestedRule::for_mcp(&tool.server, &tool.tool),
            deny_rules: Vec::new(),
            read: None,
            mcp: Some(McpApproval {
                server: tool.server.clone(),
                tool: tool.tool.clone(),
                arguments: arguments.to_string(),
                annotations: tool.annotations.clone(),
            }),
        };
        let decision = match self.wait_for_decision(turn_id, call_id, None, request, cancel).await {
            // Only an MCP rule for this very server may be granted here: a
            // command or path rule (or another server's) would not cover
            // this call, so the answer is refused rather than recorded.
            Some(Decision::Allow(rule) | Decision::DenyWithRule(rule))
                if rule.mcp_tool().and_then(|t| t.split_once('/')).is_none_or(|(server, _)| server != tool.server) =>
            {
                tracing::warn!(turn_id, call_id, rule = %rule.describe(), "a rule that does not cover this MCP call was asked for: denied");
                Some(Decision::Deny { reason: None })
            }
            other => other,
        };
        match self.grant_rule(turn_id, call_id, decision).await? {
            None => {
                self.save_result(turn_id, call_id, ToolStatus::NotExecuted, MCP_CANCELLED_BEFORE_START, None).await?;
                Ok(None)
            }
            Some(Answer::Deny { reason }) => {
                self.record_denial(turn_id, call_id, reason, MCP_REFUSED, ApprovalFacts::default()).await?;
                Ok(None)
            }
            // No hunks are offered for an MCP call; were some accepted, nothing is sent.
            Some(Answer::ApproveHunks(_)) => {
                self.record_denial(turn_id, call_id, None, MCP_REFUSED, ApprovalFacts::default()).await?;
                Ok(None)
            }
            Some(Answer::Approve) => Ok(Some((None, Vec::new()))),
        }
    }
}
