//! Approval rules: standing answers the person gives for commands and
//! edits, so that a call they would approve (or refuse) every time is not
//! asked about again.
//!
//! Every rule has an [`RuleEffect`]: `allow` (the default) approves what it
//! covers, `deny` refuses it without asking. Deny wins over allow.
//!
//! A command rule is a precise match on the *parsed* command, never a substring:
//!
//! - [`RuleKind::Exact`]: the command's words equal the rule's words;
//! - [`RuleKind::Prefix`]: the command's first N words are the rule's N words
//!   (`git status` matches `git status --short`, not `git statusx`, and
//!   `npm run test` does not match `npm run test:unit`).
//!
//! A command is matched only when it is a list of plain simple commands
//! ([`words::plain_commands`]) and *every* one of them is matched by some
//! rule: `git status; rm -rf ~` asks unless `rm -rf ~` is allowed too.
//! Anything not plain (redirections, substitutions, expansions, subshells,
//! assignments, background jobs, comments, continuations, parse errors)
//! is never matched: the person is asked.
//!
//! The words compared are those bash passes to the program after quote
//! removal, so `git "status"` is `git status`; a Unicode lookalike is a
//! different word and does not match. A command is denied when *any* of its
//! parts is covered by a deny rule; a command that is not plain is never
//! matched by a deny rule either (it is asked about, never run unasked).
//!
//! A path rule ([`RuleKind::Path`]) is a glob relative to the session's
//! directory (`src/**/*.rs`, `notes.md`): `*` and `?` never cross `/`, `**`
//! does. It covers an edit (`edit_file`, `write_file`) whose path resolves
//! inside the session's directory and matches; never a path that leaves the
//! workspace, never a command. A command rule never covers an edit.
//!
//! An MCP rule ([`RuleKind::Mcp`]) covers calls of MCP tools, by the
//! server's name as configured and the tool's name as the server lists
//! it: `fs/read_file` covers the tool `read_file` of the server `fs`, and
//! `fs/*` every tool of `fs`. The server is named, not identified: a
//! server renamed in the configuration is another server (its old rules
//! no longer apply), and a different program configured under the same
//! name is covered by them. An MCP rule never covers a command or an
//! edit, and a command or path rule never covers an MCP call. A tool's
//! annotations (`readOnlyHint`…) never make or stand in for a rule.
//!
//! - [`file`]: the workspace rules file (read at session open, appended to
//!   atomically).
//!
//! How rules are journaled (the `rule` record, the approval's `rules` field)
//! is specified in docs/journal.md.

pub mod file;
pub mod words;

use serde::{Deserialize, Serialize};

pub use words::{plain_commands, NotPlain, Words};

/// How a rule compares words (command rules) or paths (path rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    Exact,
    Prefix,
    /// A glob over an edit's path relative to the session's directory.
    Path,
    /// An MCP server's tool (`server/tool`) or all its tools (`server/*`).
    Mcp,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Exact => "exact",
            RuleKind::Prefix => "prefix",
            RuleKind::Path => "path",
            RuleKind::Mcp => "mcp",
        }
    }
}

/// What a rule does to the calls it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleEffect {
    /// Approve without asking.
    #[default]
    Allow,
    /// Refuse without asking; wins over any allow rule.
    Deny,
}

impl RuleEffect {
    fn is_allow(&self) -> bool {
        *self == RuleEffect::Allow
    }
}

/// Where a rule lives: for the open session only, or for every session of
/// the workspace (then it is also in the workspace rules file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleScope {
    Session,
    Workspace,
}

/// One rule. Build it with [`Rule::new`], which checks the command or the
/// pattern; the fields stay readable for journaling and display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RuleFields", into = "RuleFields")]
pub struct Rule {
    id: String,
    kind: RuleKind,
    /// The command (command rules) or the glob (path rules), trimmed.
    text: String,
    scope: RuleScope,
    effect: RuleEffect,
    /// The command's words (command rules; empty for a path rule; the
    /// server and the tool, `*` for all, for an MCP rule).
    words: Words,
    /// The compiled glob (path rules only).
    glob: Option<PathGlob>,
}

