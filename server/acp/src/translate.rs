//! Mino's values as ACP messages, and ACP's as Mino's: no I/O and no turn
//! logic here, only the mapping docs/acp.md describes.
//!
//! ACP messages are built from JSON and read back through the crate's own
//! types, so every message is checked against the crate's schema.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeResponse, McpServer, RequestPermissionRequest, SessionNotification, StopReason,
};
use mino_core::agent::AgentEvent;
use mino_core::policy::SuggestedRule;
use mino_core::recovery::UNKNOWN_OUTPUT;
use mino_core::rules::{Rule, RuleKind, RuleScope};
use mino_core::transcript::{message_text, Call, Transcript, Turn};
use mino_core::{ToolStatus, TurnStatus};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::Error;

/// The option ids of a command's approval.
pub const ALLOW_OPTION: &str = "allow";
pub const REJECT_OPTION: &str = "reject";
/// `allow_always`: approve, and allow the call's rule for the session.
pub const ALLOW_ALWAYS_OPTION: &str = "allow-always";
/// `reject_always`: deny, and deny the call's rule for the session.
pub const REJECT_ALWAYS_OPTION: &str = "reject-always";
/// The option ids of the acknowledgement gate.
pub const ACKNOWLEDGE_OPTION: &str = "acknowledge";
pub const NOT_NOW_OPTION: &str = "not-now";
/// The gate's option names, as the person reads them.
pub const ACKNOWLEDGE_NAME: &str = "I understand these commands may already have run";
pub const NOT_NOW_NAME: &str = "Not now";

/// A message built here that does not fit the crate's type is a bug here.
fn typed<T: DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value.clone()) {
        Ok(typed) => typed,
        Err(e) => panic!("mino-acp built an ACP message its schema rejects ({e}): {value}"),
    }
}

pub fn initialize_response(_requested: ProtocolVersion) -> InitializeResponse {
    // Mino speaks version 1 only; a client asking for a later one reads 1
    // here and decides (ACP's version negotiation).
    typed(json!({
        "protocolVersion": crate::PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": { "image": false, "audio": false, "embeddedContext": true },
            "mcpCapabilities": { "http": false, "sse": false },
        },
        "agentInfo": { "name": "mino-server", "title": "Mino", "version": env!("CARGO_PKG_VERSION") },
        "authMethods": [],
    }))
}

pub fn mcp_server_names(servers: &[McpServer]) -> Vec<String> {
    servers
        .iter()
        .map(|s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_else(|| "(unnamed)".into())
        })
        .collect()
}

/// Mino has no MCP client: servers the editor offers are said to be unused.
pub fn mcp_notice(names: &[String]) -> Option<String> {
    (!names.is_empty()).then(|| {
        format!(
            "Mino does not connect to MCP servers yet, so these were not started and their tools are not available: {}. \
             Mino's only tool is bash, run after your approval.",
            names.join(", ")
        )
    })
}

fn notification(session_id: &str, update: Value) -> SessionNotification {
    typed(json!({ "sessionId": session_id, "update": update }))
}

pub fn agent_message(session_id: &str, text: &str) -> SessionNotification {
    notification(
        session_id,
        json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": text } }),
    )
}

fn user_message(session_id: &str, text: &str) -> SessionNotification {
    notification(
        session_id,
        json!({ "sessionUpdate": "user_message_chunk", "content": { "type": "text", "text": text } }),
    )
}

/// The ACP tool call id of the `index`th call of a turn: model call ids
/// repeat across turns and responses, the pair does not.
fn tool_call_id(turn_id: &str, index: usize) -> String {
    format!("{turn_id}/{index}")
}

/// The title of a call with its result: non-run outcomes say so first.
fn title(command: &str, status: Option<ToolStatus>) -> String {
    match status {
        Some(ToolStatus::Unknown) => format!("Result unknown: {command}"),
        Some(ToolStatus::NotExecuted) => format!("Not executed: {command}"),
        Some(ToolStatus::Refused) => format!("Refused: {command}"),
        Some(ToolStatus::TimedOut) => format!("Timed out: {command}"),
        Some(ToolStatus::Cancelled) => format!("Cancelled: {command}"),
        _ => command.to_string(),
    }
}

