//! `/rewind [N]` over ACP: the plan for the last N turns (1 without N) not
//! rewound yet is shown as the agent's message (files put back, conflicts
//! left as they are, commands whose effects stay), then asked about with
//! `session/request_permission`, its rejecting option first; only the
//! allowing option rewinds, with the digest of the plan shown
//! (`Agent::rewind`), and the outcome is the agent's next message. A
//! rejection, any other answer, or a cancel writes nothing.

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, SessionNotification, SessionUpdate, StopReason, TextContent, ToolCall, ToolCallContent, ToolCallId,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use mino_core::agent::{Agent, AgentError, RewindOutcome};
use mino_core::rewind::{FileAction, Outcome, RewindPlan};
use tokio_util::sync::CancellationToken;

use crate::lines::Outbound;

/// The option that rewinds; the other one (offered first) declines.
pub const REWIND_OPTION: &str = "rewind";
pub const KEEP_OPTION: &str = "keep";
const KEEP_NAME: &str = "Do not rewind: leave the files as they are";
const REWIND_NAME: &str = "Rewind: put these files back";

/// The number of turns `/rewind` was given: 1 without one.
pub fn count(arg: &str) -> Result<usize, String> {
    match arg {
        "" => Ok(1),
        n => match n.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "[Mino: /rewind takes a number of turns (1 without one), not {:?}; nothing was changed.]",
                n.chars().take(40).collect::<String>()
            )),
        },
    }
}

/// The plan as the person reads it before answering.
pub fn plan_text(plan: &RewindPlan) -> String {
    let mut text = format!("Rewind {} turn(s) ({}):\n", plan.turns.len(), plan.turns.join(", "));
    for file in &plan.files {
        let verb = match file.action {
            FileAction::Restore => "put back",
            FileAction::Remove => "remove (Mino created it)",
        };
        text.push_str(&format!("- {verb}: `{}`\n", file.path));
    }
    for conflict in &plan.conflicts {
        text.push_str(&format!("- left as it is: `{}` ({})\n", conflict.path, conflict.why));
    }
    for command in &plan.commands {
        text.push_str(&format!("- not undone (a command ran, Mino cannot undo it): `{}`\n", command.command));
    }
    text
}

/// What the rewind did, file by file.
pub fn outcome_text(done: &RewindOutcome) -> String {
    let mut text = String::new();
    for file in &done.outcomes {
        let what = match file.outcome {
            Outcome::Restored => "put back",
            Outcome::Removed => "removed",
            Outcome::NotRestored => "NOT put back",
            Outcome::Conflict => "left as it is (it changed since the plan)",
            Outcome::Changed => "changed by something else",
        };
        text.push_str(&format!("- {what}: `{}`", file.path));
        if let Some(why) = &file.why {
            text.push_str(&format!(" ({why})"));
        }
        text.push('\n');
    }
    for command in &done.plan.commands {
        text.push_str(&format!("- not undone (a command ran): `{}`\n", command.command));
    }
    text.push_str(&format!("Rewound {} turn(s); the model is told what was undone.", done.plan.turns.len()));
    text
}

fn call_title(plan: &RewindPlan) -> String {
    format!("Rewind {} turn(s): put {} file(s) back", plan.turns.len(), plan.files.len())
}

fn call_fields(plan: &RewindPlan, text: &str) -> ToolCallUpdateFields {
    ToolCallUpdateFields::new()
        .title(call_title(plan))
        .kind(ToolKind::Edit)
        .status(ToolCallStatus::Pending)
        .content(vec![ToolCallContent::Content(Content::new(ContentBlock::Text(TextContent::new(text))))])
        .locations(plan.files.iter().map(|f| ToolCallLocation::new(&f.path)).collect::<Vec<_>>())
}

