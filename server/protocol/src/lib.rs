//! Mino's wire types: every custom JSON-RPC method and notification that
//! `mino-server` speaks, with its params, result and error codes.
//!
//! This crate knows nothing about transports or about the domain core; clients
//! and tests depend on it so that the contract lives in exactly one place.
//! `docs/protocol.md` documents the same contract for people, with examples.
//! Field names are camelCase on the wire.
//!
//! Each method is bound to its params and result type ([`request::Request`]),
//! each notification to its params ([`notification::Notification`]), as
//! `lsp_types` does for the LSP. The statuses, decisions, error codes and
//! fixed messages are defined here once; the VS Code extension's types and the
//! Neovim plugin's constants are generated from this crate ([`generate`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
// The TypeScript derives are needed only by the generator and the tests (the
// `ts` feature); without it `TS` is a derive that generates nothing, so the
// binaries compile neither ts-rs nor the derives' expansions, and every type
// below keeps a plain `derive(..., TS)` either way.
#[cfg(not(feature = "ts"))]
use mino_ts_stub::TS;
#[cfg(feature = "ts")]
use ts_rs::TS;

#[cfg(feature = "ts")]
pub mod generate;
pub mod strict;

/// The types every params and result type implements: with the `ts`
/// feature also `ts_rs::TS`, so the generators can name them.
#[cfg(feature = "ts")]
pub trait WireType: serde::Serialize + serde::de::DeserializeOwned + ts_rs::TS + Send + Sync + 'static {}
#[cfg(feature = "ts")]
impl<T: serde::Serialize + serde::de::DeserializeOwned + ts_rs::TS + Send + Sync + 'static> WireType for T {}
/// The types every params and result type implements.
#[cfg(not(feature = "ts"))]
pub trait WireType: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static {}
#[cfg(not(feature = "ts"))]
impl<T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static> WireType for T {}

