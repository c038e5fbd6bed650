//! The file-edit tools, `edit_file` and `write_file`: exact-text
//! replacement and whole-file writes the person approves as a diff, written
//! atomically, and provable after a crash.
//!
//! A call goes through three steps, each a function of this module:
//!
//! 1. [`propose`] (pure, writes nothing): resolves the path in the
//!    [`Workspace`], reads the file, computes the new content and returns an
//!    [`EditProposal`]: the resolved path, whether it leaves the workspace,
//!    whether the file is new, the unified diff, and the sha256 and size of
//!    the content before and after. The diff is what the person approves;
//!    [`EditProposal::start_record`] is what the `tool_start` record holds.
//! 2. [`apply`] (after the approval and the synced `tool_start`): re-reads
//!    the file and refuses, writing nothing, when it no longer holds what was
//!    approved; otherwise replaces it atomically and durably.
//! 3. [`recover`] (on reopening, for a `tool_start` without a result): looks
//!    at the file and says whether it holds the edited content (`applied`),
//!    the content from before (`not_applied`), or neither (`unknown`).
//!
//! Refusals are [`EditError`]s whose text is written for the model: what is
//! wrong and what to do instead. See docs/journal.md ("Edit records") for the
//! records and docs/reliability.md ("File edits") for what the write
//! guarantees.

mod apply;
mod recovery;
mod workspace;

use std::ffi::OsStr;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub use apply::{apply, restore, Applied, ApplyError, RestoreError};
pub use recovery::{file_now, recover, EditRecovery, FileNow};
pub use workspace::{ResolvedPath, Workspace};

/// The tool names, as the model calls them and the records name them.
pub const EDIT_FILE: &str = "edit_file";
pub const WRITE_FILE: &str = "write_file";

/// The largest file the tools read or write: 4 MiB. Larger files are
/// refused (edit them with a command); the bound keeps a proposal's diff,
/// the approval request and the hashing of one call small.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The most diff text a result tells the model; the rest is cut with a note
/// (the approval carries the whole diff). As the bash tool's output limit.
pub const RESULT_DIFF_LIMIT: usize = crate::bash::DEFAULT_OUTPUT_LIMIT;

/// Lines of context around each change in the unified diff.
const DIFF_CONTEXT_LINES: usize = 3;

/// How long the diff algorithm may search for the smallest diff before
/// settling for a coarser one (still exact): bounds the time a pathological
/// pair of 4 MiB files can take.
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether `name` is one of the edit tools.
pub fn is_edit_tool(name: &str) -> bool {
    name == EDIT_FILE || name == WRITE_FILE
}

/// The `edit_file` function tool definition, in the Responses API's flat form
/// with `strict: true` (every property required, `additionalProperties: false`),
/// as `model::request::bash_tool`.
pub fn edit_file_tool() -> Value {
    json!({
        "type": "function",
        "name": EDIT_FILE,
        "description": "Replace exact text in an existing UTF-8 text file in the project's working directory. \
            `old_text` must occur exactly once unless `replace_all` is true. The person approves the resulting diff \
            before the file is written.",
        "strict": true,
        "parameters": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file's path, relative to the project's working directory."
                },
                "old_text": {
                    "type": "string",
                    "description": "The exact text to replace, including whitespace and indentation. Include enough \
                        surrounding lines to make it unique in the file."
                },
                "new_text": {
                    "type": "string",
                    "description": "The text that replaces it."
                },
                "replace_all": {
                    "type": "boolean",
                    "description": "true to replace every occurrence of old_text; false to replace its only one."
                }
            },
            "required": ["path", "old_text", "new_text", "replace_all"],
            "additionalProperties": false
        }
    })
}

/// The `write_file` function tool definition (same form as [`edit_file_tool`]).
pub fn write_file_tool() -> Value {
    json!({
        "type": "function",
        "name": WRITE_FILE,
        "description": "Create a UTF-8 text file in the project's working directory, or replace all of an existing \
            one's content. The person approves the resulting diff before the file is written. To change part of a \
            file, use edit_file.",
        "strict": true,
        "parameters": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file's path, relative to the project's working directory. Its directory \
                        must exist."
                },
                "content": {
                    "type": "string",
                    "description": "The file's whole new content."
                }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }
    })
}

/// The one-line summary of an edit call, shown where a command would be
/// (`command` of `mino/approvalRequest`, `mino/toolStarted`, history):
/// the tool and the path as the model gave it, e.g. `edit_file src/main.rs`.
pub fn summary(tool: EditTool, path: &str) -> String {
    format!("{} {path}", tool.as_str())
}

/// The start of the warning [`apply`] adds after the diff when syncing the
/// directory failed.
const UNSYNCED_WARNING: &str = "\nWarning: the new content is in place, but syncing its directory failed";

