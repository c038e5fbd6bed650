//! Exit behaviour, and that the API key never leaks into files or logs.

use mino_e2e::{journal_records, options_in, wire, work_dir, MockModel, Reply, Server, Spawn, API_KEY, TIMEOUT};

#[tokio::test(flavor = "multi_thread")]
async fn stdin_close_exits_zero_and_the_key_never_appears_in_journal_or_logs() {
    let mock = MockModel::start(vec![Reply::call("call_1", "echo $OPENAI_API_KEY; env"), Reply::text("done")])
        .await
        .expect("mock");
    let mut server = Server::spawn_with(Spawn {
        base_url: Some(mock.base_url()),
        rust_log: Some("trace".into()),
        ..Default::default()
    })
    .await;
    let cwd = work_dir(server.home());
    let caps = Server::capabilities(&server.initialize(&options_in(&cwd)).await.expect("initialize"));
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Show the environment".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;
    let _: wire::EmptyResult = server
        .call(
            wire::method::APPROVAL,
            &wire::ApprovalParams {
                turn_id: turn.turn_id.clone(),
                call_id: "call_1".into(),
                decision: wire::Decision::Approve,
                reason: None,
                rule: None,
                accepted_hunks: None,
            },
        )
        .await
        .expect("approve");
    let notes = server.turn_notifications(&turn.turn_id, TIMEOUT).await;
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
    assert_eq!(mock.requests()[0].authorization.as_deref(), Some(format!("Bearer {API_KEY}").as_str()));

    server.close_stdin();
    let status = server.wait(TIMEOUT).await;
    assert_eq!(status.code(), Some(0), "{status:?}");

    let journal = std::fs::read_to_string(&caps.journal_path).expect("journal");
    assert!(!journal.contains(API_KEY), "the key is in the journal");
    assert!(!journal.contains("SENTINEL"), "part of the key is in the journal");
    let stderr = server.stderr();
    assert!(stderr.contains("TRACE") || stderr.contains("DEBUG"), "trace logging was on: {stderr:.200}");
    assert!(!stderr.contains(API_KEY), "the key is in the server's log");
    assert!(!stderr.contains("SENTINEL"), "part of the key is in the server's log");
    for n in server.notification_log() {
        assert!(!n.params.to_string().contains("SENTINEL"), "the key reached the client: {}", n.method);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_close_during_a_turn_cancels_it_and_exits_zero() {
    let mock = MockModel::start(vec![Reply::call("call_1", "touch never.txt")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let caps = Server::capabilities(&server.initialize(&options_in(&cwd)).await.expect("initialize"));
    let _: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Touch it".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;

    server.close_stdin();
    let status = server.wait(TIMEOUT).await;
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!cwd.join("never.txt").exists());
    // The turn recorded its own end (cancelled), so there is nothing to recover.
    assert_eq!(last_turn_end_status(&caps.journal_path), "cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_notification_ends_the_server() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let shutdown = server.request("shutdown", serde_json::Value::Null).await.expect("shutdown");
    assert_eq!(shutdown, serde_json::Value::Null);
    server.notify("exit", serde_json::Value::Null).await;
    // stdin stays open: the server must not wait for it.
    let status = server.wait(TIMEOUT).await;
    assert!(status.success(), "{status:?}");
}

/// `exit` while a turn waits for approval: the turn is cancelled, its end is
/// on file, and the client still hears `mino/turnEnded` before the server
/// exits.
#[tokio::test(flavor = "multi_thread")]
async fn exit_during_a_turn_still_reports_its_end() {
    let mock = MockModel::start(vec![Reply::call("call_1", "touch never.txt")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let caps = Server::capabilities(&server.initialize(&options_in(&cwd)).await.expect("initialize"));
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Touch it".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;
    server.notify("exit", serde_json::Value::Null).await;
    let end: wire::TurnEnded = server.next_notification(wire::method::TURN_ENDED, TIMEOUT).await.parse();
    assert_eq!((end.turn_id.as_str(), end.status), (turn.turn_id.as_str(), wire::TurnStatus::Cancelled));
    assert!(server.wait(TIMEOUT).await.success());
    let records = journal_records(std::path::Path::new(&caps.journal_path));
    assert_eq!(records.iter().filter(|r| r["kind"] == "turn_end").count(), 1);
    assert!(!cwd.join("never.txt").exists());
}

#[test]
fn version_flag_prints_the_version() {
    let output = std::process::Command::new(mino_e2e::server_bin()).arg("--version").output().expect("run --version");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.trim(), format!("mino-server {}", env!("CARGO_PKG_VERSION")));
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_is_ignored_and_sigterm_cancels_the_turn_and_exits_zero() {
    let mock = MockModel::start(vec![Reply::call("call_1", "touch never.txt"), Reply::text("still here")])
        .await
        .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let caps = Server::capabilities(&server.initialize(&options_in(&cwd)).await.expect("initialize"));
    let pid = server.pid().expect("pid") as libc::pid_t;

    // A terminal's Ctrl+C reaches the server too: it must survive it.
    let _: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Touch it".into(), ..Default::default() })
        .await
        .expect("chat");
    let _ = server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let history: wire::HistoryResult =
        server.call(wire::method::HISTORY, &serde_json::json!({})).await.expect("alive after SIGINT");
    assert_eq!(history.turns.len(), 1);

    // SIGTERM stops it like the end of input.
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = server.wait(TIMEOUT).await;
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!cwd.join("never.txt").exists());
    assert_eq!(last_turn_end_status(&caps.journal_path), "cancelled");
}

/// A chat sent right before stdin closes either opens no turn or a turn that
/// ends on file: no turn is left open behind an exited server.
#[tokio::test(flavor = "multi_thread")]
async fn a_chat_racing_the_end_of_input_leaves_no_open_turn() {
    for round in 0..10 {
        let mock = MockModel::start(vec![Reply::call("call_1", "touch never.txt")]).await.expect("mock");
        let mut server = Server::spawn(&mock).await;
        let cwd = work_dir(server.home());
        let caps = Server::capabilities(&server.initialize(&options_in(&cwd)).await.expect("initialize"));
        server
            .send_message(&serde_json::json!({"jsonrpc": "2.0", "id": 77, "method": wire::method::CHAT,
                                               "params": {"text": "Touch it"}}))
            .await;
        server.close_stdin();
        let status = server.wait(TIMEOUT).await;
        assert_eq!(status.code(), Some(0), "round {round}: {status:?}");
        let records = journal_records(std::path::Path::new(&caps.journal_path));
        let opened = records.iter().filter(|r| r["kind"] == "user").count();
        let ended = records.iter().filter(|r| r["kind"] == "turn_end").count();
        assert_eq!(opened, ended, "round {round}: every turn that opened has ended on file: {records:#?}");
        assert!(!cwd.join("never.txt").exists(), "round {round}: nothing ran");
    }
}

/// The status of the journal's last `turn_end`.
fn last_turn_end_status(journal_path: &str) -> String {
    let records = journal_records(std::path::Path::new(journal_path));
    let end = records.iter().rev().find(|r| r["kind"] == "turn_end").expect("turn_end");
    end["status"].as_str().unwrap_or_default().to_string()
}
