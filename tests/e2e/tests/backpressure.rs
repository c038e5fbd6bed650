//! A client that asks for a lot and does not read: the server stops reading
//! new requests once 64 MiB wait for the client (and handles at most a few
//! requests at once), so its memory stays bounded; once the client reads,
//! every answer arrives, whole, and nothing is dropped.

use std::process::Stdio;
use std::time::{Duration, Instant};

use mino_e2e::{options_in, server_bin, wire, work_dir, MockModel, Reply, Server, API_KEY, TIMEOUT};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The bound on the server's peak resident memory (VmHWM): 200 MiB. Without
/// backpressure, 200 answers of an 8 MB session took 1.36 GB.
const RSS_BOUND_KB: u64 = 200 * 1024;
/// Requests written at once.
const REQUESTS: usize = 200;
/// Turns of the session and the text of each: about 8 MB in all.
const TURNS: usize = 4;
const TURN_TEXT: usize = 2_000_000;

/// `VmHWM` (peak resident memory) of a process, in kB; `None` once it is gone.
fn peak_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Builds a session of about 8 MB through the server (long answers), and
/// returns the home it lives in.
async fn long_session(mock: &MockModel) -> (Server, std::path::PathBuf) {
    let mut server = Server::spawn(mock).await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    for i in 0..TURNS {
        let chat: wire::ChatResult = server
            .call(wire::method::CHAT, &wire::ChatParams { text: format!("Tell me a long story, part {i}.") })
            .await
            .expect("chat");
        let notes = server.turn_notifications(&chat.turn_id, TIMEOUT).await;
        let end: wire::TurnEnded = notes.last().expect("turnEnded").parse();
        assert_eq!(end.status, wire::TurnStatus::Completed, "{:?}", end.reason);
    }
    (server, cwd)
}

/// Reads one `Content-Length` frame's body.
async fn read_frame(stdout: &mut tokio::process::ChildStdout, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let header = String::from_utf8_lossy(&buf[..end]).into_owned();
            let length: usize = header
                .strip_prefix("Content-Length:")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("a frame without Content-Length: {header:?}"));
            if buf.len() >= end + 4 + length {
                let body = buf[end + 4..end + 4 + length].to_vec();
                buf.drain(..end + 4 + length);
                return Some(body);
            }
        }
        let n = stdout.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_does_not_read_cannot_grow_the_server_without_bound() {
    let story = "word ".repeat(TURN_TEXT / 5);
    let chunk = 64 * 1024;
    let deltas: Vec<String> = story.as_bytes().chunks(chunk).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    let replies = (0..TURNS).map(|_| Reply::Text { deltas: deltas.clone(), delay_ms: 0 }).collect();
    let mock = MockModel::start(replies).await.expect("mock");
    let (mut builder, cwd) = long_session(&mock).await;
    let home = builder.home().to_path_buf();
    let _keep = builder.keep_home();
    builder.close_stdin();
    assert!(builder.wait(TIMEOUT).await.success());

    // The same session, opened by a client that writes 200 history requests
    // at once and reads nothing.
    let stderr_path = home.join("backpressure.stderr.log");
    let mut child = tokio::process::Command::new(server_bin())
        .env("MINO_HOME", &home)
        .env("OPENAI_API_KEY", API_KEY)
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("MINO_MODEL", "mock-model")
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&stderr_path).expect("stderr file")))
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mino-server");
    let pid = child.id().expect("pid");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();

    let mut burst = frame(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "processId": null, "capabilities": {}, "initializationOptions": options_in(&cwd)}}));
    burst.extend(frame(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})));
    for id in 1..=REQUESTS {
        burst.extend(frame(&json!({"jsonrpc": "2.0", "id": id, "method": wire::method::HISTORY})));
    }
    stdin.write_all(&burst).await.expect("write the burst");
    stdin.flush().await.expect("flush");

    // Wait until the server says it stopped reading, failing as soon as its
    // memory passes the bound.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let peak = peak_kb(pid).unwrap_or_else(|| panic!("the server is gone; stderr:\n{}", stderr()));
        assert!(peak < RSS_BOUND_KB, "peak memory {peak} kB passed {RSS_BOUND_KB} kB while the client did not read");
        if stderr().contains("reading paused") {
            break;
        }
        assert!(Instant::now() < deadline, "the server never paused reading; stderr:\n{}", stderr());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let paused_peak = peak_kb(pid).unwrap_or_default();

    // Now read everything: the initialize answer, the recovery notification
    // and 200 whole answers, each the same history.
    let mut buf = Vec::new();
    let mut answers = Vec::new();
    // Every answer but its id is the same bytes as the first: compared as
    // bytes, since parsing 200 times 8 MB would dominate the test.
    let mut first: Option<Vec<u8>> = None;
    while answers.len() < REQUESTS {
        let body = tokio::time::timeout(TIMEOUT, read_frame(&mut stdout, &mut buf))
            .await
            .unwrap_or_else(|_| panic!("no more output after {} answers; stderr:\n{}", answers.len(), stderr()))
            .unwrap_or_else(|| panic!("output ended after {} answers; stderr:\n{}", answers.len(), stderr()));
        let id_at = body.windows(6).rposition(|w| w == b",\"id\":");
        let id: Option<u64> = id_at.and_then(|at| {
            let tail = std::str::from_utf8(&body[at + 6..]).ok()?;
            tail.strip_suffix('}')?.parse().ok()
        });
        let Some(id) = id.filter(|&id| id > 0) else {
            // The initialize answer or a notification.
            let message: Value = serde_json::from_slice(&body).expect("every frame is whole JSON");
            assert!(message.get("error").is_none(), "{message}");
            continue;
        };
        let without_id = body[..id_at.unwrap_or_default()].to_vec();
        match &first {
            None => {
                let message: Value = serde_json::from_slice(&body).expect("a whole JSON answer");
                let result =
                    message.get("result").unwrap_or_else(|| panic!("history {id} failed: {}", message["error"]));
                let history: wire::HistoryResult = serde_json::from_value(result.clone()).expect("history parses");
                assert_eq!(history.turns.len(), TURNS);
                let text: usize = history.turns.iter().map(|t| t.text.len()).sum();
                assert!(text >= TURNS * TURN_TEXT, "the session holds {text} bytes of text");
                first = Some(without_id);
            }
            Some(first) => assert!(*first == without_id, "answer {id} differs from the first"),
        }
        answers.push(id);
    }
    let mut sorted = answers.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=REQUESTS as u64).collect::<Vec<_>>(), "every request answered exactly once");

    let peak = peak_kb(pid).expect("the server still runs");
    println!(
        "{REQUESTS} history requests of a {} MB session, client not reading: peak RSS {paused_peak} kB when reading paused, \
         {peak} kB after all answers (bound {RSS_BOUND_KB} kB)",
        TURNS * TURN_TEXT / 1_000_000
    );
    assert!(peak < RSS_BOUND_KB, "peak memory {peak} kB");
    drop(stdin);
    let status = tokio::time::timeout(TIMEOUT, child.wait()).await.expect("exits").expect("wait");
    assert!(status.success(), "{status}; stderr:\n{}", stderr());
}
