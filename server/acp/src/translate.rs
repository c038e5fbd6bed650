//! Mino's values as ACP messages, and ACP's as Mino's: no I/O and no turn
//! logic here, only the mapping docs/acp.md describes.
//!
//! ACP messages are built from the crate's own types, so the compiler checks
//! every message against the crate's schema; only the free-form parts
//! (`rawInput`, `rawOutput`, `_meta`, an error's `data`) are JSON.

use std::path::Path;
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, Content, ContentBlock, ContentChunk, CreateElicitationRequest, Diff, ElicitationAcceptAction,
    ElicitationContentValue, ElicitationFormMode, ElicitationSchema, ElicitationSessionScope, EnumOption, ImageContent,
    Implementation, InitializeResponse, ListSessionsResponse, McpCapabilities, McpServer, Meta, PermissionOption,
    PermissionOptionKind, RequestPermissionRequest, SessionCapabilities, SessionCloseCapabilities,
    SessionForkCapabilities, SessionId, SessionInfo, SessionListCapabilities, SessionNotification,
    SessionResumeCapabilities, SessionUpdate, StopReason, StringPropertySchema, Terminal, TerminalId, TextContent,
    ToolCall, ToolCallContent, ToolCallId, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, UsageUpdate,
};
use mino_core::agent::{AgentEvent, CompactionOutcome, EditApproval};
use mino_core::edit::{EditArgs, EditTool};
use mino_core::policy::SuggestedRule;
use mino_core::read::{ReadInfo, ReadTool};
use mino_core::recovery::UNKNOWN_OUTPUT;
use mino_core::rules::{Rule, RuleKind, RuleScope};
use mino_core::supervisor::Evidence;
use mino_core::transcript::{message_text, Call, Transcript, Turn};
use mino_core::{ToolStatus, TurnStatus};
use serde_json::{json, Value};

use crate::Error;

/// The option ids of a command's approval.
pub const ALLOW_OPTION: &str = "allow";
pub const REJECT_OPTION: &str = "reject";
/// `allow_always`: approve, and allow the call's rule for the session.
pub const ALLOW_ALWAYS_OPTION: &str = "allow-always";
/// `reject_always`: deny, and deny the call's rule for the session.
pub const REJECT_ALWAYS_OPTION: &str = "reject-always";
/// For an MCP call, `allow_always` for every tool of its server (the plain
/// `allow-always` is for the one tool), and its `reject_always` counterpart.
pub const ALLOW_ALWAYS_SERVER_OPTION: &str = "allow-always-server";
pub const REJECT_ALWAYS_SERVER_OPTION: &str = "reject-always-server";
/// The option ids of the acknowledgement gate.
pub const ACKNOWLEDGE_OPTION: &str = "acknowledge";
pub const NOT_NOW_OPTION: &str = "not-now";
/// A second way to decline, worded for the person who wants to look first.
pub const CHECK_FIRST_OPTION: &str = "check-first";
/// The gate's option names, as the person reads them.
pub const ACKNOWLEDGE_NAME: &str = "I understand these commands may already have run";
pub const NOT_NOW_NAME: &str = "Not now";
pub const CHECK_FIRST_NAME: &str = "Not yet: I will check what happened first";
/// The gate's title starts with this: it asks for an acknowledgement, not
/// for leave to run anything.
pub const GATE_TITLE: &str = "Acknowledge before Mino goes on";
/// The agent's message when the person declines the gate: the prompt ends
/// (`end_turn`), and the conversation waits for the acknowledgement.
pub const GATE_DECLINED: &str = "Nothing was sent to the model: the conversation waits until you acknowledge that \
     the commands shown may already have run. Check what they did, then send your message again and choose \
     \"I understand these commands may already have run\".";

pub fn initialize_response(_requested: ProtocolVersion) -> InitializeResponse {
    // Mino speaks version 1 only; a client asking for a later one reads 1
    // here and decides (ACP's version negotiation).
    let sessions = SessionCapabilities::new()
        .list(SessionListCapabilities::new())
        .resume(SessionResumeCapabilities::new())
        .close(SessionCloseCapabilities::new())
        .fork(SessionForkCapabilities::new());
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .session_capabilities(sessions)
        .prompt_capabilities(crate::images::prompt_capabilities())
        // Streamable HTTP servers are connected to; the older
        // HTTP+SSE transport is not (such an entry is listed failed).
        .mcp_capabilities(McpCapabilities::new().http(true).sse(false));
    InitializeResponse::new(ProtocolVersion::from(crate::PROTOCOL_VERSION))
        .agent_capabilities(capabilities)
        .agent_info(Implementation::new("mino-server", env!("CARGO_PKG_VERSION")).title("Mino"))
}

/// The MCP servers a client passes in `session/new`/`session/load`, as
/// Mino's configuration of them: stdio and streamable HTTP servers are
/// started; an `sse` one is listed failed, saying why (its status reaches
/// the person like any failed server's); an entry that names nothing to
/// start gets a sentence saying so.
pub fn mcp_configs(servers: &[McpServer]) -> (Vec<mino_core::mcp::McpServerConfig>, Vec<String>) {
    let mut configs = Vec::new();
    let mut refused = Vec::new();
    for server in servers {
        let value = serde_json::to_value(server).unwrap_or(Value::Null);
        let raw_name = value.get("name").and_then(Value::as_str).unwrap_or("mcp");
        let mut name: String =
            raw_name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        name.truncate(mino_core::mcp::config::MAX_SERVER_NAME);
        if name.is_empty() {
            name = "mcp".into();
        }
        match (value.get("type").and_then(Value::as_str), value.get("command").and_then(Value::as_str)) {
            (None | Some("stdio"), Some(command)) => {
                let args = value
                    .get("args")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default();
                let env = pairs(value.get("env"));
                configs.push(mino_core::mcp::McpServerConfig::stdio(&name, command, args, env));
            }
            (Some("http"), _) => match value.get("url").and_then(Value::as_str) {
                Some(url) => {
                    let headers = pairs(value.get("headers"));
                    configs.push(mino_core::mcp::McpServerConfig::http(&name, url, headers));
                }
                None => refused.push(format!("MCP server `{raw_name}` (http) was not started: it names no url.")),
            },
            (Some(kind), _) => configs.push(mino_core::mcp::McpServerConfig::unsupported(
                &name,
                format!(
                    "its transport `{kind}` is not supported by Mino (stdio and streamable HTTP are); if the server also serves streamable HTTP, pass it as `http`"
                ),
            )),
            (None, None) => refused.push(format!("MCP server `{raw_name}` was not started: it names no command.")),
        }
    }
    (configs, refused)
}

