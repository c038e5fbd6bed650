//! Many sessions over the wire: each server gets its own session per
//! workspace (never another workspace's, never an error for a second window),
//! `mino/sessions/list` shows what a person needs to choose, and switching
//! with `mino/sessions/new`/`open` moves everything to the new session: its
//! recovery and gate, its directory, the `sessionId` of every notification,
//! and what a crash afterwards recovers.

use std::path::{Path, PathBuf};

use mino_e2e::{
    chat, end_of, next_approval_request, open, options_in, wire, MockModel, Notification, Reply, Server, KILL_SERVER,
    TIMEOUT,
};
use serde_json::json;

/// A workspace directory named `name` inside `home` (kept with it).
fn workspace(home: &Path, name: &str) -> PathBuf {
    let dir = home.join(name);
    std::fs::create_dir_all(&dir).expect("workspace dir");
    dir.canonicalize().expect("canonical workspace")
}

async fn list(server: &mut Server, scope: Option<wire::ListScope>) -> Vec<wire::SessionEntry> {
    let params = wire::SessionsListParams { scope, ..Default::default() };
    let page: wire::SessionsListResult = server.call(wire::method::SESSIONS_LIST, &params).await.expect("list");
    page.sessions
}

fn entry<'a>(sessions: &'a [wire::SessionEntry], id: &str) -> &'a wire::SessionEntry {
    sessions.iter().find(|s| s.session_id == id).unwrap_or_else(|| panic!("{id} not listed in {sessions:?}"))
}

fn ids(sessions: &[wire::SessionEntry]) -> Vec<&str> {
    sessions.iter().map(|s| s.session_id.as_str()).collect()
}

async fn initialize(server: &mut Server, options: &wire::InitializationOptions) -> wire::ServerCapabilities {
    Server::capabilities(&server.initialize(options).await.expect("initialize"))
}

async fn open_session(server: &mut Server, id: &str) -> Result<wire::SessionInfo, mino_e2e::RpcError> {
    server.call(wire::method::SESSIONS_OPEN, &wire::SessionsOpenParams { session_id: id.into() }).await
}

async fn new_session(server: &mut Server, cwd: Option<&Path>) -> Result<wire::SessionInfo, mino_e2e::RpcError> {
    let params = wire::SessionsNewParams { cwd: cwd.map(|c| c.display().to_string()) };
    server.call(wire::method::SESSIONS_NEW, &params).await
}

/// Runs a command that kills the server after its `tool_start` is synced
/// and before its result is saved: the session is left with a started call
/// and no result, as a real crash mid-command leaves it.
async fn crash_during_command(server: &mut Server, question: &str, command: &str) -> String {
    let turn_id = chat(server, question).await;
    let request = next_approval_request(server).await;
    assert_eq!(request.command, command);
    // The server dies before it answers: do not wait for the response.
    server
        .send_message(&json!({"jsonrpc": "2.0", "id": 9000, "method": wire::method::APPROVAL,
            "params": {"turnId": turn_id, "callId": request.call_id, "decision": "approve"}}))
        .await;
    let status = server.wait(TIMEOUT).await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "the command killed the server: {status:?}");
    turn_id
}

