//! The workspace rules file: the rules a person granted for every session of
//! one workspace, in one TOML file they can read and edit.
//!
//! Where: `$MINO_HOME/workspaces/<name>-<hash>/rules.toml`, keyed by the
//! workspace's canonical path ([`workspace_rules_path`]). Not inside the
//! workspace (`.mino/rules.toml`): a rule is the person's own grant, and a
//! repository someone clones must not be able to ship rules that pre-approve
//! its own commands. The file's first comment names the workspace.
//!
//! Format (comments are the person's and are kept):
//!
//! ```toml
//! [[rule]]
//! id = "rule-3f9c0a1b2c3d4e5f"
//! kind = "prefix"          # or "exact"
//! command = "cargo test"
//!
//! [[rule]]
//! id = "rule-0a1b2c3d4e5f6071"
//! kind = "path"            # an edit of a file matching the glob
//! pattern = "src/**/*.rs"  # relative to the workspace; `*` stays within one directory
//!
//! [[rule]]
//! id = "rule-7f6e5d4c3b2a1908"
//! kind = "prefix"
//! command = "git push"
//! effect = "deny"          # refused without asking; absent = "allow"
//!
//! [[rule]]
//! id = "rule-1a2b3c4d5e6f7081"
//! kind = "mcp"             # a call of an MCP server's tool
//! tool = "fs/read_file"    # server (its name in config.toml) / tool; "fs/*" = every tool of `fs`
//! ```
//!
//! Reading ([`load`]) is all or nothing: a file that is not valid TOML, has
//! an unknown key, or a rule that [`Rule::new`] refuses, is reported with
//! its line and *none* of its rules apply. Writing ([`append`]) adds a
//! `[[rule]]` table at the end of the existing text (so every comment
//! stays), atomically: temporary file, fsync, rename, fsync of the
//! directory, under a lock so two sessions cannot lose each other's rule.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Rule, RuleEffect, RuleError, RuleKind, RuleScope};
use crate::MinoHome;

/// The file's name in its workspace directory.
pub const RULES_FILE: &str = "rules.toml";

/// Larger files are refused (and reported), never read into memory whole.
pub const MAX_RULES_FILE: u64 = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum RulesFileError {
    #[error("{path}:{line}: {message}; none of this file's rules apply until it is fixed")]
    Malformed { path: PathBuf, line: usize, message: String },
    #[error("{path} is larger than {MAX_RULES_FILE} bytes; none of its rules apply")]
    TooLarge { path: PathBuf },
    #[error("{path}: could not {what}: {source}")]
    Io { path: PathBuf, what: &'static str, source: std::io::Error },
    #[error("only workspace rules are written to the workspace rules file (rule {0} is a session rule)")]
    NotAWorkspaceRule(String),
    #[error("{path} already has a rule with id {id}")]
    DuplicateId { path: PathBuf, id: String },
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRules {
    #[serde(default)]
    rule: Vec<toml::Spanned<FileRule>>,
}

/// One `[[rule]]` table: `command` for a command rule, `pattern` for a
/// path rule, `tool` for an MCP rule, `effect` only on a deny rule.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRule {
    id: String,
    kind: RuleKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    effect: Option<RuleEffect>,
}

impl FileRule {
    fn of(rule: &Rule) -> Self {
        let text = Some(rule.command().to_owned());
        let (command, pattern, tool) = match rule.kind() {
            RuleKind::Path => (None, text, None),
            RuleKind::Mcp => (None, None, text),
            _ => (text, None, None),
        };
        let effect = (rule.effect() == RuleEffect::Deny).then_some(RuleEffect::Deny);
        Self { id: rule.id().to_owned(), kind: rule.kind(), command, pattern, tool, effect }
    }

    fn into_rule(self) -> Result<Rule, RuleError> {
        let text = match self.kind {
            RuleKind::Path => self.pattern.ok_or(RuleError::Missing("path", "pattern"))?,
            RuleKind::Mcp => self.tool.ok_or(RuleError::Missing("mcp", "tool"))?,
            _ => self.command.ok_or(RuleError::Missing("command", "command"))?,
        };
        Ok(Rule::new(self.id, self.kind, &text, RuleScope::Workspace)?.with_effect(self.effect.unwrap_or_default()))
    }
}

#[derive(Serialize)]
struct NewRules {
    rule: [FileRule; 1],
}

/// The workspace's rules file: `$MINO_HOME/workspaces/<name>-<hash>/rules.toml`,
/// where `<name>` is the workspace directory's last component (for people
/// looking) and `<hash>` a 64-bit FNV-1a of its canonical path (for
/// uniqueness). The workspace is canonicalised, so every path that names
/// the same directory names the same file.
pub fn workspace_rules_path(home: &MinoHome, workspace: &Path) -> std::io::Result<PathBuf> {
    let canonical = std::fs::canonicalize(workspace)?;
    let name: String = canonical
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
                .take(40)
                .collect()
        })
        .unwrap_or_else(|| "root".to_owned());
    let hash = fnv1a64(canonical.as_os_str().as_encoded_bytes());
    Ok(home.root().join("workspaces").join(format!("{name}-{hash:016x}")).join(RULES_FILE))
}