/// The fields of a call that has its result: `completed` only for a
/// command that ran and exited 0; every other outcome is `failed`, with
/// Mino's status in `rawOutput.minoResult` and `_meta.minoStatus`.
fn result_fields(command: &str, status: ToolStatus, output: &str, exit_code: Option<i32>) -> Value {
    let acp_status = if status == ToolStatus::Success { "completed" } else { "failed" };
    let mut raw_output = json!({ "minoResult": status.as_str() });
    if let Some(code) = exit_code {
        raw_output["exitCode"] = json!(code);
    }
    json!({
        "title": title(command, Some(status)),
        "kind": "execute",
        "status": acp_status,
        "content": [{ "type": "content", "content": { "type": "text", "text": output } }],
        "rawOutput": raw_output,
        "_meta": { "minoStatus": status.as_str() },
    })
}

fn tool_call(session_id: &str, id: &str, command: &str, fields: Value) -> SessionNotification {
    let mut update = json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": title(command, None),
        "kind": "execute",
        "rawInput": { "command": command },
    });
    merge(&mut update, fields);
    notification(session_id, update)
}

fn tool_call_update(session_id: &str, id: &str, fields: Value) -> SessionNotification {
    let mut update = json!({ "sessionUpdate": "tool_call_update", "toolCallId": id });
    merge(&mut update, fields);
    notification(session_id, update)
}

fn merge(into: &mut Value, fields: Value) {
    if let (Some(into), Value::Object(fields)) = (into.as_object_mut(), fields) {
        into.extend(fields);
    }
}

/// A recorded call as ACP shows it: its final status and output.
fn recorded_call(session_id: &str, id: &str, call: &Call) -> SessionNotification {
    let command = call.command();
    let fields = match &call.result {
        Some(r) => result_fields(&command, r.status, &r.output, r.exit_code),
        None if call.started => json!({ "status": "in_progress" }),
        None => json!({ "status": "pending" }),
    };
    tool_call(session_id, id, &command, fields)
}

/// The whole conversation as `session/update`s, for `session/load`: each
/// turn's input, then its responses' text and calls in order, then the
/// runtime notice of a turn that did not complete.
pub fn replay(session_id: &str, transcript: &Transcript) -> Vec<SessionNotification> {
    let mut out = Vec::new();
    for turn in &transcript.turns {
        out.push(user_message(session_id, &turn.input));
        for (index, response) in turn.responses.iter().enumerate() {
            let text: Vec<String> = response
                .iter()
                .filter_map(|item| serde_json::from_str::<Value>(item.get()).ok())
                .filter_map(|item| message_text(&item))
                .filter(|t| !t.is_empty())
                .collect();
            if !text.is_empty() {
                out.push(agent_message(session_id, &text.join("\n\n")));
            }
            for (n, call) in turn.calls.iter().enumerate().filter(|(_, c)| c.response_index == index) {
                out.push(recorded_call(session_id, &tool_call_id(&turn.id, n), call));
            }
        }
        if let Some(notice) = turn.notice() {
            out.push(agent_message(session_id, &notice));
        }
    }
    out
}

/// The two options of the acknowledgement gate; never an `allow_always`.
pub fn gate_options() -> Value {
    json!([
        { "optionId": ACKNOWLEDGE_OPTION, "name": ACKNOWLEDGE_NAME, "kind": "allow_once" },
        { "optionId": NOT_NOW_OPTION, "name": NOT_NOW_NAME, "kind": "reject_once" },
    ])
}

/// One question per turn whose `unknown` result awaits acknowledgement,
/// about its (first) unknown call, showing every unknown call of the turn.
pub fn gate_questions(session_id: &str, transcript: &Transcript) -> Vec<(String, RequestPermissionRequest)> {
    transcript
        .turns
        .iter()
        .filter(|t| t.awaits_acknowledgement())
        .filter_map(|turn| gate_question(session_id, turn).map(|q| (turn.id.clone(), q)))
        .collect()
}

