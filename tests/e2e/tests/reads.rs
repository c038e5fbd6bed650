//! The read-only tools end to end (`read_file`, `list_files`, `search`): the
//! real server over stdio, the model mocked at the HTTP wire.
//!
//! Inside the workspace they run without asking (the default mode, `ask`,
//! included); a path leaving it asks first and reveals nothing when
//! declined; special and binary files are refused without hanging. The
//! crash test needs a server built with `--features failpoints` and is
//! skipped without one (see `mino_e2e::failpoints_server_bin`).

use std::path::PathBuf;

use mino_e2e::{
    chat, end_of, failpoints_server_bin, input_summary, next_approval_request, open, options_in, wire, work_dir,
    MockModel, Notification, Reply, Server, Spawn, TIMEOUT,
};
use serde_json::{json, Value};

fn read_call(call_id: &str, name: &str, arguments: Value) -> Reply {
    Reply::NamedCall { call_id: call_id.into(), name: name.into(), arguments: arguments.to_string() }
}

/// `(call_id, status, output)` of every `function_call_output` in a model request.
fn outputs(body: &Value) -> Vec<(String, String, String)> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| {
            let output: Value = item["output"].as_str().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
            (
                item["call_id"].as_str().unwrap_or_default().to_string(),
                output["status"].as_str().unwrap_or_default().to_string(),
                output["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// A server on a fresh home whose session works in `<home>/work`.
async fn started(mock: &MockModel) -> (Server, PathBuf) {
    let mut server = Server::spawn(mock).await;
    let cwd = work_dir(server.home());
    let recovery = open(&mut server, &cwd).await;
    assert!(recovery.turns.is_empty());
    (server, cwd)
}

/// Runs one turn to its end and returns its notifications, failing if any
/// approval was asked for.
async fn unasked_turn(server: &mut Server, text: &str) -> Vec<Notification> {
    let turn = chat(server, text).await;
    let notifications = server.turn_notifications(&turn, TIMEOUT).await;
    assert!(
        !notifications.iter().any(|n| n.method == wire::method::APPROVAL_REQUEST),
        "a read inside the workspace never asks: {notifications:?}"
    );
    notifications
}

fn results(notifications: &[Notification]) -> Vec<wire::ToolResult> {
    notifications.iter().filter(|n| n.method == wire::method::TOOL_RESULT).map(|n| n.parse()).collect()
}

fn numbered(lines: std::ops::RangeInclusive<usize>, text: impl Fn(usize) -> String) -> String {
    lines.map(|n| format!("{n:>6}\t{}\n", text(n))).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_states_lines_and_size_cuts_at_its_bound_and_runs_without_asking() {
    let mock = MockModel::start(vec![
        read_call("call_1", "read_file", json!({"path": "big.txt", "start_line": null, "end_line": null})),
        read_call("call_2", "read_file", json!({"path": "big.txt", "start_line": 2401, "end_line": null})),
        Reply::text("Read it."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let content: String = (1..=2500).map(|n| format!("line {n}\n")).collect();
    std::fs::write(cwd.join("big.txt"), &content).expect("write");
    let size = content.len();

    let notifications = unasked_turn(&mut server, "Read big.txt.").await;
    let started: Vec<wire::ToolStarted> =
        notifications.iter().filter(|n| n.method == wire::method::TOOL_STARTED).map(|n| n.parse()).collect();
    assert_eq!(started[0].command, "read_file big.txt");
    assert_eq!(started[0].tool, Some(wire::ToolName::ReadFile));
    assert_eq!(started[0].approved_by.kind, wire::ApproverKind::Workspace);
    assert!(!started[0].read.as_ref().expect("read view").leaves_workspace);

    let results = results(&notifications);
    let first_header = format!(
        "lines 1-2000 of 2500 ({size} bytes); 500 lines left out (limit 2000 lines): read on with start_line 2001"
    );
    assert_eq!(results[0].status, wire::ToolStatus::Success);
    assert_eq!(results[0].output, format!("{first_header}\n{}", numbered(1..=2000, |n| format!("line {n}"))));
    let view = results[0].read.as_ref().expect("read view");
    assert_eq!(view.summary.as_deref(), Some(first_header.as_str()));
    assert!(view.truncated);
    let second_header = format!("lines 2401-2500 of 2500 ({size} bytes)");
    assert_eq!(results[1].command.as_deref(), Some("read_file big.txt:2401-"));
    assert_eq!(results[1].output, format!("{second_header}\n{}", numbered(2401..=2500, |n| format!("line {n}"))));
    assert!(!results[1].read.as_ref().expect("read view").truncated);

    // The model heard exactly that, and was offered the read tools.
    let requests = mock.requests();
    let tools: Vec<&str> =
        requests[0].body["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(tools, ["bash", "edit_file", "write_file", "read_file", "list_files", "search"]);
    assert_eq!(outputs(&requests[1].body)[0].2, results[0].output);

    // History tells the read apart and keeps its summary.
    let history: wire::HistoryResult =
        serde_json::from_value(server.request(wire::method::HISTORY, json!({})).await.expect("history"))
            .expect("history result");
    let call = &history.turns[0].calls[0];
    assert_eq!(call.tool, Some(wire::ToolName::ReadFile));
    assert_eq!(call.read.as_ref().and_then(|r| r.summary.as_deref()), Some(first_header.as_str()));
    assert_eq!(call.approved_by.as_ref().map(|a| a.kind), Some(wire::ApproverKind::Workspace));
}

#[tokio::test(flavor = "multi_thread")]
async fn list_files_honours_gitignore_and_hidden_files_and_says_what_it_left_out() {
    let mock = MockModel::start(vec![
        read_call("call_1", "list_files", json!({"path": null, "pattern": "**/*.rs"})),
        read_call("call_2", "list_files", json!({"path": "many", "pattern": null})),
        Reply::text("Listed."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    // A git repository, so .gitignore applies (as for rg).
    std::fs::create_dir_all(cwd.join(".git")).expect(".git");
    std::fs::write(cwd.join(".gitignore"), "target/\n").expect(".gitignore");
    for dir in ["src", "target", ".hidden", "many"] {
        std::fs::create_dir_all(cwd.join(dir)).expect("dir");
    }
    for file in ["a.rs", "src/b.rs", "target/x.rs", ".hidden/y.rs", ".z.rs", "notes.txt"] {
        std::fs::write(cwd.join(file), "fn x() {}\n").expect("file");
    }
    for n in 0..1200 {
        std::fs::write(cwd.join(format!("many/f{n:04}.txt")), "").expect("file");
    }

    let results = results(&unasked_turn(&mut server, "What Rust files are there?").await);
    // As `rg --files -g`: the ignored file stays out, and so does a hidden
    // directory; a hidden file the glob names itself is listed, as rg lists it.
    assert_eq!(
        results[0].output, "3 files\n.z.rs\na.rs\nsrc/b.rs\n",
        "ignored files and hidden directories are not listed"
    );
    assert_eq!(results[0].command.as_deref(), Some("list_files . **/*.rs"));
    let listed: String = (0..1000).map(|n| format!("many/f{n:04}.txt\n")).collect();
    assert_eq!(results[1].output, format!("1000 of 1200 files; 200 left out (limit 1000 files)\n{listed}"));
    assert!(results[1].read.as_ref().expect("read").truncated);
}

#[tokio::test(flavor = "multi_thread")]
async fn search_returns_matches_with_context_and_bounds_the_count() {
    let mock = MockModel::start(vec![
        read_call(
            "call_1",
            "search",
            json!({"pattern": "mi+lk", "path": null, "glob": null, "context": 1, "case_insensitive": true}),
        ),
        read_call(
            "call_2",
            "search",
            json!({"pattern": "^hit", "path": "logs", "glob": "*.log", "context": 0, "case_insensitive": null}),
        ),
        read_call(
            "call_3",
            "search",
            json!({"pattern": "(unclosed", "path": null, "glob": null, "context": null, "case_insensitive": null}),
        ),
        Reply::text("Found."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    std::fs::write(cwd.join("shopping.txt"), "bread\nbutter\nMilk\njam\n").expect("write");
    std::fs::write(cwd.join("other.txt"), "no match here\n").expect("write");
    std::fs::create_dir_all(cwd.join("logs")).expect("logs");
    let log: String = (1..=300).map(|n| format!("hit {n}\n")).collect();
    std::fs::write(cwd.join("logs/a.log"), &log).expect("write");
    std::fs::write(cwd.join("logs/b.txt"), "hit but not a log\n").expect("write");

    let results = results(&unasked_turn(&mut server, "Where is milk?").await);
    assert_eq!(
        results[0].output,
        "1 match in 1 file\nshopping.txt-2-butter\nshopping.txt:3:Milk\nshopping.txt-4-jam\n"
    );
    assert_eq!(results[0].read.as_ref().and_then(|r| r.pattern.as_deref()), Some("mi+lk"));
    let shown: String = (1..=200).map(|n| format!("logs/a.log:{n}:hit {n}\n")).collect();
    assert_eq!(
        results[1].output,
        format!("300 matches in 1 file; 200 shown, 100 left out (limit 200 matching lines per file, or the memory budget)\n{shown}")
    );
    assert_eq!(results[2].status, wire::ToolStatus::Failed);
    assert!(results[2].output.starts_with("`(unclosed` is not a valid regular expression"), "{}", results[2].output);
}

/// Reads leaving the workspace: an absolute path, `..`, and a symbolic link
/// inside pointing out. Each asks; declined, the model learns nothing of the
/// file (not its content, nor whether it exists).
#[tokio::test(flavor = "multi_thread")]
async fn reads_leaving_the_workspace_ask_first_and_reveal_nothing_when_declined() {
    let mock = MockModel::start(vec![]).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let outside = server.home().join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("secret.txt"), "cobalt-otr\n").expect("secret");
    std::os::unix::fs::symlink(outside.join("secret.txt"), cwd.join("link.txt")).expect("symlink");
    open(&mut server, &cwd).await;
    let real = std::fs::canonicalize(outside.join("secret.txt")).expect("canonical");

    let cases = [
        (
            json!({"path": outside.join("secret.txt").display().to_string(), "start_line": null, "end_line": null}),
            "read_file",
        ),
        (json!({"path": "../outside/secret.txt", "start_line": null, "end_line": null}), "read_file"),
        (json!({"path": "link.txt", "start_line": null, "end_line": null}), "read_file"),
        (json!({"path": "../outside/absent.txt", "start_line": null, "end_line": null}), "read_file"),
        (
            json!({"pattern": "secret", "path": "../outside", "glob": null, "context": null, "case_insensitive": null}),
            "search",
        ),
        (json!({"path": "../outside", "pattern": null}), "list_files"),
    ];
    for (i, (arguments, tool)) in cases.iter().enumerate() {
        let call_id = format!("call_{i}");
        mock.push(read_call(&call_id, tool, arguments.clone()));
        mock.push(Reply::text("ok"));
        let turn = chat(&mut server, "Read the secret.").await;
        let request = next_approval_request(&mut server).await;
        let view = request.read.clone().expect("a read's approval request carries the read");
        assert!(view.leaves_workspace, "{arguments}");
        assert!(request.edit.is_none() && request.suggested_rule.is_none() && request.environment.is_empty());
        if *tool == "read_file" && i < 3 {
            assert_eq!(view.path, real.display().to_string(), "shown where it leads: {arguments}");
        }
        server.approval(&turn, &call_id, wire::Decision::Deny).await.expect("deny");
        let notifications = server.turn_notifications(&turn, TIMEOUT).await;
        let result = &results(&notifications)[0];
        assert_eq!(result.status, wire::ToolStatus::Refused);
        assert_eq!(result.output, "The user denied this read; nothing was read.");
        assert!(!notifications.iter().any(|n| n.method == wire::method::TOOL_STARTED));
        let heard = outputs(&mock.requests().pop().expect("request").body);
        let (_, status, output) = heard.last().expect("the refusal");
        assert_eq!((status.as_str(), output.as_str()), ("refused", "The user denied this read; nothing was read."));
    }
    // Nothing of the file reached the model in any request.
    for request in mock.requests() {
        assert!(!request.body.to_string().contains("cobalt-otr"), "the secret leaked");
    }

    // Approved, it is read.
    mock.push(read_call("call_ok", "read_file", json!({"path": "link.txt", "start_line": null, "end_line": null})));
    mock.push(Reply::text("ok"));
    let turn = chat(&mut server, "Read it, then.").await;
    let _ = next_approval_request(&mut server).await;
    server.approval(&turn, "call_ok", wire::Decision::Approve).await.expect("approve");
    let notifications = server.turn_notifications(&turn, TIMEOUT).await;
    let started: wire::ToolStarted =
        notifications.iter().find(|n| n.method == wire::method::TOOL_STARTED).expect("started").parse();
    assert_eq!(started.approved_by.kind, wire::ApproverKind::User);
    assert_eq!(results(&notifications)[0].output, "lines 1-1 of 1 (11 bytes)\n     1\tcobalt-otr\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn fifos_devices_and_binary_files_are_refused_without_hanging() {
    let mock = MockModel::start(vec![
        read_call("call_1", "read_file", json!({"path": "pipe", "start_line": null, "end_line": null})),
        read_call("call_2", "read_file", json!({"path": "blob.bin", "start_line": null, "end_line": null})),
        read_call(
            "call_3",
            "search",
            json!({"pattern": "x", "path": null, "glob": null, "context": 0, "case_insensitive": null}),
        ),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let (mut server, cwd) = started(&mock).await;
    let fifo = cwd.join("pipe");
    let c = std::ffi::CString::new(fifo.display().to_string()).expect("path");
    // SAFETY: mkfifo(3) on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    std::fs::write(cwd.join("blob.bin"), b"x\x00\x01\x02binary").expect("blob");
    std::fs::write(cwd.join("text.txt"), "x marks\n").expect("text");

    let results = results(&unasked_turn(&mut server, "Read the odd files.").await);
    assert_eq!(results[0].status, wire::ToolStatus::Failed);
    assert!(
        results[0].output.starts_with("Refused: `pipe` is a FIFO (named pipe), not a regular file"),
        "{}",
        results[0].output
    );
    assert!(results[1].output.starts_with("Refused: `blob.bin` looks binary"), "{}", results[1].output);
    assert_eq!(results.len(), 3, "{results:?}");
    // The search skips the FIFO and the binary file, and finds the text.
    assert_eq!(results[2].output, "1 match in 1 file\ntext.txt:1:x marks\n");
}

/// SIGKILL while a read runs: on reopen the read is `unavailable`, with no
/// acknowledgement gate (a read has no effects), and the model is told so
/// with the runtime notice.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_killed_mid_way_is_unavailable_on_reopen_without_the_gate() {
    let Some(bin) = failpoints_server_bin() else {
        eprintln!("skipped: set MINO_E2E_FAILPOINTS=1 (or MINO_SERVER_FAILPOINTS_BIN) to run the failpoint tests");
        return;
    };
    let mock = MockModel::start(vec![
        read_call("call_1", "read_file", json!({"path": "notes.txt", "start_line": null, "end_line": null})),
        Reply::text("never sent"),
    ])
    .await
    .expect("mock");
    let home = tempfile::tempdir().expect("home");
    let cwd = work_dir(home.path());
    std::fs::write(cwd.join("notes.txt"), "milk\n").expect("notes");
    let mut first = Server::spawn_with(Spawn {
        home: Some(home.path().to_path_buf()),
        base_url: Some(mock.base_url()),
        bin: Some(bin),
        // The read has run and its result is not yet saved when the kill comes.
        failpoints: Some("agent::before_read_result=sleep(60000)".into()),
        ..Default::default()
    })
    .await;
    first.initialize(&options_in(&cwd)).await.expect("initialize");
    let turn = chat(&mut first, "Read my notes.").await;
    let started: wire::ToolStarted = first.next_notification(wire::method::TOOL_STARTED, TIMEOUT).await.parse();
    assert_eq!(started.turn_id, turn);
    first.kill().await;

    let mut second = Server::spawn_in(home.path(), &mock).await;
    second.initialize(&options_in(&cwd)).await.expect("reopen");
    let recovery: wire::RecoveryNotification = second.next_notification(wire::method::RECOVERY, TIMEOUT).await.parse();
    assert!(!recovery.acknowledgement_required, "a read raises no gate");
    assert!(recovery.unacknowledged_turn_ids.is_empty());
    let call = &recovery.turns[0].calls[0];
    assert_eq!(call.tool, Some(wire::ToolName::ReadFile));
    assert_eq!(call.result.status, wire::ToolStatus::Unavailable);
    assert_eq!(recovery.turns[0].status, wire::TurnStatus::Interrupted);

    // Chat is not gated, and the replay carries the unavailable result and the notice.
    mock.push(Reply::text("Let me read it again."));
    let next = chat(&mut second, "Go on.").await;
    assert_eq!(end_of(&mut second, &next).await.status, wire::TurnStatus::Completed);
    let last = mock.requests().pop().expect("a request");
    let summary = input_summary(&last.body);
    assert!(summary.contains(&"function_call_output call_1 unavailable".to_string()), "{summary:?}");
    assert!(
        summary
            .iter()
            .any(|s| s.starts_with("assistant: Mino runtime notice: the previous turn ended with status interrupted")),
        "{summary:?}"
    );
    let heard = outputs(&last.body);
    assert!(heard[0].2.starts_with("The read was started but its result was not saved"), "{heard:?}");
}
