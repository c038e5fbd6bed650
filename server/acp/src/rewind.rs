//! `/rewind [N]` over ACP: the plan for the last N turns (1 without N) not
//! rewound yet is shown as the agent's message (files put back, conflicts
//! left as they are, commands whose effects stay), then asked about with
//! `session/request_permission`, its rejecting option first; only the
//! allowing option rewinds, with the digest of the plan shown
//! (`Agent::rewind`), and the outcome is the agent's next message. A
//! rejection, any other answer, or a cancel writes nothing.

use agent_client_protocol::v1::schema::{
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, StopReason,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use mino_core::agent::{Agent, AgentError, RewindOutcome};
use mino_core::rewind::{FileAction, Outcome, RewindPlan};
use serde_json::{json, Value};
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

fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, Error> {
    serde_json::from_value(value.clone())
        .map_err(|e| crate::internal(format!("mino-acp built a message its schema rejects ({e}): {value}")))
}

fn call_fields(plan: &RewindPlan, text: &str) -> Value {
    json!({
        "title": format!("Rewind {} turn(s): put {} file(s) back", plan.turns.len(), plan.files.len()),
        "kind": "edit",
        "status": "pending",
        "content": [{ "type": "content", "content": { "type": "text", "text": text } }],
        "locations": plan.files.iter().map(|f| json!({ "path": f.path })).collect::<Vec<_>>(),
    })
}

fn update(session_id: &str, call_id: &str, status: &str, title: &str) -> Result<SessionNotification, Error> {
    typed(json!({ "sessionId": session_id, "update": {
        "sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status, "title": title,
    } }))
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
    let mut announce = json!({ "sessionUpdate": "tool_call", "toolCallId": call_id });
    let mut tool_call = json!({ "toolCallId": call_id });
    if let (Some(a), Some(t), Value::Object(fields)) =
        (announce.as_object_mut(), tool_call.as_object_mut(), call_fields(&plan, &text))
    {
        a.extend(fields.clone());
        t.extend(fields);
    }
    crate::log_send(outbound.send(cx, typed::<SessionNotification>(json!({ "sessionId": id, "update": announce }))?));
    // Declining first: the option an editor preselects, or a hurried
    // Enter picks, leaves the files alone.
    let question: RequestPermissionRequest = typed(json!({
        "sessionId": id,
        "toolCall": tool_call,
        "options": [
            { "optionId": KEEP_OPTION, "name": KEEP_NAME, "kind": "reject_once" },
            { "optionId": REWIND_OPTION, "name": REWIND_NAME, "kind": "allow_once" },
        ],
    }))?;
    let answer = crate::unless_cancelled(cancel, cx.send_request(question).block_task()).await?;
    let allowed = matches!(
        &answer.as_ref().map(|a| &a.outcome),
        Some(RequestPermissionOutcome::Selected(selected)) if selected.option_id.0.as_ref() == REWIND_OPTION
    );
    if !allowed {
        let cancelled =
            answer.is_none() || matches!(answer.map(|a| a.outcome), Some(RequestPermissionOutcome::Cancelled));
        crate::log_send(
            outbound.send(cx, update(id, &call_id, "failed", "Not rewound: the files were left as they are")?),
        );
        say("Nothing was changed.");
        return Ok(if cancelled && cancel.is_cancelled() { StopReason::Cancelled } else { StopReason::EndTurn });
    }
    match agent.rewind(&first, &digest).await {
        Ok(done) => {
            crate::log_send(outbound.send(cx, update(id, &call_id, "completed", "Rewound")?));
            say(&outcome_text(&done));
            Ok(StopReason::EndTurn)
        }
        Err(AgentError::StalePlan) => {
            crate::log_send(outbound.send(cx, update(id, &call_id, "failed", "Not rewound: the plan changed")?));
            say("[Mino: nothing was changed: the files changed since the plan was shown. Send /rewind again for the new plan.]");
            Ok(StopReason::EndTurn)
        }
        Err(e) => {
            crate::log_send(outbound.send(cx, update(id, &call_id, "failed", "Not rewound")?));
            Err(crate::agent_error(e))
        }
    }
}
