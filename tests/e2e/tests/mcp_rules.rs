//! MCP rules end to end: the real `mino-server`, the Python SDK's MCP
//! server (tests/mcp-servers) over stdio, and only the model mocked. A rule
//! for one tool (`py/big`) and one for every tool of a server (`py/*`) are
//! granted while answering approvals; later calls they cover are decided
//! without asking, a deny rule winning over an allow rule; the rule is on
//! file before the call is sent; a rule that does not name the call's
//! server is refused.
//!
//! Skipped (saying so) when the rig's variables are unset outside CI
//! (`eval "$(scripts/test mcp-env)"` sets them); in CI a missing one fails.

use std::time::Duration;

use mino_e2e::*;
use mino_mock_model::{MockModel, Reply};
use mino_protocol as wire;
use serde_json::{json, Value};

/// A real server's start (Python importing the SDK) on a loaded machine.
const START: Duration = Duration::from_secs(60);

fn rig(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if std::env::var_os("CI").is_some() => panic!("{name} is not set; scripts/test sets it in CI"),
        _ => {
            eprintln!("skipped: {name} is not set (eval \"$(scripts/test mcp-env)\" sets it)");
            None
        }
    }
}

fn python_table(name: &str) -> Option<String> {
    let python = rig("MINO_TEST_MCP_PYTHON")?;
    let script = rig("MINO_TEST_MCP_SERVER_PY")?;
    Some(format!(
        "[mcp_servers.{name}]\ncommand = {python:?}\nargs = [{script:?}, \"--transport\", \"stdio\"]\nstartup_timeout_sec = 60\n"
    ))
}

fn call(call_id: &str, name: &str, arguments: Value) -> Reply {
    Reply::NamedCall { call_id: call_id.into(), name: name.into(), arguments: arguments.to_string() }
}

fn output_of(body: &Value, call_id: &str) -> Option<String> {
    body["input"].as_array()?.iter().find_map(|item| {
        (item["type"] == "function_call_output" && item["call_id"] == call_id)
            .then(|| item["output"].as_str().unwrap_or_default().to_string())
    })
}

async fn settled(server: &mut Server, name: &str) -> wire::McpStatusNotification {
    loop {
        let status: wire::McpStatusNotification =
            server.next_notification(wire::method::MCP_STATUS, START).await.parse();
        if status.status.server == name && status.status.state != wire::McpState::Starting {
            return status;
        }
    }
}

/// A server in approval mode `rules` with the Python server as `py`.
async fn rules_server(mock: &MockModel) -> Option<(Server, tempfile::TempDir)> {
    let table = python_table("py")?;
    let home = tempfile::tempdir().expect("home");
    std::fs::write(home.path().join("config.toml"), table).expect("config.toml");
    let mut server = Server::spawn_in(home.path(), mock).await;
    let cwd = work_dir(server.home());
    let options = wire::InitializationOptions {
        cwd: Some(cwd.display().to_string()),
        approval_mode: Some(wire::ApprovalMode::Rules),
        ..Default::default()
    };
    server.initialize(&options).await.expect("initialize");
    let _recovery = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    assert_eq!(settled(&mut server, "py").await.status.state, wire::McpState::Ready);
    Some((server, home))
}

fn answer(
    request: &wire::ApprovalRequest,
    decision: wire::Decision,
    rule: Option<wire::RuleSpec>,
) -> wire::ApprovalParams {
    wire::ApprovalParams {
        rule,
        ..wire::ApprovalParams::new(request.turn_id.clone(), request.call_id.clone(), decision)
    }
}

#[derive(Default)]
struct Seen {
    requests: Vec<wire::ApprovalRequest>,
    started: Vec<wire::ToolStarted>,
    results: Vec<wire::ToolResult>,
}

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