fn gate_question(session_id: &str, turn: &Turn) -> Option<RequestPermissionRequest> {
    let unknown: Vec<(usize, &Call)> = turn
        .calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.result.as_ref().is_some_and(|r| r.status == ToolStatus::Unknown))
        .collect();
    let (first, call) = *unknown.first()?;
    let commands: Vec<String> = unknown.iter().map(|(_, c)| format!("  {}", c.command())).collect();
    let text = format!(
        "Mino stopped while {} running, and its result was not saved:\n{}\n{UNKNOWN_OUTPUT}\n\
         Check what happened before you go on; Mino will not run anything again by itself.",
        if unknown.len() == 1 { "this command was" } else { "these commands were" },
        commands.join("\n"),
    );
    let mut tool_call = json!({ "toolCallId": tool_call_id(&turn.id, first) });
    merge(&mut tool_call, result_fields(&call.command(), ToolStatus::Unknown, &text, None));
    Some(typed(json!({ "sessionId": session_id, "toolCall": tool_call, "options": gate_options() })))
}

/// The prompt's text for the model: text blocks as they are, embedded
/// context as a fenced block naming its URI, links by name and URI.
pub fn prompt_text(blocks: &[ContentBlock]) -> Result<String, Error> {
    let mut text = String::new();
    for block in blocks {
        let block = serde_json::to_value(block).map_err(|e| crate::internal(e.to_string()))?;
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("(no uri)");
                let Some(body) = resource.get("text").and_then(Value::as_str) else {
                    return Err(crate::invalid_params(format!(
                        "the embedded resource {uri} is binary; Mino takes text context only"
                    )));
                };
                text.push_str(&format!("\n\n<context uri=\"{uri}\">\n{body}\n</context>\n\n"));
            }
            "resource_link" => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or(uri);
                text.push_str(&format!("[{name}]({uri})"));
            }
            other => {
                return Err(crate::invalid_params(format!(
                    "Mino takes text and embedded text context only (promptCapabilities); a {other:?} block was sent"
                )))
            }
        }
    }
    if text.trim().is_empty() {
        return Err(crate::invalid_params("the prompt has no text"));
    }
    Ok(text)
}

/// The prompt's answer for a turn's end. A failed turn is a JSON-RPC error
/// with Mino's reason, except where ACP has the honest stop reason: the
/// turn limits (`max_turn_requests`), the model's output limit
/// (`max_tokens`) and its content filter (`refusal`).
pub fn stop_reason(status: TurnStatus, reason: Option<String>, turn_id: &str) -> Result<StopReason, Error> {
    let reason_text = reason.clone().unwrap_or_default();
    match status {
        TurnStatus::Completed => Ok(StopReason::EndTurn),
        TurnStatus::Cancelled => Ok(StopReason::Cancelled),
        TurnStatus::Failed if reason_text.starts_with("limit reached:") => Ok(StopReason::MaxTurnRequests),
        TurnStatus::Failed if reason_text.ends_with("cut short (max_output_tokens)") => Ok(StopReason::MaxTokens),
        TurnStatus::Failed if reason_text.ends_with("cut short (content_filter)") => Ok(StopReason::Refusal),
        status => Err(crate::internal(match reason {
            Some(reason) => reason,
            None => format!("the turn ended {}", status.as_str()),
        })
        .data(json!({ "turnId": turn_id, "minoTurnStatus": status.as_str() }))),
    }
}

/// What one agent event becomes.
#[derive(Default)]
pub struct Translated {
    pub updates: Vec<SessionNotification>,
    /// A command waiting for approval: (turn, call, question).
    pub permission: Option<(String, String, RequestPermissionRequest)>,
    /// The rule its `allow_always` / `reject_always` grant, when offered.
    pub always: Option<SuggestedRule>,
    /// The turn's end: (turn, status, reason).
    pub ended: Option<(String, TurnStatus, Option<String>)>,
}

