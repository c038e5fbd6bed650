//! Compaction through the agent, against the mock model over real HTTP on
//! loopback, through both providers: on demand, automatically past the
//! threshold, and once after `context_length_exceeded`.

use std::time::Duration;

use mino_core::agent::Events;
use mino_core::agent::{Agent, AgentEvent, CompactionOutcome, TurnLimits};
use mino_core::bash::{BashTool, Limits};
use mino_core::compaction::{Trigger, SUMMARY_INSTRUCTION, SUMMARY_PREFIX};
use mino_core::config::{CompactionSettings, CompactionTable};
use mino_core::model::{ModelClient, ModelConfig, Provider, RetryPolicy};
use mino_core::{MinoHome, Session, TurnStatus};
use mino_mock_model::{MockModel, Reply};
use serde_json::Value;

const SUPERVISOR: &str = env!("CARGO_BIN_EXE_mino-supervisor");

struct Harness {
    _dir: tempfile::TempDir,
    home: MinoHome,
    session_id: String,
    mock: MockModel,
    agent: Agent,
    events: Events,
}

async fn harness(provider: Provider, script: Vec<Reply>) -> Harness {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let home = MinoHome::new(dir.path().join("home"));
    let session = Session::create(&home, &cwd).expect("session");
    let session_id = session.id().to_string();
    let mock = MockModel::start(script).await.expect("mock");
    let config = ModelConfig {
        base_url: mock.base_url(),
        api_key: Some("sk-test".into()),
        model: "test-model".into(),
        retry: RetryPolicy {
            max_retries: 1,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
        },
        stall_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
    };
    let model = ModelClient::with_provider(provider, config).expect("client");
    let bash = BashTool::new(cwd, Limits::default(), SUPERVISOR.into());
    let (agent, events) = Agent::new(session, model, bash, "Be careful.".into(), TurnLimits::default());
    Harness { _dir: dir, home, session_id, mock, agent, events }
}

impl Harness {
    async fn next(&mut self) -> AgentEvent {
        tokio::time::timeout(Duration::from_secs(20), self.events.recv())
            .await
            .expect("an event within 20 s")
            .expect("events open")
            .event
    }

    /// A turn, to its end: every event.
    async fn turn(&mut self, text: &str) -> Vec<AgentEvent> {
        self.agent.chat(text).await.expect("chat");
        let mut events = Vec::new();
        loop {
            let event = self.next().await;
            let end = matches!(event, AgentEvent::TurnEnded { .. });
            events.push(event);
            if end {
                return events;
            }
        }
    }

    /// The text of every message of request `n`'s input (Responses items or
    /// Chat Completions messages), in order.
    fn texts_of_request(&self, n: usize) -> Vec<String> {
        let body = &self.mock.requests()[n].body;
        let items = body.get("input").or_else(|| body.get("messages")).and_then(Value::as_array).cloned();
        items
            .unwrap_or_default()
            .iter()
            .filter_map(|item| match item.get("content") {
                Some(Value::String(text)) => Some(text.clone()),
                Some(Value::Array(parts)) => {
                    parts.first().and_then(|p| p.get("text")).and_then(Value::as_str).map(str::to_string)
                }
                _ => None,
            })
            .filter(|text| text != "Be careful.")
            .collect()
    }
}

fn end(events: &[AgentEvent]) -> (TurnStatus, Option<String>) {
    match events.last() {
        Some(AgentEvent::TurnEnded { status, reason, .. }) => (*status, reason.clone()),
        other => panic!("not an end: {other:?}"),
    }
}

