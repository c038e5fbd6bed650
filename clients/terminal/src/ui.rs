//! What the terminal shows: the book's wording, as plain strings so it can be
//! tested without a terminal.

use crate::reads::ReadLog;
use crate::term::printable;
use mino_protocol::{
    ApprovalMode, ApprovalRequest, ApprovedBy, ApproverKind, EditView, HistoryCall, HistoryItem, HistoryResult,
    HistoryTurn, ModelSource, ModelsListResult, ReadToolName, ReadView, RecoveredCallView, RecoveryNotification,
    RuleEffect, RuleKind, RuleScope, RuleSpec, RuleView, RulesListResult, SandboxMode, SessionEntry, TokenUsage,
    ToolStatus, TurnStatus,
};

pub const RECOVERED: &str = "An interrupted tool turn was recovered without executing commands.";
pub const UNKNOWN_RESULT: &str = "A previous command started, but its result is unknown. It may have changed files or external systems. Mino has not rerun it. Review those effects before continuing.";
pub const ACK_QUESTION: &str = "Do you understand that these commands may already have run? [y/N] ";
pub const ACK_NEEDS_TTY: &str = "Unknown tool results require acknowledgement in an interactive terminal";
pub const BANNER: &str =
    "History is restored on startup. Bash commands require approval. Use /exit, Ctrl+D, or Ctrl+C to quit.";
pub const USER_PROMPT: &str = "You> ";

/// What plan mode means, said wherever it is shown.
pub const PLAN_NOTE: &str = "Plan mode: commands and edits are refused, the model plans; /mode ask leaves it.";

/// The banner's line of settings: the approval mode (and what plan mode
/// means) and the sandbox.
pub fn mode_line(mode: ApprovalMode, sandbox: mino_protocol::SandboxMode) -> String {
    let plan = if mode == ApprovalMode::Plan { format!(" {PLAN_NOTE}") } else { String::new() };
    format!("Approval mode {}, sandbox {}.{plan}", mode.as_str(), sandbox.as_str())
}

/// Which of the project's instruction files (AGENTS.md) the model is given,
/// with their sizes and what was cut.
pub fn instructions_line(files: &[mino_protocol::InstructionFile]) -> String {
    if files.is_empty() {
        return "Instructions: no AGENTS.md in force.".to_owned();
    }
    let listed: Vec<String> = files
        .iter()
        .map(|f| {
            let cut = if f.truncated { format!(", cut to {} bytes", f.given) } else { String::new() };
            format!("{} ({} bytes{cut})", printable(&f.path), f.size)
        })
        .collect();
    format!("Instructions: {}.", listed.join(", "))
}
pub const ASSISTANT: &str = "Assistant> ";
pub const APPROVE_QUESTION: &str = "Approve this operation? [y/N] ";
/// The answers the approval question takes, shown above it.
pub const APPROVE_CHOICES: &str = "y: approve once | n, or n: reason: deny | a: allow for this session | w: allow in this workspace | d: deny for this session | D: deny in this workspace";
/// The answers for an edit outside the session's directory: no rule covers it.
pub const APPROVE_CHOICES_OUTSIDE: &str =
    "y: approve once | n, or n: reason: deny (no rule covers a path outside the session's directory)";

/// The answers for an MCP tool call: a rule is for this tool or every tool of its server.
pub const APPROVE_CHOICES_MCP: &str = "y: approve once | a/w: always allow this tool or every tool of its server, for the session/workspace | d/D: always deny (session/workspace) | n, or n: reason: deny";

/// An answer to the approval question. Anything not recognised denies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    Approve,
    Deny(Option<String>),
    AllowSession,
    AllowWorkspace,
    DenySession,
    DenyWorkspace,
    /// `e`: show the full environment, then ask again.
    ShowEnvironment,
}

/// `y`/`yes` approves, `a` and `w` allow, `d` and `D` deny with a rule (a
/// rule is asked for next), `n: reason` denies with a reason; anything else
/// denies.
pub fn approval_answer(answer: &str) -> ApprovalAnswer {
    let a = answer.trim();
    if is_yes(a) {
        return ApprovalAnswer::Approve;
    }
    if a.eq_ignore_ascii_case("a") {
        return ApprovalAnswer::AllowSession;
    }
    if a.eq_ignore_ascii_case("w") {
        return ApprovalAnswer::AllowWorkspace;
    }
    if a == "e" {
        return ApprovalAnswer::ShowEnvironment;
    }
    // Case matters here: `d` is the narrower (session) grant.
    if a == "d" {
        return ApprovalAnswer::DenySession;
    }
    if a == "D" {
        return ApprovalAnswer::DenyWorkspace;
    }
    let reason = ["n:", "N:", "no:", "No:", "NO:"]
        .iter()
        .find_map(|p| a.strip_prefix(p))
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    ApprovalAnswer::Deny(reason)
}

/// The question for the rule of `a`/`w`/`d`/`D`, with the server's
/// suggestion: for an edit (`edit`) a path rule (a glob), else a command rule.
pub fn rule_question(scope: RuleScope, deny: bool, edit: bool, suggested: Option<&RuleSpec>) -> String {
    let place = match scope {
        RuleScope::Session => "this session",
        RuleScope::Workspace => "this workspace",
    };
    let verb = if deny { "Deny" } else { "Allow" };
    let (what, how) = if edit {
        ("edits of files matching", "a glob relative to the session's directory, e.g. src/**/*.rs")
    } else {
        ("commands starting with", "other words, =words for one exact command")
    };
    let fallback = if deny { "deny once without a rule" } else { "deny" };
    match suggested {
        Some(rule) => {
            format!(
                "{verb} in {place} {what}: [{}] (Enter accepts; type {how} to change it; - to {fallback}) ",
                rule.text()
            )
        }
        None => format!("{verb} in {place} {what}: (type {how}; Enter or - to {fallback}) "),
    }
}

/// The question for the MCP rule of `a`/`w`/`d`/`D`: the suggested rule is
/// the call's tool (`server/tool`); `*` takes every tool of the server.
pub fn mcp_rule_question(scope: RuleScope, deny: bool, suggested: &RuleSpec) -> String {
    let place = match scope {
        RuleScope::Session => "this session",
        RuleScope::Workspace => "this workspace",
    };
    let verb = if deny { "Deny" } else { "Allow" };
    let tool = suggested.text();
    let server = tool.split_once('/').map_or(tool, |(server, _)| server);
    let fallback = if deny { "deny once without a rule" } else { "deny" };
    format!(
        "{verb} in {place} the MCP tool [{tool}] (Enter), or * for every tool of the server `{server}`; - to {fallback}: "
    )
}

/// The MCP rule an answer to [`mcp_rule_question`] asks for: empty is the
/// call's tool, `*` (or `server/*`) every tool of its server; anything else
/// is no rule (the call is denied): a rule here only ever names this server.
pub fn mcp_rule_answer(answer: &str, suggested: &RuleSpec) -> Option<RuleSpec> {
    let tool = suggested.text();
    let server = tool.split_once('/')?.0;
    match answer.trim() {
        "" => Some(suggested.clone()),
        a if a == "*" || a == format!("{server}/*") => Some(RuleSpec::mcp(format!("{server}/*"))),
        a if a == tool => Some(suggested.clone()),
        _ => None,
    }
}

/// The rule an answer to [`rule_question`] asks for: an empty answer takes
/// the suggestion; for an edit other text is a path rule's glob, for a
/// command `=words` is an exact rule and other words a prefix rule.
/// `None` (deny, without a rule) when nothing is suggested or given.
pub fn rule_answer(answer: &str, edit: bool, suggested: Option<&RuleSpec>) -> Option<RuleSpec> {
    let a = answer.trim();
    if a.is_empty() {
        return suggested.cloned();
    }
    if a == "-" {
        return None;
    }
    if edit {
        return Some(RuleSpec::path(a));
    }
    match a.strip_prefix('=') {
        Some(exact) if !exact.trim().is_empty() => Some(RuleSpec::command(RuleKind::Exact, exact.trim())),
        Some(_) => None,
        None => Some(RuleSpec::command(RuleKind::Prefix, a)),
    }
}