/// A compiled glob, compared by its pattern.
#[derive(Debug, Clone)]
struct PathGlob(globset::GlobMatcher);

impl PartialEq for PathGlob {
    fn eq(&self, other: &Self) -> bool {
        self.0.glob() == other.0.glob()
    }
}
impl Eq for PathGlob {}

/// The serialised form (the journal's `rule` record body, the rules file's
/// `[[rule]]` table): `{id, kind, command, scope}` for a command rule,
/// `{id, kind: "path", pattern, scope}` for a path rule, `{id, kind:
/// "mcp", tool: "server/tool" | "server/*", scope}` for an MCP rule, and `effect:
/// "deny"` on a deny rule (absent = allow); the words are derived.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFields {
    pub id: String,
    pub kind: RuleKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub scope: RuleScope,
    #[serde(default, skip_serializing_if = "RuleEffect::is_allow")]
    pub effect: RuleEffect,
}

/// Commands that run other commands given as their arguments: a prefix rule
/// that is one of these alone would allow anything, so it is refused.
pub const COMMAND_RUNNERS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "fish", "ksh", "eval", "exec", "command", "builtin", "env", "sudo", "doas", "su",
    "xargs", "nohup", "nice", "ionice", "time", "timeout", "setsid", "stdbuf", "unbuffer", "watch", "strace", "chroot",
    "unshare", "nsenter", "flock", "script", "source", ".", "python", "python3", "perl", "ruby", "node", "deno", "bun",
    "php", "lua", "awk", "gawk", "find", "npx", "uvx", "pipx", "ssh",
];

/// What is wrong with a rule someone asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("a rule's command must be one plain command (words only, no operators, redirections or expansions): {0}")]
    NotOneCommand(NotPlain),
    #[error("a rule's command must be one command, not several joined by `;`, `&&`, `||`, `|` or newlines")]
    Several,
    #[error("a prefix rule `{0}` would allow any command it runs; name the command after it too (for example `{0} <program> ...`)")]
    RunsAnything(String),
    #[error("a rule id must be 1 to 64 characters of letters, digits, `-` and `_`; got {0:?}")]
    BadId(String),
    #[error("a path rule's pattern must be a glob relative to the session's directory (for example `src/**/*.rs`), without `..` or a leading `/`: {0:?} {1}")]
    BadPattern(String, String),
    #[error("a {0} rule needs `{1}`")]
    Missing(&'static str, &'static str),
    #[error("an MCP rule names `server/tool` or `server/*` (every tool of the server), where the server is its name in the configuration (letters, digits, `_`, `-`); got {0:?} {1}")]
    BadMcpTool(String, &'static str),
}

/// The longest tool name an MCP rule takes (MCP suggests at most 128).
pub const MAX_MCP_TOOL_NAME: usize = 256;

/// Splits an MCP rule's `server/tool` (tool `*`: every tool) and checks it.
pub fn mcp_target(text: &str) -> Result<(String, String), RuleError> {
    let bad = |why| RuleError::BadMcpTool(text.to_owned(), why);
    let trimmed = text.trim();
    let (server, tool) = trimmed.split_once('/').ok_or_else(|| bad("(it has no `/`)"))?;
    if !crate::mcp_name::valid_server_name(server) {
        return Err(bad("(the server's name is not one a server can have)"));
    }
    if tool.is_empty() || tool.len() > MAX_MCP_TOOL_NAME {
        return Err(bad("(the tool's name is empty or too long)"));
    }
    if tool.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad("(the tool's name has a space or a control character)"));
    }
    if tool.contains('*') && tool != "*" {
        return Err(bad("(`*` stands alone, for every tool of the server)"));
    }
    Ok((server.to_owned(), tool.to_owned()))
}

