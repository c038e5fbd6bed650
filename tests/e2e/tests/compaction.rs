//! Compaction over the real binary, checked at the mock model's wire: on
//! demand (`mino/compact`), automatically past the context window's
//! threshold, after `context_length_exceeded` (both providers), with an
//! `unknown` turn kept verbatim after the summary, and crashes around the
//! record's sync (SIGKILL during the summary request; failpoints before the
//! record and after its sync, when a failpoints build is available).

use mino_e2e::{
    chat, count_kind, end_of, failpoints_server_bin, input_summary, journal_records, open, options_in, session_files,
    wire, work_dir, MockModel, Reply, Server, Spawn, TIMEOUT,
};
use serde_json::{json, Value};

/// The summary message's opening words (`mino_core::compaction::SUMMARY_PREFIX`).
const SUMMARY_OPENING: &str = "user: Mino runtime notice: the earlier conversation was compacted.";

/// Appends milk, then kills the server before the result is saved (as in recovery.rs).
const MILK: &str = "echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)";

async fn spawn(home: &std::path::Path, mock: &MockModel, env: &[(&str, &str)]) -> Server {
    Server::spawn_with(Spawn {
        home: Some(home.to_path_buf()),
        base_url: Some(mock.base_url()),
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    })
    .await
}

async fn compact(server: &mut Server) -> Result<wire::CompactResult, mino_e2e::RpcError> {
    server.call(wire::method::COMPACT, &json!({})).await
}

/// `request`'s input, summarised; the summary message cut to its opening.
fn input_of(request: &Value) -> Vec<String> {
    input_summary(request)
        .into_iter()
        .map(|line| match line.strip_prefix(SUMMARY_OPENING) {
            Some(rest) => format!("summary:{}", rest.rsplit("\n\n").next().unwrap_or_default()),
            None => line,
        })
        .collect()
}

fn is_summary_request(request: &mino_e2e::RecordedRequest) -> bool {
    request.body.get("tools").is_none()
}

#[tokio::test(flavor = "multi_thread")]
async fn on_demand_the_next_request_holds_the_summary_and_not_the_old_turns() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::text("Paris."),
        Reply::text("Rome."),
        Reply::summary("Two capitals so far: Paris, Rome."),
        Reply::text("Madrid."),
    ])
    .await
    .expect("mock");
    let mut server = spawn(home.path(), &mock, &[]).await;
    open(&mut server, &cwd).await;
    for question in ["Capital of France?", "Capital of Italy?"] {
        let turn = chat(&mut server, question).await;
        end_of(&mut server, &turn).await;
    }

    let result = compact(&mut server).await.expect("compact");
    assert_eq!(
        result,
        wire::CompactResult {
            compacted: true,
            summarized_turns: 2,
            kept_turns: 0,
            through_turn_id: Some("turn-2".into()),
            reason: None
        }
    );
    let started: wire::CompactionStarted =
        server.next_notification(wire::method::COMPACTION_STARTED, TIMEOUT).await.parse();
    assert_eq!((started.trigger, started.turn_id), (wire::CompactionTrigger::Manual, None));
    let ended: wire::CompactionEnded = server.next_notification(wire::method::COMPACTION_ENDED, TIMEOUT).await.parse();
    assert_eq!(ended.result, result);
    assert!(ended.seq > started.seq);

    let summary_request = &mock.requests()[2];
    assert!(is_summary_request(summary_request), "no tools offered: {}", summary_request.body);
    let asked = input_of(&summary_request.body);
    assert_eq!(
        asked[..4],
        ["user: Capital of France?", "assistant: Paris.", "user: Capital of Italy?", "assistant: Rome."]
    );
    assert!(asked[4].starts_with("user: Mino runtime request: the conversation above"), "{asked:?}");

    let turn = chat(&mut server, "Capital of Spain?").await;
    assert_eq!(end_of(&mut server, &turn).await.status, wire::TurnStatus::Completed);
    let next = &mock.requests()[3];
    assert_eq!(input_of(&next.body), ["summary:Two capitals so far: Paris, Rome.", "user: Capital of Spain?"]);

    // The record is on file (v 3); history keeps every original turn.
    let journal = session_files(home.path()).pop().expect("journal");
    let record =
        journal_records(&journal).into_iter().find(|r| r["kind"] == "compaction").expect("a compaction record");
    assert_eq!((record["v"].as_u64(), record["through_turn_id"].as_str()), (Some(3), Some("turn-2")));
    let history: wire::HistoryResult = server.call(wire::method::HISTORY, &json!({})).await.expect("history");
    assert_eq!(history.turns.len(), 3);
    assert_eq!(history.turns[0].input, "Capital of France?");

    // Reopened, the summary still stands in for the old turns.
    drop(server);
    mock.push(Reply::text("Lisbon."));
    let mut server = spawn(home.path(), &mock, &[]).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Capital of Portugal?").await;
    end_of(&mut server, &turn).await;
    let last = mock.requests().pop().expect("a request");
    assert_eq!(input_of(&last.body)[0], "summary:Two capitals so far: Paris, Rome.");
    assert_eq!(input_of(&last.body).len(), 4, "summary, Spain's turn, the question");
}

