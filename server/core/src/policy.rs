//! A session's approval policy: its approval mode, its sandbox mode, what the
//! machine's sandbox can enforce, and the workspace rules read at open.
//!
//! Approval modes ([`ApprovalMode`]):
//! - `ask` (the default): every command asks. Rules are not applied, not
//!   even those granted in this session: granting one records it (and, for
//!   the workspace, writes it to the file) but changes nothing until the
//!   mode is `rules` or `sandboxed-auto`; clients say so when granting.
//! - `rules`: a command every part of which a rule covers runs without
//!   asking (its `approval` record names the rules), and so does an edit
//!   whose path an allow path rule covers; a call a deny rule covers is
//!   refused without asking (`decided_by: rule`), deny winning over allow
//!   and over the sandbox; anything else asks. An edit whose path leaves
//!   the workspace always asks.
//! - `sandboxed-auto`: as `rules`, and a command that runs inside the
//!   sandbox (mode not `off`, and the machine enforces it, protected paths
//!   included) is approved automatically (`approved_by: sandbox`). With the
//!   sandbox `off` nothing is approved by the sandbox: the person is asked.
//! - `plan`: commands and edits are refused in plan mode, without asking
//!   (a `refused` result whose output says the session is in plan mode, no
//!   `approval` and no `tool_start`: nothing acts), and each request's
//!   instructions carry the runtime's plan-mode notice
//!   ([`crate::project_instructions::PLAN_MODE_NOTICE`]). Every other tool
//!   (the read-only ones) is not refused by the mode. Only the person
//!   leaves it, by choosing another mode.
//!
//! In every mode, deny rules win: a command that might reach a denied
//! program without a deny rule matching it (a wrapper such as `env` or
//! `command`, a substitution, a redirection, a program named by its path:
//! [`deny_rules_in_reach`]) is never run without asking, and the request
//! names those rules. An edit of a protected path ([`crate::protect`])
//! always asks, whatever rule or mode, and the request says why.
//!
//! No mode, rule or sandbox acknowledges an `unknown` result: the
//! acknowledgement gate is the session's, untouched by any of this.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::rules::{self, file, plain_commands, Rule, RuleKind, RuleScope, COMMAND_RUNNERS};
use crate::sandbox::{SandboxError, SandboxMode, SandboxSupport};
use crate::MinoHome;

/// When a command may run without the person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    #[default]
    Ask,
    Rules,
    SandboxedAuto,
    /// Nothing runs: every command and edit is refused without asking, and
    /// the model is told the session is in plan mode.
    Plan,
}

impl ApprovalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::Rules => "rules",
            ApprovalMode::SandboxedAuto => "sandboxed-auto",
            ApprovalMode::Plan => "plan",
        }
    }

    /// Whether standing rules approve commands in this mode.
    pub fn applies_rules(self) -> bool {
        matches!(self, ApprovalMode::Rules | ApprovalMode::SandboxedAuto)
    }

    /// Whether this mode refuses a call of `tool` without asking: in `plan`,
    /// commands (`bash`) and edits (`edit_file`, `write_file`) are refused.
    /// Any other tool is not refused by the mode, so a read-only tool runs
    /// in plan mode as in every other.
    pub fn refuses_unasked(self, tool: &str) -> bool {
        // An MCP tool's annotations (`readOnlyHint`) are never trusted: plan
        // mode refuses every MCP call.
        self == ApprovalMode::Plan
            && (tool == "bash"
                || crate::edit::EditTool::from_name(tool).is_some()
                || crate::mcp::McpManager::is_mcp_name(tool))
    }
}

impl std::fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("no rule with id {0:?} is in force in this session; use an id from mino/rules/list")]
    UnknownRule(String),
    #[error("the workspace rules file could not be changed: {0}")]
    File(#[from] file::RulesFileError),
}

/// The settings a client can change while the session is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub approval_mode: ApprovalMode,
    pub sandbox: SandboxMode,
}

