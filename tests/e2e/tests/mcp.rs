//! MCP tool calls through the real `mino-server`, with real MCP servers
//! (the Python SDK's server of tests/mcp-servers, npm's server-everything)
//! started from `config.toml`'s `[mcp_servers.NAME]`, and only the model
//! mocked: a call approved and answered, denied, a server that never
//! starts (a bad command, one that hangs at start), a server that crashes
//! mid-call (then restarted), a cancel during a slow call, a SIGKILL of
//! the server during a slow call (after restart: `unknown` with the MCP
//! supervisor's evidence, the gate, and no MCP process left), and a server
//! that exits at start (failed with its last stderr lines, redacted).
//!
//! Skipped (saying so) when the rig's variables are unset outside CI
//! (`eval "$(scripts/test mcp-env)"` sets them); in CI a missing one fails.

use std::path::Path;
use std::time::Duration;

use mino_e2e::*;
use mino_mock_model::{MockModel, Reply};
use mino_protocol as wire;
use serde_json::{json, Value};

/// A real server's start (Python importing the SDK, node loading its
/// modules) on a loaded machine: a bound, not a wait.
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

/// `[mcp_servers.py]` running the Python SDK's test server over stdio.
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

/// A server whose home holds `config`, opened in its work directory.
async fn server_with(config: &str, mock: &MockModel) -> (Server, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("home");
    std::fs::write(home.path().join("config.toml"), config).expect("config.toml");
    let mut server = Server::spawn_in(home.path(), mock).await;
    let cwd = work_dir(server.home());
    open(&mut server, &cwd).await;
    (server, home)
}

/// The next `mino/mcp/status` of `server` in a state other than `starting`.
async fn settled(server: &mut Server, name: &str) -> wire::McpStatusNotification {
    loop {
        let status: wire::McpStatusNotification =
            server.next_notification(wire::method::MCP_STATUS, START).await.parse();
        if status.status.server == name && status.status.state != wire::McpState::Starting {
            return status;
        }
    }
}

/// The `function_call_output` a model request replays for `call_id`.
fn output_of(body: &Value, call_id: &str) -> Option<String> {
    body["input"].as_array()?.iter().find_map(|item| {
        (item["type"] == "function_call_output" && item["call_id"] == call_id)
            .then(|| item["output"].as_str().unwrap_or_default().to_string())
    })
}

/// Processes (not zombies) whose working directory is `dir`: the MCP
/// servers a test's session started run there.
fn processes_in(dir: &Path) -> Vec<i32> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| stat.rfind(')').map(|i| stat[i + 1..].trim_start().starts_with('Z')))
                == Some(false);
            alive && std::fs::read_link(format!("/proc/{pid}/cwd")).ok().as_deref() == Some(dir.as_path())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_call_reaches_the_python_server_and_its_answer_the_model() {
    let Some(table) = python_table("py") else { return };
    let mock =
        MockModel::start(vec![call("c1", "mcp__py__echo", json!({"text": "hello from mcp"})), Reply::text("done")])
            .await
            .expect("mock");
    let (mut server, _home) = server_with(&table, &mock).await;
    let ready = settled(&mut server, "py").await;
    assert_eq!(ready.status.state, wire::McpState::Ready, "{ready:?}");
    assert!(ready.status.tools.as_deref().unwrap_or_default().contains(&"mcp__py__echo".to_string()), "{ready:?}");

    let turn = chat(&mut server, "echo something").await;
    let request = next_approval_request(&mut server).await;
    let view = request.mcp.clone().expect("an mcp view in the approval request");
    assert_eq!((view.server.as_str(), view.tool.as_str()), ("py", "echo"));
    assert_eq!(serde_json::from_str::<Value>(&view.arguments).unwrap(), json!({"text": "hello from mcp"}));
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    let ended = end_of(&mut server, &turn).await;
    assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}");

    let requests = mock.requests();
    let offered: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(offered.contains(&"mcp__py__echo") && offered.contains(&"bash"), "{offered:?}");
    assert_eq!(output_of(&requests[1].body, "c1").as_deref().map(|o| o.contains("hello from mcp")), Some(true));

    let journal = &session_files(server.home())[0];
    let start = journal_records(journal).into_iter().find(|r| r["kind"] == "tool_start").expect("a tool_start");
    assert_eq!(start["mcp"]["server"], "py");
    assert_eq!(start["mcp"]["tool"], "echo");
    assert_eq!(start["v"], 3);

    let list: wire::McpListResult = server.call(wire::method::MCP_LIST, &json!({})).await.expect("list");
    assert_eq!(list.servers.len(), 1);
    assert_eq!(list.servers[0].state, wire::McpState::Ready);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_call_is_never_sent_and_server_everything_answers_an_approved_one() {
    let Some(everything) = rig("MINO_TEST_MCP_EVERYTHING") else { return };
    let table = format!("[mcp_servers.every]\ncommand = \"node\"\nargs = [{everything:?}]\nstartup_timeout_sec = 60\n");
    let mock = MockModel::start(vec![
        call("c1", "mcp__every__echo", json!({"message": "denied one"})),
        call("c2", "mcp__every__echo", json!({"message": "approved one"})),
        Reply::text("done"),
    ])
    .await
    .expect("mock");
    let (mut server, _home) = server_with(&table, &mock).await;
    assert_eq!(settled(&mut server, "every").await.status.state, wire::McpState::Ready);
    let turn = chat(&mut server, "echo twice").await;
    let first = next_approval_request(&mut server).await;
    server.approval(&turn, &first.call_id, wire::Decision::Deny).await.expect("deny");
    let second = next_approval_request(&mut server).await;
    server.approval(&turn, &second.call_id, wire::Decision::Approve).await.expect("approve");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    let requests = mock.requests();
    let denied = output_of(&requests[2].body, "c1").expect("c1's output");
    assert!(denied.contains("denied"), "{denied}");
    let approved = output_of(&requests[2].body, "c2").expect("c2's output");
    assert!(approved.contains("approved one"), "{approved}");
    let journal = &session_files(server.home())[0];
    let starts = journal_records(journal).into_iter().filter(|r| r["kind"] == "tool_start").count();
    assert_eq!(starts, 1, "only the approved call started");
}