/// The running turn's calls, numbered as [`replay`] numbers them (a call's
/// first event, an approval request or a result, comes in transcript order).
#[derive(Default)]
pub struct LiveCalls {
    turn_id: String,
    next: usize,
    /// Announced calls without a result yet: (model call id, ACP id).
    open: Vec<(String, String)>,
}

impl LiveCalls {
    pub fn translate(
        &mut self,
        session_id: &str,
        event: AgentEvent,
        command_of: impl Fn(&str, &str) -> String,
    ) -> Translated {
        let mut out = Translated::default();
        match event {
            AgentEvent::TurnStarted { turn_id, .. } => *self = LiveCalls { turn_id, ..LiveCalls::default() },
            AgentEvent::TextDelta { delta, .. } => out.updates.push(agent_message(session_id, &delta)),
            AgentEvent::Retrying { attempt, delay_ms, reason, .. } => out.updates.push(agent_message(
                session_id,
                &format!(
                    "\n\n[Mino: the model request failed ({reason}); trying again (attempt {attempt}) in {delay_ms} ms. \
                     Text since the last answer began does not count.]\n\n"
                ),
            )),
            AgentEvent::ApprovalRequest {
                turn_id, call_id, command, directory, environment, limits, edit, suggested_rule, ..
            } => {
                out.always = always_rule(&command, edit.is_some(), suggested_rule);
                let id = self.open_call(&call_id);
                let raw_input = json!({
                    "command": command,
                    "directory": directory,
                    "environment": environment,
                    "timeoutSeconds": limits.timeout.as_secs(),
                    "outputLimitBytes": limits.output_limit,
                });
                out.updates.push(tool_call(
                    session_id,
                    &id,
                    &command,
                    json!({ "status": "pending", "rawInput": raw_input.clone() }),
                ));
                let question = typed(json!({
                    "sessionId": session_id,
                    "toolCall": { "toolCallId": id, "title": command, "kind": "execute", "status": "pending", "rawInput": raw_input },
                    "options": permission_options(out.always.as_ref()),
                }));
                out.permission = Some((turn_id, call_id, question));
            }
            AgentEvent::ToolStarted { call_id, command, .. } => {
                match self.open.iter().find(|(c, _)| *c == call_id) {
                    Some((_, id)) => {
                        out.updates.push(tool_call_update(session_id, id, json!({ "status": "in_progress" })))
                    }
                    // Approved by a rule without asking: announced running.
                    None => {
                        let id = self.open_call(&call_id);
                        out.updates.push(tool_call(session_id, &id, &command, json!({ "status": "in_progress" })));
                    }
                }
            }
            // Live output is not streamed: ACP's `content` replaces the
            // previous content on each update. The output comes with the result.
            AgentEvent::ToolOutput { .. } => {}
            AgentEvent::ToolResult { turn_id, call_id, status, output, exit_code, .. } => {
                let command = command_of(&turn_id, &call_id);
                let fields = result_fields(&command, status, &output, exit_code);
                match self.open.iter().position(|(c, _)| *c == call_id) {
                    Some(at) => {
                        let (_, id) = self.open.remove(at);
                        out.updates.push(tool_call_update(session_id, &id, fields));
                    }
                    None => {
                        let id = tool_call_id(&self.turn_id, self.next);
                        self.next += 1;
                        out.updates.push(tool_call(session_id, &id, &command, fields));
                    }
                }
            }
            AgentEvent::TurnEnded { turn_id, status, reason, .. } => out.ended = Some((turn_id, status, reason)),
            // An ACP session is one Mino session for its whole life: the
            // front door never switches, so no other session announces itself.
            AgentEvent::SessionOpened { .. } => {}
        }
        out
    }

    fn open_call(&mut self, call_id: &str) -> String {
        let id = tool_call_id(&self.turn_id, self.next);
        self.next += 1;
        self.open.push((call_id.to_string(), id.clone()));
        id
    }
}