/// One session's policy (see the module docs).
#[derive(Debug, Clone)]
pub struct Policy {
    pub approval_mode: ApprovalMode,
    pub sandbox: SandboxMode,
    /// What this machine enforces, detected once at startup.
    pub support: SandboxSupport,
    /// The workspace rules file, when its path could be worked out.
    pub workspace_file: Option<PathBuf>,
    /// The file's rules as read at open (and changed by grants and revokes
    /// since); empty when the file is malformed.
    pub workspace_rules: Vec<Rule>,
    /// Why the file's rules do not apply (malformed, unreadable), with its line.
    pub workspace_file_error: Option<String>,
    /// Where workspace rules files live; `None` for [`Policy::ask_only`].
    home: Option<MinoHome>,
}

impl Policy {
    /// `ask`, sandbox `off`, no workspace rules, and a machine that enforces
    /// nothing: what a session gets unless its opener says otherwise.
    pub fn ask_only() -> Policy {
        Policy {
            approval_mode: ApprovalMode::Ask,
            sandbox: SandboxMode::Off,
            support: SandboxSupport { landlock_abi: 0, network_namespace: false, mount_namespace: false },
            workspace_file: None,
            workspace_rules: Vec::new(),
            workspace_file_error: None,
            home: None,
        }
    }

    /// Reads the workspace rules file of `workspace` (whole; a malformed
    /// file is reported in the log and in [`Self::workspace_file_error`],
    /// and none of it applies) and checks that `sandbox` can be enforced.
    pub fn open(
        home: &MinoHome,
        workspace: &Path,
        support: SandboxSupport,
        settings: Settings,
    ) -> Result<Policy, SandboxError> {
        support.check(settings.sandbox)?;
        let mut policy =
            Policy { approval_mode: settings.approval_mode, sandbox: settings.sandbox, support, ..Policy::ask_only() };
        policy.home = Some(home.clone());
        policy.read_workspace_rules(workspace);
        Ok(policy)
    }

    /// The same settings for another session's workspace: its rules file is
    /// read whole, and the previous workspace's rules no longer apply.
    pub fn for_workspace(&self, workspace: &Path) -> Policy {
        let mut policy =
            Policy { workspace_file: None, workspace_rules: Vec::new(), workspace_file_error: None, ..self.clone() };
        policy.read_workspace_rules(workspace);
        policy
    }

    fn read_workspace_rules(&mut self, workspace: &Path) {
        let Some(home) = self.home.clone() else { return };
        let policy = self;
        match file::workspace_rules_path(&home, workspace) {
            Err(e) => {
                let why = format!("the workspace rules file of {} cannot be located: {e}", workspace.display());
                tracing::warn!("{why}");
                policy.workspace_file_error = Some(why);
            }
            Ok(path) => {
                match file::load(&path) {
                    Ok(rules) => policy.workspace_rules = rules,
                    Err(e) => {
                        tracing::warn!(error = %e, "the workspace rules file is ignored");
                        policy.workspace_file_error = Some(e.to_string());
                    }
                }
                policy.workspace_file = Some(path);
            }
        }
    }

    pub fn settings(&self) -> Settings {
        Settings { approval_mode: self.approval_mode, sandbox: self.sandbox }
    }

    /// Changes the settings; a sandbox mode the machine cannot enforce is
    /// refused and nothing changes.
    pub fn update(
        &mut self,
        approval_mode: Option<ApprovalMode>,
        sandbox: Option<SandboxMode>,
    ) -> Result<Settings, SandboxError> {
        if let Some(mode) = sandbox {
            self.support.check(mode)?;
        }
        if let Some(mode) = approval_mode {
            self.approval_mode = mode;
        }
        if let Some(mode) = sandbox {
            self.sandbox = mode;
        }
        Ok(self.settings())
    }

    /// Whether `sandboxed-auto` approves commands now: the mode is on and
    /// the machine enforces it, protected paths included (a command that
    /// could plant code in `.git` or Mino's rules is never run unasked).
    pub fn sandbox_approves(&self) -> bool {
        self.approval_mode == ApprovalMode::SandboxedAuto
            && self.sandbox != SandboxMode::Off
            && self.support.check(self.sandbox).is_ok_and(|e| e.protected_paths)
    }

    /// One line saying what the machine enforces (`sandboxSupport`).
    pub fn support_line(&self) -> String {
        support_line(&self.support)
    }

