//! Forks end to end (`mino/sessions/fork`): the real server over stdio, the
//! model mocked at the HTTP wire. A fork holds the old session's history up
//! to and including one turn, leaves the old session's bytes as they were,
//! can rewind its own edits, sends the model only its own history, carries
//! an unacknowledged `unknown` with its gate, refuses what it cannot copy
//! and, killed at any step, leaves no fork or a complete one.
//!
//! The crash tests need a server built with `--features failpoints` and are
//! skipped without one (see `mino_e2e::failpoints_server_bin`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mino_e2e::{
    chat, end_of, failpoints_server_bin, journal_records, open, options_in, session_files, wire, work_dir, MockModel,
    Reply, RpcError, Server, Spawn, KILL_SERVER, TIMEOUT,
};
use serde_json::{json, Value};

const LIST: &str = "bread\nbutter\njam\n";
const EDITED: &str = "bread\nbutter\nmilk\njam\n";
const TODO: &str = "call the plumber\n";
const TODO_EDITED: &str = "call the plumber\nwater the plants\n";

fn add_milk(call_id: &str) -> Reply {
    Reply::edit_file(call_id, "shopping.txt", "butter\n", "butter\nmilk\n", false)
}

fn add_plants(call_id: &str) -> Reply {
    Reply::edit_file(call_id, "todo.txt", "plumber\n", "plumber\nwater the plants\n", false)
}

fn write_files(cwd: &Path) {
    std::fs::write(cwd.join("shopping.txt"), LIST).expect("write the list");
    std::fs::write(cwd.join("todo.txt"), TODO).expect("write the todo list");
}

async fn started(mock: &MockModel) -> (Server, PathBuf) {
    let mut server = Server::spawn(mock).await;
    let cwd = work_dir(server.home());
    write_files(&cwd);
    open(&mut server, &cwd).await;
    (server, cwd)
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Asks `text` and approves every call of the turn until it ends.
async fn approved_turn(server: &mut Server, text: &str) -> String {
    let turn = chat(server, text).await;
    loop {
        let note = server.next_notification_of(&turn, TIMEOUT).await;
        if note.method == wire::method::APPROVAL_REQUEST {
            let request: wire::ApprovalRequest = note.parse();
            server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
        } else if note.method == wire::method::TURN_ENDED {
            let ended: wire::TurnEnded = note.parse();
            assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}");
            return turn;
        }
    }
}

async fn current_id(server: &mut Server) -> String {
    let list: wire::SessionsListResult =
        server.call(wire::method::SESSIONS_LIST, &json!({})).await.expect("mino/sessions/list");
    list.sessions.into_iter().find(|s| s.current).expect("a current session").session_id
}

async fn fork(server: &mut Server, session_id: &str, turn_id: &str) -> Result<wire::SessionsForkResult, RpcError> {
    server
        .call(
            wire::method::SESSIONS_FORK,
            &wire::SessionsForkParams { session_id: session_id.into(), turn_id: turn_id.into() },
        )
        .await
}

async fn open_session(server: &mut Server, session_id: &str) {
    let _: wire::SessionInfo = server
        .call(wire::method::SESSIONS_OPEN, &wire::SessionsOpenParams { session_id: session_id.into() })
        .await
        .expect("mino/sessions/open");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
}

async fn history(server: &mut Server) -> wire::HistoryResult {
    serde_json::from_value(server.request(wire::method::HISTORY, json!({})).await.expect("history")).expect("history")
}

/// Every file of a session (journal, lock, store of before-content, images,
/// evidence) with its bytes: what "untouched" is checked against.
fn session_bytes(home: &Path, id: &str) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let sessions = home.join("sessions");
    for entry in std::fs::read_dir(&sessions).expect("sessions").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(id) {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).expect("dir").flatten() {
                files.insert(inner.path(), std::fs::read(inner.path()).expect("read"));
            }
        } else {
            files.insert(path.clone(), std::fs::read(&path).expect("read"));
        }
    }
    files
}

fn user_texts(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "user")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_string))
        .collect()
}