#[tokio::test(flavor = "multi_thread")]
async fn compact_is_refused_while_a_turn_runs_and_with_nothing_to_compact_changes_nothing() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![Reply::call("call_1", "echo hi")]).await.expect("mock");
    let mut server = spawn(home.path(), &mock, &[]).await;
    open(&mut server, &cwd).await;
    let result = compact(&mut server).await.expect("compact");
    assert!(!result.compacted);
    assert!(result.reason.unwrap_or_default().starts_with("nothing to compact"));

    let turn = chat(&mut server, "Say hi").await;
    let request = mino_e2e::next_approval_request(&mut server).await;
    let refused = compact(&mut server).await.expect_err("a turn runs");
    assert_eq!(refused.code, wire::error_code::TURN_IN_PROGRESS);
    server.approval(&request.turn_id, &request.call_id, wire::Decision::Deny).await.expect("deny");
    end_of(&mut server, &turn).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_threshold_the_next_turn_compacts_before_its_first_request() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock =
        MockModel::start(vec![Reply::text("Paris."), Reply::summary("They asked about France."), Reply::text("Rome.")])
            .await
            .expect("mock");
    // The mock reports about a token per four bytes of request, so every
    // request passes 80 % of 100 tokens.
    let mut server = spawn(home.path(), &mock, &[("MINO_CONTEXT_WINDOW", "100")]).await;
    open(&mut server, &cwd).await;
    let first = chat(&mut server, "Capital of France?").await;
    end_of(&mut server, &first).await;
    let second = chat(&mut server, "Capital of Italy?").await;
    let notes = server.turn_notifications(&second, TIMEOUT).await;
    let methods: Vec<&str> = notes.iter().map(|n| n.method.as_str()).collect();
    assert_eq!(
        methods[..3],
        [wire::method::TURN_STARTED, wire::method::COMPACTION_STARTED, wire::method::COMPACTION_ENDED]
    );
    let ended: wire::CompactionEnded = notes[2].parse();
    assert_eq!(ended.trigger, wire::CompactionTrigger::Auto);
    assert!(ended.result.compacted, "{ended:?}");
    let last: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(last.status, wire::TurnStatus::Completed);
    assert!(is_summary_request(&mock.requests()[1]));
    assert_eq!(input_of(&mock.requests()[2].body), ["summary:They asked about France.", "user: Capital of Italy?"]);
}

/// No window in the environment (blank counts as unset) nor in the file.
const NO_CONFIGURED_WINDOW: [(&str, &str); 1] = [("MINO_CONTEXT_WINDOW", "")];