impl Rule {
    /// An allow rule: for `text`, a command (`exact`, `prefix`), which must
    /// be one plain simple command (see [`plain_commands`]), or a glob
    /// (`path`, see [`compile_pattern`]). `id` is the rule's name in the
    /// journal and the rules file. [`Rule::with_effect`] makes it a deny rule.
    pub fn new(id: impl Into<String>, kind: RuleKind, text: &str, scope: RuleScope) -> Result<Self, RuleError> {
        let id = id.into();
        let valid_id =
            !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid_id {
            return Err(RuleError::BadId(id));
        }
        if kind == RuleKind::Mcp {
            let (server, tool) = mcp_target(text)?;
            let text = format!("{server}/{tool}");
            return Ok(Self {
                id,
                kind,
                text,
                scope,
                effect: RuleEffect::Allow,
                words: vec![server, tool],
                glob: None,
            });
        }
        if kind == RuleKind::Path {
            let glob = compile_pattern(text)?;
            let text = text.trim().to_owned();
            return Ok(Self {
                id,
                kind,
                text,
                scope,
                effect: RuleEffect::Allow,
                words: Vec::new(),
                glob: Some(PathGlob(glob)),
            });
        }
        let command = text;
        let mut parts = plain_commands(command).map_err(RuleError::NotOneCommand)?;
        if parts.len() != 1 {
            return Err(RuleError::Several);
        }
        let words = parts.remove(0);
        if kind == RuleKind::Prefix && words.len() == 1 && COMMAND_RUNNERS.contains(&words[0].as_str()) {
            return Err(RuleError::RunsAnything(words[0].clone()));
        }
        let text = command.trim().to_owned();
        Ok(Self { id, kind, text, scope, effect: RuleEffect::Allow, words, glob: None })
    }

    /// The same rule with `effect`.
    pub fn with_effect(mut self, effect: RuleEffect) -> Self {
        self.effect = effect;
        self
    }

    /// A fresh rule id (`rule-` and 16 hex digits).
    pub fn new_id() -> String {
        format!("rule-{:016x}", fastrand::u64(..))
    }

    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn kind(&self) -> RuleKind {
        self.kind
    }
    /// The command as the person wrote or approved it (trimmed); for a
    /// path rule, its pattern; for an MCP rule, `server/tool` or `server/*`.
    pub fn command(&self) -> &str {
        &self.text
    }
    /// The glob of a path rule.
    pub fn pattern(&self) -> Option<&str> {
        self.glob.as_ref().map(|_| self.text.as_str())
    }
    pub fn scope(&self) -> RuleScope {
        self.scope
    }
    pub fn effect(&self) -> RuleEffect {
        self.effect
    }
    pub fn is_path_rule(&self) -> bool {
        self.kind == RuleKind::Path
    }
    pub fn is_mcp_rule(&self) -> bool {
        self.kind == RuleKind::Mcp
    }
    /// Whether it covers commands (`exact`, `prefix`).
    pub fn is_command_rule(&self) -> bool {
        matches!(self.kind, RuleKind::Exact | RuleKind::Prefix)
    }
    /// The MCP tool (`server/tool`) or server (`server/*`) an MCP rule names.
    pub fn mcp_tool(&self) -> Option<&str> {
        self.is_mcp_rule().then_some(self.text.as_str())
    }
    /// What the rule is, for a person or the model: `prefix "npm test"`,
    /// `path "src/**/*.rs"`, `mcp "fs/read_file"`.
    pub fn describe(&self) -> String {
        format!("{} {:?}", self.kind.as_str(), self.text)
    }
    /// The command's words, as compared.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// Whether `other` covers what this rule covers, with the same effect
    /// (the same words for a command rule, the same glob for a path rule).
    pub fn says_the_same_as(&self, other: &Rule) -> bool {
        self.kind == other.kind
            && self.effect == other.effect
            && if self.is_command_rule() { self.words == other.words } else { self.text == other.text }
    }

    /// Whether this rule covers one plain simple command (a path rule never does).
    pub fn matches_words(&self, words: &[String]) -> bool {
        match self.kind {
            RuleKind::Exact => words == self.words.as_slice(),
            RuleKind::Prefix => words.len() >= self.words.len() && words[..self.words.len()] == self.words[..],
            RuleKind::Path | RuleKind::Mcp => false,
        }
    }

    /// Whether this MCP rule covers the tool `tool` of the server named
    /// `server` (any other rule never does).
    pub fn matches_mcp(&self, server: &str, tool: &str) -> bool {
        self.is_mcp_rule() && self.words[0] == server && (self.words[1] == "*" || self.words[1] == tool)
    }

