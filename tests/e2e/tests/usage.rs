//! Token usage over the real binary: reported with each turn's end, summed
//! per session, kept in the journal so a restarted server still shows it.

use mino_e2e::{chat, end_of, next_approval_request, open, wire, work_dir, MockModel, Reply, Server, TIMEOUT};
use serde_json::json;

fn sum(a: wire::TokenUsage, b: wire::TokenUsage) -> wire::TokenUsage {
    let add = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    wire::TokenUsage {
        input_tokens: a.input_tokens + b.input_tokens,
        output_tokens: a.output_tokens + b.output_tokens,
        total_tokens: a.total_tokens + b.total_tokens,
        cached_input_tokens: add(a.cached_input_tokens, b.cached_input_tokens),
        reasoning_tokens: add(a.reasoning_tokens, b.reasoning_tokens),
    }
}

async fn history(server: &mut Server) -> wire::HistoryResult {
    serde_json::from_value(server.request(wire::method::HISTORY, json!({})).await.expect("history")).expect("parses")
}

#[tokio::test(flavor = "multi_thread")]
async fn each_turn_reports_its_tokens_and_the_session_sums_them_across_a_restart() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::text("Hello."),
        Reply::call("call_1", "echo counted"),
        Reply::text("It printed counted."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &cwd).await;

    let first = chat(&mut server, "Hi").await;
    let first_end = end_of(&mut server, &first).await;
    let first_usage = first_end.usage.expect("the first turn's tokens");
    assert!(first_usage.input_tokens > 0 && first_usage.output_tokens > 0, "{first_usage:?}");
    assert_eq!(first_usage.total_tokens, first_usage.input_tokens + first_usage.output_tokens);
    assert_eq!(first_end.session_usage, Some(first_usage), "one turn so far");

    // Two model requests in one turn: the turn's tokens are both responses'.
    let second = chat(&mut server, "Run echo").await;
    let request = next_approval_request(&mut server).await;
    server
        .request(
            wire::method::APPROVAL,
            json!({"turnId": request.turn_id, "callId": request.call_id, "decision": "approve"}),
        )
        .await
        .expect("approve");
    let second_end = end_of(&mut server, &second).await;
    let second_usage = second_end.usage.expect("the second turn's tokens");
    assert!(
        second_usage.input_tokens > first_usage.input_tokens,
        "two requests, the second replaying the first: {second_usage:?} vs {first_usage:?}"
    );
    assert_eq!(second_end.session_usage, Some(sum(first_usage, second_usage)));

    let live = history(&mut server).await;
    assert_eq!(live.turns[0].usage, Some(first_usage));
    assert_eq!(live.turns[1].usage, Some(second_usage));
    assert_eq!(live.usage, Some(sum(first_usage, second_usage)));
    server.close_stdin();
    server.wait(TIMEOUT).await;

    // The tokens are on file: a new server shows the same figures.
    let mut again = Server::spawn_in(home.path(), &mock).await;
    open(&mut again, &cwd).await;
    let reopened = history(&mut again).await;
    assert_eq!(reopened.turns[1].usage, Some(second_usage));
    assert_eq!(reopened.usage, live.usage);
    let journal = std::fs::read_to_string(reopened_journal(home.path())).expect("journal");
    let responses_with_usage =
        journal.lines().filter(|l| l.contains("\"kind\":\"response\"") && l.contains("\"usage\":{")).count();
    assert_eq!(responses_with_usage, 3, "each response record carries its usage");
    again.close_stdin();
}

fn reopened_journal(home: &std::path::Path) -> std::path::PathBuf {
    let mut journals: Vec<_> = std::fs::read_dir(home.join("sessions"))
        .expect("sessions")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(journals.len(), 1, "{journals:?}");
    journals.remove(0)
}