/// The service lists the session's model with a window of 100 tokens, as
/// vLLM names it (`max_model_len`); every request of the mock passes 80 % of it.
fn small_window_listed(mock: &MockModel) {
    mock.set_model_entries(Some(vec![
        json!({ "id": "mock-model", "owned_by": "vllm", "max_model_len": 100 }),
        json!({ "id": "mock-model-large", "max_model_len": 32768 }),
    ]));
}

/// With no window in the environment or the configuration file, the one
/// the service's `GET /models` reports for the session's model is used: the
/// turn after a request past its threshold compacts first.
#[tokio::test(flavor = "multi_thread")]
async fn the_window_the_service_reports_is_used_for_automatic_compaction() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock =
        MockModel::start(vec![Reply::text("Paris."), Reply::summary("They asked about France."), Reply::text("Rome.")])
            .await
            .expect("mock");
    small_window_listed(&mock);
    let mut server = spawn(home.path(), &mock, &NO_CONFIGURED_WINDOW).await;
    open(&mut server, &cwd).await;
    let first = chat(&mut server, "Capital of France?").await;
    end_of(&mut server, &first).await;
    let second = chat(&mut server, "Capital of Italy?").await;
    let notes = server.turn_notifications(&second, TIMEOUT).await;
    let methods: Vec<&str> = notes.iter().map(|n| n.method.as_str()).collect();
    assert_eq!(
        methods[..3],
        [wire::method::TURN_STARTED, wire::method::COMPACTION_STARTED, wire::method::COMPACTION_ENDED],
        "{methods:?}"
    );
    let ended: wire::CompactionEnded = notes[2].parse();
    assert_eq!(ended.trigger, wire::CompactionTrigger::Auto);
    assert!(ended.result.compacted, "{ended:?}");
    assert!(is_summary_request(&mock.requests()[1]));
    assert_eq!(input_of(&mock.requests()[2].body), ["summary:They asked about France.", "user: Capital of Italy?"]);
    assert!(!mock.model_list_requests().is_empty(), "the service's list was asked");
}

/// The configuration file's `[models."<name>"] context_window` wins over
/// the window the service reports: no compaction below the file's threshold.
#[tokio::test(flavor = "multi_thread")]
async fn the_configuration_files_window_wins_over_the_services() {
    let home = tempfile::tempdir().expect("home");
    std::fs::write(home.path().join("config.toml"), "[models.\"mock-model\"]\ncontext_window = 10000000\n")
        .expect("config");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![Reply::text("Paris."), Reply::text("Rome.")]).await.expect("mock");
    small_window_listed(&mock);
    let mut server = spawn(home.path(), &mock, &NO_CONFIGURED_WINDOW).await;
    open(&mut server, &cwd).await;
    let first = chat(&mut server, "Capital of France?").await;
    end_of(&mut server, &first).await;
    let second = chat(&mut server, "Capital of Italy?").await;
    let notes = server.turn_notifications(&second, TIMEOUT).await;
    let methods: Vec<&str> = notes.iter().map(|n| n.method.as_str()).collect();
    assert!(!methods.contains(&wire::method::COMPACTION_STARTED), "{methods:?}");
    let last: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(last.status, wire::TurnStatus::Completed);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "no summary request");
    assert!(!requests.iter().any(is_summary_request));
}