    /// Whether this rule covers an edit of `relative`, a path relative to
    /// the session's directory that stays inside it (a command rule never does).
    pub fn matches_path(&self, relative: &str) -> bool {
        self.glob.as_ref().is_some_and(|glob| glob.0.is_match(relative))
    }
}

/// Checks and compiles a path rule's glob: not empty, relative, no `..`
/// component (a rule never reaches outside the workspace), `*` and `?`
/// not crossing `/`.
pub fn compile_pattern(pattern: &str) -> Result<globset::GlobMatcher, RuleError> {
    let bad = |why: &str| RuleError::BadPattern(pattern.to_owned(), why.to_owned());
    let trimmed = pattern.trim();
    if trimmed.is_empty() {
        return Err(bad("(it is empty)"));
    }
    if trimmed.starts_with('/') || trimmed.starts_with('~') {
        return Err(bad("(it is not relative)"));
    }
    if trimmed.split('/').any(|part| part == ".." || part == ".") {
        return Err(bad("(it has a `.` or `..` component)"));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(bad("(it has a control character)"));
    }
    globset::GlobBuilder::new(trimmed)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| bad(&format!("({e})")))
}

impl TryFrom<RuleFields> for Rule {
    type Error = RuleError;
    fn try_from(fields: RuleFields) -> Result<Self, RuleError> {
        let text = match fields.kind {
            RuleKind::Path => fields.pattern.ok_or(RuleError::Missing("path", "pattern"))?,
            RuleKind::Mcp => fields.tool.ok_or(RuleError::Missing("mcp", "tool"))?,
            _ => fields.command.ok_or(RuleError::Missing("command", "command"))?,
        };
        Ok(Rule::new(fields.id, fields.kind, &text, fields.scope)?.with_effect(fields.effect))
    }
}

impl From<Rule> for RuleFields {
    fn from(rule: Rule) -> Self {
        let (command, pattern, tool) = match rule.kind {
            RuleKind::Path => (None, Some(rule.text), None),
            RuleKind::Mcp => (None, None, Some(rule.text)),
            _ => (Some(rule.text), None, None),
        };
        Self { id: rule.id, kind: rule.kind, command, pattern, tool, scope: rule.scope, effect: rule.effect }
    }
}

/// What the rules say about a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// Every part of the command is covered: `rules[i]` covers part `i`
    /// (the approval record names their distinct ids).
    Allowed { rules: Vec<&'a Rule> },
    /// Some part (or the edit's path) is covered by deny rules, named here
    /// (distinct, in order); deny wins over any allow rule.
    Denied { rules: Vec<&'a Rule> },
    /// The command is plain but some part is covered by no rule; `part` is
    /// the first such part's words.
    NoRule { part: Words },
    /// The command is not plain; rules never apply to it.
    NotPlain(NotPlain),
}

impl Verdict<'_> {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allowed { .. })
    }

    /// The distinct ids of the rules that allowed (or denied) the call, in order.
    pub fn rule_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        if let Verdict::Allowed { rules } | Verdict::Denied { rules } = self {
            for rule in rules {
                if !ids.iter().any(|id| id == rule.id()) {
                    ids.push(rule.id().to_owned());
                }
            }
        }
        ids
    }
}

/// Checks `command` against `rules` (session and workspace rules together;
/// the first allow rule that covers a part is named for it). A deny rule
/// covering any part denies the whole command.
pub fn evaluate<'a>(rules: &'a [Rule], command: &str) -> Verdict<'a> {
    let parts = match plain_commands(command) {
        Ok(parts) => parts,
        Err(why) => return Verdict::NotPlain(why),
    };
    let denying =
        distinct(parts.iter().flat_map(|part| {
            rules.iter().filter(move |rule| rule.effect == RuleEffect::Deny && rule.matches_words(part))
        }));
    if !denying.is_empty() {
        return Verdict::Denied { rules: denying };
    }
    let mut covering = Vec::with_capacity(parts.len());
    for part in parts {
        match rules.iter().find(|rule| rule.effect == RuleEffect::Allow && rule.matches_words(&part)) {
            Some(rule) => covering.push(rule),
            None => return Verdict::NoRule { part },
        }
    }
    Verdict::Allowed { rules: covering }
}

