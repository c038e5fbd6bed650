//! The read-only tools: `read_file`, `list_files` and `search`.
//!
//! They run in-process (never through a shell), open files read-only and
//! without blocking, and change nothing. Inside the session's directory they
//! run without asking, whatever the approval mode; a path outside it, or one
//! whose resolution leaves it (`..`, a symbolic link), is asked about first,
//! and nothing about it (not even whether it exists) reaches the model
//! before the approval ([`locate`]). Files are opened through the same
//! race-free resolution as the edit tools ([`crate::edit::Workspace`]):
//! beneath the workspace's directory handle with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`, so a path swapped between the check and the open
//! cannot lead out.
//!
//! Every output is bounded (lines, bytes, matches, files) and its first line
//! says what it holds and what it left out ([`summary_of_output`]).

mod file;
mod walk;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::edit::{EditError, ResolvedPath, Workspace};
use crate::journal::record::ToolStatus;

/// The most lines `read_file` returns at once.
pub const MAX_LINES: u64 = 2_000;
/// The most bytes of any read tool's output.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// `read_file` cuts a longer line there (characters).
pub const MAX_LINE_CHARS: usize = 2_000;
/// `read_file` refuses a larger file: counting its lines would read too much.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;
/// The most paths `list_files` returns.
pub const MAX_FILES: usize = 1_000;
/// The most matching lines `search` returns.
pub const MAX_MATCHES: usize = 200;
/// `search` cuts a longer line there (characters).
pub const MAX_MATCH_LINE_CHARS: usize = 500;
/// The most context lines `search` gives around a match.
pub const MAX_CONTEXT: u64 = 10;
/// The context lines `search` gives by default.
pub const DEFAULT_CONTEXT: u64 = 2;

/// What a summary line says when a bound cut the output.
const LEFT_OUT: &str = "left out";

/// Which read-only tool a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadTool {
    ReadFile,
    ListFiles,
    Search,
}

impl ReadTool {
    pub const ALL: [ReadTool; 3] = [ReadTool::ReadFile, ReadTool::ListFiles, ReadTool::Search];

    pub fn from_name(name: &str) -> Option<ReadTool> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            ReadTool::ReadFile => "read_file",
            ReadTool::ListFiles => "list_files",
            ReadTool::Search => "search",
        }
    }
}

/// Which of Mino's tools a call names, where it is not `bash`: what
/// clients are told in a call's `tool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallTool {
    Edit(crate::edit::EditTool),
    Read(ReadTool),
}

impl CallTool {
    pub fn of_name(name: &str) -> Option<CallTool> {
        crate::edit::EditTool::from_name(name)
            .map(CallTool::Edit)
            .or_else(|| ReadTool::from_name(name).map(CallTool::Read))
    }
}

/// A read call's arguments, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadArgs {
    ReadFile { path: String, start_line: Option<u64>, end_line: Option<u64> },
    ListFiles { path: String, pattern: Option<String> },
    Search { pattern: String, path: String, glob: Option<String>, context: u64, case_insensitive: bool },
}

#[derive(Deserialize)]
struct ReadFileJson {
    path: String,
    #[serde(default)]
    start_line: Option<u64>,
    #[serde(default)]
    end_line: Option<u64>,
}

#[derive(Deserialize)]
struct ListFilesJson {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    pattern: Option<String>,
}

#[derive(Deserialize)]
struct SearchJson {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    context: Option<u64>,
    #[serde(default)]
    case_insensitive: Option<bool>,
}

/// An empty or absent directory argument: the session's directory.
fn dir_or_dot(path: Option<String>) -> String {
    path.filter(|p| !p.trim().is_empty()).unwrap_or_else(|| ".".to_string())
}

fn nonempty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

