//! `mino/models/list` and `mino/models/select` over the real binary: the
//! service's list under both providers, the configuration's when the service
//! has none, a choice that outlives the server, and one refused mid-turn.

use mino_e2e::{
    chat, count_kind, end_of, next_approval_request, open, options_in, under_both_providers, wire, work_dir, MockModel,
    Provider, Reply, Server, Spawn, API_KEY, TIMEOUT,
};
use serde_json::json;

under_both_providers!(the_list_comes_from_the_service);

async fn list(server: &mut Server) -> wire::ModelsListResult {
    server.call(wire::method::MODELS_LIST, &json!({})).await.expect("models/list")
}

async fn select(server: &mut Server, model: &str) -> Result<wire::ModelsSelectResult, mino_e2e::RpcError> {
    let result = server.request(wire::method::MODELS_SELECT, json!({ "model": model })).await?;
    Ok(serde_json::from_value(result).expect("models/select result"))
}

/// The service's `GET /models`, asked with the key, is the list (its
/// `context_length` read as the window), whichever provider Mino speaks.
async fn the_list_comes_from_the_service(provider: Provider) {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut server = Server::spawn_with(provider.spawn(None, &mock)).await;
    let cwd = work_dir(server.home());
    open(&mut server, &cwd).await;
    let listed = list(&mut server).await;
    assert_eq!(listed.source, wire::ModelSource::Service);
    assert_eq!(listed.current, "mock-model");
    assert_eq!(
        listed.models,
        vec![
            wire::ModelEntry { id: "mock-model".into(), context_window: None },
            wire::ModelEntry {
                id: "mock-model-large".into(),
                context_window: Some(mino_mock_model::LARGE_MODEL_CONTEXT)
            },
        ]
    );
    // Asked for this list, and (in the background, for the context window
    // automatic compaction uses) when the session opened; with the key each time.
    let asked = mock.model_list_requests();
    assert!(!asked.is_empty() && asked.iter().all(|a| *a == Some(format!("Bearer {API_KEY}"))), "{asked:?}");
    assert!(mock.requests().is_empty(), "listing is no model request");
}

/// A service without a list (404) gives the configured model and the
/// configuration file's `[models.*]` tables, not an error.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_service_list_the_configured_models_are_offered() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    mock.set_models(None);
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("config.toml"),
        "[models.\"local-small\"]\ncontext_window = 8192\n[models.\"mock-model\"]\ncontext_window = 16384\n",
    )
    .expect("config");
    let mut server = Server::spawn_in(home.path(), &mock).await;
    open(&mut server, &work_dir(home.path())).await;
    let listed = list(&mut server).await;
    assert_eq!(listed.source, wire::ModelSource::Config);
    assert_eq!(listed.current, "mock-model");
    assert_eq!(
        listed.models,
        vec![
            wire::ModelEntry { id: "mock-model".into(), context_window: Some(16384) },
            wire::ModelEntry { id: "local-small".into(), context_window: Some(8192) },
        ]
    );
    assert!(!mock.model_list_requests().is_empty(), "the service was asked first");
}

/// A chosen model is journaled: the next turn names it, the session keeps
/// it when reopened by a new server, and a new session starts with the
/// configured model.
#[tokio::test(flavor = "multi_thread")]
async fn a_chosen_model_is_kept_when_the_session_is_reopened() {
    let mock = MockModel::start(vec![Reply::text("First."), Reply::text("Second."), Reply::text("Third.")])
        .await
        .expect("mock");
    let mut first = Server::spawn(&mock).await;
    let _home = first.keep_home();
    let home = first.home().to_path_buf();
    let cwd = work_dir(&home);
    first.initialize(&options_in(&cwd)).await.expect("initialize");
    first.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    let chosen = select(&mut first, "  mock-model-large ").await.expect("select");
    assert_eq!(chosen.model, "mock-model-large", "trimmed");
    assert_eq!(list(&mut first).await.current, "mock-model-large");
    let turn = chat(&mut first, "Hi").await;
    end_of(&mut first, &turn).await;
    assert_eq!(mock.requests()[0].body["model"], "mock-model-large");
    first.close_stdin();
    first.wait(TIMEOUT).await;
    let journal = mino_e2e::session_files(&home).into_iter().next().expect("a session");
    assert_eq!(count_kind(&journal, "model"), 1);

    let mut second = Server::spawn_in(&home, &mock).await;
    let result = second.initialize(&options_in(&cwd)).await.expect("initialize");
    second.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    assert_eq!(Server::capabilities(&result).model, "mock-model-large", "the session kept its model");
    let turn = chat(&mut second, "Again").await;
    end_of(&mut second, &turn).await;
    assert_eq!(mock.requests()[1].body["model"], "mock-model-large");

    let fresh: wire::SessionInfo = second.call(wire::method::SESSIONS_NEW, &json!({})).await.expect("new session");
    assert_ne!(fresh.session_id, Server::capabilities(&result).session_id);
    second.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    assert_eq!(list(&mut second).await.current, "mock-model", "a new session starts with the configured model");
    let turn = chat(&mut second, "New here").await;
    end_of(&mut second, &turn).await;
    assert_eq!(mock.requests()[2].body["model"], "mock-model");
}

/// While a turn runs the choice is refused with -32011 and nothing is
/// written; a blank name is -32602.
#[tokio::test(flavor = "multi_thread")]
async fn a_choice_is_refused_while_a_turn_runs() {
    let mock = MockModel::start(vec![Reply::call("call_1", "echo hi"), Reply::text("Done.")]).await.expect("mock");
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mut server = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        ..Spawn::default()
    })
    .await;
    let caps = server.initialize(&options_in(&cwd)).await.expect("initialize");
    let journal = std::path::PathBuf::from(Server::capabilities(&caps).journal_path);
    server.next_notification(wire::method::RECOVERY, TIMEOUT).await;
    let turn = chat(&mut server, "Say hi").await;
    let request = next_approval_request(&mut server).await;
    let refused = select(&mut server, "mock-model-large").await.expect_err("refused mid-turn");
    assert_eq!(refused.code, wire::error_code::TURN_IN_PROGRESS);
    let blank = select(&mut server, "   ").await.expect_err("a blank name");
    assert_eq!(blank.code, -32602);
    server.approval(&request.turn_id, &request.call_id, wire::Decision::Deny).await.expect("deny");
    end_of(&mut server, &turn).await;
    assert_eq!(count_kind(&journal, "model"), 0, "nothing was written");
    assert!(mock.requests().iter().all(|r| r.body["model"] == "mock-model"));
    assert_eq!(select(&mut server, "mock-model-large").await.expect("after the turn").model, "mock-model-large");
    assert_eq!(count_kind(&journal, "model"), 1);
}