#[tokio::test(flavor = "multi_thread")]
async fn rules_for_a_tool_and_for_a_server_decide_later_calls_and_deny_wins() {
    let mock = MockModel::start(vec![
        call("c1", "mcp__py__big", json!({"bytes": 3})),
        call("c2", "mcp__py__echo", json!({"text": "asked once"})),
        call("c3", "mcp__py__big", json!({"bytes": 4})),
        call("c4", "mcp__py__echo", json!({"text": "by the rule"})),
        Reply::text("done"),
    ])
    .await
    .expect("mock");
    let Some((mut server, _home)) = rules_server(&mock).await else { return };
    let turn = chat(&mut server, "use the tools").await;
    let (seen, ended) = drive(&mut server, &turn, |request| {
        let suggested = request.suggested_rule.clone().expect("an MCP call suggests its tool's rule");
        assert_eq!(suggested.kind, wire::RuleKind::Mcp, "{suggested:?}");
        match request.call_id.as_str() {
            // Never again this tool...
            "c1" => {
                assert_eq!(suggested.tool.as_deref(), Some("py/big"));
                answer(request, wire::Decision::DenySession, Some(suggested))
            }
            // ... though every tool of the server is allowed, in the workspace.
            "c2" => {
                assert_eq!(suggested.tool.as_deref(), Some("py/echo"));
                answer(request, wire::Decision::AllowWorkspace, Some(wire::RuleSpec::mcp("py/*")))
            }
            other => panic!("{other} should have been decided by a rule"),
        }
    })
    .await;
    assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}");
    let asked: Vec<&str> = seen.requests.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(asked, ["c1", "c2"], "c3 and c4 are decided by the rules");
    let started: Vec<(&str, wire::ApproverKind)> =
        seen.started.iter().map(|s| (s.call_id.as_str(), s.approved_by.kind)).collect();
    assert_eq!(started, [("c2", wire::ApproverKind::User), ("c4", wire::ApproverKind::Rule)]);
    assert_eq!(seen.started[1].approved_by.rule.as_ref().and_then(|r| r.tool.as_deref()), Some("py/*"));
    let status_of = |id: &str| seen.results.iter().find(|r| r.call_id == id).map(|r| r.status);
    assert_eq!(status_of("c3"), Some(wire::ToolStatus::Refused), "the deny rule of py/big wins over py/*");

    let requests = mock.requests();
    let last = &requests.last().expect("requests").body;
    assert!(output_of(last, "c4").is_some_and(|o| o.contains("by the rule")));
    assert!(output_of(last, "c3").is_some_and(|o| o.contains("rule")), "the model hears a rule refused it");

    // The rule is on file before its call starts: the journal's `rule` record
    // precedes c2's `tool_start`, and the workspace rules file holds it.
    let records = journal_records(&session_files(server.home())[0]);
    let position = |kind: &str, call: &str| {
        records.iter().position(|r| r["kind"] == kind && r["call_id"] == call).unwrap_or(usize::MAX)
    };
    assert!(position("rule", "c2") < position("tool_start", "c2"), "rule then start");
    let rule = &records[position("rule", "c2")];
    assert_eq!((rule["rule"]["kind"].as_str(), rule["rule"]["tool"].as_str()), (Some("mcp"), Some("py/*")));
    assert_eq!(position("tool_start", "c3"), usize::MAX, "a denied call never starts");
    let approval = &records[position("approval", "c4")];
    assert_eq!(approval["approved_by"], "rule");

    let files = walk(server.home());
    let rules_file = files.iter().find(|p| p.ends_with("rules.toml")).expect("the workspace rules file");
    let text = std::fs::read_to_string(rules_file).expect("rules.toml");
    assert!(text.contains("kind = \"mcp\"") && text.contains("tool = \"py/*\""), "{text}");
    let listed: wire::RulesListResult = server.call(wire::method::RULES_LIST, &json!({})).await.expect("rules/list");
    let tools: Vec<Option<&str>> = listed.rules.iter().map(|r| r.tool.as_deref()).collect();
    assert!(tools.contains(&Some("py/*")) && tools.contains(&Some("py/big")), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_that_does_not_name_the_calls_server_is_refused_and_nothing_is_sent() {
    let mock = MockModel::start(vec![
        call("c1", "mcp__py__echo", json!({"text": "never"})),
        call("c2", "mcp__py__echo", json!({"text": "never either"})),
        Reply::text("done"),
    ])
    .await
    .expect("mock");
    let Some((mut server, _home)) = rules_server(&mock).await else { return };
    let turn = chat(&mut server, "use the tools").await;
    let (seen, ended) = drive(&mut server, &turn, |request| match request.call_id.as_str() {
        // Another server's rule, and a command rule: neither covers this call.
        "c1" => answer(request, wire::Decision::AllowSession, Some(wire::RuleSpec::mcp("other/*"))),
        _ => answer(request, wire::Decision::AllowSession, Some(wire::RuleSpec::command(wire::RuleKind::Prefix, "py"))),
    })
    .await;
    assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}");
    assert!(seen.started.is_empty(), "nothing was sent: {:?}", seen.started);
    assert_eq!(seen.requests.len(), 2, "each call asked");
    let records = journal_records(&session_files(server.home())[0]);
    assert!(!records.iter().any(|r| r["kind"] == "rule"), "no rule was recorded");
    assert!(!records.iter().any(|r| r["kind"] == "tool_start"), "no call started");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