/// FNV-1a, 64 bits: stable across Rust releases, unlike `DefaultHasher`,
/// which matters for a name kept on disk.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The workspace rules in `path`, all with [`RuleScope::Workspace`]. A
/// missing file is no rules. Any error means no rule of the file applies.
pub fn load(path: &Path) -> Result<Vec<Rule>, RulesFileError> {
    match read_text(path)? {
        None => Ok(Vec::new()),
        Some(text) => parse(path, &text),
    }
}

fn read_text(path: &Path) -> Result<Option<String>, RulesFileError> {
    use std::io::Read;
    let io = |what, source| RulesFileError::Io { path: path.to_owned(), what, source };
    // Non-blocking and regular files only: a FIFO there must not hang.
    let file = match crate::files::open_regular(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("open it", e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_RULES_FILE + 1).read_to_end(&mut bytes).map_err(|e| io("read it", e))?;
    if bytes.len() as u64 > MAX_RULES_FILE {
        return Err(RulesFileError::TooLarge { path: path.to_owned() });
    }
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let line = line_of(&String::from_utf8_lossy(e.as_bytes()), e.utf8_error().valid_up_to());
        RulesFileError::Malformed { path: path.to_owned(), line, message: "the file is not valid UTF-8".into() }
    })
}

fn parse(path: &Path, text: &str) -> Result<Vec<Rule>, RulesFileError> {
    let malformed = |line, message: String| RulesFileError::Malformed { path: path.to_owned(), line, message };
    let file: FileRules = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(text, span.start));
        malformed(line, e.message().to_owned())
    })?;
    let mut rules: Vec<Rule> = Vec::with_capacity(file.rule.len());
    for spanned in file.rule {
        let line = line_of(text, spanned.span().start);
        let entry = spanned.into_inner();
        let shown = entry
            .command
            .clone()
            .or_else(|| entry.pattern.clone())
            .or_else(|| entry.tool.clone())
            .unwrap_or_else(|| entry.id.clone());
        let rule = entry.into_rule().map_err(|e: RuleError| malformed(line, format!("rule `{shown}`: {e}")))?;
        if rules.iter().any(|r| r.id() == rule.id()) {
            return Err(malformed(line, format!("the rule id {} is used twice", rule.id())));
        }
        rules.push(rule);
    }
    Ok(rules)
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Adds `rule` (a [`RuleScope::Workspace`] rule) to the file at `path` for
/// `workspace`, keeping the file's text as it is and adding a `[[rule]]`
/// table at its end. A rule saying the same (kind, effect, words or pattern) already in the
/// file is not added twice (`Ok(false)`). A malformed file is not written
/// to: the person fixes it first (the error says where).
pub fn append(path: &Path, workspace: &Path, rule: &Rule) -> Result<bool, RulesFileError> {
    if rule.scope() != RuleScope::Workspace {
        return Err(RulesFileError::NotAWorkspaceRule(rule.id().to_owned()));
    }
    let io = |what, source| RulesFileError::Io { path: path.to_owned(), what, source };
    let dir = path.parent().ok_or_else(|| io("find its directory", std::io::Error::other("no parent")))?;
    create_dir_durably(dir).map_err(|e| io("create its directory", e))?;
    let _lock = DirLock::take(&dir.join("rules.lock")).map_err(|e| io("lock it", e))?;

    let mut text = read_text(path)?.unwrap_or_else(|| {
        format!(
            "# Mino approval rules for the workspace {}\n\
             # A command matching a rule runs without asking. `exact`: the whole command;\n\
             # `prefix`: its first words; `path`: an edit of a file matching `pattern`;\n\
             # `mcp`: a call of the MCP tool `tool` (\"server/tool\", or \"server/*\" for all its tools).\n\
             # `effect = \"deny\"` refuses instead. Edit freely; a malformed file is ignored as a whole.\n",
            workspace.display()
        )
    });
    let rules = parse(path, &text)?;
    if rules.iter().any(|r| r.says_the_same_as(rule)) {
        return Ok(false);
    }
    if rules.iter().any(|r| r.id() == rule.id()) {
        return Err(RulesFileError::DuplicateId { path: path.to_owned(), id: rule.id().to_owned() });
    }
    let table = toml::to_string(&NewRules { rule: [FileRule::of(rule)] })
        .map_err(|e| io("write the rule as TOML", std::io::Error::other(e)))?;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&table);
    // What is written must read back as it was meant: never leave a file
    // that `load` would refuse.
    let check = parse(path, &text)?;
    debug_assert!(check.iter().any(|r| r.id() == rule.id()));
    replace_durably(path, dir, text.as_bytes()).map_err(|e| io("write it", e))?;
    Ok(true)
}

