//! An MCP tool call's step of a turn (the client itself is `crate::mcp`):
//! from the model's call to its saved result, with the same save points as
//! a command. The person approves every call (a tool's
//! annotations are shown, never trusted); the `approval` and the
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
        let approval_mode = lock(&self.state.policy).approval_mode;
        let timeout = self.state.mcp.tool_timeout(&tool.server);
        let request = AgentEvent::ApprovalRequest {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary.clone(),
            directory: directory.clone(),
            // The server's environment is its own (and may hold secrets): not shown.
            environment: BTreeMap::new(),
            limits: bash::Limits { timeout, output_limit: bash::DEFAULT_OUTPUT_LIMIT, kill_grace: Duration::ZERO },
            edit: None,
            sandbox: SandboxMode::Off,
            approval_mode,
            suggested_rule: None,
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
            // No rule covers an MCP call yet: an answer granting one is
            // refused rather than recorded as a command rule it is not.
            Some(Decision::Allow(_) | Decision::DenyWithRule(_)) => {
                tracing::warn!(
                    turn_id,
                    call_id,
                    "a rule was asked for on an MCP call; rules do not cover MCP calls: denied"
                );
                Some(Decision::Deny { reason: None })
            }
            other => other,
        };
        match self.grant_rule(turn_id, call_id, decision).await? {
            None => {
                self.save_result(turn_id, call_id, ToolStatus::NotExecuted, MCP_CANCELLED_BEFORE_START, None).await?;
                return Ok(true);
            }
            Some(Answer::Deny { reason }) => {
                self.record_denial(turn_id, call_id, reason, MCP_REFUSED, ApprovalFacts::default()).await?;
                return Ok(false);
            }
            // No hunks are offered for an MCP call; were some accepted, nothing is sent.
            Some(Answer::ApproveHunks(_)) => {
                self.record_denial(turn_id, call_id, None, MCP_REFUSED, ApprovalFacts::default()).await?;
                return Ok(false);
            }
            Some(Answer::Approve) => {}
        }
        let start =
            McpStartRecord { server: tool.server.clone(), tool: tool.tool.clone(), arguments: arguments.to_string() };
        let (t, c, cmd, dir) = (turn_id.to_string(), call_id.to_string(), summary.clone(), directory);
        self.with_session_io(move |s| {
            s.record_approval_of(&t, &c, ApprovalDecision::Approved, (None, Vec::new()), ApprovalFacts::default())?;
            s.record_mcp_start(&t, &c, &cmd, &dir, start)
        })
        .await?;
        if cancel.is_cancelled() {
            self.save_result(turn_id, call_id, ToolStatus::Cancelled, MCP_CANCELLED_BEFORE_SEND, None).await?;
            return Ok(true);
        }
        // The approval and tool_start are on disk: only now is the call sent.
        self.emit(AgentEvent::ToolStarted {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: summary,
            approver: Approver::of(None, &[]),
            sandbox: SandboxMode::Off,
            tool: None,
            read: None,
        });
        fail::fail_point!("agent::before_mcp_call");
        let outcome = self.state.mcp.call(&tool, arguments, cancel).await;
        fail::fail_point!("agent::before_tool_result");
        self.save_result(turn_id, call_id, outcome.status, &outcome.output, None).await?;
        Ok(outcome.status == ToolStatus::Cancelled)
    }
}