/// The window is the one the service reports for the model the session
/// uses now: after `mino/models/select` chose a model listed with a small
/// window, the next turn compacts, where the configured model's (none
/// reported) did not.
#[tokio::test(flavor = "multi_thread")]
async fn the_service_window_follows_the_chosen_model() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::text("Paris."),
        Reply::text("Rome."),
        Reply::summary("They asked about capitals."),
        Reply::text("Madrid."),
    ])
    .await
    .expect("mock");
    mock.set_model_entries(Some(vec![
        json!({ "id": "mock-model" }),
        json!({ "id": "local-small", "context_length": 100 }),
    ]));
    let mut server = spawn(home.path(), &mock, &NO_CONFIGURED_WINDOW).await;
    open(&mut server, &cwd).await;
    for question in ["Capital of France?", "Capital of Italy?"] {
        let turn = chat(&mut server, question).await;
        let notes = server.turn_notifications(&turn, TIMEOUT).await;
        assert!(!notes.iter().any(|n| n.method == wire::method::COMPACTION_STARTED), "{question}");
    }
    let chosen: wire::ModelsSelectResult =
        server.call(wire::method::MODELS_SELECT, &json!({ "model": "local-small" })).await.expect("select");
    assert_eq!(chosen.model, "local-small");
    let third = chat(&mut server, "Capital of Spain?").await;
    let notes = server.turn_notifications(&third, TIMEOUT).await;
    let methods: Vec<&str> = notes.iter().map(|n| n.method.as_str()).collect();
    assert_eq!(methods[1..3], [wire::method::COMPACTION_STARTED, wire::method::COMPACTION_ENDED], "{methods:?}");
    let requests = mock.requests();
    assert!(is_summary_request(&requests[2]));
    assert_eq!(requests[3].body["model"], "local-small");
}

/// A service without a list (404) fails no turn: with no window set
/// anywhere, the default applies and the mock's small requests compact nothing.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_service_list_the_default_window_applies_and_turns_go_on() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![Reply::text("Paris."), Reply::text("Rome.")]).await.expect("mock");
    mock.set_models(None);
    let mut server = spawn(home.path(), &mock, &NO_CONFIGURED_WINDOW).await;
    open(&mut server, &cwd).await;
    for question in ["Capital of France?", "Capital of Italy?"] {
        let turn = chat(&mut server, question).await;
        let notes = server.turn_notifications(&turn, TIMEOUT).await;
        assert!(!notes.iter().any(|n| n.method == wire::method::COMPACTION_STARTED));
        let last: wire::TurnEnded = notes.last().expect("end").parse();
        assert_eq!(last.status, wire::TurnStatus::Completed, "{question}");
    }
    assert_eq!(mock.requests().len(), 2);
    assert!(!mock.model_list_requests().is_empty(), "the service's list was asked");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_turn_is_kept_verbatim_after_the_summary() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![Reply::text("Noted."), Reply::call("call_1", MILK)]).await.expect("mock");
    let mut first = spawn(home.path(), &mock, &[]).await;
    open(&mut first, &cwd).await;
    let turn = chat(&mut first, "We are shopping.").await;
    end_of(&mut first, &turn).await;
    let turn = chat(&mut first, "Add milk to shopping.txt.").await;
    let _ = first.next_notification(wire::method::APPROVAL_REQUEST, TIMEOUT).await;
    first
        .send_message(&json!({"jsonrpc": "2.0", "id": 1000, "method": wire::method::APPROVAL,
            "params": {"turnId": turn, "callId": "call_1", "decision": "approve"}}))
        .await;
    first.wait(TIMEOUT).await;

    mock.push(Reply::summary("We are shopping."));
    mock.push(Reply::text("It may be there; shall I check?"));
    let mut server = spawn(home.path(), &mock, &[]).await;
    let recovery = open(&mut server, &cwd).await;
    assert!(recovery.acknowledgement_required);
    let refused = compact(&mut server).await.expect_err("the gate");
    assert_eq!(refused.code, wire::error_code::ACKNOWLEDGEMENT_REQUIRED);
    assert_eq!(refused.message, wire::message::ACKNOWLEDGEMENT_REQUIRED);
    server.request(wire::method::ACKNOWLEDGE, json!({})).await.expect("acknowledge");

    let result = compact(&mut server).await.expect("compact");
    assert!(result.compacted);
    assert_eq!((result.summarized_turns, result.kept_turns), (1, 1));
    let turn = chat(&mut server, "Is milk on the list now?").await;
    end_of(&mut server, &turn).await;
    let input = input_of(&mock.requests().pop().expect("a request").body);
    assert_eq!(
        input[..4],
        [
            "summary:We are shopping.",
            "user: Add milk to shopping.txt.",
            "function_call call_1",
            "function_call_output call_1 unknown",
        ]
    );
    assert!(input[4].starts_with("assistant: Mino runtime notice: the previous turn ended with status interrupted"));
    assert_eq!(input[5..], ["user: Is milk on the list now?"]);
    assert_eq!(std::fs::read_to_string(cwd.join("shopping.txt")).expect("ran once"), "milk\n", "never rerun");
}

