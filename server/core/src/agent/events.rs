//! The events the agent emits ([`AgentEvent`]) and their place in the
//! session's one order ([`Numbered`]): what a front door translates.

use super::*;

#[derive(Debug, Clone, PartialEq, Eq)]
// Events pass one at a time through a queue bounded by bytes; none is kept
// in bulk, so the approval request's size costs nothing a box would save.
#[allow(clippy::large_enum_variant)]
pub enum AgentEvent {
    TurnStarted {
        turn_id: String,
        input: String,
    },
    TextDelta {
        turn_id: String,
        delta: String,
    },
    /// The model request failed in a retryable way and is sent again after
    /// `delay_ms`: text streamed since the last response began is void.
    Retrying {
        turn_id: String,
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    ApprovalRequest {
        turn_id: String,
        call_id: String,
        command: String,
        directory: String,
        environment: BTreeMap<String, String>,
        limits: bash::Limits,
        /// An edit call's proposal (`None` for a command).
        edit: Option<EditApproval>,
        /// The sandbox the command will run in if approved.
        sandbox: SandboxMode,
        approval_mode: ApprovalMode,
        /// The rule a client offers for "allow/deny for session/workspace":
        /// a prefix rule for a command, the path for an edit inside the workspace.
        suggested_rule: Option<crate::policy::SuggestedRule>,
        /// Deny rules the command might reach although none matches it
        /// ([`crate::policy::deny_rules_in_reach`]): why it is asked about.
        deny_rules: Vec<Rule>,
        /// A read call leaving the workspace: what it would read.
        read: Option<ReadInfo>,
        /// An MCP tool call: the server, the tool, the arguments and the
        /// tool's annotations (shown, never trusted).
        mcp: Option<crate::mcp::McpApproval>,
    },
    ToolStarted {
        turn_id: String,
        call_id: String,
        command: String,
        approver: Approver,
        sandbox: SandboxMode,
        /// The edit or read tool; `None` for a command.
        tool: Option<CallTool>,
        read: Option<ReadInfo>,
    },
    ToolOutput {
        turn_id: String,
        call_id: String,
        stream: Stream,
        chunk: String,
    },
    /// A command runs in the editor's own terminal ([`crate::terminal`]),
    /// or could not and runs as any other (`terminal_id` `None`, `note`
    /// saying why). Sent after its `ToolStarted`, before its output.
    ToolTerminal {
        turn_id: String,
        call_id: String,
        terminal_id: Option<String>,
        note: Option<String>,
    },
    ToolResult {
        turn_id: String,
        call_id: String,
        /// The call's command as `mino/history` shows it
        /// ([`crate::transcript::Call::command`]): a call refused by a rule,
        /// or one that failed before it could be asked about, has no
        /// approval request or start to name it. `None` only when the call
        /// is not on record.
        command: Option<String>,
        status: ToolStatus,
        output: String,
        exit_code: Option<i32>,
        /// The diff an edit call wrote (`success` of an edit only).
        diff: Option<String>,
        /// The edit or read tool; `None` for a command.
        tool: Option<CallTool>,
        /// A read call, with its summary on `success`.
        read: Option<ReadInfo>,
    },
    TurnEnded {
        turn_id: String,
        status: TurnStatus,
        reason: Option<String>,
        text: Option<String>,
        /// The tokens of the turn's responses, as the service reported them.
        usage: Option<Usage>,
        /// The session's tokens so far, this turn included.
        session_usage: Option<Usage>,
    },
    /// [`Agent::switch`] made another session current: what opening it
    /// recovered, as the first event of that session.
    SessionOpened {
        recovery: RecoveryReport,
    },
    /// A compaction began: the summary request is being sent. `turn_id`
    /// names the turn it runs in (automatic, or after
    /// `context_length_exceeded`); `None` for [`Agent::compact`].
    CompactionStarted {
        trigger: Trigger,
        turn_id: Option<String>,
    },
    /// The compaction that started last ended: its record synced, or
    /// nothing changed (`outcome.compacted` false, with the reason).
    CompactionEnded {
        trigger: Trigger,
        turn_id: Option<String>,
        outcome: CompactionOutcome,
    },
    /// A response of the turn was recorded with the tokens the service
    /// reported for it (or estimated, when it reported none). Not a turn
    /// event (it takes no `seq`): a front door may pass it over.
    ResponseUsage {
        turn_id: String,
        usage: Usage,
        /// The context window of the model the turn uses, as compaction
        /// reckons it (configured, reported by the service, else the default).
        context_window: u64,
    },
    /// The approval or sandbox mode changed ([`Agent::update_settings`]),
    /// whoever changed it: the settings now in force. Not a turn event (it
    /// takes no `seq`).
    SettingsChanged {
        settings: Settings,
    },
    /// The project's instruction files in force changed (one was added,
    /// removed or edited) since they were last read: the next request is
    /// built from these.
    InstructionsChanged {
        files: Vec<project_instructions::InstructionFile>,
    },
    /// An MCP server's state changed (starting, ready with its tools,
    /// failed to start, exited). Not a turn event (it takes no `seq`).
    McpStatus {
        status: crate::mcp::McpStatus,
    },
}

/// An event with its place in the agent's order and the session it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbered {
    /// Counts the turn events up by one; a `SessionOpened` takes none (it
    /// carries the `seq` the next turn event will have).
    pub seq: u64,
    pub session_id: String,
    pub event: AgentEvent,
}