/// The diff in a `success` result's output as [`apply`] writes it (the
/// line saying what was done, a blank line, the diff, maybe a warning):
/// what history shows as the applied diff.
pub fn diff_of_output(output: &str) -> Option<&str> {
    let (_, rest) = output.split_once("\n\n")?;
    let diff = rest.rfind(UNSYNCED_WARNING).map_or(rest, |at| &rest[..at]);
    (!diff.is_empty()).then_some(diff)
}

/// Which edit tool a call or record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditTool {
    EditFile,
    WriteFile,
}

impl EditTool {
    pub fn from_name(name: &str) -> Option<EditTool> {
        match name {
            EDIT_FILE => Some(EditTool::EditFile),
            WRITE_FILE => Some(EditTool::WriteFile),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EditTool::EditFile => EDIT_FILE,
            EditTool::WriteFile => WRITE_FILE,
        }
    }
}

/// A call's arguments, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditArgs {
    Edit { path: String, old_text: String, new_text: String, replace_all: bool },
    Write { path: String, content: String },
}

impl EditArgs {
    /// Reads a call of `tool` from its JSON `arguments`; the error is written
    /// for the model, which sent them.
    pub fn parse(tool: EditTool, arguments: &str) -> Result<EditArgs, EditError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Edit {
            path: String,
            old_text: String,
            new_text: String,
            #[serde(default)]
            replace_all: Option<bool>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Write {
            path: String,
            content: String,
        }
        let bad = |e: serde_json::Error, shape: &str| {
            EditError::BadArguments(format!(
                "The {} tool's arguments are not valid ({e}); send {shape}.",
                tool.as_str()
            ))
        };
        match tool {
            EditTool::EditFile => {
                let a: Edit = serde_json::from_str(arguments).map_err(|e| {
                    bad(e, r#"{"path": "...", "old_text": "...", "new_text": "...", "replace_all": false}"#)
                })?;
                Ok(EditArgs::Edit {
                    path: a.path,
                    old_text: a.old_text,
                    new_text: a.new_text,
                    replace_all: a.replace_all.unwrap_or(false),
                })
            }
            EditTool::WriteFile => {
                let a: Write =
                    serde_json::from_str(arguments).map_err(|e| bad(e, r#"{"path": "...", "content": "..."}"#))?;
                Ok(EditArgs::Write { path: a.path, content: a.content })
            }
        }
    }

    pub fn tool(&self) -> EditTool {
        match self {
            EditArgs::Edit { .. } => EditTool::EditFile,
            EditArgs::Write { .. } => EditTool::WriteFile,
        }
    }

    /// The path as the model gave it.
    pub fn path(&self) -> &str {
        match self {
            EditArgs::Edit { path, .. } | EditArgs::Write { path, .. } => path,
        }
    }
}

/// Why a call is refused before anything is written. The text is the
/// call's result for the model: it names what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("{0}")]
    BadArguments(String),
    #[error("The path is empty; give the file's path relative to the project's working directory.")]
    EmptyPath,
    #[error("`{path}` does not name a file (it ends in `..`, `.` or `/`); give the path of a file.")]
    NotAFilePath { path: String },
    #[error("The directory of `{path}` ({dir}) does not exist; create it first (for example with `mkdir -p`), then write the file.")]
    NoDirectory { path: String, dir: String },
    #[error(
        "`{path}` is a symbolic link to a file that does not exist ({target}); write to the path you mean directly."
    )]
    DanglingLink { path: String, target: String },
    #[error("`{path}` leads to a name that is not valid UTF-8 ({resolved}); the edit tools only write paths they can record exactly. Use a command instead.")]
    PathNotUtf8 { path: String, resolved: String },
    #[error("The directory of `{path}` ({dir}) kept changing while Mino resolved it (a directory on the way was replaced, for example by a symbolic link); nothing was read or written. Propose the edit again once nothing is moving it.")]
    Unstable { path: String, dir: String },
    #[error("This kernel lacks openat2(2) (Linux 5.6 or later), which the edit tools need to write beneath a directory without a race; nothing was written. Change the file with a command instead.")]
    NoOpenat2,
    #[error("`{path}` is {what}, not a regular file; the edit tools only change regular files.")]
    NotRegularFile { path: String, what: &'static str },
    #[error("`{path}` does not exist; use write_file to create it.")]
    NotFound { path: String },
    #[error(
        "`{path}` is {size} bytes, more than the edit tools' limit of {limit} bytes (4 MiB); change it with a command instead."
    )]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error(
        "The new content of `{path}` would be {size} bytes, more than the edit tools' limit of {limit} bytes (4 MiB)."
    )]
    ResultTooLarge { path: String, size: u64, limit: u64 },
    #[error("`{path}` is not a UTF-8 text file ({why}); the edit tools only change text files.")]
    Binary { path: String, why: String },
    #[error("`old_text` is empty; give the exact text to replace, or use write_file to replace the whole file.")]
    EmptyOldText,
    #[error("`old_text` was not found in `{path}`. Nothing was changed. Read the file again and copy the exact text, including whitespace and indentation.")]
    OldTextAbsent { path: String },
    #[error("`old_text` occurs {count} times in `{path}`. Nothing was changed. Include more surrounding lines so it occurs exactly once, or set replace_all to true to replace all {count}.")]
    Ambiguous { path: String, count: usize },
    #[error("`{path}` already holds exactly this content; nothing to change.")]
    NoChange { path: String },
    #[error("Could not {action} `{path}`: {source}.")]
    Io {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The sha256 and size of one content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentFacts {
    /// 64 lowercase hex digits.
    pub sha256: String,
    pub size: u64,
}

impl ContentFacts {
    pub fn of(bytes: &[u8]) -> ContentFacts {
        ContentFacts { sha256: sha256_hex(bytes), size: bytes.len() as u64 }
    }
}

/// sha256 of `bytes` as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest.iter() {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// What the approval request carries for one edit call, and what
/// [`apply`] writes. Built by [`propose`]; nothing is written to make it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditProposal {
    pub tool: EditTool,
    /// The file, every symbolic link resolved: what is written.
    pub path: PathBuf,
    /// The path as the model gave it.
    pub requested_path: String,
    /// `path` is outside the session's directory: the caller decides whether
    /// to ask (showing `path`) or refuse.
    pub leaves_workspace: bool,
    /// The file does not exist yet (only `write_file` creates files).
    pub new_file: bool,
    /// The content now; `None` for a new file.
    pub before: Option<ContentFacts>,
    pub after: ContentFacts,
    /// `edit_file`: occurrences replaced (1 unless `replace_all`); `write_file`: 0.
    pub replacements: usize,
    /// The unified diff from the content now (or `/dev/null`) to the new
    /// content, headed `a/<path>` / `b/<path>` with the path relative to the
    /// workspace when inside it: what the person approves.
    pub diff: String,
    /// Each hunk of `diff`, in its order: the bytes of the content before
    /// that it replaces and what replaces them, so that the edit can be
    /// narrowed to some hunks ([`EditProposal::narrowed`]).
    hunks: Vec<HunkEdit>,
    /// Set when the person accepted only some hunks of the proposed diff:
    /// this proposal is those hunks alone.
    pub narrowed: Option<Narrowed>,
    /// The path as the diff's headers name it.
    display_path: String,
    /// The file's permission bits now (`None` for a new file), kept by [`apply`].
    mode: Option<u32>,
    /// Device and inode of the directory holding `path` when it was
    /// proposed: [`apply`] writes only into that same directory.
    dir_id: (u64, u64),
    /// The new content (at most [`MAX_FILE_BYTES`]).
    after_content: String,
    /// The content it replaces, as read for the diff (`None` for a new file).
    before_content: Option<String>,
    /// The file is open in the person's editor with changes not saved:
    /// `before_content` (and the diff) is the editor's text, not the disk's
    /// (`before` stays the disk's, which [`apply`] checks and recovery
    /// compares), so applying writes those changes too.
    pub from_editor: bool,
    /// The disk's content when it differs from `before_content` (the edit
    /// was made to the editor's text): what a rewind restores.
    disk_content: Option<String>,
}