fn create_dir_durably(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    if let Some(parent) = dir.parent() {
        std::fs::File::open(parent)?.sync_all()?;
        if let Some(grandparent) = parent.parent() {
            std::fs::File::open(grandparent)?.sync_all()?;
        }
    }
    Ok(())
}

/// Temporary file in the same directory, fsync, rename over `path`, fsync
/// of the directory: the file is the old text or the new, never half.
fn replace_durably(path: &Path, dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{RULES_FILE}.tmp-{}-{:08x}", std::process::id(), fastrand::u32(..)));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    std::fs::File::open(dir)?.sync_all()
}

/// An exclusive `flock` on a lock file beside the rules, released on drop
/// (closing the descriptor releases it).
struct DirLock(#[allow(dead_code)] std::fs::File);

impl DirLock {
    fn take(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
        // SAFETY: flock on a descriptor this struct owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self(file))
    }
}

/// Removes the rule `id` from the file at `path`, rewriting it atomically
/// (as [`append`] does) and keeping every other line as it was: the
/// removed rule's `[[rule]]` table goes, with the comments inside it, but
/// comments after its last key (which introduce what follows) stay.
/// `Ok(false)` when the file has no such rule. A malformed file is not
/// written to.
pub fn remove(path: &Path, id: &str) -> Result<bool, RulesFileError> {
    let io = |what, source| RulesFileError::Io { path: path.to_owned(), what, source };
    let Some(dir) = path.parent() else { return Ok(false) };
    if !dir.is_dir() {
        return Ok(false);
    }
    let _lock = DirLock::take(&dir.join("rules.lock")).map_err(|e| io("lock it", e))?;
    let Some(text) = read_text(path)? else { return Ok(false) };
    let rules = parse(path, &text)?;
    if !rules.iter().any(|r| r.id() == id) {
        return Ok(false);
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let is_header = |line: &str| line.trim_start().starts_with('[');
    let is_key = |line: &str| {
        let t = line.trim();
        !t.is_empty() && !t.starts_with('#')
    };
    let headers: Vec<usize> = (0..lines.len()).filter(|&i| is_header(lines[i])).collect();
    for (n, &start) in headers.iter().enumerate() {
        let end = headers.get(n + 1).copied().unwrap_or(lines.len());
        let section: String = lines[start..end].concat();
        let names_id = parse(path, &section).is_ok_and(|rules| rules.iter().any(|r| r.id() == id));
        if !names_id {
            continue;
        }
        // Keep the comments and blank lines after the table's last key.
        let last_key = (start..end).rev().find(|&i| is_key(lines[i])).unwrap_or(start);
        let mut kept: String = lines[..start].concat();
        kept.push_str(&lines[last_key + 1..end].concat());
        kept.push_str(&lines[end..].concat());
        let left = parse(path, &kept)?;
        if left.iter().any(|r| r.id() == id) || left.len() + 1 != rules.len() {
            break;
        }
        replace_durably(path, dir, kept.as_bytes()).map_err(|e| io("write it", e))?;
        return Ok(true);
    }
    Err(RulesFileError::Malformed {
        path: path.to_owned(),
        line: 1,
        message: format!("the rule {id} could not be told apart from the text around it; remove it by hand"),
    })
}

#[cfg(test)]
mod remove_tests {
    use super::*;

    #[test]
    fn removing_a_rule_keeps_the_others_and_the_comments_between_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(RULES_FILE);
        let text = "# my rules\n[[rule]]\nid = \"a\"\nkind = \"prefix\"\ncommand = \"npm test\"\n# the next one is for builds\n\n[[rule]]\n# inside b\nid = \"b\"\nkind = \"exact\"\ncommand = \"make\"\n# trailing\n";
        std::fs::write(&path, text).expect("write");
        assert!(remove(&path, "a").expect("remove a"));
        let after = std::fs::read_to_string(&path).expect("read");
        assert_eq!(after, "# my rules\n# the next one is for builds\n\n[[rule]]\n# inside b\nid = \"b\"\nkind = \"exact\"\ncommand = \"make\"\n# trailing\n");
        assert!(!remove(&path, "a").expect("again"));
        assert!(remove(&path, "b").expect("remove b"));
        let left = load(&path).expect("load");
        assert!(left.is_empty());
        assert!(std::fs::read_to_string(&path).expect("read").contains("# trailing"));
    }
}

#[cfg(test)]
mod path_rule_tests {
    use super::*;

    /// Path rules and deny rules are written with `pattern` and `effect`
    /// and read back as they were granted.
    #[test]
    fn path_and_deny_rules_round_trip_through_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ws").join(RULES_FILE);
        let glob = Rule::new("p", RuleKind::Path, "src/**/*.rs", RuleScope::Workspace).expect("path rule");
        let deny = Rule::new("d", RuleKind::Prefix, "git push", RuleScope::Workspace)
            .expect("rule")
            .with_effect(RuleEffect::Deny);
        assert!(append(&path, dir.path(), &glob).expect("append"));
        assert!(append(&path, dir.path(), &deny).expect("append"));
        let again = Rule::new("p2", RuleKind::Path, "src/**/*.rs", RuleScope::Workspace).expect("path rule");
        assert!(!append(&path, dir.path(), &again).expect("append"), "the same glob is not added twice");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains("pattern = \"src/**/*.rs\"") && text.contains("effect = \"deny\""), "{text}");
        assert_eq!(load(&path).expect("load"), [glob, deny]);
        std::fs::write(&path, "[[rule]]\nid = \"x\"\nkind = \"path\"\npattern = \"../*\"\n").expect("write");
        assert!(matches!(load(&path), Err(RulesFileError::Malformed { line: 1, .. })));
    }
}
