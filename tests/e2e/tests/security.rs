//! Security: nothing runs without a synced approval for that exact call,
//! the API key never leaves the server except towards the model, session
//! ids cannot escape `$MINO_HOME/sessions`, and runaway commands are
//! contained (output cap, timeout, process-group kill, SIGKILL after an
//! ignored SIGTERM).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mino_e2e::{
    chat, count_kind, end_of, journal_records, next_approval_request, open, options_in, session_files, wire, work_dir,
    MockModel, Reply, Server, Spawn, API_KEY, TIMEOUT,
};
use serde_json::{json, Value};

const NO_PENDING: i64 = wire::error_code::NO_PENDING_APPROVAL;

async fn approval(server: &mut Server, turn_id: &str, call_id: &str, decision: &str) -> Result<Value, i64> {
    let params = json!({"turnId": turn_id, "callId": call_id, "decision": decision});
    server.request(wire::method::APPROVAL, params).await.map_err(|e| e.code)
}

/// A command that would create `marker`.
fn touch(marker: &Path) -> String {
    format!("touch {}", marker.display())
}

// ------------------------------------------------------------ approvals

#[tokio::test(flavor = "multi_thread")]
async fn unknown_call_ids_and_deny_then_approve_run_nothing() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let marker = cwd.join("marker-deny");
    let mock =
        MockModel::start(vec![Reply::call("call_1", &touch(&marker)), Reply::text("Understood.")]).await.expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;

    // Before any turn: nothing is pending.
    assert_eq!(approval(&mut server, "turn-1", "call_1", "approve").await, Err(NO_PENDING));
    let turn = chat(&mut server, "Make the marker.").await;
    let request = next_approval_request(&mut server).await;
    assert_eq!(request.call_id, "call_1");
    // Near misses of the pending id are unknown ids.
    for id in ["call_2", "", "call_1 ", "CALL_1", "../call_1", "call_1\u{0}", "*"] {
        assert_eq!(approval(&mut server, &turn, id, "approve").await, Err(NO_PENDING), "{id:?}");
    }
    assert!(!marker.exists());
    // Deny, then try to approve the same call.
    approval(&mut server, &turn, "call_1", "deny").await.expect("deny");
    assert_eq!(approval(&mut server, &turn, "call_1", "approve").await, Err(NO_PENDING));
    let end = end_of(&mut server, &turn).await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    assert_eq!(approval(&mut server, &turn, "call_1", "approve").await, Err(NO_PENDING));
    assert!(!marker.exists(), "a denied call ran");
    let journal = session_files(home.path()).pop().expect("journal");
    assert_eq!(count_kind(&journal, "tool_start"), 0);
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approving_twice_or_fifty_times_at_once_runs_the_command_once() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let count = cwd.join("count.txt");
    let mock =
        MockModel::start(vec![Reply::call("call_1", &format!("echo x >> {}", count.display())), Reply::text("Once.")])
            .await
            .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Count once.").await;
    next_approval_request(&mut server).await;
    // 50 approvals of the same call in one write: exactly one is accepted.
    let mut raw = Vec::new();
    for i in 0..50 {
        let message = json!({"jsonrpc": "2.0", "id": 9000 + i, "method": wire::method::APPROVAL,
            "params": {"turnId": turn, "callId": "call_1", "decision": "approve"}});
        raw.extend_from_slice(&mino_e2e::frame(&message));
    }
    server.send_raw(&raw).await;
    let mut accepted = 0;
    for _ in 0..50 {
        let answer = server.next_orphan_response(TIMEOUT).await;
        if answer.get("result").is_some() {
            accepted += 1;
        } else {
            assert_eq!(answer["error"]["code"], NO_PENDING, "{answer}");
        }
    }
    assert_eq!(accepted, 1);
    let end = end_of(&mut server, &turn).await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    // And once more after the turn.
    assert_eq!(approval(&mut server, &turn, "call_1", "approve").await, Err(NO_PENDING));
    assert_eq!(std::fs::read_to_string(&count).expect("count"), "x\n");
    let journal = session_files(home.path()).pop().expect("journal");
    assert_eq!(count_kind(&journal, "tool_start"), 1);
    assert_eq!(count_kind(&journal, "approval"), 1);
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approving_after_cancel_runs_nothing() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let marker = cwd.join("marker-cancel");
    let mock = MockModel::start(vec![Reply::call("call_1", &touch(&marker))]).await.expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Make the marker.").await;
    next_approval_request(&mut server).await;
    server.request(wire::method::CANCEL, json!({"turnId": turn})).await.expect("cancel");
    let end = end_of(&mut server, &turn).await;
    assert_eq!(end.status, wire::TurnStatus::Cancelled);
    assert_eq!(approval(&mut server, &turn, "call_1", "approve").await, Err(NO_PENDING));
    assert!(!marker.exists(), "a cancelled call ran");
    let journal = session_files(home.path()).pop().expect("journal");
    let result = journal_records(&journal).into_iter().find(|r| r["kind"] == "tool_result").expect("a result");
    assert_eq!(result["status"], "not_executed");
    assert_eq!(count_kind(&journal, "tool_start"), 0);
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approving_the_pending_call_of_a_killed_server_runs_nothing() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let marker = cwd.join("marker-restart");
    let mock = MockModel::start(vec![Reply::call("call_1", &touch(&marker)), Reply::text("Nothing ran.")])
        .await
        .expect("mock");
    let mut first = Server::spawn_in(home.path(), &mock).await;
    open(&mut first, &cwd).await;
    let old_turn = chat(&mut first, "Make the marker.").await;
    next_approval_request(&mut first).await;
    first.kill().await;

    let mut second = Server::spawn_in(home.path(), &mock).await;
    // Before initialize: refused as uninitialized.
    let err = second
        .request(wire::method::APPROVAL, json!({"turnId": old_turn, "callId": "call_1", "decision": "approve"}))
        .await
        .expect_err("not initialized");
    assert_eq!(err.code, -32002);
    let recovery = open(&mut second, &cwd).await;
    assert_eq!(recovery.turns[0].calls[0].result.status, wire::ToolStatus::NotExecuted);
    assert_eq!(approval(&mut second, &old_turn, "call_1", "approve").await, Err(NO_PENDING));
    // A new turn does not resurrect the old call either.
    let turn = chat(&mut second, "Did it run?").await;
    assert_eq!(approval(&mut second, &old_turn, "call_1", "approve").await, Err(NO_PENDING));
    assert_eq!(approval(&mut second, &turn, "call_1", "approve").await, Err(NO_PENDING));
    let end = end_of(&mut second, &turn).await;
    assert_eq!(end.status, wire::TurnStatus::Completed);
    assert!(!marker.exists(), "the killed server's pending call ran");
    let journal = session_files(home.path()).pop().expect("journal");
    assert_eq!(count_kind(&journal, "tool_start"), 0);
    second.close_stdin();
    second.wait(TIMEOUT).await;
}

