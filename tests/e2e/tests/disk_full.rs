//! A save that fails for real (ENOSPC on a tiny tmpfs) answers `-32013` with
//! the file and the cause, and the server keeps answering. Needs root to
//! mount the tmpfs; skipped otherwise.

use std::io::Write;
use std::path::{Path, PathBuf};

use mino_e2e::{options_in, wire, MockModel, Reply, Server, Spawn, TIMEOUT};

struct Tmpfs(PathBuf, tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).ok()?;
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mnt)
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then_some(Tmpfs(mnt, dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Fills the filesystem of `dir` up to the last byte.
fn fill(dir: &Path) {
    let mut file = std::fs::File::create(dir.join("filler")).expect("filler");
    let block = vec![0u8; 1024];
    while file.write_all(&block).is_ok() {}
    let small = [0u8; 1];
    while file.write_all(&small).is_ok() {}
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_answers_journal_failure_and_the_server_keeps_serving() {
    let Some(tmpfs) = Tmpfs::mount("256k") else {
        eprintln!("skipped: cannot mount a tmpfs (needs root)");
        return;
    };
    let mock = MockModel::start(vec![Reply::text("unused")]).await.expect("mock");
    let home = tmpfs.0.join("home");
    let cwd = tmpfs.1.path().to_path_buf();
    let mut server =
        Server::spawn_with(Spawn { home: Some(home.clone()), base_url: Some(mock.base_url()), ..Default::default() })
            .await;
    let caps = Server::capabilities(&server.initialize(&options_in(&cwd)).await.expect("initialize"));
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    // The stderr log lives in MINO_HOME too; it may lose lines, which is fine.
    fill(&tmpfs.0);
    let before = std::fs::read(&caps.journal_path).expect("journal");

    // Bigger than a page, so the append needs space the disk does not have.
    let text = "milk ".repeat(2000);
    let err = server.request(wire::method::CHAT, serde_json::json!({ "text": text })).await.expect_err("disk full");
    assert_eq!(err.code, wire::error_code::JOURNAL_FAILURE, "{err}");
    assert!(err.message.contains(&caps.journal_path), "names the file: {}", err.message);
    assert!(err.message.contains("No space left on device"), "names the cause: {}", err.message);
    assert_eq!(std::fs::read(&caps.journal_path).expect("journal"), before, "no half line is left behind");
    assert!(mock.requests().is_empty(), "nothing reached the model");

    // The server still answers; the broken session refuses further turns.
    let history: wire::HistoryResult =
        server.call(wire::method::HISTORY, &serde_json::json!({})).await.expect("history");
    assert!(history.turns.is_empty());
    std::fs::remove_file(tmpfs.0.join("filler")).expect("free space");
    let err =
        server.request(wire::method::CHAT, serde_json::json!({"text": "hi"})).await.expect_err("broken until reopened");
    assert_eq!(err.code, wire::error_code::JOURNAL_FAILURE);

    server.close_stdin();
    assert!(server.wait(TIMEOUT).await.success());

    // Reopened with space again, the session works.
    let mut again =
        Server::spawn_with(Spawn { home: Some(home), base_url: Some(mock.base_url()), ..Default::default() }).await;
    again.initialize(&options_in(&cwd)).await.expect("reopen");
    let turn: wire::ChatResult = again
        .call(wire::method::CHAT, &wire::ChatParams { text: "hi".into(), ..Default::default() })
        .await
        .expect("chat after reopening");
    let notes = again.turn_notifications(&turn.turn_id, TIMEOUT).await;
    assert_eq!(notes.last().expect("end").parse::<wire::TurnEnded>().status, wire::TurnStatus::Completed);
    again.close_stdin();
    assert!(again.wait(TIMEOUT).await.success());
}
