//! Conversion between the core's types and the wire's: every status,
//! view and result a method answers with or a notification carries, and the
//! few requests (a decision, a question's images) read into core values.

use mino_core::agent::Decision;
use mino_core::bash;
use mino_core::policy::ApprovalMode;
use mino_core::read::{CallTool, ReadInfo, ReadTool};
use mino_core::recovery::{RecoveredTurn, RecoveryReport};
use mino_core::rules::{Rule, RuleEffect, RuleKind, RuleScope};
use mino_core::sandbox::SandboxMode;
use mino_core::transcript::{Approver, Call, Turn, TurnItem};
use mino_core::Session;
use mino_protocol as wire;
use tower_lsp_server::jsonrpc::Result;

use super::errors::invalid_params;

pub(crate) fn sandbox_mode(mode: SandboxMode) -> wire::SandboxMode {
    match mode {
        SandboxMode::Off => wire::SandboxMode::Off,
        SandboxMode::ReadOnly => wire::SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite => wire::SandboxMode::WorkspaceWrite,
    }
}

pub(crate) fn core_sandbox_mode(mode: wire::SandboxMode) -> SandboxMode {
    match mode {
        wire::SandboxMode::Off => SandboxMode::Off,
        wire::SandboxMode::ReadOnly => SandboxMode::ReadOnly,
        wire::SandboxMode::WorkspaceWrite => SandboxMode::WorkspaceWrite,
    }
}

pub(crate) fn instruction_files(
    project: &mino_core::project_instructions::ProjectInstructions,
) -> Vec<wire::InstructionFile> {
    project.files.iter().map(instruction_file).collect()
}

pub(crate) fn instruction_file(f: &mino_core::project_instructions::InstructionFile) -> wire::InstructionFile {
    wire::InstructionFile {
        path: f.path.clone(),
        size: f.size,
        truncated: f.truncated,
        given: f.given,
        sha256: f.sha256.clone(),
    }
}

pub(crate) fn approval_mode(mode: ApprovalMode) -> wire::ApprovalMode {
    match mode {
        ApprovalMode::Ask => wire::ApprovalMode::Ask,
        ApprovalMode::Rules => wire::ApprovalMode::Rules,
        ApprovalMode::SandboxedAuto => wire::ApprovalMode::SandboxedAuto,
        ApprovalMode::Plan => wire::ApprovalMode::Plan,
    }
}

pub(crate) fn core_approval_mode(mode: wire::ApprovalMode) -> ApprovalMode {
    match mode {
        wire::ApprovalMode::Ask => ApprovalMode::Ask,
        wire::ApprovalMode::Rules => ApprovalMode::Rules,
        wire::ApprovalMode::SandboxedAuto => ApprovalMode::SandboxedAuto,
        wire::ApprovalMode::Plan => ApprovalMode::Plan,
    }
}

pub(crate) fn rule_kind(kind: RuleKind) -> wire::RuleKind {
    match kind {
        RuleKind::Exact => wire::RuleKind::Exact,
        RuleKind::Prefix => wire::RuleKind::Prefix,
        RuleKind::Path => wire::RuleKind::Path,
        RuleKind::Mcp => wire::RuleKind::Mcp,
    }
}

pub(crate) fn rule_view(rule: &Rule) -> wire::RuleView {
    let text = Some(rule.command().to_owned());
    let (command, pattern, tool) = match rule.kind() {
        RuleKind::Path => (None, text, None),
        RuleKind::Mcp => (None, None, text),
        _ => (text, None, None),
    };
    wire::RuleView {
        id: rule.id().to_owned(),
        kind: rule_kind(rule.kind()),
        command,
        pattern,
        tool,
        scope: match rule.scope() {
            RuleScope::Session => wire::RuleScope::Session,
            RuleScope::Workspace => wire::RuleScope::Workspace,
        },
        effect: (rule.effect() == RuleEffect::Deny).then_some(wire::RuleEffect::Deny),
    }
}

pub(crate) fn approved_by(approver: &Approver) -> wire::ApprovedBy {
    match approver {
        Approver::User => wire::ApprovedBy { kind: wire::ApproverKind::User, rule: None },
        Approver::Sandbox => wire::ApprovedBy { kind: wire::ApproverKind::Sandbox, rule: None },
        Approver::Workspace => wire::ApprovedBy { kind: wire::ApproverKind::Workspace, rule: None },
        Approver::Rule(rule) => wire::ApprovedBy { kind: wire::ApproverKind::Rule, rule: Some(rule_view(rule)) },
    }
}