#[tokio::test(flavor = "multi_thread")]
async fn context_length_exceeded_compacts_once_and_repeats_the_request_once_through_both_providers() {
    for (provider, too_long) in [
        ("responses", Reply::context_length_exceeded()),
        ("responses", Reply::Failed { code: "context_length_exceeded".into(), message: "Too long.".into() }),
        ("chat-completions", Reply::context_length_exceeded()),
        ("chat-completions", Reply::ErrorEvent { code: "context_length_exceeded".into(), message: "Too long.".into() }),
    ] {
        let home = tempfile::tempdir().expect("home");
        let cwd = work_dir(home.path());
        let mock = MockModel::start(vec![
            Reply::text("Paris."),
            too_long.clone(),
            Reply::summary("They asked about France."),
            Reply::text("Rome."),
        ])
        .await
        .expect("mock");
        let mut server = spawn(home.path(), &mock, &[("MINO_PROVIDER", provider)]).await;
        open(&mut server, &cwd).await;
        let first = chat(&mut server, "Capital of France?").await;
        end_of(&mut server, &first).await;
        let second = chat(&mut server, "Capital of Italy?").await;
        let notes = server.turn_notifications(&second, TIMEOUT).await;
        let ended: wire::TurnEnded = notes.last().expect("end").parse();
        assert_eq!(
            (ended.status, ended.reason.as_deref()),
            (wire::TurnStatus::Completed, None),
            "{provider} {too_long:?}"
        );
        let compaction: wire::CompactionEnded =
            notes.iter().find(|n| n.method == wire::method::COMPACTION_ENDED).expect("a compaction").parse();
        assert_eq!(compaction.trigger, wire::CompactionTrigger::ContextLengthExceeded);
        let requests = mock.requests();
        assert_eq!(requests.len(), 4, "one summary request, one repeat");
        assert!(is_summary_request(&requests[2]));
        assert!(!is_summary_request(&requests[3]), "the repeated request offers the tools again");
        if provider == "responses" {
            assert_eq!(input_of(&requests[3].body), ["summary:They asked about France.", "user: Capital of Italy?"]);
        } else {
            let messages = requests[3].body["messages"].as_array().expect("messages");
            let texts: Vec<&str> = messages.iter().filter_map(|m| m["content"].as_str()).collect();
            assert!(texts.iter().any(|t| t.ends_with("They asked about France.")), "{texts:?}");
            assert!(!texts.contains(&"Capital of France?"), "{texts:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn context_length_exceeded_again_after_compacting_ends_the_turn_failed_saying_what_to_do() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::text("Paris."),
        Reply::context_length_exceeded(),
        Reply::summary("They asked about France."),
        Reply::context_length_exceeded(),
        Reply::text("never asked"),
    ])
    .await
    .expect("mock");
    let mut server = spawn(home.path(), &mock, &[]).await;
    open(&mut server, &cwd).await;
    let first = chat(&mut server, "Capital of France?").await;
    end_of(&mut server, &first).await;
    let second = chat(&mut server, "Capital of Italy?").await;
    let ended = end_of(&mut server, &second).await;
    assert_eq!(ended.status, wire::TurnStatus::Failed);
    let reason = ended.reason.unwrap_or_default();
    assert!(reason.starts_with("The conversation is too long for the model's context window"), "{reason}");
    assert!(reason.contains("Start a new session (/new"), "{reason}");
    assert_eq!(mock.requests().len(), 4, "one compaction and one repeat, no more");
    // The turn's end is on file, with the same reason.
    let journal = session_files(home.path()).pop().expect("journal");
    let end = journal_records(&journal).into_iter().rfind(|r| r["kind"] == "turn_end").expect("turn_end");
    assert_eq!(end["reason"].as_str(), Some(reason.as_str()));
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_during_the_summary_request_the_session_is_as_it_was() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::text("Paris."),
        Reply::Stall { deltas: vec!["They asked".into()], stall_ms: Some(60_000) },
    ])
    .await
    .expect("mock");
    let mut first = spawn(home.path(), &mock, &[]).await;
    open(&mut first, &cwd).await;
    let turn = chat(&mut first, "Capital of France?").await;
    end_of(&mut first, &turn).await;
    let journal = session_files(home.path()).pop().expect("journal");
    let before = std::fs::read(&journal).expect("journal");
    first.send_message(&json!({"jsonrpc": "2.0", "id": 1000, "method": wire::method::COMPACT, "params": {}})).await;
    mock.wait_for_requests(2, TIMEOUT).await;
    first.kill().await;
    assert_eq!(std::fs::read(&journal).expect("journal"), before, "not a byte written");

    mock.reset();
    mock.push(Reply::text("Rome."));
    let mut second = spawn(home.path(), &mock, &[]).await;
    let recovery = open(&mut second, &cwd).await;
    assert!(recovery.turns.is_empty() && !recovery.acknowledgement_required);
    let turn = chat(&mut second, "Capital of Italy?").await;
    end_of(&mut second, &turn).await;
    assert_eq!(
        input_of(&mock.requests()[0].body),
        ["user: Capital of France?", "assistant: Paris.", "user: Capital of Italy?"]
    );
}