impl EditProposal {
    /// The new content that [`apply`] writes.
    pub fn after_content(&self) -> &str {
        &self.after_content
    }

    /// The content the edit replaces, as it was read to make the proposal
    /// (`None` for a new file): what an editor's diff view shows on the left.
    pub fn before_content(&self) -> Option<&str> {
        self.before_content.as_deref()
    }

    /// The file's content on disk at the proposal (`None` for a new file):
    /// the bytes whose sha256 is `before`, which a rewind puts back.
    pub fn before_on_disk(&self) -> Option<&str> {
        self.disk_content.as_deref().or(self.before_content.as_deref())
    }

    /// The edit fields of this call's `tool_start` record (docs/journal.md, "Edit records").
    pub fn start_record(&self) -> EditStartRecord {
        EditStartRecord {
            tool: self.tool,
            path: self.path.display().to_string(),
            leaves_workspace: self.leaves_workspace,
            new_file: self.new_file,
            before_sha256: self.before.as_ref().map(|b| b.sha256.clone()),
            before_size: self.before.as_ref().map(|b| b.size),
            after_sha256: self.after.sha256.clone(),
            after_size: self.after.size,
        }
    }
}

/// One hunk of a proposal's diff, as an edit of the content before: the
/// byte range of it the hunk changes and the text that replaces it (the
/// hunk's context lines are the same on both sides and are left out).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HunkEdit {
    old: std::ops::Range<usize>,
    new_text: String,
}

