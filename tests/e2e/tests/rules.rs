//! Approval rules, approval modes and the command sandbox, end to end: the
//! real server against the mock model, every decision over the wire, and
//! what is on file checked in the session's records.

use std::path::Path;

use mino_e2e::{chat, journal_records, open, session_files, wire, work_dir, MockModel, Reply, Server, Spawn, TIMEOUT};
use serde_json::{json, Value};

const INVALID_PARAMS: i64 = -32602;

fn options(
    cwd: &Path,
    mode: Option<wire::ApprovalMode>,
    sandbox: Option<wire::SandboxMode>,
) -> wire::InitializationOptions {
    wire::InitializationOptions {
        cwd: Some(cwd.display().to_string()),
        approval_mode: mode,
        sandbox,
        ..Default::default()
    }
}

async fn open_with(
    server: &mut Server,
    options: &wire::InitializationOptions,
) -> (wire::ServerCapabilities, wire::RecoveryNotification) {
    let caps = Server::capabilities(&server.initialize(options).await.expect("initialize"));
    let recovery = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    (caps, recovery)
}

fn rule(kind: wire::RuleKind, command: &str) -> wire::RuleSpec {
    wire::RuleSpec::command(kind, command)
}

/// What a turn showed: the approval requests and the started calls, in order.
#[derive(Default)]
struct Seen {
    requests: Vec<wire::ApprovalRequest>,
    started: Vec<wire::ToolStarted>,
    results: Vec<wire::ToolResult>,
}

/// Runs `turn_id` to its end, answering each approval request with what
/// `decide` returns for it.
async fn drive(
    server: &mut Server,
    turn_id: &str,
    mut decide: impl FnMut(&wire::ApprovalRequest) -> wire::ApprovalParams,
) -> (Seen, wire::TurnEnded) {
    let mut seen = Seen::default();
    loop {
        let found = server.next_notification_of(turn_id, TIMEOUT).await;
        match found.method.as_str() {
            wire::method::APPROVAL_REQUEST => {
                let request: wire::ApprovalRequest = found.parse();
                let params = decide(&request);
                let _: wire::EmptyResult =
                    server.call(wire::method::APPROVAL, &params).await.expect("decision accepted");
                seen.requests.push(request);
            }
            wire::method::TOOL_STARTED => seen.started.push(found.parse()),
            wire::method::TOOL_RESULT => seen.results.push(found.parse()),
            wire::method::TURN_ENDED => return (seen, found.parse()),
            _ => {}
        }
    }
}

fn deny(request: &wire::ApprovalRequest) -> wire::ApprovalParams {
    wire::ApprovalParams::new(request.turn_id.clone(), request.call_id.clone(), wire::Decision::Deny)
}

fn allow(request: &wire::ApprovalRequest, decision: wire::Decision, spec: wire::RuleSpec) -> wire::ApprovalParams {
    wire::ApprovalParams {
        rule: Some(spec),
        ..wire::ApprovalParams::new(request.turn_id.clone(), request.call_id.clone(), decision)
    }
}

fn journal(home: &Path) -> Vec<Value> {
    journal_records(&session_files(home).pop().expect("a session file"))
}

fn record_of<'a>(records: &'a [Value], kind: &str, call_id: &str) -> Option<&'a Value> {
    records.iter().find(|r| r["kind"] == kind && r["call_id"] == call_id)
}

fn position(records: &[Value], kind: &str, call_id: &str) -> usize {
    records
        .iter()
        .position(|r| r["kind"] == kind && r["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no {kind} for {call_id}"))
}

async fn history(server: &mut Server) -> wire::HistoryResult {
    server.call(wire::method::HISTORY, &json!({})).await.expect("history")
}

async fn rules_list(server: &mut Server) -> wire::RulesListResult {
    server.call(wire::method::RULES_LIST, &json!({})).await.expect("rules/list")
}