fn compactions(events: &[AgentEvent]) -> Vec<(Trigger, CompactionOutcome)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CompactionEnded { trigger, outcome, .. } => Some((*trigger, outcome.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn on_demand_the_next_request_holds_the_summary_and_not_the_old_turns() {
    for provider in [Provider::Responses, Provider::ChatCompletions] {
        let mut h = harness(
            provider,
            vec![
                Reply::text("Paris."),
                Reply::text("Rome."),
                Reply::text("They asked for two capitals: Paris and Rome."),
                Reply::text("Madrid."),
            ],
        )
        .await;
        h.turn("Capital of France?").await;
        h.turn("Capital of Italy?").await;
        let outcome = h.agent.compact().await.expect("compact");
        assert!(outcome.compacted, "{outcome:?}");
        assert_eq!((outcome.summarized_turns, outcome.kept_turns), (2, 0));
        assert_eq!(outcome.through_turn_id.as_deref(), Some("turn-2"));
        assert!(matches!(h.next().await, AgentEvent::CompactionStarted { trigger: Trigger::Manual, turn_id: None }));
        assert!(matches!(h.next().await, AgentEvent::CompactionEnded { trigger: Trigger::Manual, .. }));

        // The summary request: the conversation, the instruction, no tools.
        let summary_request = &h.mock.requests()[2].body;
        assert!(summary_request.get("tools").is_none(), "{provider:?}: {summary_request}");
        let texts = h.texts_of_request(2);
        assert_eq!(texts.first().map(String::as_str), Some("Capital of France?"));
        assert_eq!(texts.last().map(String::as_str), Some(SUMMARY_INSTRUCTION));

        h.turn("Capital of Spain?").await;
        let texts = h.texts_of_request(3);
        assert_eq!(
            texts,
            [format!("{SUMMARY_PREFIX}They asked for two capitals: Paris and Rome."), "Capital of Spain?".into()],
            "{provider:?}"
        );

        // Reopened: the record is on file, history keeps every turn.
        let Harness { _dir: dir, home, session_id, agent, .. } = h;
        drop(agent);
        let (session, _) = Session::open(&home, &session_id).expect("reopen");
        assert_eq!(session.transcript().turns.len(), 3);
        let context = session.context();
        assert_eq!(context.len(), 3, "summary, question, answer: {context:?}");
        drop(dir);
    }
}

#[tokio::test]
async fn nothing_to_compact_changes_nothing() {
    let h = harness(Provider::Responses, vec![]).await;
    let outcome = h.agent.compact().await.expect("compact");
    assert!(!outcome.compacted);
    assert!(outcome.reason.unwrap_or_default().contains("nothing to compact"));
    assert!(h.mock.requests().is_empty(), "no summary request");
}

#[tokio::test]
async fn past_the_threshold_the_next_turn_compacts_before_its_first_request() {
    let mut h =
        harness(Provider::Responses, vec![Reply::text("Paris."), Reply::text("Summary: Paris."), Reply::text("Rome.")])
            .await;
    // The mock reports about a token per four bytes of request: far past 1.
    h.agent.set_compaction(CompactionSettings { context_window: 10, threshold: 0.8 });
    let first = h.turn("Capital of France?").await;
    assert!(compactions(&first).is_empty(), "nothing to compact before the first turn");
    let second = h.turn("Capital of Italy?").await;
    assert_eq!(end(&second).0, TurnStatus::Completed);
    let done = compactions(&second);
    assert_eq!(done.len(), 1, "{second:?}");
    assert_eq!(done[0].0, Trigger::Auto);
    assert!(done[0].1.compacted);
    assert_eq!(h.texts_of_request(2), [format!("{SUMMARY_PREFIX}Summary: Paris."), "Capital of Italy?".into()]);
}

#[tokio::test]
async fn a_session_switched_to_a_small_window_model_compacts_past_that_models_threshold() {
    let mut h = harness(
        Provider::Responses,
        vec![
            Reply::text("Paris."),
            Reply::text("Berlin."),
            Reply::text("Summary: Paris, Berlin."),
            Reply::text("Rome."),
        ],
    )
    .await;
    // The configured model's window is far too large to compact; the small
    // model's is far past what the mock reports (about a token per four bytes).
    let table = CompactionTable::default()
        .with_model("test-model", CompactionSettings { context_window: 10_000_000, threshold: 0.8 })
        .with_model("small-model", CompactionSettings { context_window: 10, threshold: 0.8 });
    h.agent.set_compaction(table);
    h.turn("Capital of France?").await;
    let second = h.turn("Capital of Germany?").await;
    assert!(compactions(&second).is_empty(), "the configured model's window is not reached: {second:?}");
    h.agent.select_model("small-model").await.expect("select");
    let third = h.turn("Capital of Italy?").await;
    assert_eq!(end(&third).0, TurnStatus::Completed);
    let done = compactions(&third);
    assert_eq!(done.len(), 1, "{third:?}");
    assert_eq!(done[0].0, Trigger::Auto);
    assert!(done[0].1.compacted);
    assert_eq!(h.texts_of_request(3), [format!("{SUMMARY_PREFIX}Summary: Paris, Berlin."), "Capital of Italy?".into()]);
}

#[tokio::test]
async fn context_length_exceeded_compacts_once_and_repeats_the_request_once() {
    for (provider, too_long) in [
        (Provider::Responses, Reply::Failed { code: "context_length_exceeded".into(), message: "Too long.".into() }),
        (
            Provider::ChatCompletions,
            Reply::ErrorEvent { code: "context_length_exceeded".into(), message: "Too long.".into() },
        ),
        (Provider::Responses, Reply::http_error(400, "context_length_exceeded", "Too long.")),
    ] {
        let mut h = harness(
            provider,
            vec![Reply::text("Paris."), too_long.clone(), Reply::text("Summary: Paris."), Reply::text("Rome.")],
        )
        .await;
        h.turn("Capital of France?").await;
        let events = h.turn("Capital of Italy?").await;
        assert_eq!(end(&events), (TurnStatus::Completed, None), "{provider:?} {too_long:?}");
        let done = compactions(&events);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].0, Trigger::ContextLengthExceeded);
        assert_eq!(h.mock.requests().len(), 4);
        assert_eq!(h.texts_of_request(3), [format!("{SUMMARY_PREFIX}Summary: Paris."), "Capital of Italy?".into()]);
    }
}

