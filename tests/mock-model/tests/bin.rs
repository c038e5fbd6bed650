//! The `mino-mock-model` binary as Node/Lua tests use it: spawn, read the `listening` line,
//! drive over HTTP, stop by closing stdin or by SIGTERM.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_mino-mock-model"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn read_base_url(stdout: ChildStdout) -> (String, BufReader<ChildStdout>) {
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let url = line
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .trim_end()
        .to_owned();
    (url, reader)
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "mock model did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn final_text(base_url: &str) -> String {
    let text = reqwest::Client::new()
        .post(format!("{base_url}/responses"))
        .json(&json!({"model": "m", "input": [], "stream": true}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let last = text.trim_end().rsplit('\n').next().unwrap();
    let data: Value = serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(data["type"], "response.completed");
    data["response"]["output"][0]["content"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn script_from_stdin_then_exit_when_stdin_closes() {
    let mut child = spawn(&["--script", "-"]);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(br#"[{"type":"text","deltas":["from"," stdin"]}]"#).unwrap();
    stdin.flush().unwrap();
    let (base_url, mut rest) = read_base_url(child.stdout.take().unwrap());
    assert!(base_url.starts_with("http://127.0.0.1:") && base_url.ends_with("/v1"));

    assert_eq!(final_text(&base_url).await, "from stdin");
    let root = base_url.trim_end_matches("/v1");
    let recorded: Vec<Value> = reqwest::get(format!("{root}/_mock/requests")).await.unwrap().json().await.unwrap();
    assert_eq!(recorded.len(), 1);

    drop(stdin);
    assert!(wait_exit(&mut child).success());
    let mut more = String::new();
    rest.read_line(&mut more).unwrap();
    assert_eq!(more, "", "exactly one line on stdout");
}

#[tokio::test]
async fn script_file_and_sigterm() {
    let dir = std::env::temp_dir().join(format!("mino-mock-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script.json");
    std::fs::write(&script, r#"[{"type":"text","deltas":["from file"]}]"#).unwrap();

    let mut child = spawn(&["--script", script.to_str().unwrap(), "--port", "0"]);
    let (base_url, _rest) = read_base_url(child.stdout.take().unwrap());
    assert_eq!(final_text(&base_url).await, "from file");

    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    // stdin is still open, so only the signal can have stopped it.
    assert!(wait_exit(&mut child).success());
    drop(child.stdin.take());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_endpoint_without_nodelay_serves_the_same_stream() {
    let mut child = spawn(&["--no-nodelay", "--script", "-"]);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(br#"[{"type":"text","deltas":["nagle"," on"]}]"#).unwrap();
    stdin.flush().unwrap();
    let (base_url, _rest) = read_base_url(child.stdout.take().unwrap());
    assert_eq!(final_text(&base_url).await, "nagle on");
    drop(stdin);
    assert!(wait_exit(&mut child).success());
}

#[test]
fn bad_arguments_exit_with_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_mino-mock-model")).arg("--bogus").stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: mino-mock-model"));
}
