//! Approval rules: standing permissions the person grants for commands, so
//! that a command they would approve every time is not asked about again.
//!
//! A rule is a precise match on the *parsed* command, never a substring:
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
//! different word and does not match.
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

/// How a rule compares words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    Exact,
    Prefix,
}

/// Where a rule lives: for the open session only, or for every session of
/// the workspace (then it is also in the workspace rules file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleScope {
    Session,
    Workspace,
}

/// One rule. Build it with [`Rule::new`], which checks the command; the
/// fields stay readable for journaling and display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RuleFields", into = "RuleFields")]
pub struct Rule {
    id: String,
    kind: RuleKind,
    command: String,
    scope: RuleScope,
    words: Words,
}

/// The serialised form (the journal's `rule` record body, the rules file's
/// `[[rule]]` table): `{id, kind, command, scope}`; the words are derived.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFields {
    pub id: String,
    pub kind: RuleKind,
    pub command: String,
    pub scope: RuleScope,
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
}

impl Rule {
    /// A rule for `command`, which must be one plain simple command (see
    /// [`plain_commands`]). `id` is the rule's name in the journal and the
    /// rules file.
    pub fn new(id: impl Into<String>, kind: RuleKind, command: &str, scope: RuleScope) -> Result<Self, RuleError> {
        let id = id.into();
        let valid_id =
            !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid_id {
            return Err(RuleError::BadId(id));
        }
        let mut parts = plain_commands(command).map_err(RuleError::NotOneCommand)?;
        if parts.len() != 1 {
            return Err(RuleError::Several);
        }
        let words = parts.remove(0);
        if kind == RuleKind::Prefix && words.len() == 1 && COMMAND_RUNNERS.contains(&words[0].as_str()) {
            return Err(RuleError::RunsAnything(words[0].clone()));
        }
        Ok(Self { id, kind, command: command.trim().to_owned(), scope, words })
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
    /// The command as the person wrote or approved it (trimmed).
    pub fn command(&self) -> &str {
        &self.command
    }
    pub fn scope(&self) -> RuleScope {
        self.scope
    }
    /// The command's words, as compared.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// Whether this rule covers one plain simple command.
    pub fn matches_words(&self, words: &[String]) -> bool {
        match self.kind {
            RuleKind::Exact => words == self.words.as_slice(),
            RuleKind::Prefix => words.len() >= self.words.len() && words[..self.words.len()] == self.words[..],
        }
    }
}

impl TryFrom<RuleFields> for Rule {
    type Error = RuleError;
    fn try_from(fields: RuleFields) -> Result<Self, RuleError> {
        Rule::new(fields.id, fields.kind, &fields.command, fields.scope)
    }
}

impl From<Rule> for RuleFields {
    fn from(rule: Rule) -> Self {
        Self { id: rule.id, kind: rule.kind, command: rule.command, scope: rule.scope }
    }
}

/// What the rules say about a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// Every part of the command is covered: `rules[i]` covers part `i`
    /// (the approval record names their distinct ids).
    Allowed { rules: Vec<&'a Rule> },
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

    /// The distinct ids of the rules that allowed the command, in order.
    pub fn rule_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        if let Verdict::Allowed { rules } = self {
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
/// the first rule that covers a part is named for it).
pub fn evaluate<'a>(rules: &'a [Rule], command: &str) -> Verdict<'a> {
    let parts = match plain_commands(command) {
        Ok(parts) => parts,
        Err(why) => return Verdict::NotPlain(why),
    };
    let mut covering = Vec::with_capacity(parts.len());
    for part in parts {
        match rules.iter().find(|rule| rule.matches_words(&part)) {
            Some(rule) => covering.push(rule),
            None => return Verdict::NoRule { part },
        }
    }
    Verdict::Allowed { rules: covering }
}