/// The longest denial reason accepted: it goes into the model's input.
const MAX_DENIAL_REASON: usize = 4096;

/// The agent's decision for `params`; a rule the matcher refuses, a reason
/// on anything but a denial, or a missing rule is `-32602` (and the call
/// stays pending).
pub(crate) fn decision(params: &wire::ApprovalParams) -> Result<Decision> {
    if params.reason.is_some() && params.decision != wire::Decision::Deny {
        return Err(invalid_params("`reason` goes only with decision \"deny\""));
    }
    if let Some(hunks) = &params.accepted_hunks {
        if params.decision != wire::Decision::Approve {
            return Err(invalid_params(
                "`acceptedHunks` goes only with decision \"approve\"; nothing was decided and the call still waits",
            ));
        }
        return Ok(Decision::ApproveHunks(hunks.iter().map(|&i| i as usize).collect()));
    }
    let (scope, effect) = match params.decision {
        wire::Decision::Approve => return Ok(Decision::Approve),
        wire::Decision::Deny => {
            if params.reason.as_ref().is_some_and(|r| r.len() > MAX_DENIAL_REASON) {
                return Err(invalid_params(format!(
                    "the denial reason is longer than {MAX_DENIAL_REASON} bytes; shorten it"
                )));
            }
            return Ok(Decision::Deny { reason: params.reason.clone() });
        }
        wire::Decision::AllowSession => (RuleScope::Session, RuleEffect::Allow),
        wire::Decision::AllowWorkspace => (RuleScope::Workspace, RuleEffect::Allow),
        wire::Decision::DenySession => (RuleScope::Session, RuleEffect::Deny),
        wire::Decision::DenyWorkspace => (RuleScope::Workspace, RuleEffect::Deny),
    };
    let Some(spec) = &params.rule else {
        return Err(invalid_params(format!(
            "decision {:?} needs `rule`: {{\"kind\": \"exact\" | \"prefix\", \"command\": \"...\"}}, {{\"kind\": \"path\", \"pattern\": \"...\"}} or {{\"kind\": \"mcp\", \"tool\": \"server/tool\" | \"server/*\"}}",
            params.decision.as_str()
        )));
    };
    let (kind, text, field) = match spec.kind {
        wire::RuleKind::Exact => (RuleKind::Exact, &spec.command, "command"),
        wire::RuleKind::Prefix => (RuleKind::Prefix, &spec.command, "command"),
        wire::RuleKind::Path => (RuleKind::Path, &spec.pattern, "pattern"),
        wire::RuleKind::Mcp => (RuleKind::Mcp, &spec.tool, "tool"),
    };
    let Some(text) = text else {
        return Err(invalid_params(format!("a {:?} rule needs `{field}`", spec.kind.as_str())));
    };
    let rule = Rule::new(Rule::new_id(), kind, text, scope)
        .map_err(|e| invalid_params(format!("the rule was refused, nothing ran and the call still waits: {e}")))?
        .with_effect(effect);
    Ok(match effect {
        RuleEffect::Allow => Decision::Allow(rule),
        RuleEffect::Deny => Decision::DenyWithRule(rule),
    })
}

pub(crate) fn turn_status(s: mino_core::TurnStatus) -> wire::TurnStatus {
    use mino_core::TurnStatus as C;
    match s {
        C::Completed => wire::TurnStatus::Completed,
        C::Failed => wire::TurnStatus::Failed,
        C::Cancelled => wire::TurnStatus::Cancelled,
        C::Interrupted => wire::TurnStatus::Interrupted,
    }
}

pub(crate) fn tool_status(s: mino_core::ToolStatus) -> wire::ToolStatus {
    use mino_core::ToolStatus as C;
    match s {
        C::Success => wire::ToolStatus::Success,
        C::Failed => wire::ToolStatus::Failed,
        C::Refused => wire::ToolStatus::Refused,
        C::TimedOut => wire::ToolStatus::TimedOut,
        C::Cancelled => wire::ToolStatus::Cancelled,
        C::NotExecuted => wire::ToolStatus::NotExecuted,
        C::Unknown => wire::ToolStatus::Unknown,
        C::Applied => wire::ToolStatus::Applied,
        C::NotApplied => wire::ToolStatus::NotApplied,
        C::Unavailable => wire::ToolStatus::Unavailable,
    }
}