    /// The rules in force: `granted` (this session's, from its records)
    /// and the workspace file's, each id once.
    pub fn rules_in_force(&self, granted: &[Rule]) -> Vec<Rule> {
        let mut all = granted.to_vec();
        for rule in &self.workspace_rules {
            if !all.iter().any(|r| r.id() == rule.id()) {
                all.push(rule.clone());
            }
        }
        all
    }
}

/// One line saying what this machine's sandbox enforces, never more than
/// [`SandboxSupport::check`] found.
pub fn support_line(support: &SandboxSupport) -> String {
    match support.check(SandboxMode::WorkspaceWrite) {
        Ok(_) => {
            format!("read-only and workspace-write can be enforced: {}", support.describe(SandboxMode::WorkspaceWrite))
        }
        Err(e) => format!("only `off` is available: {e}"),
    }
}

/// The rule a client offers for `command`: its first words (up to two, and
/// never a lone command runner such as `bash`), as a prefix rule. `None`
/// when the command is not one plain command.
pub fn suggested_rule(command: &str) -> Option<String> {
    let parts = plain_commands(command).ok()?;
    let [words] = parts.as_slice() else { return None };
    let mut take: Vec<&str> = Vec::new();
    for word in words.iter() {
        if take.len() == 2 || (!take.is_empty() && word.starts_with('-')) {
            break;
        }
        take.push(word);
    }
    if take.len() == 1 && COMMAND_RUNNERS.contains(&take[0]) && words.len() > 1 {
        take.push(&words[1]);
    }
    let suggested = take.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
    Rule::new("suggested", RuleKind::Prefix, &suggested, RuleScope::Session).ok().map(|_| suggested)
}

/// A word as bash would read it back: bare when it is plainly safe, else
/// single-quoted.
fn quote(word: &str) -> String {
    let safe = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The rule a client offers on an approval request: a prefix rule for a
/// command, a path rule (the path itself) for an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuggestedRule {
    pub kind: RuleKind,
    /// The command words or the path pattern.
    pub text: String,
}

impl SuggestedRule {
    /// [`suggested_rule`] for a command.
    pub fn for_command(command: &str) -> Option<SuggestedRule> {
        suggested_rule(command).map(|text| SuggestedRule { kind: RuleKind::Prefix, text })
    }

    /// The path rule for an edit of `relative` (relative to the session's
    /// directory); `None` when the path leaves the workspace or is not a
    /// pattern a rule accepts (glob characters are escaped).
    pub fn for_path(relative: &str, leaves_workspace: bool) -> Option<SuggestedRule> {
        if leaves_workspace {
            return None;
        }
        let text = globset::escape(relative);
        rules::compile_pattern(&text).ok()?;
        Some(SuggestedRule { kind: RuleKind::Path, text })
    }

    /// The MCP rule for one tool of a server (`server/tool`); `None` when
    /// the names are not ones a rule takes. Every tool of the server is
    /// `server/*` ([`SuggestedRule::mcp_server_of`]).
    pub fn for_mcp(server: &str, tool: &str) -> Option<SuggestedRule> {
        let text = format!("{server}/{tool}");
        rules::mcp_target(&text).ok()?;
        Some(SuggestedRule { kind: RuleKind::Mcp, text })
    }

    /// For an MCP tool's rule, the rule for every tool of its server.
    pub fn mcp_server_of(&self) -> Option<SuggestedRule> {
        let (server, _) = self.text.split_once('/').filter(|_| self.kind == RuleKind::Mcp)?;
        Some(SuggestedRule { kind: RuleKind::Mcp, text: format!("{server}/*") })
    }
}

/// What standing rules decide about a call without asking the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleDecision {
    /// Approved by these rules (distinct, in order).
    Allowed(Vec<Rule>),
    /// Refused by these deny rules (distinct, in order).
    Denied(Vec<Rule>),
}