/// Compacts with `failpoint` set to panic (the server aborts), then reopens
/// the session with a clean server and asks one more question; returns that
/// question's input and the number of compaction records on file.
async fn crash_compacting_at(failpoint: &str) -> Option<(Vec<String>, usize)> {
    let Some(bin) = failpoints_server_bin() else {
        eprintln!("skipped: set MINO_E2E_FAILPOINTS=1 (or MINO_SERVER_FAILPOINTS_BIN) to run the failpoint tests");
        return None;
    };
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock =
        MockModel::start(vec![Reply::text("Paris."), Reply::summary("They asked about France.")]).await.expect("mock");
    let mut first = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: Some(bin),
        failpoints: Some(format!("{failpoint}=panic")),
        ..Default::default()
    })
    .await;
    first.initialize(&options_in(&cwd)).await.expect("initialize");
    let turn = chat(&mut first, "Capital of France?").await;
    end_of(&mut first, &turn).await;
    first.send_message(&json!({"jsonrpc": "2.0", "id": 1000, "method": wire::method::COMPACT, "params": {}})).await;
    let status = first.wait(TIMEOUT).await;
    assert!(!status.success(), "the failpoint crashed the server: {status:?}");
    assert!(first.stderr().contains(failpoint), "the failpoint fired: {}", first.stderr());

    mock.reset();
    mock.push(Reply::text("Rome."));
    let mut second = spawn(home.path(), &mock, &[]).await;
    let recovery = open(&mut second, &cwd).await;
    assert!(recovery.turns.is_empty(), "no turn was open: nothing to recover");
    let turn = chat(&mut second, "Capital of Italy?").await;
    assert_eq!(end_of(&mut second, &turn).await.status, wire::TurnStatus::Completed);
    let journal = session_files(home.path()).pop().expect("journal");
    Some((input_of(&mock.requests()[0].body), count_kind(&journal, "compaction")))
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_before_the_compaction_record_leaves_the_session_as_it_was() {
    let Some((input, records)) = crash_compacting_at("compaction::before_record").await else { return };
    assert_eq!(records, 0);
    assert_eq!(input, ["user: Capital of France?", "assistant: Paris.", "user: Capital of Italy?"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn crash_after_the_compaction_record_was_synced_leaves_the_session_compacted() {
    let Some((input, records)) = crash_compacting_at("compaction::after_record_sync").await else { return };
    assert_eq!(records, 1);
    assert_eq!(input, ["summary:They asked about France.", "user: Capital of Italy?"]);
}

/// The mock's `mino/retrying` notifications of a turn.
fn retries(notes: &[mino_e2e::Notification]) -> Vec<wire::Retrying> {
    notes.iter().filter(|n| n.method == wire::method::RETRYING).map(|n| n.parse()).collect()
}

fn compaction_triggers(notes: &[mino_e2e::Notification]) -> Vec<wire::CompactionTrigger> {
    notes
        .iter()
        .filter(|n| n.method == wire::method::COMPACTION_STARTED)
        .map(|n| n.parse::<wire::CompactionStarted>().trigger)
        .collect()
}

const LOCAL: [(&str, &str); 1] = [("MINO_PROVIDER", "chat-completions")];

/// A local server that reports no usage (llama-cpp-python): Mino sizes
/// the request about to be sent (from its bytes: the mock has no tokenize
/// endpoint) and compacts before the window is reached. Before, with no
/// usage there was never an automatic compaction.
#[tokio::test(flavor = "multi_thread")]
async fn without_usage_the_request_size_triggers_compaction_before_the_window() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::local_text("Paris."),
        Reply::local_text("They asked about France."),
        Reply::local_text("Noted."),
    ])
    .await
    .expect("mock");
    let env = [LOCAL[0], ("MINO_CONTEXT_WINDOW", "20000"), ("MINO_COMPACT_THRESHOLD", "0.8")];
    let mut server = spawn(home.path(), &mock, &env).await;
    open(&mut server, &cwd).await;
    let first = chat(&mut server, "Capital of France?").await;
    let notes = server.turn_notifications(&first, TIMEOUT).await;
    assert!(compaction_triggers(&notes).is_empty(), "a small request does not compact");
    // About 20,000 estimated tokens (a token per three bytes): past 80 % of the window.
    let long = format!("Remember this: {}", "jam and tea. ".repeat(5000));
    let second = chat(&mut server, &long).await;
    let notes = server.turn_notifications(&second, TIMEOUT).await;
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}");
    assert_eq!(compaction_triggers(&notes), [wire::CompactionTrigger::Auto]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(is_summary_request(&requests[1]), "the summary request came before the turn's request");
    let texts: Vec<String> = requests[2].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert!(texts.iter().any(|t| t.ends_with("They asked about France.")), "{texts:?}");
    assert!(!texts.iter().any(|t| t == "Capital of France?"), "{texts:?}");
}