pub(crate) fn edit_tool_name(tool: mino_core::edit::EditTool) -> wire::EditToolName {
    match tool {
        mino_core::edit::EditTool::EditFile => wire::EditToolName::EditFile,
        mino_core::edit::EditTool::WriteFile => wire::EditToolName::WriteFile,
    }
}

pub(crate) fn call_tool(tool: CallTool) -> wire::ToolName {
    match tool {
        CallTool::Edit(tool) => edit_tool_name(tool).into(),
        CallTool::Read(ReadTool::ReadFile) => wire::ToolName::ReadFile,
        CallTool::Read(ReadTool::ListFiles) => wire::ToolName::ListFiles,
        CallTool::Read(ReadTool::Search) => wire::ToolName::Search,
    }
}

pub(crate) fn read_view(r: ReadInfo) -> wire::ReadView {
    wire::ReadView {
        tool: match r.tool {
            ReadTool::ReadFile => wire::ReadToolName::ReadFile,
            ReadTool::ListFiles => wire::ReadToolName::ListFiles,
            ReadTool::Search => wire::ReadToolName::Search,
        },
        path: r.path,
        pattern: r.pattern,
        start_line: r.start_line,
        end_line: r.end_line,
        leaves_workspace: r.leaves_workspace,
        summary: r.summary,
        truncated: r.truncated,
    }
}

pub(crate) fn edit_view(e: mino_core::agent::EditApproval) -> wire::EditView {
    wire::EditView {
        tool: edit_tool_name(e.tool),
        path: e.path,
        new_file: e.new_file,
        size: e.size,
        diff: e.diff,
        leaves_workspace: e.leaves_workspace,
        protected: e.protected,
    }
}

pub(crate) fn limits(l: bash::Limits) -> wire::Limits {
    wire::Limits { timeout_seconds: l.timeout.as_secs(), output_limit_bytes: l.output_limit as u64 }
}

pub(crate) fn evidence(e: &mino_core::supervisor::Evidence) -> wire::Evidence {
    use mino_core::supervisor::EvidenceOutcome as C;
    wire::Evidence {
        outcome: match e.outcome {
            C::Exited => wire::EvidenceOutcome::Exited,
            C::Signalled => wire::EvidenceOutcome::Signalled,
            C::StoppedWhenMinoStopped => wire::EvidenceOutcome::StoppedWhenMinoStopped,
            C::TimedOut => wire::EvidenceOutcome::TimedOut,
        },
        exit_code: e.exit_code,
        pid: e.pid,
        started_at: e.started_at.clone(),
        ended_at: e.ended_at.clone(),
        output_tail: e.output_tail.clone(),
        summary: e.summary(),
    }
}

pub(crate) fn recovered_turn(t: &RecoveredTurn) -> wire::RecoveredTurnView {
    wire::RecoveredTurnView {
        turn_id: t.turn_id.clone(),
        status: turn_status(t.status),
        calls: t
            .calls
            .iter()
            .map(|c| wire::RecoveredCallView {
                call_id: c.call_id.clone(),
                command: c.command.clone(),
                tool: c
                    .edit_tool
                    .map(edit_tool_name)
                    .map(Into::into)
                    .or(c.read.as_ref().map(|r| call_tool(CallTool::Read(r.tool)))),
                read: c.read.clone().map(read_view),
                result: wire::ToolResultView {
                    status: tool_status(c.status),
                    output: c.output.clone(),
                    exit_code: c.exit_code,
                    diff: c.diff.clone(),
                },
                evidence: c.evidence.as_ref().map(evidence),
                approved_by: c.approver.as_ref().map(approved_by),
                sandbox: c.sandbox.map(sandbox_mode),
            })
            .collect(),
    }
}

pub(crate) fn recovery_notification(session_id: &str, report: &RecoveryReport) -> wire::RecoveryNotification {
    wire::RecoveryNotification {
        session_id: session_id.to_string(),
        turns: report.turns().into_iter().map(recovered_turn).collect(),
        acknowledgement_required: report.acknowledgement_required(),
        unacknowledged_turn_ids: report.unacknowledged.iter().map(|t| t.turn_id.clone()).collect(),
        repairs: report.repairs(),
        rewind: report.rewind.as_ref().map(|r| wire::RecoveredRewind {
            turn_id: r.turn_id.clone(),
            files: r.outcomes.iter().map(rewind_file_outcome).collect(),
            conflicts: r.plan.conflicts.iter().map(rewind_conflict).collect(),
            commands: r.plan.commands.iter().map(rewind_command).collect(),
        }),
    }
}

