//! The record kinds of a session file (`v: 2`, and `v: 3` for records that
//! carry what only a Mino with approval rules and the sandbox understands), and how one record becomes one
//! line and back.
//!
//! A line is the record's JSON object with a checksum as its last member:
//! `{"v":2,"seq":7,"kind":"tool_start",…,"crc":"1c291ca3"}`. The checksum is
//! CRC-32 over the bytes of the line before `,"crc":`, so verifying it needs
//! no re-serialisation and detects any garbling of what it covers.

use crate::usage::Usage;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::edit::{EditStartRecord, EditTool};
use crate::tool_facts::journal_words;
pub use crate::tool_facts::{ApprovalFacts, RecordedLimits, ToolStatus};

/// The highest format version this build reads and writes; files with a
/// higher `v` were written by a newer Mino and are refused untouched. A
/// record is written with the lowest version that holds all it says
/// ([`RecordBody::version`]): `3` only for rules, rule-approved or
/// sandbox-approved calls and sandboxed starts, so a Mino that knows only
/// `v: 2` refuses exactly what it would misread.
pub const FORMAT_VERSION: u32 = 3;

/// The format version of the records of file edits: an edit's `tool_start`
/// and the `applied` / `not_applied` results recovery writes
/// (docs/journal.md, "Versions"). Only those carry it, so a session in which
/// no edit started stays readable by a Mino that knows only `v` 2. Files
/// with a `v` above this were written by a newer Mino and are refused
/// untouched.
pub const EDIT_FORMAT_VERSION: u32 = 3;

/// Every record kind this version knows. A kind outside this list means the
/// file was written by a newer Mino.
pub const KNOWN_KINDS: [&str; 14] = [
    "session",
    "user",
    "response",
    "approval",
    "tool_start",
    "tool_result",
    "turn_end",
    "recovery_ack",
    "rule",
    "rule_revoke",
    "compaction",
    "model",
    "rewind",
    "rewind_end",
];

const CRC_PREFIX: &[u8] = b",\"crc\":\"";
/// `,"crc":"` + 8 hex digits + `"}`
const CRC_SUFFIX_LEN: usize = CRC_PREFIX.len() + 8 + 2;

journal_words! {
    /// How a turn ended, as its `turn_end` record says.
    pub enum TurnStatus {
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
        Interrupted = "interrupted",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approved,
    Denied,
}

/// Who approved a call when it was not the person: the `approval` record's
/// `approved_by` (absent: the person decided).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovedBy {
    /// Standing rules covered every part of the command (named in `rules`).
    Rule,
    /// The approval mode `sandboxed-auto` with the sandbox in force.
    Sandbox,
    /// A read-only call whose path stays inside the session's directory:
    /// reads there never ask, whatever the approval mode.
    Workspace,
}

/// The most text of an unfinished response a `turn_end` keeps
/// (`partial_text`): far below the record size limit, and more than a
/// reader scrolls back through.
pub const PARTIAL_TEXT_LIMIT: usize = 256 * 1024;

/// The MCP fields of a `tool_start` (`v` 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpStartRecord {
    pub server: String,
    pub tool: String,
    /// The arguments as the model sent them (JSON text).
    pub arguments: String,
}

/// Where a fork's history came from: the header's `forked_from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    pub session_id: String,
    /// The last turn copied; `None` for a fork of a session with no turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// What a record says. The `kind` tag and field names are the file format:
/// renaming anything here breaks every existing session file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordBody {
    /// First record of every file. `forked_from`: the session and turn a
    /// fork (`mino/sessions/fork`) copied its history from; absent otherwise.
    /// An older Mino ignores it and reads the fork as any session: `v` stays 2.
    Session {
        session_id: String,
        created_at: String,
        cwd: String,
        mino_version: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forked_from: Option<ForkedFrom>,
    },
    /// The user's input; opens a turn. `images`: the question's images, each
    /// kept in the session's image directory (synced before this record is
    /// written); a record with images is `v` 3, since a reader without them
    /// would replay the question without its images.
    User {
        turn_id: String,
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<crate::images::ImageRef>,
    },
    /// One finished model response: every output item as received, reasoning
    /// items with their `encrypted_content`.
    Response {
        turn_id: String,
        items: Vec<Box<RawValue>>,
        /// The tokens the service reported for this response, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// What the request's instructions were built from (absent in
        /// files written before it was recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<crate::project_instructions::InstructionsUsed>,
    },
    /// The decision on one call: the person's, or (`approved_by`) the
    /// rules' or the sandbox's.
    Approval {
        turn_id: String,
        call_id: String,
        decision: ApprovalDecision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approved_by: Option<ApprovedBy>,
        /// Who refused a `denied` call when it was not the person: only
        /// `rule` (deny rules, named in `rules`). `approved_by` is never
        /// written on a denial.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_by: Option<ApprovedBy>,
        /// The rules that covered the command's parts or the edit's path
        /// (distinct, in order): the allowing ones, or the denying ones.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rules: Vec<crate::rules::Rule>,
        /// What the decision was about, as the approval showed it (a
        /// command's directory, environment and limits), so history shows
        /// it again; absent for edits and in files written before it was
        /// journaled. Optional fields an older Mino ignores: `v` stays 2.
        #[serde(flatten)]
        facts: ApprovalFacts,
    },
    /// The execution boundary: synced before the command is spawned.
    /// `sandbox` is the mode it runs in, absent when `off`.
    ToolStart {
        turn_id: String,
        call_id: String,
        /// Absent for an edit, which has the flattened [`EditStartRecord`]
        /// fields instead (`v` 3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        #[serde(flatten)]
        edit: Option<EditStartRecord>,
        cwd: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<crate::sandbox::SandboxMode>,
        /// An MCP tool call (`v` 3): which server's tool, with what
        /// arguments; `command` then holds its one-line summary. The
        /// server's `env` and headers are never written.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mcp: Option<McpStartRecord>,
    },
    /// A call's outcome. `recovered` marks results written by recovery, not by a run.
    ToolResult {
        turn_id: String,
        call_id: String,
        status: ToolStatus,
        output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recovered: bool,
    },
    TurnEnd {
        turn_id: String,
        status: TurnStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The text the model had streamed of a response that never
        /// finished (the turn was cancelled or failed mid-response): shown
        /// in history, never replayed to the model. At most
        /// [`PARTIAL_TEXT_LIMIT`] bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partial_text: Option<String>,
        /// The tokens of every `response` on file up to this record, summed:
        /// what the session list shows without reading the whole file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_usage: Option<Usage>,
    },
    /// The person confirmed they understand the turn's commands may have run.
    RecoveryAck { turn_id: String },
    /// The person granted a rule while answering a call: synced before the
    /// rule applies to anything.
    Rule { turn_id: String, call_id: String, rule: crate::rules::Rule },
    /// The person revoked a session rule: synced before the revoke answers.
    RuleRevoke { id: String },
    /// The model's summary of the conversation through `through_turn_id`
    /// (an ended turn): synced before any request replays it, which from
    /// then on starts with the summary instead of those turns
    /// (`compaction.rs`). Always `v` 3.
    Compaction {
        through_turn_id: String,
        summary: String,
        /// The tokens of the summary request, when the service reported them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The person chose the model this session's requests name from now on
    /// (`mino/models/select`); synced before the choice is answered. Only
    /// between turns. The last one wins when the session is reopened.
    Model { model: String },
    /// The plan of a rewind the person confirmed (`digest`: the one shown),
    /// synced before the first file is touched; rewinds `turn_id` and every
    /// later turn (`plan.turns`). Only between turns. Always `v` 3.
    Rewind { turn_id: String, digest: String, plan: super::rewind_record::RewindPlan },
    /// What became of each planned file, synced once the last was handled;
    /// `recovered`: written by recovery from the files' hashes after Mino
    /// stopped during the rewind. Always `v` 3.
    RewindEnd {
        turn_id: String,
        outcomes: Vec<super::rewind_record::FileOutcome>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recovered: bool,
    },
}