/// ACP's `[{name, value}]` lists (`env`, `headers`) as a map.
fn pairs(list: Option<&Value>) -> std::collections::BTreeMap<String, String> {
    list.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| Some((v.get("name")?.as_str()?.to_string(), v.get("value")?.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn notification(session_id: &str, update: SessionUpdate) -> SessionNotification {
    SessionNotification::new(SessionId::new(session_id), update)
}

fn text_block(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

/// What the person reads about an MCP server that failed to start or
/// exited (its tools are missing); nothing for the other states.
pub fn mcp_status_notice(status: &mino_core::mcp::McpStatus) -> Option<String> {
    use mino_core::mcp::McpState;
    match &status.state {
        McpState::Failed { reason } => Some(format!(
            "\n\n[Mino: MCP server `{}` failed to start: {reason}. Its tools are missing.]\n\n",
            status.server
        )),
        McpState::Exited { reason } => Some(format!(
            "\n\n[Mino: MCP server `{}` exited: {reason}. Its tools are missing until it is restarted.]\n\n",
            status.server
        )),
        McpState::Starting | McpState::Ready { .. } => None,
    }
}

pub fn agent_message(session_id: &str, text: &str) -> SessionNotification {
    notification(session_id, SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(text))))
}

/// A question's image as the person sent it (an `image` block, its bytes
/// read back from the session's images and checked against their hash), or
/// a line saying why it cannot be shown.
fn replayed_image(session_id: &str, dir: Option<&Path>, image: &mino_core::images::ImageRef) -> SessionNotification {
    let read = dir
        .ok_or_else(|| "the session keeps no images".to_string())
        .and_then(|dir| mino_core::images::read_checked(&mino_core::images::path_in(dir, image), image));
    let content = match read {
        Ok(bytes) => {
            ContentBlock::Image(ImageContent::new(mino_core::images::base64(&bytes), image.mime_type.as_str()))
        }
        Err(why) => text_block(format!("[Mino: {} cannot be shown: {why}]", image.label())),
    };
    notification(session_id, SessionUpdate::UserMessageChunk(ContentChunk::new(content)))
}

fn user_message(session_id: &str, text: &str) -> SessionNotification {
    notification(session_id, SessionUpdate::UserMessageChunk(ContentChunk::new(text_block(text))))
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
        Some(ToolStatus::NotApplied) => format!("Not applied: {command}"),
        Some(ToolStatus::Unavailable) => format!("Result unavailable: {command}"),
        Some(ToolStatus::Refused) => format!("Refused: {command}"),
        Some(ToolStatus::TimedOut) => format!("Timed out: {command}"),
        Some(ToolStatus::Cancelled) => format!("Cancelled: {command}"),
        _ => command.to_string(),
    }
}

/// How much of a running command's output a live update carries: ACP's
/// `content` replaces the previous content, so each update sends the
/// output so far, cut to its last part.
pub const LIVE_OUTPUT_BYTES: usize = 64 * 1024;
/// The line that starts live output cut to its last [`LIVE_OUTPUT_BYTES`].
pub const LIVE_OUTPUT_CUT: &str = "…earlier output cut\n";
/// At most one live output update per call per this interval; output
/// arriving meanwhile is sent together at its end.
pub const LIVE_OUTPUT_INTERVAL: Duration = Duration::from_millis(100);

/// What a call shows beyond its command: for an edit call, the file (an
/// absolute path, ACP's `locations`) and the `diff` content when known.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallView {
    /// The command, or an edit's summary (`edit_file shopping.txt`).
    pub command: String,
    /// `Some` for an edit call.
    pub edit: Option<EditView>,
    /// `Some` for a read call (`read_file`, `list_files`, `search`).
    pub read: Option<ReadLocation>,
}

/// What a read call reads, as ACP shows it: kind `read` (`read_file`,
/// `list_files`) or `search`, and the absolute path in `locations`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadLocation {
    pub kind: ToolKind,
    pub path: String,
    /// `read_file`'s first line, when it asked for one.
    pub line: Option<u64>,
}