fn kinds(journal: &Path) -> Vec<String> {
    journal_records(journal).iter().map(|r| r["kind"].as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_of_the_last_turn_holds_its_history_and_the_old_session_keeps_every_byte() {
    let mock = MockModel::start(vec![add_milk("call_1"), Reply::text("Milk is on the list."), Reply::text("Yes.")])
        .await
        .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let first = approved_turn(&mut server, "Add milk after butter.").await;
    let second = chat(&mut server, "Is it there?").await;
    end_of(&mut server, &second).await;
    let old = current_id(&mut server).await;
    let before = session_bytes(server.home(), &old);

    let forked = fork(&mut server, &old, &second).await.expect("mino/sessions/fork");
    assert_ne!(forked.session_id, old);
    assert_eq!(forked.forked_from, wire::ForkedFrom { session_id: old.clone(), turn_id: Some(second.clone()) });
    assert_eq!(forked.turns, 2);
    assert_eq!(forked.title.as_deref(), Some("Add milk after butter."));
    assert_eq!(session_bytes(server.home(), &old), before, "the old session's files are unchanged");
    // Forking is not switching: the old session is still current.
    assert_eq!(current_id(&mut server).await, old);

    // The fork's first record says where it came from; then the old records.
    let records = journal_records(Path::new(&forked.journal_path));
    assert_eq!(records[0]["kind"], "session");
    assert_eq!(records[0]["session_id"], forked.session_id.as_str());
    assert_eq!(records[0]["forked_from"], json!({"session_id": old, "turn_id": second}));
    let old_kinds =
        kinds(&session_files(server.home()).into_iter().find(|p| p.ends_with(format!("{old}.jsonl"))).expect("old"));
    assert_eq!(kinds(Path::new(&forked.journal_path)), old_kinds);
    let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().expect("seq")).collect();
    assert_eq!(seqs, (1..=records.len() as u64).collect::<Vec<_>>());

    open_session(&mut server, &forked.session_id).await;
    let turns = history(&mut server).await.turns;
    let ids: Vec<&str> = turns.iter().map(|t| t.turn_id.as_str()).collect();
    assert_eq!(ids, [first.as_str(), second.as_str()]);
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(EDITED), "a fork writes no file of the workspace");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_from_the_middle_sends_the_model_only_its_history_and_can_rewind_its_edit() {
    let mock = MockModel::start(vec![
        add_milk("call_1"),
        Reply::text("Milk added."),
        add_plants("call_1"),
        Reply::text("Plants added."),
        Reply::text("The list has milk."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let first = approved_turn(&mut server, "Add milk after butter.").await;
    let _second = approved_turn(&mut server, "Add watering the plants.").await;
    let old = current_id(&mut server).await;
    let before = session_bytes(server.home(), &old);

    let forked = fork(&mut server, &old, &first).await.expect("fork");
    assert_eq!(forked.turns, 1);
    open_session(&mut server, &forked.session_id).await;
    let turns = history(&mut server).await.turns;
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].turn_id, first);

    // Chat in the fork: the model gets turn 1 and the new question, never turn 2.
    let next = chat(&mut server, "What is on the list?").await;
    assert_eq!(next, "turn-2", "the fork's next turn follows its last one");
    end_of(&mut server, &next).await;
    let texts = user_texts(&mock.requests().pop().expect("a request").body);
    assert_eq!(texts, ["Add milk after butter.", "What is on the list?"]);

    // A rewind in the fork finds the before-content the fork linked.
    let plan: wire::RewindPlanResult =
        server.call(wire::method::REWIND_PLAN, &wire::RewindPlanParams { turn_id: first.clone() }).await.expect("plan");
    assert_eq!(plan.files.len(), 1, "{plan:?}");
    assert!(plan.conflicts.iter().all(|c| !c.path.ends_with("shopping.txt")), "{plan:?}");
    let done: wire::RewindResult = server
        .call(wire::method::REWIND, &wire::RewindParams { turn_id: first.clone(), digest: plan.digest })
        .await
        .expect("rewind");
    assert_eq!(done.files[0].outcome, wire::RewindOutcome::Restored);
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(LIST));
    assert_eq!(read(&cwd.join("todo.txt")).as_deref(), Some(TODO_EDITED), "turn 2's edit is not the fork's");
    assert_eq!(session_bytes(server.home(), &old), before, "the old session's files are unchanged");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unacknowledged_unknown_result_gates_chat_in_the_fork_too() {
    let mock =
        MockModel::start(vec![Reply::call("call_1", KILL_SERVER), Reply::text("Hello again.")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let home = server.keep_home().expect("home");
    let cwd = work_dir(server.home());
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Run it.").await;
    let request = mino_e2e::next_approval_request(&mut server).await;
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.ok();
    server.wait(TIMEOUT).await;

    let mut server = Server::spawn_in(home.path(), &mock).await;
    let recovery = open(&mut server, &cwd).await;
    assert!(recovery.acknowledgement_required, "{recovery:?}");
    let old = current_id(&mut server).await;
    let forked = fork(&mut server, &old, &turn).await.expect("fork");
    open_session(&mut server, &forked.session_id).await;
    let refused = server.request(wire::method::CHAT, json!({"text": "Go on."})).await.expect_err("gated");
    assert_eq!(refused.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    // Acknowledged in the fork, the fork goes on; the old session still waits.
    server.request(wire::method::ACKNOWLEDGE, Value::Null).await.expect("acknowledge");
    let next = chat(&mut server, "Go on.").await;
    end_of(&mut server, &next).await;
    let old_journal = home.path().join("sessions").join(format!("{old}.jsonl"));
    assert!(!kinds(&old_journal).iter().any(|k| k == "recovery_ack"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_is_refused_by_name_for_a_turn_that_is_missing_running_or_rewound_and_a_session_held_elsewhere() {
    let mock = MockModel::start(vec![
        add_milk("call_1"),
        Reply::text("Added."),
        Reply::call("call_1", "echo waiting"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let (mut server, _cwd) = started(&mock).await;
    let first = approved_turn(&mut server, "Add milk.").await;
    let old = current_id(&mut server).await;
    let sessions_before = session_files(server.home()).len();

    let missing = fork(&mut server, &old, "turn-9").await.expect_err("no such turn");
    assert_eq!(missing.code, wire::error_code::UNKNOWN_TURN, "{missing:?}");
    assert!(missing.message.contains("turn-9"), "{missing:?}");
    let nowhere = fork(&mut server, "20200101T000000-000000", &first).await.expect_err("no such session");
    assert_eq!(nowhere.code, wire::error_code::SESSION_UNAVAILABLE, "{nowhere:?}");

    // A turn waiting for approval is running.
    let running = chat(&mut server, "Say you are waiting.").await;
    let _ = mino_e2e::next_approval_request(&mut server).await;
    let busy = fork(&mut server, &old, &running).await.expect_err("a running turn");
    assert_eq!(busy.code, wire::error_code::TURN_IN_PROGRESS, "{busy:?}");
    // An ended turn forks even while a later one runs.
    let early = fork(&mut server, &old, &first).await.expect("an ended turn while a later one runs");
    assert_eq!(early.turns, 1);
    server.approval(&running, "call_1", wire::Decision::Deny).await.expect("deny");
    end_of(&mut server, &running).await;

    // Another process holds the session: refused, nothing copied.
    let mut other = Server::spawn_in(server.home(), &mock).await;
    other
        .initialize(&wire::InitializationOptions { new_session: true, ..options_in(&work_dir(server.home())) })
        .await
        .expect("initialize");
    let held = fork(&mut other, &old, &first).await.expect_err("held by the first server");
    assert_eq!(held.code, wire::error_code::SESSION_UNAVAILABLE, "{held:?}");
    assert!(held.message.contains("another Mino process"), "{held:?}");
    other.kill().await;

    // A rewound turn is refused: its history is not the files' state.
    let plan: wire::RewindPlanResult =
        server.call(wire::method::REWIND_PLAN, &wire::RewindPlanParams { turn_id: first.clone() }).await.expect("plan");
    let _: wire::RewindResult = server
        .call(wire::method::REWIND, &wire::RewindParams { turn_id: first.clone(), digest: plan.digest })
        .await
        .expect("rewind");
    let rewound = fork(&mut server, &old, &first).await.expect_err("a rewound turn");
    assert_eq!(rewound.code, -32602, "{rewound:?}");
    assert!(rewound.message.contains("was rewound"), "{rewound:?}");
    // The refusals left no session behind: only the one fork made above.
    assert_eq!(session_files(server.home()).len(), sessions_before + 2, "the other server's and the early fork");
}

#[tokio::test(flavor = "multi_thread")]
async fn smaller_rewind_bounds_from_the_environment_are_honoured() {
    let mock = MockModel::start(vec![add_milk("call_1"), Reply::text("Added.")]).await.expect("mock");
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    write_files(&cwd);
    let spawn = |env: Vec<(String, String)>| Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        env,
        ..Default::default()
    };
    // 8 bytes a file: shopping.txt (17 bytes) is edited, its content not kept.
    let mut server = Server::spawn_with(spawn(vec![("MINO_REWIND_FILE_LIMIT_BYTES".into(), "8".into())])).await;
    open(&mut server, &cwd).await;
    let turn = approved_turn(&mut server, "Add milk.").await;
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(EDITED));
    let plan: wire::RewindPlanResult =
        server.call(wire::method::REWIND_PLAN, &wire::RewindPlanParams { turn_id: turn.clone() }).await.expect("plan");
    assert!(plan.files.is_empty(), "{plan:?}");
    assert_eq!(plan.conflicts[0].why, "before-content not kept: larger than 8 bytes (17 bytes)");
    server.kill().await;

    // With the default bound the content is kept; a session bound below it refuses the fork.
    let mock2 = MockModel::start(vec![add_milk("call_1"), Reply::text("Added.")]).await.expect("mock");
    let mut server = Server::spawn(&mock2).await;
    let cwd2 = work_dir(server.home());
    write_files(&cwd2);
    open(&mut server, &cwd2).await;
    let turn2 = approved_turn(&mut server, "Add milk.").await;
    let id2 = current_id(&mut server).await;
    let home2 = server.keep_home().expect("home");
    server.kill().await;
    let mut server = Server::spawn_with(Spawn {
        home: Some(home2.path().to_path_buf()),
        base_url: Some(mock2.base_url()),
        env: vec![("MINO_REWIND_SESSION_LIMIT_BYTES".into(), "4".into())],
        ..Default::default()
    })
    .await;
    open(&mut server, &cwd2).await;
    let refused = fork(&mut server, &id2, &turn2).await.expect_err("too much to copy");
    assert_eq!(refused.code, -32602, "{refused:?}");
    assert!(
        refused.message.contains("MINO_REWIND_SESSION_LIMIT_BYTES") && refused.message.contains("17 bytes"),
        "{refused:?}"
    );

    // A bound that is not a number is named at start.
    let mut bad = Server::spawn_with(spawn(vec![("MINO_REWIND_SESSION_LIMIT_BYTES".into(), "lots".into())])).await;
    let err = bad.initialize(&options_in(&cwd)).await.expect_err("a bad bound");
    assert!(err.message.contains("MINO_REWIND_SESSION_LIMIT_BYTES") && err.message.contains("lots"), "{err:?}");
}

/// One turn with an edit, then a fork with `failpoint` set to panic (the
/// server aborts there); returns the home, the old session's id and its
/// files' bytes from before. `None` without a failpoints build.
async fn fork_crashing_at(
    failpoint: &str,
) -> Option<(tempfile::TempDir, String, BTreeMap<PathBuf, Vec<u8>>, MockModel)> {
    let Some(bin) = failpoints_server_bin() else {
        eprintln!("skipped: set MINO_E2E_FAILPOINTS=1 (or MINO_SERVER_FAILPOINTS_BIN) to run the failpoint tests");
        return None;
    };
    let mock =
        MockModel::start(vec![add_milk("call_1"), Reply::text("Added."), Reply::text("Yes.")]).await.expect("mock");
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    write_files(&cwd);
    let mut first = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: Some(bin),
        failpoints: Some(format!("{failpoint}=panic")),
        ..Default::default()
    })
    .await;
    open(&mut first, &cwd).await;
    let turn = approved_turn(&mut first, "Add milk.").await;
    let old = current_id(&mut first).await;
    let before = session_bytes(home.path(), &old);
    first
        .send_message(&json!({"jsonrpc": "2.0", "id": 1000, "method": wire::method::SESSIONS_FORK,
            "params": {"sessionId": old, "turnId": turn}}))
        .await;
    let status = first.wait(TIMEOUT).await;
    assert!(!status.success(), "the failpoint crashed the server: {status:?}");
    assert!(first.stderr().contains(failpoint), "the failpoint fired: {}", first.stderr());
    Some((home, old, before, mock))
}

/// After a crash before the fork's journal had its name: no new session,
/// the old one as it was and still opening.
async fn assert_no_fork(failpoint: &str) {
    let Some((home, old, before, mock)) = fork_crashing_at(failpoint).await else { return };
    // The lock file is the old session's own and may be recreated; compare the rest.
    let without_lock = |m: BTreeMap<PathBuf, Vec<u8>>| -> BTreeMap<PathBuf, Vec<u8>> {
        m.into_iter().filter(|(p, _)| p.extension().is_none_or(|e| e != "lock")).collect()
    };
    assert_eq!(without_lock(session_bytes(home.path(), &old)), without_lock(before));
    let sessions = session_files(home.path());
    assert_eq!(sessions.len(), 1, "no fork: {sessions:?}");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    let recovery = open(&mut server, &work_dir(home.path())).await;
    assert!(recovery.turns.is_empty() && !recovery.acknowledgement_required, "{recovery:?}");
    let list: wire::SessionsListResult =
        server.call(wire::method::SESSIONS_LIST, &json!({"scope": "all"})).await.expect("list");
    assert_eq!(list.sessions.len(), 1, "{:?}", list.sessions);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_side_files_leaves_no_fork() {
    assert_no_fork("fork::after_side_files").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_journal_was_synced_but_not_named_leaves_no_fork() {
    assert_no_fork("fork::after_journal_sync").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_fork_was_named_leaves_a_complete_fork() {
    let Some((home, old, before, mock)) = fork_crashing_at("fork::after_link").await else { return };
    let without_lock = |m: BTreeMap<PathBuf, Vec<u8>>| -> BTreeMap<PathBuf, Vec<u8>> {
        m.into_iter().filter(|(p, _)| p.extension().is_none_or(|e| e != "lock")).collect()
    };
    assert_eq!(without_lock(session_bytes(home.path(), &old)), without_lock(before));
    let sessions = session_files(home.path());
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let fork_path = sessions.iter().find(|p| !p.ends_with(format!("{old}.jsonl"))).expect("the fork").clone();
    let fork_id = fork_path.file_stem().and_then(|s| s.to_str()).expect("id").to_string();
    let mut server = Server::spawn_in(home.path(), &mock).await;
    server
        .initialize(&wire::InitializationOptions {
            session: Some(fork_id.clone()),
            ..options_in(&work_dir(home.path()))
        })
        .await
        .expect("open the fork");
    let recovery: wire::RecoveryNotification = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert!(recovery.turns.is_empty() && !recovery.acknowledgement_required, "{recovery:?}");
    let turns = history(&mut server).await.turns;
    assert_eq!(turns.len(), 1);
    // Its rewind finds the linked before-content.
    let plan: wire::RewindPlanResult = server
        .call(wire::method::REWIND_PLAN, &wire::RewindPlanParams { turn_id: turns[0].turn_id.clone() })
        .await
        .expect("plan");
    assert_eq!(plan.files.len(), 1, "{plan:?}");
}
