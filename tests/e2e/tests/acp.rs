//! `mino-server --acp` driven by the `agent-client-protocol` crate's client
//! side over real stdio, against the mock model: initialize, a new session,
//! a prompt with an approved command, and the acknowledgement gate after a
//! real SIGKILL, an edit asked with its diff, `session/list`, the model
//! option and the slash commands, the approval mode and sandbox options,
//! `usage_update`, `session/close` and `session/resume`, and a line over the
//! input bound. (The official TypeScript SDK drives the same front door in
//! tests/acp, `scripts/test acp`.)

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, ContentBlock, InitializeRequest, ListSessionsRequest, LoadSessionRequest, NewSessionRequest,
    PromptRequest, PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    ResumeSessionRequest, SelectedPermissionOutcome, SessionNotification, SetSessionConfigOptionRequest,
    SetSessionModeRequest, StopReason, TextContent,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client, Responder, V1};
use mino_e2e::{server_bin, KILL_SERVER};
use mino_mock_model::{MockModel, Reply};
use serde_json::Value;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

const LIMIT: Duration = Duration::from_secs(60);
const UNKNOWN_OUTPUT: &str =
    "Execution was started but its result was not saved. The operation may have happened. Do not automatically retry it.";

/// What the client saw, and the answers it gives to permission requests
/// (option ids, in order; `None` answers `cancelled`).
#[derive(Default)]
struct Seen {
    updates: Vec<Value>,
    questions: Vec<Value>,
    answers: VecDeque<Option<&'static str>>,
}

type Shared = Arc<Mutex<Seen>>;

/// Runs `body` against a fresh `mino-server --acp` in `workspace` with `home`.
async fn with_server<R>(
    home: &Path,
    workspace: &Path,
    mock: &MockModel,
    seen: Shared,
    body: impl AsyncFnOnce(ConnectionTo<Agent>) -> Result<R, agent_client_protocol::Error>,
) -> (Result<R, agent_client_protocol::Error>, std::process::ExitStatus) {
    let mut child = tokio::process::Command::new(server_bin())
        .arg("--acp")
        .current_dir(workspace)
        .env("MINO_HOME", home)
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("MINO_MODEL", "mock-model")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mino-server --acp");
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let (on_update, on_question) = (seen.clone(), seen.clone());
    let result = Client
        .v1()
        .name("mino-acp-rust-test")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                on_update.lock().expect("seen").updates.push(serde_json::to_value(&n.update).expect("update json"));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |q: RequestPermissionRequest, responder: Responder<RequestPermissionResponse, V1>, _cx| {
                let answer = {
                    let mut seen = on_question.lock().expect("seen");
                    seen.questions.push(serde_json::to_value(&q).expect("question json"));
                    seen.answers.pop_front().expect("a permission answer was scripted")
                };
                let outcome = match answer {
                    Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, body);
    let result = tokio::time::timeout(LIMIT, result).await.expect("the ACP exchange finished in time");
    let status = tokio::time::timeout(LIMIT, async {
        // Closing stdin (the transport is dropped) ends the server.
        child.wait().await.expect("wait for mino-server")
    })
    .await
    .expect("mino-server exited");
    (result, status)
}

async fn open_new(cx: &ConnectionTo<Agent>, workspace: &Path) -> Result<String, agent_client_protocol::Error> {
    let init = cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    assert!(init.agent_capabilities.load_session, "loadSession is offered");
    let created = cx.send_request(NewSessionRequest::new(workspace)).block_task().await?;
    Ok(created.session_id.0.to_string())
}

async fn prompt(
    cx: &ConnectionTo<Agent>,
    session: &str,
    text: &str,
) -> Result<PromptResponse, agent_client_protocol::Error> {
    let blocks = vec![ContentBlock::Text(TextContent::new(text))];
    cx.send_request(PromptRequest::new(session.to_string(), blocks)).block_task().await
}

fn tool_updates(seen: &Shared) -> Vec<Value> {
    let seen = seen.lock().expect("seen");
    seen.updates
        .iter()
        .filter(|u| u["sessionUpdate"].as_str().is_some_and(|k| k.starts_with("tool_call")))
        .cloned()
        .collect()
}

fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let base = tempfile::tempdir().expect("tempdir");
    let (home, workspace) = (base.path().join("home"), base.path().join("workspace"));
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&workspace).expect("workspace");
    (base, home, workspace)
}