pub(crate) fn rewind_file_outcome(o: &mino_core::rewind::FileOutcome) -> wire::RewindFileOutcome {
    use mino_core::rewind::Outcome;
    wire::RewindFileOutcome {
        path: o.path.clone(),
        outcome: match o.outcome {
            Outcome::Restored => wire::RewindOutcome::Restored,
            Outcome::Removed => wire::RewindOutcome::Removed,
            Outcome::NotRestored => wire::RewindOutcome::NotRestored,
            Outcome::Conflict => wire::RewindOutcome::Conflict,
            Outcome::Changed => wire::RewindOutcome::Changed,
        },
        why: o.why.clone(),
    }
}

pub(crate) fn rewind_conflict(c: &mino_core::rewind::Conflict) -> wire::RewindConflict {
    wire::RewindConflict { path: c.path.clone(), why: c.why.clone() }
}

pub(crate) fn rewind_command(c: &mino_core::rewind::PlannedCommand) -> wire::RewindCommand {
    wire::RewindCommand { turn_id: c.turn_id.clone(), call_id: c.call_id.clone(), command: c.command.clone() }
}

/// The core's token counts on the wire.
pub(crate) fn token_usage(u: mino_core::usage::Usage) -> wire::TokenUsage {
    wire::TokenUsage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        total_tokens: u.total_tokens,
        cached_input_tokens: u.cached_input_tokens,
        reasoning_tokens: u.reasoning_tokens,
    }
}

pub(crate) fn history_call(session: &Session, turn: &Turn, index: usize, c: &Call) -> wire::HistoryCall {
    wire::HistoryCall {
        call_id: c.call_id.clone(),
        command: c.command(),
        tool: CallTool::of_name(&c.name).map(call_tool),
        read: c.read_info().map(read_view),
        result: c.result.as_ref().map(|r| wire::ToolResultView {
            status: tool_status(r.status),
            output: r.output.clone(),
            exit_code: r.exit_code,
            diff: c.applied_diff(),
        }),
        evidence: session.evidence(turn, index).as_ref().map(evidence),
        approved_by: c.approver().as_ref().map(approved_by),
        sandbox: c.sandbox.map(sandbox_mode),
        directory: c.directory.clone(),
        environment: c.environment.clone(),
        limits: c
            .limits
            .map(|l| wire::Limits { timeout_seconds: l.timeout_seconds, output_limit_bytes: l.output_limit_bytes }),
        edit: c.edit.as_ref().map(|e| wire::EditView {
            tool: edit_tool_name(e.tool),
            // As the approval showed it: relative to the session's
            // directory when inside it.
            path: c
                .directory
                .as_deref()
                .filter(|_| !e.leaves_workspace)
                .and_then(|dir| std::path::Path::new(&e.path).strip_prefix(dir).ok())
                .map_or_else(|| e.path.clone(), |p| p.display().to_string()),
            new_file: e.new_file,
            size: e.after_size,
            diff: c.applied_diff().unwrap_or_default(),
            leaves_workspace: e.leaves_workspace,
            // Said on the approval request only; history keeps what was written.
            protected: None,
        }),
    }
}

// The wire states the image bounds the core enforces: one fact, checked here.
const _: () = assert!(
    wire::MAX_IMAGES == mino_core::images::MAX_IMAGES
        && wire::MAX_IMAGE_BYTES == mino_core::images::MAX_IMAGE_BYTES
        && wire::MAX_QUESTION_IMAGE_BYTES == mino_core::images::MAX_QUESTION_IMAGE_BYTES
);

/// A question's images as `mino/chat` carried them: each decoded (`data`)
/// or read from its file (`path`, relative to the session's directory).
pub(crate) fn chat_images(
    images: Vec<wire::ChatImage>,
    cwd: &std::path::Path,
) -> std::result::Result<Vec<mino_core::images::ImageInput>, String> {
    use mino_core::images::{self, ImageInput};
    if images.len() > images::MAX_IMAGES {
        return Err(images::ImageError::TooMany { count: images.len() }.to_string());
    }
    images
        .into_iter()
        .enumerate()
        .map(|(index, image)| match (image.data, image.path) {
            (Some(data), None) => {
                let bytes = images::decode_base64(index, &image.name, &data).map_err(|e| e.to_string())?;
                Ok(ImageInput { bytes, name: image.name, declared_mime: image.mime_type })
            }
            (None, Some(path)) => {
                let read = images::read_path(index, &cwd.join(path)).map_err(|e| e.to_string())?;
                Ok(ImageInput { name: image.name.or(read.name), declared_mime: image.mime_type, ..read })
            }
            _ => Err(format!("image {} must have exactly one of `data` (base64) and `path`", index + 1)),
        })
        .collect()
}