/// Checks an edit of `relative` (its path relative to the session's
/// directory, which it stays inside) against `rules`: denied when a deny
/// path rule matches, allowed (by the first matching allow rule) when an
/// allow path rule does. `NoRule` carries the path as its one word.
pub fn evaluate_path<'a>(rules: &'a [Rule], relative: &str) -> Verdict<'a> {
    let denying = distinct(rules.iter().filter(|rule| rule.effect == RuleEffect::Deny && rule.matches_path(relative)));
    if !denying.is_empty() {
        return Verdict::Denied { rules: denying };
    }
    match rules.iter().find(|rule| rule.effect == RuleEffect::Allow && rule.matches_path(relative)) {
        Some(rule) => Verdict::Allowed { rules: vec![rule] },
        None => Verdict::NoRule { part: vec![relative.to_owned()] },
    }
}

/// Checks a call of the MCP tool `tool` of the server named `server`
/// against `rules`: denied when a deny MCP rule covers it (the tool's or the
/// server's), allowed (by the first covering allow rule) when an allow MCP
/// rule does. `NoRule` carries `server/tool` as its one word.
pub fn evaluate_mcp<'a>(rules: &'a [Rule], server: &str, tool: &str) -> Verdict<'a> {
    let denying =
        distinct(rules.iter().filter(|rule| rule.effect == RuleEffect::Deny && rule.matches_mcp(server, tool)));
    if !denying.is_empty() {
        return Verdict::Denied { rules: denying };
    }
    match rules.iter().find(|rule| rule.effect == RuleEffect::Allow && rule.matches_mcp(server, tool)) {
        Some(rule) => Verdict::Allowed { rules: vec![rule] },
        None => Verdict::NoRule { part: vec![format!("{server}/{tool}")] },
    }
}

fn distinct<'a>(rules: impl Iterator<Item = &'a Rule>) -> Vec<&'a Rule> {
    let mut out: Vec<&Rule> = Vec::new();
    for rule in rules {
        if !out.iter().any(|r| r.id == rule.id) {
            out.push(rule);
        }
    }
    out
}

#[cfg(test)]
mod path_and_deny_tests {
    use super::*;

    fn mcp(target: &str) -> Rule {
        Rule::new(Rule::new_id(), RuleKind::Mcp, target, RuleScope::Session).expect("mcp rule")
    }

    #[test]
    fn an_mcp_rule_covers_its_tool_or_every_tool_of_its_server_and_nothing_else() {
        let read = mcp("fs/read_file");
        assert!(read.matches_mcp("fs", "read_file"));
        assert!(!read.matches_mcp("fs", "write_file"));
        assert!(!read.matches_mcp("fs2", "read_file"), "a renamed server is another server");
        let all = mcp("fs/*");
        assert!(all.matches_mcp("fs", "write_file") && !all.matches_mcp("git", "status"));
        assert!(!all.matches_words(&["fs".to_owned(), "*".to_owned()]), "never a command");
        assert!(!all.matches_path("fs/x"), "never an edit");
        let prefix = Rule::new("p", RuleKind::Prefix, "fs", RuleScope::Session).expect("rule");
        assert!(!prefix.matches_mcp("fs", "read_file"), "a command rule never covers an MCP call");
        assert_eq!(read.describe(), "mcp \"fs/read_file\"");
    }

    #[test]
    fn an_mcp_deny_rule_wins_over_an_allow_rule_of_the_tool_or_the_server() {
        let rules = [mcp("fs/*"), mcp("fs/write_file").with_effect(RuleEffect::Deny)];
        assert!(evaluate_mcp(&rules, "fs", "read_file").is_allowed());
        assert!(matches!(evaluate_mcp(&rules, "fs", "write_file"), Verdict::Denied { .. }));
        let rules = [mcp("fs/read_file"), mcp("fs/*").with_effect(RuleEffect::Deny)];
        assert!(matches!(evaluate_mcp(&rules, "fs", "read_file"), Verdict::Denied { .. }));
        assert!(matches!(evaluate_mcp(&rules, "git", "log"), Verdict::NoRule { .. }));
    }