#[tokio::test]
async fn acp_prompt_runs_an_approved_command_and_ends_the_turn() {
    let (_base, home, workspace) = dirs();
    let mock = MockModel::start(vec![Reply::call("call_1", "echo hello > greeting.txt"), Reply::text("Done.")])
        .await
        .expect("mock model");
    let seen = Shared::default();
    seen.lock().expect("seen").answers.push_back(Some("allow"));
    let ws = workspace.clone();
    let (result, _) = with_server(&home, &workspace, &mock, seen.clone(), async move |cx| {
        let session = open_new(&cx, &ws).await?;
        prompt(&cx, &session, "Greet the file.").await
    })
    .await;
    assert_eq!(result.expect("prompt answered").stop_reason, StopReason::EndTurn);
    assert_eq!(std::fs::read_to_string(workspace.join("greeting.txt")).expect("the command ran"), "hello\n");
    let question = seen.lock().expect("seen").questions[0].clone();
    let kinds: Vec<&str> =
        question["options"].as_array().expect("options").iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(kinds, ["allow_once", "reject_once"], "not one plain command: no rule to offer always");
    let tools = tool_updates(&seen);
    let statuses: Vec<&str> = tools.iter().map(|u| u["status"].as_str().unwrap_or("pending")).collect();
    assert_eq!(statuses, ["pending", "in_progress", "completed"]);
    assert_eq!(tools[0]["title"], "echo hello > greeting.txt");
    assert_eq!(tools[0]["kind"], "execute");
    assert_eq!(tools[2]["rawOutput"]["minoResult"], "success");
}

#[tokio::test]
async fn acp_gate_after_sigkill_declines_then_acknowledges() {
    let (_base, home, workspace) = dirs();
    let command = format!("echo milk >> shopping.txt && {KILL_SERVER}");
    let mock = MockModel::start(vec![Reply::call("call_1", &command), Reply::text("It is on the list.")])
        .await
        .expect("mock model");

    // The approved command kills the server between tool_start and tool_result.
    let seen = Shared::default();
    seen.lock().expect("seen").answers.push_back(Some("allow"));
    let ws = workspace.clone();
    let (result, status) = with_server(&home, &workspace, &mock, seen, async move |cx| {
        let session = open_new(&cx, &ws).await?;
        let answered = prompt(&cx, &session, "Add milk to shopping.txt.").await;
        Ok((session, answered.is_ok()))
    })
    .await;
    let (session, answered) = result.expect("the exchange ran");
    assert!(!answered, "the prompt cannot be answered by a killed server");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL));

    // A new server: load shows the unknown call; "Not now" ends the prompt
    // (`end_turn`, not `refusal`) without reaching the model; "I understand"
    // acknowledges and the prompt runs.
    let seen = Shared::default();
    seen.lock().expect("seen").answers.extend([Some("not-now"), Some("acknowledge")]);
    let (ws, id) = (workspace.clone(), session.clone());
    let requests_before = mock.requests().len();
    let (result, _) = with_server(&home, &workspace, &mock, seen.clone(), async move |cx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
        cx.send_request(LoadSessionRequest::new(id.clone(), ws)).block_task().await?;
        // `/compact` asks no question and compacts nothing while the unknown result waits.
        let compact = prompt(&cx, &id, "/compact").await?;
        let refused = prompt(&cx, &id, "Is milk on the list now?").await?;
        let answered = prompt(&cx, &id, "Is milk on the list now?").await?;
        Ok((compact.stop_reason, refused.stop_reason, answered.stop_reason))
    })
    .await;
    let (compact, refused, answered) = result.expect("prompts answered");
    assert_eq!(compact, StopReason::EndTurn);
    let said: String = seen
        .lock()
        .expect("seen")
        .updates
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().filter(|_| u["sessionUpdate"] == "agent_message_chunk"))
        .collect();
    assert!(
        said.contains("[Mino: the conversation was not compacted: a command's result is unknown and waits for your acknowledgement"),
        "{said}"
    );
    assert_eq!(refused, StopReason::EndTurn, "the person declined: not the agent's refusal");
    assert!(said.contains("Nothing was sent to the model: the conversation waits until you acknowledge"), "{said}");
    assert_eq!(answered, StopReason::EndTurn);
    let loaded = tool_updates(&seen)[0].clone();
    assert_eq!(loaded["status"], "failed");
    assert_eq!(loaded["title"], format!("Result unknown: {command}"));
    assert_eq!(loaded["rawOutput"]["minoResult"], "unknown");
    assert_eq!(loaded["content"][0]["content"]["text"], UNKNOWN_OUTPUT);
    let questions = seen.lock().expect("seen").questions.clone();
    assert_eq!(questions.len(), 2, "one gate question per prompt");
    let gate = &questions[0]["toolCall"];
    assert_ne!(gate["toolCallId"], loaded["toolCallId"], "the gate is its own call, not the command's");
    assert_eq!(gate["kind"], "other");
    assert!(
        gate["title"].as_str().is_some_and(|t| t.starts_with("Acknowledge before Mino goes on: the result of")),
        "{gate}"
    );
    let names: Vec<&str> =
        questions[0]["options"].as_array().expect("options").iter().filter_map(|o| o["name"].as_str()).collect();
    assert_eq!(
        names,
        ["Not now", "Not yet: I will check what happened first", "I understand these commands may already have run"]
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), requests_before + 1, "only the acknowledged prompt reached the model");
    let input = requests.last().expect("a request").body["input"].to_string();
    assert_eq!(input.matches("Is milk on the list now?").count(), 1, "the refused question was never recorded");
    assert_eq!(std::fs::read_to_string(workspace.join("shopping.txt")).expect("ran once"), "milk\n");
}