// ------------------------------------------------------------ secrets

#[tokio::test(flavor = "multi_thread")]
async fn the_api_key_reaches_the_model_only() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::call("call_1", "env; echo \"key=[$OPENAI_API_KEY]\""),
        Reply::text("Here is the environment."),
        // A model service that echoes the key in an error (a misbehaving proxy).
        Reply::http_error(401, "invalid_api_key", format!("Incorrect API key provided: {API_KEY}.")),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        rust_log: Some("trace".into()),
        ..Default::default()
    })
    .await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Show me your environment.").await;
    let request = next_approval_request(&mut server).await;
    assert!(
        !serde_json::to_string(&request.environment).expect("json").contains(API_KEY),
        "the approval request shows the key"
    );
    assert!(!request.environment.contains_key("OPENAI_API_KEY"));
    approval(&mut server, &turn, "call_1", "approve").await.expect("approve");
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Success);
    assert!(result.output.contains("PATH="), "env ran: {}", result.output);
    assert!(result.output.contains("key=[]"), "{}", result.output);
    let turn2 = chat(&mut server, "Once more.").await;
    let end = end_of(&mut server, &turn2).await;
    assert_eq!(end.status, wire::TurnStatus::Failed);
    server.close_stdin();
    server.wait(TIMEOUT).await;

    // The only place the key went: the model's Authorization header.
    for r in mock.requests() {
        assert_eq!(r.authorization.as_deref(), Some(format!("Bearer {API_KEY}").as_str()));
        assert!(!r.body.to_string().contains(API_KEY), "the key is in a model request body");
    }
    let notifications = format!("{:?}", server.notification_log());
    assert!(!notifications.contains(API_KEY), "the key is in a notification");
    let stderr = server.stderr();
    assert!(stderr.contains("TRACE"), "trace logging was on");
    assert!(!stderr.contains(API_KEY), "the key is in the trace log");
    // No file under MINO_HOME holds it (journal, SOUL.md, logs).
    let mut files = vec![home.path().to_path_buf()];
    let mut scanned = 0;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).expect("dir").flatten().map(|e| e.path()));
        } else {
            let bytes = std::fs::read(&path).expect("file");
            assert!(!String::from_utf8_lossy(&bytes).contains(API_KEY), "{} holds the key", path.display());
            scanned += 1;
        }
    }
    assert!(scanned >= 3, "journal, SOUL.md and the log were scanned");
}

