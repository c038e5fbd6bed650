//! The real MCP servers of the test rig (npm's reference servers, one on the
//! Python SDK) started through `spawn_stdio` with the real `mino-server
//! --supervise-mcp` as their supervisor: `initialize` and `tools/list`, as
//! newline-delimited JSON-RPC over the pipes the supervisor passes through,
//! and a `tools/call`; after `stop()` no process of the server is left. And
//! the Python server's streamable HTTP mode answers `initialize`.
//!
//! Skipped (saying so) unless `MINO_TEST_MCP_EVERYTHING`,
//! `MINO_TEST_MCP_FILESYSTEM`, `MINO_TEST_MCP_PYTHON` and
//! `MINO_TEST_MCP_SERVER_PY` are set, as `scripts/test rust` does after
//! installing them (`eval "$(scripts/test mcp-env)"` sets them in a shell).

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::time::{Duration, Instant};

use mino_core::mcp::process::{spawn_stdio, McpChild, StdioServerSpec};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// A real server's start (node loading its modules, Python importing the
/// SDK) on a loaded machine; a bound, not a wait.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

fn rig(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => Some(value),
        _ => {
            eprintln!("skipped: {name} is not set (scripts/test rust sets it; or eval \"$(scripts/test mcp-env)\")");
            None
        }
    }
}

struct Session {
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    guard: mino_core::mcp::process::McpGuard,
    next_id: u64,
}

impl Session {
    fn new(child: McpChild) -> Self {
        let (stdin, stdout, guard) = child.into_parts();
        Session { stdin, lines: tokio::io::BufReader::new(stdout).lines(), guard, next_id: 1 }
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("json");
        line.push(b'\n');
        self.stdin.write_all(&line).await.expect("write to the server");
    }

    /// Sends a request and returns its response, skipping the server's
    /// notifications and requests on the way.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let line = tokio::time::timeout_at(deadline.into(), self.lines.next_line())
                .await
                .unwrap_or_else(|_| {
                    panic!("no answer to {method} within {ANSWER_WITHIN:?}; stderr: {:?}", self.guard.stderr_tail())
                })
                .expect("read from the server")
                .unwrap_or_else(|| {
                    panic!("the server closed stdout before answering {method}; stderr: {:?}", self.guard.stderr_tail())
                });
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON on the protocol stream ({e}): {line:?}"));
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                assert!(message.get("error").is_none(), "{method} failed: {message}");
                return message["result"].clone();
            }
        }
    }

    async fn initialize(&mut self) -> Value {
        let result = self
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mino-e2e", "version": "0"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        result
    }

    async fn tool_names(&mut self) -> Vec<String> {
        let listed = self.request("tools/list", json!({})).await;
        listed["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// Stops the server and checks that nothing of its group is left.
    async fn stop(self) {
        let pid = self.guard.pid().expect("pid");
        drop(self.stdin);
        drop(self.lines);
        self.guard.stop().await;
        let deadline = Instant::now() + Duration::from_millis(1500);
        while !live_members(pid).is_empty() {
            assert!(Instant::now() < deadline, "left after stop: {:?}", live_members(pid));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Live (not zombie) processes of group `pgid`, from /proc.
fn live_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
        let mut fields = stat[stat.rfind(')')? + 2..].split(' ');
        let state = fields.next()?;
        let pgrp: u32 = fields.nth(1)?.parse().ok()?;
        (pgrp == pgid && state != "Z").then_some(pid)
    })
    .collect()
}

fn server(name: &str, command: &str, args: Vec<String>) -> StdioServerSpec {
    StdioServerSpec { name: name.into(), command: command.into(), args, env: BTreeMap::new(), cwd: None }
}

async fn start(spec: &StdioServerSpec) -> Session {
    let supervisor = mino_e2e::server_bin();
    Session::new(spawn_stdio(spec, &supervisor).await.unwrap_or_else(|e| panic!("{e}")))
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn server_everything_over_stdio_lists_and_calls_its_tools() {
    let Some(entry) = rig("MINO_TEST_MCP_EVERYTHING") else { return };
    let mut session = start(&server("everything", "node", vec![entry, "stdio".into()])).await;
    let init = session.initialize().await;
    assert!(init["serverInfo"]["name"].is_string(), "{init}");
    let tools = session.tool_names().await;
    assert!(tools.iter().any(|t| t == "echo"), "{tools:?}");
    let echoed = session.request("tools/call", json!({"name": "echo", "arguments": {"message": "hello, mino"}})).await;
    assert!(text_of(&echoed).contains("hello, mino"), "{echoed}");
    session.stop().await;
}

#[tokio::test]
async fn server_filesystem_over_stdio_reads_a_file_in_its_directory() {
    let Some(entry) = rig("MINO_TEST_MCP_FILESYSTEM") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("note.txt"), "milk, eggs\n").expect("write");
    let mut session = start(&server("filesystem", "node", vec![entry, root.to_string_lossy().into_owned()])).await;
    session.initialize().await;
    let tools = session.tool_names().await;
    assert!(tools.iter().any(|t| t == "read_text_file" || t == "read_file"), "{tools:?}");
    let tool = if tools.iter().any(|t| t == "read_text_file") { "read_text_file" } else { "read_file" };
    let read = session
        .request("tools/call", json!({"name": tool, "arguments": {"path": root.join("note.txt").to_string_lossy()}}))
        .await;
    assert!(text_of(&read).contains("milk, eggs"), "{read}");
    session.stop().await;
}

#[tokio::test]
async fn the_python_sdk_server_over_stdio_answers_echo_and_big() {
    let (Some(python), Some(script)) = (rig("MINO_TEST_MCP_PYTHON"), rig("MINO_TEST_MCP_SERVER_PY")) else { return };
    let mut session = start(&server("python", &python, vec![script, "--transport".into(), "stdio".into()])).await;
    session.initialize().await;
    let mut tools = session.tool_names().await;
    tools.sort();
    assert_eq!(tools, ["big", "crash", "echo", "grow", "slow"]);
    let echoed = session.request("tools/call", json!({"name": "echo", "arguments": {"text": "über ☃"}})).await;
    assert_eq!(text_of(&echoed), "über ☃");
    // Larger than a pipe's buffer many times over: passed through whole.
    let big = session.request("tools/call", json!({"name": "big", "arguments": {"bytes": 1_000_000}})).await;
    assert_eq!(text_of(&big).len(), 1_000_000);
    session.stop().await;
}

#[test]
fn the_python_sdk_server_over_streamable_http_prints_its_url_and_answers() {
    let (Some(python), Some(script)) = (rig("MINO_TEST_MCP_PYTHON"), rig("MINO_TEST_MCP_SERVER_PY")) else { return };
    let mut child = std::process::Command::new(python)
        .args([script.as_str(), "--transport", "http", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the server");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().expect("stdout");
    let _child = Kill(child);
    let mut url = String::new();
    std::io::BufReader::new(stdout).read_line(&mut url).expect("the URL line");
    let url = url.trim();
    let address = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("not http://127.0.0.1:PORT/mcp: {url:?}"));
    assert!(address.starts_with("127.0.0.1:") && !address.ends_with(":0"), "{address}");

    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mino-e2e", "version": "0"}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(ANSWER_WITHIN)).expect("timeout");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("mino-test-server") {
        let n = stream.read(&mut buf).expect("read the answer");
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("mcp-session-id:"), "{answer}");
    assert!(answer.contains("\"serverInfo\":{\"name\":\"mino-test-server\""), "{answer}");
}