/// Defines the methods and notifications once: their names (in [`method`]),
/// their marker types (in [`request`] and [`notification`]) bound to their
/// params and result types (`optional` after the params type: they may be
/// left out), and [`visit`], which walks them all in order.
macro_rules! methods {
    (
        requests { $( $(#[$rdoc:meta])* $rname:ident = $rconst:ident($rmethod:literal, $rparams:ty $(, $roptional:ident)?) -> $rresult:ty; )+ }
        notifications { $( $(#[$ndoc:meta])* $nname:ident = $nconst:ident($nmethod:literal, $nparams:ty); )+ }
    ) => {
        mod method_names {
            $( pub const $rconst: &str = $rmethod; )+
            $( pub const $nconst: &str = $nmethod; )+
            /// Every request method, in the order docs/protocol.md lists them.
            pub const REQUESTS: &[&str] = &[$($rmethod),+];
            /// Every notification method, in the order docs/protocol.md lists them.
            pub const NOTIFICATIONS: &[&str] = &[$($nmethod),+];
        }

        /// One marker type per request method, bound to its params and result.
        pub mod request {
            /// A client-to-server request: its method name, the types of its
            /// params and result, and whether its params may be left out.
            pub trait Request {
                const METHOD: &'static str;
                type Params: crate::WireType;
                type Result: crate::WireType;
                /// Every field of [`Self::Params`] is optional, so a request
                /// with no `params` member (or `"params": null`) means `{}`.
                const PARAMS_OPTIONAL: bool;
            }
            $( $(#[$rdoc])* pub enum $rname {} )+
        }
        $(
            impl request::Request for request::$rname {
                const METHOD: &'static str = method_names::$rconst;
                type Params = $rparams;
                type Result = $rresult;
                const PARAMS_OPTIONAL: bool = params_optional!($($roptional)?);
            }
        )+

        /// One marker type per notification method, bound to its params.
        pub mod notification {
            /// A server-to-client notification: its method name and the type of
            /// its params.
            pub trait Notification {
                const METHOD: &'static str;
                type Params: crate::WireType;
            }
            $( $(#[$ndoc])* pub enum $nname {} )+
        }
        $(
            impl notification::Notification for notification::$nname {
                const METHOD: &'static str = method_names::$nconst;
                type Params = $nparams;
            }
        )+

        /// Calls `visitor` with every request, then every notification, in the
        /// order of [`method::REQUESTS`] and [`method::NOTIFICATIONS`].
        pub fn visit(visitor: &mut impl Visitor) {
            $( visitor.request::<request::$rname>(); )+
            $( visitor.notification::<notification::$nname>(); )+
        }
    };
}

/// `optional` after a request's params type in [`methods!`] says they may be
/// left out; any other word there does not compile.
macro_rules! params_optional {
    () => {
        false
    };
    (optional) => {
        true
    };
}

/// What [`visit`] calls for each method: code that needs every method with
/// its types (the generators, tests) implements it.
pub trait Visitor {
    fn request<R: request::Request>(&mut self);
    fn notification<N: notification::Notification>(&mut self);
}

methods! {
    requests {
        /// `mino/chat`: starts a turn.
        Chat = CHAT("mino/chat", ChatParams) -> ChatResult;
        /// `mino/approval`: the person's decision on a pending call.
        Approval = APPROVAL("mino/approval", ApprovalParams) -> EmptyResult;
        /// `mino/acknowledge`: acknowledges unknown tool results.
        Acknowledge = ACKNOWLEDGE("mino/acknowledge", AcknowledgeParams, optional) -> AcknowledgeResult;
        /// `mino/cancel`: cancels the running turn.
        Cancel = CANCEL("mino/cancel", CancelParams) -> EmptyResult;
        /// `mino/history`: the session's turns, whole or in pages.
        History = HISTORY("mino/history", HistoryParams, optional) -> HistoryResult;
        /// `mino/image`: the bytes of an image a question of the session carried.
        Image = IMAGE("mino/image", ImageParams) -> ImageResult;
        /// `mino/sessions/list`: this workspace's sessions (or every one), newest first.
        SessionsList = SESSIONS_LIST("mino/sessions/list", SessionsListParams, optional) -> SessionsListResult;
        /// `mino/sessions/new`: starts a new session and makes it current.
        SessionsNew = SESSIONS_NEW("mino/sessions/new", SessionsNewParams, optional) -> SessionInfo;
        /// `mino/sessions/open`: opens a session by id and makes it current.
        SessionsOpen = SESSIONS_OPEN("mino/sessions/open", SessionsOpenParams) -> SessionInfo;
        /// `mino/sessions/rename`: sets a session's title.
        SessionsRename = SESSIONS_RENAME("mino/sessions/rename", SessionsRenameParams) -> EmptyResult;
        /// `mino/sessions/delete`: moves a session's files to the trash.
        SessionsDelete = SESSIONS_DELETE("mino/sessions/delete", SessionsDeleteParams) -> SessionsDeleteResult;
        /// `mino/sessions/fork`: a new session whose history is a session's up to and including a turn.
        SessionsFork = SESSIONS_FORK("mino/sessions/fork", SessionsForkParams) -> SessionsForkResult;
        // Approval rules and settings.
        /// `mino/rules/list`: the rules in force and the workspace rules file.
        RulesList = RULES_LIST("mino/rules/list", RulesListParams, optional) -> RulesListResult;
        /// `mino/rules/revoke`: removes a rule (session or workspace).
        RulesRevoke = RULES_REVOKE("mino/rules/revoke", RulesRevokeParams) -> EmptyResult;
        /// `mino/settings/update`: the session's approval mode and sandbox mode.
        SettingsUpdate = SETTINGS_UPDATE("mino/settings/update", SettingsUpdateParams, optional) -> SettingsResult;
        /// `mino/compact`: summarises the conversation so far; later requests replay the summary.
        Compact = COMPACT("mino/compact", CompactParams, optional) -> CompactResult;
        // Models.
        /// `mino/models/list`: the models to choose from and the session's current one.
        ModelsList = MODELS_LIST("mino/models/list", ModelsListParams, optional) -> ModelsListResult;
        /// `mino/models/select`: the current session's model from its next turn on.
        ModelsSelect = MODELS_SELECT("mino/models/select", ModelsSelectParams) -> ModelsSelectResult;
        // MCP servers.
        /// `mino/mcp/list`: the session's MCP servers and their states.
        McpList = MCP_LIST("mino/mcp/list", McpListParams, optional) -> McpListResult;
        /// `mino/mcp/restart`: stops an MCP server (if it runs) and starts it again.
        McpRestart = MCP_RESTART("mino/mcp/restart", McpRestartParams) -> McpServerStatus;
        // Rewinds.
        /// `mino/rewind/plan`: what rewinding a turn (and every later one) would put back, and what it cannot.
        RewindPlan = REWIND_PLAN("mino/rewind/plan", RewindPlanParams) -> RewindPlanResult;
        /// `mino/rewind`: carries out the plan the person confirmed (named by its digest).
        Rewind = REWIND("mino/rewind", RewindParams) -> RewindResult;
    }
    notifications {
        /// `mino/recovery`: what opening the session recovered.
        Recovery = RECOVERY("mino/recovery", RecoveryNotification);
        TurnStarted = TURN_STARTED("mino/turnStarted", TurnStarted);
        TextDelta = TEXT_DELTA("mino/textDelta", TextDelta);
        Retrying = RETRYING("mino/retrying", Retrying);
        ApprovalRequest = APPROVAL_REQUEST("mino/approvalRequest", ApprovalRequest);
        ToolStarted = TOOL_STARTED("mino/toolStarted", ToolStarted);
        ToolOutput = TOOL_OUTPUT("mino/toolOutput", ToolOutput);
        ToolResult = TOOL_RESULT("mino/toolResult", ToolResult);
        TurnEnded = TURN_ENDED("mino/turnEnded", TurnEnded);
        /// `mino/compactionStarted`: a compaction began (on demand, automatic, or after `context_length_exceeded`).
        CompactionStarted = COMPACTION_STARTED("mino/compactionStarted", CompactionStarted);
        /// `mino/compactionEnded`: that compaction ended, compacted or not.
        CompactionEnded = COMPACTION_ENDED("mino/compactionEnded", CompactionEnded);
        /// `mino/instructionsChanged`: the project's instruction files in force changed (read for each request).
        InstructionsChanged = INSTRUCTIONS_CHANGED("mino/instructionsChanged", InstructionsChanged);
        /// `mino/mcp/status`: an MCP server's state changed (starting, ready, failed, exited).
        McpStatus = MCP_STATUS("mino/mcp/status", McpStatusNotification);
    }
}

/// Method and notification names.
pub mod method {
    pub use super::method_names::*;

    /// Every notification a turn can emit, in the order a turn emits them.
    pub const TURN_NOTIFICATIONS: [&str; 8] =
        [TURN_STARTED, TEXT_DELTA, RETRYING, APPROVAL_REQUEST, TOOL_STARTED, TOOL_OUTPUT, TOOL_RESULT, TURN_ENDED];
}

/// JSON-RPC's own error codes (JSON-RPC 2.0 §5.1) and the two the
/// language-server lifecycle adds, which both front doors and the terminal
/// client answer and read: written here once, beside Mino's own
/// ([`error_code`]).
pub mod jsonrpc_code {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a valid request (a bad `jsonrpc` or `id`, a key named twice).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed inside.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A request other than `initialize` before `initialize`.
    pub const SERVER_NOT_INITIALIZED: i64 = -32002;
    /// A request cancelled by `$/cancelRequest`.
    pub const REQUEST_CANCELLED: i64 = -32800;

    /// Every code with its name, for the generators.
    pub const ALL: &[(&str, i64)] = &[
        ("PARSE_ERROR", PARSE_ERROR),
        ("INVALID_REQUEST", INVALID_REQUEST),
        ("METHOD_NOT_FOUND", METHOD_NOT_FOUND),
        ("INVALID_PARAMS", INVALID_PARAMS),
        ("INTERNAL_ERROR", INTERNAL_ERROR),
        ("SERVER_NOT_INITIALIZED", SERVER_NOT_INITIALIZED),
        ("REQUEST_CANCELLED", REQUEST_CANCELLED),
    ];
}

/// Defines Mino's error codes once: the [`ErrorCode`] enum and the
/// constants of [`error_code`].
macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident / $name:ident = $code:literal; )+) => {
        /// JSON-RPC error codes of Mino's own methods.
        pub mod error_code {
            $( $(#[$doc])* pub const $name: i64 = $code; )+
        }

        /// Mino's own JSON-RPC error codes as one enum (the numbers are in
        /// [`error_code`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )+
        }

        impl ErrorCode {
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The number on the wire.
            pub const fn code(self) -> i64 {
                match self { $(Self::$variant => error_code::$name),+ }
            }

            /// The name in [`error_code`] and docs/protocol.md, e.g. `TURN_IN_PROGRESS`.
            pub const fn name(self) -> &'static str {
                match self { $(Self::$variant => stringify!($name)),+ }
            }

            pub fn from_code(code: i64) -> Option<Self> {
                Self::ALL.iter().copied().find(|c| c.code() == code)
            }
        }
    };
}

error_codes! {
    /// `mino/chat` while an unknown tool result awaits acknowledgement.
    AcknowledgementRequired / ACKNOWLEDGEMENT_REQUIRED = -32010;
    /// `mino/chat` while another turn is running.
    TurnInProgress / TURN_IN_PROGRESS = -32011;
    /// `mino/approval` whose `turnId` and `callId` do not name the call waiting for a decision.
    NoPendingApproval / NO_PENDING_APPROVAL = -32012;
    /// The session journal could not be read or written; the message names the file and cause.
    JournalFailure / JOURNAL_FAILURE = -32013;
    /// `mino/cancel` or `mino/acknowledge` named a turn that is not running / not pending.
    UnknownTurn / UNKNOWN_TURN = -32014;
    /// The session could not be opened (locked elsewhere, unreadable, newer format).
    SessionUnavailable / SESSION_UNAVAILABLE = -32015;
    /// `mino/rewind` whose `digest` is not the plan's now: something changed since it was shown; nothing was written.
    RewindPlanChanged / REWIND_PLAN_CHANGED = -32016;
}

/// Fixed sentences every client shows exactly as written.
pub mod message {
    /// The message of [`crate::error_code::ACKNOWLEDGEMENT_REQUIRED`], fixed by the specification.
    pub const ACKNOWLEDGEMENT_REQUIRED: &str = "Acknowledge unknown tool results before continuing";
    /// The question a client asks before it sends `mino/acknowledge` (specification, chapter 04).
    pub const ACKNOWLEDGEMENT_QUESTION: &str = "Do you understand that these commands may already have run?";

    /// Every fixed message with its name, for the generators.
    pub const ALL: &[(&str, &str)] = &[
        ("ACKNOWLEDGEMENT_REQUIRED", ACKNOWLEDGEMENT_REQUIRED),
        ("ACKNOWLEDGEMENT_QUESTION", ACKNOWLEDGEMENT_QUESTION),
    ];
}

/// The message of [`error_code::ACKNOWLEDGEMENT_REQUIRED`], fixed by the specification.
pub const ACKNOWLEDGEMENT_REQUIRED_MESSAGE: &str = message::ACKNOWLEDGEMENT_REQUIRED;

/// Defines a string enum once: its serde names are its wire values, listed
/// in `ALL` and returned by `as_str`, so the generators and the docs test
/// see exactly what serde sends.
macro_rules! wire_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, TS)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
        }

        impl $name {
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The value on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $wire),+ }
            }
        }
    };
}