async fn finish(mut server: Server) {
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

/// A session rule approves exactly the commands it covers: a table of near
/// misses, run through the mock in one turn, each asks.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_rule_approves_only_what_it_covers_and_every_near_miss_asks() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let near_misses: &[(&str, &str)] = &[
        ("m1", "echo okay"),             // a longer first word, not a word prefix
        ("m2", "echo ok > covered.txt"), // a redirection: not plain
        ("m3", "echo ok; touch m3.txt"), // a second command the rule does not cover
        ("m4", "echo ok && touch m4.txt"),
        ("m5", "echo ok $(touch m5.txt)"), // a substitution
        ("m6", "ECHO ok"),                 // another word
        ("m7", "/bin/echo ok"),            // another program path
        ("m8", "echo"),                    // shorter than the rule
        ("m9", "FOO=1 echo ok"),           // an assignment
    ];
    let mut calls: Vec<(&str, &str)> = vec![("c1", "echo ok first"), ("c2", "echo ok second")];
    calls.extend_from_slice(near_misses);
    let mock = MockModel::start(vec![Reply::calls(&calls), Reply::text("Done.")]).await.expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    let (caps, _) = open_with(&mut server, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    assert_eq!(caps.approval_mode, wire::ApprovalMode::Rules);
    assert_eq!(caps.sandbox, wire::SandboxMode::Off);
    assert!(!caps.sandbox_support.is_empty());

    let turn = chat(&mut server, "Run the checks.").await;
    let (seen, end) = drive(&mut server, &turn, |request| match request.call_id.as_str() {
        "c1" => {
            assert_eq!(request.suggested_rule, Some(rule(wire::RuleKind::Prefix, "echo ok")));
            assert_eq!(request.approval_mode, wire::ApprovalMode::Rules);
            assert_eq!(request.sandbox, wire::SandboxMode::Off);
            allow(request, wire::Decision::AllowSession, rule(wire::RuleKind::Prefix, "echo ok"))
        }
        _ => deny(request),
    })
    .await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    let asked: Vec<&str> = seen.requests.iter().map(|r| r.call_id.as_str()).collect();
    let mut expected = vec!["c1"];
    expected.extend(near_misses.iter().map(|(id, _)| *id));
    assert_eq!(asked, expected, "c2 ran by the rule; every near miss asked");
    for name in ["covered.txt", "m3.txt", "m4.txt", "m5.txt"] {
        assert!(!cwd.join(name).exists(), "{name}: a near miss ran without asking");
    }

    // The granting call was approved by the person; c2 by the rule.
    let by: Vec<(String, wire::ApproverKind)> =
        seen.started.iter().map(|s| (s.call_id.clone(), s.approved_by.kind)).collect();
    assert_eq!(by, [("c1".to_string(), wire::ApproverKind::User), ("c2".to_string(), wire::ApproverKind::Rule)]);
    let by_rule = seen.started[1].approved_by.rule.clone().expect("the rule is named");
    assert_eq!(
        (by_rule.kind, by_rule.command.as_deref(), by_rule.scope),
        (wire::RuleKind::Prefix, Some("echo ok"), wire::RuleScope::Session)
    );

    // On file: the rule record is synced before the approval it made.
    let records = journal(home.path());
    let granted = record_of(&records, "rule", "c1").expect("rule record");
    assert_eq!(granted["v"], 3);
    assert_eq!(granted["rule"]["id"], by_rule.id.as_str());
    assert_eq!(granted["rule"]["command"], "echo ok");
    assert_eq!(granted["rule"]["scope"], "session");
    assert!(position(&records, "rule", "c1") < position(&records, "approval", "c2"));
    let approval = record_of(&records, "approval", "c2").expect("approval of c2");
    assert_eq!(approval["approved_by"], "rule");
    assert_eq!(approval["rules"][0]["id"], by_rule.id.as_str());
    assert!(record_of(&records, "approval", "c1").expect("c1").get("approved_by").is_none());

    // History says the same, and rules/list lists the rule.
    let h = history(&mut server).await;
    let c2 = h.turns[0].calls.iter().find(|c| c.call_id == "c2").expect("c2 in history");
    assert_eq!(c2.approved_by.as_ref().map(|a| a.kind), Some(wire::ApproverKind::Rule));
    assert_eq!(
        c2.approved_by.as_ref().and_then(|a| a.rule.as_ref()).and_then(|r| r.command.as_deref()),
        Some("echo ok")
    );
    assert_eq!(c2.sandbox, Some(wire::SandboxMode::Off));
    let m1 = h.turns[0].calls.iter().find(|c| c.call_id == "m1").expect("m1 in history");
    assert_eq!(m1.approved_by, None, "a denied call was approved by no one");
    let list = rules_list(&mut server).await;
    assert_eq!(list.rules.iter().map(|r| r.command.as_deref()).collect::<Vec<_>>(), [Some("echo ok")]);
    finish(server).await;
}

/// A rule the matcher refuses is `-32602`, runs nothing, and leaves the
/// call waiting for a decision.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_rule_runs_nothing_and_the_call_still_waits() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock =
        MockModel::start(vec![Reply::call("c1", "bash -c 'touch ran.txt'"), Reply::text("Done.")]).await.expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Go.").await;
    let request: wire::ApprovalRequest =
        server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    let refused = server
        .call::<_, wire::EmptyResult>(
            wire::method::APPROVAL,
            &allow(&request, wire::Decision::AllowSession, rule(wire::RuleKind::Prefix, "bash")),
        )
        .await
        .expect_err("a lone command runner is refused");
    assert_eq!(refused.code, INVALID_PARAMS, "{refused}");
    assert!(refused.message.contains("would allow any command"), "{refused}");
    assert!(!cwd.join("ran.txt").exists());
    let missing = server
        .call::<_, wire::EmptyResult>(
            wire::method::APPROVAL,
            &wire::ApprovalParams::new(turn.clone(), "c1", wire::Decision::AllowWorkspace),
        )
        .await
        .expect_err("allowWorkspace needs a rule");
    assert_eq!(missing.code, INVALID_PARAMS, "{missing}");
    // Still pending: a plain denial is accepted.
    let _: wire::EmptyResult = server.call(wire::method::APPROVAL, &deny(&request)).await.expect("deny");
    let (_, end) = drive(&mut server, &turn, deny).await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    assert!(rules_list(&mut server).await.rules.is_empty(), "no rule was granted");
    finish(server).await;
}

/// The reason a person gives with a denial is what the model reads.
#[tokio::test(flavor = "multi_thread")]
async fn a_denial_reason_reaches_the_model() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![Reply::call("c1", "psql prod -c 'drop table users'"), Reply::text("Understood.")])
        .await
        .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Clean up the users table.").await;
    let (seen, _) = drive(&mut server, &turn, |request| wire::ApprovalParams {
        reason: Some("use the test database".into()),
        ..deny(request)
    })
    .await;
    assert_eq!(seen.results[0].status, wire::ToolStatus::Refused);
    assert_eq!(seen.results[0].output, "Denied by the user: use the test database");
    let requests = mock.wait_for_requests(2, TIMEOUT).await;
    let outputs: Vec<String> = requests[1].body["input"]
        .as_array()
        .expect("input")
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].to_string())
        .collect();
    assert_eq!(outputs.len(), 1);
    assert!(outputs[0].contains("Denied by the user: use the test database"), "{outputs:?}");
    // A reason goes only with a denial.
    finish(server).await;
}