#[tokio::test]
async fn acp_edit_is_asked_with_its_whole_file_diff_and_the_session_is_listed() {
    let (_base, home, workspace) = dirs();
    let workspace = workspace.canonicalize().expect("canonical workspace");
    let file = workspace.join("shopping.txt");
    std::fs::write(&file, "bread\nbutter\n").expect("write the list");
    let mock = MockModel::start(vec![
        Reply::edit_file("call_1", "shopping.txt", "butter\n", "butter\nmilk\n", false),
        Reply::text("Milk added."),
    ])
    .await
    .expect("mock model");
    let seen = Shared::default();
    seen.lock().expect("seen").answers.push_back(Some("allow"));
    let ws = workspace.clone();
    let (result, _) = with_server(&home, &workspace, &mock, seen.clone(), async move |cx| {
        let session = open_new(&cx, &ws).await?;
        let answer = prompt(&cx, &session, "Add milk after butter.").await?;
        let listed = cx.send_request(ListSessionsRequest::new().cwd(ws.clone())).block_task().await?;
        Ok((session, answer.stop_reason, listed))
    })
    .await;
    let (session, stop, listed) = result.expect("the exchange ran");
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(std::fs::read_to_string(&file).expect("edited"), "bread\nbutter\nmilk\n");
    let diff = serde_json::json!({
        "type": "diff", "path": file, "oldText": "bread\nbutter\n", "newText": "bread\nbutter\nmilk\n",
    });
    let question = seen.lock().expect("seen").questions[0]["toolCall"].clone();
    assert_eq!(question["kind"], "edit");
    assert_eq!(question["content"], serde_json::json!([diff]));
    assert_eq!(question["locations"], serde_json::json!([{ "path": file }]));
    let result = tool_updates(&seen).last().cloned().expect("a result");
    assert_eq!((result["status"].as_str(), result["kind"].as_str()), (Some("completed"), Some("edit")));
    assert_eq!(result["content"][0], diff);
    let ids: Vec<String> = listed.sessions.iter().map(|s| s.session_id.0.to_string()).collect();
    assert_eq!(ids, [session]);
    assert_eq!(listed.sessions[0].title.as_deref(), Some("Add milk after butter."));
    assert!(listed.sessions[0].updated_at.is_some(), "updatedAt is the last activity");
}

#[tokio::test]
async fn acp_line_over_the_bound_is_answered_and_the_next_request_is_served() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (_base, home, workspace) = dirs();
    let mut child = tokio::process::Command::new(server_bin())
        .arg("--acp")
        .current_dir(&workspace)
        .env("MINO_HOME", &home)
        .env("OPENAI_API_KEY", "test-key")
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn mino-server --acp");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let exchange = async {
        // A well-formed request, 9 MiB long, then a small one.
        let padding = "x".repeat(9 * 1024 * 1024);
        let huge = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": 1, "_meta": { "padding": padding } } });
        stdin.write_all(format!("{huge}\n").as_bytes()).await.expect("write the long line");
        let small = r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}"#;
        stdin.write_all(format!("{small}\n").as_bytes()).await.expect("write the next request");
        let mut answers = Vec::new();
        while answers.len() < 2 {
            let line = stdout.next_line().await.expect("read stdout").expect("the server answers");
            answers.push(serde_json::from_str::<Value>(&line).expect("a JSON line"));
        }
        answers
    };
    let answers = tokio::time::timeout(LIMIT, exchange).await.expect("answered in time");
    assert_eq!(answers[0]["id"], Value::Null, "the dropped line's id was never read");
    assert_eq!(answers[0]["error"]["code"], -32600);
    let message = answers[0]["error"]["message"].as_str().expect("a message");
    assert!(message.contains("at most 8388608 bytes (8 MiB) per line"), "{message}");
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(answers[1]["result"]["protocolVersion"], 1);
    drop(stdin);
    let status = tokio::time::timeout(LIMIT, child.wait()).await.expect("exited in time").expect("wait");
    assert!(status.success(), "{status}");
}