    #[test]
    fn an_mcp_rule_that_names_no_server_or_tool_is_refused() {
        for bad in ["", "fs", "/read_file", "fs/", "a b/x", "fs/read file", "fs/re*", "fs.x/y"] {
            assert!(
                matches!(Rule::new("r", RuleKind::Mcp, bad, RuleScope::Session), Err(RuleError::BadMcpTool(..))),
                "{bad:?} must be refused"
            );
        }
        let json = serde_json::to_value(mcp(" fs/read_file ")).expect("json");
        assert_eq!(json["kind"], "mcp");
        assert_eq!(json["tool"], "fs/read_file");
        assert!(json.get("command").is_none() && json.get("pattern").is_none());
        let back: Rule = serde_json::from_value(json).expect("back");
        assert!(back.matches_mcp("fs", "read_file"));
    }

    fn path(pattern: &str) -> Rule {
        Rule::new(Rule::new_id(), RuleKind::Path, pattern, RuleScope::Session).expect("pattern")
    }

    #[test]
    fn a_star_stays_in_its_directory_and_a_double_star_does_not() {
        let rs = path("src/*.rs");
        assert!(rs.matches_path("src/main.rs"));
        assert!(!rs.matches_path("src/bin/tool.rs"), "`*` never crosses `/`");
        let deep = path("src/**/*.rs");
        assert!(deep.matches_path("src/bin/tool.rs") && deep.matches_path("src/main.rs"));
        assert!(!deep.matches_path("tests/a.rs"));
        assert!(path("notes.md").matches_path("notes.md") && !path("notes.md").matches_path("docs/notes.md"));
        assert!(!path("?otes.md").matches_path("/otes.md"));
    }

    #[test]
    fn a_pattern_that_could_leave_the_workspace_is_refused() {
        for bad in ["", "  ", "/etc/*", "../x/*", "src/../../etc", "~/x", "./x"] {
            assert!(
                matches!(Rule::new("r", RuleKind::Path, bad, RuleScope::Session), Err(RuleError::BadPattern(..))),
                "{bad:?} must be refused"
            );
        }
    }

    #[test]
    fn path_and_command_rules_never_cover_each_other() {
        let p = path("*");
        assert!(!p.matches_words(&["ls".to_owned()]));
        let c = Rule::new("c", RuleKind::Exact, "ls", RuleScope::Session).expect("rule");
        assert!(!c.matches_path("ls"));
        assert!(evaluate(std::slice::from_ref(&p), "ls").rule_ids().is_empty());
    }

    #[test]
    fn deny_wins_over_allow_and_any_denied_part_denies_the_command() {
        let allow = Rule::new("a", RuleKind::Prefix, "git", RuleScope::Session);
        let allow = allow.expect("rule");
        let deny = Rule::new("d", RuleKind::Prefix, "git push", RuleScope::Session).expect("rule");
        let rules = [allow, deny.with_effect(RuleEffect::Deny)];
        assert!(evaluate(&rules, "git status").is_allowed());
        assert!(matches!(evaluate(&rules, "git push origin"), Verdict::Denied { .. }));
        assert_eq!(evaluate(&rules, "git status && git push").rule_ids(), ["d"]);
        let paths = [path("src/**"), path("src/secret.rs").with_effect(RuleEffect::Deny)];
        assert!(evaluate_path(&paths, "src/lib.rs").is_allowed());
        assert!(matches!(evaluate_path(&paths, "src/secret.rs"), Verdict::Denied { .. }));
    }

    #[test]
    fn the_serialised_form_names_pattern_and_effect_only_when_needed() {
        let deny = path("*.lock").with_effect(RuleEffect::Deny);
        let json = serde_json::to_value(&deny).expect("json");
        assert_eq!(json["kind"], "path");
        assert_eq!(json["pattern"], "*.lock");
        assert_eq!(json["effect"], "deny");
        assert!(json.get("command").is_none());
        let back: Rule = serde_json::from_value(json).expect("back");
        assert_eq!(back, deny);
        let allow = Rule::new("c", RuleKind::Prefix, "npm test", RuleScope::Session).expect("rule");
        let json = serde_json::to_value(&allow).expect("json");
        assert!(json.get("effect").is_none() && json.get("pattern").is_none());
    }
}