/// Under `ask` a granted rule approves nothing (every command asks) until
/// the mode is changed with `mino/settings/update`.
#[tokio::test(flavor = "multi_thread")]
async fn under_ask_a_granted_rule_applies_only_once_the_mode_is_rules() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::calls(&[("c1", "echo same one"), ("c2", "echo same two")]),
        Reply::text("Done."),
        Reply::call("c3", "echo same three"),
        Reply::text("Done again."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    let (caps, _) = open_with(&mut server, &options(&cwd, None, None)).await;
    assert_eq!(caps.approval_mode, wire::ApprovalMode::Ask);
    let turn = chat(&mut server, "One.").await;
    let (seen, _) = drive(&mut server, &turn, |request| match request.call_id.as_str() {
        "c1" => allow(request, wire::Decision::AllowSession, rule(wire::RuleKind::Prefix, "echo same")),
        _ => wire::ApprovalParams::new(request.turn_id.clone(), request.call_id.clone(), wire::Decision::Approve),
    })
    .await;
    assert_eq!(seen.requests.iter().map(|r| r.call_id.as_str()).collect::<Vec<_>>(), ["c1", "c2"], "ask asks");
    assert_eq!(seen.requests[1].approval_mode, wire::ApprovalMode::Ask);

    let settings: wire::SettingsResult =
        server.call(wire::method::SETTINGS_UPDATE, &json!({"approvalMode": "rules"})).await.expect("settings/update");
    assert_eq!(settings.approval_mode, wire::ApprovalMode::Rules);
    let turn = chat(&mut server, "Two.").await;
    let (seen, _) = drive(&mut server, &turn, deny).await;
    assert!(seen.requests.is_empty(), "the session rule applies under `rules`");
    assert_eq!(seen.started[0].approved_by.kind, wire::ApproverKind::Rule);
    finish(server).await;
}

