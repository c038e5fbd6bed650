//! MCP over streamable HTTP through the real `mino-server`: the Python
//! SDK's server of tests/mcp-servers serving HTTP on a free loopback port
//! (started by the test, not by Mino: a remote server is not Mino's child)
//! and npm's server-everything in its `streamableHttp` mode, with only the
//! model mocked. A call approved and answered, denied, a server that is
//! not there, a 401 and then the bearer token from the environment (which
//! never shows in the log, the journal or the status), a crash mid-call
//! (then restarted), a cancel during a slow call (the server hears
//! `notifications/cancelled`), a SIGKILL of Mino during a slow call (after
//! restart: `unknown` and the gate), and `notifications/tools/list_changed`
//! (the next model request offers the new tool).
//!
//! Skipped (saying so) when the rig's variables are unset outside CI
//! (`eval "$(scripts/test mcp-env)"` sets them); in CI a missing one fails.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mino_e2e::*;
use mino_mock_model::{MockModel, Reply};
use mino_protocol as wire;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A real server's start on a loaded machine: a bound, not a wait.
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

/// An MCP server serving streamable HTTP, started by the test; its stderr
/// is kept to see what it was told.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Starts `program args`. It listens at `known` once its stderr says
    /// `listening`, or (`known` is `None`) prints its URL as a line on
    /// stdout once it listens.
    async fn start(program: &str, args: &[&str], envs: &[(&str, &str)], known: Option<String>) -> Self {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .envs(envs.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the MCP server");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr");
        let sink = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let url = match known {
            Some(url) => {
                let listening = poll_until(START, || log.lock().unwrap().contains("listening")).await;
                assert!(listening, "the MCP server never listened:\n{}", log.lock().unwrap());
                url
            }
            None => tokio::time::timeout(START, async {
                while let Ok(Some(line)) = lines.next_line().await {
                    if line.starts_with("http://") {
                        return Some(line.trim().to_string());
                    }
                }
                None
            })
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("the MCP server printed no URL:\n{}", log.lock().unwrap())),
        };
        // Its later output is read (and dropped) so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        HttpServer { child, url, log }
    }

    /// The Python SDK's test server; `extra` are more of its options.
    async fn python(extra: &[&str]) -> Option<Self> {
        let python = rig("MINO_TEST_MCP_PYTHON")?;
        let script = rig("MINO_TEST_MCP_SERVER_PY")?;
        let mut args = vec![script.as_str(), "--transport", "http", "--port", "0"];
        args.extend_from_slice(extra);
        Some(Self::start(&python, &args, &[], None).await)
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

/// A loopback port the kernel picks, free once this returns.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn table(name: &str, url: &str, extra: &str) -> String {
    format!("[mcp_servers.{name}]\nurl = {url:?}\nstartup_timeout_sec = 60\n{extra}")
}

fn call(call_id: &str, name: &str, arguments: Value) -> Reply {
    Reply::NamedCall { call_id: call_id.into(), name: name.into(), arguments: arguments.to_string() }
}

/// A server whose home holds `config`, with `env` set, opened in its work directory.
async fn server_with(config: &str, mock: &MockModel, env: &[(&str, &str)]) -> (Server, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("home");
    std::fs::write(home.path().join("config.toml"), config).expect("config.toml");
    let mut server = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    })
    .await;
    let cwd = work_dir(server.home());
    open(&mut server, &cwd).await;
    (server, home)
}