impl RuleDecision {
    fn of(verdict: rules::Verdict<'_>) -> Option<RuleDecision> {
        let distinct = |rules: Vec<&Rule>| {
            let mut out: Vec<Rule> = Vec::new();
            for rule in rules {
                if !out.iter().any(|r| r.id() == rule.id()) {
                    out.push(rule.clone());
                }
            }
            out
        };
        match verdict {
            rules::Verdict::Allowed { rules } => Some(RuleDecision::Allowed(distinct(rules))),
            rules::Verdict::Denied { rules } => Some(RuleDecision::Denied(distinct(rules))),
            _ => None,
        }
    }
}

/// What the rules in force decide about `command` under `policy` with the
/// session's `granted` rules; `None` when the person must be asked by rule
/// (always under `ask`).
pub fn command_decision(policy: &Policy, granted: &[Rule], command: &str) -> Option<RuleDecision> {
    if !policy.approval_mode.applies_rules() {
        return None;
    }
    RuleDecision::of(rules::evaluate(&policy.rules_in_force(granted), command))
}

/// What the rules decide about an edit of `relative` (its path relative to
/// the session's directory); `None` when the person must be asked, always
/// so for a path that leaves the workspace and under `ask`. An edit of a
/// `protected` path ([`crate::protect::why_protected`]) is never approved
/// by a rule: a deny rule still refuses it, anything else asks.
pub fn edit_decision(
    policy: &Policy,
    granted: &[Rule],
    relative: &str,
    leaves_workspace: bool,
    protected: bool,
) -> Option<RuleDecision> {
    if leaves_workspace || !policy.approval_mode.applies_rules() {
        return None;
    }
    match RuleDecision::of(rules::evaluate_path(&policy.rules_in_force(granted), relative))? {
        RuleDecision::Allowed(_) if protected => None,
        decision => Some(decision),
    }
}

/// What the rules decide about a call of the MCP tool `tool` of the server
/// named `server`; `None` when the person must be asked (always under
/// `ask`). Deny wins; a tool's annotations play no part.
pub fn mcp_decision(policy: &Policy, granted: &[Rule], server: &str, tool: &str) -> Option<RuleDecision> {
    if !policy.approval_mode.applies_rules() {
        return None;
    }
    RuleDecision::of(rules::evaluate_mcp(&policy.rules_in_force(granted), server, tool))
}

/// The deny command rules in force that `command` might reach although no
/// deny rule matches it: the matcher cannot see what it runs (it is not
/// plain: a redirection, a substitution, an expansion), a part runs other
/// commands (`env`, `command`, `xargs`, `sudo`, a shell, …:
/// [`COMMAND_RUNNERS`]), or a part names its program by a path whose last
/// component a deny rule names (`/bin/rm`). Such a command is never run
/// without asking, whatever the mode (deny wins over every mode), and its
/// approval request names these rules: those whose program appears in the
/// command, else every deny command rule. Empty when no deny command rule
/// is in force or the command plainly reaches none.
pub fn deny_rules_in_reach(policy: &Policy, granted: &[Rule], command: &str) -> Vec<Rule> {
    let in_force = policy.rules_in_force(granted);
    let deny: Vec<&Rule> =
        in_force.iter().filter(|r| r.effect() == rules::RuleEffect::Deny && r.is_command_rule()).collect();
    if deny.is_empty() {
        return Vec::new();
    }
    let mentioned = |text: &str| -> Vec<Rule> {
        let words: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || "$()`;|&<>'\"{}=/\\".contains(c))
            .filter(|w| !w.is_empty())
            .collect();
        let named: Vec<Rule> = deny
            .iter()
            .filter(|r| r.words().first().is_some_and(|program| words.contains(&program.as_str())))
            .map(|r| (*r).clone())
            .collect();
        if named.is_empty() {
            deny.iter().map(|r| (*r).clone()).collect()
        } else {
            named
        }
    };
    let parts = match plain_commands(command) {
        Ok(parts) => parts,
        Err(_) => return mentioned(command),
    };
    let mut reached: Vec<Rule> = Vec::new();
    for part in &parts {
        let Some(program) = part.first() else { continue };
        let base = program.rsplit('/').next().unwrap_or(program);
        let found = if COMMAND_RUNNERS.contains(&base) {
            mentioned(&part.join(" "))
        } else if base != program {
            let mut as_named = part.clone();
            as_named[0] = base.to_owned();
            deny.iter().filter(|r| r.matches_words(&as_named)).map(|r| (*r).clone()).collect()
        } else {
            Vec::new()
        };
        for rule in found {
            if !reached.iter().any(|r| r.id() == rule.id()) {
                reached.push(rule);
            }
        }
    }
    reached
}