impl ReadArgs {
    /// Parses a call's JSON arguments; the error is the call's result.
    pub fn parse(tool: ReadTool, arguments: &str) -> Result<ReadArgs, String> {
        let bad = |e: serde_json::Error| {
            format!("The arguments of {} could not be read ({e}); {}", tool.as_str(), usage(tool))
        };
        let args = match tool {
            ReadTool::ReadFile => {
                let a: ReadFileJson = serde_json::from_str(arguments).map_err(bad)?;
                if a.path.trim().is_empty() {
                    return Err(format!("The path is empty; {}", usage(tool)));
                }
                if a.start_line == Some(0) || a.end_line == Some(0) {
                    return Err("Lines count from 1: start_line and end_line must be 1 or more.".to_string());
                }
                if let (Some(s), Some(e)) = (a.start_line, a.end_line) {
                    if e < s {
                        return Err(format!("end_line {e} is before start_line {s}; give end_line >= start_line."));
                    }
                }
                ReadArgs::ReadFile { path: a.path, start_line: a.start_line, end_line: a.end_line }
            }
            ReadTool::ListFiles => {
                let a: ListFilesJson = serde_json::from_str(arguments).map_err(bad)?;
                ReadArgs::ListFiles { path: dir_or_dot(a.path), pattern: nonempty(a.pattern) }
            }
            ReadTool::Search => {
                let a: SearchJson = serde_json::from_str(arguments).map_err(bad)?;
                if a.pattern.is_empty() {
                    return Err(format!("The pattern is empty; {}", usage(tool)));
                }
                let context = a.context.unwrap_or(DEFAULT_CONTEXT);
                if context > MAX_CONTEXT {
                    return Err(format!(
                        "context {context} is more than {MAX_CONTEXT} lines; give 0 to {MAX_CONTEXT}."
                    ));
                }
                ReadArgs::Search {
                    pattern: a.pattern,
                    path: dir_or_dot(a.path),
                    glob: nonempty(a.glob),
                    context,
                    case_insensitive: a.case_insensitive.unwrap_or(false),
                }
            }
        };
        Ok(args)
    }

    pub fn tool(&self) -> ReadTool {
        match self {
            ReadArgs::ReadFile { .. } => ReadTool::ReadFile,
            ReadArgs::ListFiles { .. } => ReadTool::ListFiles,
            ReadArgs::Search { .. } => ReadTool::Search,
        }
    }

    /// The path as the model gave it (`.` when it gave none).
    pub fn path(&self) -> &str {
        match self {
            ReadArgs::ReadFile { path, .. } | ReadArgs::ListFiles { path, .. } | ReadArgs::Search { path, .. } => path,
        }
    }

    /// The call's one-line summary, its `command` everywhere:
    /// `read_file src/main.rs:10-40`, `list_files src **/*.rs`,
    /// `search 'fn main' in src`.
    pub fn summary(&self) -> String {
        match self {
            ReadArgs::ReadFile { path, start_line: None, end_line: None } => format!("read_file {path}"),
            ReadArgs::ReadFile { path, start_line, end_line } => {
                let end = end_line.map(|e| e.to_string()).unwrap_or_default();
                format!("read_file {path}:{}-{end}", start_line.unwrap_or(1))
            }
            ReadArgs::ListFiles { path, pattern: None } => format!("list_files {path}"),
            ReadArgs::ListFiles { path, pattern: Some(p) } => format!("list_files {path} {p}"),
            ReadArgs::Search { pattern, path, glob, .. } => {
                let glob = glob.as_ref().map(|g| format!(" ({g})")).unwrap_or_default();
                format!("search '{pattern}' in {path}{glob}")
            }
        }
    }

    /// What clients are shown of the call (no summary yet).
    pub fn info(&self, shown_path: Option<String>, leaves_workspace: bool) -> ReadInfo {
        let (pattern, start_line, end_line) = match self {
            ReadArgs::ReadFile { start_line, end_line, .. } => (None, *start_line, *end_line),
            ReadArgs::ListFiles { pattern, .. } => (pattern.clone(), None, None),
            ReadArgs::Search { pattern, .. } => (Some(pattern.clone()), None, None),
        };
        ReadInfo {
            tool: self.tool(),
            path: shown_path.unwrap_or_else(|| self.path().to_string()),
            pattern,
            start_line,
            end_line,
            leaves_workspace,
            summary: None,
            truncated: false,
        }
    }
}