/// `initializationOptions` of the LSP `initialize` request.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct InitializationOptions {
    /// Directory bash commands run in; defaults to the server's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cwd: Option<String>,
    /// Session to open by id, from any workspace; `None` opens the most
    /// recently active session of `cwd` that no other process holds, or a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub session: Option<String>,
    /// Start a new session even if others exist.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub new_session: bool,
    /// The approval mode to start in (default `ask`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub approval_mode: Option<ApprovalMode>,
    /// The sandbox mode to start in (default `MINO_SANDBOX`, else `off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sandbox: Option<SandboxMode>,
}

/// What the server adds to `InitializeResult.capabilities.experimental.mino`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    pub session_id: String,
    pub journal_path: String,
    pub cwd: String,
    pub model: String,
    /// The session's title: renamed, else its first question's first line;
    /// `null` before the first question.
    pub title: Option<String>,
    pub approval_mode: ApprovalMode,
    pub sandbox: SandboxMode,
    /// One line saying what this machine's sandbox enforces.
    pub sandbox_support: String,
    /// Set when Mino's home (`$MINO_HOME`) lies inside the workspace (Mino
    /// started in `~` with the default `~/.mino`): a sentence saying so and
    /// what protects it. Show it once at start-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub home_in_workspace: Option<String>,
    /// The project's `AGENTS.md` files in force, farther first. Show them
    /// in the banner or header; `mino/instructionsChanged` says when they
    /// change.
    #[serde(default)]
    pub instruction_files: Vec<InstructionFile>,
}

/// One of the project's instruction files (`AGENTS.md`) the model is given.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct InstructionFile {
    /// Absolute.
    pub path: String,
    /// The file's size in bytes.
    pub size: u64,
    /// Whether only part of it (its first `given` bytes) is given to the
    /// model: at most 32 KiB of one file, 128 KiB of all, spent from the
    /// nearest file up.
    #[serde(default)]
    pub truncated: bool,
    /// The bytes of it given to the model.
    pub given: u64,
    /// sha256 of those bytes (64 lowercase hex digits), as the journal's
    /// `response` records name it.
    pub sha256: String,
}

// ---------------------------------------------------------------- requests

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ChatParams {
    pub text: String,
    /// The question's images (at most 8, each at most 20 MiB, 32 MiB
    /// together; PNG, JPEG, GIF or WebP, told by their bytes). `text` may be
    /// empty when there is at least one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<ChatImage>>")]
    pub images: Vec<ChatImage>,
}

/// The most images one `mino/chat` carries.
pub const MAX_IMAGES: usize = 8;
/// The largest image `mino/chat` takes, in bytes (20 MiB).
pub const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;
/// The most image bytes one `mino/chat` carries together (32 MiB).
pub const MAX_QUESTION_IMAGE_BYTES: usize = 32 * 1024 * 1024;

/// One image of a question: exactly one of `data` (the bytes, base64) and
/// `path` (a file the server reads: absolute, or relative to the session's
/// directory).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ChatImage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub path: Option<String>,
    /// The type the client believes it is (`image/png`, …); when given, it
    /// must agree with the bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub mime_type: Option<String>,
    /// What to call it in history (a file name); a `path`'s file name by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub name: Option<String>,
}

/// An image a question carried, as history shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct HistoryImage {
    /// Lowercase hex SHA-256 of its bytes: what `mino/image` takes.
    pub sha256: String,
    pub mime_type: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub name: Option<String>,
    /// Why the kept file cannot be sent (missing, changed); absent when it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub unavailable: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ImageParams {
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ImageResult {
    pub mime_type: String,
    /// The bytes, base64.
    pub data: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ChatResult {
    pub turn_id: String,
}

wire_enum! {
    /// The person's decision on a call, in `mino/approval`.
    pub enum Decision {
        Approve = "approve",
        Deny = "deny",
        /// Approve, and allow `rule` for the rest of the session.
        AllowSession = "allowSession",
        /// Approve, and allow `rule` in every session of the workspace.
        AllowWorkspace = "allowWorkspace",
        /// Deny, and deny what `rule` covers for the rest of the session.
        DenySession = "denySession",
        /// Deny, and deny what `rule` covers in every session of the workspace.
        DenyWorkspace = "denyWorkspace",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalParams {
    /// The turn of the call, as in its `mino/approvalRequest`: call ids
    /// repeat across turns, so the pair names the call.
    pub turn_id: String,
    pub call_id: String,
    pub decision: Decision,
    /// Only with `deny`: the model reads "Denied by the user: <reason>".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reason: Option<String>,
    /// Required with `allowSession`/`allowWorkspace`/`denySession`/`denyWorkspace`: the rule to grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rule: Option<RuleSpec>,
    /// Only with `approve`, for an edit: the hunks of its proposed diff
    /// (`mino/approvalRequest`'s `edit.diff`) the person accepted, as
    /// 0-based indices in the diff's order (its `@@` headers). The server
    /// writes those hunks alone, applied to the content the proposal was
    /// made from; the others are rejected. Absent: the whole edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub accepted_hunks: Option<Vec<u32>>,
}

impl ApprovalParams {
    /// A plain approve or deny.
    pub fn new(turn_id: impl Into<String>, call_id: impl Into<String>, decision: Decision) -> Self {
        Self {
            turn_id: turn_id.into(),
            call_id: call_id.into(),
            decision,
            reason: None,
            rule: None,
            accepted_hunks: None,
        }
    }
}

// ---------------------------------------------------------------- approval rules and settings

wire_enum! {
    /// What started a compaction (`mino_core::compaction::Trigger`).
    pub enum CompactionTrigger {
        /// `mino/compact`.
        Manual = "manual",
        /// The last request's input tokens passed the threshold of the context window.
        Auto = "auto",
        /// The model refused a request of a turn as longer than its context window.
        ContextLengthExceeded = "contextLengthExceeded",
    }
}

/// `mino/compact` takes no params (`{}`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct CompactParams {}

/// What `mino/compact` did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct CompactResult {
    /// A `compaction` record was saved: later requests start with the summary.
    pub compacted: bool,
    /// Turns newly summarised.
    pub summarized_turns: u64,
    /// Turns the summary covers that are still sent verbatim after it
    /// (their results are `unknown`, `not_executed` or recovered).
    pub kept_turns: u64,
    /// The last turn the summary covers (when compacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub through_turn_id: Option<String>,
    /// Why nothing changed (when not compacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct CompactionStarted {
    pub seq: u64,
    pub session_id: String,
    pub trigger: CompactionTrigger,
    /// The turn it runs in (`auto`, `contextLengthExceeded`); absent for `manual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub turn_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEnded {
    pub seq: u64,
    pub session_id: String,
    pub trigger: CompactionTrigger,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub turn_id: Option<String>,
    /// What it did: the same fields as `mino/compact`'s result.
    #[serde(flatten)]
    pub result: CompactResult,
    /// The summary request's tokens (also counted in the session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub usage: Option<TokenUsage>,
}

/// The project's instruction files in force changed: a file was added,
/// removed, cut differently or edited. The next model request is built from
/// these.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct InstructionsChanged {
    pub session_id: String,
    /// Farther first; empty when none is left.
    pub files: Vec<InstructionFile>,
}

wire_enum! {
    /// What a command may touch (`mino_core::sandbox::SandboxMode`).
    pub enum SandboxMode {
        Off = "off",
        ReadOnly = "read-only",
        WorkspaceWrite = "workspace-write",
    }
}

wire_enum! {
    /// When a command may run without the person's answer.
    pub enum ApprovalMode {
        Ask = "ask",
        Rules = "rules",
        SandboxedAuto = "sandboxed-auto",
        /// Commands and edits are refused in plan mode, without running and
        /// without asking; the model is told the session is in plan mode.
        Plan = "plan",
    }
}

wire_enum! {
    /// How a rule compares a command's words, or (`path`) an edit's path.
    pub enum RuleKind {
        Exact = "exact",
        Prefix = "prefix",
        /// A glob relative to the session's directory (`*` and `?` never
        /// cross `/`, `**` does), covering `edit_file`/`write_file` calls.
        Path = "path",
        /// An MCP server's tool, `tool: "server/tool"`, or every tool of
        /// the server, `tool: "server/*"` (the server by its configured name).
        Mcp = "mcp",
    }
}

wire_enum! {
    /// What a rule does to the calls it covers (absent = `allow`).
    pub enum RuleEffect {
        Allow = "allow",
        Deny = "deny",
    }
}

wire_enum! {
    /// Where a rule holds.
    pub enum RuleScope {
        Session = "session",
        Workspace = "workspace",
    }
}

wire_enum! {
    /// Who approved a call.
    pub enum ApproverKind {
        User = "user",
        Rule = "rule",
        Sandbox = "sandbox",
        /// A read-only call (`read_file`, `list_files`, `search`) inside the
        /// session's directory: reads there never ask, in every mode.
        Workspace = "workspace",
    }
}

/// A rule as a client asks for it (and as the server suggests it):
/// `{kind: "exact" | "prefix", command}`, `{kind: "path", pattern}` or
/// `{kind: "mcp", tool}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RuleSpec {
    pub kind: RuleKind,
    /// The command (`exact`, `prefix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub command: Option<String>,
    /// The glob (`path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub pattern: Option<String>,
    /// `server/tool`, or `server/*` for every tool of the server (`mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool: Option<String>,
}

