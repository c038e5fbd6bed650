//! Shared helpers: the real `mino` binary, with the real `mino-server` beside it.
//!
//! `cargo test --workspace` builds `mino-server` into the same target
//! directory; `cargo test -p mino` alone does not, so the first test that
//! needs it runs `cargo build -p mino-server` (same profile) once.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

pub const TIMEOUT_MS: u64 = 60_000;

pub fn mino() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mino"))
}

/// The server binary beside `mino`, built on demand.
pub fn server() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let beside = mino().parent().expect("mino has a directory").join("mino-server");
            if !beside.is_file() {
                let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
                let mut cmd = Command::new(cargo);
                cmd.args(["build", "-p", "mino-server"]);
                if mino().components().any(|c| c.as_os_str() == "release") {
                    cmd.arg("--release");
                }
                let status = cmd.status().expect("run cargo build -p mino-server");
                assert!(status.success(), "cargo build -p mino-server failed; build it before running these tests");
            }
            assert!(beside.is_file(), "{} missing: run `cargo build -p mino-server`", beside.display());
            beside
        })
        .clone()
}

/// A scratch directory with `home/` (MINO_HOME) and `work/` (cwd).
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new().prefix("mino-term-test-").tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        std::fs::create_dir_all(dir.path().join("work")).expect("work");
        Scratch { dir }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// `mino` set up to run against `base_url` in this scratch directory.
    pub fn command(&self, base_url: &str) -> Command {
        let mut cmd = Command::new(mino());
        cmd.current_dir(self.work())
            .env("MINO_HOME", self.home())
            .env("MINO_SERVER", server())
            .env("OPENAI_BASE_URL", base_url)
            .env("OPENAI_API_KEY", "sk-test")
            .env("HOME", self.dir.path())
            .env("TERM", "dumb")
            .env_remove("RUST_LOG")
            .env_remove("MINO_MODEL");
        cmd
    }

    /// The only session file in this home.
    pub fn journal(&self) -> PathBuf {
        let dir = self.home().join("sessions");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        assert_eq!(files.len(), 1, "expected one session file in {}: {files:?}", dir.display());
        files.remove(0)
    }

    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.home().join("logs").join("server.log")).unwrap_or_default()
    }
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Lines of a session journal whose record kind is `kind`.
pub fn records(journal: &str, kind: &str) -> usize {
    journal.lines().filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["kind"] == kind)).count()
}

/// A runtime whose worker threads keep serving the mock model while a test
/// thread blocks on a pseudo-terminal.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

/// Waits for a child to exit, killing it after `timeout`.
pub fn wait_with_timeout(child: &mut std::process::Child, timeout: Duration) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("process did not exit within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