impl ReadLocation {
    fn of(info: &ReadInfo, cwd: &Path) -> ReadLocation {
        let kind = if info.tool == ReadTool::Search { ToolKind::Search } else { ToolKind::Read };
        let path = cwd.join(&info.path).display().to_string();
        ReadLocation { kind, path, line: info.start_line }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EditView {
    pub path: String,
    /// ACP `diff` content, when known.
    pub diff: Option<Diff>,
}

impl CallView {
    /// A command's view.
    pub fn command(command: &str) -> CallView {
        CallView { command: command.to_string(), edit: None, read: None }
    }

    /// A read call's view, from what the core says of it.
    pub fn read(command: &str, info: &ReadInfo, cwd: &Path) -> CallView {
        CallView { command: command.to_string(), edit: None, read: Some(ReadLocation::of(info, cwd)) }
    }

    /// An edit awaiting approval: the whole file before and after, as the
    /// core's proposal computed them.
    pub fn proposed_edit(command: &str, edit: &EditApproval) -> CallView {
        let path = edit.absolute_path.display().to_string();
        let diff = Diff::new(&path, &*edit.new_text).old_text(edit.old_text.as_deref().map(str::to_string));
        CallView { command: command.to_string(), edit: Some(EditView { path, diff: Some(diff) }), read: None }
    }

    /// A recorded call. The journal keeps an edit's arguments, not the
    /// whole file: an `edit_file`'s diff is its `old_text` → `new_text`
    /// (the replaced passage), a `write_file` that created its file is
    /// `null` → its content, and a `write_file` over an existing file has
    /// no diff (the content it replaced is not recorded; a written edit's
    /// result text holds its unified diff). The path is the one its
    /// `tool_start` recorded, else the model's, against `cwd`.
    pub fn recorded(call: &Call, cwd: &Path) -> CallView {
        let command = call.command();
        if let Some(info) = call.read_info() {
            return CallView::read(&command, &info, cwd);
        }
        let Some(tool) = EditTool::from_name(&call.name) else { return CallView::command(&command) };
        let args = EditArgs::parse(tool, &call.arguments).ok();
        let path = match (&call.edit, &args) {
            (Some(start), _) => start.path.clone(),
            (None, Some(args)) => cwd.join(args.path()).display().to_string(),
            (None, None) => return CallView { command, edit: None, read: None },
        };
        let diff = match (&args, &call.edit) {
            (Some(EditArgs::Edit { old_text, new_text, .. }), _) => {
                Some(Diff::new(&path, new_text.as_str()).old_text(old_text.as_str()))
            }
            (Some(EditArgs::Write { content, .. }), Some(start)) if start.new_file => {
                Some(Diff::new(&path, content.as_str()))
            }
            _ => None,
        };
        CallView { command, edit: Some(EditView { path, diff }), read: None }
    }

    fn kind(&self) -> ToolKind {
        match (&self.edit, &self.read) {
            (Some(_), _) => ToolKind::Edit,
            (None, Some(read)) => read.kind,
            (None, None) => ToolKind::Execute,
        }
    }

    /// The file a read or an edit is about; `None` for a command.
    fn locations(&self) -> Option<Vec<ToolCallLocation>> {
        match (&self.edit, &self.read) {
            (Some(edit), _) => Some(vec![ToolCallLocation::new(&edit.path)]),
            // A line past ACP's range is left out rather than shown wrong.
            (None, Some(read)) => {
                Some(vec![ToolCallLocation::new(&read.path).line(read.line.and_then(|line| u32::try_from(line).ok()))])
            }
            (None, None) => None,
        }
    }

    /// An edit's diff, when known (an empty list when not); `None` for any
    /// other call.
    fn content(&self) -> Option<Vec<ToolCallContent>> {
        self.edit.as_ref().map(|edit| edit.diff.iter().cloned().map(ToolCallContent::Diff).collect())
    }

    /// The fields every message about this call carries: title, kind, and
    /// for a read its location, for an edit its location and diff.
    fn fields(&self, status: Option<ToolStatus>) -> ToolCallUpdateFields {
        ToolCallUpdateFields::new()
            .title(title(&self.command, status))
            .kind(self.kind())
            .locations(self.locations())
            .content(self.content())
    }
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::Content(Content::new(text_block(text)))
}

/// The fields of a call that has its result: `completed` only for a
/// command that ran and exited 0 or an edit that was written (`success`,
/// or `applied` as recovery proved); every other outcome is `failed`, with
/// Mino's status in `rawOutput.minoResult` and `_meta.minoStatus`. An
/// edit's diff comes before the output.
fn result_fields(view: &CallView, status: ToolStatus, output: &str, exit_code: Option<i32>) -> CallResult {
    let acp_status = if matches!(status, ToolStatus::Success | ToolStatus::Applied) {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    let mut raw_output = json!({ "minoResult": status.as_str() });
    if let Some(code) = exit_code {
        raw_output["exitCode"] = json!(code);
    }
    let fields = view.fields(Some(status));
    let mut content = fields.content.clone().unwrap_or_default();
    content.push(text_content(output));
    CallResult {
        fields: fields.status(acp_status).content(content).raw_output(raw_output),
        meta: Meta::from_iter([("minoStatus".to_string(), json!(status.as_str()))]),
    }
}

/// A call's fields once it has its result, and Mino's own status of it (the
/// message's `_meta`).
struct CallResult {
    fields: ToolCallUpdateFields,
    meta: Meta,
}

/// The `tool_call` announcing a call: the view's fields (the command as
/// `rawInput`), then `fields` over them.
fn tool_call(
    session_id: &str,
    id: &str,
    view: &CallView,
    fields: ToolCallUpdateFields,
    meta: Option<Meta>,
) -> SessionNotification {
    let mut call = ToolCall::new(ToolCallId::new(id), title(&view.command, None))
        .kind(view.kind())
        .locations(view.locations().unwrap_or_default())
        .content(view.content().unwrap_or_default())
        .raw_input(json!({ "command": view.command }))
        .meta(meta);
    call.update(fields);
    notification(session_id, SessionUpdate::ToolCall(call))
}

fn tool_call_update(session_id: &str, id: &str, fields: ToolCallUpdateFields) -> SessionNotification {
    notification(session_id, SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(ToolCallId::new(id), fields)))
}

/// The supervisor's evidence as a line for people (the recorded result
/// itself is never changed by it).
pub fn evidence_text(evidence: &Evidence) -> String {
    format!("What Mino's supervisor saw: {}.", evidence.summary())
}

/// The supervisor's evidence as `rawOutput.supervisor`.
fn evidence_json(evidence: &Evidence) -> Value {
    let outcome = serde_json::to_value(evidence.outcome).unwrap_or(Value::Null);
    json!({
        "outcome": outcome,
        "exitCode": evidence.exit_code,
        "signal": evidence.signal,
        "afterMinoStopped": evidence.after_mino_stopped,
        "summary": evidence.summary(),
        "outputTail": evidence.output_tail,
    })
}

/// A recorded call as ACP shows it: its final status and output, and for
/// an `unknown` result the supervisor's evidence when it left some.
fn recorded_call(
    session_id: &str,
    id: &str,
    call: &Call,
    cwd: &Path,
    evidence: Option<&Evidence>,
) -> SessionNotification {
    let view = CallView::recorded(call, cwd);
    let (fields, meta) = match &call.result {
        Some(r) => {
            let CallResult { mut fields, meta } = result_fields(&view, r.status, &r.output, r.exit_code);
            if let Some(evidence) = evidence {
                fields.content.get_or_insert_with(Vec::new).push(text_content(&evidence_text(evidence)));
                if let Some(Value::Object(raw_output)) = &mut fields.raw_output {
                    raw_output.insert("supervisor".to_string(), evidence_json(evidence));
                }
            }
            (fields, Some(meta))
        }
        None if call.started => (ToolCallUpdateFields::new().status(ToolCallStatus::InProgress), None),
        None => (ToolCallUpdateFields::new().status(ToolCallStatus::Pending), None),
    };
    tool_call(session_id, id, &view, fields, meta)
}

/// The whole conversation as `session/update`s, for `session/load`: each
/// turn's input, then its responses' text and calls in order, then the
/// runtime notice of a turn that did not complete. `cwd` is the session's
/// directory (where an edit's relative path points); `evidence` gives the
/// supervisor's evidence about a turn's `n`th call (`Session::evidence`).
pub fn replay(
    session_id: &str,
    transcript: &Transcript,
    cwd: &Path,
    evidence: &dyn Fn(&Turn, usize) -> Option<Evidence>,
) -> Vec<SessionNotification> {
    let mut out = Vec::new();
    for turn in &transcript.turns {
        out.push(user_message(session_id, &turn.input));
        for image in &turn.images {
            out.push(replayed_image(session_id, transcript.images_dir.as_deref(), image));
        }
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
                let unknown = call.result.as_ref().is_some_and(|r| r.status == ToolStatus::Unknown);
                let seen = if unknown { evidence(turn, n) } else { None };
                out.push(recorded_call(session_id, &tool_call_id(&turn.id, n), call, cwd, seen.as_ref()));
            }
        }
        if let Some(notice) = turn.notice() {
            out.push(agent_message(session_id, &notice));
        }
    }
    out
}

/// A page of Mino's session list as ACP's `session/list` answer: `title`
/// and `updatedAt` (the last activity) as ACP has them, the rest of Mino's
/// entry under `_meta.mino`.
pub fn session_list(page: mino_core::SessionPage) -> ListSessionsResponse {
    let sessions = page
        .sessions
        .into_iter()
        .map(|e| {
            let mino = json!({
                "createdAt": e.created_at,
                "turns": e.turns,
                "acknowledgementRequired": e.acknowledgement_required,
            });
            SessionInfo::new(SessionId::new(e.session_id), e.cwd)
                .title(e.title)
                .updated_at(e.last_active_at)
                .meta(Meta::from_iter([("mino".to_string(), mino)]))
        })
        .collect();
    ListSessionsResponse::new(sessions).next_cursor(page.next_cursor)
}

/// The options of the acknowledgement gate; never an `allow_always`. The
/// two ways to decline come first: Toad preselects the first option and
/// CodeCompanion's confirm dialog the second, so neither makes the
/// acknowledgement the default.
pub fn gate_options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(NOT_NOW_OPTION, NOT_NOW_NAME, PermissionOptionKind::RejectOnce),
        PermissionOption::new(CHECK_FIRST_OPTION, CHECK_FIRST_NAME, PermissionOptionKind::RejectOnce),
        PermissionOption::new(ACKNOWLEDGE_OPTION, ACKNOWLEDGE_NAME, PermissionOptionKind::AllowOnce),
    ]
}