impl RuleSpec {
    /// A command rule (`exact` or `prefix`).
    pub fn command(kind: RuleKind, command: impl Into<String>) -> Self {
        Self { kind, command: Some(command.into()), pattern: None, tool: None }
    }

    /// A path rule.
    pub fn path(pattern: impl Into<String>) -> Self {
        Self { kind: RuleKind::Path, command: None, pattern: Some(pattern.into()), tool: None }
    }

    /// An MCP rule: `server/tool`, or `server/*` for every tool of the server.
    pub fn mcp(tool: impl Into<String>) -> Self {
        Self { kind: RuleKind::Mcp, command: None, pattern: None, tool: Some(tool.into()) }
    }

    /// The command, the pattern or the tool, whichever the kind has (empty if missing).
    pub fn text(&self) -> &str {
        let text = match self.kind {
            RuleKind::Path => &self.pattern,
            RuleKind::Mcp => &self.tool,
            _ => &self.command,
        };
        text.as_deref().unwrap_or_default()
    }
}

/// A rule in force: `command` for a command rule, `pattern` for a path
/// rule, `tool` for an MCP rule, `effect` only on a deny rule.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RuleView {
    pub id: String,
    pub kind: RuleKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool: Option<String>,
    pub scope: RuleScope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub effect: Option<RuleEffect>,
}