// ------------------------------------------------------------ session ids

/// Every path under `dir`, with its length and modification time.
fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(path) = todo.pop() {
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        if meta.is_dir() {
            todo.extend(std::fs::read_dir(&path).expect("dir").flatten().map(|e| e.path()));
        }
        out.push((path, meta.len(), meta.modified().ok()));
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn session_ids_cannot_escape_the_sessions_directory() {
    let root = tempfile::tempdir().expect("root");
    let home = root.path().join("home");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(home.join("sessions")).expect("sessions");
    std::fs::create_dir_all(&outside).expect("outside");
    let cwd = work_dir(&home);
    // A file outside, and symbolic links to it (and to nothing) in sessions/.
    let target = outside.join("target.jsonl");
    std::fs::write(&target, "not yours\n").expect("target");
    std::os::unix::fs::symlink(&target, home.join("sessions/evil.jsonl")).expect("symlink");
    std::os::unix::fs::symlink(outside.join("nothing.jsonl"), home.join("sessions/dangling.jsonl"))
        .expect("dangling symlink");
    std::os::unix::fs::symlink("/etc/passwd", home.join("sessions/passwd.jsonl")).expect("symlink");
    let passwd_before = std::fs::metadata("/etc/passwd").and_then(|m| m.modified()).ok();
    let before = snapshot(root.path());

    let mock = MockModel::start(vec![]).await.expect("mock");
    let hostile = [
        "../x",
        "../../outside/target",
        "/etc/passwd",
        "/tmp/x",
        "..",
        ".",
        ".hidden",
        "a/b",
        "a\\b",
        "x\u{0}y",
        "~",
        "%2e%2e%2fx",
        "",
        &"a".repeat(200),
        "evil",
        "dangling",
        "passwd",
    ];
    for id in hostile {
        let mut server = Server::spawn_in(&home, &mock).await;
        let err = server
            .initialize(&wire::InitializationOptions {
                cwd: Some(cwd.display().to_string()),
                session: Some(id.to_string()),
                ..Default::default()
            })
            .await
            .expect_err(&format!("session id {id:?} refused"));
        assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{id:?}: {err}");
        let message = err.message.to_lowercase();
        assert!(
            message.contains("invalid session id")
                || message.contains("symbolic link")
                || message.contains("symlink")
                || message.contains("no session"),
            "{id:?}: unclear error {err}"
        );
        server.close_stdin();
        server.wait(TIMEOUT).await;
    }
    // Nothing was created, changed or read-and-rewritten anywhere.
    let after = snapshot(root.path());
    let created: Vec<_> = after
        .iter()
        .filter(|a| !before.iter().any(|b| b.0 == a.0))
        // The server's own log, and the default instructions it writes into
        // $MINO_HOME (not under sessions/) on first start.
        .filter(|a| !a.0.to_string_lossy().ends_with(".stderr.log") && a.0 != home.join("SOUL.md"))
        .collect();
    assert!(created.is_empty(), "created: {created:?}");
    for b in &before {
        let a = after.iter().find(|a| a.0 == b.0).expect("still there");
        if b.0.is_file() && !b.0.is_symlink() {
            assert_eq!(a, b, "changed: {}", b.0.display());
        }
    }
    assert_eq!(std::fs::read_to_string(&target).expect("target"), "not yours\n");
    assert!(!outside.join("nothing.jsonl").exists());
    assert_eq!(std::fs::metadata("/etc/passwd").and_then(|m| m.modified()).ok(), passwd_before);

    // Without an id, the links are not taken for the latest session: a new
    // one is created inside sessions/.
    let mut server = Server::spawn_in(&home, &mock).await;
    let result = server.initialize(&options_in(&cwd)).await.expect("initialize");
    let caps = Server::capabilities(&result);
    let journal = PathBuf::from(&caps.journal_path);
    assert_eq!(journal.parent(), Some(home.join("sessions").as_path()));
    assert!(!journal.is_symlink());
    assert_eq!(std::fs::read_to_string(&target).expect("target"), "not yours\n");
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

// ------------------------------------------------------------ runaway commands

/// A server whose commands time out after `secs` (`MINO_COMMAND_TIMEOUT_SECS`).
async fn spawn_with_timeout(home: &Path, mock: &MockModel, secs: u64) -> Server {
    // Set in the environment rather than by a wrapper script: writing an
    // executable and running it at once races with the other tests' spawns
    // (a child forked meanwhile briefly holds its write descriptor: ETXTBSY).
    Server::spawn_with(Spawn {
        home: Some(home.to_path_buf()),
        base_url: Some(mock.base_url()),
        env: vec![("MINO_COMMAND_TIMEOUT_SECS".into(), secs.to_string())],
        ..Default::default()
    })
    .await
}

fn pgrep_count(marker: &str) -> usize {
    std::process::Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0)
}

/// Waits (bounded) for `pred` on the number of processes matching `marker`.
async fn wait_processes(marker: &str, pred: impl Fn(usize) -> bool) -> usize {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let n = pgrep_count(marker);
        if pred(n) || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn unique(tag: &str) -> String {
    format!("mino-sec-{tag}-{}-{}", std::process::id(), line!())
}

#[tokio::test(flavor = "multi_thread")]
async fn infinite_output_is_capped_and_stopped_at_the_timeout() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let marker = unique("yes");
    let mock = MockModel::start(vec![Reply::call("call_1", &format!("yes {marker}")), Reply::text("That was a lot.")])
        .await
        .expect("mock");
    let mut server = spawn_with_timeout(home.path(), &mock, 2).await;
    let pid = server.pid().expect("pid");
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Say yes forever.").await;
    let request = next_approval_request(&mut server).await;
    assert_eq!(request.limits.timeout_seconds, 2);
    approval(&mut server, &turn, "call_1", "approve").await.expect("approve");
    let notes = server.turn_notifications(&turn, TIMEOUT * 4).await;
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::TimedOut);
    let limit = request.limits.output_limit_bytes as usize;
    assert!(result.output.len() <= limit + 512, "output kept: {} bytes, limit {limit}", result.output.len());
    assert!(result.output.contains("bytes of output cut"), "the cut is stated");
    assert!(result.output.contains("[timed out after 2s"), "{}", &result.output[result.output.len() - 200..]);
    let streamed: usize = notes
        .iter()
        .filter(|n| n.method == wire::method::TOOL_OUTPUT)
        .map(|n| n.params["chunk"].as_str().map_or(0, str::len))
        .sum();
    let hwm = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    println!(
        "yes for 2 s: {streamed} bytes streamed as toolOutput, {} kept in the result; server VmHWM {hwm} kB",
        result.output.len()
    );
    let end: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(end.status, wire::TurnStatus::Completed);
    assert_eq!(wait_processes(&marker, |n| n == 0).await, 0, "yes survived");
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_kills_every_background_child_of_the_command() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let marker = unique("fork");
    let mock = MockModel::start(vec![Reply::call(
        "call_1",
        &format!("for i in 1 2 3; do (exec -a {marker} sleep 300) & done; echo started; wait"),
    )])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Start three sleepers.").await;
    next_approval_request(&mut server).await;
    approval(&mut server, &turn, "call_1", "approve").await.expect("approve");
    server.next_notification(wire::method::TOOL_OUTPUT, TIMEOUT).await;
    // The three sleepers (and the command's own bash, whose text names them).
    assert!(wait_processes(&marker, |n| n >= 3).await >= 3, "three children started");
    server.request(wire::method::CANCEL, json!({"turnId": turn})).await.expect("cancel");
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Cancelled);
    let end: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(end.status, wire::TurnStatus::Cancelled);
    assert_eq!(wait_processes(&marker, |n| n == 0).await, 0, "a child outlived the cancelled turn");
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_that_ignores_sigterm_is_killed_on_cancel_and_on_timeout() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let marker = unique("noterm");
    let stubborn = format!(
        "trap '' TERM; echo ignoring; (trap '' TERM; exec -a {marker} sleep 300) & while :; do sleep 0.2; done"
    );
    let mock = MockModel::start(vec![
        Reply::call("call_1", &stubborn),
        Reply::call("call_2", &stubborn),
        Reply::text("Stopped."),
    ])
    .await
    .expect("mock");
    let mut server = spawn_with_timeout(home.path(), &mock, 3).await;
    open(&mut server, &cwd).await;

    // Cancelled: SIGTERM is ignored, SIGKILL follows.
    let turn = chat(&mut server, "Run something stubborn.").await;
    next_approval_request(&mut server).await;
    approval(&mut server, &turn, "call_1", "approve").await.expect("approve");
    server.next_notification(wire::method::TOOL_OUTPUT, TIMEOUT).await;
    assert!(wait_processes(&marker, |n| n >= 1).await >= 1, "it started");
    server.request(wire::method::CANCEL, json!({"turnId": turn})).await.expect("cancel");
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Cancelled);
    assert_eq!(wait_processes(&marker, |n| n == 0).await, 0, "survived the cancel");

    // Timed out: the same.
    let turn = chat(&mut server, "Again, and let it time out.").await;
    next_approval_request(&mut server).await;
    approval(&mut server, &turn, "call_2", "approve").await.expect("approve");
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::TimedOut);
    assert_eq!(wait_processes(&marker, |n| n == 0).await, 0, "survived the timeout");
    let end: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(end.status, wire::TurnStatus::Completed);
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_command_timeout_setting_refuses_initialize_and_writes_nothing() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut server = spawn_with_timeout(home.path(), &mock, 0).await;
    let err = server.initialize(&options_in(&cwd)).await.expect_err("0 s is refused");
    assert!(err.message.contains("MINO_COMMAND_TIMEOUT_SECS"), "{err}");
    assert!(session_files(home.path()).is_empty(), "no session was created");
    server.close_stdin();
    server.wait(TIMEOUT).await;
}