/// How to call `tool`, for argument errors.
fn usage(tool: ReadTool) -> &'static str {
    match tool {
        ReadTool::ReadFile => "call read_file with {\"path\": \"src/main.rs\"} and optionally \"start_line\"/\"end_line\".",
        ReadTool::ListFiles => "call list_files with optional {\"path\": \"src\", \"pattern\": \"**/*.rs\"}.",
        ReadTool::Search => {
            "call search with {\"pattern\": \"fn main\"} and optionally \"path\", \"glob\", \"context\", \"case_insensitive\"."
        }
    }
}

/// A read call as clients see it (`ReadView` on the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadInfo {
    pub tool: ReadTool,
    /// As the model gave it; on an approval request for a path leaving the
    /// workspace, where it leads (absolute, links resolved).
    pub path: String,
    pub pattern: Option<String>,
    pub start_line: Option<u64>,
    pub end_line: Option<u64>,
    pub leaves_workspace: bool,
    /// The first line of a `success` output.
    pub summary: Option<String>,
    pub truncated: bool,
}

impl ReadInfo {
    /// With the summary of a result, when it is a `success`.
    pub fn with_result(mut self, status: ToolStatus, output: &str) -> ReadInfo {
        if status == ToolStatus::Success {
            if let Some((summary, truncated)) = summary_of_output(output) {
                self.summary = Some(summary);
                self.truncated = truncated;
            }
        }
        self
    }
}

/// The summary line a read tool's `success` output starts with, and whether
/// it says a bound cut the output.
pub fn summary_of_output(output: &str) -> Option<(String, bool)> {
    let line = output.lines().next()?;
    Some((line.to_string(), line.contains(LEFT_OUT)))
}

/// What a read call reads, once resolved.
#[derive(Debug)]
pub enum Target {
    File(ResolvedPath),
    /// A directory (or, for `search`, possibly a file), canonical.
    Tree {
        path: PathBuf,
        inside: bool,
    },
}

/// Where a read call leads.
#[derive(Debug)]
pub enum Place {
    /// Inside the workspace: it runs without asking.
    Inside(Target),
    /// Outside, or leading outside: asked about first. `shown` is where it
    /// leads (absolute); `target` what it reads, or why it cannot (told to
    /// the model only after the approval, since it says something about a
    /// path outside).
    Outside { shown: PathBuf, target: Result<Target, String> },
}

/// Resolves a read call's path; `Err` is a reason that stays inside the
/// workspace (safe to tell the model at once).
pub fn locate(workspace: &Workspace, args: &ReadArgs) -> Result<Place, String> {
    match args {
        ReadArgs::ReadFile { path, .. } => match workspace.resolve(path) {
            Ok(resolved) if resolved.leaves_workspace => {
                Ok(Place::Outside { shown: resolved.path.clone(), target: Ok(Target::File(resolved)) })
            }
            Ok(resolved) => Ok(Place::Inside(Target::File(resolved))),
            Err(e) => {
                let why = resolve_error(e);
                match workspace.outside_hint(path) {
                    Some(shown) => Ok(Place::Outside { shown, target: Err(why) }),
                    None => Err(why),
                }
            }
        },
        ReadArgs::ListFiles { path, .. } | ReadArgs::Search { path, .. } => {
            let allow_file = matches!(args, ReadArgs::Search { .. });
            let given = Path::new(path);
            let joined = if given.is_absolute() { given.to_path_buf() } else { workspace.root().join(given) };
            match std::fs::canonicalize(&joined) {
                Ok(canonical) => {
                    let inside = canonical.starts_with(workspace.root());
                    let target = tree_target(&canonical, path, inside, allow_file);
                    if inside {
                        target.map(Place::Inside)
                    } else {
                        Ok(Place::Outside { shown: canonical, target })
                    }
                }
                Err(e) => {
                    let why = format!(
                        "`{path}` cannot be read: {e}; give a directory that exists (`.` is the session's directory)."
                    );
                    match workspace.outside_hint(path) {
                        Some(shown) => Ok(Place::Outside { shown, target: Err(why) }),
                        None => Err(why),
                    }
                }
            }
        }
    }
}