/// Who approved a call; `rule` with `kind: "rule"` (the first rule that
/// covered it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ApprovedBy {
    pub kind: ApproverKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rule: Option<RuleView>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RulesListParams {}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RulesListResult {
    pub rules: Vec<RuleView>,
    /// The workspace rules file's path (it may not exist yet).
    pub workspace_file: String,
    /// Why none of the file's rules apply (it names the line), when so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub workspace_file_error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RulesRevokeParams {
    pub id: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SettingsUpdateParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub approval_mode: Option<ApprovalMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sandbox: Option<SandboxMode>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SettingsResult {
    pub approval_mode: ApprovalMode,
    pub sandbox: SandboxMode,
    /// One line saying what this machine's sandbox enforces.
    pub sandbox_support: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListParams {}

wire_enum! {
    /// Where `mino/models/list` found its models.
    pub enum ModelSource {
        /// The model service's own list (`GET <base_url>/models`).
        Service = "service",
        /// The configured model and the configuration file's `[models.*]`
        /// entries: the service failed, took too long or has no list.
        Config = "config",
    }
}

/// One model a person can choose.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ModelEntry {
    /// The name requests give it.
    pub id: String,
    /// Its context window in tokens, when the service or the configuration says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub context_window: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ModelsListResult {
    /// Always includes `current`.
    pub models: Vec<ModelEntry>,
    /// The current session's model.
    pub current: String,
    pub source: ModelSource,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ModelsSelectParams {
    pub model: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ModelsSelectResult {
    /// The session's model now (the name, trimmed).
    pub model: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RewindPlanParams {
    /// The first turn to rewind; every later turn is rewound with it.
    pub turn_id: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub enum RewindAction {
    /// The content from before the turns is put back.
    Restore,
    /// Mino created the file in those turns: it is removed.
    Remove,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RewindFile {
    /// Absolute, every symbolic link resolved (as the edit records name it).
    pub path: String,
    pub action: RewindAction,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RewindConflict {
    pub path: String,
    /// Why it is left as it is (changed since Mino wrote it, missing, before-content not kept…).
    pub why: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RewindCommand {
    pub turn_id: String,
    pub call_id: String,
    /// A command that ran in a rewound turn: its effects are not undone.
    pub command: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RewindPlanResult {
    pub turn_id: String,
    /// The turns rewound, oldest first.
    pub turns: Vec<String>,
    /// The files put back, newest change first.
    pub files: Vec<RewindFile>,
    pub conflicts: Vec<RewindConflict>,
    pub commands: Vec<RewindCommand>,
    /// What `mino/rewind` must be given to carry out exactly this plan.
    pub digest: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RewindParams {
    pub turn_id: String,
    /// The `digest` of the plan the person confirmed.
    pub digest: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub enum RewindOutcome {
    Restored,
    Removed,
    /// Still what Mino wrote: not put back (a write failed; or, recovered, Mino stopped first).
    NotRestored,
    /// Changed between the plan and the write: left as it was.
    Conflict,
    /// Recovered only: neither the content from before nor what Mino wrote.
    Changed,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RewindFileOutcome {
    pub path: String,
    pub outcome: RewindOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub why: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RewindResult {
    pub turn_id: String,
    pub turns: Vec<String>,
    pub files: Vec<RewindFileOutcome>,
    pub conflicts: Vec<RewindConflict>,
    pub commands: Vec<RewindCommand>,
}

/// The `{}` result of methods that only acknowledge.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
pub struct EmptyResult {}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct AcknowledgeParams {
    /// Turns to acknowledge; absent means every pending one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub turn_ids: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct AcknowledgeResult {
    pub acknowledged: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct CancelParams {
    pub turn_id: String,
}

/// Paging: without `limit` every turn (before `beforeTurnId`, if given);
/// with it, the newest `limit` turns before `beforeTurnId` (or the end),
/// oldest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct HistoryParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub before_turn_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    pub session_id: String,
    pub turns: Vec<HistoryTurn>,
    /// Whether older turns exist before the first one returned.
    #[serde(default)]
    pub has_more: bool,
    /// The tokens of every turn of the session (not only those returned);
    /// absent when the model service reported none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub usage: Option<TokenUsage>,
    /// The project's `AGENTS.md` files the next request is built with,
    /// farther first (read when asked).
    #[serde(default)]
    pub instruction_files: Vec<InstructionFile>,
}

/// Tokens the model service reported, summed over responses.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Input tokens served from the service's prompt cache, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cached_input_tokens: Option<u64>,
    /// Output tokens spent on reasoning, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reasoning_tokens: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct HistoryTurn {
    pub turn_id: String,
    pub input: String,
    /// The images the question carried, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<HistoryImage>>")]
    pub images: Vec<HistoryImage>,
    /// The assistant's text, all responses of the turn joined.
    pub text: String,
    pub calls: Vec<HistoryCall>,
    /// `None` while the turn is still running.
    pub status: Option<TurnStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reason: Option<String>,
    /// Runtime notices shown with the turn (e.g. that it was interrupted).
    pub notices: Vec<String>,
    /// A rewind took this turn back: shown in history, no longer in the model's context.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub rewound: bool,
    /// The tokens of the turn's responses; absent when none were reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub usage: Option<TokenUsage>,
    /// The turn's content in the order it happened: each response's text
    /// and calls as they came, the text streamed of a response that never
    /// finished (a cancelled or failed turn), then the notices. What a
    /// client showed live, to rebuild it exactly. (`text`, `calls` and
    /// `notices` hold the same, grouped, for older clients; the partial text
    /// is only here.)
    #[serde(default)]
    pub items: Vec<HistoryItem>,
}

/// One piece of a turn's content (`HistoryTurn::items`).
// A wire type: a history page is built, serialised and dropped, never kept;
// boxing the call would only make every client's match go through a `Box`.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum HistoryItem {
    /// The assistant's text of one response (or of a response cut short).
    Text {
        text: String,
    },
    Call {
        call: HistoryCall,
    },
    /// A runtime notice, e.g. that the turn was interrupted.
    Notice {
        text: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct HistoryCall {
    pub call_id: String,
    /// The command; for an edit call, the summary `<tool> <path>`.
    pub command: String,
    /// The tool of an edit or read call; absent for a `bash` command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool: Option<ToolName>,
    /// A read call's path, pattern, lines and (with a `success` result)
    /// one-line summary; absent for a command or an edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub read: Option<ReadView>,
    /// `None` only while the call is still in flight.
    pub result: Option<ToolResultView>,
    /// What the command's supervisor saw; only beside an `unknown` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub evidence: Option<Evidence>,
    /// Who approved it; absent when it was not approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub approved_by: Option<ApprovedBy>,
    /// The sandbox mode it ran in; absent when it never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sandbox: Option<SandboxMode>,
    /// The directory it ran in (or, never started, the one its approval
    /// showed). Absent in sessions written before it was journaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub directory: Option<String>,
    /// The environment its approval showed; absent for an edit and in
    /// sessions written before it was journaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub environment: Option<BTreeMap<String, String>>,
    /// The limits its approval showed; absent as `environment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub limits: Option<Limits>,
    /// An edit call's proposal, as `mino/approvalRequest` showed it, from
    /// its recorded start: `diff` is the diff it wrote (from its `success`
    /// result), empty when it was not written. Absent for a command and
    /// for an edit that never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub edit: Option<EditView>,
}

wire_enum! {
    /// How a supervised command ended, as its supervisor saw it.
    pub enum EvidenceOutcome {
        Exited = "exited",
        Signalled = "signalled",
        StoppedWhenMinoStopped = "stopped_when_mino_stopped",
        TimedOut = "timed_out",
    }
}

/// What the command's supervisor recorded about a call whose result Mino
/// never saved. Present only beside an `unknown` result; the result stays
/// `unknown` and acknowledgement is still required.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub outcome: EvidenceOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub exit_code: Option<i32>,
    pub pid: u32,
    /// RFC 3339.
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub ended_at: Option<String>,
    /// The last bytes of the command's output, at most its output limit.
    pub output_tail: String,
    /// One sentence to show beside the unknown result, e.g. "the command
    /// exited 0 after Mino stopped; last output: done".
    pub summary: String,
}

// ---------------------------------------------------------------- sessions

wire_enum! {
    /// Which sessions `mino/sessions/list` shows.
    pub enum ListScope {
        /// The sessions created for this server's workspace.
        Workspace = "workspace",
        /// Every session of `$MINO_HOME`.
        All = "all",
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsListParams {
    /// Default `workspace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub scope: Option<ListScope>,
    /// At most this many sessions (1..=500, default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub limit: Option<u64>,
    /// A previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsListResult {
    /// Newest (last active) first.
    pub sessions: Vec<SessionEntry>,
    /// Present when more sessions follow: pass it as `cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub next_cursor: Option<String>,
}

/// One session in a list.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub session_id: String,
    /// The directory the session was created for; its commands run there.
    pub cwd: String,
    pub title: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: when its journal was last written.
    pub last_active_at: String,
    pub turns: u64,
    /// Another Mino process holds it: it cannot be opened or deleted here.
    pub held_elsewhere: bool,
    /// Opening it shows an unknown result to acknowledge before chatting.
    pub acknowledgement_required: bool,
    /// It is this server's current session.
    pub current: bool,
    /// The session's tokens, summed over its responses; absent when none
    /// were reported, or when its last turn ended in a Mino that did not
    /// record the sum (see docs/journal.md, "Listing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub usage: Option<TokenUsage>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsNewParams {
    /// The directory the new session's commands run in; default the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub cwd: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsOpenParams {
    pub session_id: String,
}

/// The session now current, after `mino/sessions/new` or `mino/sessions/open`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    pub journal_path: String,
    pub cwd: String,
    pub title: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsRenameParams {
    pub session_id: String,
    /// 1 to 200 characters after trimming, one line.
    pub title: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsDeleteParams {
    pub session_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsDeleteResult {
    /// The directory under `$MINO_HOME/trash/` now holding the session's files.
    pub trashed_to: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsForkParams {
    /// The session to fork: the current one or any other not held by another process.
    pub session_id: String,
    /// The last turn the fork holds (an ended turn, not rewound).
    pub turn_id: String,
}

/// The fork made: a session like any other, not made current (open it with
/// `mino/sessions/open`). The forked session is unchanged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionsForkResult {
    pub session_id: String,
    pub journal_path: String,
    pub cwd: String,
    pub title: Option<String>,
    /// The session and turn it was forked from.
    pub forked_from: ForkedFrom,
    /// How many turns the fork holds (those up to and including `turnId`).
    pub turns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    pub session_id: String,
    pub turn_id: Option<String>,
}

// ---------------------------------------------------------------- shared vocabulary

wire_enum! {
    /// How a turn ended (`mino_core::TurnStatus` on the wire).
    pub enum TurnStatus {
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
        /// Closed by recovery after the server stopped mid-turn.
        Interrupted = "interrupted",
    }
}

wire_enum! {
    /// How a tool call ended (`mino_core::ToolStatus` on the wire).
    pub enum ToolStatus {
        Success = "success",
        Failed = "failed",
        Refused = "refused",
        TimedOut = "timed_out",
        Cancelled = "cancelled",
        NotExecuted = "not_executed",
        Unknown = "unknown",
        /// Recovery verified from the file that an edit was written.
        Applied = "applied",
        /// Recovery verified from the file that an edit was not written.
        NotApplied = "not_applied",
        /// A read-only call interrupted before its result was saved: what it
        /// read is not on record. It had no effects, so it does not need
        /// acknowledgement.
        Unavailable = "unavailable",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultView {
    pub status: ToolStatus,
    pub output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub exit_code: Option<i32>,
    /// The diff an edit call wrote, as its saved result holds it (cut at
    /// 64 KiB with a note); only on a `success` result of an edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub diff: Option<String>,
}

wire_enum! {
    /// Which file-edit tool a call is.
    pub enum EditToolName {
        EditFile = "edit_file",
        WriteFile = "write_file",
    }
}

wire_enum! {
    /// Which tool a call is, where a call names one (`tool` of
    /// `mino/toolStarted`, `mino/toolResult`, `mino/history` and
    /// `mino/recovery` calls). A `bash` command has no `tool`, as before
    /// the read tools existed.
    pub enum ToolName {
        EditFile = "edit_file",
        WriteFile = "write_file",
        ReadFile = "read_file",
        ListFiles = "list_files",
        Search = "search",
    }
}

impl ToolName {
    /// The read-only tools: shown as one line, never as an approval card
    /// unless their path leaves the workspace.
    pub const fn is_read(self) -> bool {
        matches!(self, Self::ReadFile | Self::ListFiles | Self::Search)
    }
}

impl From<EditToolName> for ToolName {
    fn from(tool: EditToolName) -> Self {
        match tool {
            EditToolName::EditFile => Self::EditFile,
            EditToolName::WriteFile => Self::WriteFile,
        }
    }
}

wire_enum! {
    /// Which read-only tool a call is.
    pub enum ReadToolName {
        ReadFile = "read_file",
        ListFiles = "list_files",
        Search = "search",
    }
}

/// A read-only call (`read_file`, `list_files`, `search`): what it reads,
/// enough for a one-line summary such as
/// `read_file src/main.rs (lines 1-200 of 812)`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ReadView {
    pub tool: ReadToolName,
    /// The file (`read_file`) or the directory searched or listed, as the
    /// model gave it (`.` for the session's directory).
    pub path: String,
    /// `list_files`: the glob; `search`: the regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub pattern: Option<String>,
    /// `read_file`: the first line asked for (1-based); absent: line 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub start_line: Option<u64>,
    /// `read_file`: the last line asked for (inclusive); absent: as many as the bounds allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub end_line: Option<u64>,
    /// The path is outside the session's directory, or resolves outside it
    /// (`..`, a symbolic link): the read asked first. Show it prominently.
    pub leaves_workspace: bool,
    /// What the read returned, in one line: `lines 1-200 of 812 (31,204
    /// bytes)`, `48 files`, `12 matches in 5 files`, with what was left
    /// out; the first line of the result's `output`. Only on a `success`
    /// result (`mino/toolResult`, and calls in `mino/history` and
    /// `mino/recovery`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub summary: Option<String>,
    /// The output was cut at a bound (lines, bytes, matches, files); the
    /// output says what was left out. Only beside `summary`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub truncated: bool,
}

/// What the person approves for an `edit_file` / `write_file` call.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct EditView {
    pub tool: EditToolName,
    /// Where the edit writes: relative to the session's directory when
    /// inside it, else absolute (every symbolic link resolved).
    pub path: String,
    /// The file does not exist yet; `write_file` creates it.
    pub new_file: bool,
    /// Size in bytes of the file's content after the edit.
    pub size: u64,
    /// The unified diff from the file's content now to the content after.
    pub diff: String,
    /// The path is outside the session's directory: show it prominently.
    pub leaves_workspace: bool,
    /// Why the path is protected (`.git`, `.vscode`, `.envrc`, `.nvim.lua`,
    /// Mino's home): a program runs what it holds outside any sandbox, or it
    /// decides what Mino runs. Such an edit is asked about whatever rule or
    /// mode is in force (and no rule is suggested); show this sentence on the
    /// card. Absent for an ordinary path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub protected: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub timeout_seconds: u64,
    pub output_limit_bytes: u64,
}

// ---------------------------------------------------------------- notifications

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryNotification {
    pub session_id: String,
    /// Turns closed by this open's recovery, and earlier recovered turns still
    /// awaiting acknowledgement.
    pub turns: Vec<RecoveredTurnView>,
    pub acknowledgement_required: bool,
    pub unacknowledged_turn_ids: Vec<String>,
    /// Repairs made to the file while opening it (a torn last line cut off).
    pub repairs: Vec<String>,
    /// A rewind Mino stopped during, closed by this open from what each
    /// planned file holds now (recovery writes no file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rewind: Option<RecoveredRewind>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RecoveredRewind {
    pub turn_id: String,
    /// What each planned file's bytes proved: `restored`/`removed`,
    /// `notRestored` (still what Mino wrote), `changed` (neither).
    pub files: Vec<RewindFileOutcome>,
    pub conflicts: Vec<RewindConflict>,
    pub commands: Vec<RewindCommand>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RecoveredTurnView {
    pub turn_id: String,
    pub status: TurnStatus,
    pub calls: Vec<RecoveredCallView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct RecoveredCallView {
    pub call_id: String,
    /// The command; for an edit call, the summary `<tool> <path>`.
    pub command: String,
    /// The tool of an edit or read call; absent for a `bash` command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool: Option<ToolName>,
    /// A read call's path, pattern, lines and (with a `success` result)
    /// one-line summary; absent for a command or an edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub read: Option<ReadView>,
    pub result: ToolResultView,
    /// What the command's supervisor saw; only beside an `unknown` result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub evidence: Option<Evidence>,
    /// Who approved it; absent when it was not approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub approved_by: Option<ApprovedBy>,
    /// The sandbox mode it ran in; absent when it never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sandbox: Option<SandboxMode>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct TurnStarted {
    pub turn_id: String,
    pub seq: u64,
    /// The session the turn belongs to.
    pub session_id: String,
    pub input: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct TextDelta {
    pub turn_id: String,
    pub seq: u64,
    /// The session the turn belongs to.
    pub session_id: String,
    pub delta: String,
}

/// The model request failed in a retryable way (network, 5xx, 429, a cut
/// stream) and is sent again after `delayMs`. Text streamed since the
/// model's current response began (since `turnStarted` or the last
/// `toolResult`) is void: the retried response streams it again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct Retrying {
    pub turn_id: String,
    pub seq: u64,
    /// The session the turn belongs to.
    pub session_id: String,
    pub attempt: u32,
    pub delay_ms: u64,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    pub turn_id: String,
    pub seq: u64,
    /// The session the turn belongs to.
    pub session_id: String,
    pub call_id: String,
    pub command: String,
    pub directory: String,
    /// The complete environment the command will get (names and values).
    pub environment: BTreeMap<String, String>,
    pub limits: Limits,
    /// The sandbox the command will run in if approved.
    pub sandbox: SandboxMode,
    pub approval_mode: ApprovalMode,
    /// The rule to offer for "allow/deny for session/workspace": a
    /// command's first words as a prefix rule (absent when the command is
    /// not one plain command), an edit's path (relative to the session's
    /// directory) as a path rule (absent when the path leaves the workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub suggested_rule: Option<RuleSpec>,
    /// An edit call's proposal; absent for a command. For an edit, `command`
    /// is the summary `<tool> <path as the model gave it>`, `environment`
    /// is empty and `limits` are zero (nothing runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub edit: Option<EditView>,
    /// A read call whose path leaves the workspace: what it would read.
    /// `command` is its summary (`read_file /etc/hosts`), `environment` is
    /// empty and `limits` are zero; nothing about the file is revealed
    /// before the approval. Absent for commands and edits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub read: Option<ReadView>,
    /// Deny rules this command might reach although none matches it (it runs
    /// another command through a wrapper such as `env`, has a substitution,
    /// a redirection or an expansion the rules cannot see through, or names a
    /// denied program by its path): why it is asked about instead of running
    /// without asking, whatever the mode. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<RuleView>>", optional)]
    pub deny_rules: Vec<RuleView>,
    /// An MCP tool call: the server, the tool, the arguments and the
    /// tool's annotations. `command` is its summary (`mcp fs/read_file
    /// {"path":"a"}`), `environment` is empty and `limits` are the call's
    /// time limit and output bound. Absent for other calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub mcp: Option<McpView>,
}

/// What an MCP tool call would send.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct McpView {
    pub server: String,
    pub tool: String,
    /// The arguments as the model sent them (JSON text).
    pub arguments: String,
    /// The tool's annotations as its server states them: hints, shown and
    /// never used to skip the approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub annotations: Option<McpAnnotations>,
}

/// An MCP tool's annotations (the server's claims about it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct McpAnnotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub open_world_hint: Option<bool>,
}

wire_enum! {
    /// An MCP server's state.
    pub enum McpState {
        Starting = "starting",
        /// Answering; its tools are offered to the model.
        Ready = "ready",
        /// It never became ready: its tools are missing.
        Failed = "failed",
        /// It was ready and its connection ended: its tools are missing.
        Exited = "exited",
    }
}

/// One MCP server's state.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    pub server: String,
    pub state: McpState,
    /// `ready`: the names its tools are offered under (`mcp__<server>__<tool>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tools: Option<Vec<String>>,
    /// `failed`, `exited`: why, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reason: Option<String>,
}

/// `mino/mcp/status`'s params.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct McpStatusNotification {
    pub session_id: String,
    #[serde(flatten)]
    #[ts(flatten)]
    pub status: McpServerStatus,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct McpListParams {}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct McpListResult {
    /// In name order.
    pub servers: Vec<McpServerStatus>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct McpRestartParams {
    pub server: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ToolStarted {
    pub turn_id: String,
    pub seq: u64,
    /// The session the turn belongs to.
    pub session_id: String,
    pub call_id: String,
    pub command: String,
    pub approved_by: ApprovedBy,
    /// The sandbox mode the command runs in.
    pub sandbox: SandboxMode,
    /// The tool of an edit or read call; absent for a `bash` command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool: Option<ToolName>,
    /// A read call's path, pattern and lines (no summary yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub read: Option<ReadView>,
}

wire_enum! {
    pub enum OutputStream {
        Stdout = "stdout",
        Stderr = "stderr",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    pub turn_id: String,
    pub seq: u64,
    /// The session the turn belongs to.
    pub session_id: String,
    pub call_id: String,
    pub stream: OutputStream,
    pub chunk: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub turn_id: String,
    pub seq: u64,
    /// The session the turn belongs to.
    pub session_id: String,
    pub call_id: String,
    /// The call's command, as `mino/approvalRequest`, `mino/toolStarted`
    /// and `mino/history` show it (for an edit call the summary
    /// `<tool> <path>`). A call refused by a deny rule, or one that failed
    /// before anyone was asked (arguments that could not be read, an
    /// unknown tool), has no request or start: this is the only place the
    /// live view learns its command. When the arguments could not be read
    /// it is the arguments as the model sent them, as `mino/history` shows
    /// them; absent only when the call is not on record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub command: Option<String>,
    pub status: ToolStatus,
    pub output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub exit_code: Option<i32>,
    /// The diff an edit call wrote (its whole diff; `output` holds it cut
    /// at 64 KiB); only on a `success` result of an edit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub diff: Option<String>,
    /// The tool of an edit or read call; absent for a `bash` command (and
    /// when the call is not on record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tool: Option<ToolName>,
    /// A read call's path, pattern, lines and (on `success`) one-line summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub read: Option<ReadView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnded {
    pub turn_id: String,
    pub seq: u64,
    /// The session the turn belongs to.
    pub session_id: String,
    pub status: TurnStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub text: Option<String>,
    /// The tokens of this turn's responses; absent when none were reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub usage: Option<TokenUsage>,
    /// The session's tokens so far, this turn included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub session_usage: Option<TokenUsage>,
}

/// Any notification a turn emits, tagged by its method name; handy for
/// clients that read them from one stream.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, TS)]
#[serde(tag = "method", content = "params")]
// One is decoded per message and none is kept in bulk, so the approval
// request's size (its edit, read and MCP views) costs nothing a box would save.
#[allow(clippy::large_enum_variant)]
pub enum TurnNotification {
    #[serde(rename = "mino/turnStarted")]
    TurnStarted(TurnStarted),
    #[serde(rename = "mino/textDelta")]
    TextDelta(TextDelta),
    #[serde(rename = "mino/retrying")]
    Retrying(Retrying),
    #[serde(rename = "mino/approvalRequest")]
    ApprovalRequest(ApprovalRequest),
    #[serde(rename = "mino/toolStarted")]
    ToolStarted(ToolStarted),
    #[serde(rename = "mino/toolOutput")]
    ToolOutput(ToolOutput),
    #[serde(rename = "mino/toolResult")]
    ToolResult(ToolResult),
    #[serde(rename = "mino/turnEnded")]
    TurnEnded(TurnEnded),
}

impl TurnNotification {
    pub fn turn_id(&self) -> &str {
        match self {
            Self::TurnStarted(n) => &n.turn_id,
            Self::TextDelta(n) => &n.turn_id,
            Self::Retrying(n) => &n.turn_id,
            Self::ApprovalRequest(n) => &n.turn_id,
            Self::ToolStarted(n) => &n.turn_id,
            Self::ToolOutput(n) => &n.turn_id,
            Self::ToolResult(n) => &n.turn_id,
            Self::TurnEnded(n) => &n.turn_id,
        }
    }

    pub fn session_id(&self) -> &str {
        match self {
            Self::TurnStarted(n) => &n.session_id,
            Self::TextDelta(n) => &n.session_id,
            Self::Retrying(n) => &n.session_id,
            Self::ApprovalRequest(n) => &n.session_id,
            Self::ToolStarted(n) => &n.session_id,
            Self::ToolOutput(n) => &n.session_id,
            Self::ToolResult(n) => &n.session_id,
            Self::TurnEnded(n) => &n.session_id,
        }
    }

    pub fn seq(&self) -> u64 {
        match self {
            Self::TurnStarted(n) => n.seq,
            Self::TextDelta(n) => n.seq,
            Self::Retrying(n) => n.seq,
            Self::ApprovalRequest(n) => n.seq,
            Self::ToolStarted(n) => n.seq,
            Self::ToolOutput(n) => n.seq,
            Self::ToolResult(n) => n.seq,
            Self::TurnEnded(n) => n.seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A request marked `optional` in [`methods!`] has params that read
    /// `{}`, and one not marked does not: the mark and the type agree, so a
    /// server that fills in `{}` for a missing `params` never turns a
    /// request that lacks what it needs into one that runs.
    #[test]
    fn params_optional_is_exactly_the_params_that_read_an_empty_object() {
        struct Check(Vec<String>);
        impl Visitor for Check {
            fn request<R: request::Request>(&mut self) {
                let reads_empty = serde_json::from_value::<R::Params>(json!({})).is_ok();
                if reads_empty != R::PARAMS_OPTIONAL {
                    self.0.push(format!(
                        "{}: PARAMS_OPTIONAL {} but {{}} reads: {reads_empty}",
                        R::METHOD,
                        R::PARAMS_OPTIONAL
                    ));
                }
            }
            fn notification<N: notification::Notification>(&mut self) {}
        }
        let mut check = Check(Vec::new());
        visit(&mut check);
        assert!(check.0.is_empty(), "{:#?}", check.0);
    }

    #[test]
    fn approval_request_is_camel_case_on_the_wire() {
        let n = TurnNotification::ApprovalRequest(ApprovalRequest {
            turn_id: "t1".into(),
            seq: 3,
            session_id: "s1".into(),
            call_id: "call_1".into(),
            command: "ls".into(),
            directory: "/tmp".into(),
            environment: BTreeMap::from([("PATH".into(), "/usr/bin".into())]),
            limits: Limits { timeout_seconds: 120, output_limit_bytes: 65536 },
            edit: None,
            read: None,
            sandbox: SandboxMode::WorkspaceWrite,
            approval_mode: ApprovalMode::Rules,
            suggested_rule: Some(RuleSpec::command(RuleKind::Prefix, "ls")),
            deny_rules: Vec::new(),
            mcp: None,
        });
        let v = serde_json::to_value(&n).unwrap();
        assert_eq!(v["method"], "mino/approvalRequest");
        assert_eq!(v["params"]["callId"], "call_1");
        assert_eq!(v["params"]["limits"]["timeoutSeconds"], 120);
        assert_eq!(v["params"]["sessionId"], "s1");
        assert_eq!(v["params"]["sandbox"], "workspace-write");
        assert_eq!(v["params"]["approvalMode"], "rules");
        assert_eq!(v["params"]["suggestedRule"], json!({"kind": "prefix", "command": "ls"}));
    }

    #[test]
    fn an_edit_is_camel_case_with_snake_case_tool_names() {
        let edit = EditView {
            tool: EditToolName::WriteFile,
            path: "notes.txt".into(),
            new_file: true,
            size: 5,
            diff: "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+milk\n".into(),
            leaves_workspace: false,
            protected: None,
        };
        let v = serde_json::to_value(&edit).unwrap();
        assert_eq!(v["tool"], "write_file");
        assert_eq!(v["newFile"], true);
        assert_eq!(v["leavesWorkspace"], false);
        assert_eq!(serde_json::to_value(ToolStatus::NotApplied).unwrap(), "not_applied");
    }

    #[test]
    fn approval_params_name_the_turn_and_the_call() {
        let p = ApprovalParams::new("turn-2", "call_1", Decision::Approve);
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v, json!({"turnId": "turn-2", "callId": "call_1", "decision": "approve"}));
        let missing = serde_json::from_value::<ApprovalParams>(json!({"callId": "call_1", "decision": "approve"}));
        let err = missing.expect_err("turnId is required").to_string();
        assert!(err.contains("turnId"), "{err}");
        let allow: ApprovalParams = serde_json::from_value(json!({"turnId": "turn-2", "callId": "call_1",
            "decision": "allowWorkspace", "rule": {"kind": "prefix", "command": "npm test"}}))
        .unwrap();
        assert_eq!(allow.decision, Decision::AllowWorkspace);
        assert_eq!(allow.rule, Some(RuleSpec::command(RuleKind::Prefix, "npm test")));
        let deny: ApprovalParams = serde_json::from_value(json!({"turnId": "turn-2", "callId": "call_1",
            "decision": "denyWorkspace", "rule": {"kind": "path", "pattern": "src/**/*.rs"}}))
        .unwrap();
        assert_eq!(deny.decision, Decision::DenyWorkspace);
        assert_eq!(deny.rule.as_ref().map(RuleSpec::text), Some("src/**/*.rs"));
        assert_eq!(serde_json::to_value(RuleSpec::path("a/*")).unwrap(), json!({"kind": "path", "pattern": "a/*"}));
    }

    #[test]
    fn acknowledge_params_accept_an_empty_object() {
        let p: AcknowledgeParams = serde_json::from_value(json!({})).unwrap();
        assert_eq!(p.turn_ids, None);
    }

    /// `TurnNotification` tags each variant with a method and carries that
    /// method's bound params type, and lists exactly `TURN_NOTIFICATIONS`.
    #[cfg(feature = "ts")]
    #[test]
    fn turn_notification_agrees_with_the_bound_notifications() {
        struct Check {
            union: String,
            found: Vec<&'static str>,
        }
        impl Visitor for Check {
            fn request<R: request::Request>(&mut self) {}
            fn notification<N: notification::Notification>(&mut self) {
                let variant = format!(
                    "{{ \"method\": \"{}\", \"params\": {} }}",
                    N::METHOD,
                    N::Params::name(&ts_rs::Config::new())
                );
                if self.union.contains(&variant) {
                    self.found.push(N::METHOD);
                }
            }
        }
        let mut check = Check { union: TurnNotification::decl(&ts_rs::Config::new()), found: Vec::new() };
        visit(&mut check);
        assert_eq!(check.found, method::TURN_NOTIFICATIONS, "{}", check.union);
        assert_eq!(check.union.matches("\"method\":").count(), method::TURN_NOTIFICATIONS.len(), "{}", check.union);
    }

    #[test]
    fn error_codes_and_enums_list_every_value_once() {
        assert_eq!(ErrorCode::from_code(-32011), Some(ErrorCode::TurnInProgress));
        assert_eq!(ErrorCode::TurnInProgress.name(), "TURN_IN_PROGRESS");
        assert_eq!(ErrorCode::ALL.len(), 7);
        for status in ToolStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        for status in TurnStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert_eq!(serde_json::to_value(Decision::Deny).unwrap(), "deny");
    }

    #[test]
    fn statuses_are_snake_case() {
        assert_eq!(serde_json::to_value(ToolStatus::NotExecuted).unwrap(), "not_executed");
        assert_eq!(serde_json::to_value(ToolStatus::TimedOut).unwrap(), "timed_out");
        assert_eq!(serde_json::to_value(TurnStatus::Interrupted).unwrap(), "interrupted");
    }
}
