//! The command supervisor on its own: what the command sees, and the evidence
//! it leaves when the result is never confirmed saved.

use mino_core::bash::{BashTool, Limits};
use mino_core::supervisor::{self, EvidenceOutcome, EvidenceTarget};
use mino_core::ToolStatus;
use tokio_util::sync::CancellationToken;

const SUPERVISOR: &str = env!("CARGO_BIN_EXE_mino-supervisor");

#[tokio::test]
async fn the_command_sees_bash_as_its_name() {
    let tool = BashTool::new(std::env::temp_dir(), Limits::default(), SUPERVISOR.into());
    let outcome = tool.run("echo $0", &mut |_, _| {}, &CancellationToken::new()).await;
    assert_eq!((outcome.status, outcome.output.as_str()), (ToolStatus::Success, "bash\n"));
}

#[tokio::test]
async fn an_unsaved_result_leaves_evidence_and_a_saved_one_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("s1.jsonl");
    let tool = BashTool::new(dir.path().to_path_buf(), Limits::default(), SUPERVISOR.into());
    let target = |index| EvidenceTarget {
        path: supervisor::evidence_path(&journal, "turn-1", index).expect("path"),
        turn_id: "turn-1".into(),
        call_id: "call_1".into(),
        call_index: index,
    };

    let (outcome, settle) = tool
        .run_recorded(
            tool.start_supervisor(),
            "echo one; echo two",
            Some(target(0)),
            &mut |_, _| {},
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(outcome.status, ToolStatus::Success);
    drop(settle);
    let path = target(0).path;
    // The supervisor writes once it sees the pipe close; wait for the file.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let evidence = loop {
        if let Some(e) = supervisor::load_evidence(&journal, "turn-1", 0, "call_1") {
            break e;
        }
        assert!(std::time::Instant::now() < deadline, "no evidence at {}", path.display());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(
        (evidence.outcome, evidence.exit_code, evidence.after_mino_stopped),
        (EvidenceOutcome::Exited, Some(0), false)
    );
    assert_eq!(evidence.output_tail, "one\ntwo\n");
    assert_eq!(evidence.summary(), "the command exited 0; Mino stopped before saving its result; last output: two");

    let (outcome, settle) = tool
        .run_recorded(tool.start_supervisor(), "echo three", Some(target(1)), &mut |_, _| {}, &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, ToolStatus::Success);
    settle.saved().await;
    // Run another command to give the saved supervisor time to have exited.
    tool.run("true", &mut |_, _| {}, &CancellationToken::new()).await;
    assert!(!target(1).path.exists(), "a saved result leaves no record");
}

/// The process state letter of `pid` from /proc (`Z` for a zombie), or
/// `None` once it is gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the command name, which is in parentheses.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next())
}

/// Waits (up to 20 s) until `pid` has exited: gone, or a zombie not yet reaped.
async fn wait_exited(pid: u32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !matches!(process_state(pid), None | Some('Z')) {
        assert!(std::time::Instant::now() < deadline, "process {pid} is still running");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_supervisor_started_ahead_and_never_given_a_command_exits_having_run_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tool = BashTool::new(dir.path().to_path_buf(), Limits::default(), SUPERVISOR.into());
    let idle = tool.start_supervisor();
    let pid = idle.id().expect("the supervisor started");
    assert!(matches!(process_state(pid), Some(state) if state != 'Z'), "it waits for its command");
    // A failed save or a cancel before the command ran drops it unused.
    drop(idle);
    wait_exited(pid).await;
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0, "nothing ran in the directory");
}

#[tokio::test]
async fn a_supervisor_killed_before_it_got_its_command_reports_that_the_command_did_not_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tool = BashTool::new(dir.path().to_path_buf(), Limits::default(), SUPERVISOR.into());
    let idle = tool.start_supervisor();
    let pid = idle.id().expect("the supervisor started");
    // SAFETY: kill(2) on the pid of our own child, which is not reaped yet.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    wait_exited(pid).await;
    let (outcome, settle) =
        tool.run_recorded(idle, "touch ran.txt", None, &mut |_, _| {}, &CancellationToken::new()).await;
    settle.saved().await;
    assert_eq!(outcome.status, ToolStatus::Failed);
    assert!(outcome.output.contains("the command did not run"), "{}", outcome.output);
    assert!(!dir.path().join("ran.txt").exists());
}

