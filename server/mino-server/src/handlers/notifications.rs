//! The server's notifications: the agent's events as `mino/*` JSON-RPC
//! messages, in send order, read by the transport straight into its outbox.

use mino_core::agent::{AgentEvent, Events, Numbered};
use mino_core::bash;
use mino_core::rules::RuleKind;
use mino_protocol as wire;
use tokio::sync::oneshot;

use super::convert::{
    approval_mode, approved_by, call_tool, compact_result, compaction_trigger, edit_view, instruction_file, limits,
    mcp_status, mcp_view, read_view, recovery_notification, rule_kind, rule_view, sandbox_mode, token_usage,
    tool_status, turn_status,
};

/// What opening a session hands to [`Notifications`]: its `mino/recovery`,
/// then its agent's events.
pub(crate) type Stream = (wire::RecoveryNotification, Events);

/// The server's notifications in send order, as JSON-RPC messages: first
/// `mino/recovery`, then every agent event. Read by the transport, which
/// queues each for stdout itself.
pub struct Notifications {
    start: Option<oneshot::Receiver<Stream>>,
    recovery: Option<wire::RecoveryNotification>,
    events: Option<Events>,
}

impl Notifications {
    /// Nothing to send until `start` delivers the opened session's stream.
    pub(crate) fn new(start: oneshot::Receiver<Stream>) -> Self {
        Notifications { start: Some(start), recovery: None, events: None }
    }
}

impl crate::dispatch::Outgoing for Notifications {
    /// The next notification; `None` once there will be no more (the
    /// session never opened, or the agent is gone).
    async fn next(&mut self) -> Option<String> {
        if let Some(start) = &mut self.start {
            let started = start.await.ok();
            self.start = None;
            (self.recovery, self.events) = started.map(|(r, e)| (Some(r), Some(e))).unwrap_or_default();
        }
        if let Some(recovery) = self.recovery.take() {
            return Some(message::<wire::notification::Recovery>(recovery));
        }
        loop {
            if let Some(message) = notification(self.events.as_mut()?.recv().await?) {
                return Some(message);
            }
        }
    }

    /// The next notification already waiting, without waiting for one.
    fn try_next(&mut self) -> Option<String> {
        if let Some(start) = &mut self.start {
            let started = start.try_recv().ok()?;
            self.start = None;
            (self.recovery, self.events) = (Some(started.0), Some(started.1));
        }
        if let Some(recovery) = self.recovery.take() {
            return Some(message::<wire::notification::Recovery>(recovery));
        }
        loop {
            if let Some(message) = notification(self.events.as_mut()?.try_recv()?) {
                return Some(message);
            }
        }
    }
}

/// One notification as a JSON-RPC message.
pub(crate) fn message<N: wire::notification::Notification>(params: N::Params) -> String {
    #[derive(serde::Serialize)]
    struct Message<'a, P> {
        jsonrpc: &'static str,
        method: &'a str,
        params: P,
    }
    serde_json::to_string(&Message { jsonrpc: "2.0", method: N::METHOD, params }).unwrap_or_else(|e| {
        // The wire types are plain data; this cannot fail in practice.
        tracing::error!("cannot serialize a notification: {e}");
        String::new()
    })
}