/// The `tool_call` announcing the rewind of `plan`, and the question asking
/// about it: declining first, so that the option an editor preselects, or a
/// hurried Enter picks, leaves the files alone.
fn rewind_question(
    session_id: &str,
    call_id: &str,
    plan: &RewindPlan,
    text: &str,
) -> (SessionNotification, RequestPermissionRequest) {
    let fields = call_fields(plan, text);
    let mut announce = ToolCall::new(ToolCallId::new(call_id), call_title(plan));
    announce.update(fields.clone());
    let announce = SessionNotification::new(SessionId::new(session_id), SessionUpdate::ToolCall(announce));
    let options = vec![
        PermissionOption::new(KEEP_OPTION, KEEP_NAME, PermissionOptionKind::RejectOnce),
        PermissionOption::new(REWIND_OPTION, REWIND_NAME, PermissionOptionKind::AllowOnce),
    ];
    let tool_call = ToolCallUpdate::new(ToolCallId::new(call_id), fields);
    (announce, RequestPermissionRequest::new(SessionId::new(session_id), tool_call, options))
}

fn update(session_id: &str, call_id: &str, status: ToolCallStatus, title: &str) -> SessionNotification {
    let fields = ToolCallUpdateFields::new().status(status).title(title);
    let update = ToolCallUpdate::new(ToolCallId::new(call_id), fields);
    SessionNotification::new(SessionId::new(session_id), SessionUpdate::ToolCallUpdate(update))
}

/// Runs `/rewind <arg>` in session `id`; every answer is the agent's message.
pub async fn run(
    agent: &Agent,
    id: &str,
    arg: &str,
    cx: &ConnectionTo<Client>,
    outbound: &Outbound,
    cancel: &CancellationToken,
) -> Result<StopReason, Error> {
    let say = |text: &str| crate::log_send(outbound.send(cx, crate::translate::agent_message(id, text)));
    let back = match count(arg) {
        Ok(back) => back,
        Err(usage) => {
            say(&usage);
            return Ok(StopReason::EndTurn);
        }
    };
    let live: Vec<String> =
        agent.with_session(|s| s.transcript().turns.iter().filter(|t| !t.rewound).map(|t| t.id.clone()).collect());
    let Some(first) = live.len().checked_sub(back).map(|i| live[i].clone()) else {
        say(&format!(
            "[Mino: nothing to rewind that far: this session has {} turn(s) not rewound; nothing was changed.]",
            live.len()
        ));
        return Ok(StopReason::EndTurn);
    };
    let (plan, digest) = match agent.rewind_plan(&first).await {
        Ok(planned) => planned,
        Err(e) => {
            say(&format!("[Mino: {e}; nothing was changed.]"));
            return Ok(StopReason::EndTurn);
        }
    };
    let text = plan_text(&plan);
    say(&text);
    if plan.files.is_empty() {
        say("Nothing of Mino's to put back in those turns; nothing was changed.");
        return Ok(StopReason::EndTurn);
    }
    let call_id = format!("mino-rewind-{first}");
    let (announce, question) = rewind_question(id, &call_id, &plan, &text);
    crate::log_send(outbound.send(cx, announce));
    let answer = crate::unless_cancelled(cancel, cx.send_request(question).block_task()).await?;
    let allowed = matches!(
        &answer.as_ref().map(|a| &a.outcome),
        Some(RequestPermissionOutcome::Selected(selected)) if selected.option_id.0.as_ref() == REWIND_OPTION
    );
    if !allowed {
        let cancelled =
            answer.is_none() || matches!(answer.map(|a| a.outcome), Some(RequestPermissionOutcome::Cancelled));
        let kept = update(id, &call_id, ToolCallStatus::Failed, "Not rewound: the files were left as they are");
        crate::log_send(outbound.send(cx, kept));
        say("Nothing was changed.");
        return Ok(if cancelled && cancel.is_cancelled() { StopReason::Cancelled } else { StopReason::EndTurn });
    }
    match agent.rewind(&first, &digest).await {
        Ok(done) => {
            crate::log_send(outbound.send(cx, update(id, &call_id, ToolCallStatus::Completed, "Rewound")));
            say(&outcome_text(&done));
            Ok(StopReason::EndTurn)
        }
        Err(AgentError::StalePlan) => {
            crate::log_send(
                outbound.send(cx, update(id, &call_id, ToolCallStatus::Failed, "Not rewound: the plan changed")),
            );
            say("[Mino: nothing was changed: the files changed since the plan was shown. Send /rewind again for the new plan.]");
            Ok(StopReason::EndTurn)
        }
        Err(e) => {
            crate::log_send(outbound.send(cx, update(id, &call_id, ToolCallStatus::Failed, "Not rewound")));
            Err(crate::agent_error(e))
        }
    }
}