/// Which hunks of the proposed diff a narrowed proposal keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowed {
    /// 0-based, ascending, distinct.
    pub accepted: Vec<usize>,
    /// How many hunks the proposed diff had.
    pub of: usize,
}

/// Why a list of accepted hunks cannot narrow a proposal; the text is for
/// the person's client (nothing was decided).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NarrowError {
    #[error("no hunk was accepted: to write nothing, deny the edit")]
    NoneAccepted,
    #[error("hunk {index} does not exist: the proposed diff has {of} hunk(s), numbered from 0")]
    OutOfRange { index: usize, of: usize },
}

impl EditProposal {
    /// How many hunks the proposed diff has (the `@@` headers of `diff`).
    pub fn hunk_count(&self) -> usize {
        self.hunks.len()
    }

    /// This proposal with only the hunks `accepted` (0-based indices into
    /// the diff's hunks, in any order, repeats ignored) applied to the
    /// content before: the new content, its hash and size, and its diff are
    /// computed afresh from the content the proposal was made from, so what
    /// [`apply`] writes and the `tool_start` records is exactly those hunks.
    /// Accepting every hunk gives the proposal back unchanged.
    pub fn narrowed(&self, accepted: &[usize]) -> Result<EditProposal, NarrowError> {
        let of = self.hunks.len();
        let mut accepted = accepted.to_vec();
        accepted.sort_unstable();
        accepted.dedup();
        if accepted.is_empty() {
            return Err(NarrowError::NoneAccepted);
        }
        if let Some(&index) = accepted.iter().find(|&&i| i >= of) {
            return Err(NarrowError::OutOfRange { index, of });
        }
        if accepted.len() == of {
            return Ok(self.clone());
        }
        let before = self.before_content.as_deref().unwrap_or("");
        let mut after = String::with_capacity(before.len());
        let mut at = 0;
        for hunk in accepted.iter().map(|&i| &self.hunks[i]) {
            after.push_str(&before[at..hunk.old.start]);
            after.push_str(&hunk.new_text);
            at = hunk.old.end;
        }
        after.push_str(&before[at..]);
        let (diff, hunks) = unified_diff(&self.display_path, self.before_content.as_deref(), &after);
        Ok(EditProposal {
            after: ContentFacts::of(after.as_bytes()),
            diff,
            hunks,
            narrowed: Some(Narrowed { accepted, of }),
            after_content: after,
            ..self.clone()
        })
    }
}

/// The edit fields of a `tool_start` record, as docs/journal.md ("Edit
/// records") specifies them; the record adds `turn_id`, `call_id`, `cwd`.
/// Serialises to exactly those fields, so the record type can
/// `#[serde(flatten)]` it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditStartRecord {
    pub tool: EditTool,
    /// The resolved absolute path written.
    pub path: String,
    pub leaves_workspace: bool,
    pub new_file: bool,
    /// Present exactly when `new_file` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_size: Option<u64>,
    pub after_sha256: String,
    pub after_size: u64,
}

impl EditStartRecord {
    /// Checks what the record's format requires beyond its fields' types
    /// (for the journal reader): an absolute `path`; `before_sha256` and
    /// `before_size` present exactly when `new_file` is false; each hash 64
    /// lowercase hex digits; sizes within [`MAX_FILE_BYTES`]. The error
    /// names the first violation.
    pub fn check(&self) -> Result<(), String> {
        let is_hash = |h: &str| h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !Path::new(&self.path).is_absolute() {
            return Err(format!("edit `path` {:?} is not absolute", self.path));
        }
        match (self.new_file, &self.before_sha256, self.before_size) {
            (true, None, None) => {}
            (true, _, _) => return Err("a new file's edit record has `before_sha256` or `before_size`".into()),
            (false, Some(hash), Some(size)) => {
                if !is_hash(hash) {
                    return Err("`before_sha256` is not 64 lowercase hex digits".into());
                }
                if size > MAX_FILE_BYTES {
                    return Err(format!("`before_size` {size} is above {MAX_FILE_BYTES}"));
                }
            }
            (false, _, _) => return Err("an existing file's edit record lacks `before_sha256` or `before_size`".into()),
        }
        if !is_hash(&self.after_sha256) {
            return Err("`after_sha256` is not 64 lowercase hex digits".into());
        }
        if self.after_size > MAX_FILE_BYTES {
            return Err(format!("`after_size` {} is above {MAX_FILE_BYTES}", self.after_size));
        }
        Ok(())
    }
}