fn tree_target(canonical: &Path, given: &str, inside: bool, allow_file: bool) -> Result<Target, String> {
    let meta = std::fs::symlink_metadata(canonical).map_err(|e| format!("`{given}` cannot be read: {e}."))?;
    if meta.is_dir() || (allow_file && meta.is_file()) {
        Ok(Target::Tree { path: canonical.to_path_buf(), inside })
    } else if allow_file {
        Err(format!("`{given}` is {}; search reads directories and regular files.", crate::files::kind_of(&meta)))
    } else {
        Err(format!("`{given}` is {}, not a directory; list_files lists a directory.", crate::files::kind_of(&meta)))
    }
}

/// A resolution failure in the read tools' words.
fn resolve_error(e: EditError) -> String {
    match e {
        EditError::NotAFilePath { path } => {
            format!("`{path}` does not name a file (it ends in `..`, `.` or `/`); use list_files for a directory.")
        }
        EditError::NoDirectory { path, .. } => format!("`{path}` does not exist (nor does its directory)."),
        EditError::DanglingLink { path, target } => {
            format!("`{path}` is a symbolic link to a file that does not exist ({target}).")
        }
        EditError::Unstable { path, dir } => format!(
            "The directory of `{path}` ({dir}) kept changing while Mino resolved it; nothing was read. Read it again once nothing is moving it."
        ),
        EditError::NoOpenat2 => {
            "This kernel lacks openat2(2) (Linux 5.6 or later), which the read tools need to open files without a race; nothing was read.".to_string()
        }
        other => other.to_string(),
    }
}

/// The outcome of a read: `success` with the bounded output (its first
/// line the summary), or `failed` with the reason (refused: binary, a
/// special file, too large; not found…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutcome {
    pub status: ToolStatus,
    pub output: String,
}

impl ReadOutcome {
    fn success(output: String) -> ReadOutcome {
        ReadOutcome { status: ToolStatus::Success, output }
    }

    fn failed(output: impl Into<String>) -> ReadOutcome {
        ReadOutcome { status: ToolStatus::Failed, output: output.into() }
    }
}

/// Runs a located read. Blocking file work: run it off the async workers.
/// `workspace` shows paths relative to the session's directory.
pub fn run(workspace: &Workspace, args: &ReadArgs, target: &Target) -> ReadOutcome {
    match (args, target) {
        (ReadArgs::ReadFile { path, start_line, end_line }, Target::File(resolved)) => {
            file::read_file(resolved, path, *start_line, *end_line)
        }
        (ReadArgs::ListFiles { pattern, .. }, Target::Tree { path, .. }) => {
            walk::list_files(workspace, path, pattern.as_deref())
        }
        (ReadArgs::Search { pattern, glob, context, case_insensitive, .. }, Target::Tree { path, inside }) => {
            let options = walk::SearchOptions {
                pattern,
                glob: glob.as_deref(),
                context: *context as usize,
                case_insensitive: *case_insensitive,
            };
            walk::search(workspace, path, *inside, &options)
        }
        _ => ReadOutcome::failed("The read's target does not match its tool; nothing was read."),
    }
}

/// A located `read_file` answered from the text the person's editor holds
/// of the file (see [`crate::buffers::OpenBuffers`]); `None` for the other
/// tools, which read the disk. Blocking (it compares with the disk): run it
/// off the async workers.
pub fn run_on_editor_text(args: &ReadArgs, target: &Target, text: &str) -> Option<ReadOutcome> {
    let (ReadArgs::ReadFile { path, start_line, end_line }, Target::File(resolved)) = (args, target) else {
        return None;
    };
    // The disk's bytes, read only as far as needed to tell them apart.
    let differs = match resolved.open_read_only() {
        Ok(file) => {
            let mut file = file;
            let mut disk = Vec::with_capacity(text.len().min(MAX_EDITOR_COMPARE) + 1);
            let limit = text.len() as u64 + 1;
            match std::io::Read::read_to_end(&mut std::io::Read::take(&mut file, limit), &mut disk) {
                Ok(_) => disk != text.as_bytes(),
                Err(_) => true,
            }
        }
        Err(_) => true,
    };
    Some(file::read_editor_text(text, path, *start_line, *end_line, differs))
}