/// An approved command (sandbox off) walks up its parent chain, the
/// supervisor, the server and beyond, and reads each one's environment
/// block: the key is in none of them. From a user namespace (where a
/// sandboxed command runs) the server's `/proc` files cannot be read at
/// all: it is not dumpable. Loader variables given to the server do not
/// reach the command.
#[tokio::test(flavor = "multi_thread")]
async fn an_approved_command_walking_up_its_parents_finds_no_key() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let walk = r#"p=$PPID; for i in 1 2 3; do
  echo "== $p $(tr -d '\0' < /proc/$p/comm)"; tr '\0' '\n' < /proc/$p/environ; echo
  if [ $i = 2 ]; then
    if unshare --user --map-root-user cat /proc/$p/environ > /dev/null 2>&1; then echo "NAMESPACE-READ $p"; else echo "namespace-refused $p"; fi
  fi
  p=$(awk '{print $4}' /proc/$p/stat)
done; env"#;
    let mock = MockModel::start(vec![Reply::call("call_1", walk), Reply::text("Walked.")]).await.expect("mock");
    let mut server = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        env: vec![("LD_LIBRARY_PATH".into(), "/nonexistent-mino-loader".into())],
        ..Default::default()
    })
    .await;
    open(&mut server, &cwd).await;
    let server_pid = server.pid().expect("pid");
    let turn = chat(&mut server, "Walk up.").await;
    next_approval_request(&mut server).await;
    approval(&mut server, &turn, "call_1", "approve").await.expect("approve");
    let notes = server.turn_notifications(&turn, TIMEOUT).await;
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    let output = result.output;
    assert!(output.contains(&format!("== {server_pid} mino-server")), "the walk reached the server: {output}");
    assert!(output.contains("mino-supervise"), "the walk passed the supervisor: {output}");
    assert!(!output.contains(API_KEY), "the key was found: {output}");
    assert!(!output.contains("OPENAI_API_KEY"), "the key's variable is still there: {output}");
    eprintln!("{output}");
    let command_env = output.rsplit("namespace-").next().unwrap_or_default();
    assert!(!command_env.contains("/nonexistent-mino-loader"), "a loader variable reached the command: {output}");
    if Path::new("/usr/bin/unshare").exists() {
        assert!(output.contains(&format!("namespace-refused {server_pid}")), "{output}");
    }
    server.close_stdin();
    server.wait(TIMEOUT).await;
}