/// The file's state as the tools see it.
enum Current {
    Absent,
    Text { content: String, mode: u32 },
}

/// Builds the proposal for one call: resolves and reads the file and
/// computes the new content and the diff. Writes nothing. Refusals (absent
/// or ambiguous `old_text`, binary or oversized files, a missing directory)
/// are [`EditError`]s; a path outside the workspace is not refused here but
/// reported in [`EditProposal::leaves_workspace`].
pub fn propose(workspace: &Workspace, args: &EditArgs) -> Result<EditProposal, EditError> {
    propose_or_refuse(workspace, args).map_err(|refusal| refusal.error)
}

/// Why no proposal could be made, and whether the refusal is about a path
/// outside the workspace.
#[derive(Debug)]
pub struct Refusal {
    pub error: EditError,
    /// The path (absolute, as far as it could be resolved) when it leads out
    /// of the workspace. The refusal then tells something about a file
    /// outside (whether it exists, holds `old_text`, its size or kind), which
    /// the model may learn only once the person approved: the caller asks
    /// first, as it asks for any edit there.
    pub outside: Option<PathBuf>,
}

/// [`propose`], saying whether a refusal concerns a path outside the workspace.
pub fn propose_or_refuse(workspace: &Workspace, args: &EditArgs) -> Result<EditProposal, Refusal> {
    propose_with_editor_text(workspace, args, None)
}

/// [`propose_or_refuse`], against `editor_text` when it is the text the
/// person's editor holds of the file ([`crate::buffers::OpenBuffers`]) and
/// differs from the disk's: the edit is then made to what the person sees
/// ([`EditProposal::from_editor`]). Text that is not the file's as the tools
/// take it (over [`MAX_FILE_BYTES`], a NUL byte) is not used, nor for a file
/// outside the workspace or absent from the disk.
pub fn propose_with_editor_text(
    workspace: &Workspace,
    args: &EditArgs,
    editor_text: Option<&str>,
) -> Result<EditProposal, Refusal> {
    let resolved = match workspace.resolve(args.path()) {
        Ok(resolved) => resolved,
        Err(error) => {
            let outside = match &error {
                // A link in the workspace to nothing outside it.
                EditError::DanglingLink { target, .. }
                    if !Path::new(target).is_absolute() || !Path::new(target).starts_with(workspace.root()) =>
                {
                    let target = Path::new(target);
                    let lexical_inside =
                        target.is_relative() && !target.components().any(|c| c == std::path::Component::ParentDir);
                    (!lexical_inside).then(|| target.to_path_buf())
                }
                _ => workspace.outside_hint(args.path()),
            };
            return Err(Refusal { error, outside });
        }
    };
    let outside = resolved.leaves_workspace.then(|| resolved.path.clone());
    let editor_text = editor_text.filter(|_| !resolved.leaves_workspace);
    propose_resolved(workspace, args, resolved, editor_text).map_err(|error| Refusal { error, outside })
}

fn propose_resolved(
    workspace: &Workspace,
    args: &EditArgs,
    resolved: ResolvedPath,
    editor_text: Option<&str>,
) -> Result<EditProposal, EditError> {
    let display = workspace.display_path(&resolved.path);
    // Read through the handle the path was resolved to, so what is read is
    // what `leaves_workspace` describes, whatever is renamed meanwhile.
    let current = read_current(resolved.dir.fd(), resolved.name(), &display)?;
    let (on_disk, mode) = match &current {
        Current::Absent => (None, None),
        Current::Text { content, mode } => (Some(content.as_str()), Some(*mode)),
    };
    let editor_text = editor_text.filter(|text| {
        on_disk.is_some_and(|disk| disk != *text) && text.len() as u64 <= MAX_FILE_BYTES && !text.contains('\0')
    });
    // What the edit is made to: the editor's unsaved text, else the disk's.
    let before = editor_text.or(on_disk);
    let (after_content, replacements) = match args {
        EditArgs::Edit { old_text, new_text, replace_all, .. } => {
            let Some(before) = before else {
                return Err(EditError::NotFound { path: display });
            };
            if old_text.is_empty() {
                return Err(EditError::EmptyOldText);
            }
            let crlf = is_crlf(before);
            let old_text = with_line_endings(old_text, crlf);
            let new_text = with_line_endings(new_text, crlf);
            let count = occurrences(before, &old_text);
            if count == 0 {
                return Err(EditError::OldTextAbsent { path: display });
            }
            if count > 1 && !replace_all {
                return Err(EditError::Ambiguous { path: display, count });
            }
            let replaced = before.matches(old_text.as_str()).count();
            (before.replace(old_text.as_str(), &new_text), replaced)
        }
        EditArgs::Write { content, .. } => {
            let crlf = before.is_some_and(is_crlf);
            (with_line_endings(content, crlf), 0)
        }
    };
    if after_content.len() as u64 > MAX_FILE_BYTES {
        return Err(EditError::ResultTooLarge {
            path: display,
            size: after_content.len() as u64,
            limit: MAX_FILE_BYTES,
        });
    }
    if before == Some(after_content.as_str()) {
        return Err(EditError::NoChange { path: display });
    }
    let (diff, hunks) = unified_diff(&display, before, &after_content);
    Ok(EditProposal {
        tool: args.tool(),
        path: resolved.path,
        requested_path: args.path().to_string(),
        leaves_workspace: resolved.leaves_workspace,
        new_file: before.is_none(),
        // The disk's: what `apply` checks is still there, and recovery compares.
        before: on_disk.map(|b| ContentFacts::of(b.as_bytes())),
        after: ContentFacts::of(after_content.as_bytes()),
        replacements,
        diff,
        hunks,
        narrowed: None,
        display_path: display,
        mode,
        dir_id: resolved.dir.id,
        after_content,
        before_content: before.map(str::to_string),
        from_editor: editor_text.is_some(),
        disk_content: editor_text.and(on_disk).map(str::to_string),
    })
}