impl RecordBody {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Session { .. } => "session",
            Self::User { .. } => "user",
            Self::Response { .. } => "response",
            Self::Approval { .. } => "approval",
            Self::ToolStart { .. } => "tool_start",
            Self::ToolResult { .. } => "tool_result",
            Self::TurnEnd { .. } => "turn_end",
            Self::RecoveryAck { .. } => "recovery_ack",
            Self::Rule { .. } => "rule",
            Self::RuleRevoke { .. } => "rule_revoke",
            Self::Compaction { .. } => "compaction",
            Self::Model { .. } => "model",
            Self::Rewind { .. } => "rewind",
            Self::RewindEnd { .. } => "rewind_end",
        }
    }

    /// The format version this record needs: `3` when it says something a
    /// `v: 2` reader would silently misread or not know.
    pub fn version(&self) -> u32 {
        match self {
            // A Mino without compaction would replay every turn and not
            // know the summary replaced them: it must refuse the file.
            Self::Rule { .. } | Self::RuleRevoke { .. } | Self::Compaction { .. } | Self::Model { .. } => 3,
            // A Mino without rewinds would replay the rewound turns.
            Self::Rewind { .. } | Self::RewindEnd { .. } => 3,
            Self::User { images, .. } if !images.is_empty() => 3,
            // The edit records (docs/journal.md, "Versions").
            Self::ToolStart { edit: Some(_), .. } => EDIT_FORMAT_VERSION,
            // A Mino without MCP would recover it as a command it cannot name.
            Self::ToolStart { mcp: Some(_), .. } => 3,
            Self::ToolResult { status, .. } if status.is_edit_recovery() => EDIT_FORMAT_VERSION,
            Self::Approval { approved_by: Some(_), .. } | Self::Approval { decided_by: Some(_), .. } => 3,
            Self::ToolStart { sandbox: Some(mode), .. } if *mode != crate::sandbox::SandboxMode::Off => 3,
            _ => 2,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub v: u32,
    pub seq: u64,
    #[serde(flatten)]
    pub body: RecordBody,
}

/// Every field any kind has, flat: one pass over the line with no
/// intermediate buffering (an internally tagged enum would buffer the whole
/// record first), then [`Line::into_record`] checks that the kind has what
/// it needs. Unknown fields are ignored, as serde does by default.
#[derive(Deserialize)]
struct Line {
    v: u32,
    seq: u64,
    kind: String,
    turn_id: Option<String>,
    session_id: Option<String>,
    created_at: Option<String>,
    cwd: Option<String>,
    mino_version: Option<String>,
    text: Option<String>,
    items: Option<Vec<Box<RawValue>>>,
    usage: Option<Usage>,
    call_id: Option<String>,
    decision: Option<ApprovalDecision>,
    command: Option<String>,
    status: Option<Box<RawValue>>,
    output: Option<String>,
    exit_code: Option<i32>,
    #[serde(default)]
    recovered: bool,
    reason: Option<String>,
    // The edit fields of a `tool_start` (`v` 3).
    tool: Option<EditTool>,
    path: Option<String>,
    leaves_workspace: Option<bool>,
    new_file: Option<bool>,
    before_sha256: Option<String>,
    before_size: Option<u64>,
    after_sha256: Option<String>,
    after_size: Option<u64>,
    approved_by: Option<ApprovedBy>,
    decided_by: Option<ApprovedBy>,
    #[serde(default)]
    rules: Vec<crate::rules::Rule>,
    sandbox: Option<crate::sandbox::SandboxMode>,
    rule: Option<crate::rules::Rule>,
    id: Option<String>,
    through_turn_id: Option<String>,
    summary: Option<String>,
    environment: Option<std::collections::BTreeMap<String, String>>,
    limits: Option<RecordedLimits>,
    accepted_hunks: Option<Vec<u32>>,
    partial_text: Option<String>,
    session_usage: Option<Usage>,
    model: Option<String>,
    instructions: Option<crate::project_instructions::InstructionsUsed>,
    images: Option<Vec<crate::images::ImageRef>>,
    mcp: Option<McpStartRecord>,
    digest: Option<String>,
    plan: Option<super::rewind_record::RewindPlan>,
    outcomes: Option<Vec<super::rewind_record::FileOutcome>>,
    forked_from: Option<ForkedFrom>,
}

impl Line {
    /// The edit fields of a `tool_start`, when it has `tool`: all required,
    /// checked by [`EditStartRecord::check`], and only valid in a `v` 3 line.
    fn edit_start(&self) -> Result<Option<EditStartRecord>, LineError> {
        let Some(tool) = self.tool else { return Ok(None) };
        let missing = |field: &str| LineError::Garbled(format!("edit `tool_start` record without `{field}`"));
        if self.v < EDIT_FORMAT_VERSION {
            return Err(LineError::Garbled(format!(
                "an edit `tool_start` record with v {}; edit records are v 3",
                self.v
            )));
        }
        let record = EditStartRecord {
            tool,
            path: self.path.clone().ok_or_else(|| missing("path"))?,
            leaves_workspace: self.leaves_workspace.ok_or_else(|| missing("leaves_workspace"))?,
            new_file: self.new_file.ok_or_else(|| missing("new_file"))?,
            before_sha256: self.before_sha256.clone(),
            before_size: self.before_size,
            after_sha256: self.after_sha256.clone().ok_or_else(|| missing("after_sha256"))?,
            after_size: self.after_size.ok_or_else(|| missing("after_size"))?,
        };
        record.check().map_err(|why| LineError::Garbled(format!("edit `tool_start` record: {why}")))?;
        Ok(Some(record))
    }

    fn into_record(self) -> Result<Record, LineError> {
        if self.v > EDIT_FORMAT_VERSION || !KNOWN_KINDS.contains(&self.kind.as_str()) {
            return Err(LineError::Newer { v: self.v, kind: self.kind });
        }
        let edit = if self.kind == "tool_start" { self.edit_start()? } else { None };
        let kind = self.kind;
        let missing = |field: &str| LineError::Garbled(format!("`{kind}` record without `{field}`"));
        let turn_id = || self.turn_id.clone().ok_or_else(|| missing("turn_id"));
        let call_id = || self.call_id.clone().ok_or_else(|| missing("call_id"));
        let status = |what: &str| -> Result<&str, LineError> {
            let raw = self.status.as_deref().ok_or_else(|| missing("status"))?;
            serde_json::from_str::<&str>(raw.get())
                .map_err(|_| LineError::Garbled(format!("{what} status is not a string")))
        };
        let body = match kind.as_str() {
            "session" => RecordBody::Session {
                session_id: self.session_id.clone().ok_or_else(|| missing("session_id"))?,
                created_at: self.created_at.clone().unwrap_or_default(),
                cwd: self.cwd.clone().unwrap_or_default(),
                mino_version: self.mino_version.clone().unwrap_or_default(),
                forked_from: self.forked_from.clone(),
            },
            "user" => RecordBody::User {
                turn_id: turn_id()?,
                text: self.text.clone().ok_or_else(|| missing("text"))?,
                images: self.images.clone().unwrap_or_default(),
            },
            "response" => RecordBody::Response {
                turn_id: turn_id()?,
                items: self.items.clone().ok_or_else(|| missing("items"))?,
                usage: self.usage,
                instructions: self.instructions.clone(),
            },
            "approval" => RecordBody::Approval {
                turn_id: turn_id()?,
                call_id: call_id()?,
                decision: self.decision.ok_or_else(|| missing("decision"))?,
                approved_by: self.approved_by,
                decided_by: self.decided_by,
                rules: self.rules.clone(),
                facts: ApprovalFacts {
                    cwd: self.cwd.clone(),
                    environment: self.environment.clone(),
                    limits: self.limits,
                    accepted_hunks: self.accepted_hunks.clone(),
                },
            },
            "tool_start" => {
                // A command's start names its command; an edit's has none.
                let command = match (&edit, &self.command) {
                    (None, None) => return Err(missing("command")),
                    (None, Some(command)) => Some(command.clone()),
                    (Some(_), None) => None,
                    (Some(_), Some(_)) => {
                        return Err(LineError::Garbled("an edit `tool_start` record with a `command`".into()))
                    }
                };
                RecordBody::ToolStart {
                    turn_id: turn_id()?,
                    call_id: call_id()?,
                    command,
                    edit,
                    cwd: self.cwd.clone().unwrap_or_default(),
                    sandbox: self.sandbox,
                    mcp: self.mcp.clone(),
                }
            }
            "tool_result" => RecordBody::ToolResult {
                turn_id: turn_id()?,
                call_id: call_id()?,
                status: ToolStatus::parse(status("tool_result")?)
                    .filter(|s| !s.is_edit_recovery() || (self.v >= EDIT_FORMAT_VERSION && self.recovered))
                    .ok_or_else(|| LineError::Garbled("unknown tool_result status".into()))?,
                output: self.output.clone().unwrap_or_default(),
                exit_code: self.exit_code,
                recovered: self.recovered,
            },
            "turn_end" => RecordBody::TurnEnd {
                turn_id: turn_id()?,
                status: TurnStatus::parse(status("turn_end")?)
                    .ok_or_else(|| LineError::Garbled("unknown turn_end status".into()))?,
                reason: self.reason.clone(),
                partial_text: self.partial_text.clone(),
                session_usage: self.session_usage,
            },
            "recovery_ack" => RecordBody::RecoveryAck { turn_id: turn_id()? },
            "rule" => RecordBody::Rule {
                turn_id: turn_id()?,
                call_id: call_id()?,
                rule: self.rule.clone().ok_or_else(|| missing("rule"))?,
            },
            "rule_revoke" => RecordBody::RuleRevoke { id: self.id.clone().ok_or_else(|| missing("id"))? },
            "compaction" => RecordBody::Compaction {
                through_turn_id: self.through_turn_id.clone().ok_or_else(|| missing("through_turn_id"))?,
                summary: self.summary.clone().ok_or_else(|| missing("summary"))?,
                usage: self.usage,
            },
            "model" => RecordBody::Model { model: self.model.clone().ok_or_else(|| missing("model"))? },
            "rewind" => RecordBody::Rewind {
                turn_id: turn_id()?,
                digest: self.digest.clone().ok_or_else(|| missing("digest"))?,
                plan: self.plan.clone().ok_or_else(|| missing("plan"))?,
            },
            "rewind_end" => RecordBody::RewindEnd {
                turn_id: turn_id()?,
                outcomes: self.outcomes.clone().ok_or_else(|| missing("outcomes"))?,
                recovered: self.recovered,
            },
            _ => return Err(LineError::Newer { v: self.v, kind }),
        };
        Ok(Record { v: self.v, seq: self.seq, body })
    }
}

/// Why one line could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// Not a record of any version: bad JSON, missing checksum, wrong shape.
    Garbled(String),
    /// The checksum does not match the bytes.
    Checksum { stored: String, computed: String },
    /// Well-formed, but written by a newer Mino (unknown kind or `v` above ours).
    Newer { v: u32, kind: String },
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Garbled(why) => write!(f, "not a valid record: {why}"),
            Self::Checksum { stored, computed } => {
                write!(f, "checksum mismatch (stored {stored}, computed {computed})")
            }
            Self::Newer { v, kind } => {
                write!(f, "record kind `{kind}` with v {v} was written by a newer Mino")
            }
        }
    }
}