/// A workspace rule is in the workspace rules file: a later session (after
/// a restart) applies it without asking; revoking it rewrites the file.
#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_rule_survives_a_restart_and_revoking_it_rewrites_the_file() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::call("c1", "echo ws one"),
        Reply::text("Done."),
        Reply::call("c2", "echo ws two"),
        Reply::text("Done."),
        Reply::call("c3", "echo ws three"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut first = Server::spawn_in(home.path(), &mock).await;
    open_with(&mut first, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    let turn = chat(&mut first, "One.").await;
    drive(&mut first, &turn, |request| {
        allow(request, wire::Decision::AllowWorkspace, rule(wire::RuleKind::Prefix, "echo ws"))
    })
    .await;
    let file = rules_list(&mut first).await.workspace_file;
    finish(first).await;
    let text = std::fs::read_to_string(&file).expect("the workspace rules file");
    assert!(text.contains("command = \"echo ws\""), "{text}");
    // The person's own comment survives the revoke below.
    std::fs::write(&file, format!("# kept: my note\n{text}")).expect("add a comment");

    let mut second = Server::spawn_in(home.path(), &mock).await;
    let fresh =
        wire::InitializationOptions { new_session: true, ..options(&cwd, Some(wire::ApprovalMode::Rules), None) };
    open_with(&mut second, &fresh).await;
    let list = rules_list(&mut second).await;
    assert_eq!(list.rules.len(), 1);
    assert_eq!((list.rules[0].scope, list.rules[0].command.as_deref()), (wire::RuleScope::Workspace, Some("echo ws")));
    let turn = chat(&mut second, "Two.").await;
    let (seen, _) = drive(&mut second, &turn, deny).await;
    assert!(seen.requests.is_empty(), "the workspace rule applied in a new session");
    let by = seen.started[0].approved_by.rule.clone().expect("rule");
    assert_eq!(by.scope, wire::RuleScope::Workspace);

    let _: wire::EmptyResult = second.call(wire::method::RULES_REVOKE, &json!({"id": by.id})).await.expect("revoke");
    let text = std::fs::read_to_string(&file).expect("rules file");
    assert!(!text.contains("echo ws"), "{text}");
    assert!(text.contains("# kept: my note"), "{text}");
    let unknown = second.request(wire::method::RULES_REVOKE, json!({"id": by.id})).await.expect_err("gone");
    assert_eq!(unknown.code, INVALID_PARAMS);
    let turn = chat(&mut second, "Three.").await;
    let (seen, _) = drive(&mut second, &turn, deny).await;
    assert_eq!(seen.requests.len(), 1, "revoked: it asks again");
    finish(second).await;
}

/// A malformed workspace rules file is reported (with its line) and none of
/// its rules apply.
#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_workspace_rules_file_is_reported_and_applies_no_rule() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![Reply::call("c1", "echo fine"), Reply::text("Done.")]).await.expect("mock");
    let mut first = Server::spawn_in(home.path(), &mock).await;
    open(&mut first, &cwd).await;
    let file = rules_list(&mut first).await.workspace_file;
    finish(first).await;
    std::fs::create_dir_all(Path::new(&file).parent().expect("dir")).expect("dir");
    std::fs::write(
        &file,
        "[[rule]]\nid = \"good\"\nkind = \"prefix\"\ncommand = \"echo fine\"\n\n[[rule]]\nid = \"bad\"\nkind = \"prefix\"\ncommand = \"echo > x\"\n",
    )
    .expect("write the file");

    let mut server = Server::spawn_in(home.path(), &mock).await;
    open_with(&mut server, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    let list = rules_list(&mut server).await;
    assert!(list.rules.is_empty(), "{:?}", list.rules);
    let error = list.workspace_file_error.expect("the error is reported");
    assert!(error.contains(&format!("{file}:")) && error.contains("echo > x"), "{error}");
    let turn = chat(&mut server, "Go.").await;
    let (seen, _) = drive(&mut server, &turn, deny).await;
    assert_eq!(seen.requests.len(), 1, "the good rule of a malformed file does not apply either");
    assert!(server.stderr().contains("the workspace rules file is ignored"), "{}", server.stderr());
    finish(server).await;
}

/// A crash inside a rule-approved command: the result is `unknown`, the
/// recovery names the rule, and the gate holds whatever the mode.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_in_a_rule_approved_call_recovers_unknown_and_gated() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    // Kills the topmost `mino-server` above it: the server, not its supervisor.
    std::fs::write(
        cwd.join("killer.sh"),
        "p=$$; top=; while [ \"$p\" -gt 1 ]; do [ \"$(cat /proc/$p/comm)\" = mino-server ] && top=$p; p=$(cut -d' ' -f4 /proc/$p/stat); done; echo killing; kill -9 $top\n",
    )
    .expect("script");
    let mock =
        MockModel::start(vec![Reply::calls(&[("c1", "echo first"), ("c2", "bash killer.sh")]), Reply::text("Never.")])
            .await
            .expect("mock");
    let mut first = Server::spawn_in(home.path(), &mock).await;
    open_with(&mut first, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    let turn = chat(&mut first, "Go.").await;
    let request: wire::ApprovalRequest = first.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    assert_eq!(request.call_id, "c1");
    // The person grants an exact rule for the script while answering c1.
    let _: wire::EmptyResult = first
        .call(
            wire::method::APPROVAL,
            &allow(&request, wire::Decision::AllowSession, rule(wire::RuleKind::Exact, "bash killer.sh")),
        )
        .await
        .expect("allow");
    first.wait(TIMEOUT).await;

    let mut second = Server::spawn_in(home.path(), &mock).await;
    let (_, recovery) = open_with(&mut second, &options(&cwd, Some(wire::ApprovalMode::SandboxedAuto), None)).await;
    assert_eq!(recovery.unacknowledged_turn_ids, vec![turn.clone()]);
    let c2 = recovery.turns[0].calls.iter().find(|c| c.call_id == "c2").expect("c2 recovered");
    assert_eq!(c2.result.status, wire::ToolStatus::Unknown);
    let by = c2.approved_by.clone().expect("approved by");
    assert_eq!(by.kind, wire::ApproverKind::Rule);
    assert_eq!(by.rule.and_then(|r| r.command), Some("bash killer.sh".into()));
    let records = journal(home.path());
    assert!(position(&records, "rule", "c1") < position(&records, "approval", "c2"));
    assert!(position(&records, "approval", "c2") < position(&records, "tool_start", "c2"));
    // No rule, mode or sandbox acknowledges the unknown result.
    let gated = second.request(wire::method::CHAT, json!({"text": "Next."})).await.expect_err("gated");
    assert_eq!(gated.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    assert!(!journal(home.path()).iter().any(|r| r["kind"] == "recovery_ack"));
    // The session rule is still in force for the reopened session.
    assert_eq!(rules_list(&mut second).await.rules.len(), 1);
    finish(second).await;
}

/// `sandboxed-auto` with `workspace-write`: commands run without asking,
/// journaled as approved by the sandbox, and cannot write outside the
/// workspace or open a socket (and say so in their result). On a machine
/// that cannot enforce the sandbox, opening with it is refused instead.
#[tokio::test(flavor = "multi_thread")]
async fn sandboxed_auto_runs_in_the_sandbox_which_stops_writes_outside_and_sockets() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let temp = home.path().join("tmp");
    let outside = home.path().join("outside");
    std::fs::create_dir_all(&temp).expect("tmp");
    std::fs::create_dir_all(&outside).expect("outside");
    let mock = MockModel::start(Vec::new()).await.expect("mock");
    let port = mock.addr().port();
    let write_outside = format!("echo no > {}/out.txt", outside.display());
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    mock.push(Reply::calls(&[("c1", "echo yes > inside.txt"), ("c2", &write_outside), ("c3", &connect)]));
    mock.push(Reply::text("Done."));
    let mut server = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        env: vec![("TMPDIR".into(), temp.display().to_string())],
        ..Default::default()
    })
    .await;
    let opened = server
        .initialize(&options(&cwd, Some(wire::ApprovalMode::SandboxedAuto), Some(wire::SandboxMode::WorkspaceWrite)))
        .await;
    let caps = match opened {
        Ok(result) => Server::capabilities(&result),
        Err(e) => {
            // Never run weaker than asked: the refusal names what is missing.
            assert_eq!(e.code, INVALID_PARAMS, "{e}");
            assert!(e.message.contains("cannot be enforced here"), "{e}");
            eprintln!("this machine cannot enforce the sandbox ({e}); checked the refusal only");
            return;
        }
    };
    assert_eq!(caps.sandbox, wire::SandboxMode::WorkspaceWrite);
    assert!(caps.sandbox_support.contains("can be enforced"), "{}", caps.sandbox_support);
    let _: wire::RecoveryNotification = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();

    let turn = chat(&mut server, "Write files and call out.").await;
    let (seen, _) = drive(&mut server, &turn, deny).await;
    assert!(seen.requests.is_empty(), "sandboxed-auto asked");
    assert!(seen
        .started
        .iter()
        .all(|s| s.approved_by.kind == wire::ApproverKind::Sandbox && s.sandbox == wire::SandboxMode::WorkspaceWrite));
    let result = |id: &str| seen.results.iter().find(|r| r.call_id == id).expect("result").clone();
    assert_eq!(result("c1").status, wire::ToolStatus::Success);
    assert_eq!(std::fs::read_to_string(cwd.join("inside.txt")).expect("inside"), "yes\n");
    let c2 = result("c2");
    assert_eq!(c2.status, wire::ToolStatus::Failed, "{}", c2.output);
    assert!(!outside.join("out.txt").exists(), "wrote outside the workspace");
    assert!(c2.output.contains("the sandbox (workspace-write) forbids"), "{}", c2.output);
    let c3 = result("c3");
    assert_eq!(c3.status, wire::ToolStatus::Failed, "{}", c3.output);
    assert!(!c3.output.contains("connected"), "{}", c3.output);
    assert!(c3.output.contains("the sandbox (workspace-write) forbids"), "{}", c3.output);

    // On file and in history: approved by the sandbox, run in workspace-write.
    let records = journal(home.path());
    for id in ["c1", "c2", "c3"] {
        let approval = record_of(&records, "approval", id).expect("approval");
        assert_eq!(approval["approved_by"], "sandbox");
        let start = record_of(&records, "tool_start", id).expect("start");
        assert_eq!((start["sandbox"].as_str(), start["v"].as_u64()), (Some("workspace-write"), Some(3)));
    }
    let h = history(&mut server).await;
    assert!(h.turns[0].calls.iter().all(|c| c.sandbox == Some(wire::SandboxMode::WorkspaceWrite)
        && c.approved_by.as_ref().map(|a| a.kind) == Some(wire::ApproverKind::Sandbox)));

    // Back to `off`: sandboxed-auto then asks.
    let settings: wire::SettingsResult =
        server.call(wire::method::SETTINGS_UPDATE, &json!({"sandbox": "off"})).await.expect("settings");
    assert_eq!(settings.sandbox, wire::SandboxMode::Off);
    finish(server).await;
}