/// Reads `name` in `dir` (resolved, so its last component is no symbolic
/// link) as the tools accept it: absent, or a regular UTF-8 text file
/// without NUL bytes of at most [`MAX_FILE_BYTES`].
fn read_current(dir: BorrowedFd<'_>, name: &OsStr, display: &str) -> Result<Current, EditError> {
    use std::os::unix::fs::PermissionsExt;
    let Some((bytes, meta)) = read_bounded(dir, name).map_err(|e| match e {
        ReadError::Io(source) => EditError::Io { action: "read", path: display.to_string(), source },
        ReadError::NotRegular(what) => EditError::NotRegularFile { path: display.to_string(), what },
        ReadError::TooLarge(size) => EditError::TooLarge { path: display.to_string(), size, limit: MAX_FILE_BYTES },
    })?
    else {
        return Ok(Current::Absent);
    };
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(EditError::Binary { path: display.to_string(), why: format!("it has a NUL byte at offset {at}") });
    }
    let content = String::from_utf8(bytes).map_err(|e| EditError::Binary {
        path: display.to_string(),
        why: format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
    })?;
    Ok(Current::Text { content, mode: meta.permissions().mode() & 0o7777 })
}

enum ReadError {
    Io(std::io::Error),
    NotRegular(&'static str),
    TooLarge(u64),
}

/// The bytes of the regular file `name` in `dir` (not following a
/// symbolic link there), or `None` when nothing is there. Reads at most
/// [`MAX_FILE_BYTES`]: a larger file is [`ReadError::TooLarge`] (checked on
/// the open file and again on what was read, so a file growing meanwhile
/// cannot make it read more). Opened non-blocking so a FIFO planted at the
/// path cannot hang the call.
fn read_bounded(dir: BorrowedFd<'_>, name: &OsStr) -> Result<Option<(Vec<u8>, std::fs::Metadata)>, ReadError> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let file = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => std::fs::File::from(fd),
        Err(Errno::NOENT) => return Ok(None),
        // O_NOFOLLOW on a symbolic link.
        Err(Errno::LOOP) => return Err(ReadError::NotRegular("a symbolic link")),
        // A socket cannot be opened.
        Err(Errno::NXIO) => return Err(ReadError::NotRegular("a socket")),
        Err(e) => return Err(ReadError::Io(e.into())),
    };
    let meta = file.metadata().map_err(ReadError::Io)?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(ReadError::NotRegular(if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a device"
        }));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge(bytes.len() as u64));
    }
    Ok(Some((bytes, meta)))
}

/// A file is CRLF when it has line breaks and every one is `\r\n`. Only
/// then are the texts given converted (see [`with_line_endings`]); a file
/// with mixed or LF endings takes the texts exactly as given.
fn is_crlf(content: &str) -> bool {
    let lf = content.matches('\n').count();
    lf > 0 && content.matches("\r\n").count() == lf
}

/// The line-ending rule: for a CRLF file, every line break of a text the
/// model gave (`old_text`, `new_text`, `content`) becomes `\r\n` (a `\r\n`
/// stays one), so a model that writes `\n` matches the file's lines and its
/// new lines keep the file's convention. Otherwise the text is unchanged.
fn with_line_endings(text: &str, crlf: bool) -> String {
    if crlf {
        text.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        text.to_string()
    }
}