/// A question's images for history, each said unavailable when its kept
/// file is missing or of another size (replay checks the hash too).
pub(crate) fn history_images(session: &Session, turn: &Turn) -> Vec<wire::HistoryImage> {
    let dir = session.transcript().images_dir.as_deref();
    turn.images
        .iter()
        .map(|image| {
            let unavailable = match dir {
                None => Some("the session keeps no images".to_string()),
                Some(dir) => {
                    let path = mino_core::images::path_in(dir, image);
                    match std::fs::metadata(&path) {
                        Ok(meta) if meta.is_file() && meta.len() == image.size => None,
                        Ok(_) => Some(format!("{} does not hold the bytes the session recorded", path.display())),
                        Err(_) => Some(format!("{} is missing", path.display())),
                    }
                }
            };
            wire::HistoryImage {
                sha256: image.sha256.clone(),
                mime_type: image.mime_type.clone(),
                size: image.size,
                name: image.name.clone(),
                unavailable,
            }
        })
        .collect()
}

pub(crate) fn history_turn(session: &Session, turn: &Turn) -> wire::HistoryTurn {
    let status = turn.end.as_ref().map(|e| e.status);
    // The same notice the model receives after this turn's results.
    let notices: Vec<String> = turn.notice().into_iter().collect();
    let calls: Vec<wire::HistoryCall> =
        turn.calls.iter().enumerate().map(|(index, c)| history_call(session, turn, index, c)).collect();
    let items = turn
        .items()
        .into_iter()
        .filter_map(|item| match item {
            TurnItem::Text(text) => Some(wire::HistoryItem::Text { text }),
            TurnItem::Call(index) => calls.get(index).map(|call| wire::HistoryItem::Call { call: call.clone() }),
            TurnItem::Notice(text) => Some(wire::HistoryItem::Notice { text }),
        })
        .collect();
    wire::HistoryTurn {
        turn_id: turn.id.clone(),
        input: turn.input.clone(),
        images: history_images(session, turn),
        text: turn.text(),
        calls,
        status: status.map(turn_status),
        reason: turn.end.as_ref().and_then(|e| e.reason.clone()),
        notices,
        rewound: turn.rewound,
        usage: turn.usage.map(token_usage),
        items,
    }
}

pub(crate) fn compaction_trigger(trigger: mino_core::compaction::Trigger) -> wire::CompactionTrigger {
    use mino_core::compaction::Trigger;
    match trigger {
        Trigger::Manual => wire::CompactionTrigger::Manual,
        Trigger::Auto => wire::CompactionTrigger::Auto,
        Trigger::ContextLengthExceeded => wire::CompactionTrigger::ContextLengthExceeded,
    }
}

pub(crate) fn compact_result(outcome: mino_core::agent::CompactionOutcome) -> wire::CompactResult {
    wire::CompactResult {
        compacted: outcome.compacted,
        summarized_turns: outcome.summarized_turns as u64,
        kept_turns: outcome.kept_turns as u64,
        through_turn_id: outcome.through_turn_id,
        reason: outcome.reason,
    }
}

/// An MCP server's state on the wire.
pub(crate) fn mcp_status(status: mino_core::mcp::McpStatus) -> wire::McpServerStatus {
    use mino_core::mcp::McpState;
    let (state, tools, reason) = match status.state {
        McpState::Starting => (wire::McpState::Starting, None, None),
        McpState::Ready { tools } => (wire::McpState::Ready, Some(tools), None),
        McpState::Failed { reason } => (wire::McpState::Failed, None, Some(reason)),
        McpState::Exited { reason } => (wire::McpState::Exited, None, Some(reason)),
    };
    wire::McpServerStatus { server: status.server, state, tools, reason }
}

/// An MCP call's approval view on the wire.
pub(crate) fn mcp_view(mcp: mino_core::mcp::McpApproval) -> wire::McpView {
    let annotations = mcp.annotations.map(|a| {
        let flag = |key: &str| a.get(key).and_then(serde_json::Value::as_bool);
        wire::McpAnnotations {
            title: a.get("title").and_then(serde_json::Value::as_str).map(str::to_string),
            read_only_hint: flag("readOnlyHint"),
            destructive_hint: flag("destructiveHint"),
            idempotent_hint: flag("idempotentHint"),
            open_world_hint: flag("openWorldHint"),
        }
    });
    wire::McpView { server: mcp.server, tool: mcp.tool, arguments: mcp.arguments, annotations }
}

