//! A model that streams text without end: the turn's text is capped at
//! 4 MiB, the turn ends `failed` saying so, and that end is on disk.

use mino_e2e::{journal_records, options_in, wire, work_dir, MockModel, Reply, Server, TIMEOUT};

/// The documented cap on a turn's streamed text.
const TURN_TEXT_LIMIT: usize = 4 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread")]
async fn endless_model_text_ends_the_turn_failed_at_4_mib_and_the_end_is_on_disk() {
    let delta = "endless text, ".repeat(73); // 1022 bytes
    let mock = MockModel::start(vec![Reply::EndlessText { delta: delta.clone() }, Reply::text("Back to normal.")])
        .await
        .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let result = server.initialize(&options_in(&cwd)).await.expect("initialize");
    let journal = Server::capabilities(&result).journal_path;
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;

    let chat: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Talk forever.".into(), ..Default::default() })
        .await
        .expect("chat");
    let notes = server.turn_notifications(&chat.turn_id, TIMEOUT).await;

    let streamed: usize = notes
        .iter()
        .filter(|n| n.method == wire::method::TEXT_DELTA)
        .map(|n| n.parse::<wire::TextDelta>().delta.len())
        .sum();
    assert!(streamed <= TURN_TEXT_LIMIT, "{streamed} bytes streamed, over the cap");
    assert!(streamed > TURN_TEXT_LIMIT - delta.len(), "the text stopped early: {streamed} bytes");
    let ended: wire::TurnEnded = notes.last().expect("turnEnded").parse();
    assert_eq!(ended.status, wire::TurnStatus::Failed);
    let reason = ended.reason.unwrap_or_default();
    assert!(reason.contains("the model's answer passed 4 MiB"), "{reason}");

    // The end is on disk, with the same reason.
    let records = journal_records(std::path::Path::new(&journal));
    let end = records.iter().rev().find(|r| r["kind"] == "turn_end").expect("a turn_end record");
    assert_eq!(end["turn_id"], chat.turn_id.as_str());
    assert_eq!(end["status"], "failed");
    assert!(end["reason"].as_str().unwrap_or_default().contains("the model's answer passed 4 MiB"), "{end}");

    // The session goes on.
    let next: wire::ChatResult = server
        .call(wire::method::CHAT, &wire::ChatParams { text: "Hello?".into(), ..Default::default() })
        .await
        .expect("next chat");
    let notes = server.turn_notifications(&next.turn_id, TIMEOUT).await;
    let ended: wire::TurnEnded = notes.last().expect("turnEnded").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed);
}