/// What granting a rule does under `mode`: under `ask` rules apply to
/// nothing until the mode changes, and the person is told so.
pub fn granted_note(mode: ApprovalMode) -> Option<&'static str> {
    (mode == ApprovalMode::Ask).then_some(
        "[rule saved; the approval mode is `ask`, so rules approve nothing until you switch with /mode rules]",
    )
}

/// `[approved by rule `npm test` (session); sandbox workspace-write]` for a
/// call not simply approved by the person, or run in a sandbox.
pub fn approval_note(approved_by: Option<&ApprovedBy>, sandbox: Option<SandboxMode>) -> Option<String> {
    let by = approved_by.and_then(|a| match a.kind {
        // A read inside the workspace, which never asks: nothing to note.
        ApproverKind::User | ApproverKind::Workspace => None,
        ApproverKind::Sandbox => Some("approved by the sandbox (sandboxed-auto)".to_owned()),
        ApproverKind::Rule => Some(match &a.rule {
            Some(rule) => format!("approved by rule `{}` ({})", rule_text(rule), rule.scope.as_str()),
            None => "approved by rule".to_owned(),
        }),
    });
    let sandbox = sandbox.filter(|m| *m != SandboxMode::Off).map(|m| format!("sandbox {}", m.as_str()));
    match (by, sandbox) {
        (None, None) => None,
        (Some(b), None) => Some(format!("[{b}]")),
        (None, Some(s)) => Some(format!("[{s}]")),
        (Some(b), Some(s)) => Some(format!("[{b}; {s}]")),
    }
}

/// `/rules`: every rule in force with its id, and the workspace file.
pub fn rules_list(list: &RulesListResult) -> String {
    let mut out = String::new();
    if list.rules.is_empty() {
        out.push_str("No rules.\n");
    }
    for rule in &list.rules {
        let deny = if rule.effect == Some(RuleEffect::Deny) { " [deny]" } else { "" };
        let (id, scope, kind, text) = (&rule.id, rule.scope.as_str(), rule.kind.as_str(), rule_text(rule));
        out.push_str(&format!("  {id}  {scope} {kind} `{text}`{deny}\n"));
    }
    out.push_str(&format!("Workspace rules file: {}\n", list.workspace_file));
    if let Some(error) = &list.workspace_file_error {
        out.push_str(&format!("[the workspace rules file is ignored: {error}]\n"));
    }
    out.push_str("Remove one with /revoke ID.\n");
    out
}

/// `/compact`: one line saying what happened.
pub fn compacted(result: Result<mino_protocol::CompactResult, impl std::fmt::Display>) -> String {
    match result {
        Ok(r) if r.compacted => {
            let turns = |n: u64| if n == 1 { "1 turn".to_string() } else { format!("{n} turns") };
            let kept = match r.kept_turns {
                0 => String::new(),
                n => format!("; {} with unknown, not executed or recovered results still sent as they were", turns(n)),
            };
            format!(
                "Compacted: {} summarised by the model{kept}. Later questions send the summary instead; every turn stays in the history.\n",
                turns(r.summarized_turns)
            )
        }
        Ok(r) => format!("Not compacted: {}.\n", r.reason.as_deref().unwrap_or("the server gave no reason")),
        Err(e) => format!("Error: {e}\n"),
    }
}

/// A rule's command, or its pattern for a path rule.
fn rule_text(rule: &RuleView) -> String {
    printable(rule.command.as_deref().or(rule.pattern.as_deref()).or(rule.tool.as_deref()).unwrap_or_default())
        .into_owned()
}

/// `/model`: the models to choose from, the session's current one marked.
pub fn models_list(list: &ModelsListResult) -> String {
    let mut out = match list.source {
        ModelSource::Service => "Models the service offers:\n".to_string(),
        ModelSource::Config => "Models in the configuration (the service gave no list):\n".to_string(),
    };
    for model in &list.models {
        let mark = if model.id == list.current { "*" } else { " " };
        let window = model.context_window.map(|w| format!("  ({w} tokens)")).unwrap_or_default();
        out.push_str(&format!("{mark} {}{window}\n", model.id));
    }
    out.push_str("Choose one for this session with /model NAME.\n");
    out
}

/// Only `y` or `yes` (any case, surrounding blanks ignored) agrees.
pub fn is_yes(answer: &str) -> bool {
    let a = answer.trim();
    a.eq_ignore_ascii_case("y") || a.eq_ignore_ascii_case("yes")
}

/// `Command: "echo milk >> shopping.txt"`: debug-quoted, as in the book.
pub fn command_line(command: &str) -> String {
    format!("Command: {command:?}")
}