// ---------------------------------------------------------------- path rules and deny rules

/// The `output` the model was given for `call_id` in any request so far.
fn told_model(mock: &MockModel, call_id: &str) -> String {
    mock.requests()
        .iter()
        .flat_map(|r| r.body["input"].as_array().cloned().unwrap_or_default())
        .filter(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .filter_map(|item| item["output"].as_str().map(str::to_owned))
        .next_back()
        .unwrap_or_else(|| panic!("the model was told nothing for {call_id}"))
}

fn started_by(seen: &Seen) -> Vec<(String, wire::ApproverKind)> {
    seen.started.iter().map(|s| (s.call_id.clone(), s.approved_by.kind)).collect()
}

/// A session path rule approves a later edit of a file it matches without
/// asking (the approval names it); a file it does not match asks, a path
/// outside the workspace asks even under `**`, and a command is never
/// covered by a path rule.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_path_rule_approves_matching_edits_only_inside_the_workspace() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    std::fs::create_dir_all(cwd.join("src")).expect("src");
    let outside = home.path().join("notes.txt");
    let mock = MockModel::start(vec![
        Reply::write_file("e1", "src/a.txt", "a\n"),
        Reply::write_file("e2", "src/b.txt", "b\n"),
        Reply::write_file("e3", "README.md", "readme\n"),
        Reply::write_file("e4", "../notes.txt", "outside\n"),
        Reply::call("c5", "cat src/b.txt"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open_with(&mut server, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    let turn = chat(&mut server, "Write the files.").await;
    let (seen, end) = drive(&mut server, &turn, |request| match request.call_id.as_str() {
        "e1" => {
            assert_eq!(request.suggested_rule, Some(wire::RuleSpec::path("src/a.txt")));
            allow(request, wire::Decision::AllowSession, wire::RuleSpec::path("src/*.txt"))
        }
        "e3" => allow(request, wire::Decision::AllowSession, wire::RuleSpec::path("**")),
        "e4" => {
            assert!(request.edit.as_ref().is_some_and(|e| e.leaves_workspace));
            assert_eq!(request.suggested_rule, None, "no rule is offered for a path outside the workspace");
            deny(request)
        }
        _ => deny(request),
    })
    .await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    let asked: Vec<&str> = seen.requests.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(asked, ["e1", "e3", "e4", "c5"], "e2 was approved by the rule");
    assert_eq!(std::fs::read_to_string(cwd.join("src/b.txt")).expect("b written"), "b\n");
    assert!(!outside.exists(), "the outside edit was denied");
    let by = started_by(&seen);
    assert_eq!(by[1], ("e2".to_string(), wire::ApproverKind::Rule));
    let rule = seen.started[1].approved_by.rule.clone().expect("the rule is named");
    assert_eq!((rule.kind, rule.pattern.as_deref(), rule.command), (wire::RuleKind::Path, Some("src/*.txt"), None));

    let records = journal(home.path());
    let granted = record_of(&records, "rule", "e1").expect("rule record");
    assert_eq!((granted["v"].as_u64(), granted["rule"]["kind"].as_str()), (Some(3), Some("path")));
    assert_eq!(granted["rule"]["pattern"], "src/*.txt");
    assert!(granted["rule"].get("command").is_none() && granted["rule"].get("effect").is_none());
    let approval = record_of(&records, "approval", "e2").expect("approval of e2");
    assert_eq!(
        (approval["approved_by"].as_str(), approval["rules"][0]["id"].as_str()),
        (Some("rule"), Some(rule.id.as_str()))
    );
    assert!(position(&records, "rule", "e1") < position(&records, "approval", "e2"));
    let list = rules_list(&mut server).await;
    let patterns: Vec<Option<&str>> = list.rules.iter().map(|r| r.pattern.as_deref()).collect();
    assert_eq!(patterns, [Some("src/*.txt"), Some("**")]);
    finish(server).await;
}

/// Deny rules, granted with `denySession`/`denyWorkspace`, refuse a later
/// command and a later edit without asking, winning over an allow rule;
/// the model reads which rule, and the journal says a rule decided.
#[tokio::test(flavor = "multi_thread")]
async fn a_deny_rule_refuses_a_command_and_an_edit_without_asking() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::call("c1", "echo secret one"),
        Reply::call("c2", "echo fine"),
        Reply::call("c3", "echo secret two"),
        Reply::call("c4", "echo fine again && echo secret three"),
        Reply::call("c5", "echo fine again"),
        Reply::write_file("e6", "secret.txt", "one\n"),
        Reply::write_file("e7", "secret.txt", "two\n"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open_with(&mut server, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    let turn = chat(&mut server, "Go.").await;
    let (seen, end) = drive(&mut server, &turn, |request| match request.call_id.as_str() {
        "c1" => allow(request, wire::Decision::DenySession, rule(wire::RuleKind::Prefix, "echo secret")),
        // `echo` covers `echo secret two` too: the deny rule wins.
        "c2" => allow(request, wire::Decision::AllowSession, rule(wire::RuleKind::Prefix, "echo")),
        "e6" => {
            assert_eq!(request.suggested_rule, Some(wire::RuleSpec::path("secret.txt")));
            allow(request, wire::Decision::DenyWorkspace, wire::RuleSpec::path("secret.txt"))
        }
        other => panic!("{other} was asked about"),
    })
    .await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    let asked: Vec<&str> = seen.requests.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(asked, ["c1", "c2", "e6"]);
    assert_eq!(started_by(&seen).iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["c2", "c5"]);
    assert!(!cwd.join("secret.txt").exists());
    let status = |id: &str| seen.results.iter().find(|r| r.call_id == id).map(|r| r.status);
    for id in ["c1", "c3", "c4", "e6", "e7"] {
        assert_eq!(status(id), Some(wire::ToolStatus::Refused), "{id}");
    }
    assert!(
        told_model(&mock, "c3").contains(r#"Denied by a rule the user set: prefix \"echo secret\""#),
        "{}",
        told_model(&mock, "c3")
    );
    assert!(
        told_model(&mock, "e7").contains(r#"Denied by a rule the user set: path \"secret.txt\""#),
        "{}",
        told_model(&mock, "e7")
    );
    assert!(told_model(&mock, "c1").contains("The user denied this command"), "{}", told_model(&mock, "c1"));

    let records = journal(home.path());
    let granted = record_of(&records, "rule", "c1").expect("rule record");
    assert_eq!(
        (granted["rule"]["effect"].as_str(), granted["rule"]["command"].as_str()),
        (Some("deny"), Some("echo secret"))
    );
    assert!(position(&records, "rule", "c1") < position(&records, "approval", "c1"));
    for id in ["c3", "c4", "e7"] {
        let approval = record_of(&records, "approval", id).expect("approval");
        assert_eq!(approval["v"], 3);
        assert_eq!(
            (approval["decision"].as_str(), approval["decided_by"].as_str()),
            (Some("denied"), Some("rule")),
            "{id}"
        );
        assert!(approval.get("approved_by").is_none());
        assert_eq!(approval["rules"][0]["effect"], "deny", "{id}");
    }
    let user_denied = record_of(&records, "approval", "c1").expect("c1");
    assert!(user_denied.get("decided_by").is_none(), "the person denied c1");

    let list = rules_list(&mut server).await;
    let effects: Vec<(wire::RuleScope, Option<wire::RuleEffect>)> =
        list.rules.iter().map(|r| (r.scope, r.effect)).collect();
    assert_eq!(
        effects,
        [
            (wire::RuleScope::Session, Some(wire::RuleEffect::Deny)),
            (wire::RuleScope::Session, None),
            (wire::RuleScope::Workspace, Some(wire::RuleEffect::Deny))
        ]
    );
    let text = std::fs::read_to_string(&list.workspace_file).expect("the workspace rules file");
    assert!(
        text.contains("kind = \"path\"")
            && text.contains("pattern = \"secret.txt\"")
            && text.contains("effect = \"deny\""),
        "{text}"
    );
    finish(server).await;
}

/// A call nobody is asked about and that never starts (refused by a deny
/// rule, an unknown tool, arguments that cannot be read) is first seen in
/// its `mino/toolResult`: the notification names its command, as
/// `mino/history` does, so a client can say what was refused at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_result_without_a_request_or_start_names_its_command_as_history_does() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let unreadable = mino_mock_model::ScriptedCall {
        raw_arguments: Some("{not json".into()),
        ..mino_mock_model::ScriptedCall::new("c5", "")
    };
    let mock = MockModel::start(vec![
        Reply::call("c1", "git push origin main"),
        Reply::call("c2", "git push --force origin main"),
        Reply::write_file("e3", "notes.txt", "one\n"),
        Reply::NamedCall { call_id: "u4".into(), name: "fetch_url".into(), arguments: r#"{"url":"x"}"#.into() },
        Reply::Calls { text: Vec::new(), calls: vec![unreadable], delay_ms: 0 },
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open_with(&mut server, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    let turn = chat(&mut server, "Push it.").await;
    let (seen, end) = drive(&mut server, &turn, |request| match request.call_id.as_str() {
        "c1" => allow(request, wire::Decision::DenySession, rule(wire::RuleKind::Prefix, "git push")),
        "e3" => deny(request),
        other => panic!("{other} was asked about"),
    })
    .await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    assert!(seen.started.is_empty(), "nothing ran");
    let live: Vec<(&str, wire::ToolStatus, Option<&str>)> =
        seen.results.iter().map(|r| (r.call_id.as_str(), r.status, r.command.as_deref())).collect();
    assert_eq!(
        live,
        [
            ("c1", wire::ToolStatus::Refused, Some("git push origin main")),
            ("c2", wire::ToolStatus::Refused, Some("git push --force origin main")),
            ("e3", wire::ToolStatus::Refused, Some("write_file notes.txt")),
            ("u4", wire::ToolStatus::Failed, Some(r#"{"url":"x"}"#)),
            ("c5", wire::ToolStatus::Failed, Some("{not json")),
        ]
    );
    let h = history(&mut server).await;
    let restored: Vec<(&str, Option<&str>)> =
        h.turns[0].calls.iter().map(|c| (c.call_id.as_str(), Some(c.command.as_str()))).collect();
    let shown_live: Vec<(&str, Option<&str>)> = live.iter().map(|(id, _, command)| (*id, *command)).collect();
    assert_eq!(restored, shown_live, "live and restored name the same commands");
    finish(server).await;
}

/// A workspace path rule is in the workspace rules file: a new session
/// applies it without asking; once revoked, the edit asks again.
#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_path_rule_survives_a_new_session_and_revoking_it_asks_again() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::write_file("e1", "notes.md", "one\n"),
        Reply::text("Done."),
        Reply::write_file("e2", "plans.md", "two\n"),
        Reply::text("Done."),
        Reply::write_file("e3", "ideas.md", "three\n"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut first = Server::spawn_in(home.path(), &mock).await;
    open_with(&mut first, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    let turn = chat(&mut first, "One.").await;
    drive(&mut first, &turn, |request| allow(request, wire::Decision::AllowWorkspace, wire::RuleSpec::path("*.md")))
        .await;
    finish(first).await;

    let mut second = Server::spawn_in(home.path(), &mock).await;
    let fresh =
        wire::InitializationOptions { new_session: true, ..options(&cwd, Some(wire::ApprovalMode::Rules), None) };
    open_with(&mut second, &fresh).await;
    let turn = chat(&mut second, "Two.").await;
    let (seen, _) = drive(&mut second, &turn, deny).await;
    assert!(seen.requests.is_empty(), "the workspace path rule applied in a new session");
    assert_eq!(std::fs::read_to_string(cwd.join("plans.md")).expect("written"), "two\n");
    let by = seen.started[0].approved_by.rule.clone().expect("rule");
    assert_eq!((by.scope, by.pattern.as_deref()), (wire::RuleScope::Workspace, Some("*.md")));
    // Two sessions of one second: their files' order is their random ids'.
    let records: Vec<Value> = session_files(home.path()).iter().flat_map(|f| journal_records(f)).collect();
    assert_eq!(record_of(&records, "approval", "e2").expect("approval")["rules"][0]["pattern"], "*.md");

    let _: wire::EmptyResult = second.call(wire::method::RULES_REVOKE, &json!({"id": by.id})).await.expect("revoke");
    assert!(rules_list(&mut second).await.rules.is_empty());
    let turn = chat(&mut second, "Three.").await;
    let (seen, _) = drive(&mut second, &turn, deny).await;
    assert_eq!(seen.requests.len(), 1, "revoked: it asks again");
    assert!(!cwd.join("ideas.md").exists());
    finish(second).await;
}

// ---------------------------------------------------------------- protected paths and deny rules in reach

/// Opens `cwd` in `mode` with `workspace-write`; `None` (and a note) when
/// this machine cannot enforce it or its protected paths.
async fn open_sandboxed(server: &mut Server, cwd: &Path, mode: wire::ApprovalMode) -> Option<wire::ServerCapabilities> {
    let opened = server.initialize(&options(cwd, Some(mode), Some(wire::SandboxMode::WorkspaceWrite))).await;
    let caps = match opened {
        Ok(result) => Server::capabilities(&result),
        Err(e) => {
            eprintln!("SKIPPED: this machine cannot enforce the sandbox ({e})");
            return None;
        }
    };
    let _: wire::RecoveryNotification = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    if !caps.sandbox_support.contains("read-only (mount namespace)") {
        eprintln!("SKIPPED: protected paths cannot be kept read-only here: {}", caps.sandbox_support);
        return None;
    }
    Some(caps)
}

/// A deny rule for `rm` holds under `sandboxed-auto`: a redirection, a
/// wrapper (`env`, `command`), a substitution or a path to the program
/// cannot slip a denied program past it. Each asks, the request names the
/// rule, and nothing is deleted; a plain command no deny rule can reach
/// still runs in the sandbox without asking.
#[tokio::test(flavor = "multi_thread")]
async fn deny_rules_hold_under_sandboxed_auto_through_wrappers_substitutions_and_redirections() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    for i in 1..=8 {
        std::fs::write(cwd.join(format!("v{i}.txt")), "keep\n").expect("seed");
    }
    let reaching = [
        ("c2", "rm v2.txt > /dev/null"),
        ("c3", "env rm v3.txt"),
        ("c4", "command rm v4.txt"),
        ("c5", "/bin/rm v5.txt"),
        ("c6", "xargs rm <<< v6.txt"),
        ("c7", "$(echo rm) v7.txt"),
    ];
    let mut second: Vec<(&str, &str)> = reaching.to_vec();
    second.push(("c8", "rm v8.txt"));
    second.push(("c9", "touch fine.txt"));
    let mock = MockModel::start(vec![
        Reply::call("c1", "rm v1.txt"),
        Reply::text("Noted."),
        Reply::calls(&second),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    if open_sandboxed(&mut server, &cwd, wire::ApprovalMode::Rules).await.is_none() {
        return;
    }
    let turn = chat(&mut server, "Delete v1.").await;
    drive(&mut server, &turn, |request| {
        allow(request, wire::Decision::DenySession, rule(wire::RuleKind::Prefix, "rm"))
    })
    .await;
    let settings: wire::SettingsResult =
        server.call(wire::method::SETTINGS_UPDATE, &json!({"approvalMode": "sandboxed-auto"})).await.expect("settings");
    assert_eq!(settings.approval_mode, wire::ApprovalMode::SandboxedAuto);

    let turn = chat(&mut server, "Delete the others.").await;
    let (seen, end) = drive(&mut server, &turn, deny).await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    let asked: Vec<&str> = seen.requests.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(asked, reaching.iter().map(|(id, _)| *id).collect::<Vec<_>>(), "each reaching command asks");
    for request in &seen.requests {
        let named: Vec<Option<&str>> = request.deny_rules.iter().map(|r| r.command.as_deref()).collect();
        assert_eq!(named, [Some("rm")], "{}: the request names the deny rule", request.command);
        assert_eq!(request.deny_rules[0].effect, Some(wire::RuleEffect::Deny));
    }
    for i in 1..=8 {
        assert!(cwd.join(format!("v{i}.txt")).exists(), "v{i}.txt was deleted");
    }
    let status = |id: &str| seen.results.iter().find(|r| r.call_id == id).map(|r| r.status);
    assert_eq!(status("c8"), Some(wire::ToolStatus::Refused), "plain `rm` is refused by the rule");
    assert_eq!(started_by(&seen), [("c9".to_owned(), wire::ApproverKind::Sandbox)]);
    assert!(cwd.join("fine.txt").exists());
    finish(server).await;
}

/// With the sandbox off, a path rule `**` does not approve an edit of
/// `.git/config` (nor of the other protected paths): each asks, says why,
/// and suggests no rule; an ordinary file the rule covers is still written
/// without asking.
#[tokio::test(flavor = "multi_thread")]
async fn an_edit_of_a_protected_path_asks_whatever_rule_is_in_force() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    std::fs::create_dir_all(cwd.join(".git/hooks")).expect(".git");
    std::fs::create_dir_all(cwd.join(".vscode")).expect(".vscode");
    std::fs::write(cwd.join(".git/config"), "[core]\n").expect("config");
    let planted = "[core]\n\tfsmonitor = touch planted\n";
    let mock = MockModel::start(vec![
        Reply::write_file("e1", "a.txt", "a\n"),
        Reply::write_file("e2", ".git/config", planted),
        Reply::write_file("e3", ".git/hooks/pre-commit", "#!/bin/sh\ntouch planted\n"),
        Reply::write_file("e4", ".vscode/tasks.json", "{}\n"),
        Reply::write_file("e5", ".envrc", "touch planted\n"),
        Reply::write_file("e6", "b.txt", "b\n"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open_with(&mut server, &options(&cwd, Some(wire::ApprovalMode::Rules), None)).await;
    let turn = chat(&mut server, "Write.").await;
    let (seen, end) = drive(&mut server, &turn, |request| match request.call_id.as_str() {
        "e1" => allow(request, wire::Decision::AllowSession, wire::RuleSpec::path("**")),
        _ => deny(request),
    })
    .await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    let asked: Vec<&str> = seen.requests.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(asked, ["e1", "e2", "e3", "e4", "e5"]);
    for request in &seen.requests[1..] {
        let edit = request.edit.as_ref().expect("an edit");
        let why = edit.protected.as_deref().unwrap_or_else(|| panic!("{} not marked protected", edit.path));
        assert!(why.contains("outside any sandbox") || why.contains("run"), "{why}");
        assert_eq!(request.suggested_rule, None, "a rule is offered for {}", edit.path);
    }
    assert!(seen.requests[0].edit.as_ref().expect("edit").protected.is_none());
    assert_eq!(std::fs::read_to_string(cwd.join(".git/config")).expect("config"), "[core]\n");
    for planted in [".envrc", ".vscode/tasks.json", ".git/hooks/pre-commit"] {
        assert!(!cwd.join(planted).exists(), "{planted} was written");
    }
    assert_eq!(std::fs::read_to_string(cwd.join("b.txt")).expect("b"), "b\n", "the rule still covers b.txt");
    finish(server).await;
}

/// Under `sandboxed-auto` with `workspace-write`, a command cannot plant
/// code that a later, unsandboxed `git status` or editor would run: git's
/// config and hooks, `.vscode`, `.envrc` and `.nvim.lua` stay as they were
/// (existing or not), and renaming `.git` away fails too.
#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_command_cannot_plant_code_in_git_or_editor_settings() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let init = std::process::Command::new("git").arg("init").arg("-q").arg(&cwd).status();
    if !init.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: git is not available");
        return;
    }
    let config_before = std::fs::read_to_string(cwd.join(".git/config")).expect("config");
    let marker = home.path().join("planted");
    let fsmonitor = format!("git config core.fsmonitor 'touch {}'", marker.display());
    let hook = format!("printf '#!/bin/sh\\ntouch {}\\n' > .git/hooks/pre-commit", marker.display());
    let calls = [
        ("c1", fsmonitor.as_str()),
        ("c2", hook.as_str()),
        ("c3", "mkdir -p .vscode && echo '{}' > .vscode/tasks.json"),
        ("c4", "echo 'touch x' > .envrc"),
        ("c5", "echo 'x' > .nvim.lua"),
        ("c6", "mv .git elsewhere && git init -q ."),
        ("c7", "echo ordinary > notes.txt"),
    ];
    let mock = MockModel::start(vec![Reply::calls(&calls), Reply::text("Done.")]).await.expect("mock");
    let mut server = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        ..Default::default()
    })
    .await;
    if open_sandboxed(&mut server, &cwd, wire::ApprovalMode::SandboxedAuto).await.is_none() {
        return;
    }
    let turn = chat(&mut server, "Plant.").await;
    let (seen, _) = drive(&mut server, &turn, deny).await;
    assert!(seen.requests.is_empty(), "sandboxed-auto asked");
    let result = |id: &str| seen.results.iter().find(|r| r.call_id == id).expect("result").clone();
    for (id, _) in &calls[..6] {
        let r = result(id);
        assert_eq!(r.status, wire::ToolStatus::Failed, "{id} succeeded: {}", r.output);
        assert!(r.output.contains("protected paths"), "{id}: {}", r.output);
    }
    assert_eq!(result("c7").status, wire::ToolStatus::Success);
    assert_eq!(std::fs::read_to_string(cwd.join(".git/config")).expect("config"), config_before);
    assert!(!cwd.join(".git/hooks/pre-commit").exists());
    for planted in [".vscode", ".envrc", ".nvim.lua", "elsewhere"] {
        assert!(std::fs::symlink_metadata(cwd.join(planted)).is_err(), "{planted} is there after the turn");
    }
    // The person's next, unsandboxed `git status` runs nothing planted.
    let status = std::process::Command::new("git").arg("status").current_dir(&cwd).output().expect("git status");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    assert!(!marker.exists(), "git ran a planted command");
    finish(server).await;
}

/// Mino started in its own home's parent (`~` with `~/.mino`): the client
/// is told at start-up, and a sandboxed command cannot append a rule to the
/// workspace rules file, so the next session runs nothing nobody approved.
#[tokio::test(flavor = "multi_thread")]
async fn a_home_inside_the_workspace_is_reported_and_its_rules_cannot_be_forged() {
    let root = tempfile::tempdir().expect("root");
    let cwd = root.path().to_path_buf();
    let home = cwd.join(".mino");
    let forged =
        r#"printf '[[rule]]\nid = "forged"\nkind = "prefix"\ncommand = "touch"\nscope = "workspace"\n' >> "$RULES""#;
    let mock = MockModel::start(Vec::new()).await.expect("mock");
    let mut server = Server::spawn_in(&home, &mock).await;
    let Some(caps) = open_sandboxed(&mut server, &cwd, wire::ApprovalMode::SandboxedAuto).await else { return };
    let said = caps.home_in_workspace.as_deref().expect("the client is told the home is in the workspace");
    assert!(said.contains("inside the workspace"), "{said}");
    assert!(server.stderr().contains("is inside the workspace"), "not logged");
    let file = rules_list(&mut server).await.workspace_file;
    let before = std::fs::read_to_string(&file).unwrap_or_default();
    mock.push(Reply::call("c1", &format!("RULES='{file}'; mkdir -p \"$(dirname \"$RULES\")\" && {forged}")));
    mock.push(Reply::text("Done."));
    let turn = chat(&mut server, "Forge.").await;
    let (seen, _) = drive(&mut server, &turn, deny).await;
    let result = seen.results.iter().find(|r| r.call_id == "c1").expect("result");
    assert_eq!(result.status, wire::ToolStatus::Failed, "{}", result.output);
    assert_eq!(std::fs::read_to_string(&file).unwrap_or_default(), before, "the rules file changed");
    finish(server).await;
}