#[tokio::test(flavor = "multi_thread")]
async fn servers_that_never_start_are_reported_and_the_session_goes_on() {
    let Some(python) = rig("MINO_TEST_MCP_PYTHON") else { return };
    let table = format!(
        "[mcp_servers.missing]\ncommand = \"/nonexistent/mcp-server\"\n\
         [mcp_servers.hangs]\ncommand = {python:?}\nargs = [\"-c\", \"import time; time.sleep(600)\"]\nstartup_timeout_sec = 1\n"
    );
    let mock = MockModel::start(vec![Reply::text("still here")]).await.expect("mock");
    let (mut server, _home) = server_with(&table, &mock).await;
    let mut failed = std::collections::BTreeMap::new();
    while failed.len() < 2 {
        let status: wire::McpStatusNotification =
            server.next_notification(wire::method::MCP_STATUS, START).await.parse();
        if status.status.state != wire::McpState::Starting {
            assert_eq!(status.status.state, wire::McpState::Failed, "{status:?}");
            failed.insert(status.status.server.clone(), status.status.reason.clone().unwrap_or_default());
        }
    }
    assert!(failed["missing"].contains("not found") || failed["missing"].contains("/nonexistent"), "{failed:?}");
    assert!(failed["hangs"].contains("startup_timeout_sec"), "{failed:?}");
    let turn = chat(&mut server, "hello").await;
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    let tools = mock.requests()[0].body["tools"].as_array().unwrap().len();
    assert_eq!(tools, 6, "Mino's own tools only");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_crashes_mid_call_ends_the_call_failed_and_can_be_restarted() {
    let Some(table) = python_table("py") else { return };
    let mock =
        MockModel::start(vec![call("c1", "mcp__py__crash", json!({})), Reply::text("it crashed")]).await.expect("mock");
    let (mut server, _home) = server_with(&table, &mock).await;
    assert_eq!(settled(&mut server, "py").await.status.state, wire::McpState::Ready);
    let turn = chat(&mut server, "crash it").await;
    let request = next_approval_request(&mut server).await;
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    // The turn's notifications are taken up to its end: the server's exit
    // may be among them.
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed);
    let output = output_of(&mock.requests()[1].body, "c1").expect("c1's output");
    assert!(output.contains("did not answer") || output.contains("not running"), "{output}");
    let exited = match notes.iter().find(|n| n.method == wire::method::MCP_STATUS) {
        Some(note) => note.parse::<wire::McpStatusNotification>(),
        None => settled(&mut server, "py").await,
    };
    assert_eq!(exited.status.state, wire::McpState::Exited, "{exited:?}");

    let restarted: wire::McpServerStatus =
        server.call(wire::method::MCP_RESTART, &json!({"server": "py"})).await.expect("restart");
    assert_eq!(restarted.state, wire::McpState::Ready, "{restarted:?}");
    let unknown = server.call::<_, Value>(wire::method::MCP_RESTART, &json!({"server": "nope"})).await;
    assert!(unknown.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_during_a_slow_call_ends_it_cancelled() {
    let Some(table) = python_table("py") else { return };
    let mock = MockModel::start(vec![call("c1", "mcp__py__slow", json!({"seconds": 600}))]).await.expect("mock");
    let (mut server, _home) = server_with(&table, &mock).await;
    assert_eq!(settled(&mut server, "py").await.status.state, wire::McpState::Ready);
    let turn = chat(&mut server, "wait").await;
    let request = next_approval_request(&mut server).await;
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    let _started = server.next_notification(wire::method::TOOL_STARTED, TIMEOUT).await;
    // `toolStarted` comes once `tool_start` is synced, just before
    // `tools/call` is sent: the cancel waits until the server is in the
    // call (its log says so), so it cancels the call and not its sending.
    assert!(
        poll_until(TIMEOUT, || server.stderr().contains("CallToolRequest")).await,
        "the server never got the call:\n{}",
        server.stderr()
    );
    server
        .call::<_, wire::EmptyResult>(wire::method::CANCEL, &wire::CancelParams { turn_id: turn.clone() })
        .await
        .expect("cancel");
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("a toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Cancelled, "{result:?}");
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Cancelled);
    // The server heard `notifications/cancelled` and stopped waiting (its
    // stderr, in Mino's log, says so).
    assert!(
        poll_until(TIMEOUT, || server.stderr().contains("slow: cancelled")).await,
        "the server was not told the call was cancelled:\n{}",
        server.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sigkill_during_a_slow_call_leaves_unknown_the_gate_and_no_server_process() {
    let Some(table) = python_table("py") else { return };
    let mock = MockModel::start(vec![call("c1", "mcp__py__slow", json!({"seconds": 600}))]).await.expect("mock");
    let home_dir = tempfile::tempdir().expect("home");
    let home = home_dir.path().to_path_buf();
    std::fs::write(home.join("config.toml"), &table).expect("config.toml");
    let mut first = Server::spawn_in(&home, &mock).await;
    let cwd = work_dir(&home);
    open(&mut first, &cwd).await;
    assert_eq!(settled(&mut first, "py").await.status.state, wire::McpState::Ready);
    assert!(!processes_in(&cwd).is_empty(), "the MCP server runs in the session's directory");
    let turn = chat(&mut first, "wait").await;
    let request = next_approval_request(&mut first).await;
    first.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    let _started = first.next_notification(wire::method::TOOL_STARTED, TIMEOUT).await;
    first.kill().await;
    assert!(
        poll_until(Duration::from_secs(5), || processes_in(&cwd).is_empty()).await,
        "MCP server processes outlived mino-server: {:?}",
        processes_in(&cwd)
    );

    let mut second = Server::spawn_in(&home, &mock).await;
    let recovery = open(&mut second, &cwd).await;
    assert!(recovery.acknowledgement_required, "{recovery:?}");
    let call = &recovery.turns[0].calls[0];
    assert_eq!(call.result.status, wire::ToolStatus::Unknown, "{call:?}");
    // The server's supervisor saw Mino go and stopped the server: its
    // evidence, beside the unknown, says so and when.
    let evidence = call.evidence.as_ref().expect("the MCP supervisor's evidence beside the unknown");
    assert_eq!(evidence.outcome, wire::EvidenceOutcome::StoppedWhenMinoStopped, "{evidence:?}");
    let ended_at = evidence.ended_at.clone().expect("when it was stopped");
    assert!(evidence.summary.contains("the MCP server `py`") && evidence.summary.contains("stopped when Mino stopped"));
    assert!(evidence.summary.contains(&ended_at), "{}", evidence.summary);
    let history: Value = second.call(wire::method::HISTORY, &json!({})).await.expect("mino/history");
    assert!(history.to_string().contains("stopped when Mino stopped"), "mino/history shows the evidence: {history}");
    let params = wire::ChatParams { text: "again".into(), ..Default::default() };
    let refused = second.call::<_, wire::ChatResult>(wire::method::CHAT, &params).await;
    assert!(refused.is_err(), "chat is gated until the unknown result is acknowledged");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_exits_at_start_is_failed_with_its_last_stderr_lines_and_no_secret() {
    let Some(filesystem) = rig("MINO_TEST_MCP_FILESYSTEM") else { return };
    // server-filesystem refuses a directory that does not exist, says so on
    // stderr and exits 1; the secret in its env must not reach the reason.
    let table = format!(
        "[mcp_servers.files]\ncommand = \"node\"\nargs = [{filesystem:?}, \"/nonexistent/mino-e2e-dir\"]\n\
         startup_timeout_sec = 60\nenv = {{ MINO_E2E_TOKEN = \"/nonexistent/mino-e2e-dir\" }}\n"
    );
    let mock = MockModel::start(vec![]).await.expect("mock");
    let (mut server, _home) = server_with(&table, &mock).await;
    let failed = settled(&mut server, "files").await;
    assert_eq!(failed.status.state, wire::McpState::Failed, "{failed:?}");
    let reason = failed.status.reason.clone().unwrap_or_default();
    assert!(reason.contains("its last stderr lines"), "{reason}");
    assert!(reason.contains("None of the specified directories are accessible"), "{reason}");
    assert!(!reason.contains("/nonexistent/mino-e2e-dir") && reason.contains("[redacted]"), "{reason}");
    let list: wire::McpListResult = server.call(wire::method::MCP_LIST, &json!({})).await.expect("list");
    assert_eq!(list.servers[0].reason.as_deref(), Some(reason.as_str()), "mino/mcp/list says the same");
}