/// `allow_always` and `reject_always` grant session rules (journaled as
/// `rule` records): a later command or edit the allow rule covers runs
/// without a question (`tool_call` straight to `in_progress`), one the deny
/// rule covers is `failed` with the denial text, unasked.
#[tokio::test]
async fn acp_always_options_grant_session_rules_that_decide_later_calls() {
    let (_base, home, workspace) = dirs();
    let mock = MockModel::start(vec![
        Reply::call("c1", "echo one"),
        Reply::call("c2", "echo one more"),
        Reply::call("c3", "touch two.txt"),
        Reply::call("c4", "touch two.txt"),
        Reply::write_file("e5", "notes.md", "first\n"),
        Reply::write_file("e6", "notes.md", "second\n"),
        Reply::text("Done."),
    ])
    .await
    .expect("mock model");
    let seen = Shared::default();
    seen.lock().expect("seen").answers.extend([Some("allow-always"), Some("reject-always"), Some("allow-always")]);
    let ws = workspace.clone();
    let (result, _) = with_server(&home, &workspace, &mock, seen.clone(), async move |cx| {
        let session = open_new(&cx, &ws).await?;
        prompt(&cx, &session, "Go.").await
    })
    .await;
    assert_eq!(result.expect("prompt answered").stop_reason, StopReason::EndTurn);
    let questions = seen.lock().expect("seen").questions.clone();
    let titles: Vec<&str> = questions.iter().filter_map(|q| q["toolCall"]["title"].as_str()).collect();
    assert_eq!(titles.len(), 3, "c2, c4 and e6 were decided by rules: {titles:?}");
    let kinds: Vec<&str> =
        questions[0]["options"].as_array().expect("options").iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(kinds, ["allow_once", "reject_once", "allow_always", "reject_always"]);
    assert!(!workspace.join("two.txt").exists(), "the rejected command never ran");
    assert_eq!(std::fs::read_to_string(workspace.join("notes.md")).expect("written"), "second\n");

    // Unasked calls: straight to in_progress, or failed with the denial.
    // Status changes only (live output updates carry content alone).
    let tools: Vec<Value> = tool_updates(&seen)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "tool_call" || u.get("status").is_some())
        .collect();
    let statuses: Vec<&str> = tools.iter().map(|u| u["status"].as_str().unwrap_or("pending")).collect();
    assert_eq!(
        statuses,
        [
            "pending",
            "in_progress",
            "completed", // c1 asked
            "in_progress",
            "completed", // c2 by the rule
            "pending",
            "failed", // c3 asked, refused
            "failed", // c4 by the deny rule
            "pending",
            "in_progress",
            "completed", // e5 asked
            "in_progress",
            "completed", // e6 by the path rule
        ]
    );
    assert_eq!(tools[3]["sessionUpdate"], "tool_call");
    assert_eq!(tools[7]["content"][0]["content"]["text"], "Denied by a rule the user set: prefix \"touch two.txt\"");

    let journal = mino_e2e::session_files(&home).pop().expect("a session file");
    let records = mino_e2e::journal_records(&journal);
    let rules: Vec<(String, String, Option<String>)> = records
        .iter()
        .filter(|r| r["kind"] == "rule")
        .map(|r| {
            let rule = &r["rule"];
            let text = rule["command"].as_str().or(rule["pattern"].as_str()).unwrap_or_default();
            (
                rule["kind"].as_str().unwrap_or_default().to_owned(),
                text.to_owned(),
                rule["effect"].as_str().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(
        rules,
        [
            ("prefix".into(), "echo one".into(), None),
            ("prefix".into(), "touch two.txt".into(), Some("deny".into())),
            ("path".into(), "notes.md".into(), None)
        ]
    );
    let c4 = records.iter().find(|r| r["kind"] == "approval" && r["call_id"] == "c4").expect("c4 decided");
    assert_eq!((c4["decision"].as_str(), c4["decided_by"].as_str()), (Some("denied"), Some("rule")));
}

/// The model is a session config option offered from the service's list;
/// choosing one makes the next request name it. `/rules` and `/compact` are
/// answered by Mino as the agent's message, never sent to the model.
#[tokio::test]
async fn acp_model_option_chooses_the_next_requests_model_and_commands_stay_off_the_wire() {
    let (_base, home, workspace) = dirs();
    let mock = MockModel::start(vec![Reply::text("Hello from the large model.")]).await.expect("mock model");
    let seen = Shared::default();
    let ws = workspace.clone();
    let (result, _) = with_server(&home, &workspace, &mock, seen.clone(), async move |cx| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
        let created = cx.send_request(NewSessionRequest::new(ws)).block_task().await?;
        let session = created.session_id.0.to_string();
        let unknown = cx
            .send_request(SetSessionConfigOptionRequest::new(session.clone(), "model", "gpt-nothing"))
            .block_task()
            .await;
        let chosen = cx
            .send_request(SetSessionConfigOptionRequest::new(session.clone(), "model", "mock-model-large"))
            .block_task()
            .await?;
        let rules = prompt(&cx, &session, "/rules").await?;
        let compact = prompt(&cx, &session, "/compact").await?;
        let answer = prompt(&cx, &session, "Hello?").await?;
        Ok((created, unknown, chosen, [rules.stop_reason, compact.stop_reason, answer.stop_reason]))
    })
    .await;
    let (created, unknown, chosen, stops) = result.expect("the exchange ran");
    let offered = serde_json::to_value(&created.config_options).expect("json");
    assert_eq!(offered[0]["id"], "model");
    assert_eq!(offered[0]["category"], "model");
    assert_eq!(offered[0]["currentValue"], "mock-model");
    // Opening waits on the service's list at most 300 ms: on a busy machine
    // the answer offers the configured model and the list follows as a
    // `config_option_update` (which the later prompts waited past).
    let listed = if offered[0]["options"].as_array().is_some_and(|o| o.len() == 2) {
        offered.clone()
    } else {
        let seen = seen.lock().expect("seen");
        let update = seen.updates.iter().find(|u| u["sessionUpdate"] == "config_option_update");
        update.expect("the service's list, later")["configOptions"].clone()
    };
    assert_eq!(listed[0]["options"][1]["value"], "mock-model-large");
    let refused = unknown.expect_err("an unknown model is refused");
    assert_eq!(i32::from(refused.code), -32602);
    assert!(refused.message.ends_with("choose one of: mock-model, mock-model-large"), "{}", refused.message);
    assert_eq!(serde_json::to_value(&chosen.config_options).expect("json")[0]["currentValue"], "mock-model-large");
    assert_eq!(stops, [StopReason::EndTurn; 3]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "only the question reached the model");
    assert_eq!(requests[0].body["model"], "mock-model-large");
    let text: String = seen
        .lock()
        .expect("seen")
        .updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
        .collect();
    assert!(text.starts_with("No approval rules are in force in this session"), "{text}");
    assert!(text.contains("[Mino: the conversation was not compacted: nothing to compact"), "{text}");
}

/// An option the permission request did not offer approves nothing: an
/// edit outside the workspace is offered only "allow" and "reject", and an
/// answer of `allow-always` leaves the file unwritten, the call declined
/// with a reason naming the option.
#[tokio::test]
async fn acp_an_option_the_request_did_not_offer_approves_nothing() {
    let (base, home, workspace) = dirs();
    let outside = base.path().canonicalize().expect("canonical base").join("outside.desktop");
    let mock = MockModel::start(vec![
        Reply::write_file("call_1", &outside.display().to_string(), "[Desktop Entry]\n"),
        Reply::text("Not written."),
    ])
    .await
    .expect("mock model");
    let seen = Shared::default();
    seen.lock().expect("seen").answers.push_back(Some("allow-always"));
    let ws = workspace.clone();
    let (result, _) = with_server(&home, &workspace, &mock, seen.clone(), async move |cx| {
        let session = open_new(&cx, &ws).await?;
        Ok(prompt(&cx, &session, "Write the launcher.").await?.stop_reason)
    })
    .await;
    assert_eq!(result.expect("the exchange ran"), StopReason::EndTurn);
    let question = seen.lock().expect("seen").questions[0].clone();
    let offered: Vec<&str> =
        question["options"].as_array().expect("options").iter().filter_map(|o| o["optionId"].as_str()).collect();
    assert!(!offered.contains(&"allow-always"), "{offered:?}");
    assert!(!outside.exists(), "an option the request did not offer approved the edit");
    let result = tool_updates(&seen).last().cloned().expect("a result");
    assert_eq!(result["status"], "failed", "{result}");
    assert!(
        result.to_string().contains(r#"option \"allow-always\", which this permission request did not offer"#),
        "{result}"
    );
    let input = mock.requests().last().expect("a request").body["input"].to_string();
    assert!(input.contains("did not offer"), "the model hears why: {input}");
}

/// `mino-server --acp` over a raw pipe, one JSON message per line, so that a
/// test can write what no SDK would (a key named twice).
struct RawAcp {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl RawAcp {
    fn spawn(home: &Path, workspace: &Path, mock: &MockModel) -> RawAcp {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(server_bin())
            .arg("--acp")
            .current_dir(workspace)
            .env("MINO_HOME", home)
            .env("OPENAI_API_KEY", "test-key")
            .env("OPENAI_BASE_URL", mock.base_url())
            .env("MINO_MODEL", "mock-model")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn mino-server --acp");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = tokio::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        RawAcp { child, stdin, stdout }
    }

    /// Closes stdin and waits for the server to exit.
    async fn close(self) {
        let RawAcp { mut child, stdin, stdout } = self;
        drop(stdin);
        let status = tokio::time::timeout(LIMIT, child.wait()).await.expect("exited in time").expect("wait");
        assert!(status.success(), "{status}");
        drop(stdout);
    }

    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.expect("write a line");
    }

    /// The next message; `None` once the server's output ends.
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(LIMIT, self.stdout.next_line()).await.expect("a line in time").ok()??;
        Some(serde_json::from_str(&line).expect("a JSON line"))
    }

    /// Messages until one `matches`, which is returned with those before it.
    async fn until(&mut self, matches: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let message = self.next().await.expect("the server writes on");
            if matches(&message) {
                return (message, before);
            }
            before.push(message);
        }
    }

    /// `initialize` (with `capabilities` as the client's), then `session/new` or `session/load`.
    async fn open(&mut self, workspace: &Path, load: Option<&str>, capabilities: Value) -> String {
        let initialize = serde_json::json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": 1, "clientCapabilities": capabilities } });
        self.send(&initialize.to_string()).await;
        self.until(|m| m["id"] == 0).await;
        let (method, params) = match load {
            None => ("session/new", serde_json::json!({ "cwd": workspace, "mcpServers": [] })),
            Some(id) => ("session/load", serde_json::json!({ "sessionId": id, "cwd": workspace, "mcpServers": [] })),
        };
        self.send(&serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string())
            .await;
        let (opened, _) = self.until(|m| m["id"] == 1).await;
        assert!(opened.get("error").is_none(), "{opened}");
        opened["result"]["sessionId"].as_str().map(str::to_string).or(load.map(str::to_string)).expect("a session id")
    }

    async fn prompt(&mut self, id: u64, session: &str, text: &str) {
        let prompt = serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": { "sessionId": session, "prompt": [{ "type": "text", "text": text }] } });
        self.send(&prompt.to_string()).await;
    }
}

