//! TEMPORARY STAND-IN: launching a stdio MCP server. The supervised version
//! (own process group under the command supervisor, grandchildren stopped
//! whatever kills Mino) replaces this file; the interface is the same.
//! This one spawns the server directly in a process group of its own and
//! kills that group when the child is dropped or stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncBufReadExt;

/// How to start one stdio MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Given to the server; never logged (it may hold secrets).
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum McpSpawnError {
    #[error("MCP server `{server}`: command `{command}` not found")]
    NotFound { server: String, command: String },
    #[error("MCP server `{server}`: `{command}` could not be started: {source}")]
    Spawn { server: String, command: String, source: std::io::Error },
}

/// A running server: its pipes, and the guard that stops its process group.
pub struct McpChild {
    pub stdin: tokio::process::ChildStdin,
    pub stdout: tokio::process::ChildStdout,
    child: Option<tokio::process::Child>,
    pgid: Option<i32>,
}

impl McpChild {
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }

    pub async fn stop(mut self) {
        self.kill_group();
        if let Some(mut child) = self.child.take() {
            let _ = child.wait().await;
        }
    }

    fn kill_group(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: kill(2) with a negative pid signals the group.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
}

impl Drop for McpChild {
    fn drop(&mut self) {
        self.kill_group();
    }
}

pub async fn spawn_stdio(spec: &StdioServerSpec, _supervisor_exe: &Path) -> Result<McpChild, McpSpawnError> {
    let mut command = tokio::process::Command::new(&spec.command);
    command
        .args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => {
            McpSpawnError::NotFound { server: spec.name.clone(), command: spec.command.clone() }
        }
        _ => McpSpawnError::Spawn { server: spec.name.clone(), command: spec.command.clone(), source },
    })?;
    let missing = |what: &str| McpSpawnError::Spawn {
        server: spec.name.clone(),
        command: spec.command.clone(),
        source: std::io::Error::other(format!("no {what} pipe")),
    };
    let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
    if let Some(stderr) = child.stderr.take() {
        let server = spec.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(server = %server, "{line}");
            }
        });
    }
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    Ok(McpChild { stdin, stdout, child: Some(child), pgid })
}