/// Places `needle` starts in `haystack`, overlapping ones included: `aa`
/// occurs twice in `aaa`, and is just as ambiguous there.
fn occurrences(haystack: &str, needle: &str) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(at) = haystack[from..].find(needle) {
        count += 1;
        // Next char boundary after this start.
        let start = from + at;
        from = start + haystack[start..].chars().next().map_or(1, char::len_utf8);
        if from > haystack.len() {
            break;
        }
    }
    count
}

/// The unified diff shown for approval and returned to the model, and its
/// hunks as edits of `before`, both from one diff (the diff's deadline could
/// make a second run differ), so hunk `i` of the text is `hunks[i]`.
fn unified_diff(display: &str, before: Option<&str>, after: &str) -> (String, Vec<HunkEdit>) {
    let old = before.unwrap_or("");
    let diff = similar::TextDiff::configure().timeout(DIFF_TIMEOUT).diff_lines(old, after);
    let old_header = if before.is_some() { format!("a/{display}") } else { "/dev/null".to_string() };
    let mut unified = diff.unified_diff();
    unified.context_radius(DIFF_CONTEXT_LINES).header(&old_header, &format!("b/{display}"));
    // Byte offsets of each line of either side.
    let offsets = |lines: &[&str]| -> Vec<usize> {
        let mut at = vec![0];
        for line in lines {
            at.push(at[at.len() - 1] + line.len());
        }
        at
    };
    let (old_at, new_at) = (offsets(diff.old_slices()), offsets(diff.new_slices()));
    let hunks = unified
        .iter_hunks()
        .filter_map(|hunk| {
            let changes = hunk.ops().iter().filter(|op| op.tag() != similar::DiffTag::Equal);
            // The smallest ranges holding every change: (start, end), widened from nothing.
            let (mut o, mut n) = ((usize::MAX, 0), (usize::MAX, 0));
            for op in changes {
                o = (o.0.min(op.old_range().start), o.1.max(op.old_range().end));
                n = (n.0.min(op.new_range().start), n.1.max(op.new_range().end));
            }
            let (o, n) = (o.0..o.1, n.0..n.1);
            (o.start != usize::MAX).then(|| HunkEdit {
                old: old_at[o.start]..old_at[o.end],
                new_text: after[new_at[n.start]..new_at[n.end]].to_string(),
            })
        })
        .collect();
    (unified.to_string(), hunks)
}