fn names_key_twice(message: &Value, key: &str) -> bool {
    message["error"]["message"].as_str().is_some_and(|m| m.contains(&format!("duplicate key \"{key}\"")))
}

/// A permission answer naming `optionId` twice (`reject`, then `allow`:
/// serde keeps the last) is refused: the command does not run, the client
/// hears an error naming the key, and the turn is cancelled. The gate's
/// answer naming `optionId` twice (`not-now`, then `acknowledge`) is
/// refused too: the prompt's answer is an error naming the key, nothing
/// is acknowledged; so is the gate's form answer naming `answer` twice
/// (`not-now`, then `acknowledge`), and the next real acknowledgement opens
/// the gate.
#[tokio::test]
async fn acp_answers_naming_a_key_twice_are_refused_and_decide_nothing() {
    let (_base, home, workspace) = dirs();
    let mock = MockModel::start(vec![
        Reply::call("call_1", "touch approved-by-a-duplicate.txt"),
        Reply::call("call_2", KILL_SERVER),
        Reply::text("After the gate."),
    ])
    .await
    .expect("mock model");
    let mut acp = RawAcp::spawn(&home, &workspace, &mock);
    let session = acp.open(&workspace, None, serde_json::json!({})).await;
    acp.prompt(2, &session, "Touch it.").await;
    let (question, _) = acp.until(|m| m["method"] == "session/request_permission").await;
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"outcome":{{"outcome":"selected","optionId":"reject","optionId":"allow"}}}}}}"#,
        question["id"]
    );
    acp.send(&answer).await;
    let (refusal, _) = acp.until(|m| m["id"].is_null() && m.get("error").is_some()).await;
    assert!(names_key_twice(&refusal, "optionId"), "{refusal}");
    let (answered, _) = acp.until(|m| m["id"] == 2).await;
    assert_eq!(answered["result"]["stopReason"], "cancelled", "{answered}");
    assert!(!workspace.join("approved-by-a-duplicate.txt").exists(), "the duplicate approved the command");

    // An unknown result: the approved command kills the server.
    acp.prompt(3, &session, "Run it.").await;
    let (question, _) = acp.until(|m| m["method"] == "session/request_permission").await;
    let allow = serde_json::json!({ "jsonrpc": "2.0", "id": question["id"],
        "result": { "outcome": { "outcome": "selected", "optionId": "allow" } } });
    acp.send(&allow.to_string()).await;
    while acp.next().await.is_some() {}
    let _ = acp.child.wait().await;

    let mut acp = RawAcp::spawn(&home, &workspace, &mock);
    acp.open(&workspace, Some(&session), serde_json::json!({})).await;
    acp.prompt(2, &session, "Go on.").await;
    let (gate, _) = acp.until(|m| m["method"] == "session/request_permission").await;
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"outcome":{{"outcome":"selected","optionId":"not-now","optionId":"acknowledge"}}}}}}"#,
        gate["id"]
    );
    acp.send(&answer).await;
    let (answered, _) = acp.until(|m| m["id"] == 2).await;
    assert!(names_key_twice(&answered, "optionId"), "the prompt's answer names the key: {answered}");
    let journal = mino_e2e::session_files(&home).pop().expect("a session file");
    assert_eq!(mino_e2e::count_kind(&journal, "recovery_ack"), 0, "nothing was acknowledged");
    acp.close().await;

    // The gate as a form (a client advertising form elicitation): an answer
    // naming `answer` twice opens nothing either.
    let mut acp = RawAcp::spawn(&home, &workspace, &mock);
    acp.open(&workspace, Some(&session), serde_json::json!({ "elicitation": { "form": {} } })).await;
    acp.prompt(2, &session, "Go on.").await;
    let (form, _) = acp.until(|m| m["method"] == "elicitation/create").await;
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"action":"accept","content":{{"answer":"not-now","answer":"acknowledge"}}}}}}"#,
        form["id"]
    );
    acp.send(&answer).await;
    let (answered, _) = acp.until(|m| m["id"] == 2).await;
    assert!(names_key_twice(&answered, "answer"), "the prompt's answer names the key: {answered}");
    assert_eq!(mino_e2e::count_kind(&journal, "recovery_ack"), 0, "nothing was acknowledged");
    // The gate is still closed: the next prompt asks again, and a real answer opens it.
    acp.prompt(3, &session, "Go on.").await;
    let (form, _) = acp.until(|m| m["method"] == "elicitation/create").await;
    let acknowledge = serde_json::json!({ "jsonrpc": "2.0", "id": form["id"],
        "result": { "action": "accept", "content": { "answer": "acknowledge" } } });
    acp.send(&acknowledge.to_string()).await;
    let (answered, _) = acp.until(|m| m["id"] == 3).await;
    assert_eq!(answered["result"]["stopReason"], "end_turn", "{answered}");
    assert_eq!(mino_e2e::count_kind(&journal, "recovery_ack"), 1);
}