/// `finish_reason: "length"` with no output limit sent is the window
/// filling up, not `max_output_tokens`: the turn compacts, says in
/// `mino/retrying` that the streamed text is void, asks again and
/// completes. Before, the turn failed "the model's answer was cut short
/// (max_output_tokens)".
#[tokio::test(flavor = "multi_thread")]
async fn a_length_stop_without_an_output_limit_is_a_full_window_and_compacts() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock = MockModel::start(vec![
        Reply::local_text("Paris."),
        Reply::LengthStop { deltas: vec!["Rome ".into(), "is".into()] },
        Reply::local_text("They asked about France."),
        Reply::local_text("Rome."),
    ])
    .await
    .expect("mock");
    let mut server = spawn(home.path(), &mock, &LOCAL).await;
    open(&mut server, &cwd).await;
    let first = chat(&mut server, "Capital of France?").await;
    end_of(&mut server, &first).await;
    let second = chat(&mut server, "Capital of Italy?").await;
    let notes = server.turn_notifications(&second, TIMEOUT).await;
    let ended: wire::TurnEnded = notes.last().expect("end").parse();
    assert_eq!((ended.status, ended.text.as_deref()), (wire::TurnStatus::Completed, Some("Rome.")), "{ended:?}");
    assert_eq!(compaction_triggers(&notes), [wire::CompactionTrigger::ContextLengthExceeded]);
    let retried = retries(&notes);
    assert_eq!(retried.len(), 1, "{retried:?}");
    assert!(retried[0].reason.contains("context window filled up"), "{}", retried[0].reason);
    assert!(mock.requests().iter().all(|r| r.body.get("max_tokens").is_none()), "no output limit is sent");
}

