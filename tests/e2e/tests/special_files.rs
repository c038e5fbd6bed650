//! Special files under the names Mino reads (docs/reliability.md,
//! "Special files where Mino reads"): a FIFO or a device never hangs the
//! server or fills its memory; what is not a regular file is refused with
//! an error naming the file, and everything else goes on working.

use std::path::Path;

use mino_e2e::{open, options_in, wire, work_dir, MockModel, Reply, Server, Spawn};

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A session's journal replaced by a FIFO (nobody writes to it): opening it
/// with `mino/sessions/open` or `initialize {session}` fails at once naming
/// the file, listing still answers, and the server goes on serving.
#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_named_like_a_journal_is_refused_and_blocks_nothing() {
    let mock = MockModel::start(vec![Reply::text("Hi.")]).await.expect("mock");
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mut first = Server::spawn_in(home.path(), &mock).await;
    open(&mut first, &cwd).await;
    drop(first);
    let journal = mino_e2e::session_files(home.path()).pop().expect("a journal");
    let id = journal.file_stem().and_then(|s| s.to_str()).expect("id").to_string();
    std::fs::remove_file(&journal).expect("remove");
    mkfifo(&journal);

    // Another session in another directory, then the FIFO's.
    let other = home.path().join("other");
    std::fs::create_dir_all(&other).expect("other");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &other).await;
    let listed: wire::SessionsListResult = server
        .call(
            wire::method::SESSIONS_LIST,
            &wire::SessionsListParams { scope: Some(wire::ListScope::All), ..Default::default() },
        )
        .await
        .expect("listing answers");
    assert!(listed.sessions.iter().all(|s| s.session_id != id), "a FIFO is no session: {listed:?}");
    let refused = server
        .call::<_, wire::SessionInfo>(wire::method::SESSIONS_OPEN, &wire::SessionsOpenParams { session_id: id.clone() })
        .await
        .expect_err("a FIFO cannot be opened as a session");
    assert!(refused.message.contains(&id) && refused.message.contains("FIFO"), "{refused}");
    // The server still answers.
    server
        .call::<_, wire::SessionsListResult>(wire::method::SESSIONS_LIST, &wire::SessionsListParams::default())
        .await
        .expect("still answers");

    let mut third = Server::spawn_in(home.path(), &mock).await;
    let options = wire::InitializationOptions { session: Some(id.clone()), ..options_in(&cwd) };
    let refused = third.initialize(&options).await.expect_err("initialize on a FIFO journal");
    assert!(refused.message.contains(&id) && refused.message.contains("FIFO"), "{refused}");
}

/// config.toml as a FIFO, or as a link to `/dev/zero`: `initialize` fails
/// at once with an error naming config.toml and what it is; the server
/// neither hangs nor reads without end.
#[tokio::test(flavor = "multi_thread")]
async fn config_toml_as_a_fifo_or_dev_zero_is_refused_naming_it() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    for kind in ["fifo", "dev-zero"] {
        let home = tempfile::tempdir().expect("home");
        let config = home.path().join("config.toml");
        match kind {
            "fifo" => mkfifo(&config),
            _ => std::os::unix::fs::symlink("/dev/zero", &config).expect("link"),
        }
        let cwd = work_dir(home.path());
        let spawn =
            Spawn { home: Some(home.path().to_path_buf()), base_url: Some(mock.base_url()), ..Default::default() };
        let mut server = Server::spawn_with(spawn).await;
        let refused = server.initialize(&options_in(&cwd)).await.expect_err(kind);
        assert!(refused.message.contains("config.toml"), "{kind}: {refused}");
        assert!(refused.message.contains("not a regular file"), "{kind}: {refused}");
    }
}

/// SOUL.md as a FIFO: opening the session fails
/// with an error naming the file instead of hanging.
#[tokio::test(flavor = "multi_thread")]
async fn soul_md_as_a_fifo_is_refused_naming_it() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let home = tempfile::tempdir().expect("home");
    mkfifo(&home.path().join("SOUL.md"));
    let cwd = work_dir(home.path());
    let mut server = Server::spawn_in(home.path(), &mock).await;
    let refused = server.initialize(&options_in(&cwd)).await.expect_err("SOUL.md is a FIFO");
    assert!(refused.message.contains("SOUL.md") && refused.message.contains("FIFO"), "{refused}");
}