/// A capacity hint bound for the comparison's buffer.
const MAX_EDITOR_COMPARE: usize = 4 * 1024 * 1024;

/// The output of a read call recovery closes: it started and its result was
/// not saved. A read has no effects, so this needs no acknowledgement.
pub const UNAVAILABLE_OUTPUT: &str = "The read was started but its result was not saved; what it read is not on record. A read changes nothing: read again if you need it.";

/// Cuts `text` at `max` characters, saying so.
fn cut_line(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(text),
        Some((at, _)) => {
            let left = text[at..].chars().count();
            std::borrow::Cow::Owned(format!("{}… [{left} more characters of this line left out]", &text[..at]))
        }
    }
}

/// The read tools' function definitions (the Responses API's flat form,
/// `strict`: every property required, the optional ones nullable).
pub fn tools() -> Vec<serde_json::Value> {
    use serde_json::json;
    vec![
        json!({
            "type": "function",
            "name": "read_file",
            "description": "Read a text file's lines, numbered. The first line of the result states the lines \
                returned, the file's line count and size, and what was left out. At most 2000 lines or 64 KiB at once: \
                read on with start_line. Runs without asking inside the project's working directory; a path outside \
                it is asked about first. Refuses binary and special files.",
            "strict": true,
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file's path, relative to the project's working directory."},
                    "start_line": {"type": ["integer", "null"], "description": "The first line to return (1-based); null for line 1."},
                    "end_line": {"type": ["integer", "null"], "description": "The last line to return (inclusive); null for as many as the limits allow."}
                },
                "required": ["path", "start_line", "end_line"],
                "additionalProperties": false
            }
        }),
        json!({
            "type": "function",
            "name": "list_files",
            "description": "List the files under a directory, one path a line, sorted, skipping hidden files and what \
                .gitignore/.ignore exclude (as `rg --files`). At most 1000 paths; the first line says how many there \
                are and what was left out. Runs without asking inside the project's working directory.",
            "strict": true,
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": ["string", "null"], "description": "The directory, relative to the project's working directory; null for the whole project."},
                    "pattern": {"type": ["string", "null"], "description": "A glob the paths must match, e.g. `**/*.rs` or `*.toml`; null for every file."}
                },
                "required": ["path", "pattern"],
                "additionalProperties": false
            }
        }),
        json!({
            "type": "function",
            "name": "search",
            "description": "Search file contents for a regular expression (ripgrep's syntax), skipping hidden, ignored \
                and binary files. Returns `path:line:text` for matching lines and `path-line-text` for context lines. \
                At most 200 matching lines; the first line says how many matches there are in how many files and what \
                was left out. Runs without asking inside the project's working directory.",
            "strict": true,
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "path": {"type": ["string", "null"], "description": "The directory or file to search, relative to the project's working directory; null for the whole project."},
                    "glob": {"type": ["string", "null"], "description": "Only files whose path matches this glob, e.g. `*.rs`; null for all."},
                    "context": {"type": ["integer", "null"], "description": "Lines of context around each match (0 to 10); null for 2."},
                    "case_insensitive": {"type": ["boolean", "null"], "description": "true to ignore case; null for false."}
                },
                "required": ["pattern", "path", "glob", "context", "case_insensitive"],
                "additionalProperties": false
            }
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_name_the_tool_and_what_it_reads() {
        let a = ReadArgs::parse(ReadTool::ReadFile, r#"{"path":"src/main.rs","start_line":10,"end_line":40}"#).unwrap();
        assert_eq!(a.summary(), "read_file src/main.rs:10-40");
        let a = ReadArgs::parse(ReadTool::ListFiles, r#"{}"#).unwrap();
        assert_eq!(a.summary(), "list_files .");
        let a = ReadArgs::parse(ReadTool::Search, r#"{"pattern":"fn main","path":"src"}"#).unwrap();
        assert_eq!(a.summary(), "search 'fn main' in src");
        assert!(ReadArgs::parse(ReadTool::ReadFile, r#"{"path":"a","start_line":0}"#).is_err());
        assert!(ReadArgs::parse(ReadTool::Search, r#"{"pattern":"x","context":99}"#).is_err());
    }
}
