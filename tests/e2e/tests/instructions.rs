//! The project's instructions (`AGENTS.md`), end to end: what the mock model
//! received, what the journal's `response` records say each request was
//! built with, and what the person is shown (`initialize`, `mino/history`,
//! `mino/instructionsChanged`).

use std::path::Path;

use mino_e2e::{
    journal_records, options_in, under_both_providers, wire, work_dir, MockModel, Provider, Reply, Server, TIMEOUT,
};
use serde_json::Value;

under_both_providers!(the_files_reach_the_model_root_first_and_the_record_names_them);

/// The instructions a model request carried: the Responses API's
/// `instructions`, or a Chat Completions request's `system` message.
fn instructions(body: &Value) -> String {
    if let Some(text) = body.get("instructions").and_then(Value::as_str) {
        return text.to_string();
    }
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The `instructions` member of each `response` record, in order.
fn recorded(journal: &Path) -> Vec<Value> {
    journal_records(journal)
        .into_iter()
        .filter(|r| r["kind"] == "response")
        .map(|r| r["instructions"].clone())
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

async fn initialize(server: &mut Server, cwd: &Path) -> wire::ServerCapabilities {
    let result = server.initialize(&options_in(cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    Server::capabilities(&result)
}

async fn history(server: &mut Server) -> wire::HistoryResult {
    server.call(wire::method::HISTORY, &wire::HistoryParams::default()).await.expect("history")
}

/// A repository with a file above its root (not the project's), one at its
/// root and one in the session's directory.
fn project(home: &Path) -> std::path::PathBuf {
    let repo = home.join("repo");
    let sub = repo.join("crates/app");
    std::fs::create_dir_all(&sub).expect("dirs");
    std::fs::create_dir(repo.join(".git")).expect(".git");
    std::fs::write(home.join("AGENTS.md"), "OUTSIDE-THE-REPOSITORY: never given\n").expect("outside");
    std::fs::write(repo.join("AGENTS.md"), "ROOT-RULE: run the tests before answering\n").expect("root");
    std::fs::write(sub.join("AGENTS.md"), "APP-RULE: this crate uses tabs\n").expect("sub");
    sub
}

async fn the_files_reach_the_model_root_first_and_the_record_names_them(provider: Provider) {
    let mock = MockModel::start(vec![Reply::text("Noted.")]).await.expect("mock");
    let mut server = Server::spawn_with(provider.spawn(None, &mock)).await;
    let cwd = project(server.home());
    let caps = initialize(&mut server, &cwd).await;
    let repo = cwd.parent().and_then(Path::parent).expect("repo");
    let paths: Vec<&str> = caps.instruction_files.iter().map(|f| f.path.as_str()).collect();
    let expected = [repo.join("AGENTS.md").display().to_string(), cwd.join("AGENTS.md").display().to_string()];
    assert_eq!(paths, expected, "the repository's files, root first, and nothing above the root");

    let turn = mino_e2e::chat(&mut server, "Hello").await;
    assert_eq!(mino_e2e::end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    let sent = instructions(&mock.requests()[0].body);
    let (root, app) = (sent.find("ROOT-RULE").expect("root file sent"), sent.find("APP-RULE").expect("app file sent"));
    assert!(root < app, "the nearer file comes after the farther one: {sent}");
    assert!(!sent.contains("OUTSIDE-THE-REPOSITORY"), "{sent}");

    // The record says what the request was built with: the whole text's
    // hash and each file's.
    let records = recorded(Path::new(&caps.journal_path));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["sha256"], sha256_hex(sent.as_bytes()));
    let files = records[0]["files"].as_array().expect("files");
    assert_eq!(files.len(), 2);
    assert_eq!(files[1]["path"], expected[1]);
    assert_eq!(files[1]["sha256"], sha256_hex(b"APP-RULE: this crate uses tabs\n"));

    let shown = history(&mut server).await;
    assert_eq!(shown.instruction_files, caps.instruction_files);
}

/// A file larger than the cap is cut at 32 KiB with a note saying so; the
/// person is told too.
#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_file_is_cut_where_the_note_says() {
    let mock = MockModel::start(vec![Reply::text("Noted.")]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let mut text = "KEEP-ME ".repeat(5000);
    text.push_str("THE-TAIL-PAST-THE-CAP");
    std::fs::write(cwd.join("AGENTS.md"), &text).expect("write");
    let caps = initialize(&mut server, &cwd).await;
    let file = &caps.instruction_files[0];
    assert!(file.truncated);
    assert_eq!((file.size, file.given), (text.len() as u64, 32 * 1024));

    let turn = mino_e2e::chat(&mut server, "Hello").await;
    mino_e2e::end_of(&mut server, &turn).await;
    let sent = instructions(&mock.requests()[0].body);
    assert!(sent.contains("KEEP-ME"));
    assert!(!sent.contains("THE-TAIL-PAST-THE-CAP"), "the part past the cap is not sent");
    assert!(sent.contains(&format!("only its first 32768 of {} bytes are given", text.len())), "{sent}");
    let records = recorded(Path::new(&caps.journal_path));
    assert_eq!(records[0]["files"][0]["truncated"], true);
    assert_eq!(records[0]["files"][0]["sha256"], sha256_hex(&text.as_bytes()[..32 * 1024]));
}

/// A file edited while a call waits for approval is read again for the
/// next request of the same turn: the model gets the new text, the record
/// the new hash, and the client a `mino/instructionsChanged`.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_changed_mid_session_applies_to_the_next_request() {
    let mock = MockModel::start(vec![Reply::call("call_1", "true"), Reply::text("Done."), Reply::text("Again.")])
        .await
        .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    std::fs::write(cwd.join("AGENTS.md"), "FIRST-VERSION\n").expect("write");
    let caps = initialize(&mut server, &cwd).await;

    let turn = mino_e2e::chat(&mut server, "Run true").await;
    let request = mino_e2e::next_approval_request(&mut server).await;
    std::fs::write(cwd.join("AGENTS.md"), "SECOND-VERSION, longer\n").expect("rewrite");
    server.approval(&turn, &request.call_id, wire::Decision::Approve).await.expect("approve");
    let changed: wire::InstructionsChanged =
        server.next_notification(wire::method::INSTRUCTIONS_CHANGED, TIMEOUT).await.parse();
    assert_eq!(changed.files[0].sha256, sha256_hex(b"SECOND-VERSION, longer\n"));
    assert_eq!(mino_e2e::end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);

    let requests = mock.requests();
    assert!(instructions(&requests[0].body).contains("FIRST-VERSION"));
    let second = instructions(&requests[1].body);
    assert!(second.contains("SECOND-VERSION") && !second.contains("FIRST-VERSION"), "{second}");
    let records = recorded(Path::new(&caps.journal_path));
    assert_eq!(records[0]["files"][0]["sha256"], sha256_hex(b"FIRST-VERSION\n"));
    assert_eq!(records[1]["files"][0]["sha256"], sha256_hex(b"SECOND-VERSION, longer\n"));
    assert_ne!(records[0]["sha256"], records[1]["sha256"]);
    assert_eq!(records[1]["sha256"], sha256_hex(second.as_bytes()));

    // Removed: history shows none, and the next request has none.
    std::fs::remove_file(cwd.join("AGENTS.md")).expect("remove");
    assert!(history(&mut server).await.instruction_files.is_empty());
    let turn = mino_e2e::chat(&mut server, "Again").await;
    mino_e2e::end_of(&mut server, &turn).await;
    assert!(!instructions(&mock.requests()[2].body).contains("SECOND-VERSION"));
    assert_eq!(recorded(Path::new(&caps.journal_path))[2]["files"], serde_json::json!([]));
}