/// Serialises a record into one line, checksum and trailing newline included.
pub fn encode_line(seq: u64, body: &RecordBody) -> Vec<u8> {
    #[derive(Serialize)]
    struct Borrowed<'a> {
        v: u32,
        seq: u64,
        #[serde(flatten)]
        body: &'a RecordBody,
    }
    // Serialising our own types to a Vec cannot fail: no maps with non-string
    // keys, no fallible Serialize impls.
    let mut line = serde_json::to_vec(&Borrowed { v: body.version(), seq, body }).unwrap_or_default();
    debug_assert_eq!(line.last(), Some(&b'}'));
    line.pop();
    let crc = crc32fast::hash(&line);
    line.extend_from_slice(format!(",\"crc\":\"{crc:08x}\"}}\n").as_bytes());
    line
}

/// Parses and verifies one line (without its newline).
///
/// A line that ends in this format's checksum is judged by it first: if the
/// checksum fails, the line is damaged, whatever its `kind` or `v` now say
/// (one flipped byte in `"kind":"user"` must not read as a newer Mino's
/// record). Only a line whose checksum holds can be "written by a newer
/// Mino" (an unknown kind or a higher `v`). A line without the checksum
/// ending is a newer Mino's only if it parses and its `v` is above ours; a
/// newer format that keeps the ending keeps its meaning.
pub fn decode_line(line: &[u8]) -> Result<Record, LineError> {
    // A newer Mino may frame lines differently: recognise it before judging
    // the line garbled (a garbled last line would be cut).
    let (covered, stored) = split_checksum(line).map_err(|e| higher_version(line).unwrap_or(e))?;
    let computed = format!("{:08x}", crc32fast::hash(covered));
    if stored != computed.as_bytes() {
        return Err(LineError::Checksum { stored: String::from_utf8_lossy(stored).into_owned(), computed });
    }
    match serde_json::from_slice::<Line>(line) {
        Ok(parsed) => parsed.into_record(),
        Err(e) => Err(newer_version(line).unwrap_or_else(|| LineError::Garbled(e.to_string()))),
    }
}