/// One question per turn whose `unknown` result awaits acknowledgement,
/// about its (first) unknown call, showing every unknown call of the turn.
/// Asked as `session/request_permission`, or as a form through
/// `elicitation/create` where the client advertised form elicitation.
pub fn gate_questions(
    session_id: &str,
    transcript: &Transcript,
    evidence: &dyn Fn(&Turn, usize) -> Option<Evidence>,
) -> Vec<GateQuestion> {
    transcript
        .turns
        .iter()
        .filter(|t| mino_core::recovery::awaits_acknowledgement(t))
        .filter_map(|turn| gate_question(session_id, turn, evidence))
        .collect()
}

/// One turn's acknowledgement question, in both of the forms it can be
/// asked, and the `tool_call` announcing it (its own call, kind `other`:
/// not the command, which is never run again).
pub struct GateQuestion {
    pub turn_id: String,
    pub announce: SessionNotification,
    pub permission: RequestPermissionRequest,
    pub form: CreateElicitationRequest,
    tool_call_id: String,
    commands: String,
}

impl GateQuestion {
    /// The gate's call once answered: `completed` when acknowledged, else
    /// `failed` with a title saying the conversation waits.
    pub fn answered(&self, session_id: &str, acknowledged: bool) -> SessionNotification {
        let (status, title) = if acknowledged {
            (ToolCallStatus::Completed, format!("Acknowledged: the result of {} is unknown", self.commands))
        } else {
            (ToolCallStatus::Failed, format!("Not acknowledged yet: the result of {} is unknown", self.commands))
        };
        tool_call_update(session_id, &self.tool_call_id, ToolCallUpdateFields::new().status(status).title(title))
    }

    /// The gate's call once the prompt was cancelled while it asked:
    /// `failed` (ACP has no `cancelled` status for a call), its title saying
    /// nothing was acknowledged.
    pub fn cancelled(&self, session_id: &str) -> SessionNotification {
        let title = format!("Cancelled, not acknowledged: the result of {} is unknown", self.commands);
        let fields = ToolCallUpdateFields::new().status(ToolCallStatus::Failed).title(title);
        tool_call_update(session_id, &self.tool_call_id, fields)
    }
}

/// `usage_update` after a response: `used` the tokens the response's
/// request and answer held (input plus output, as the service reported
/// them), `size` the model's context window as Mino reckons it; Mino knows
/// no prices, so no `cost`. `_meta.mino` has the service's own figures.
pub fn usage_update(
    session_id: &str,
    turn_id: &str,
    usage: mino_core::usage::Usage,
    context_window: u64,
) -> SessionNotification {
    let mino = json!({
        "turnId": turn_id,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
        "cachedInputTokens": usage.cached_input_tokens,
        "reasoningTokens": usage.reasoning_tokens,
    });
    let update = UsageUpdate::new(usage.input_tokens.saturating_add(usage.output_tokens), context_window)
        .meta(Meta::from_iter([("mino".to_string(), mino)]));
    notification(session_id, SessionUpdate::UsageUpdate(update))
}

/// The gate form's only field: a required single choice with no default,
/// so that only an explicit pick of [`ACKNOWLEDGE_OPTION`] opens the gate.
pub const GATE_FORM_FIELD: &str = "answer";

/// Whether an accepted gate form's content is the explicit acknowledgement.
pub fn gate_form_acknowledged(accepted: &ElicitationAcceptAction) -> bool {
    matches!(
        accepted.content.as_ref().and_then(|c| c.get(GATE_FORM_FIELD)),
        Some(ElicitationContentValue::String(answer)) if answer == ACKNOWLEDGE_OPTION
    )
}

/// The gate's own tool call id: one per turn, beside the turn's calls.
fn gate_call_id(turn_id: &str) -> String {
    format!("{turn_id}/acknowledge")
}

fn gate_question(
    session_id: &str,
    turn: &Turn,
    evidence: &dyn Fn(&Turn, usize) -> Option<Evidence>,
) -> Option<GateQuestion> {
    let unknown: Vec<(usize, &Call)> = turn
        .calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.result.as_ref().is_some_and(|r| r.status == ToolStatus::Unknown))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let listed: Vec<String> = unknown
        .iter()
        .map(|(n, c)| {
            let seen = evidence(turn, *n).map(|e| format!("\n    {}", evidence_text(&e))).unwrap_or_default();
            format!("  {}{seen}", c.command())
        })
        .collect();
    let text = format!(
        "Mino stopped while {} running, and its result was not saved:\n{}\n{UNKNOWN_OUTPUT}\n\
         Check what happened before you go on; Mino will not run anything again by itself. \
         Acknowledging runs nothing: it lets the conversation go on, and the model is told the result is unknown.",
        if unknown.len() == 1 { "this command was" } else { "these commands were" },
        listed.join("\n"),
    );
    let commands = unknown.iter().map(|(_, c)| format!("`{}`", c.command())).collect::<Vec<_>>().join(", ");
    let call_id = gate_call_id(&turn.id);
    let gate_title = format!("{GATE_TITLE}: the result of {commands} is unknown");
    let acknowledged: Vec<String> = unknown.iter().map(|(n, _)| tool_call_id(&turn.id, *n)).collect();
    let fields = ToolCallUpdateFields::new()
        .title(gate_title.as_str())
        .kind(ToolKind::Other)
        .status(ToolCallStatus::Pending)
        .content(vec![text_content(&text)])
        .raw_input(json!({ "acknowledge": acknowledged }));
    let mut announce = ToolCall::new(ToolCallId::new(call_id.as_str()), gate_title);
    announce.update(fields.clone());
    let announce = notification(session_id, SessionUpdate::ToolCall(announce));
    let tool_call = ToolCallUpdate::new(ToolCallId::new(call_id.as_str()), fields);
    let permission = RequestPermissionRequest::new(SessionId::new(session_id), tool_call, gate_options());
    let answer = StringPropertySchema::new().title("Before Mino goes on").one_of(vec![
        EnumOption::new(ACKNOWLEDGE_OPTION, ACKNOWLEDGE_NAME),
        EnumOption::new(NOT_NOW_OPTION, NOT_NOW_NAME),
    ]);
    let schema = ElicitationSchema::new().title(GATE_TITLE).property(GATE_FORM_FIELD, answer, true);
    let scope =
        ElicitationSessionScope::new(SessionId::new(session_id)).tool_call_id(ToolCallId::new(call_id.as_str()));
    let form = CreateElicitationRequest::new(ElicitationFormMode::new(scope, schema), text);
    Some(GateQuestion { turn_id: turn.id.clone(), announce, permission, form, tool_call_id: call_id, commands })
}

/// Appends one block's text, with a space between it and the text before
/// when neither side has whitespace at the seam (nor the new block starts
/// with punctuation): editors split a prompt
/// around a mention (`[text "Read these", resource_link]`), and the words
/// must not run into the link.
fn push_block(text: &mut String, block: &str) {
    let seam_is_bare = text.chars().next_back().is_some_and(|c| !c.is_whitespace())
        && block.chars().next().is_some_and(|c| !c.is_whitespace() && !",.;:!?)".contains(c));
    if seam_is_bare {
        text.push(' ');
    }
    text.push_str(block);
}

