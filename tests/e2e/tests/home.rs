//! A `MINO_HOME` Mino cannot use is a session it cannot open (`-32015`),
//! with a message naming the path and saying what to do.

use mino_e2e::{options_in, wire, MockModel, Server, Spawn};

#[tokio::test(flavor = "multi_thread")]
async fn a_mino_home_that_is_a_file_is_session_unavailable_and_says_what_to_do() {
    let root = tempfile::tempdir().expect("tempdir");
    let home_file = root.path().join("not-a-directory");
    std::fs::write(&home_file, "a file where Mino's home should be\n").expect("file");
    let cwd = root.path().join("work");
    std::fs::create_dir(&cwd).expect("cwd");
    let mock = MockModel::start(vec![]).await.expect("mock");
    // The server logs to a home of its own; MINO_HOME is overridden to the file.
    let mut server = Server::spawn_with(Spawn {
        base_url: Some(mock.base_url()),
        env: vec![("MINO_HOME".into(), home_file.display().to_string())],
        ..Default::default()
    })
    .await;
    let err = server.initialize(&options_in(&cwd)).await.expect_err("a file is no home");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains(&home_file.display().to_string()), "names the path: {err}");
    assert!(err.message.contains("not a directory"), "says what is wrong: {err}");
    assert!(err.message.contains("set MINO_HOME to a directory"), "says what to do: {err}");
    assert_eq!(
        std::fs::read_to_string(&home_file).expect("file"),
        "a file where Mino's home should be\n",
        "the file is left alone"
    );

    // A home below a file is refused the same way.
    let below = home_file.join("mino");
    let mut server = Server::spawn_with(Spawn {
        base_url: Some(mock.base_url()),
        env: vec![("MINO_HOME".into(), below.display().to_string())],
        ..Default::default()
    })
    .await;
    let err = server.initialize(&options_in(&cwd)).await.expect_err("no home below a file");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains(&below.display().to_string()), "names the path: {err}");
    assert!(err.message.contains("set MINO_HOME to a directory"), "says what to do: {err}");
}