/// The rules that approve `command` under `policy` with the session's
/// `granted` rules, or `None` when the person must be asked (or a deny
/// rule refuses it).
pub fn approving_rules(policy: &Policy, granted: &[Rule], command: &str) -> Option<Vec<Rule>> {
    match command_decision(policy, granted, command)? {
        RuleDecision::Allowed(rules) => Some(rules),
        RuleDecision::Denied(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A switch to a session of another workspace must not carry the old
    /// workspace's rules along: each workspace's file is its own.
    #[test]
    fn another_workspace_gets_its_own_rules_and_not_the_previous_ones() {
        let home_dir = tempfile::tempdir().expect("home");
        let home = MinoHome::new(home_dir.path().to_path_buf());
        let (a, b) = (tempfile::tempdir().expect("a"), tempfile::tempdir().expect("b"));
        let rule_in = |workspace: &Path, command: &str| {
            let rule =
                Rule::new(Rule::new_id(), crate::rules::RuleKind::Prefix, command, crate::rules::RuleScope::Workspace)
                    .expect("rule");
            let path = file::workspace_rules_path(&home, workspace).expect("path");
            file::append(&path, workspace, &rule).expect("append");
        };
        rule_in(a.path(), "npm test");
        rule_in(b.path(), "cargo test");
        let support = SandboxSupport { landlock_abi: 0, network_namespace: false, mount_namespace: false };
        let settings = Settings { approval_mode: ApprovalMode::Rules, sandbox: SandboxMode::Off };
        let in_a = Policy::open(&home, a.path(), support, settings).expect("policy");
        let commands = |p: &Policy| p.workspace_rules.iter().map(|r| r.command().to_string()).collect::<Vec<_>>();
        assert_eq!(commands(&in_a), ["npm test"]);
        let in_b = in_a.for_workspace(b.path());
        assert_eq!(commands(&in_b), ["cargo test"], "only b's rules apply in b");
        assert_eq!(in_b.approval_mode, ApprovalMode::Rules, "the settings stay");
        assert_ne!(in_a.workspace_file, in_b.workspace_file);
    }

    #[test]
    fn the_suggested_rule_is_the_first_words_never_a_lone_runner() {
        assert_eq!(suggested_rule("npm test -- --watch").as_deref(), Some("npm test"));
        assert_eq!(suggested_rule("git status --short").as_deref(), Some("git status"));
        assert_eq!(suggested_rule("ls -la").as_deref(), Some("ls"));
        assert_eq!(suggested_rule("bash -c 'rm -rf /'").as_deref(), Some("bash -c"));
        assert_eq!(suggested_rule("cat 'my file.txt'").as_deref(), Some("cat 'my file.txt'"));
        assert_eq!(suggested_rule("echo hi > out.txt"), None);
        assert_eq!(suggested_rule("make && make install"), None);
        assert_eq!(suggested_rule("bash"), None);
    }

    #[test]
    fn ask_applies_no_rule_and_rules_mode_does() {
        let rule = Rule::new("r1", RuleKind::Prefix, "npm test", RuleScope::Session).expect("rule");
        let mut policy = Policy::ask_only();
        assert_eq!(approving_rules(&policy, std::slice::from_ref(&rule), "npm test"), None);
        policy.approval_mode = ApprovalMode::Rules;
        assert_eq!(approving_rules(&policy, std::slice::from_ref(&rule), "npm test --ci"), Some(vec![rule.clone()]));
        assert_eq!(approving_rules(&policy, &[rule], "npm testx"), None);
    }

    #[test]
    fn edits_follow_path_rules_only_inside_the_workspace_and_never_under_ask() {
        let rule = Rule::new("p", RuleKind::Path, "src/**", RuleScope::Session).expect("rule");
        let deny = Rule::new("d", RuleKind::Path, "src/gen/*", RuleScope::Session)
            .expect("rule")
            .with_effect(crate::rules::RuleEffect::Deny);
        let granted = [rule.clone(), deny.clone()];
        let mut policy = Policy::ask_only();
        assert_eq!(edit_decision(&policy, &granted, "src/a.rs", false, false), None, "ask applies no rule");
        policy.approval_mode = ApprovalMode::Rules;
        assert_eq!(edit_decision(&policy, &granted, "src/a.rs", false, false), Some(RuleDecision::Allowed(vec![rule])));
        assert_eq!(
            edit_decision(&policy, &granted, "src/gen/x.rs", false, false),
            Some(RuleDecision::Denied(vec![deny.clone()]))
        );
        assert_eq!(edit_decision(&policy, &granted, "README.md", false, false), None);
        assert_eq!(
            edit_decision(&policy, &granted, "src/a.rs", true, false),
            None,
            "leaving the workspace always asks"
        );
        assert_eq!(edit_decision(&policy, &granted, "src/a.rs", false, true), None, "a protected path always asks");
        assert_eq!(
            edit_decision(&policy, &granted, "src/gen/x.rs", false, true),
            Some(RuleDecision::Denied(vec![deny])),
            "a deny rule still refuses a protected path"
        );
        assert_eq!(command_decision(&policy, &granted, "src/a.rs"), None, "a path rule covers no command");
        assert_eq!(SuggestedRule::for_path("src/a[1].rs", false).map(|s| s.text).as_deref(), Some("src/a[[]1[]].rs"));
        assert_eq!(SuggestedRule::for_path("/etc/passwd", true), None);
    }

    #[test]
    fn mcp_rules_apply_outside_ask_and_deny_wins() {
        let mcp = |t: &str| Rule::new(Rule::new_id(), RuleKind::Mcp, t, RuleScope::Session).expect("rule");
        let (all, deny) = (mcp("fs/*"), mcp("fs/write_file").with_effect(crate::rules::RuleEffect::Deny));
        let granted = [all.clone(), deny.clone()];
        let mut policy = Policy::ask_only();
        assert_eq!(mcp_decision(&policy, &granted, "fs", "read_file"), None, "ask applies no rule");
        policy.approval_mode = ApprovalMode::Rules;
        assert_eq!(mcp_decision(&policy, &granted, "fs", "read_file"), Some(RuleDecision::Allowed(vec![all])));
        assert_eq!(mcp_decision(&policy, &granted, "fs", "write_file"), Some(RuleDecision::Denied(vec![deny])));
        assert_eq!(mcp_decision(&policy, &granted, "fs-renamed", "read_file"), None);
        assert_eq!(command_decision(&policy, &granted, "fs x"), None, "an MCP rule covers no command");
        assert!(deny_rules_in_reach(&policy, &granted, "env fs write_file").is_empty());
        let tool = SuggestedRule::for_mcp("fs", "read_file").expect("suggested");
        assert_eq!(tool.text, "fs/read_file");
        assert_eq!(tool.mcp_server_of().map(|s| s.text).as_deref(), Some("fs/*"));
    }

    #[test]
    fn sandboxed_auto_needs_a_sandbox_in_force() {
        let mut policy = Policy::ask_only();
        policy.approval_mode = ApprovalMode::SandboxedAuto;
        assert!(!policy.sandbox_approves(), "sandbox off approves nothing");
        assert!(policy.update(None, Some(SandboxMode::ReadOnly)).is_err(), "a machine without Landlock refuses");
        assert_eq!(policy.sandbox, SandboxMode::Off);
        policy.support = SandboxSupport { landlock_abi: 6, network_namespace: true, mount_namespace: false };
        policy.update(None, Some(SandboxMode::ReadOnly)).expect("enforceable");
        assert!(policy.sandbox_approves());
        // workspace-write can be enforced, but not its protected paths:
        // nothing runs unasked.
        policy.update(None, Some(SandboxMode::WorkspaceWrite)).expect("enforceable");
        assert!(!policy.sandbox_approves(), "protected paths not read-only: the person is asked");
        policy.support.mount_namespace = true;
        assert!(policy.sandbox_approves());
    }
}