/// The approval mode and the sandbox chosen through the crate's
/// `session/set_config_option` and `session/set_mode` decide the next call
/// (sandboxed-auto with a sandbox: it runs unasked), each change is told as
/// `config_option_update` and `current_mode_update`, each response's usage
/// as `usage_update`; `session/close` lets another server `session/resume`
/// the session while the first still runs.
#[tokio::test]
async fn acp_modes_decide_the_next_call_and_a_closed_session_resumes_elsewhere() {
    let (_base, home, workspace) = dirs();
    let mock = MockModel::start(vec![
        Reply::call("call_1", "echo boxed > boxed.txt"),
        Reply::text("Done."),
        Reply::text("Still here."),
    ])
    .await
    .expect("mock model");
    // No answers scripted: a permission request fails the test.
    let seen = Shared::default();
    let later = Shared::default();
    let (ws, h, later_seen) = (workspace.clone(), home.clone(), later.clone());
    let mock_url = &mock;
    let (result, _) = with_server(&home, &workspace, &mock, seen.clone(), async move |cx| {
        let init = cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
        let caps = serde_json::to_value(&init.agent_capabilities.session_capabilities).expect("json");
        assert_eq!(caps, serde_json::json!({ "list": {}, "fork": {}, "resume": {}, "close": {} }));
        let created = cx.send_request(NewSessionRequest::new(ws.clone())).block_task().await?;
        let session = created.session_id.0.to_string();
        let unknown = cx.send_request(SetSessionModeRequest::new(session.clone(), "yolo")).block_task().await;
        cx.send_request(SetSessionModeRequest::new(session.clone(), "sandboxed-auto")).block_task().await?;
        let sandboxed = cx
            .send_request(SetSessionConfigOptionRequest::new(session.clone(), "sandbox", "workspace-write"))
            .block_task()
            .await?;
        let answer = prompt(&cx, &session, "Box it.").await?;
        cx.send_request(CloseSessionRequest::new(session.clone())).block_task().await?;
        // Another server resumes it while this one still runs.
        let cwd = ws.clone();
        let (resumed, _) = with_server(&h, &ws, mock_url, later_seen, async move |other| {
            other.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let resumed = other.send_request(ResumeSessionRequest::new(session.clone(), cwd)).block_task().await?;
            let next = prompt(&other, &session, "Are you there?").await?;
            Ok((resumed, next.stop_reason))
        })
        .await;
        Ok((created, unknown, sandboxed, answer.stop_reason, resumed))
    })
    .await;
    let (created, unknown, sandboxed, stop, resumed) = result.expect("the exchange ran");
    let modes = serde_json::to_value(&created.modes).expect("json");
    assert_eq!(modes["currentModeId"], "rules");
    let refused = unknown.expect_err("an unknown mode is refused");
    assert_eq!(i32::from(refused.code), -32602);
    assert!(refused.message.contains("choose one of: ask, rules, sandboxed-auto, plan"), "{}", refused.message);
    let options = serde_json::to_value(&sandboxed.config_options).expect("json");
    let ids: Vec<&str> = options.as_array().expect("options").iter().filter_map(|o| o["id"].as_str()).collect();
    assert_eq!(ids, ["model", "mode", "sandbox"]);
    assert_eq!(options[1]["currentValue"], "sandboxed-auto");
    assert_eq!(options[2]["currentValue"], "workspace-write");
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(std::fs::read_to_string(workspace.join("boxed.txt")).expect("the command ran unasked"), "boxed\n");
    assert!(seen.lock().expect("seen").questions.is_empty(), "nothing asked");
    let updates = seen.lock().expect("seen").updates.clone();
    let kinds: Vec<&str> = updates.iter().filter_map(|u| u["sessionUpdate"].as_str()).collect();
    let current: Vec<&Value> =
        updates.iter().filter(|u| u["sessionUpdate"] == "current_mode_update").map(|u| &u["currentModeId"]).collect();
    assert_eq!(current, ["sandboxed-auto", "sandboxed-auto"], "each change told (the sandbox's too)");
    assert!(kinds.iter().filter(|k| **k == "config_option_update").count() >= 2);
    let usage: Vec<&Value> = updates.iter().filter(|u| u["sessionUpdate"] == "usage_update").collect();
    assert_eq!(usage.len(), 2, "one per response");
    assert!(usage.iter().all(|u| u["used"].as_u64().is_some_and(|n| n > 0) && u["size"] == 128000));
    let (resumed, next) = resumed.expect("the closed session resumed in another server");
    assert_eq!(serde_json::to_value(&resumed.modes).expect("json")["currentModeId"], "rules");
    assert_eq!(next, StopReason::EndTurn);
    let replayed = later.lock().expect("seen").updates.iter().any(|u| u["sessionUpdate"] == "user_message_chunk");
    assert!(!replayed, "resume replays nothing");
    let last = mock.requests().pop().expect("a request");
    assert!(last.body["input"].to_string().contains("Box it."), "the conversation went on");
}
