//! Whatever kills the server, a running command does not outlive it: its
//! supervisor stops the command's process group, keeps its time limit, and
//! leaves evidence that recovery and history show beside the `unknown`
//! result (which stays `unknown`, behind the acknowledgement gate).

use std::path::Path;
use std::time::Duration;

use mino_e2e::{live_group_members, options_in, poll_until, wire, work_dir, MockModel, Reply, Server, Spawn, TIMEOUT};

/// The guarantee: every process of the command's group is gone this soon
/// after the server is (docs/reliability.md).
const GROUP_GONE_WITHIN: Duration = Duration::from_secs(2);

async fn initialize(server: &mut Server, cwd: &Path) -> (wire::ServerCapabilities, wire::RecoveryNotification) {
    let result = server.initialize(&options_in(cwd)).await.expect("initialize");
    let recovery = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    (Server::capabilities(&result), recovery)
}

/// Starts a turn whose one call is `command`, approves it, and waits until
/// the command wrote its process group id to `pgid` and created `ready`.
async fn run_until_ready(server: &mut Server, cwd: &Path) -> (String, i32) {
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Run it.".into(), ..Default::default() })
        .await
        .expect("chat");
    let request: wire::ApprovalRequest =
        server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    server
        .call::<_, wire::EmptyResult>(
            wire::method::APPROVAL,
            &serde_json::json!({"turnId": turn.turn_id, "callId": request.call_id, "decision": "approve"}),
        )
        .await
        .expect("approve");
    assert!(poll_until(TIMEOUT, || cwd.join("ready").exists()).await, "the command never got ready");
    let pgid = std::fs::read_to_string(cwd.join("pgid")).expect("pgid").trim().parse().expect("a pgid");
    assert!(!live_group_members(pgid).is_empty(), "the command's group is running");
    (turn.turn_id, pgid)
}

/// Waits for the supervisor's record of the turn's first call.
async fn evidence_file(journal: &str, turn_id: &str) -> std::path::PathBuf {
    let path = Path::new(journal).with_extension("evidence").join(format!("{turn_id}.call-0.json"));
    assert!(poll_until(TIMEOUT, || path.exists()).await, "no evidence record at {}", path.display());
    path
}

