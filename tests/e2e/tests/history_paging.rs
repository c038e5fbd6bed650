//! `mino/history` in pages: `limit`, `beforeTurnId`, `hasMore`.

use mino_e2e::{options_in, wire, work_dir, MockModel, Reply, Server, TIMEOUT};
use serde_json::{json, Value};

async fn history(server: &mut Server, params: Value) -> wire::HistoryResult {
    let result = server.request(wire::method::HISTORY, params).await.expect("history");
    serde_json::from_value(result).expect("history parses")
}

fn ids(result: &wire::HistoryResult) -> Vec<String> {
    result.turns.iter().map(|t| t.turn_id.clone()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_walk_the_whole_session_exactly_once_newest_first() {
    const TURNS: usize = 7;
    let replies = (1..=TURNS).map(|i| Reply::text(&format!("Answer {i}."))).collect();
    let mock = MockModel::start(replies).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    server.initialize(&options_in(&cwd)).await.expect("initialize");
    let _ = server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    for i in 1..=TURNS {
        let chat: wire::ChatResult = server
            .call(wire::method::CHAT, &wire::ChatParams { text: format!("Question {i}"), ..Default::default() })
            .await
            .expect("chat");
        server.turn_notifications(&chat.turn_id, TIMEOUT).await;
    }

    // Without params: every turn, as before, and nothing older.
    let all = history(&mut server, Value::Null).await;
    assert_eq!(all.turns.len(), TURNS);
    assert!(!all.has_more);
    let all_ids = ids(&all);

    // Pages of 3 from the end: [5,6,7], [2,3,4], [1].
    let mut walked: Vec<Vec<String>> = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut params = json!({ "limit": 3 });
        if let Some(id) = &before {
            params["beforeTurnId"] = json!(id);
        }
        let page = history(&mut server, params).await;
        assert_eq!(page.session_id, all.session_id);
        assert!(!page.turns.is_empty(), "an empty page before {before:?}");
        before = page.turns.first().map(|t| t.turn_id.clone());
        walked.push(ids(&page));
        // Each page holds whole turns, as the full history shows them.
        for turn in &page.turns {
            let full = all.turns.iter().find(|t| t.turn_id == turn.turn_id).expect("a turn of the session");
            assert_eq!(turn, full);
        }
        if !page.has_more {
            break;
        }
    }
    assert_eq!(walked.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1], "{walked:?}");
    let flattened: Vec<String> = walked.into_iter().rev().flatten().collect();
    assert_eq!(flattened, all_ids, "pages, oldest first, must be the whole session exactly once");

    // `beforeTurnId` without `limit`: everything before it.
    let page = history(&mut server, json!({ "beforeTurnId": all_ids[4] })).await;
    assert_eq!(ids(&page), all_ids[..4]);
    assert!(!page.has_more);
    // A limit of 0 answers no turns and says whether there are any.
    let page = history(&mut server, json!({ "limit": 0 })).await;
    assert!(page.turns.is_empty());
    assert!(page.has_more);
    // A limit larger than the session: all of it.
    let page = history(&mut server, json!({ "limit": 1000 })).await;
    assert_eq!(ids(&page), all_ids);
    assert!(!page.has_more);

    // An unknown turn id is refused, naming it.
    let err = server
        .request(wire::method::HISTORY, json!({ "limit": 2, "beforeTurnId": "turn-nope" }))
        .await
        .expect_err("unknown beforeTurnId");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("turn-nope"), "{err}");
    assert_eq!(err.data, Some(json!({ "beforeTurnId": "turn-nope" })));
    // So is a limit that is not a count.
    let err = server.request(wire::method::HISTORY, json!({ "limit": -1 })).await.expect_err("negative limit");
    assert_eq!(err.code, -32602, "{err}");
}