fn split_checksum(line: &[u8]) -> Result<(&[u8], &[u8]), LineError> {
    let garbled = || LineError::Garbled("no checksum at the end of the line".into());
    if line.len() < CRC_SUFFIX_LEN || !line.ends_with(b"\"}") {
        return Err(garbled());
    }
    let start = line.len() - CRC_SUFFIX_LEN;
    if &line[start..start + CRC_PREFIX.len()] != CRC_PREFIX {
        return Err(garbled());
    }
    let stored = &line[start + CRC_PREFIX.len()..line.len() - 2];
    Ok((&line[..start], stored))
}

/// The envelope fields every version agrees on; read when a full parse
/// fails, to tell "written by a newer Mino" from "garbled".
#[derive(Deserialize)]
struct Envelope {
    v: u32,
    kind: String,
}

/// For a line whose checksum holds: an unknown kind or a higher `v`.
fn newer_version(line: &[u8]) -> Option<LineError> {
    let env: Envelope = serde_json::from_slice(line).ok()?;
    if env.v > EDIT_FORMAT_VERSION || !KNOWN_KINDS.contains(&env.kind.as_str()) {
        Some(LineError::Newer { v: env.v, kind: env.kind })
    } else {
        None
    }
}

/// For a line without this format's checksum ending: only a higher `v`
/// makes it a newer Mino's (an unknown kind without a checksum is damage).
fn higher_version(line: &[u8]) -> Option<LineError> {
    let env: Envelope = serde_json::from_slice(line).ok()?;
    (env.v > EDIT_FORMAT_VERSION).then_some(LineError::Newer { v: env.v, kind: env.kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> RecordBody {
        RecordBody::User { turn_id: "turn-1".into(), text: "Add milk to shopping.txt.".into(), images: Vec::new() }
    }

    #[test]
    fn a_line_round_trips_and_ends_with_its_checksum() {
        let line = encode_line(2, &user());
        assert_eq!(line.last(), Some(&b'\n'));
        let text = std::str::from_utf8(&line).unwrap();
        assert!(text.starts_with(r#"{"v":2,"seq":2,"kind":"user","turn_id":"turn-1""#), "{text}");
        let record = decode_line(&line[..line.len() - 1]).unwrap();
        assert_eq!(record.seq, 2);
        assert!(matches!(record.body, RecordBody::User { ref text, .. } if text == "Add milk to shopping.txt."));
    }

    #[test]
    fn a_flipped_byte_is_a_checksum_mismatch() {
        let mut line = encode_line(2, &user());
        line.pop();
        let at = line.iter().position(|&b| b == b'm').unwrap();
        line[at] = b'n';
        assert!(matches!(decode_line(&line), Err(LineError::Checksum { .. })));
    }

    #[test]
    fn an_unknown_kind_with_a_valid_checksum_is_newer() {
        let mut line = br#"{"v":2,"seq":3,"kind":"checkpoint","turn_id":"turn-1""#.to_vec();
        let crc = crc32fast::hash(&line);
        line.extend_from_slice(format!(",\"crc\":\"{crc:08x}\"}}").as_bytes());
        assert_eq!(decode_line(&line).err(), Some(LineError::Newer { v: 2, kind: "checkpoint".into() }));
    }

    #[test]
    fn a_flipped_byte_in_the_kind_is_damage_not_a_newer_record() {
        let mut line = encode_line(2, &user());
        line.pop();
        let at = line.windows(6).position(|w| w == b"\"user\"").unwrap() + 4;
        line[at] = b'z'; // "usez": unknown, but the checksum says the line changed
        assert!(matches!(decode_line(&line), Err(LineError::Checksum { .. })), "{:?}", decode_line(&line));
        // Same for the version: a 2 flipped to a 3 is one bit.
        let mut line = encode_line(2, &user());
        line.pop();
        line[5] = b'3';
        assert!(line.starts_with(b"{\"v\":3,"));
        assert!(matches!(decode_line(&line), Err(LineError::Checksum { .. })), "{:?}", decode_line(&line));
        // Without the checksum ending, an unknown kind at our version is damage too.
        let line = br#"{"v":2,"seq":3,"kind":"checkpoint","turn_id":"turn-1","crd":"00000000"}"#;
        assert!(matches!(decode_line(line), Err(LineError::Garbled(_))), "{:?}", decode_line(line));
    }

    #[test]
    fn a_higher_version_is_newer() {
        let mut line = br#"{"v":4,"seq":3,"kind":"user","turn_id":"turn-1","text":"x""#.to_vec();
        let crc = crc32fast::hash(&line);
        line.extend_from_slice(format!(",\"crc\":\"{crc:08x}\"}}").as_bytes());
        assert!(matches!(decode_line(&line), Err(LineError::Newer { v: 4, .. })));
    }

    /// The edit records of docs/journal.md ("Edit records"), with their
    /// real checksums: read, and written back byte for byte.
    #[test]
    fn the_documented_edit_records_round_trip() {
        let start = r#"{"v":3,"seq":5,"kind":"tool_start","turn_id":"turn-1","call_id":"call_1","tool":"edit_file","path":"/home/ana/shop/shopping.txt","leaves_workspace":false,"new_file":false,"before_sha256":"7c8beebc22905c8354f8e7699bf2d99e4e4166b7c8593ed0ebb983dbece88b55","before_size":17,"after_sha256":"b5fc8ac72dced5af7d5a93ee796f0101728adfc26e229e64c6476953407a5963","after_size":22,"cwd":"/home/ana/shop","crc":"da6094be"}"#;
        let result = r#"{"v":3,"seq":6,"kind":"tool_result","turn_id":"turn-1","call_id":"call_1","status":"applied","output":"Mino stopped while applying this edit; on reopening, /home/ana/shop/shopping.txt held exactly the edited content (its sha256 matched the approved edit's), so the edit was applied. It was not repeated.","recovered":true,"crc":"591fcdaf"}"#;
        for line in [start, result] {
            let record = decode_line(line.as_bytes()).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(record.v, 3);
            let written = encode_line(record.seq, &record.body);
            assert_eq!(std::str::from_utf8(&written).unwrap(), format!("{line}\n"));
        }
        let RecordBody::ToolStart { command: None, edit: Some(edit), .. } = decode_line(start.as_bytes()).unwrap().body
        else {
            panic!("an edit start")
        };
        assert_eq!(edit.tool, EditTool::EditFile);
        assert_eq!(edit.before_size, Some(17));
    }

    fn with_crc(covered: &str) -> Vec<u8> {
        let crc = crc32fast::hash(covered.as_bytes());
        format!("{covered},\"crc\":\"{crc:08x}\"}}").into_bytes()
    }

    #[test]
    fn edit_records_are_only_valid_as_v3() {
        let start = r#"{"v":2,"seq":5,"kind":"tool_start","turn_id":"turn-1","call_id":"call_1","tool":"write_file","path":"/p/a","leaves_workspace":false,"new_file":true,"after_sha256":"b5fc8ac72dced5af7d5a93ee796f0101728adfc26e229e64c6476953407a5963","after_size":22,"cwd":"/p""#;
        assert!(matches!(decode_line(&with_crc(start)), Err(LineError::Garbled(_))));
        assert!(decode_line(&with_crc(&start.replacen(r#""v":2"#, r#""v":3"#, 1))).is_ok());
        let applied = r#"{"v":2,"seq":6,"kind":"tool_result","turn_id":"turn-1","call_id":"call_1","status":"applied","output":"x","recovered":true"#;
        assert!(matches!(decode_line(&with_crc(applied)), Err(LineError::Garbled(_))));
        assert!(decode_line(&with_crc(&applied.replacen(r#""v":2"#, r#""v":3"#, 1))).is_ok());
        let run = r#"{"v":3,"seq":6,"kind":"tool_result","turn_id":"turn-1","call_id":"call_1","status":"not_applied","output":"x""#;
        assert!(matches!(decode_line(&with_crc(run)), Err(LineError::Garbled(_))), "only recovery writes it");
        // A command's start and every other record keep v 2.
        let bash = RecordBody::ToolStart {
            turn_id: "turn-1".into(),
            call_id: "call_1".into(),
            command: Some("ls".into()),
            edit: None,
            cwd: "/p".into(),
            sandbox: None,
            mcp: None,
        };
        assert!(encode_line(3, &bash).starts_with(br#"{"v":2,"#));
    }

    #[test]
    fn a_cut_line_is_garbled() {
        let line = encode_line(2, &user());
        assert!(matches!(decode_line(&line[..20]), Err(LineError::Garbled(_))));
    }
}