/// One agent event as its notification; `None` for the events `mino/*`
/// does not notify (a response's usage: `mino/turnEnded` carries the
/// turn's; a settings change: `mino/settings/update` answers with it).
pub(crate) fn notification(Numbered { seq, session_id, event }: Numbered) -> Option<String> {
    Some(match event {
        AgentEvent::TurnStarted { turn_id, input } => {
            message::<wire::notification::TurnStarted>(wire::TurnStarted { turn_id, seq, session_id, input })
        }
        AgentEvent::TextDelta { turn_id, delta } => {
            message::<wire::notification::TextDelta>(wire::TextDelta { turn_id, seq, session_id, delta })
        }
        AgentEvent::Retrying { turn_id, attempt, delay_ms, reason } => {
            let n = wire::Retrying { turn_id, seq, session_id, attempt, delay_ms, reason };
            message::<wire::notification::Retrying>(n)
        }
        AgentEvent::ApprovalRequest {
            turn_id,
            call_id,
            command,
            directory,
            environment,
            limits: l,
            sandbox,
            approval_mode: mode,
            suggested_rule,
            edit,
            deny_rules,
            read,
            mcp,
        } => {
            let edit = edit.map(edit_view);
            let n = wire::ApprovalRequest {
                turn_id,
                seq,
                session_id,
                call_id,
                command,
                directory,
                environment,
                limits: limits(l),
                edit,
                read: read.map(read_view),
                sandbox: sandbox_mode(sandbox),
                approval_mode: approval_mode(mode),
                suggested_rule: suggested_rule.map(|rule| match rule.kind {
                    RuleKind::Path => wire::RuleSpec::path(rule.text),
                    RuleKind::Mcp => wire::RuleSpec::mcp(rule.text),
                    kind => wire::RuleSpec::command(rule_kind(kind), rule.text),
                }),
                deny_rules: deny_rules.iter().map(rule_view).collect(),
                mcp: mcp.map(mcp_view),
            };
            message::<wire::notification::ApprovalRequest>(n)
        }
        AgentEvent::ToolStarted { turn_id, call_id, command, approver, sandbox, tool, read } => {
            let n = wire::ToolStarted {
                turn_id,
                seq,
                session_id,
                call_id,
                command,
                approved_by: approved_by(&approver),
                sandbox: sandbox_mode(sandbox),
                tool: tool.map(call_tool),
                read: read.map(read_view),
            };
            message::<wire::notification::ToolStarted>(n)
        }
        AgentEvent::ToolOutput { turn_id, call_id, stream, chunk } => {
            let stream = match stream {
                bash::Stream::Stdout => wire::OutputStream::Stdout,
                bash::Stream::Stderr => wire::OutputStream::Stderr,
            };
            let n = wire::ToolOutput { turn_id, seq, session_id, call_id, stream, chunk };
            message::<wire::notification::ToolOutput>(n)
        }
        AgentEvent::ToolResult { turn_id, call_id, command, status, output, exit_code, diff, tool, read } => {
            let status = tool_status(status);
            let n = wire::ToolResult {
                turn_id,
                seq,
                session_id,
                call_id,
                command,
                status,
                output,
                exit_code,
                diff,
                tool: tool.map(call_tool),
                read: read.map(read_view),
            };
            message::<wire::notification::ToolResult>(n)
        }
        AgentEvent::TurnEnded { turn_id, status, reason, text, usage, session_usage } => {
            let (usage, session_usage) = (usage.map(token_usage), session_usage.map(token_usage));
            let status = turn_status(status);
            let n = wire::TurnEnded { turn_id, seq, session_id, status, reason, text, usage, session_usage };
            message::<wire::notification::TurnEnded>(n)
        }
        AgentEvent::CompactionStarted { trigger, turn_id } => {
            let n = wire::CompactionStarted { seq, session_id, trigger: compaction_trigger(trigger), turn_id };
            message::<wire::notification::CompactionStarted>(n)
        }
        AgentEvent::CompactionEnded { trigger, turn_id, outcome } => {
            let usage = outcome.usage.map(token_usage);
            let n = wire::CompactionEnded {
                seq,
                session_id,
                trigger: compaction_trigger(trigger),
                turn_id,
                result: compact_result(outcome),
                usage,
            };
            message::<wire::notification::CompactionEnded>(n)
        }
        AgentEvent::InstructionsChanged { files } => {
            let files = files.iter().map(instruction_file).collect();
            message::<wire::notification::InstructionsChanged>(wire::InstructionsChanged { session_id, files })
        }
        // A switched-to session announces itself as a started one does.
        AgentEvent::SessionOpened { recovery } => {
            message::<wire::notification::Recovery>(recovery_notification(&session_id, &recovery))
        }
        AgentEvent::McpStatus { status } => message::<wire::notification::McpStatus>(wire::McpStatusNotification {
            session_id,
            status: mcp_status(status),
        }),
        // No `mino/*` client offers its own terminals.
        AgentEvent::ResponseUsage { .. } | AgentEvent::SettingsChanged { .. } | AgentEvent::ToolTerminal { .. } => {
            return None
        }
    })
}
