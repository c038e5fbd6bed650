//! A session open in one server cannot be opened by a second one.

use mino_e2e::{options_in, wire, work_dir, MockModel, Reply, Server, TIMEOUT};

#[tokio::test(flavor = "multi_thread")]
async fn a_second_server_on_the_same_session_fails_initialize_and_writes_nothing() {
    let mock = MockModel::start(vec![Reply::text("first answer"), Reply::text("still here")]).await.expect("mock");
    let mut first = Server::spawn(&mock).await;
    let home = first.home().to_path_buf();
    let cwd = work_dir(&home);
    let result = first.initialize(&options_in(&cwd)).await.expect("initialize");
    let caps = Server::capabilities(&result);
    let turn: wire::ChatResult = first
        .call(wire::method::CHAT, &wire::ChatParams { text: "hello".into(), ..Default::default() })
        .await
        .expect("chat");
    first.turn_notifications(&turn.turn_id, TIMEOUT).await;
    let journal = std::path::PathBuf::from(&caps.journal_path);
    let before = std::fs::read(&journal).expect("journal");

    let mut second = Server::spawn_in(&home, &mock).await;
    let options = wire::InitializationOptions {
        cwd: Some(cwd.display().to_string()),
        session: Some(caps.session_id.clone()),
        new_session: false,
        ..Default::default()
    };
    let err = second.initialize(&options).await.expect_err("the session is locked");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE);
    assert!(err.message.contains(&caps.journal_path), "names the file: {}", err.message);
    assert!(err.message.contains("open in another Mino process"), "names the cause: {}", err.message);
    // Other methods are refused as before initialize.
    let err = second.request(wire::method::HISTORY, serde_json::json!({})).await.expect_err("not initialized");
    assert_eq!(err.code, -32002);
    assert_eq!(std::fs::read(&journal).expect("journal"), before, "the journal is untouched");

    second.close_stdin();
    assert!(second.wait(TIMEOUT).await.success());
    assert_eq!(std::fs::read(&journal).expect("journal"), before);

    // Without an id, a second server on the same workspace passes over the
    // held session and gets a session of its own, never an error.
    let mut third = Server::spawn_in(&home, &mock).await;
    let own = Server::capabilities(&third.initialize(&options_in(&cwd)).await.expect("a session of its own"));
    assert_ne!(own.session_id, caps.session_id);
    third.close_stdin();
    assert!(third.wait(TIMEOUT).await.success());
    assert_eq!(std::fs::read(&journal).expect("journal"), before, "the held session is untouched");

    // The first server is unaffected.
    let turn: wire::ChatResult = first
        .call(wire::method::CHAT, &wire::ChatParams { text: "still there?".into(), ..Default::default() })
        .await
        .expect("chat");
    let notes = first.turn_notifications(&turn.turn_id, TIMEOUT).await;
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_session_can_be_opened_beside_a_locked_one() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut first = Server::spawn(&mock).await;
    let home = first.home().to_path_buf();
    let cwd = work_dir(&home);
    let one = Server::capabilities(&first.initialize(&options_in(&cwd)).await.expect("initialize"));
    let mut second = Server::spawn_in(&home, &mock).await;
    let options =
        wire::InitializationOptions { cwd: Some(cwd.display().to_string()), new_session: true, ..Default::default() };
    let two = Server::capabilities(&second.initialize(&options).await.expect("a new session"));
    assert_ne!(one.session_id, two.session_id);

    // An unknown session id is a clear error too.
    let mut third = Server::spawn_in(&home, &mock).await;
    let options = wire::InitializationOptions { session: Some("no-such-session".into()), ..options_in(&cwd) };
    let err = third.initialize(&options).await.expect_err("no such session");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE);
    assert!(err.message.contains("no-such-session"), "{}", err.message);
}