#[tokio::test]
async fn a_command_longer_than_one_argument_runs_as_bash_c_would_run_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tool = BashTool::new(dir.path().to_path_buf(), Limits::default(), SUPERVISOR.into());
    // A heredoc of 300 KiB (one argument holds at most 128 KiB), with
    // multi-byte characters across the places it may be cut.
    let line = "ünïcödé line with $HOME unexpanded and a tab\t.\n";
    let body: String = line.repeat(300 * 1024 / line.len());
    let command = format!(
        "cat > big.txt <<'EOF'\n{body}EOF\necho \"$0 $# $(wc -c < big.txt)\"; printf '%s' \"$IFS\" | od -An -c"
    );
    assert!(command.len() > 300 * 1024);
    let outcome = tool.run(&command, &mut |_, _| {}, &CancellationToken::new()).await;
    assert_eq!(outcome.status, ToolStatus::Success, "{}", outcome.output);
    let mut lines = outcome.output.lines();
    assert_eq!(lines.next(), Some(format!("bash 0 {}", body.len()).as_str()), "{}", outcome.output);
    assert_eq!(lines.next().map(str::split_whitespace).map(Iterator::collect::<Vec<_>>), Some(vec!["\\t", "\\n"]));
    assert_eq!(std::fs::read_to_string(dir.path().join("big.txt")).expect("big.txt"), body);
}

#[tokio::test]
async fn a_command_over_what_the_system_allows_fails_saying_so_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tool = BashTool::new(dir.path().to_path_buf(), Limits::default(), SUPERVISOR.into());
    let command = format!("touch ran.txt; : '{}'", "x".repeat(64 * 1024 * 1024));
    let outcome = tool.run(&command, &mut |_, _| {}, &CancellationToken::new()).await;
    assert_eq!(outcome.status, ToolStatus::Failed);
    assert!(
        outcome.output.contains("The command did not run") && outcome.output.contains("write_file"),
        "{}",
        outcome.output
    );
    assert!(!dir.path().join("ran.txt").exists());
}

/// `terminal/*` as an editor implements them: the program run with the
/// editor's own environment (plus a variable of its own), its stdout kept.
/// With `intruder`, something else connects to the socket first with a
/// wrong token.
struct EditorTerminals {
    stdout: std::sync::Arc<std::sync::Mutex<Option<tokio::process::Child>>>,
    intruder: bool,
}

impl mino_core::terminal::CommandTerminals for EditorTerminals {
    fn create(
        &self,
        launch: mino_core::terminal::TerminalLaunch,
    ) -> futures::future::BoxFuture<'static, Result<String, String>> {
        let slot = self.stdout.clone();
        let intruder = self.intruder;
        Box::pin(async move {
            if intruder {
                use std::io::Write;
                let socket = launch.args.last().expect("the socket's path");
                let mut stream = std::os::unix::net::UnixStream::connect(socket).expect("connect");
                stream.write_all(b"not-the-token\n").expect("write");
            }
            let child = tokio::process::Command::new(&launch.program)
                .args(&launch.args)
                .envs(launch.env)
                .env("EDITOR_SECRET", "of-the-editor")
                .current_dir(&launch.cwd)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| e.to_string())?;
            *slot.lock().expect("lock") = Some(child);
            Ok("term-1".to_string())
        })
    }

    fn finish(&self, _terminal_id: String, _kill: bool) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn a_supervisor_an_editor_starts_runs_the_command_as_mino_would_and_shows_it_in_the_terminal() {
    use tokio::io::AsyncReadExt;
    for intruder in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let tool = BashTool::new(dir.path().to_path_buf(), Limits::default(), SUPERVISOR.into());
        let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
        let terminals = EditorTerminals { stdout: slot.clone(), intruder };
        let (idle, id) =
            tool.start_in_terminal(&terminals, "turn-1", "call_1").await.expect("the terminal's supervisor");
        assert_eq!(id, "term-1");
        let command =
            "echo in-the-terminal; echo \"secret=${EDITOR_SECRET:-none} token=${MINO_SUPERVISOR_TOKEN:-none}\"";
        let (outcome, settle) = tool.run_recorded(idle, command, None, &mut |_, _| {}, &CancellationToken::new()).await;
        settle.saved().await;
        assert_eq!(outcome.status, ToolStatus::Success, "{}", outcome.output);
        // The editor's environment and the token never reach the command.
        assert_eq!(outcome.output, "in-the-terminal\nsecret=none token=none\n");
        let mut child = slot.lock().expect("lock").take().expect("spawned");
        let mut shown = String::new();
        child.stdout.take().expect("stdout").read_to_string(&mut shown).await.expect("read");
        assert_eq!(shown, format!("$ {command}\nin-the-terminal\nsecret=none token=none\n"));
        assert!(child.wait().await.expect("exit").success());
    }
}