/// The prompt's text for the model: text blocks as they are, embedded
/// context as a fenced block naming its URI, links by name and URI; blocks
/// are separated by a space where neither has whitespace at the seam.
pub fn prompt_text(blocks: &[ContentBlock]) -> Result<String, Error> {
    let mut text = String::new();
    for block in blocks {
        let block = serde_json::to_value(block).map_err(|e| crate::internal(e.to_string()))?;
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => push_block(&mut text, block.get("text").and_then(Value::as_str).unwrap_or("")),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("(no uri)");
                let Some(body) = resource.get("text").and_then(Value::as_str) else {
                    return Err(crate::invalid_params(format!(
                        "the embedded resource {uri} is binary; Mino takes text context only"
                    )));
                };
                push_block(&mut text, &format!("\n\n<context uri=\"{uri}\">\n{body}\n</context>\n\n"));
            }
            "resource_link" => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or(uri);
                push_block(&mut text, &format!("[{name}]({uri})"));
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

/// One announced call without a result yet.
struct OpenCall {
    /// The model's call id.
    call_id: String,
    /// The ACP tool call id.
    id: String,
    view: CallView,
    /// The command's output so far: its last [`LIVE_OUTPUT_BYTES`] at most.
    output: String,
    /// Output before `output` was dropped.
    cut: bool,
    /// When the last live output update was sent.
    sent_at: Option<Instant>,
    /// Output arrived since then that no update carries yet.
    unsent: bool,
    /// The editor's terminal it runs in (`terminal/create`): the terminal
    /// shows its output live, so no text update repeats it.
    terminal: Option<String>,
    /// Why it does not run in the editor's terminal although the client
    /// offered terminals.
    note: Option<String>,
}

impl OpenCall {
    fn push_output(&mut self, chunk: &str) {
        self.output.push_str(chunk);
        if self.output.len() > LIVE_OUTPUT_BYTES {
            let mut from = self.output.len() - LIVE_OUTPUT_BYTES;
            while !self.output.is_char_boundary(from) {
                from += 1;
            }
            self.output.drain(..from);
            self.cut = true;
        }
        self.unsent = true;
    }

    /// The update carrying the output so far (ACP replaces the content).
    fn output_update(&mut self, session_id: &str, now: Instant) -> SessionNotification {
        self.sent_at = Some(now);
        self.unsent = false;
        let text = if self.cut { format!("{LIVE_OUTPUT_CUT}{}", self.output) } else { self.output.clone() };
        let mut content = self.lead_content();
        content.push(text_content(&text));
        tool_call_update(session_id, &self.id, ToolCallUpdateFields::new().content(content))
    }

    /// What comes first in each of its contents: the editor's terminal
    /// (ACP's `terminal` content, which editors embed live), or the note
    /// saying why there is none.
    fn lead_content(&self) -> Vec<ToolCallContent> {
        let terminal =
            self.terminal.iter().map(|id| ToolCallContent::Terminal(Terminal::new(TerminalId::new(id.as_str()))));
        terminal.chain(self.note.iter().map(|note| text_content(note))).collect()
    }

    /// When its unsent output may go out (`now` if no update was sent yet).
    fn due(&self, now: Instant) -> Option<Instant> {
        self.unsent.then(|| self.sent_at.map_or(now, |at| at + LIVE_OUTPUT_INTERVAL))
    }
}

/// The project's instruction files (`AGENTS.md`) the model reads, as a
/// line of the agent's message: at a session's start (when there are any)
/// and whenever they change.
pub(crate) fn instructions_notice(files: &[mino_core::project_instructions::InstructionFile]) -> String {
    if files.is_empty() {
        return "[Mino: no project instruction file (AGENTS.md) applies now; the model reads none.]".to_string();
    }
    let named: Vec<String> = files
        .iter()
        .map(|f| match f.truncated {
            true => format!("{} ({} bytes, the first {} given)", f.path, f.size, f.given),
            false => format!("{} ({} bytes)", f.path, f.size),
        })
        .collect();
    format!("[Mino: the model follows the project's instructions in {}.]", named.join(", "))
}

/// What a compaction did, as a line of the agent's message.
pub(crate) fn compaction_notice(outcome: &CompactionOutcome) -> String {
    if outcome.compacted {
        let kept = match outcome.kept_turns {
            0 => String::new(),
            n => format!(", {n} kept as they were"),
        };
        format!(
            "\n\n[Mino: the conversation was compacted ({} earlier turns summarised{kept}); the model now reads the summary instead of them.]\n\n",
            outcome.summarized_turns
        )
    } else {
        let why = outcome.reason.as_deref().unwrap_or("nothing changed");
        format!("\n\n[Mino: the conversation was not compacted: {why}]\n\n")
    }
}

/// The running turn's calls, numbered as [`replay`] numbers them (a call's
/// first event, an approval request or a result, comes in transcript order),
/// and their live output, throttled to one update per call per
/// [`LIVE_OUTPUT_INTERVAL`].
#[derive(Default)]
pub struct LiveCalls {
    turn_id: String,
    next: usize,
    open: Vec<OpenCall>,
}

impl LiveCalls {
    /// `view_of(turn, call)` gives a call's view from the transcript, for a
    /// result of a call that was never announced. `now` paces live output.
    pub fn translate(
        &mut self,
        session_id: &str,
        event: AgentEvent,
        view_of: impl Fn(&str, &str) -> CallView,
        now: Instant,
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
                turn_id,
                call_id,
                command,
                directory,
                environment,
                limits,
                edit,
                suggested_rule,
                deny_rules,
                read,
                mcp,
                ..
            } => {
                let mcp_call = mcp.is_some();
                // An MCP call's rule is the server's suggestion (an MCP rule) or none.
                out.always =
                    if mcp_call { suggested_rule } else { always_rule(&command, edit.is_some(), suggested_rule) };
                let (view, raw_input) = match (&edit, &read) {
                    // A read leaving the workspace: its path (absolute) and what it would read.
                    (None, Some(info)) => {
                        (
                            CallView::read(&command, info, Path::new(&directory)),
                            json!({
                                "tool": info.tool.as_str(),
                                "path": info.path,
                                "pattern": info.pattern,
                                "startLine": info.start_line,
                                "endLine": info.end_line,
                                "leavesWorkspace": info.leaves_workspace,
                            }),
                        )
                    }
                    (Some(e), _) => (
                        CallView::proposed_edit(&command, e),
                        json!({
                            "tool": e.tool.as_str(),
                            "path": e.path,
                            "newFile": e.new_file,
                            "size": e.size,
                            "leavesWorkspace": e.leaves_workspace,
                            "protected": e.protected,
                            "fromEditor": e.from_editor,
                            "diff": e.diff,
                        }),
                    ),
                    (None, None) => (
                        CallView::command(&command),
                        json!({
                            "command": command,
                            "directory": directory,
                            "environment": environment,
                            "timeoutSeconds": limits.timeout.as_secs(),
                            "outputLimitBytes": limits.output_limit,
                            "denyRules": deny_rules.iter().map(|r| r.describe()).collect::<Vec<_>>(),
                        }),
                    ),
                };
                let id = self.open_call(&call_id, view.clone());
                let pending = ToolCallUpdateFields::new().status(ToolCallStatus::Pending).raw_input(raw_input.clone());
                out.updates.push(tool_call(session_id, &id, &view, pending, None));
                let fields = view.fields(None).status(ToolCallStatus::Pending).raw_input(raw_input);
                let options = if mcp_call {
                    mcp_permission_options(out.always.as_ref())
                } else {
                    permission_options(edit.is_some(), out.always.as_ref())
                };
                let tool_call = ToolCallUpdate::new(ToolCallId::new(id), fields);
                let question = RequestPermissionRequest::new(SessionId::new(session_id), tool_call, options);
                out.permission = Some((turn_id, call_id, question));
            }
            AgentEvent::ToolStarted { turn_id, call_id, .. } => match self.open.iter().find(|c| c.call_id == call_id) {
                Some(call) => {
                    let running = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
                    out.updates.push(tool_call_update(session_id, &call.id, running))
                }
                // Approved by a rule without asking: announced running.
                None => {
                    let view = view_of(&turn_id, &call_id);
                    let id = self.open_call(&call_id, view.clone());
                    let running = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
                    out.updates.push(tool_call(session_id, &id, &view, running, None));
                }
            },
            // ACP's `content` replaces the previous content: each update
            // carries the output so far (its last part), at most one per
            // interval; what comes sooner waits for [`LiveCalls::flush`].
            AgentEvent::ToolTerminal { call_id, terminal_id, note, .. } => {
                if let Some(call) = self.open.iter_mut().find(|c| c.call_id == call_id) {
                    call.terminal = terminal_id;
                    call.note = note;
                    let content = ToolCallUpdateFields::new().content(call.lead_content());
                    out.updates.push(tool_call_update(session_id, &call.id, content));
                }
            }
            AgentEvent::ToolOutput { call_id, chunk, .. } => {
                if let Some(call) = self.open.iter_mut().find(|c| c.call_id == call_id && c.terminal.is_none()) {
                    call.push_output(&chunk);
                    if call.due(now).is_some_and(|due| due <= now) {
                        out.updates.push(call.output_update(session_id, now));
                    }
                }
            }
            AgentEvent::ToolResult { turn_id, call_id, status, output, exit_code, .. } => {
                // The result's content replaces any live output not yet sent.
                match self.open.iter().position(|c| c.call_id == call_id) {
                    Some(at) => {
                        let call = self.open.remove(at);
                        let CallResult { mut fields, meta } = result_fields(&call.view, status, &output, exit_code);
                        let mut content = call.lead_content();
                        content.extend(fields.content.take().unwrap_or_default());
                        let update = ToolCallUpdate::new(ToolCallId::new(call.id), fields.content(content)).meta(meta);
                        out.updates.push(notification(session_id, SessionUpdate::ToolCallUpdate(update)));
                    }
                    None => {
                        let id = tool_call_id(&self.turn_id, self.next);
                        self.next += 1;
                        let view = view_of(&turn_id, &call_id);
                        let CallResult { fields, meta } = result_fields(&view, status, &output, exit_code);
                        out.updates.push(tool_call(session_id, &id, &view, fields, Some(meta)));
                    }
                }
            }
            AgentEvent::TurnEnded { turn_id, status, reason, .. } => out.ended = Some((turn_id, status, reason)),
            // An ACP session is one Mino session for its whole life: the
            // front door never switches, so no other session announces itself.
            AgentEvent::SessionOpened { .. } => {}
            // The summary request takes a while and changes what the model
            // reads from now on: the person is told when it is done (ACP has
            // no notice of its own, so it goes in the agent's message).
            AgentEvent::CompactionStarted { .. } => {}
            // One asked for (`/compact`, the only one outside a turn on this
            // door) is told by the command itself, before its prompt answers.
            AgentEvent::CompactionEnded { turn_id: None, .. } => {}
            AgentEvent::CompactionEnded { outcome, .. } => {
                out.updates.push(agent_message(session_id, &compaction_notice(&outcome)))
            }
            // The forwarder sends these itself (they need the session's options).
            AgentEvent::ResponseUsage { .. } | AgentEvent::SettingsChanged { .. } => {}
            // The person sees what the model is told to follow, as it changes.
            AgentEvent::InstructionsChanged { files } => {
                out.updates.push(agent_message(session_id, &format!("\n\n{}\n\n", instructions_notice(&files))))
            }
            // A server that failed or exited is never dropped silently: ACP
            // has no notice of its own for it, so it goes in the agent's message.
            AgentEvent::McpStatus { status } => {
                if let Some(notice) = mcp_status_notice(&status) {
                    out.updates.push(agent_message(session_id, &notice));
                }
            }
        }
        out
    }

    /// When the earliest unsent live output is due (`None`: nothing waits).
    pub fn next_due(&self, now: Instant) -> Option<Instant> {
        self.open.iter().filter_map(|c| c.due(now)).min()
    }

    /// The live output updates due at `now`.
    pub fn flush(&mut self, session_id: &str, now: Instant) -> Vec<SessionNotification> {
        self.open
            .iter_mut()
            .filter(|c| c.due(now).is_some_and(|due| due <= now))
            .map(|c| c.output_update(session_id, now))
            .collect()
    }

    fn open_call(&mut self, call_id: &str, view: CallView) -> String {
        let id = tool_call_id(&self.turn_id, self.next);
        self.next += 1;
        self.open.push(OpenCall {
            call_id: call_id.to_string(),
            id: id.clone(),
            view,
            output: String::new(),
            cut: false,
            sent_at: None,
            unsent: false,
            terminal: None,
            note: None,
        });
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

/// A call's permission options: once, then (with a rule) always, for the
/// session. The declining "once" comes second: CodeCompanion's dialog
/// defaults to the second option and Toad preselects the first, so an Enter
/// there never grants a standing rule.
fn permission_options(edit: bool, always: Option<&SuggestedRule>) -> Vec<PermissionOption> {
    let (allow_name, reject_name) =
        if edit { ("Apply this edit", "Do not apply it") } else { ("Run this command", "Do not run it") };
    let mut options = vec![
        PermissionOption::new(ALLOW_OPTION, allow_name, PermissionOptionKind::AllowOnce),
        PermissionOption::new(REJECT_OPTION, reject_name, PermissionOptionKind::RejectOnce),
    ];
    let what = always.map(|rule| match rule.kind {
        RuleKind::Prefix => format!("commands starting with `{}`", rule.text),
        RuleKind::Exact => format!("`{}`", rule.text),
        RuleKind::Path => format!("edits of `{}`", rule.text),
        RuleKind::Mcp => format!("the MCP tool `{}`", rule.text),
    });
    if let Some(what) = &what {
        let name = format!("Always allow {what} in this session");
        options.push(PermissionOption::new(ALLOW_ALWAYS_OPTION, name, PermissionOptionKind::AllowAlways));
        let name = format!("Always refuse {what} in this session");
        options.push(PermissionOption::new(REJECT_ALWAYS_OPTION, name, PermissionOptionKind::RejectAlways));
    }
    options
}

/// An MCP call's permission options. The decline comes first (a client
/// that preselects the first option declines), then once, then the
/// standing rules for the session: this tool (`allow-always`, the MCP rule
/// `server/tool`), every tool of its server (`allow-always-server`,
/// `server/*`), and their refusals.
fn mcp_permission_options(always: Option<&SuggestedRule>) -> Vec<PermissionOption> {
    use PermissionOptionKind::{AllowAlways, AllowOnce, RejectAlways, RejectOnce};
    let mut options = vec![
        PermissionOption::new(REJECT_OPTION, "Do not call this tool", RejectOnce),
        PermissionOption::new(ALLOW_OPTION, "Call this tool once", AllowOnce),
    ];
    if let (Some(tool), Some(server)) = (always, always.and_then(SuggestedRule::mcp_server_of)) {
        let name = server.text.trim_end_matches("/*");
        let tool = &tool.text;
        options.extend([
            PermissionOption::new(
                ALLOW_ALWAYS_OPTION,
                format!("Always allow the MCP tool `{tool}` in this session"),
                AllowAlways,
            ),
            PermissionOption::new(
                ALLOW_ALWAYS_SERVER_OPTION,
                format!("Always allow every tool of the MCP server `{name}` in this session"),
                AllowAlways,
            ),
            PermissionOption::new(
                REJECT_ALWAYS_OPTION,
                format!("Always refuse the MCP tool `{tool}` in this session"),
                RejectAlways,
            ),
            PermissionOption::new(
                REJECT_ALWAYS_SERVER_OPTION,
                format!("Always refuse every tool of the MCP server `{name}` in this session"),
                RejectAlways,
            ),
        ]);
    }
    options
}

/// Why a permission answer naming an option the request did not offer
/// decided nothing but a decline (the model and the journal read it).
pub fn not_offered(chosen: &str, offered: &[String]) -> String {
    format!(
        "the client answered with option {chosen:?}, which this permission request did not offer (it offered {}); \
         only an offered option can approve, so the call was not run",
        offered.iter().map(|o| format!("{o:?}")).collect::<Vec<_>>().join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> ContentBlock {
        text_block(t)
    }

    fn block(value: Value) -> ContentBlock {
        serde_json::from_value(value).expect("a content block")
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
        let context = block(json!({
            "type": "resource",
            "resource": { "uri": "file:///w/list.txt", "text": "milk\n", "mimeType": "text/plain" },
        }));
        let prompt = prompt_text(&[text("Is it on "), text("the list?"), context]).expect("text prompt");
        assert!(prompt.starts_with("Is it on the list?"));
        assert!(prompt.contains("<context uri=\"file:///w/list.txt\">\nmilk\n\n</context>"));
        let image = block(json!({ "type": "image", "data": "AAAA", "mimeType": "image/png" }));
        let refused = prompt_text(&[text("look"), image]).expect_err("images are not offered");
        assert!(refused.message.contains("\"image\""), "{}", refused.message);
        assert!(prompt_text(&[text("  ")]).is_err(), "an empty prompt is refused");
        let link = block(json!({ "type": "resource_link", "name": "notes.md", "uri": "file:///tmp/notes.md" }));
        assert_eq!(
            prompt_text(&[text("Read these"), link.clone(), text("and say why")]).expect("text"),
            "Read these [notes.md](file:///tmp/notes.md) and say why"
        );
        assert_eq!(
            prompt_text(&[text("Read "), link, text(", please")]).expect("text"),
            "Read [notes.md](file:///tmp/notes.md), please",
            "no space before punctuation, none added where the text has one"
        );
    }

    #[test]
    fn results_other_than_success_are_failed_with_minos_status_named() {
        let fields = |result: CallResult| serde_json::to_value(result.fields).expect("json");
        let unknown = result_fields(&CallView::command("rm -rf build"), ToolStatus::Unknown, UNKNOWN_OUTPUT, None);
        assert_eq!(Value::Object(unknown.meta.clone()), json!({ "minoStatus": "unknown" }));
        let unknown = fields(unknown);
        assert_eq!(unknown["status"], "failed");
        assert_eq!(unknown["title"], "Result unknown: rm -rf build");
        assert_eq!(unknown["rawOutput"], json!({ "minoResult": "unknown" }));
        assert_eq!(unknown["content"][0]["content"]["text"], UNKNOWN_OUTPUT);
        let not_run = fields(result_fields(
            &CallView::command("ls"),
            ToolStatus::NotExecuted,
            mino_core::recovery::NOT_EXECUTED_OUTPUT,
            None,
        ));
        assert_eq!(not_run["title"], "Not executed: ls");
        assert_eq!(not_run["status"], "failed");
        let ran = fields(result_fields(&CallView::command("false"), ToolStatus::Failed, "", Some(1)));
        assert_eq!((ran["status"].as_str(), ran["title"].as_str()), (Some("failed"), Some("false")));
        assert_eq!(ran["rawOutput"], json!({ "minoResult": "failed", "exitCode": 1 }));
        let ok = fields(result_fields(&CallView::command("true"), ToolStatus::Success, "", Some(0)));
        assert_eq!(ok["status"], "completed");
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

        let kinds = |options: Vec<PermissionOption>| -> Vec<(String, String)> {
            let options = serde_json::to_value(options).expect("json");
            options
                .as_array()
                .expect("options")
                .iter()
                .map(|o| (o["kind"].as_str().unwrap_or("").to_owned(), o["name"].as_str().unwrap_or("").to_owned()))
                .collect()
        };
        let offered = kinds(permission_options(false, Some(&prefix)));
        assert_eq!(
            offered.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["allow_once", "reject_once", "allow_always", "reject_always"]
        );
        assert_eq!(offered[2].1, "Always allow commands starting with `npm test` in this session");
        assert_eq!(
            kinds(permission_options(true, Some(&path)))[3].1,
            "Always refuse edits of `src/a.rs` in this session"
        );
        assert_eq!(kinds(permission_options(false, None)).len(), 2);
    }

    #[test]
    fn an_mcp_call_offers_the_decline_first_then_rules_for_the_tool_and_for_its_server() {
        let tool = SuggestedRule::for_mcp("fs", "read_file").expect("rule");
        let kinds = |options: Vec<PermissionOption>| -> Vec<(String, String)> {
            let options = serde_json::to_value(options).expect("json").as_array().cloned().unwrap_or_default();
            options
                .iter()
                .map(|o| (o["optionId"].as_str().unwrap_or("").to_owned(), o["kind"].as_str().unwrap_or("").to_owned()))
                .collect()
        };
        let offered = kinds(mcp_permission_options(Some(&tool)));
        assert_eq!(
            offered.iter().map(|(_, k)| k.as_str()).collect::<Vec<_>>(),
            ["reject_once", "allow_once", "allow_always", "allow_always", "reject_always", "reject_always"]
        );
        assert_eq!(offered[0].0, REJECT_OPTION);
        assert_eq!(offered[2].0, ALLOW_ALWAYS_OPTION);
        assert_eq!(offered[3].0, ALLOW_ALWAYS_SERVER_OPTION);
        assert_eq!(kinds(mcp_permission_options(None)).len(), 2);
    }

    #[test]
    fn the_gate_offers_two_declines_first_then_the_acknowledgement_and_never_allow_always() {
        let options = serde_json::to_value(gate_options()).expect("json");
        assert_eq!(
            options,
            json!([
                { "optionId": "not-now", "name": "Not now", "kind": "reject_once" },
                { "optionId": "check-first", "name": "Not yet: I will check what happened first", "kind": "reject_once" },
                { "optionId": "acknowledge", "name": "I understand these commands may already have run", "kind": "allow_once" },
            ])
        );
    }

    #[test]
    fn stdio_and_http_servers_are_started_and_sse_is_listed_failed() {
        let servers: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "my files", "command": "/bin/fs", "args": ["-x"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "https://example.invalid/mcp", "headers": [{"name": "X-Key", "value": "k1"}]},
            {"type": "sse", "name": "old", "url": "https://example.invalid/sse", "headers": []},
        ]))
        .unwrap();
        let (configs, refused) = mcp_configs(&servers);
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(configs.len(), 3);
        assert_eq!(configs[0].name, "my_files");
        match &configs[1].transport {
            mino_core::mcp::McpTransport::Http { url, headers } => {
                assert_eq!(url, "https://example.invalid/mcp");
                assert_eq!(headers["X-Key"], "k1");
            }
            other => panic!("{other:?}"),
        }
        match &configs[2].transport {
            mino_core::mcp::McpTransport::Unsupported { why } => assert!(why.contains("`sse`"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    fn approval(call_id: &str, command: &str) -> AgentEvent {
        AgentEvent::ApprovalRequest {
            turn_id: "turn-1".into(),
            call_id: call_id.into(),
            command: command.into(),
            directory: "/w".into(),
            environment: Default::default(),
            limits: mino_core::bash::Limits::default(),
            edit: None,
            sandbox: mino_core::sandbox::SandboxMode::Off,
            approval_mode: mino_core::policy::ApprovalMode::Ask,
            suggested_rule: None,
            read: None,
            mcp: None,
            deny_rules: Vec::new(),
        }
    }

    fn output(call_id: &str, chunk: &str) -> AgentEvent {
        AgentEvent::ToolOutput {
            turn_id: "turn-1".into(),
            call_id: call_id.into(),
            stream: mino_core::bash::Stream::Stdout,
            chunk: chunk.into(),
        }
    }

    fn live_text(update: &SessionNotification) -> String {
        let update = serde_json::to_value(update).expect("json")["update"].clone();
        update["content"][0]["content"]["text"].as_str().expect("text content").to_string()
    }

    #[test]
    fn a_compaction_during_a_turn_is_told_in_the_agents_message() {
        let mut calls = LiveCalls::default();
        let now = Instant::now();
        let none = |_: &str, _: &str| CallView::command("?");
        let trigger = mino_core::compaction::Trigger::Auto;
        let turn_id = Some("turn-3".to_string());
        let started = AgentEvent::CompactionStarted { trigger, turn_id: turn_id.clone() };
        assert!(calls.translate("s", started, none, now).updates.is_empty());
        let outcome = CompactionOutcome { compacted: true, summarized_turns: 2, ..Default::default() };
        let ended =
            calls.translate("s", AgentEvent::CompactionEnded { trigger, turn_id: turn_id.clone(), outcome }, none, now);
        let update = serde_json::to_value(&ended.updates[0]).expect("json")["update"].clone();
        assert_eq!(update["sessionUpdate"], "agent_message_chunk");
        let text = update["content"]["text"].as_str().expect("text");
        assert!(text.contains("[Mino: the conversation was compacted (2 earlier turns summarised)"), "{text}");
        let outcome = CompactionOutcome { reason: Some("the summary request failed".into()), ..Default::default() };
        let ended = calls.translate("s", AgentEvent::CompactionEnded { trigger, turn_id, outcome }, none, now);
        let update = serde_json::to_value(&ended.updates[0]).expect("json")["update"].clone();
        let text = update["content"]["text"].as_str().expect("text");
        assert!(text.contains("[Mino: the conversation was not compacted: the summary request failed]"), "{text}");
    }

    #[test]
    fn live_output_goes_at_once_then_at_most_once_an_interval_with_everything_so_far() {
        let mut calls = LiveCalls::default();
        let start = Instant::now();
        let none = |_: &str, _: &str| CallView::command("?");
        calls.translate("s", AgentEvent::TurnStarted { turn_id: "turn-1".into(), input: "x".into() }, none, start);
        calls.translate("s", approval("call_1", "make"), none, start);
        let first = calls.translate("s", output("call_1", "one\n"), none, start);
        assert_eq!(first.updates.iter().map(live_text).collect::<Vec<_>>(), ["one\n"], "the first output at once");
        let soon = start + LIVE_OUTPUT_INTERVAL / 2;
        assert!(calls.translate("s", output("call_1", "two\n"), none, soon).updates.is_empty(), "held back");
        assert!(calls.translate("s", output("call_1", "three\n"), none, soon).updates.is_empty(), "held back");
        assert_eq!(calls.next_due(soon), Some(start + LIVE_OUTPUT_INTERVAL));
        assert!(calls.flush("s", soon).is_empty(), "not due yet");
        let due = start + LIVE_OUTPUT_INTERVAL;
        let flushed = calls.flush("s", due);
        assert_eq!(flushed.iter().map(live_text).collect::<Vec<_>>(), ["one\ntwo\nthree\n"], "one update, all of it");
        assert_eq!(calls.next_due(due), None, "nothing waits");
        // Output still waiting when the result comes is replaced by the result.
        calls.translate("s", output("call_1", "four\n"), none, due);
        let result = AgentEvent::ToolResult {
            turn_id: "turn-1".into(),
            call_id: "call_1".into(),
            command: Some("cat big.log".into()),
            status: ToolStatus::Success,
            output: "one\ntwo\nthree\nfour\n".into(),
            exit_code: Some(0),
            diff: None,
            tool: None,
            read: None,
        };
        let ended = calls.translate("s", result, none, due);
        assert_eq!(ended.updates.len(), 1);
        assert_eq!(calls.next_due(due), None, "the result took the call's pending output with it");
    }

    #[test]
    fn live_output_keeps_the_last_64_kib_and_says_the_rest_was_cut() {
        let mut calls = LiveCalls::default();
        let now = Instant::now();
        let none = |_: &str, _: &str| CallView::command("?");
        calls.translate("s", approval("call_1", "yes"), none, now);
        // The cut falls inside the two bytes of "é".
        let big = format!("xé{}", "b".repeat(LIVE_OUTPUT_BYTES - 1));
        let update = calls.translate("s", output("call_1", &big), none, now);
        let text = live_text(&update.updates[0]);
        let kept = text.strip_prefix(LIVE_OUTPUT_CUT).expect("says earlier output was cut");
        assert_eq!(kept, "b".repeat(LIVE_OUTPUT_BYTES - 1), "the last part, without the cut character");
    }
}