/// With nothing to compact, a length stop ends the turn saying the window
/// is full, never `max_output_tokens`.
#[tokio::test(flavor = "multi_thread")]
async fn a_length_stop_with_nothing_to_compact_is_reported_as_a_full_window() {
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mock =
        MockModel::start(vec![Reply::LengthStop { deltas: vec!["Once ".into(), "upon".into()] }]).await.expect("mock");
    let mut server = spawn(home.path(), &mock, &LOCAL).await;
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Tell me a story.").await;
    let ended = end_of(&mut server, &turn).await;
    assert_eq!(ended.status, wire::TurnStatus::Failed);
    let reason = ended.reason.unwrap_or_default();
    assert!(reason.contains("context window is full"), "{reason}");
    assert!(reason.contains("not max_output_tokens"), "{reason}");
    assert_eq!(mock.requests().len(), 1);
}

/// llama.cpp's `llama-server` refuses a long prompt with a 400 that names
/// the context but has no `context_length_exceeded` code; and
/// llama-cpp-python answers an empty stream, whose unstreamed repeat says
/// `context_length_exceeded`. Both compact and repeat the request. Before,
/// the first failed the turn as a rejected request and the second as a cut
/// stream after five attempts.
#[tokio::test(flavor = "multi_thread")]
async fn a_400_naming_the_context_and_an_empty_stream_of_an_oversized_request_compact() {
    let too_long = Reply::http_error(
        400,
        "context_length_exceeded",
        "This model's maximum context length is 1024 tokens. However, you requested 1300 tokens.",
    );
    for (name, refusal) in [
        ("400 naming the context", vec![Reply::context_size_exceeded()]),
        ("empty stream", vec![Reply::EmptyStream, too_long]),
    ] {
        let home = tempfile::tempdir().expect("home");
        let cwd = work_dir(home.path());
        let mut script = vec![Reply::local_text("Paris.")];
        script.extend(refusal.clone());
        script.extend([Reply::local_text("They asked about France."), Reply::local_text("Rome.")]);
        let mock = MockModel::start(script).await.expect("mock");
        let mut server = spawn(home.path(), &mock, &LOCAL).await;
        open(&mut server, &cwd).await;
        let first = chat(&mut server, "Capital of France?").await;
        end_of(&mut server, &first).await;
        let second = chat(&mut server, "Capital of Italy?").await;
        let notes = server.turn_notifications(&second, TIMEOUT).await;
        let ended: wire::TurnEnded = notes.last().expect("end").parse();
        assert_eq!(ended.status, wire::TurnStatus::Completed, "{name}: {ended:?}");
        assert_eq!(compaction_triggers(&notes), [wire::CompactionTrigger::ContextLengthExceeded], "{name}");
        assert!(retries(&notes).is_empty(), "{name}: an overflow is not a transient failure");
        // The window the refusal stated is the model's from now on.
        let list: wire::ModelsListResult = server.call(wire::method::MODELS_LIST, &json!({})).await.expect("models");
        let current = list.models.iter().find(|m| m.id == list.current).expect("current");
        assert_eq!(current.context_window, Some(1024), "{name}: {list:?}");
    }
}