#[tokio::test]
async fn context_length_exceeded_twice_ends_the_turn_failed_saying_what_to_do() {
    let too_long = || Reply::http_error(400, "context_length_exceeded", "Too long.");
    let mut h =
        harness(Provider::Responses, vec![Reply::text("Paris."), too_long(), Reply::text("Summary."), too_long()])
            .await;
    h.turn("Capital of France?").await;
    let events = h.turn("Capital of Italy?").await;
    let (status, reason) = end(&events);
    assert_eq!(status, TurnStatus::Failed);
    let reason = reason.unwrap_or_default();
    assert!(reason.contains("even after Mino compacted") && reason.contains("/new"), "{reason}");
    assert_eq!(h.mock.requests().len(), 4, "one compaction, one repeat, nothing more");

    // With nothing earlier to compact, no summary is asked for at all.
    let mut h = harness(Provider::Responses, vec![too_long()]).await;
    let events = h.turn("A very long question").await;
    let (status, reason) = end(&events);
    assert_eq!(status, TurnStatus::Failed);
    assert!(reason.unwrap_or_default().contains("nothing earlier in the conversation to compact"));
    assert_eq!(h.mock.requests().len(), 1);
}

#[tokio::test]
async fn a_failed_summary_request_leaves_the_conversation_as_it_was() {
    let mut h = harness(
        Provider::Responses,
        vec![Reply::text("Paris."), Reply::http_error(401, "invalid_api_key", "no"), Reply::text("Rome.")],
    )
    .await;
    h.turn("Capital of France?").await;
    let outcome = h.agent.compact().await.expect("compact answers");
    assert!(!outcome.compacted);
    assert!(outcome.reason.unwrap_or_default().contains("left as it was"));
    h.turn("Capital of Italy?").await;
    assert_eq!(h.texts_of_request(2), ["Capital of France?", "Paris.", "Capital of Italy?"]);
}

/// The `compaction` records in the session's file (the agent holds the
/// session's lock, so the file is read as it is on disk).
fn compactions_on_file(h: &Harness) -> usize {
    let file = h.home.session_path(&h.session_id).expect("the session's path");
    let text = std::fs::read_to_string(&file).expect("the journal");
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["kind"] == "compaction")
        .count()
}

#[tokio::test]
async fn a_cancelled_compaction_abandons_the_summary_request_and_writes_nothing() {
    let mut h = harness(
        Provider::Responses,
        vec![
            Reply::text("Paris."),
            Reply::Stall { deltas: vec!["They asked".into()], stall_ms: None },
            Reply::text("Rome."),
        ],
    )
    .await;
    h.turn("Capital of France?").await;
    assert!(!h.agent.cancel_compaction(), "no compaction runs yet");
    let agent = h.agent.clone();
    let compacting = tokio::spawn(async move { agent.compact().await });
    assert!(matches!(h.next().await, AgentEvent::CompactionStarted { trigger: Trigger::Manual, .. }));
    // The summary request is at the model, which answers nothing more.
    h.mock.wait_for_requests(2, Duration::from_secs(20)).await;
    assert!(h.agent.cancel_compaction(), "the running compaction is cancelled");
    let outcome = compacting.await.expect("joined").expect("compact answers");
    assert!(!outcome.compacted, "{outcome:?}");
    assert_eq!(outcome.reason.as_deref(), Some(mino_core::agent::COMPACTION_CANCELLED));
    assert!(matches!(h.next().await, AgentEvent::CompactionEnded { trigger: Trigger::Manual, .. }));
    assert_eq!(compactions_on_file(&h), 0, "no compaction record");

    // The session is as before: free for a turn whose request holds the old turns.
    h.turn("Capital of Italy?").await;
    assert_eq!(h.texts_of_request(2), ["Capital of France?", "Paris.", "Capital of Italy?"]);
}

#[tokio::test]
async fn cancelling_a_turn_during_its_automatic_compaction_ends_it_cancelled_without_a_record() {
    let mut h = harness(
        Provider::Responses,
        vec![Reply::text("Paris."), Reply::Stall { deltas: vec![], stall_ms: None }, Reply::text("Rome.")],
    )
    .await;
    // Every request passes the threshold: the next turn compacts first.
    h.agent.set_compaction(CompactionSettings { context_window: 10, threshold: 0.1 });
    h.turn("Capital of France?").await;
    let turn_id = h.agent.chat("Capital of Italy?").await.expect("chat");
    h.mock.wait_for_requests(2, Duration::from_secs(20)).await;
    assert!(!h.agent.cancel_compaction(), "a turn's compaction is the turn's to cancel");
    h.agent.cancel(&turn_id).expect("cancel");
    let mut events = Vec::new();
    loop {
        let event = h.next().await;
        let end = matches!(event, AgentEvent::TurnEnded { .. });
        events.push(event);
        if end {
            break;
        }
    }
    assert_eq!(end(&events).0, TurnStatus::Cancelled);
    let ended = compactions(&events);
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].1.reason.as_deref(), Some(mino_core::agent::COMPACTION_CANCELLED));
    assert_eq!(compactions_on_file(&h), 0, "no compaction record");
    assert_eq!(h.mock.requests().len(), 2, "the turn's own request was never sent");
}