fn session_ids_of(notes: &[Notification]) -> Vec<Option<&str>> {
    notes.iter().map(|n| n.params.get("sessionId").and_then(|v| v.as_str())).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_in_two_workspaces_each_get_their_own_and_list_only_theirs() {
    let mock = MockModel::start(vec![Reply::text("A."), Reply::text("B.")]).await.expect("mock");
    let mut a = Server::spawn(&mock).await;
    let home = a.home().to_path_buf();
    let (dir_a, dir_b) = (workspace(&home, "shop"), workspace(&home, "garden"));
    let mut b = Server::spawn_in(&home, &mock).await;
    let caps_a = initialize(&mut a, &options_in(&dir_a)).await;
    let caps_b = initialize(&mut b, &options_in(&dir_b)).await;
    assert_ne!(caps_a.session_id, caps_b.session_id);
    assert_eq!(caps_a.title, None, "no question yet");
    assert_eq!(caps_a.cwd, dir_a.display().to_string());
    assert_eq!(caps_b.cwd, dir_b.display().to_string());
    let turn = chat(&mut a, "  Sort the shopping list  \nand remove duplicates").await;
    end_of(&mut a, &turn).await;
    let turn = chat(&mut b, "Water the roses").await;
    end_of(&mut b, &turn).await;

    let mine = list(&mut a, None).await;
    assert_eq!(ids(&mine), [caps_a.session_id.as_str()], "only this workspace's session");
    let own = &mine[0];
    assert!(own.current && !own.held_elsewhere && !own.acknowledgement_required, "{own:?}");
    assert_eq!(own.title.as_deref(), Some("Sort the shopping list"), "the first question's first line, trimmed");
    assert_eq!((own.turns, own.cwd.as_str()), (1, caps_a.cwd.as_str()));
    let theirs = list(&mut b, Some(wire::ListScope::Workspace)).await;
    assert_eq!(ids(&theirs), [caps_b.session_id.as_str()]);

    let all = list(&mut a, Some(wire::ListScope::All)).await;
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0].session_id, caps_b.session_id, "newest (last active) first");
    let other = entry(&all, &caps_b.session_id);
    assert!(other.held_elsewhere && !other.current, "{other:?}");
    assert_eq!(other.title.as_deref(), Some("Water the roses"));
    assert!(entry(&all, &caps_a.session_id).current);

    // A session another server holds cannot be opened or trashed here.
    let err = open_session(&mut a, &caps_b.session_id).await.expect_err("held elsewhere");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains(&caps_b.session_id), "names the session: {}", err.message);
    let delete = wire::SessionsDeleteParams { session_id: caps_b.session_id.clone() };
    let err = a.call::<_, wire::SessionsDeleteResult>(wire::method::SESSIONS_DELETE, &delete).await.expect_err("held");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains("open in another Mino process"), "{}", err.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_in_one_workspace_each_get_a_session_of_their_own() {
    let mock = MockModel::start(vec![Reply::text("one"), Reply::text("two")]).await.expect("mock");
    let mut first = Server::spawn(&mock).await;
    let home = first.home().to_path_buf();
    let dir = workspace(&home, "shop");
    let one = initialize(&mut first, &options_in(&dir)).await;
    let turn = chat(&mut first, "first window").await;
    end_of(&mut first, &turn).await;

    let mut second = Server::spawn_in(&home, &mock).await;
    let two = initialize(&mut second, &options_in(&dir)).await;
    assert_ne!(two.session_id, one.session_id, "a session of its own, never -32015");
    let recovery: wire::RecoveryNotification = second.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert_eq!(recovery.session_id, two.session_id);
    let turn = chat(&mut second, "second window").await;
    assert_eq!(end_of(&mut second, &turn).await.session_id, two.session_id);

    let seen = list(&mut second, None).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(entry(&seen, &one.session_id).held_elsewhere);
    assert!(entry(&seen, &two.session_id).current);
    let seen = list(&mut first, None).await;
    assert!(entry(&seen, &two.session_id).held_elsewhere);
    assert!(!entry(&seen, &one.session_id).held_elsewhere);
}