/// `diff` cut to [`RESULT_DIFF_LIMIT`] bytes (at a line break when one is
/// near), with a note of what was left out.
fn capped_diff(diff: &str) -> String {
    if diff.len() <= RESULT_DIFF_LIMIT {
        return diff.to_string();
    }
    let mut end = RESULT_DIFF_LIMIT;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').map_or(end, |at| at + 1);
    format!("{}[diff cut: {} more bytes not shown]\n", &diff[..end], diff.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_is_read_back_from_a_result() {
        let diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
        let output = format!("Edited x: replaced 1 occurrence of old_text.\n\n{diff}");
        assert_eq!(diff_of_output(&output), Some(diff));
        let warned = format!("{output}{UNSYNCED_WARNING} (EIO); after a power loss …\n");
        assert_eq!(diff_of_output(&warned), Some(diff));
        assert_eq!(diff_of_output("Not applied: nothing was written."), None);
    }

    /// A proposal for `write_file` of `after` over a file holding `before`.
    fn proposal(before: &str, after: &str) -> (tempfile::TempDir, EditProposal) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), before).unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let args = EditArgs::Write { path: "f.txt".into(), content: after.into() };
        let proposal = propose(&workspace, &args).unwrap();
        (dir, proposal)
    }

    #[test]
    fn a_proposal_narrowed_to_some_hunks_is_those_hunks_alone_applied_to_the_content_before() {
        let before: String = (1..=30).map(|n| format!("{n}\n")).collect::<String>() + "last";
        // Changes at the top, in the middle, and at the end without a final newline.
        let after = before.replacen("1\n", "one\n", 1).replace("15\n", "fifteen\n").replace("last", "LAST\n");
        let (_dir, p) = proposal(&before, &after);
        assert_eq!(p.hunk_count(), 3, "{}", p.diff);
        assert_eq!(p.diff.matches("\n@@ ").count(), 3);
        for (accepted, expected) in [
            (vec![0], before.replacen("1\n", "one\n", 1)),
            (vec![1], before.replace("15\n", "fifteen\n")),
            (vec![2], before.replace("last", "LAST\n")),
            (vec![2, 0, 2], before.replacen("1\n", "one\n", 1).replace("last", "LAST\n")),
        ] {
            let narrowed = p.narrowed(&accepted).unwrap();
            assert_eq!(narrowed.after_content(), expected, "{accepted:?}");
            assert_eq!(narrowed.after, ContentFacts::of(expected.as_bytes()));
            assert_eq!(narrowed.before, p.before);
            assert_eq!(narrowed.start_record().after_sha256, sha256_hex(expected.as_bytes()));
            let kept = narrowed.narrowed.as_ref().unwrap();
            assert_eq!((kept.of, kept.accepted.len()), (3, if accepted.len() == 3 { 2 } else { accepted.len() }));
        }
        assert_eq!(p.narrowed(&[0, 1, 2]).unwrap(), p, "every hunk is the whole proposal");
        assert_eq!(p.narrowed(&[]), Err(NarrowError::NoneAccepted));
        assert_eq!(p.narrowed(&[3]), Err(NarrowError::OutOfRange { index: 3, of: 3 }));
    }

    #[test]
    fn overlapping_occurrences_count() {
        assert_eq!(occurrences("aaa", "aa"), 2);
        assert_eq!(occurrences("héllo héllo", "héllo"), 2);
        assert_eq!(occurrences("abc", "d"), 0);
        assert_eq!(occurrences("ééé", "éé"), 2);
    }

    #[test]
    fn crlf_needs_every_break_to_be_crlf() {
        assert!(is_crlf("a\r\nb\r\n"));
        assert!(!is_crlf("a\r\nb\n"));
        assert!(!is_crlf("no breaks"));
        assert_eq!(with_line_endings("x\ny\r\nz", true), "x\r\ny\r\nz");
        assert_eq!(with_line_endings("x\ny", false), "x\ny");
    }

    #[test]
    fn a_long_diff_is_cut_at_a_line_with_a_note() {
        let diff: String = (0..20_000).map(|i| format!("+line {i}\n")).collect();
        let cut = capped_diff(&diff);
        assert!(cut.len() < RESULT_DIFF_LIMIT + 100);
        assert!(cut.ends_with("not shown]\n"), "{}", &cut[cut.len() - 80..]);
        let kept = cut.rsplit_once("[diff cut").map(|(k, _)| k).unwrap_or("");
        assert!(kept.ends_with('\n') && diff.starts_with(kept));
    }

    #[test]
    fn arguments_are_checked_with_a_message_naming_the_shape() {
        let err = EditArgs::parse(EditTool::EditFile, r#"{"path":"a"}"#).unwrap_err().to_string();
        assert!(err.contains("old_text") && err.contains("edit_file"), "{err}");
        let args =
            EditArgs::parse(EditTool::EditFile, r#"{"path":"a","old_text":"x","new_text":"y","replace_all":null}"#)
                .unwrap();
        assert_eq!(
            args,
            EditArgs::Edit { path: "a".into(), old_text: "x".into(), new_text: "y".into(), replace_all: false }
        );
        let err = EditArgs::parse(EditTool::WriteFile, r#"{"path":"a","text":"x"}"#).unwrap_err().to_string();
        assert!(err.contains("content"), "{err}");
    }

    #[test]
    fn a_start_record_is_checked_for_what_its_format_requires() {
        let hash = sha256_hex(b"x");
        let good = EditStartRecord {
            tool: EditTool::EditFile,
            path: "/p/a.txt".into(),
            leaves_workspace: false,
            new_file: false,
            before_sha256: Some(hash.clone()),
            before_size: Some(1),
            after_sha256: hash.clone(),
            after_size: 1,
        };
        assert_eq!(good.check(), Ok(()));
        let new_file = EditStartRecord { new_file: true, before_sha256: None, before_size: None, ..good.clone() };
        assert_eq!(new_file.check(), Ok(()));
        let bad = [
            EditStartRecord { path: "a.txt".into(), ..good.clone() },
            EditStartRecord { new_file: true, ..good.clone() },
            EditStartRecord { before_size: None, ..good.clone() },
            EditStartRecord { before_sha256: Some(hash.to_uppercase()), ..good.clone() },
            EditStartRecord { after_sha256: "00".into(), ..good.clone() },
            EditStartRecord { after_size: MAX_FILE_BYTES + 1, ..good.clone() },
        ];
        for record in bad {
            assert!(record.check().is_err(), "{record:?}");
        }
    }

    #[test]
    fn the_definitions_are_strict_and_list_every_property() {
        for tool in [edit_file_tool(), write_file_tool()] {
            assert_eq!(tool["strict"], true);
            let props = tool["parameters"]["properties"].as_object().unwrap();
            let required: Vec<&str> =
                tool["parameters"]["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
            assert_eq!(props.len(), required.len());
            assert!(props.keys().all(|k| required.contains(&k.as_str())));
        }
    }
}
