//! Rewinds end to end: the real server over stdio, the model mocked at the
//! HTTP wire scripting `edit_file` / `write_file` / `bash` calls. A rewind
//! puts back exactly what Mino's edits changed, leaves (and names) what
//! changed since, names the commands it cannot undo, and after a crash
//! claims only what the files' bytes show.
//!
//! The crash tests need a server built with `--features failpoints` and are
//! skipped without one (see `mino_e2e::failpoints_server_bin`).

use std::path::{Path, PathBuf};

use mino_e2e::{
    chat, failpoints_server_bin, journal_records, open, options_in, session_files, wire, work_dir, MockModel, Reply,
    RpcError, Server, Spawn, TIMEOUT,
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

/// A server on a fresh home working in `<home>/work`, which holds
/// `shopping.txt` ([`LIST`]) and `todo.txt` ([`TODO`]).
async fn started(mock: &MockModel) -> (Server, PathBuf) {
    let mut server = Server::spawn(mock).await;
    let cwd = work_dir(server.home());
    write_files(&cwd);
    let recovery = open(&mut server, &cwd).await;
    assert!(recovery.turns.is_empty());
    (server, cwd)
}

fn write_files(cwd: &Path) {
    std::fs::write(cwd.join("shopping.txt"), LIST).expect("write the list");
    std::fs::write(cwd.join("todo.txt"), TODO).expect("write the todo list");
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

async fn plan(server: &mut Server, turn_id: &str) -> wire::RewindPlanResult {
    server
        .call(wire::method::REWIND_PLAN, &wire::RewindPlanParams { turn_id: turn_id.into() })
        .await
        .expect("mino/rewind/plan")
}

async fn rewind(server: &mut Server, turn_id: &str, digest: &str) -> Result<wire::RewindResult, RpcError> {
    server.call(wire::method::REWIND, &wire::RewindParams { turn_id: turn_id.into(), digest: digest.into() }).await
}

fn real(cwd: &Path, name: &str) -> String {
    std::fs::canonicalize(cwd).expect("canonical").join(name).display().to_string()
}

fn kinds(home: &Path) -> Vec<String> {
    let journal = session_files(home).pop().expect("journal");
    journal_records(&journal).iter().map(|r| r["kind"].as_str().unwrap_or_default().to_string()).collect()
}

/// The text of every user message of a model request, in order.
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

fn call_ids(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call")
        .filter_map(|item| item["call_id"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn rewinding_one_turn_puts_the_file_back_and_the_model_hears_it_instead_of_the_turn() {
    let mock = MockModel::start(vec![
        add_milk("call_1"),
        Reply::text("Milk is on the list."),
        Reply::text("The list has bread, butter and jam."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn = approved_turn(&mut server, "Add milk after butter.").await;
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(EDITED));

    let shown = plan(&mut server, &turn).await;
    assert_eq!(shown.turns, std::slice::from_ref(&turn));
    assert_eq!(
        shown.files,
        [wire::RewindFile { path: real(&cwd, "shopping.txt"), action: wire::RewindAction::Restore }]
    );
    assert!(shown.conflicts.is_empty() && shown.commands.is_empty(), "{shown:?}");
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(EDITED), "a plan writes nothing");

    let done = rewind(&mut server, &turn, &shown.digest).await.expect("rewind");
    assert_eq!(done.files.len(), 1);
    assert_eq!(done.files[0].outcome, wire::RewindOutcome::Restored);
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(LIST));

    // History keeps the turn, marked; the plan record came before the end.
    let history: wire::HistoryResult =
        serde_json::from_value(server.request(wire::method::HISTORY, json!({})).await.expect("history")).expect("h");
    assert!(history.turns[0].rewound, "{:?}", history.turns[0]);
    let kinds = kinds(server.home());
    let (plan_at, end_at) = (
        kinds.iter().position(|k| k == "rewind").expect("a rewind record"),
        kinds.iter().position(|k| k == "rewind_end").expect("a rewind_end record"),
    );
    assert!(plan_at < end_at);

    // The next request leaves the rewound turn out and says what was undone.
    let next = chat(&mut server, "What is on the list?").await;
    mino_e2e::end_of(&mut server, &next).await;
    let last = mock.requests().pop().expect("a request").body;
    assert!(call_ids(&last).is_empty(), "the rewound call left the context: {last}");
    let texts = user_texts(&last);
    assert!(!texts.iter().any(|t| t == "Add milk after butter."), "{texts:?}");
    let notice = texts.iter().find(|t| t.starts_with("Mino runtime notice: the person rewound")).expect("notice");
    assert!(notice.contains(&real(&cwd, "shopping.txt")), "{notice}");
    assert_eq!(texts.last().map(String::as_str), Some("What is on the list?"));

    // Rewinding it again is refused, naming why.
    let again = server.request(wire::method::REWIND_PLAN, json!({"turnId": turn})).await;
    assert!(again.is_err_and(|e| e.message.contains("already rewound")));
}

#[tokio::test(flavor = "multi_thread")]
async fn rewinding_several_turns_removes_a_created_file_and_names_the_command_it_cannot_undo() {
    let mock = MockModel::start(vec![
        add_milk("call_1"),
        Reply::text("Added."),
        Reply::write_file("call_1", "notes.txt", "remember the milk\n"),
        Reply::call("call_2", "echo done > done.txt"),
        Reply::text("Noted."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let first = approved_turn(&mut server, "Add milk.").await;
    let second = approved_turn(&mut server, "Write a note and mark it done.").await;
    assert_eq!(read(&cwd.join("notes.txt")).as_deref(), Some("remember the milk\n"));
    assert!(cwd.join("done.txt").exists());

    let shown = plan(&mut server, &first).await;
    assert_eq!(shown.turns, [first.clone(), second.clone()]);
    // Newest change first.
    assert_eq!(
        shown.files,
        [
            wire::RewindFile { path: real(&cwd, "notes.txt"), action: wire::RewindAction::Remove },
            wire::RewindFile { path: real(&cwd, "shopping.txt"), action: wire::RewindAction::Restore },
        ]
    );
    assert_eq!(shown.commands.len(), 1);
    assert_eq!(shown.commands[0].command, "echo done > done.txt");
    assert_eq!(shown.commands[0].turn_id, second);

    let done = rewind(&mut server, &first, &shown.digest).await.expect("rewind");
    let outcomes: Vec<wire::RewindOutcome> = done.files.iter().map(|f| f.outcome).collect();
    assert_eq!(outcomes, [wire::RewindOutcome::Removed, wire::RewindOutcome::Restored]);
    assert!(!cwd.join("notes.txt").exists());
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(LIST));
    // What the command did stays, as the plan said.
    assert!(cwd.join("done.txt").exists());
    assert_eq!(done.commands, shown.commands);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_changed_after_mino_wrote_it_is_a_conflict_left_as_it_is() {
    let mock = MockModel::start(vec![
        add_milk("call_1"),
        Reply::write_file("call_2", "notes.txt", "remember the milk\n"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn = approved_turn(&mut server, "Add milk and write a note.").await;
    // The person edits both files after Mino.
    std::fs::write(cwd.join("shopping.txt"), "bread\nbutter\nmilk\njam\ntea\n").expect("edit");
    std::fs::write(cwd.join("notes.txt"), "remember the milk and the tea\n").expect("edit");

    let shown = plan(&mut server, &turn).await;
    assert!(shown.files.is_empty(), "{shown:?}");
    let paths: Vec<&str> = shown.conflicts.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, [real(&cwd, "notes.txt"), real(&cwd, "shopping.txt")]);
    assert!(shown.conflicts.iter().all(|c| c.why.starts_with("changed since Mino wrote it")), "{shown:?}");

    let done = rewind(&mut server, &turn, &shown.digest).await.expect("rewind");
    assert!(done.files.is_empty());
    assert_eq!(done.conflicts, shown.conflicts);
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some("bread\nbutter\nmilk\njam\ntea\n"));
    assert_eq!(read(&cwd.join("notes.txt")).as_deref(), Some("remember the milk and the tea\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn declining_writes_nothing_and_a_plan_that_changed_since_it_was_shown_is_refused() {
    let mock = MockModel::start(vec![add_milk("call_1"), Reply::text("Added.")]).await.expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let turn = approved_turn(&mut server, "Add milk.").await;
    let shown = plan(&mut server, &turn).await;
    // Declining is not calling mino/rewind: nothing changes, nothing is recorded.
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(EDITED));
    assert!(!kinds(server.home()).iter().any(|k| k.starts_with("rewind")));

    // The file changes after the plan was shown: that plan is refused.
    std::fs::write(cwd.join("shopping.txt"), "bread\ntea\n").expect("edit");
    let refused = rewind(&mut server, &turn, &shown.digest).await.expect_err("a stale plan is refused");
    assert_eq!(refused.code, wire::error_code::REWIND_PLAN_CHANGED, "{refused:?}");
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some("bread\ntea\n"));
    assert!(!kinds(server.home()).iter().any(|k| k.starts_with("rewind")));
    // The plan now says so.
    let now = plan(&mut server, &turn).await;
    assert_ne!(now.digest, shown.digest);
    assert_eq!(now.conflicts.len(), 1);
}

/// Two edits in one turn (shopping.txt, then todo.txt), then a rewind with
/// `failpoint` set to panic (the server aborts there); the session is
/// reopened by a clean server. `None` without a failpoints build.
async fn rewind_crashing_at(
    failpoint: &str,
    meanwhile: impl FnOnce(&Path),
) -> Option<(wire::RecoveryNotification, PathBuf, tempfile::TempDir)> {
    let Some(bin) = failpoints_server_bin() else {
        eprintln!("skipped: set MINO_E2E_FAILPOINTS=1 (or MINO_SERVER_FAILPOINTS_BIN) to run the failpoint tests");
        return None;
    };
    let mock = MockModel::start(vec![add_milk("call_1"), add_plants("call_2"), Reply::text("Both done.")])
        .await
        .expect("mock");
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
    first.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = first.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    let turn = approved_turn(&mut first, "Add milk and plants.").await;
    let shown = plan(&mut first, &turn).await;
    assert_eq!(shown.files.len(), 2, "{shown:?}");
    first
        .send_message(&json!({"jsonrpc": "2.0", "id": 1000, "method": wire::method::REWIND,
            "params": {"turnId": turn, "digest": shown.digest}}))
        .await;
    let status = first.wait(TIMEOUT).await;
    assert!(!status.success(), "the failpoint crashed the server: {status:?}");
    assert!(first.stderr().contains(failpoint), "the failpoint fired: {}", first.stderr());
    meanwhile(&cwd);

    let mut second = Server::spawn_in(home.path(), &mock).await;
    second.initialize(&options_in(&cwd)).await.expect("reopen");
    let recovery = second.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    Some((recovery, cwd, home))
}

/// Each recovered outcome agrees with the file's real bytes.
fn assert_claims_match_the_disk(rewind: &wire::RecoveredRewind, cwd: &Path) {
    for file in &rewind.files {
        let name = Path::new(&file.path).file_name().and_then(|n| n.to_str()).expect("name");
        let (before, after) = match name {
            "shopping.txt" => (LIST, EDITED),
            "todo.txt" => (TODO, TODO_EDITED),
            other => panic!("unexpected file {other}"),
        };
        let now = read(&cwd.join(name));
        match file.outcome {
            wire::RewindOutcome::Restored => assert_eq!(now.as_deref(), Some(before), "{file:?}"),
            wire::RewindOutcome::NotRestored => assert_eq!(now.as_deref(), Some(after), "{file:?}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_before_the_plan_record_leaves_every_file_and_claims_no_rewind() {
    let Some((recovery, cwd, home)) = rewind_crashing_at("rewind::before_plan_record", |_| {}).await else { return };
    assert!(recovery.rewind.is_none(), "{recovery:?}");
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some(EDITED));
    assert_eq!(read(&cwd.join("todo.txt")).as_deref(), Some(TODO_EDITED));
    assert!(!kinds(home.path()).iter().any(|k| k.starts_with("rewind")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_plan_record_is_recovered_as_nothing_restored() {
    let Some((recovery, cwd, home)) = rewind_crashing_at("rewind::after_plan_record", |_| {}).await else { return };
    let rewind = recovery.rewind.expect("the open rewind is reported");
    let outcomes: Vec<wire::RewindOutcome> = rewind.files.iter().map(|f| f.outcome).collect();
    assert_eq!(outcomes, [wire::RewindOutcome::NotRestored, wire::RewindOutcome::NotRestored]);
    assert_claims_match_the_disk(&rewind, &cwd);
    let kinds = kinds(home.path());
    assert_eq!(kinds.last().map(String::as_str), Some("rewind_end"), "recovery closed it: {kinds:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_between_two_files_is_recovered_from_their_hashes() {
    let Some((recovery, cwd, _home)) = rewind_crashing_at("rewind::between_files", |_| {}).await else { return };
    let rewind = recovery.rewind.expect("the open rewind is reported");
    // Newest change first: todo.txt was put back, shopping.txt not yet.
    let outcomes: Vec<(String, wire::RewindOutcome)> = rewind
        .files
        .iter()
        .map(|f| (Path::new(&f.path).file_name().unwrap().to_string_lossy().into_owned(), f.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("todo.txt".to_string(), wire::RewindOutcome::Restored),
            ("shopping.txt".to_string(), wire::RewindOutcome::NotRestored)
        ]
    );
    assert_claims_match_the_disk(&rewind, &cwd);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_changed_by_someone_after_a_crash_mid_rewind_is_named_changed_never_restored() {
    let change = |cwd: &Path| std::fs::write(cwd.join("shopping.txt"), "bread\ntea\n").expect("edit");
    let Some((recovery, cwd, _home)) = rewind_crashing_at("rewind::after_plan_record", change).await else { return };
    let rewind = recovery.rewind.expect("the open rewind is reported");
    let shopping = rewind.files.iter().find(|f| f.path.ends_with("shopping.txt")).expect("shopping.txt");
    assert_eq!(shopping.outcome, wire::RewindOutcome::Changed, "{shopping:?}");
    assert!(shopping.why.as_deref().is_some_and(|w| w.contains("changed by something else")), "{shopping:?}");
    let todo = rewind.files.iter().find(|f| f.path.ends_with("todo.txt")).expect("todo.txt");
    assert_eq!(todo.outcome, wire::RewindOutcome::NotRestored);
    assert_eq!(read(&cwd.join("shopping.txt")).as_deref(), Some("bread\ntea\n"));
    assert_eq!(read(&cwd.join("todo.txt")).as_deref(), Some(TODO_EDITED));
}