/// The rule `allow_always` / `reject_always` grant for a call: a command's
/// suggested prefix rule, else the exact command (when it is one plain
/// command); an edit's exact path as a path rule, never for a path that
/// leaves the workspace (the server suggests none then). `None`: the
/// options are not offered.
pub fn always_rule(command: &str, edit: bool, suggested: Option<SuggestedRule>) -> Option<SuggestedRule> {
    if edit || suggested.is_some() {
        return suggested;
    }
    Rule::new("exact", RuleKind::Exact, command, RuleScope::Session)
        .ok()
        .map(|rule| SuggestedRule { kind: RuleKind::Exact, text: rule.command().to_owned() })
}

/// A call's permission options: once, and (with a rule) always, for the session.
fn permission_options(always: Option<&SuggestedRule>) -> Value {
    let mut options = vec![json!({ "optionId": ALLOW_OPTION, "name": "Run this command", "kind": "allow_once" })];
    let what = always.map(|rule| match rule.kind {
        RuleKind::Prefix => format!("commands starting with `{}`", rule.text),
        RuleKind::Exact => format!("`{}`", rule.text),
        RuleKind::Path => format!("edits of `{}`", rule.text),
    });
    if let Some(what) = &what {
        let name = format!("Always allow {what} in this session");
        options.push(json!({ "optionId": ALLOW_ALWAYS_OPTION, "name": name, "kind": "allow_always" }));
    }
    options.push(json!({ "optionId": REJECT_OPTION, "name": "Do not run it", "kind": "reject_once" }));
    if let Some(what) = &what {
        let name = format!("Always refuse {what} in this session");
        options.push(json!({ "optionId": REJECT_ALWAYS_OPTION, "name": name, "kind": "reject_always" }));
    }
    Value::Array(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> ContentBlock {
        typed(json!({ "type": "text", "text": t }))
    }

    #[test]
    fn turn_ends_map_to_their_stop_reasons_and_failures_to_errors_with_minos_reason() {
        let reason = |r: &str| Some(r.to_string());
        assert_eq!(stop_reason(TurnStatus::Completed, None, "turn-1").ok(), Some(StopReason::EndTurn));
        assert_eq!(
            stop_reason(TurnStatus::Cancelled, reason("cancelled by the user"), "turn-1").ok(),
            Some(StopReason::Cancelled)
        );
        let limit = reason("limit reached: at most 8 model requests per turn");
        assert_eq!(stop_reason(TurnStatus::Failed, limit, "turn-1").ok(), Some(StopReason::MaxTurnRequests));
        let cut = reason("the model's answer was cut short (max_output_tokens)");
        assert_eq!(stop_reason(TurnStatus::Failed, cut, "turn-1").ok(), Some(StopReason::MaxTokens));
        let filtered = reason("the model's answer was cut short (content_filter)");
        assert_eq!(stop_reason(TurnStatus::Failed, filtered, "turn-1").ok(), Some(StopReason::Refusal));
        let error = stop_reason(TurnStatus::Failed, reason("model error 500: overloaded"), "turn-3")
            .expect_err("a failed turn is an error");
        assert_eq!(error.message, "model error 500: overloaded");
        assert_eq!(error.data, Some(json!({ "turnId": "turn-3", "minoTurnStatus": "failed" })));
    }

    #[test]
    fn prompts_keep_text_and_embedded_context_and_refuse_images_by_name() {
        let context: ContentBlock = typed(json!({
            "type": "resource",
            "resource": { "uri": "file:///w/list.txt", "text": "milk\n", "mimeType": "text/plain" },
        }));
        let prompt = prompt_text(&[text("Is it on "), text("the list?"), context]).expect("text prompt");
        assert!(prompt.starts_with("Is it on the list?"));
        assert!(prompt.contains("<context uri=\"file:///w/list.txt\">\nmilk\n\n</context>"));
        let image: ContentBlock = typed(json!({ "type": "image", "data": "AAAA", "mimeType": "image/png" }));
        let refused = prompt_text(&[text("look"), image]).expect_err("images are not offered");
        assert!(refused.message.contains("\"image\""), "{}", refused.message);
        assert!(prompt_text(&[text("  ")]).is_err(), "an empty prompt is refused");
    }

    #[test]
    fn results_other_than_success_are_failed_with_minos_status_named() {
        let unknown = result_fields("rm -rf build", ToolStatus::Unknown, UNKNOWN_OUTPUT, None);
        assert_eq!(unknown["status"], "failed");
        assert_eq!(unknown["title"], "Result unknown: rm -rf build");
        assert_eq!(unknown["rawOutput"], json!({ "minoResult": "unknown" }));
        assert_eq!(unknown["_meta"], json!({ "minoStatus": "unknown" }));
        assert_eq!(unknown["content"][0]["content"]["text"], UNKNOWN_OUTPUT);
        let not_run = result_fields("ls", ToolStatus::NotExecuted, mino_core::recovery::NOT_EXECUTED_OUTPUT, None);
        assert_eq!(not_run["title"], "Not executed: ls");
        assert_eq!(not_run["status"], "failed");
        let ran = result_fields("false", ToolStatus::Failed, "", Some(1));
        assert_eq!((ran["status"].as_str(), ran["title"].as_str()), (Some("failed"), Some("false")));
        assert_eq!(ran["rawOutput"], json!({ "minoResult": "failed", "exitCode": 1 }));
        assert_eq!(result_fields("true", ToolStatus::Success, "", Some(0))["status"], "completed");
    }

    #[test]
    fn always_options_carry_the_calls_rule_and_are_not_offered_without_one() {
        let prefix = SuggestedRule { kind: RuleKind::Prefix, text: "npm test".into() };
        assert_eq!(always_rule("npm test --ci", false, Some(prefix.clone())), Some(prefix.clone()));
        let exact = always_rule("bash", false, None).expect("a plain command without a suggestion: exact");
        assert_eq!((exact.kind, exact.text.as_str()), (RuleKind::Exact, "bash"));
        assert_eq!(always_rule("echo hi > out.txt", false, None), None, "not plain: no rule, no always");
        assert_eq!(always_rule("edit_file ../x", true, None), None, "an edit leaving the workspace: none");
        let path = SuggestedRule { kind: RuleKind::Path, text: "src/a.rs".into() };
        assert_eq!(always_rule("edit_file src/a.rs", true, Some(path.clone())), Some(path.clone()));

        let kinds = |options: Value| -> Vec<(String, String)> {
            options
                .as_array()
                .expect("options")
                .iter()
                .map(|o| (o["kind"].as_str().unwrap_or("").to_owned(), o["name"].as_str().unwrap_or("").to_owned()))
                .collect()
        };
        let offered = kinds(permission_options(Some(&prefix)));
        assert_eq!(
            offered.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["allow_once", "allow_always", "reject_once", "reject_always"]
        );
        assert_eq!(offered[1].1, "Always allow commands starting with `npm test` in this session");
        assert_eq!(kinds(permission_options(Some(&path)))[3].1, "Always refuse edits of `src/a.rs` in this session");
        assert_eq!(kinds(permission_options(None)).len(), 2);
    }

    #[test]
    fn the_gate_offers_exactly_two_options_and_never_allow_always() {
        let options = gate_options();
        assert_eq!(
            options,
            json!([
                { "optionId": "acknowledge", "name": "I understand these commands may already have run", "kind": "allow_once" },
                { "optionId": "not-now", "name": "Not now", "kind": "reject_once" },
            ])
        );
    }

    #[test]
    fn mcp_servers_offered_are_named_in_the_notice() {
        assert_eq!(mcp_notice(&[]), None);
        let notice = mcp_notice(&["github".into(), "files".into()]).expect("a notice");
        assert!(notice.contains("github, files"), "{notice}");
    }
}