/// Reopens the session and returns its recovery and history views of the
/// one recovered call, checking that the gate holds.
async fn reopen(home: &Path, cwd: &Path, mock: &MockModel) -> (wire::RecoveredCallView, wire::HistoryCall) {
    let mut server = Server::spawn_in(home, mock).await;
    let (_, recovery) = initialize(&mut server, cwd).await;
    assert!(recovery.acknowledgement_required, "an unknown result still needs acknowledgement");
    assert_eq!(recovery.turns.len(), 1);
    let call = recovery.turns[0].calls[0].clone();
    assert_eq!(call.result.status, wire::ToolStatus::Unknown, "evidence never changes the result");
    let err =
        server.request(wire::method::CHAT, serde_json::json!({"text": "Go on."})).await.expect_err("the gate holds");
    assert_eq!(err.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    let history: wire::HistoryResult =
        server.call(wire::method::HISTORY, &serde_json::json!({})).await.expect("history");
    let in_history = history.turns[0].calls[0].clone();
    assert_eq!(in_history.result.as_ref().map(|r| r.status), Some(wire::ToolStatus::Unknown));
    (call, in_history)
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_of_the_server_stops_the_command_group_and_recovery_shows_it() {
    let command = "echo $$ > pgid; echo start >> side; touch ready; sleep 3; echo late >> side; sleep 300";
    let mock = MockModel::start(vec![Reply::call("call_1", command)]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let _home = server.keep_home();
    let home = server.home().to_path_buf();
    let cwd = work_dir(&home);
    let (caps, _) = initialize(&mut server, &cwd).await;
    let (turn_id, pgid) = run_until_ready(&mut server, &cwd).await;

    server.kill().await;
    let gone = poll_until(GROUP_GONE_WITHIN, || live_group_members(pgid).is_empty()).await;
    assert!(gone, "processes of the command's group outlived the server: {:?}", live_group_members(pgid));
    // Nothing of the group is left to write it.
    assert_eq!(std::fs::read_to_string(cwd.join("side")).expect("side"), "start\n", "`late` was never written");

    evidence_file(&caps.journal_path, &turn_id).await;
    let (call, in_history) = reopen(&home, &cwd, &mock).await;
    let evidence = call.evidence.expect("evidence beside the unknown result");
    assert_eq!(evidence.outcome, wire::EvidenceOutcome::StoppedWhenMinoStopped);
    assert!(evidence.summary.starts_with("the command was stopped when Mino stopped"), "{}", evidence.summary);
    assert_eq!(evidence.pid, pgid as u32);
    assert_eq!(in_history.evidence, Some(evidence), "history shows the same evidence");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_of_the_servers_whole_process_group_still_stops_the_command() {
    let mock =
        MockModel::start(vec![Reply::call("call_1", "echo $$ > pgid; touch ready; sleep 300")]).await.expect("mock");
    let mut server =
        Server::spawn_with(Spawn { base_url: Some(mock.base_url()), own_process_group: true, ..Default::default() })
            .await;
    let cwd = work_dir(server.home());
    initialize(&mut server, &cwd).await;
    let (_, pgid) = run_until_ready(&mut server, &cwd).await;
    let pid = server.pid().expect("server pid") as i32;
    // SAFETY: kill(2) of the process group our own child leads.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    server.wait(TIMEOUT).await;
    let gone = poll_until(GROUP_GONE_WITHIN, || live_group_members(pgid).is_empty()).await;
    assert!(gone, "the command outlived its server's process group: {:?}", live_group_members(pgid));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_finishing_just_after_the_server_died_is_reported_with_its_exit_and_output() {
    let command = "echo $$ > pgid; touch ready; while [ ! -e go ]; do sleep 0.01; done; echo finished";
    let mock = MockModel::start(vec![Reply::call("call_1", command)]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let _home = server.keep_home();
    let home = server.home().to_path_buf();
    let cwd = work_dir(&home);
    let (caps, _) = initialize(&mut server, &cwd).await;
    let (turn_id, pgid) = run_until_ready(&mut server, &cwd).await;

    server.kill().await;
    // Within the grace a command gets once Mino is gone, it finishes by itself.
    std::fs::write(cwd.join("go"), "").expect("go");
    assert!(poll_until(TIMEOUT, || live_group_members(pgid).is_empty()).await);

    evidence_file(&caps.journal_path, &turn_id).await;
    let (call, _) = reopen(&home, &cwd, &mock).await;
    let evidence = call.evidence.expect("evidence");
    assert_eq!((evidence.outcome, evidence.exit_code), (wire::EvidenceOutcome::Exited, Some(0)));
    assert_eq!(evidence.output_tail, "finished\n");
    assert_eq!(evidence.summary, "the command exited 0 after Mino stopped; last output: finished");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_time_limit_holds_without_the_server() {
    let mock = MockModel::start(vec![Reply::call("call_1", "echo $$ > pgid; echo begun; touch ready; sleep 300")])
        .await
        .expect("mock");
    let mut server = Server::spawn_with(Spawn {
        base_url: Some(mock.base_url()),
        env: vec![("MINO_COMMAND_TIMEOUT_SECS".into(), "2".into())],
        ..Default::default()
    })
    .await;
    let _home = server.keep_home();
    let home = server.home().to_path_buf();
    let cwd = work_dir(&home);
    let (caps, _) = initialize(&mut server, &cwd).await;
    let (turn_id, pgid) = run_until_ready(&mut server, &cwd).await;

    // The server is frozen: it can neither read output nor time anything.
    let server_pid = server.pid().expect("server pid") as i32;
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(server_pid, libc::SIGSTOP) };
    let gone = poll_until(TIMEOUT, || live_group_members(pgid).is_empty()).await;
    assert!(gone, "the 2 s limit was not enforced while the server was frozen");
    server.kill().await;

    evidence_file(&caps.journal_path, &turn_id).await;
    let (call, _) = reopen(&home, &cwd, &mock).await;
    let evidence = call.evidence.expect("evidence");
    assert_eq!(evidence.outcome, wire::EvidenceOutcome::TimedOut);
    assert_eq!(
        evidence.summary,
        "the command was stopped by its time limit; Mino stopped before saving its result; last output: begun"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_cancels_the_turn_and_records_its_end() {
    let mock =
        MockModel::start(vec![Reply::call("call_1", "echo $$ > pgid; touch ready; sleep 300")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let (caps, _) = initialize(&mut server, &cwd).await;
    let (turn_id, pgid) = run_until_ready(&mut server, &cwd).await;

    let pid = server.pid().expect("server pid") as i32;
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(pid, libc::SIGHUP) };
    let notes = server.turn_notifications(&turn_id, TIMEOUT).await;
    let ended: wire::TurnEnded = notes.last().expect("turnEnded").parse();
    assert_eq!(ended.status, wire::TurnStatus::Cancelled);
    let status = server.wait(TIMEOUT).await;
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(live_group_members(pgid).is_empty(), "the cancelled command's group is gone");

    let records = mino_e2e::journal_records(Path::new(&caps.journal_path));
    let kinds: Vec<&str> = records.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert_eq!(kinds[kinds.len() - 2..], ["tool_result", "turn_end"], "{kinds:?}");
    let end = records.last().expect("turn_end");
    assert_eq!(end["status"], "cancelled");
    assert_eq!(records[records.len() - 2]["status"], "cancelled");
}

/// The figure in docs/reliability.md: time from SIGKILL of the server to the
/// last process of the command's group gone, over `MINO_MEASURE_RUNS` runs
/// (default 20). Prints, asserts nothing about speed:
/// `cargo test -p mino-e2e --test e2e supervisor:: -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement; run it by name for the figure"]
async fn measure_sigkill_to_group_gone() {
    let runs: usize = std::env::var("MINO_MEASURE_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let mut times = Vec::new();
    for _ in 0..runs {
        let command = "echo $$ > pgid; touch ready; sleep 300 & sleep 300";
        let mock = MockModel::start(vec![Reply::call("call_1", command)]).await.expect("mock");
        let mut server = Server::spawn(&mock).await;
        let cwd = work_dir(server.home());
        initialize(&mut server, &cwd).await;
        let (_, pgid) = run_until_ready(&mut server, &cwd).await;
        let pid = server.pid().expect("pid") as i32;
        let start = std::time::Instant::now();
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let end = tokio::time::Instant::now() + TIMEOUT;
        while !live_group_members(pgid).is_empty() && tokio::time::Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        times.push(start.elapsed().as_secs_f64() * 1e3);
        server.wait(TIMEOUT).await;
    }
    times.sort_by(f64::total_cmp);
    println!(
        "SIGKILL of the server to the command's group gone, {runs} runs: min {:.0} ms, median {:.0} ms, max {:.0} ms",
        times[0],
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

/// The parent of the command's `bash`: its supervisor.
fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest = &stat[stat.rfind(')').expect("comm") + 1..];
    rest.split_whitespace().nth(1).expect("ppid").parse().expect("a ppid")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_supervisor_takes_its_command_group_with_it_and_the_call_is_failed() {
    let mock = MockModel::start(vec![
        Reply::call("call_1", "echo $$ > pgid; touch ready; sleep 300 & sleep 300"),
        Reply::text("Noted."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let (caps, _) = initialize(&mut server, &cwd).await;
    let (turn_id, pgid) = run_until_ready(&mut server, &cwd).await;
    let supervisor = parent_of(pgid);
    assert_ne!(supervisor as u32, server.pid().expect("pid"), "bash runs under a supervisor");
    // SAFETY: kill(2) of a process of our own test's tree.
    unsafe { libc::kill(supervisor, libc::SIGKILL) };
    let notes = server.turn_notifications(&turn_id, TIMEOUT).await;
    assert!(live_group_members(pgid).is_empty(), "the command's group outlived its supervisor");
    let result: wire::ToolResult =
        notes.iter().find(|n| n.method == wire::method::TOOL_RESULT).expect("toolResult").parse();
    assert_eq!(result.status, wire::ToolStatus::Failed);
    assert!(result.output.contains("supervisor failed"), "{}", result.output);
    let records = mino_e2e::journal_records(Path::new(&caps.journal_path));
    assert!(records.iter().any(|r| r["kind"] == "tool_result" && r["status"] == "failed"), "{records:?}");
}

/// A restart faster than the supervisor's grace finds no record yet; that is
/// no error, and history shows the record once it is there.
#[tokio::test(flavor = "multi_thread")]
async fn evidence_written_after_a_fast_restart_shows_in_history_later() {
    // TERM is ignored (by `sleep` too), so the record comes 1.5 s after the death.
    let command = "trap '' TERM; echo $$ > pgid; touch ready; sleep 300";
    let mock = MockModel::start(vec![Reply::call("call_1", command)]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let _home = server.keep_home();
    let home = server.home().to_path_buf();
    let cwd = work_dir(&home);
    initialize(&mut server, &cwd).await;
    let (_, pgid) = run_until_ready(&mut server, &cwd).await;
    server.kill().await;

    let mut server = Server::spawn_in(&home, &mock).await;
    let (_, recovery) = initialize(&mut server, &cwd).await;
    assert!(recovery.acknowledgement_required);
    assert_eq!(recovery.turns[0].calls[0].result.status, wire::ToolStatus::Unknown);
    let end = tokio::time::Instant::now() + TIMEOUT;
    let evidence = loop {
        let history: wire::HistoryResult =
            server.call(wire::method::HISTORY, &serde_json::json!({})).await.expect("history");
        assert_eq!(history.turns[0].calls[0].result.as_ref().map(|r| r.status), Some(wire::ToolStatus::Unknown));
        if let Some(evidence) = history.turns[0].calls[0].evidence.clone() {
            break evidence;
        }
        assert!(tokio::time::Instant::now() < end, "history never showed the record");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(evidence.outcome, wire::EvidenceOutcome::StoppedWhenMinoStopped);
    assert!(live_group_members(pgid).is_empty());
}

/// Reopens the session and returns the recovered call's evidence, if any.
async fn evidence_on_reopen(home: &Path, cwd: &Path, mock: &MockModel) -> Option<wire::Evidence> {
    let (call, in_history) = reopen(home, cwd, mock).await;
    assert_eq!(call.evidence, in_history.evidence, "recovery and history agree");
    call.evidence
}

/// Evidence is read only from a regular file in the session's own evidence
/// directory, never through a symlink, a FIFO or a device, and a forged or
/// garbled record neither changes the `unknown` result nor stops the open.
#[tokio::test(flavor = "multi_thread")]
async fn evidence_is_never_read_through_symlinks_fifos_or_garbage() {
    let mock =
        MockModel::start(vec![Reply::call("call_1", "echo $$ > pgid; touch ready; sleep 300")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let _home = server.keep_home();
    let home = server.home().to_path_buf();
    let cwd = work_dir(&home);
    let (caps, _) = initialize(&mut server, &cwd).await;
    let (turn_id, _) = run_until_ready(&mut server, &cwd).await;
    server.kill().await;
    let record = evidence_file(&caps.journal_path, &turn_id).await;
    assert!(evidence_on_reopen(&home, &cwd, &mock).await.is_some(), "the genuine record is shown");
    let genuine = std::fs::read(&record).expect("record");
    let dir = record.parent().expect("dir").to_path_buf();

    // The evidence directory moved outside and replaced by a symlink to it.
    let outside = tempfile::tempdir().expect("tempdir");
    let moved = outside.path().join("evidence");
    std::fs::rename(&dir, &moved).expect("move");
    std::os::unix::fs::symlink(&moved, &dir).expect("symlink dir");
    assert_eq!(evidence_on_reopen(&home, &cwd, &mock).await, None, "read through a symlinked directory");
    std::fs::remove_file(&dir).expect("unlink");
    std::fs::create_dir(&dir).expect("dir");

    // The record itself a symlink to a genuine-looking record elsewhere.
    let elsewhere = outside.path().join("record.json");
    std::fs::write(&elsewhere, &genuine).expect("write");
    std::os::unix::fs::symlink(&elsewhere, &record).expect("symlink record");
    assert_eq!(evidence_on_reopen(&home, &cwd, &mock).await, None, "read through a symlinked record");
    std::fs::remove_file(&record).expect("unlink");

    // A FIFO nobody writes to (reading it would block the open for ever).
    let made = std::process::Command::new("mkfifo").arg(&record).status().expect("mkfifo");
    assert!(made.success());
    assert_eq!(evidence_on_reopen(&home, &cwd, &mock).await, None, "a FIFO");
    std::fs::remove_file(&record).expect("unlink");

    // Garbage, and a record whose own call fields name another call.
    std::fs::write(&record, b"\x00\xff{not json").expect("garbage");
    assert_eq!(evidence_on_reopen(&home, &cwd, &mock).await, None, "garbage");
    let mut forged: serde_json::Value = serde_json::from_slice(&genuine).expect("json");
    forged["call_id"] = "call_other".into();
    std::fs::write(&record, serde_json::to_vec(&forged).expect("json")).expect("forged");
    assert_eq!(evidence_on_reopen(&home, &cwd, &mock).await, None, "another call's record");
}

/// Runs `command` as the one approved call of a turn in a fresh session and
/// returns its result.
async fn run_approved(command: &str) -> wire::ToolResult {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![Reply::call("call_1", command), Reply::text("Done.")]).await.expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    initialize(&mut server, &cwd).await;
    let turn: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Run it.".into(), ..Default::default() })
        .await
        .expect("chat");
    let request: wire::ApprovalRequest =
        server.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await.parse();
    server
        .call::<_, wire::EmptyResult>(
            wire::method::APPROVAL,
            &serde_json::json!({"turnId": turn.turn_id, "callId": request.call_id, "decision": "approve"}),
        )
        .await
        .expect("approve");
    server.next_notification(wire::method::TOOL_RESULT, TIMEOUT).await.parse()
}

/// A descriptor the server was started with (here one opened without
/// close-on-exec, as a parent's pipe or a build tool's jobserver can be)
/// never reaches an approved command.
#[tokio::test(flavor = "multi_thread")]
async fn a_descriptor_the_server_was_started_with_never_reaches_a_command() {
    // SAFETY: opens /dev/null without O_CLOEXEC so every child of this test inherits it.
    let stray = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) };
    assert!(stray > 2, "a stray descriptor to inherit");
    // Asked of the command's own shell, without a pipeline or a glob (either
    // would open descriptors of its own while it looks).
    let result = run_approved(&format!("test -e /proc/$$/fd/{stray} && echo inherited || echo clean")).await;
    // SAFETY: closes the descriptor opened above.
    unsafe { libc::close(stray) };
    assert_eq!(result.status, wire::ToolStatus::Success, "{}", result.output);
    assert_eq!(result.output.trim(), "clean", "descriptor {stray} of the test reached the command");
}

/// The supervisor goes by its own process name, so `pkill mino-server` or
/// `killall mino-server` stops the server but not the supervisors that must
/// then stop its commands.
#[tokio::test(flavor = "multi_thread")]
async fn the_supervisor_has_a_process_name_of_its_own() {
    let result = run_approved("cat /proc/$PPID/comm").await;
    assert_eq!(result.output.trim(), "mino-supervise", "the command's parent is named");
}