#[tokio::test(flavor = "multi_thread")]
async fn opening_a_session_with_an_unknown_result_gates_chat_until_it_is_acknowledged() {
    let milk = format!("echo milk >> shopping.txt; {KILL_SERVER}");
    let mock = MockModel::start(vec![Reply::call("call_1", &milk)]).await.expect("mock");
    let mut first = Server::spawn(&mock).await;
    let _home = first.keep_home();
    let home = first.home().to_path_buf();
    let dir = workspace(&home, "shop");
    let crashed = initialize(&mut first, &options_in(&dir)).await;
    let crashed_turn = crash_during_command(&mut first, "Add milk to shopping.txt.", &milk).await;

    // A new session in the same workspace, then the crashed one from the list.
    let mut second = Server::spawn_in(&home, &mock).await;
    let fresh = initialize(&mut second, &wire::InitializationOptions { new_session: true, ..options_in(&dir) }).await;
    let clean: wire::RecoveryNotification = second.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert_eq!(clean.session_id, fresh.session_id);
    let seen = list(&mut second, None).await;
    let listed = entry(&seen, &crashed.session_id);
    assert!(listed.acknowledgement_required, "a started call without a result waits: {listed:?}");
    assert!(!listed.held_elsewhere && !listed.current, "{listed:?}");
    assert_eq!((listed.turns, listed.title.as_deref()), (1, Some("Add milk to shopping.txt.")));

    let info = open_session(&mut second, &crashed.session_id).await.expect("open");
    assert_eq!(info.session_id, crashed.session_id);
    assert_eq!(info.journal_path, crashed.journal_path);
    assert_eq!(info.title.as_deref(), Some("Add milk to shopping.txt."));
    let recovery: wire::RecoveryNotification = second.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert_eq!(recovery.session_id, crashed.session_id);
    assert!(recovery.acknowledgement_required);
    assert_eq!(recovery.unacknowledged_turn_ids, std::slice::from_ref(&crashed_turn));
    assert_eq!(recovery.turns[0].calls[0].result.status, wire::ToolStatus::Unknown);
    assert_eq!(recovery.turns[0].calls[0].command, milk);

    // The gate applies as on startup, and history is the opened session's.
    let err = second
        .call::<_, wire::ChatResult>(
            wire::method::CHAT,
            &wire::ChatParams { text: "go on".into(), ..Default::default() },
        )
        .await
        .expect_err("gated");
    assert_eq!(err.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    assert_eq!(err.message, wire::ACKNOWLEDGEMENT_REQUIRED_MESSAGE);
    let history: wire::HistoryResult = second.call(wire::method::HISTORY, &json!({})).await.expect("history");
    assert_eq!(history.session_id, crashed.session_id);
    assert_eq!(history.turns.len(), 1);
    let acknowledged: wire::AcknowledgeResult =
        second.call(wire::method::ACKNOWLEDGE, &json!({})).await.expect("acknowledge");
    assert_eq!(acknowledged.acknowledged, [crashed_turn]);

    // The old session was released: another server can now open it.
    let mut third = Server::spawn_in(&home, &mock).await;
    let options = wire::InitializationOptions { session: Some(fresh.session_id.clone()), ..options_in(&dir) };
    assert_eq!(initialize(&mut third, &options).await.session_id, fresh.session_id, "released after the switch");

    // Every notification of a turn after the switch names the opened session.
    mock.push(Reply::call("call_2", "cat shopping.txt"));
    mock.push(Reply::text("Milk is on the list."));
    let turn = chat(&mut second, "Is milk on the list?").await;
    let request = next_approval_request(&mut second).await;
    assert_eq!(request.session_id, crashed.session_id);
    assert_eq!(request.directory, dir.display().to_string(), "commands run in the session's directory");
    second.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    let notes = second.turn_notifications(&turn, TIMEOUT).await;
    let methods: Vec<&str> = notes.iter().map(|n| n.method.as_str()).collect();
    assert!(methods.contains(&wire::method::TOOL_OUTPUT) && methods.contains(&wire::method::TEXT_DELTA), "{methods:?}");
    assert!(
        session_ids_of(&notes).iter().all(|id| *id == Some(crashed.session_id.as_str())),
        "{:?}",
        session_ids_of(&notes)
    );
    let all = second.notification_log();
    let turn_notes: Vec<&Notification> = all.iter().filter(|n| n.turn_id().is_some()).collect();
    assert!(
        turn_notes.iter().all(|n| n.params.get("sessionId").is_some()),
        "every turn notification names its session"
    );
    let end: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(end.status, wire::TurnStatus::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_switch_is_refused_while_a_turn_runs() {
    let mock =
        MockModel::start(vec![Reply::call("call_1", "echo hi"), Reply::text("Not run, then.")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let home = server.home().to_path_buf();
    let dir = workspace(&home, "shop");
    let caps = initialize(&mut server, &options_in(&dir)).await;
    let mut other = Server::spawn_in(&home, &mock).await;
    let elsewhere =
        initialize(&mut other, &wire::InitializationOptions { new_session: true, ..options_in(&dir) }).await;
    other.close_stdin();
    assert!(other.wait(TIMEOUT).await.success());

    let turn = chat(&mut server, "Say hi.").await;
    let request = next_approval_request(&mut server).await;
    let err = new_session(&mut server, None).await.expect_err("a turn runs");
    assert_eq!(err.code, wire::error_code::TURN_IN_PROGRESS, "{err}");
    assert_eq!(err.data, Some(json!({"turnId": turn})));
    let err = open_session(&mut server, &elsewhere.session_id).await.expect_err("a turn runs");
    assert_eq!(err.code, wire::error_code::TURN_IN_PROGRESS, "{err}");

    // Nothing changed: the turn goes on in its session.
    server.approval(&turn, &request.call_id, wire::Decision::Deny).await.expect("deny");
    let end = end_of(&mut server, &turn).await;
    assert_eq!(end.session_id, caps.session_id);
    let current: Vec<_> = list(&mut server, None).await.into_iter().filter(|s| s.current).collect();
    assert_eq!(ids(&current), [caps.session_id.as_str()]);
    let opened = open_session(&mut server, &elsewhere.session_id).await.expect("no turn runs now");
    assert_eq!(opened.session_id, elsewhere.session_id);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_a_switch_recovers_the_switched_to_session() {
    let mock = MockModel::start(vec![Reply::text("first")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let _home = server.keep_home();
    let home = server.home().to_path_buf();
    let (shop, garden) = (workspace(&home, "shop"), workspace(&home, "garden"));
    let first = initialize(&mut server, &options_in(&shop)).await;
    let turn = chat(&mut server, "hello").await;
    let before = end_of(&mut server, &turn).await;
    assert_eq!(before.session_id, first.session_id);

    let switched = new_session(&mut server, Some(&garden)).await.expect("new");
    assert_ne!(switched.session_id, first.session_id);
    assert_eq!(switched.cwd, garden.display().to_string());
    assert_eq!(switched.title, None);
    let recovery: wire::RecoveryNotification = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert_eq!(recovery.session_id, switched.session_id);
    assert!(recovery.turns.is_empty() && !recovery.acknowledgement_required);

    let seed = format!("echo seed >> beds.txt; {KILL_SERVER}");
    mock.push(Reply::call("call_1", &seed));
    let turn_id = chat(&mut server, "Plant the seeds.").await;
    let started: wire::TurnStarted = server.next_notification(wire::method::TURN_STARTED, TIMEOUT).await.parse();
    assert_eq!((started.session_id.as_str(), started.turn_id.as_str()), (switched.session_id.as_str(), "turn-1"));
    assert_eq!(started.seq, before.seq + 1, "seq counts on by one across the switch");
    let request = next_approval_request(&mut server).await;
    assert_eq!(request.session_id, switched.session_id);
    assert_eq!(request.directory, garden.display().to_string(), "the new session's directory");
    server
        .send_message(&json!({"jsonrpc": "2.0", "id": 9000, "method": wire::method::APPROVAL,
            "params": {"turnId": turn_id, "callId": request.call_id, "decision": "approve"}}))
        .await;
    let status = server.wait(TIMEOUT).await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert_eq!(std::fs::read_to_string(garden.join("beds.txt")).expect("ran in garden"), "seed\n");
    assert!(!shop.join("beds.txt").exists());

    // Restarted in the switched-to session's workspace: its recovery.
    let mut again = Server::spawn_in(&home, &mock).await;
    let reopened = open(&mut again, &garden).await;
    assert_eq!(reopened.session_id, switched.session_id);
    assert!(reopened.acknowledgement_required);
    assert_eq!(reopened.unacknowledged_turn_ids, [turn_id]);
    assert_eq!(reopened.turns[0].calls[0].result.status, wire::ToolStatus::Unknown);
    // And the first workspace's session is untouched by it.
    let mut shop_server = Server::spawn_in(&home, &mock).await;
    let shop_recovery = open(&mut shop_server, &shop).await;
    assert_eq!(shop_recovery.session_id, first.session_id);
    assert!(shop_recovery.turns.is_empty() && !shop_recovery.acknowledgement_required);
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_renamed_and_trashed_but_never_the_current_one() {
    let mock = MockModel::start(vec![Reply::text("ok")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let home = server.home().to_path_buf();
    let dir = workspace(&home, "shop");
    let first = initialize(&mut server, &options_in(&dir)).await;
    let turn = chat(&mut server, "Make a list").await;
    end_of(&mut server, &turn).await;

    let rename = |id: &str, title: &str| wire::SessionsRenameParams { session_id: id.into(), title: title.into() };
    let _: wire::EmptyResult =
        server.call(wire::method::SESSIONS_RENAME, &rename(&first.session_id, "  Groceries  ")).await.expect("rename");
    assert_eq!(list(&mut server, None).await[0].title.as_deref(), Some("Groceries"), "trimmed, and shown");
    for bad in ["   ", &"x".repeat(201), "two\nlines"] {
        let err = server
            .call::<_, wire::EmptyResult>(wire::method::SESSIONS_RENAME, &rename(&first.session_id, bad))
            .await
            .expect_err("invalid title");
        assert_eq!(err.code, -32602, "{bad:?}: {err}");
    }
    let err = server
        .call::<_, wire::EmptyResult>(wire::method::SESSIONS_RENAME, &rename("20990101T000000-000000", "x"))
        .await
        .expect_err("no such session");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");

    let delete = |id: &str| wire::SessionsDeleteParams { session_id: id.into() };
    let err = server
        .call::<_, wire::SessionsDeleteResult>(wire::method::SESSIONS_DELETE, &delete(&first.session_id))
        .await
        .expect_err("current");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains("current session"), "{}", err.message);

    let second = new_session(&mut server, None).await.expect("new");
    let recovery: wire::RecoveryNotification = server.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert_eq!(recovery.session_id, second.session_id);
    let trashed: wire::SessionsDeleteResult =
        server.call(wire::method::SESSIONS_DELETE, &delete(&first.session_id)).await.expect("delete");
    let trashed = PathBuf::from(trashed.trashed_to);
    assert!(trashed.starts_with(home.join("trash")), "{}", trashed.display());
    assert!(trashed.join(format!("{}.jsonl", first.session_id)).is_file(), "the journal is in the trash");
    assert!(!PathBuf::from(&first.journal_path).exists());
    assert_eq!(ids(&list(&mut server, Some(wire::ListScope::All)).await), [second.session_id.as_str()]);
    let err = open_session(&mut server, &first.session_id).await.expect_err("trashed");
    assert_eq!(err.code, wire::error_code::SESSION_UNAVAILABLE, "{err}");
    assert!(err.message.contains("mino/sessions/list"), "says what to do: {}", err.message);
}