/// Whether diffs are coloured: only on a terminal, and never when
/// `NO_COLOR` is set to anything (https://no-color.org).
pub fn colour_wanted(is_tty: bool, no_colour: Option<&std::ffi::OsStr>) -> bool {
    is_tty && no_colour.is_none_or(|v| v.is_empty())
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD_RED: &str = "\x1b[1;31m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// A unified diff for the terminal: every line made [`printable`] first (a
/// diff holds the model's text, which may carry control sequences), then,
/// with `colour`, removed lines red, added lines green, hunk headers cyan,
/// file headers bold. The result is safe to write as it is.
pub fn diff_text(diff: &str, colour: bool) -> String {
    let mut out = String::with_capacity(diff.len() + 64);
    for line in diff.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let shown = printable(body);
        let style = if !colour {
            None
        } else if body.starts_with("+++ ") || body.starts_with("--- ") {
            Some(BOLD)
        } else if body.starts_with('+') {
            Some(GREEN)
        } else if body.starts_with('-') {
            Some(RED)
        } else if body.starts_with("@@") {
            Some(CYAN)
        } else {
            None
        };
        match style {
            Some(style) => out.push_str(&format!("{style}{shown}{RESET}{end}")),
            None => out.push_str(&format!("{shown}{end}")),
        }
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The approval screen of an edit call, every line but the question, safe
/// to write as it is (see [`diff_text`]). A path outside the session's
/// directory is said first, in bold red with colour.
pub fn edit_approval_screen(req: &ApprovalRequest, edit: &EditView, colour: bool) -> String {
    let tool = match edit.tool {
        mino_protocol::EditToolName::EditFile => "edit_file",
        mino_protocol::EditToolName::WriteFile => "write_file",
    };
    let mut out = format!("[Tool: {tool}]\n");
    if edit.leaves_workspace {
        let warning = format!("Warning: this file is OUTSIDE the session's directory ({}).", printable(&req.directory));
        if colour {
            out.push_str(&format!("{BOLD_RED}{warning}{RESET}\n"));
        } else {
            out.push_str(&format!("{warning}\n"));
        }
    }
    if let Some(why) = &edit.protected {
        let warning = format!("Protected path: {}; asked whatever rule or mode is in force.", printable(why));
        if colour {
            out.push_str(&format!("{BOLD_RED}{warning}{RESET}\n"));
        } else {
            out.push_str(&format!("{warning}\n"));
        }
    }
    out.push_str(&format!("Path: {}\n", printable(&edit.path)));
    if edit.new_file {
        out.push_str(&format!("New file: {} bytes\n", edit.size));
    } else {
        out.push_str(&format!("Size after the edit: {} bytes\n", edit.size));
    }
    out.push_str(&diff_text(&edit.diff, colour));
    out.push_str(if edit.leaves_workspace { APPROVE_CHOICES_OUTSIDE } else { APPROVE_CHOICES });
    out.push('\n');
    out
}

/// A result's output, safe to write as it is: an edit's (`diff` present)
/// has its diff coloured as [`diff_text`] does; anything else is made
/// [`printable`].
pub fn result_output(output: &str, has_diff: bool, colour: bool) -> String {
    match output.split_once("\n\n").filter(|_| has_diff) {
        Some((head, diff)) => format!("{}\n\n{}", printable(head), diff_text(diff, colour)),
        None => printable(output).into_owned(),
    }
}

/// The approval screen, every line but the question.
pub fn approval_screen(req: &ApprovalRequest) -> String {
    let (env, cut) = environment_line(&req.environment);
    let env = if cut { format!("{env} (e shows it all)") } else { env };
    let deny = if req.deny_rules.is_empty() {
        String::new()
    } else {
        let rules: Vec<String> = req
            .deny_rules
            .iter()
            .map(|r| format!("{} {:?}", rule_kind(r.kind), r.command.as_deref().unwrap_or_default()))
            .collect();
        format!(
            "May reach a denied program: {} (it runs other commands or cannot be read to the end, so it asks)\n",
            printable(&rules.join(", "))
        )
    };
    format!(
        "[Tool: bash]\n{}\nDirectory: {}\nEnvironment: {}\nLimits: timeout {}s, output {} bytes\nSandbox: {} (approval mode {})\n{deny}{APPROVE_CHOICES}\n",
        command_line(&req.command),
        req.directory,
        env,
        req.limits.timeout_seconds,
        req.limits.output_limit_bytes,
        req.sandbox.as_str(),
        req.approval_mode.as_str(),
    )
}

fn rule_kind(kind: mino_protocol::RuleKind) -> &'static str {
    match kind {
        mino_protocol::RuleKind::Exact => "exact",
        mino_protocol::RuleKind::Prefix => "prefix",
        mino_protocol::RuleKind::Path => "path",
        mino_protocol::RuleKind::Mcp => "mcp",
    }
}

/// The longest path or pattern a read's line shows whole.
const READ_PART_SHOWN: usize = 80;
/// The longest outcome (summary, or a failure's first line) a read's line shows whole.
const READ_OUTCOME_SHOWN: usize = 120;

/// `s` on one line, cut to `max` characters with `…`.
fn one_line(s: &str, max: usize) -> String {
    let flat = s.replace('\n', "\\n").replace('\t', " ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max - 1).collect::<String>())
    } else {
        flat
    }
}

/// What a read asked for: `read src/main.rs`, `list *.rs in src`,
/// `search /fn main/` (`in DIR` unless it searched the session's directory).
pub fn read_what(read: &ReadView) -> String {
    let path = one_line(&read.path, READ_PART_SHOWN);
    let here = read.path.is_empty() || read.path == ".";
    let within = if here { String::new() } else { format!(" in {path}") };
    match read.tool {
        ReadToolName::ReadFile => {
            let lines = match (read.start_line, read.end_line) {
                (None, None) => String::new(),
                (start, Some(end)) => format!(" (lines {}-{end})", start.unwrap_or(1)),
                (Some(start), None) => format!(" (from line {start})"),
            };
            format!("read {path}{lines}")
        }
        ReadToolName::ListFiles => match &read.pattern {
            Some(p) => format!("list {}{within}", one_line(p, READ_PART_SHOWN)),
            None if here => "list .".to_owned(),
            None => format!("list {path}"),
        },
        ReadToolName::Search => {
            format!("search /{}/{within}", one_line(read.pattern.as_deref().unwrap_or(""), READ_PART_SHOWN))
        }
    }
}

/// A read in one line, live and in history: `#3 read src/main.rs · lines
/// 1-200 of 812 (31,204 bytes)`; `result` is its status and output (`None`
/// while it runs). `/expand 3` shows the output.
pub fn read_line(number: u64, read: &ReadView, result: Option<(ToolStatus, &str)>) -> String {
    let first_line = |output: &str| one_line(output.lines().next().unwrap_or("").trim(), READ_OUTCOME_SHOWN);
    let outcome = match result {
        None => "pending".to_owned(),
        Some((ToolStatus::Success, output)) => match &read.summary {
            Some(summary) => one_line(summary, READ_OUTCOME_SHOWN),
            None => first_line(output),
        },
        Some((ToolStatus::Unavailable, _)) => "result unavailable: Mino stopped before it was saved".to_owned(),
        Some((status, output)) => match first_line(output) {
            line if line.is_empty() => status.as_str().to_owned(),
            line => format!("{}: {line}", status.as_str()),
        },
    };
    let outside = if read.leaves_workspace { " · outside the session's directory" } else { "" };
    format!("#{number} {} · {outcome}{outside}", read_what(read))
}

/// A read's line as written to the terminal: made [`printable`], dim with
/// `colour`, ended.
pub fn read_shown(line: &str, colour: bool) -> String {
    let shown = printable(line);
    if colour {
        format!("{DIM}{shown}{RESET}\n")
    } else {
        format!("{shown}\n")
    }
}

/// The approval screen of a read that leaves the session's directory, every
/// line but the question: nothing about the file is known before it.
pub fn read_approval_screen(req: &ApprovalRequest, read: &ReadView, colour: bool) -> String {
    let mut out = format!("[Tool: {}]\n", read.tool.as_str());
    let warning = format!(
        "Warning: this reads OUTSIDE the session's directory ({}); the model sees what it reads only if you approve.",
        printable(&req.directory)
    );
    if colour {
        out.push_str(&format!("{BOLD_RED}{warning}{RESET}\n"));
    } else {
        out.push_str(&format!("{warning}\n"));
    }
    out.push_str(&format!("Path: {}\n", printable(&read.path)));
    if let Some(pattern) = &read.pattern {
        let what = if read.tool == ReadToolName::Search { "Regular expression" } else { "Pattern" };
        out.push_str(&format!("{what}: {}\n", printable(pattern)));
    }
    if let (ReadToolName::ReadFile, Some(end)) = (read.tool, read.end_line) {
        out.push_str(&format!("Lines: {}-{end}\n", read.start_line.unwrap_or(1)));
    }
    out.push_str(APPROVE_CHOICES_OUTSIDE);
    out.push('\n');
    out
}

/// `[Result: success, exit code 0]`.
pub fn result_line(status: ToolStatus, exit_code: Option<i32>) -> String {
    match exit_code {
        Some(code) => format!("[Result: {}, exit code {code}]", status.as_str()),
        None => format!("[Result: {}]", status.as_str()),
    }
}

/// `[turn cancelled: reason]` for a turn that did not complete.
pub fn turn_end_line(status: TurnStatus, reason: Option<&str>) -> Option<String> {
    if status == TurnStatus::Completed {
        return None;
    }
    Some(match reason.filter(|r| !r.is_empty()) {
        Some(reason) => format!("[turn {}: {reason}]", status.as_str()),
        None => format!("[turn {}]", status.as_str()),
    })
}

/// `[tokens: 1,234 this turn (1,000 in, 234 out) · 5,678 this session]`,
/// when the model service reported any.
pub fn usage_line(turn: Option<&TokenUsage>, session: Option<&TokenUsage>) -> Option<String> {
    let turn = turn?;
    let mut line = format!(
        "[tokens: {} this turn ({} in, {} out)",
        thousands(turn.total_tokens),
        thousands(turn.input_tokens),
        thousands(turn.output_tokens)
    );
    if let Some(session) = session {
        line.push_str(&format!(" · {} this session", thousands(session.total_tokens)));
    }
    line.push(']');
    Some(line)
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What the recovery notice prints before the gate (empty if nothing was recovered).
pub fn recovery_notice(rec: &RecoveryNotification) -> String {
    let mut out = String::new();
    for repair in &rec.repairs {
        out.push_str(&format!("Session file repaired: {repair}\n"));
    }
    // The book's notice speaks of a tool turn: a turn cut off while only
    // text streamed has nothing to report (it is left out of context).
    if rec.turns.iter().any(|t| !t.calls.is_empty()) {
        out.push_str(RECOVERED);
        out.push('\n');
    }
    if rec.acknowledgement_required {
        out.push_str(UNKNOWN_RESULT);
        out.push('\n');
        for call in unknown_commands(rec) {
            out.push_str(&format!("  {}\n", command_line(&call.command)));
            if let Some(note) = approval_note(call.approved_by.as_ref(), call.sandbox) {
                out.push_str(&format!("  {note}\n"));
            }
            if let Some(evidence) = &call.evidence {
                out.push_str(&format!("  {}\n", evidence_line(&evidence.summary)));
            }
        }
    }
    out
}

/// What the command's supervisor saw, beside an unknown result: it informs,
/// it does not change the result.
pub fn evidence_line(summary: &str) -> String {
    format!("[Evidence: {summary}]")
}

/// Calls whose result is unknown in turns still awaiting acknowledgement.
pub fn unknown_commands(rec: &RecoveryNotification) -> Vec<&RecoveredCallView> {
    let pending =
        |id: &str| rec.unacknowledged_turn_ids.is_empty() || rec.unacknowledged_turn_ids.iter().any(|t| t == id);
    rec.turns
        .iter()
        .filter(|t| pending(&t.turn_id))
        .flat_map(|t| t.calls.iter())
        .filter(|c| c.result.status == ToolStatus::Unknown)
        .collect()
}

/// A list of sessions, one line each: id, last activity, turns, title, and
/// marks for the one `current_mark` names, one another Mino holds, and one
/// with an unknown result to acknowledge once opened.
pub fn sessions(list: &[SessionEntry], current_mark: &str) -> String {
    if list.is_empty() {
        return "No sessions in this directory yet.\n".to_owned();
    }
    let mut out = String::new();
    for s in list {
        // RFC 3339 to the minute: `2026-11-30T10:20:41Z` → `2026-11-30 10:20`.
        let when: String = s.last_active_at.replacen('T', " ", 1).chars().take(16).collect();
        let turns = if s.turns == 1 { "1 turn".to_owned() } else { format!("{} turns", s.turns) };
        let title = s.title.as_deref().unwrap_or("(no question yet)");
        out.push_str(&format!("  {}  {when}  {turns:>9}  {title}", s.session_id));
        if let Some(usage) = &s.usage {
            out.push_str(&format!(" [{} tokens]", thousands(usage.total_tokens)));
        }
        if s.current {
            out.push_str(&format!(" [{current_mark}]"));
        }
        if s.held_elsewhere {
            out.push_str(" [open in another Mino]");
        }
        if s.acknowledgement_required {
            out.push_str(" [unknown result: acknowledge when opened]");
        }
        out.push('\n');
    }
    out
}

/// Restored history, in the same shape a live turn is shown: each turn's
/// items in the order they happened (from a server without them, its calls,
/// then its text, then its notices).
pub fn history(h: &HistoryResult, reads: &mut ReadLog) -> String {
    history_with(h, reads, None)
}

/// [`history`], the assistant's text given to `render` (the markdown
/// renderer, whose output is safe to write). With `render`, everything
/// else is made [`printable`] here, so the whole is safe to write as it is.
/// One image of a question in history: its name and size, and why it
/// cannot be sent when its kept file is gone.
pub fn history_image(image: &mino_protocol::HistoryImage) -> String {
    let name = image.name.clone().unwrap_or_else(|| format!("image {}", &image.sha256[..image.sha256.len().min(12)]));
    match &image.unavailable {
        None => format!("[image: {name}, {}]", human_size(image.size)),
        Some(why) => format!("[image: {name}, {}; unavailable: {why}]", human_size(image.size)),
    }
}

/// A byte count as people read it: `512 B`, `5.0 KiB`, `2.3 MiB`.
pub fn human_size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// Each read is one numbered line, its output kept in `reads` for `/expand`.
pub fn history_with(
    h: &HistoryResult,
    reads: &mut ReadLog,
    mut render: Option<&mut dyn FnMut(&str) -> String>,
) -> String {
    let shown = render.is_some();
    let safe = |s: &str| if shown { printable(s).into_owned() } else { s.to_owned() };
    let mut out = String::new();
    for turn in &h.turns {
        out.push_str(&safe(&format!("{USER_PROMPT}{}\n", turn.input)));
        for image in &turn.images {
            out.push_str(&safe(&format!("{}\n", history_image(image))));
        }
        out.push('\n');
        let legacy;
        let items = if turn.items.is_empty() {
            legacy = legacy_items(turn);
            &legacy
        } else {
            &turn.items
        };
        let mut notices = String::new();
        for item in items {
            match item {
                HistoryItem::Text { text } if !text.is_empty() => {
                    out.push_str(ASSISTANT);
                    match render.as_mut() {
                        Some(render) => out.push_str(render(text).trim_end_matches('\n')),
                        None => out.push_str(text),
                    }
                    out.push('\n');
                }
                HistoryItem::Text { .. } => {}
                HistoryItem::Call { call } if call.read.is_some() => {
                    out.push_str(&history_read(call, reads, shown));
                }
                HistoryItem::Call { call } => {
                    let mut piece = String::new();
                    history_call(&mut piece, call);
                    out.push_str(&safe(&piece));
                }
                HistoryItem::Notice { text } => notices.push_str(&safe(&format!("[{text}]\n"))),
            }
        }
        if let Some(status) = turn.status {
            if let Some(line) = turn_end_line(status, turn.reason.as_deref()) {
                out.push_str(&safe(&line));
                out.push('\n');
            }
        }
        out.push_str(&notices);
        out.push('\n');
    }
    out
}

/// A turn from a server without `items`: calls, text, notices.
fn legacy_items(turn: &HistoryTurn) -> Vec<HistoryItem> {
    let calls = turn.calls.iter().map(|call| HistoryItem::Call { call: call.clone() });
    let text = std::iter::once(HistoryItem::Text { text: turn.text.clone() });
    let notices = turn.notices.iter().map(|text| HistoryItem::Notice { text: text.clone() });
    calls.chain(text).chain(notices).collect()
}

/// A read from history: the same line the live turn showed (dim where the
/// history is coloured), safe to write as it is when `shown`.
fn history_read(call: &HistoryCall, reads: &mut ReadLog, shown: bool) -> String {
    let Some(read) = &call.read else { return String::new() };
    let result = call.result.as_ref().map(|r| (r.status, r.output.as_str()));
    let line = read_line(reads.next_number(), read, result);
    reads.add(line.clone(), call.result.as_ref().map(|r| r.output.clone()).unwrap_or_default());
    if shown {
        read_shown(&line, true)
    } else {
        format!("{line}\n")
    }
}

fn history_call(out: &mut String, call: &HistoryCall) {
    match call.tool {
        // An edit: its summary names the tool and the path.
        Some(_) => out.push_str(&format!("[Tool: {}]\n", call.command)),
        None => {
            out.push_str("[Tool: bash]\n");
            out.push_str(&command_line(&call.command));
            out.push('\n');
        }
    }
    if let Some(note) = approval_note(call.approved_by.as_ref(), call.sandbox) {
        out.push_str(&note);
        out.push('\n');
    }
    match &call.result {
        Some(r) => out.push_str(&result_line(r.status, r.exit_code)),
        None => out.push_str("[Result: pending]"),
    }
    out.push('\n');
    if let Some(diff) = call.result.as_ref().and_then(|r| r.diff.as_deref()) {
        out.push_str(diff);
        if !diff.ends_with('\n') {
            out.push('\n');
        }
    }
    if let Some(evidence) = &call.evidence {
        out.push_str(&evidence_line(&evidence.summary));
        out.push('\n');
    }
}

/// `text` broken at spaces into lines of at most `width` columns (`None`:
/// as it is). A word longer than a line gets a line of its own.
pub fn wrap(text: &str, width: Option<usize>) -> String {
    let Some(width) = width.filter(|w| *w >= 20) else {
        return text.to_owned();
    };
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut used = 0;
        for word in line.split(' ') {
            let len = word.chars().count();
            if used > 0 && used + 1 + len > width {
                out.push('\n');
                used = 0;
            } else if used > 0 {
                out.push(' ');
                used += 1;
            }
            out.push_str(word);
            used += len;
        }
    }
    out
}

/// The longest value the approval screen shows whole; longer ones (PATH,
/// mostly) are cut, and `e` at the approval shows them in full.
pub const ENV_VALUE_SHOWN: usize = 32;

/// The approval screen's environment: short values whole, long ones cut
/// to their start and how much is left out.
pub fn environment_line(env: &std::collections::BTreeMap<String, String>) -> (String, bool) {
    if env.is_empty() {
        return ("(empty)".to_owned(), false);
    }
    let mut cut = false;
    let shown = env
        .iter()
        .map(|(k, v)| {
            let len = v.chars().count();
            if len <= ENV_VALUE_SHOWN {
                return format!("{k}={v}");
            }
            cut = true;
            let head: String = v.chars().take(ENV_VALUE_SHOWN).collect();
            // A list (PATH) is cut between entries where it can be.
            let head = match head.rfind(':') {
                Some(at) if at > 0 => head[..at].to_owned(),
                _ => head,
            };
            let left = if v.contains(':') {
                let entries = v[head.len()..].split(':').filter(|e| !e.is_empty()).count();
                format!("+{entries} more")
            } else {
                format!("+{} chars", len - head.chars().count())
            };
            format!("{k}={head}…({left})")
        })
        .collect::<Vec<_>>()
        .join(", ");
    (shown, cut)
}

/// The full environment, one variable a line (`e` at an approval, `/env`).
pub fn environment_full(env: &std::collections::BTreeMap<String, String>) -> String {
    if env.is_empty() {
        return "Environment: (empty)\n".to_owned();
    }
    let mut out = "Environment:\n".to_owned();
    for (k, v) in env {
        out.push_str(&format!("  {k}={v}\n"));
    }
    out
}

/// The live line below a running command: `[running: make test · 12s]`,
/// its command cut to fit `width`.
pub fn running_status(command: &str, seconds: u64, width: Option<usize>) -> String {
    let elapsed = if seconds < 60 { format!("{seconds}s") } else { format!("{}m{:02}s", seconds / 60, seconds % 60) };
    let command = printable(command).replace(['\n', '\t'], " ");
    let room = width.unwrap_or(80).saturating_sub(elapsed.len() + 16).max(8);
    let command = if command.chars().count() > room {
        format!("{}…", command.chars().take(room - 1).collect::<String>())
    } else {
        command
    };
    format!("[running: {command} · {elapsed}]")
}

/// What a refused request means, in terms of sessions and commands: the
/// sentence shown for JSON-RPC error `code` with the server's `message`
/// (the code itself goes to the log).
pub fn error_sentence(code: i64, message: &str) -> String {
    use mino_protocol::error_code as c;
    match code {
        c::ACKNOWLEDGEMENT_REQUIRED => mino_protocol::message::ACKNOWLEDGEMENT_REQUIRED.to_owned(),
        c::TURN_IN_PROGRESS => {
            "Mino is still busy with the previous question (or opening a session, choosing a model or compacting); wait for it to finish or cancel it with Ctrl+C.".to_owned()
        }
        c::NO_PENDING_APPROVAL => "That command no longer waits for a decision; nothing was run.".to_owned(),
        c::UNKNOWN_TURN => "That turn is no longer running.".to_owned(),
        c::SESSION_UNAVAILABLE => {
            // The server's sentence says what happened; its hints name
            // protocol methods, which the chat's commands stand for here.
            let plain = message.split("; mino/").next().unwrap_or(message).trim_end_matches('.');
            let plain = plain.replace(mino_protocol::method::SESSIONS_LIST, "/sessions");
            if message.contains(mino_protocol::method::SESSIONS_LIST) {
                format!("{plain}; /sessions lists this directory's sessions, and /open takes a unique start of an id.")
            } else {
                format!("{plain}.")
            }
        }
        c::JOURNAL_FAILURE => without_methods(message),
        mino_protocol::jsonrpc_code::METHOD_NOT_FOUND => "This mino-server cannot do that: it is older than mino. Install the two from one release.".to_owned(),
        mino_protocol::jsonrpc_code::INVALID_PARAMS => without_methods(message),
        mino_protocol::jsonrpc_code::SERVER_NOT_INITIALIZED => "The session is not open yet; try again in a moment.".to_owned(),
        _ => format!("mino-server failed: {}", without_methods(message)),
    }
}

/// A server message with protocol method names (`mino/…`) left out.
fn without_methods(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for word in message.split(' ') {
        if word.trim_start_matches(['(', '`', '"']).starts_with("mino/") {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The line an MCP server's state change prints: a `ready` server with its
/// tool count, a `failed` or `exited` one with why and how to restart it;
/// nothing for `starting`.
pub fn mcp_status_line(status: &mino_protocol::McpServerStatus) -> Option<String> {
    use mino_protocol::McpState;
    let name = printable(&status.server);
    let reason = status.reason.as_deref().map(printable).unwrap_or_default();
    match status.state {
        McpState::Starting => None,
        McpState::Ready => {
            let tools = status.tools.as_ref().map_or(0, Vec::len);
            Some(format!("[MCP server `{name}` ready: {tools} tools]\n"))
        }
        McpState::Failed => Some(format!(
            "MCP server `{name}` failed to start: {reason} — its tools are missing; /mcp restart {name}\n"
        )),
        McpState::Exited => {
            Some(format!("MCP server `{name}` exited: {reason} — its tools are missing; /mcp restart {name}\n"))
        }
    }
}

/// One server in `/mcp`'s list.
pub fn mcp_list_line(status: &mino_protocol::McpServerStatus) -> String {
    let mut line = format!("  {}  {}", printable(&status.server), status.state.as_str());
    if let Some(tools) = &status.tools {
        line.push_str(&format!("  {} tools: {}", tools.len(), printable(&tools.join(", "))));
    }
    if let Some(reason) = &status.reason {
        line.push_str(&format!("  ({})", printable(reason)));
    }
    line.push('\n');
    line
}

/// `/mcp`: every MCP server of the session and its state.
pub fn mcp_list(list: &mino_protocol::McpListResult) -> String {
    if list.servers.is_empty() {
        return "No MCP servers are configured ([mcp_servers.NAME] in config.toml).\n".to_string();
    }
    let mut text = String::from("MCP servers:\n");
    for status in &list.servers {
        text.push_str(&mcp_list_line(status));
    }
    text.push_str("/mcp restart NAME starts one again.\n");
    text
}

/// The approval screen of an MCP tool call: the server, the tool, the
/// arguments, and the tool's annotations as its server claims them.
pub fn mcp_approval_screen(req: &ApprovalRequest) -> String {
    let Some(mcp) = &req.mcp else { return approval_screen(req) };
    let arguments = serde_json::from_str::<serde_json::Value>(&mcp.arguments)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| mcp.arguments.clone());
    let mut out = format!(
        "[Tool: MCP server `{}`, tool `{}`]\nArguments:\n{}\n",
        printable(&mcp.server),
        printable(&mcp.tool),
        printable(&arguments)
    );
    if let Some(a) = &mcp.annotations {
        let mut hints = Vec::new();
        for (name, value) in [
            ("read-only", a.read_only_hint),
            ("destructive", a.destructive_hint),
            ("idempotent", a.idempotent_hint),
            ("open-world", a.open_world_hint),
        ] {
            if let Some(value) = value {
                hints.push(format!("{name}: {value}"));
            }
        }
        if !hints.is_empty() {
            out.push_str(&format!("The server says (unchecked): {}\n", hints.join(", ")));
        }
    }
    out.push_str(&format!(
        "Limits: timeout {}s, output {} bytes\n",
        req.limits.timeout_seconds, req.limits.output_limit_bytes
    ));
    out.push_str(APPROVE_CHOICES_MCP);
    out.push('\n');
    out
}

/// A rewind's plan as the person confirms it: what is put back, what is
/// left as it is and why, and the commands whose effects remain.
pub fn rewind_plan(plan: &mino_protocol::RewindPlanResult) -> String {
    let mut text = format!("Rewind {} turn(s):\n", plan.turns.len());
    for file in &plan.files {
        let verb = match file.action {
            mino_protocol::RewindAction::Restore => "put back",
            mino_protocol::RewindAction::Remove => "remove (Mino created it)",
        };
        text.push_str(&format!("  {verb}: {}\n", printable(&file.path)));
    }
    for conflict in &plan.conflicts {
        text.push_str(&format!("  left as it is: {} ({})\n", printable(&conflict.path), printable(&conflict.why)));
    }
    for command in &plan.commands {
        text.push_str(&format!("  not undone (a command ran): {}\n", printable(&command.command)));
    }
    text
}

/// What a rewind did, file by file.
pub fn rewind_outcome(done: &mino_protocol::RewindResult) -> String {
    use mino_protocol::RewindOutcome;
    let mut text = String::new();
    for file in &done.files {
        let what = match file.outcome {
            RewindOutcome::Restored => "put back",
            RewindOutcome::Removed => "removed",
            RewindOutcome::NotRestored => "NOT put back",
            RewindOutcome::Conflict => "left as it is (it changed since the plan)",
            RewindOutcome::Changed => "changed by something else",
        };
        text.push_str(&format!("  {what}: {}", printable(&file.path)));
        if let Some(why) = &file.why {
            text.push_str(&format!(" ({})", printable(why)));
        }
        text.push('\n');
    }
    for command in &done.commands {
        text.push_str(&format!("  not undone (a command ran): {}\n", printable(&command.command)));
    }
    text.push_str(&format!("Rewound {} turn(s); the model is told what was undone.\n", done.turns.len()));
    text
}

#[cfg(test)]
mod tests {

    #[test]
    fn usage_is_shown_with_thousands_separated_and_only_when_reported() {
        let turn = TokenUsage { input_tokens: 1000, output_tokens: 234, total_tokens: 1234, ..Default::default() };
        let session = TokenUsage { total_tokens: 5_678_901, ..turn };
        assert_eq!(
            usage_line(Some(&turn), Some(&session)).as_deref(),
            Some("[tokens: 1,234 this turn (1,000 in, 234 out) · 5,678,901 this session]")
        );
        assert_eq!(usage_line(None, Some(&session)), None, "nothing reported for this turn, nothing shown");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }

    #[test]
    fn control_sequences_are_shown_not_obeyed() {
        assert_eq!(super::printable("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(super::printable("hide\u{1b}[8mthis\r"), "hide^[[8mthis^M");
        assert_eq!(super::printable("bell\u{7}\u{7f}\u{9b}"), "bell^G^?\u{FFFD}");
    }

    use super::*;
    use mino_protocol::{Evidence, EvidenceOutcome, Limits, RecoveredCallView, RecoveredTurnView, ToolResultView};
    use std::collections::BTreeMap;

    #[test]
    fn yes_means_only_y_or_yes() {
        for a in ["y", "Y", "yes", " YES \n", "Yes"] {
            assert!(is_yes(a), "{a:?}");
        }
        for a in ["", "n", "no", "yep", "ye", "y y", "sure"] {
            assert!(!is_yes(a), "{a:?}");
        }
    }

    #[test]
    fn a_session_line_shows_id_time_turns_title_and_marks() {
        let entry = SessionEntry {
            session_id: "20261130T101500-1c2d3e".into(),
            cwd: "/w".into(),
            title: None,
            created_at: "2026-11-30T10:15:00Z".into(),
            last_active_at: "2026-11-30T10:20:41.5Z".into(),
            turns: 1,
            held_elsewhere: true,
            acknowledgement_required: true,
            current: false,
            usage: None,
        };
        let shown = sessions(std::slice::from_ref(&entry), "current");
        assert_eq!(
            shown,
            "  20261130T101500-1c2d3e  2026-11-30 10:20     1 turn  (no question yet) [open in another Mino] \
             [unknown result: acknowledge when opened]\n"
        );
        let current = SessionEntry { current: true, held_elsewhere: false, acknowledgement_required: false, ..entry };
        assert!(sessions(&[current], "current").ends_with("(no question yet) [current]\n"));
        assert_eq!(sessions(&[], "current"), "No sessions in this directory yet.\n");
    }

    #[test]
    fn a_session_line_shows_its_tokens_when_reported() {
        let entry = SessionEntry {
            session_id: "s".into(),
            cwd: "/w".into(),
            title: Some("Milk".into()),
            created_at: "2026-11-30T10:15:00Z".into(),
            last_active_at: "2026-11-30T10:20:41Z".into(),
            turns: 2,
            held_elsewhere: false,
            acknowledgement_required: false,
            current: false,
            usage: Some(TokenUsage {
                input_tokens: 12_000,
                output_tokens: 345,
                total_tokens: 12_345,
                ..Default::default()
            }),
        };
        assert!(sessions(&[entry], "current").ends_with("Milk [12,345 tokens]\n"));
    }

    #[test]
    fn history_shows_a_turn_in_the_order_it_happened() {
        let call = HistoryCall {
            call_id: "call_1".into(),
            command: "ls".into(),
            tool: None,
            read: None,
            result: Some(mino_protocol::ToolResultView {
                status: ToolStatus::Success,
                output: "a.txt\n".into(),
                exit_code: Some(0),
                diff: None,
            }),
            evidence: None,
            approved_by: None,
            sandbox: None,
            directory: None,
            environment: None,
            limits: None,
            edit: None,
        };
        let notice = "Mino runtime notice: the previous turn ended with status cancelled.".to_string();
        let turn = HistoryTurn {
            turn_id: "turn-1".into(),
            input: "Look".into(),
            images: vec![],
            text: "Let me look.".into(),
            calls: vec![call.clone()],
            status: Some(TurnStatus::Cancelled),
            reason: None,
            notices: vec![notice.clone()],
            rewound: false,
            usage: None,
            items: vec![
                HistoryItem::Text { text: "Let me look.".into() },
                HistoryItem::Call { call },
                HistoryItem::Text { text: "Half of".into() },
                HistoryItem::Notice { text: notice },
            ],
        };
        let h = HistoryResult {
            session_id: "s".into(),
            turns: vec![turn],
            has_more: false,
            usage: None,
            instruction_files: vec![],
        };
        let shown = history(&h, &mut ReadLog::new());
        let at = |needle: &str| shown.find(needle).unwrap_or_else(|| panic!("{needle:?} not in {shown}"));
        assert!(at("Let me look.") < at("[Tool: bash]"), "{shown}");
        assert!(at("[Tool: bash]") < at("Half of"), "{shown}");
        assert!(at("Half of") < at("[Mino runtime notice"), "{shown}");
    }

    fn read_call(call_id: &str, read: ReadView, status: ToolStatus, output: &str) -> HistoryCall {
        HistoryCall {
            call_id: call_id.into(),
            command: format!("read {}", read.path),
            tool: Some(mino_protocol::ToolName::ReadFile),
            read: Some(read),
            result: Some(mino_protocol::ToolResultView { status, output: output.into(), exit_code: None, diff: None }),
            evidence: None,
            approved_by: Some(ApprovedBy { kind: ApproverKind::Workspace, rule: None }),
            sandbox: Some(SandboxMode::Off),
            directory: None,
            environment: None,
            limits: None,
            edit: None,
        }
    }

    fn read_view(tool: ReadToolName, path: &str, pattern: Option<&str>, summary: Option<&str>) -> ReadView {
        ReadView {
            tool,
            path: path.into(),
            pattern: pattern.map(str::to_owned),
            start_line: None,
            end_line: None,
            leaves_workspace: false,
            summary: summary.map(str::to_owned),
            truncated: false,
        }
    }

    #[test]
    fn a_read_is_one_line_saying_what_it_read_and_what_came_back() {
        let read = read_view(ReadToolName::ReadFile, "src/main.rs", None, Some("lines 1-200 of 812 (31204 bytes)"));
        assert_eq!(
            read_line(
                3,
                &read,
                Some((ToolStatus::Success, "lines 1-200 of 812 (31204 bytes)\n     1\tuse std::io;\n"))
            ),
            "#3 read src/main.rs · lines 1-200 of 812 (31204 bytes)"
        );
        let ranged = ReadView { start_line: Some(10), end_line: Some(40), ..read.clone() };
        assert_eq!(read_line(1, &ranged, None), "#1 read src/main.rs (lines 10-40) · pending");
        let search = read_view(ReadToolName::Search, ".", Some("fn main"), Some("12 matches in 4 files"));
        assert_eq!(
            read_line(2, &search, Some((ToolStatus::Success, ""))),
            "#2 search /fn main/ · 12 matches in 4 files"
        );
        let within = read_view(ReadToolName::Search, "src", Some("x("), None);
        assert_eq!(
            read_line(4, &within, Some((ToolStatus::Failed, "Not a valid regular expression: unclosed group\nmore"))),
            "#4 search /x(/ in src · failed: Not a valid regular expression: unclosed group"
        );
        let list = read_view(ReadToolName::ListFiles, "src", Some("**/*.rs"), Some("48 files"));
        assert_eq!(read_line(5, &list, Some((ToolStatus::Success, ""))), "#5 list **/*.rs in src · 48 files");
        let gone = read_view(ReadToolName::ReadFile, "big.txt", None, None);
        assert_eq!(
            read_line(6, &gone, Some((ToolStatus::Unavailable, "The read was started but its result was not saved."))),
            "#6 read big.txt · result unavailable: Mino stopped before it was saved"
        );
        let outside =
            ReadView { leaves_workspace: true, ..read_view(ReadToolName::ReadFile, "/etc/hosts", None, None) };
        assert_eq!(
            read_line(7, &outside, Some((ToolStatus::Refused, "Denied by the user"))),
            "#7 read /etc/hosts · refused: Denied by the user · outside the session's directory"
        );
        // Dim on a colour terminal, control sequences never obeyed.
        assert_eq!(read_shown("#1 read a\u{1b}[8m", true), "\u{1b}[2m#1 read a^[[8m\u{1b}[0m\n");
        assert_eq!(read_shown("#1 read a", false), "#1 read a\n");
    }

    #[test]
    fn a_read_leaving_the_workspace_asks_with_its_path_and_no_rule() {
        let read = ReadView { leaves_workspace: true, ..read_view(ReadToolName::ReadFile, "/etc/hosts", None, None) };
        let req = ApprovalRequest {
            mcp: None,
            turn_id: "t".into(),
            seq: 1,
            session_id: "s".into(),
            call_id: "c".into(),
            command: "read_file /etc/hosts".into(),
            directory: "/home/ana/shop".into(),
            environment: Default::default(),
            limits: mino_protocol::Limits { timeout_seconds: 0, output_limit_bytes: 0 },
            sandbox: SandboxMode::Off,
            approval_mode: ApprovalMode::Ask,
            suggested_rule: None,
            edit: None,
            read: Some(read.clone()),
            deny_rules: vec![],
        };
        assert_eq!(
            read_approval_screen(&req, &read, false),
            format!(
                "[Tool: read_file]\nWarning: this reads OUTSIDE the session's directory (/home/ana/shop); the model sees what it reads only if you approve.\nPath: /etc/hosts\n{APPROVE_CHOICES_OUTSIDE}\n"
            )
        );
    }

    #[test]
    fn history_shows_each_read_as_the_line_a_live_turn_shows_and_keeps_its_output_for_expand() {
        let read = read_view(ReadToolName::ReadFile, "a.txt", None, Some("lines 1-1 of 1 (6 bytes)"));
        let output = "lines 1-1 of 1 (6 bytes)\n     1\talpha\n";
        let search = read_view(ReadToolName::Search, ".", Some("alpha"), Some("1 match in 1 file"));
        let turn = HistoryTurn {
            turn_id: "turn-1".into(),
            input: "Read a.txt".into(),
            text: "It says alpha.".into(),
            calls: vec![],
            status: Some(TurnStatus::Completed),
            reason: None,
            notices: vec![],
            rewound: false,
            usage: None,
            images: vec![],
            items: vec![
                HistoryItem::Call { call: read_call("call_1", read.clone(), ToolStatus::Success, output) },
                HistoryItem::Call {
                    call: read_call("call_2", search, ToolStatus::Success, "1 match in 1 file\na.txt:1:alpha\n"),
                },
                HistoryItem::Text { text: "It says alpha.".into() },
            ],
        };
        let h = HistoryResult {
            session_id: "s".into(),
            turns: vec![turn],
            has_more: false,
            usage: None,
            instruction_files: vec![],
        };
        let mut reads = ReadLog::new();
        let shown = history(&h, &mut reads);
        assert_eq!(
            shown,
            "You> Read a.txt\n\n#1 read a.txt · lines 1-1 of 1 (6 bytes)\n#2 search /alpha/ · 1 match in 1 file\nAssistant> It says alpha.\n\n"
        );
        assert!(!shown.contains("[Tool:") && !shown.contains("[Result:"), "{shown}");
        assert_eq!(reads.expand(Some("1")), format!("#1 read a.txt · lines 1-1 of 1 (6 bytes)\n{output}"));
        // The live turn's line for the same result is the same line.
        assert_eq!(
            read_line(1, &read, Some((ToolStatus::Success, output))),
            "#1 read a.txt · lines 1-1 of 1 (6 bytes)"
        );
        // Coloured (rendered) history: the same line, dim.
        let mut render = |t: &str| format!("{t}\n");
        let coloured = history_with(&h, &mut ReadLog::new(), Some(&mut render));
        assert!(coloured.contains("\u{1b}[2m#1 read a.txt · lines 1-1 of 1 (6 bytes)\u{1b}[0m\n"), "{coloured:?}");
    }

    #[test]
    fn rendered_history_makes_everything_but_the_rendered_text_printable() {
        let turn = HistoryTurn {
            turn_id: "t".into(),
            input: "ask\u{1b}[8m".into(),
            images: vec![],
            text: "**x**".into(),
            calls: vec![],
            status: Some(TurnStatus::Failed),
            reason: Some("bad\u{7}".into()),
            notices: vec![],
            rewound: false,
            usage: None,
            items: vec![HistoryItem::Text { text: "**x**".into() }],
        };
        let h = HistoryResult {
            session_id: "s".into(),
            turns: vec![turn],
            has_more: false,
            usage: None,
            instruction_files: vec![],
        };
        let mut render = |t: &str| format!("\u{1b}[1m{}\u{1b}[22m\n", t.trim_matches('*'));
        let shown = history_with(&h, &mut ReadLog::new(), Some(&mut render));
        assert!(shown.starts_with("You> ask^[[8m\n\n"), "{shown:?}");
        assert!(shown.contains("Assistant> \u{1b}[1mx\u{1b}[22m\n"), "{shown:?}");
        assert!(shown.contains("[turn failed: bad^G]"), "{shown:?}");
    }

    #[test]
    fn approval_answers_and_rules() {
        assert_eq!(approval_answer(" y "), ApprovalAnswer::Approve);
        assert_eq!(approval_answer("a"), ApprovalAnswer::AllowSession);
        let tool = RuleSpec::mcp("fs/read_file");
        assert_eq!(mcp_rule_answer("", &tool), Some(tool.clone()));
        assert_eq!(mcp_rule_answer(" * ", &tool), Some(RuleSpec::mcp("fs/*")));
        assert_eq!(mcp_rule_answer("fs/*", &tool), Some(RuleSpec::mcp("fs/*")));
        assert_eq!(mcp_rule_answer("git/*", &tool), None, "another server's rule is never granted here");
        assert_eq!(mcp_rule_answer("-", &tool), None);
        assert!(mcp_rule_question(RuleScope::Session, false, &tool).contains("every tool of the server `fs`"));
        assert_eq!(approval_answer("W"), ApprovalAnswer::AllowWorkspace);
        assert_eq!(
            approval_answer("n: use the test database"),
            ApprovalAnswer::Deny(Some("use the test database".into()))
        );
        assert_eq!(approval_answer("n"), ApprovalAnswer::Deny(None));
        assert_eq!(approval_answer("always"), ApprovalAnswer::Deny(None));
        assert_eq!(approval_answer("d"), ApprovalAnswer::DenySession);
        assert_eq!(approval_answer("D"), ApprovalAnswer::DenyWorkspace);
        let suggested = RuleSpec::command(RuleKind::Prefix, "npm test");
        assert_eq!(rule_answer("", false, Some(&suggested)), Some(suggested.clone()));
        assert_eq!(rule_answer("-", false, Some(&suggested)), None);
        assert_eq!(rule_answer("", false, None), None);
        assert_eq!(rule_answer("npm run", false, Some(&suggested)).and_then(|r| r.command), Some("npm run".into()));
        assert_eq!(rule_answer("=make all", false, None), Some(RuleSpec::command(RuleKind::Exact, "make all")));
        let path = RuleSpec::path("src/a.rs");
        assert_eq!(rule_answer("", true, Some(&path)), Some(path.clone()));
        assert_eq!(rule_answer("src/*.rs", true, Some(&path)), Some(RuleSpec::path("src/*.rs")));
        assert_eq!(rule_answer("-", true, Some(&path)), None);
        assert_eq!(
            rule_question(RuleScope::Workspace, true, true, Some(&path)),
            "Deny in this workspace edits of files matching: [src/a.rs] (Enter accepts; type a glob relative to the session's directory, e.g. src/**/*.rs to change it; - to deny once without a rule) "
        );
    }

    #[test]
    fn approval_screen_matches_the_book() {
        let req = ApprovalRequest {
            mcp: None,
            turn_id: "t".into(),
            seq: 1,
            session_id: "s".into(),
            call_id: "call_1".into(),
            command: "echo milk >> shopping.txt".into(),
            directory: "/w".into(),
            environment: BTreeMap::from([("HOME".into(), "/h".into()), ("PATH".into(), "/usr/bin".into())]),
            limits: Limits { timeout_seconds: 120, output_limit_bytes: 65536 },
            edit: None,
            read: None,
            sandbox: SandboxMode::Off,
            approval_mode: ApprovalMode::Ask,
            suggested_rule: None,
            deny_rules: Vec::new(),
        };
        assert_eq!(
            approval_screen(&req),
            format!("[Tool: bash]\nCommand: \"echo milk >> shopping.txt\"\nDirectory: /w\nEnvironment: HOME=/h, PATH=/usr/bin\nLimits: timeout 120s, output 65536 bytes\nSandbox: off (approval mode ask)\n{APPROVE_CHOICES}\n")
        );
        let deny = mino_protocol::RuleView {
            id: "r".into(),
            kind: mino_protocol::RuleKind::Prefix,
            command: Some("rm".into()),
            pattern: None,
            tool: None,
            scope: mino_protocol::RuleScope::Session,
            effect: Some(mino_protocol::RuleEffect::Deny),
        };
        let reaching = ApprovalRequest { command: "env rm x".into(), deny_rules: vec![deny], ..req };
        assert!(
            approval_screen(&reaching).contains("May reach a denied program: prefix \"rm\""),
            "{}",
            approval_screen(&reaching)
        );
    }

    #[test]
    fn recovery_notice_lists_unknown_commands() {
        let rec = RecoveryNotification {
            session_id: "s".into(),
            turns: vec![RecoveredTurnView {
                turn_id: "t1".into(),
                status: TurnStatus::Interrupted,
                calls: vec![RecoveredCallView {
                    call_id: "c".into(),
                    command: "echo milk >> shopping.txt".into(),
                    tool: None,
                    read: None,
                    result: ToolResultView {
                        status: ToolStatus::Unknown,
                        output: String::new(),
                        exit_code: None,
                        diff: None,
                    },
                    evidence: Some(Evidence {
                        outcome: EvidenceOutcome::Exited,
                        exit_code: Some(0),
                        pid: 7,
                        started_at: "2026-01-01T00:00:00Z".into(),
                        ended_at: None,
                        output_tail: String::new(),
                        summary: "the command exited 0 after Mino stopped; it printed nothing".into(),
                    }),
                    approved_by: None,
                    sandbox: None,
                }],
            }],
            acknowledgement_required: true,
            unacknowledged_turn_ids: vec!["t1".into()],
            repairs: vec![],
            rewind: None,
        };
        let text = recovery_notice(&rec);
        assert!(text.starts_with(RECOVERED));
        assert!(text.contains(UNKNOWN_RESULT));
        assert!(text.contains(
            "  Command: \"echo milk >> shopping.txt\"\n  [Evidence: the command exited 0 after Mino stopped; it printed nothing]\n"
        ));

        // A call a rule approved, run in a sandbox, says so.
        let mut rec = rec;
        let call = &mut rec.turns[0].calls[0];
        call.approved_by = Some(ApprovedBy {
            kind: ApproverKind::Rule,
            rule: Some(mino_protocol::RuleView {
                id: "rule-1".into(),
                kind: RuleKind::Prefix,
                command: Some("echo milk".into()),
                pattern: None,
                tool: None,
                scope: RuleScope::Workspace,
                effect: None,
            }),
        });
        call.sandbox = Some(SandboxMode::WorkspaceWrite);
        assert!(recovery_notice(&rec).contains(
            "  Command: \"echo milk >> shopping.txt\"\n  [approved by rule `echo milk` (workspace); sandbox workspace-write]\n"
        ));
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(colour_wanted(true, None));
        assert!(colour_wanted(true, Some(OsStr::new(""))));
        assert!(!colour_wanted(true, Some(OsStr::new("1"))));
        assert!(!colour_wanted(false, None));
    }

    #[test]
    fn an_edit_approval_shows_the_path_and_the_diff_coloured_or_plain() {
        let diff = "--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,2 +1,3 @@\n bread\n+milk\n-jam\x1b[8m\n";
        let edit = EditView {
            tool: mino_protocol::EditToolName::EditFile,
            path: "../elsewhere/shopping.txt".into(),
            new_file: false,
            size: 11,
            diff: diff.into(),
            leaves_workspace: true,
            protected: None,
        };
        let req = ApprovalRequest {
            mcp: None,
            turn_id: "t".into(),
            seq: 1,
            session_id: "s".into(),
            call_id: "call_1".into(),
            command: "edit_file ../elsewhere/shopping.txt".into(),
            directory: "/w".into(),
            environment: BTreeMap::new(),
            limits: Limits { timeout_seconds: 0, output_limit_bytes: 0 },
            edit: Some(edit.clone()),
            read: None,
            sandbox: SandboxMode::Off,
            approval_mode: ApprovalMode::Ask,
            suggested_rule: None,
            deny_rules: Vec::new(),
        };
        let plain = edit_approval_screen(&req, &edit, false);
        assert_eq!(
            plain,
format!(            "[Tool: edit_file]\nWarning: this file is OUTSIDE the session's directory (/w).\nPath: ../elsewhere/shopping.txt\nSize after the edit: 11 bytes\n--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,2 +1,3 @@\n bread\n+milk\n-jam^[[8m\n{APPROVE_CHOICES_OUTSIDE}\n")
        );
        let coloured = edit_approval_screen(&req, &edit, true);
        assert!(coloured.contains("\x1b[32m+milk\x1b[0m\n"), "{coloured:?}");
        assert!(coloured.contains("\x1b[31m-jam^[[8m\x1b[0m\n"), "the model's escape stays visible: {coloured:?}");
        assert!(coloured.contains("\x1b[1;31mWarning: this file is OUTSIDE"), "{coloured:?}");
        let protected = EditView { protected: Some("it is a direnv file (.envrc)".into()), ..edit.clone() };
        assert!(edit_approval_screen(&req, &protected, false)
            .contains("Protected path: it is a direnv file (.envrc); asked whatever rule or mode is in force.\n"));
    }

    #[test]
    fn turn_end_lines() {
        assert_eq!(turn_end_line(TurnStatus::Completed, None), None);
        assert_eq!(
            turn_end_line(TurnStatus::Cancelled, Some("cancelled by the user")).as_deref(),
            Some("[turn cancelled: cancelled by the user]")
        );
        assert_eq!(turn_end_line(TurnStatus::Failed, None).as_deref(), Some("[turn failed]"));
    }
}