pub(crate) fn session_info(info: mino_core::SessionInfo) -> wire::SessionInfo {
    wire::SessionInfo {
        session_id: info.session_id,
        journal_path: info.journal_path.display().to_string(),
        cwd: info.cwd,
        title: info.title,
    }
}

/// A listed session on the wire. Both structs are named field by field
/// (no `..`), so a field added to either one fails to compile here until it
/// is mapped (test: `a_listed_session_maps_field_by_field`).
pub(crate) fn session_entry(entry: mino_core::SessionEntry) -> wire::SessionEntry {
    let mino_core::SessionEntry {
        session_id,
        cwd,
        title,
        created_at,
        last_active_at,
        turns,
        held_elsewhere,
        acknowledgement_required,
        current,
        usage,
        // Not on the wire: a damaged session says what is wrong when it is
        // opened (docs/journal.md, "Listing").
        damage: _,
    } = entry;
    wire::SessionEntry {
        session_id,
        cwd,
        title,
        created_at,
        last_active_at,
        turns,
        held_elsewhere,
        acknowledgement_required,
        current,
        usage: usage.map(token_usage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of a listed session reaches the wire with its own value,
    /// and the wire has no field the core does not fill: both structs are
    /// destructured without `..`, so a field added to either one fails this
    /// test (it stops compiling) until it is mapped. Each flag is
    /// set in exactly one entry, so a swapped or constant field fails too.
    #[test]
    fn a_listed_session_maps_field_by_field() {
        let entries = [
            mino_core::SessionEntry {
                session_id: "s-1".into(),
                cwd: "/work/project".into(),
                title: Some("Fix the build".into()),
                created_at: "2026-12-01T01:00:00Z".into(),
                last_active_at: "2026-12-01T02:00:00Z".into(),
                turns: 7,
                held_elsewhere: true,
                acknowledgement_required: false,
                current: false,
                usage: Some(mino_core::usage::Usage {
                    input_tokens: 1200,
                    output_tokens: 34,
                    total_tokens: 1234,
                    cached_input_tokens: Some(1000),
                    reasoning_tokens: None,
                }),
                damage: Some("the last line is torn".into()),
            },
            mino_core::SessionEntry {
                session_id: "s-2".into(),
                cwd: "/work/other".into(),
                title: None,
                created_at: "2026-11-30T01:00:00Z".into(),
                last_active_at: "2026-11-30T02:00:00Z".into(),
                turns: 0,
                held_elsewhere: false,
                acknowledgement_required: true,
                current: false,
                usage: None,
                damage: None,
            },
            mino_core::SessionEntry {
                session_id: "s-3".into(),
                cwd: "/work/third".into(),
                title: Some("Tidy the docs".into()),
                created_at: "2026-11-29T01:00:00Z".into(),
                last_active_at: "2026-11-29T02:00:00Z".into(),
                turns: 3,
                held_elsewhere: false,
                acknowledgement_required: false,
                current: true,
                usage: None,
                damage: None,
            },
        ];
        for core in entries {
            let wire::SessionEntry {
                session_id,
                cwd,
                title,
                created_at,
                last_active_at,
                turns,
                held_elsewhere,
                acknowledgement_required,
                current,
                usage,
            } = session_entry(core.clone());
            let mino_core::SessionEntry {
                session_id: core_session_id,
                cwd: core_cwd,
                title: core_title,
                created_at: core_created_at,
                last_active_at: core_last_active_at,
                turns: core_turns,
                held_elsewhere: core_held_elsewhere,
                acknowledgement_required: core_acknowledgement_required,
                current: core_current,
                usage: core_usage,
                // Not on the wire (see `session_entry`).
                damage: _,
            } = core;
            assert_eq!(session_id, core_session_id);
            assert_eq!(cwd, core_cwd);
            assert_eq!(title, core_title);
            assert_eq!(created_at, core_created_at);
            assert_eq!(last_active_at, core_last_active_at);
            assert_eq!(turns, core_turns);
            assert_eq!(held_elsewhere, core_held_elsewhere);
            assert_eq!(acknowledgement_required, core_acknowledgement_required);
            assert_eq!(current, core_current);
            assert_eq!(usage, core_usage.map(token_usage));
        }
    }
}