/// The next `mino/mcp/status` of `name` in a state other than `starting`.
async fn settled(server: &mut Server, name: &str) -> wire::McpServerStatus {
    loop {
        let status: wire::McpStatusNotification =
            server.next_notification(wire::method::MCP_STATUS, START).await.parse();
        if status.status.server == name && status.status.state != wire::McpState::Starting {
            return status.status;
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

fn offered(body: &Value) -> Vec<String> {
    body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str().map(str::to_string)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_call_over_http_is_answered_and_a_denied_one_never_sent() {
    let Some(remote) = HttpServer::python(&[]).await else { return };
    let mock = MockModel::start(vec![
        call("c1", "mcp__web__echo", json!({"text": "denied one"})),
        call("c2", "mcp__web__echo", json!({"text": "hello over http"})),
        Reply::text("done"),
    ])
    .await
    .expect("mock");
    let (mut server, _home) = server_with(&table("web", &remote.url, ""), &mock, &[]).await;
    let ready = settled(&mut server, "web").await;
    assert_eq!(ready.state, wire::McpState::Ready, "{ready:?}");
    assert!(ready.tools.as_deref().unwrap_or_default().contains(&"mcp__web__echo".to_string()), "{ready:?}");

    let turn = chat(&mut server, "echo twice").await;
    let first = next_approval_request(&mut server).await;
    let view = first.mcp.clone().expect("an mcp view in the approval request");
    assert_eq!((view.server.as_str(), view.tool.as_str()), ("web", "echo"));
    server.approval(&turn, &first.call_id, wire::Decision::Deny).await.expect("deny");
    let second = next_approval_request(&mut server).await;
    server.approval(&turn, &second.call_id, wire::Decision::Approve).await.expect("approve");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);

    let requests = mock.requests();
    assert!(offered(&requests[0].body).contains(&"mcp__web__echo".to_string()));
    let denied = output_of(&requests[2].body, "c1").expect("c1's output");
    assert!(denied.contains("denied"), "{denied}");
    let answered = output_of(&requests[2].body, "c2").expect("c2's output");
    assert!(answered.contains("hello over http"), "{answered}");
    // The server saw one call: the denied one never left Mino.
    assert_eq!(remote.log().matches("CallToolRequest").count(), 1, "{}", remote.log());
    let journal = &session_files(server.home())[0];
    let starts: Vec<Value> = journal_records(journal).into_iter().filter(|r| r["kind"] == "tool_start").collect();
    assert_eq!(starts.len(), 1, "only the approved call started");
    assert_eq!(starts[0]["mcp"]["server"], "web");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_401_is_reported_and_the_bearer_token_from_the_environment_is_sent_but_never_shown() {
    let token = "tok-3f9a1c7e5b2d";
    let Some(remote) = HttpServer::python(&["--bearer-token", token]).await else { return };
    let mock =
        MockModel::start(vec![call("c1", "mcp__authed__echo", json!({"text": "with a token"})), Reply::text("ok")])
            .await
            .expect("mock");
    let config = table("noauth", &remote.url, "")
        + &table("authed", &remote.url, "bearer_token_env_var = \"MINO_TEST_WEB_TOKEN\"\n")
        + &table("wrong", &remote.url, "env_http_headers = { Authorization = \"MINO_TEST_WRONG_AUTH\" }\n");
    let env = [("MINO_TEST_WEB_TOKEN", token), ("MINO_TEST_WRONG_AUTH", "Bearer not-the-token-77")];
    let (mut server, _home) = server_with(&config, &mock, &env).await;
    let mut states = std::collections::BTreeMap::new();
    while states.len() < 3 {
        let status: wire::McpStatusNotification =
            server.next_notification(wire::method::MCP_STATUS, START).await.parse();
        if status.status.state != wire::McpState::Starting {
            states.insert(status.status.server.clone(), status.status);
        }
    }
    for name in ["noauth", "wrong"] {
        let status = &states[name];
        assert_eq!(status.state, wire::McpState::Failed, "{status:?}");
        let reason = status.reason.clone().unwrap_or_default();
        assert!(reason.contains(&format!("MCP server `{name}` at {}", remote.url)), "{reason}");
        assert!(reason.contains("HTTP 401 Unauthorized"), "the reason names the HTTP status: {reason}");
        assert!(!reason.contains("rmcp::"), "{reason}");
        assert!(!reason.contains("not-the-token-77"), "{reason}");
    }
    assert_eq!(states["authed"].state, wire::McpState::Ready, "{:?}", states["authed"]);

    let turn = chat(&mut server, "echo").await;
    let request = next_approval_request(&mut server).await;
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    let answered = output_of(&mock.requests()[1].body, "c1").expect("c1's output");
    assert!(answered.contains("with a token"), "{answered}");

    let list: wire::McpListResult = server.call(wire::method::MCP_LIST, &json!({})).await.expect("list");
    let shown = serde_json::to_string(&list).unwrap()
        + &serde_json::to_string(&server.notification_log().iter().map(|n| &n.params).collect::<Vec<_>>()).unwrap();
    let journal = std::fs::read_to_string(&session_files(server.home())[0]).expect("journal");
    for secret in [token, "not-the-token-77"] {
        assert!(!server.stderr().contains(secret), "a secret in Mino's log");
        assert!(!journal.contains(secret), "a secret in the journal");
        assert!(!shown.contains(secret), "a secret in the status");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_is_not_there_is_reported_failed_naming_it() {
    // A port that was free a moment ago: nothing listens there.
    let port = free_port();
    let mock = MockModel::start(vec![Reply::text("still here")]).await.expect("mock");
    let config = table("gone", &format!("http://127.0.0.1:{port}/mcp"), "");
    let (mut server, _home) = server_with(&config, &mock, &[]).await;
    let status = settled(&mut server, "gone").await;
    assert_eq!(status.state, wire::McpState::Failed, "{status:?}");
    let reason = status.reason.unwrap_or_default();
    assert!(reason.contains("MCP server `gone`") && reason.contains("could not connect"), "{reason}");
    let turn = chat(&mut server, "hello").await;
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    assert!(!offered(&mock.requests()[0].body).iter().any(|t| t.starts_with("mcp__")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_path_is_reported_with_its_http_status() {
    let Some(remote) = HttpServer::python(&[]).await else { return };
    let mock = MockModel::start(vec![]).await.expect("mock");
    let url = remote.url.replace("/mcp", "/nothing-here");
    let (mut server, _home) = server_with(&table("lost", &url, ""), &mock, &[]).await;
    let status = settled(&mut server, "lost").await;
    assert_eq!(status.state, wire::McpState::Failed, "{status:?}");
    let reason = status.reason.unwrap_or_default();
    assert!(reason.contains("MCP server `lost`") && reason.contains("HTTP 404 Not Found"), "{reason}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_dies_mid_call_fails_the_call_and_can_be_restarted_once_it_is_back() {
    let Some(mut remote) = HttpServer::python(&[]).await else { return };
    let mock = MockModel::start(vec![call("c1", "mcp__web__crash", json!({})), Reply::text("it crashed")])
        .await
        .expect("mock");
    let (mut server, _home) = server_with(&table("web", &remote.url, ""), &mock, &[]).await;
    assert_eq!(settled(&mut server, "web").await.state, wire::McpState::Ready);
    let turn = chat(&mut server, "crash it").await;
    let request = next_approval_request(&mut server).await;
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    let notes = server.turn_notifications(&turn, START).await;
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed);
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("a toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Failed, "{result:?}");
    let output = output_of(&mock.requests()[1].body, "c1").expect("c1's output");
    assert!(output.contains("did not answer") && output.contains("`web`"), "{output}");
    // Its end is told: exited, its tools missing.
    let exited = match notes.iter().find(|n| n.method == wire::method::MCP_STATUS) {
        Some(note) => note.parse::<wire::McpStatusNotification>().status,
        None => settled(&mut server, "web").await,
    };
    assert_eq!(exited.state, wire::McpState::Exited, "{exited:?}");
    let reason = exited.reason.unwrap_or_default();
    assert!(reason.contains("MCP server `web` at") && reason.contains("broke during a call"), "{reason}");
    remote.kill().await;

    // Down: a restart says why it failed; the person sees its tools are missing.
    let restarted: wire::McpServerStatus =
        server.call(wire::method::MCP_RESTART, &json!({"server": "web"})).await.expect("restart");
    assert_eq!(restarted.state, wire::McpState::Failed, "{restarted:?}");
    assert!(restarted.reason.as_deref().unwrap_or_default().contains("could not connect"), "{restarted:?}");

    // Back on the same port: a restart makes it ready again.
    let port = remote.url.trim_end_matches("/mcp").rsplit(':').next().expect("a port").to_string();
    let Some(back) = HttpServer::python(&["--port", &port]).await else { return };
    assert_eq!(back.url, remote.url);
    let restarted: wire::McpServerStatus =
        server.call(wire::method::MCP_RESTART, &json!({"server": "web"})).await.expect("restart");
    assert_eq!(restarted.state, wire::McpState::Ready, "{restarted:?}");
    assert!(restarted.tools.as_deref().unwrap_or_default().contains(&"mcp__web__echo".to_string()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_during_a_slow_http_call_reaches_the_server() {
    let Some(remote) = HttpServer::python(&[]).await else { return };
    let mock = MockModel::start(vec![call("c1", "mcp__web__slow", json!({"seconds": 600}))]).await.expect("mock");
    let (mut server, _home) = server_with(&table("web", &remote.url, ""), &mock, &[]).await;
    assert_eq!(settled(&mut server, "web").await.state, wire::McpState::Ready);
    let turn = chat(&mut server, "wait").await;
    let request = next_approval_request(&mut server).await;
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    let _started = server.next_notification(wire::method::TOOL_STARTED, TIMEOUT).await;
    assert!(
        poll_until(TIMEOUT, || remote.log().contains("CallToolRequest")).await,
        "the server never got the call:\n{}",
        remote.log()
    );
    server
        .call::<_, wire::EmptyResult>(wire::method::CANCEL, &wire::CancelParams { turn_id: turn.clone() })
        .await
        .expect("cancel");
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("a toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Cancelled, "{result:?}");
    assert!(
        poll_until(TIMEOUT, || remote.log().contains("slow: cancelled")).await,
        "the server was not told the call was cancelled:\n{}",
        remote.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sigkill_during_a_slow_http_call_leaves_unknown_and_the_gate_and_nothing_is_sent_again() {
    let Some(remote) = HttpServer::python(&[]).await else { return };
    let mock = MockModel::start(vec![call("c1", "mcp__web__slow", json!({"seconds": 600}))]).await.expect("mock");
    let home_dir = tempfile::tempdir().expect("home");
    let home = home_dir.path().to_path_buf();
    std::fs::write(home.join("config.toml"), table("web", &remote.url, "")).expect("config.toml");
    let mut first = Server::spawn_in(&home, &mock).await;
    let cwd = work_dir(&home);
    open(&mut first, &cwd).await;
    assert_eq!(settled(&mut first, "web").await.state, wire::McpState::Ready);
    let turn = chat(&mut first, "wait").await;
    let request = next_approval_request(&mut first).await;
    first.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    let _started = first.next_notification(wire::method::TOOL_STARTED, TIMEOUT).await;
    assert!(poll_until(TIMEOUT, || remote.log().contains("CallToolRequest")).await, "{}", remote.log());
    first.kill().await;

    let mut second = Server::spawn_in(&home, &mock).await;
    let recovery = open(&mut second, &cwd).await;
    assert!(recovery.acknowledgement_required, "{recovery:?}");
    let call = &recovery.turns[0].calls[0];
    assert_eq!(call.result.status, wire::ToolStatus::Unknown, "{call:?}");
    let params = wire::ChatParams { text: "again".into(), ..Default::default() };
    let refused = second.call::<_, wire::ChatResult>(wire::method::CHAT, &params).await;
    assert!(refused.is_err(), "chat is gated until the unknown result is acknowledged");
    assert_eq!(settled(&mut second, "web").await.state, wire::McpState::Ready);
    // Recovery sent nothing: the one call the server got is the first one.
    assert_eq!(remote.log().matches("CallToolRequest").count(), 1, "{}", remote.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_added_by_the_server_is_offered_in_the_next_model_request() {
    let Some(remote) = HttpServer::python(&[]).await else { return };
    let mock = MockModel::start(vec![
        call("c1", "mcp__web__grow", json!({})),
        call("c2", "mcp__web__grown", json!({})),
        Reply::text("done"),
    ])
    .await
    .expect("mock");
    let (mut server, _home) = server_with(&table("web", &remote.url, ""), &mock, &[]).await;
    let ready = settled(&mut server, "web").await;
    assert!(!ready.tools.as_deref().unwrap_or_default().contains(&"mcp__web__grown".to_string()), "{ready:?}");
    let turn = chat(&mut server, "grow").await;
    let request = next_approval_request(&mut server).await;
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    // The status with the new tool comes before the next model request
    // needs it: the list is fetched while the approval of c2 waits.
    let grown = loop {
        let status = settled(&mut server, "web").await;
        if status.tools.as_deref().unwrap_or_default().contains(&"mcp__web__grown".to_string()) {
            break status;
        }
    };
    assert_eq!(grown.state, wire::McpState::Ready);
    let request = next_approval_request(&mut server).await;
    assert_eq!(request.mcp.as_ref().map(|m| m.tool.as_str()), Some("grown"));
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    let requests = mock.requests();
    assert!(!offered(&requests[0].body).contains(&"mcp__web__grown".to_string()));
    assert!(offered(&requests[1].body).contains(&"mcp__web__grown".to_string()), "{:?}", offered(&requests[1].body));
    let answered = output_of(&requests[2].body, "c2").expect("c2's output");
    assert!(answered.contains("grown answers"), "{answered}");
    let list: wire::McpListResult = server.call(wire::method::MCP_LIST, &json!({})).await.expect("list");
    assert!(list.servers[0].tools.as_deref().unwrap_or_default().contains(&"mcp__web__grown".to_string()));
}

#[tokio::test(flavor = "multi_thread")]
async fn server_everything_over_streamable_http_answers_a_call() {
    let Some(everything) = rig("MINO_TEST_MCP_EVERYTHING") else { return };
    // It listens on $PORT and says only the number it was given: a port
    // the kernel just handed out (and that is free again) is passed.
    let port = free_port().to_string();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let remote = HttpServer::start("node", &[&everything, "streamableHttp"], &[("PORT", &port)], Some(url)).await;
    let mock =
        MockModel::start(vec![call("c1", "mcp__every__echo", json!({"message": "via everything"})), Reply::text("ok")])
            .await
            .expect("mock");
    let (mut server, _home) = server_with(&table("every", &remote.url, ""), &mock, &[]).await;
    let ready = settled(&mut server, "every").await;
    assert_eq!(ready.state, wire::McpState::Ready, "{ready:?}\n{}", remote.log());
    let turn = chat(&mut server, "echo").await;
    let request = next_approval_request(&mut server).await;
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    let answered = output_of(&mock.requests()[1].body, "c1").expect("c1's output");
    assert!(answered.contains("via everything"), "{answered}");
}
