//! `mino` driven through a pseudo-terminal, against the real `mino-server`
//! and a scripted model: a normal approved turn, Ctrl+C, and the startup gate
//! for unknown tool results (decline, piped refusal, accept).

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use mino_mock_model::{MockModel, Reply};
use rexpect::process::WaitStatus;
use rexpect::session::PtySession;

const BANNER: &str =
    "History is restored on startup. Bash commands require approval. Use /exit, Ctrl+D, or Ctrl+C to quit.";
const RECOVERED: &str = "An interrupted tool turn was recovered without executing commands.";
const UNKNOWN: &str = "A previous command started, but its result is unknown. It may have changed files or external systems. Mino has not rerun it. Review those effects before continuing.";
const QUESTION: &str = "Do you understand that these commands may already have run? [y/N] ";
const NEEDS_TTY: &str = "Unknown tool results require acknowledgement in an interactive terminal";

fn spawn(cmd: Command) -> PtySession {
    rexpect::spawn_with_options(
        cmd,
        rexpect::reader::Options::new().timeout_ms(Some(TIMEOUT_MS)).strip_ansi_escape_codes(true),
    )
    .expect("spawn mino in a pty")
}

fn exit_code(p: &PtySession) -> Option<i32> {
    match p.process().wait().expect("wait for mino") {
        WaitStatus::Exited(_, code) => Some(code),
        _ => None,
    }
}

#[test]
fn an_approved_turn_streams_text_shows_the_approval_screen_and_the_result() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::Calls {
                text: vec!["I'll".into(), " add".into(), " it.".into()],
                calls: vec![mino_mock_model::ScriptedCall::new("call_1", "echo milk >> shopping.txt; echo appended")],
                delay_ms: 0,
            },
            Reply::text("Milk is on the list."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string(BANNER).expect("banner");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Add milk to shopping.txt.").expect("send question");
    p.exp_string("Assistant> I'll add it.").expect("streamed text");
    p.exp_string("[Tool: bash]").expect("tool header");
    p.exp_string("Command: \"echo milk >> shopping.txt; echo appended\"").expect("command line");
    p.exp_string(&format!("Directory: {}", scratch.work().display())).expect("directory line");
    p.exp_string("Environment: ").expect("environment line");
    p.exp_string("Limits: timeout 120s, output 65536 bytes").expect("limits line");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("y").expect("approve");
    p.exp_string("appended").expect("tool output");
    p.exp_string("[Result: success, exit code 0]").expect("result line");
    p.exp_string("Milk is on the list.").expect("final text");
    p.exp_string("You> ").expect("next prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
    assert_eq!(read(&scratch.work().join("shopping.txt")), "milk\n");

    // The model saw the approved call's result.
    let requests = rt.block_on(mock.wait_for_requests(2, Duration::from_secs(10)));
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.to_string().contains("appended"), "{}", requests[1].body);

    // A restart restores the history before the prompt.
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string(BANNER).expect("banner");
    p.exp_string("You> Add milk to shopping.txt.").expect("restored input");
    p.exp_string("[Result: success, exit code 0]").expect("restored result");
    p.exp_string("Milk is on the list.").expect("restored answer");
    p.exp_string("You> ").expect("prompt");
    p.send_control('d').expect("ctrl-d");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
}

/// A model that gives two calls of one response the same id: the approval
/// (sent with its turn) runs the first; the second is not run, and its
/// result's explanation is shown although the first `call_0` streamed output.
#[test]
fn a_repeated_call_id_shows_each_result_of_its_own() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::calls(&[("call_0", "echo first-ran"), ("call_0", "echo second-ran")]),
            Reply::text("One ran."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string(BANNER).expect("banner");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Run both.").expect("send question");
    p.exp_string("Command: \"echo first-ran\"").expect("the first call is asked");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("y").expect("approve");
    p.exp_string("first-ran").expect("tool output");
    p.exp_string("[Result: success, exit code 0]").expect("first result");
    p.exp_string("Not run: this response already has a call with call_id call_0").expect("second result explained");
    p.exp_string("[Result: failed]").expect("second result line");
    p.exp_string("One ran.").expect("final text");
    p.exp_string("You> ").expect("next prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
    assert_eq!(records(&read(&scratch.journal()), "tool_start"), 1, "only the first call ran");
}

#[test]
fn ctrl_c_cancels_a_running_turn_and_quits_at_the_prompt() {
    let rt = runtime();
    let mock =
        rt.block_on(MockModel::start(vec![Reply::call("call_1", "echo started; sleep 60")])).expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("Wait a minute.").expect("send question");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("yes").expect("approve");
    p.exp_string("started").expect("command running");
    p.send_control('c').expect("ctrl-c");
    p.exp_string("[turn cancelled").expect("turn ended cancelled");
    p.exp_string("You> ").expect("prompt after cancel");
    p.send_control('c').expect("ctrl-c at the prompt");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
}

/// Appends milk, then SIGKILLs the server (the command's parent is its
/// supervisor, whose parent is the server).
const MILK: &str = "echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)";

/// Leaves a session whose last call started but whose result was never saved:
/// the approved command appends milk, then SIGKILLs the server running it.
fn interrupted_session(scratch: &Scratch, mock: &MockModel) {
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("Add milk to shopping.txt.").expect("send question");
    p.exp_string(&format!("Command: {MILK:?}")).expect("approval screen");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("y").expect("approve");
    p.exp_string("mino-server stopped unexpectedly").expect("server died");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(1));
    let journal = read(&scratch.journal());
    assert_eq!(records(&journal, "tool_start"), 1, "{journal}");
    assert_eq!(records(&journal, "tool_result"), 0, "{journal}");
}

#[test]
fn unknown_results_must_be_acknowledged_in_a_terminal_before_the_banner() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::call("call_1", MILK),
            Reply::text("The earlier append may have run; its result was not saved."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    interrupted_session(&scratch, &mock);
    let journal_path = scratch.journal();

    // Declining: the question comes before the banner, and nothing is saved.
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string(RECOVERED).expect("recovery notice");
    p.exp_string(UNKNOWN).expect("unknown-result notice");
    p.exp_string(&format!("Command: {MILK:?}")).expect("listed command");
    // The supervisor saw the command end after the server was killed.
    p.exp_string("[Evidence: the command exited 0").expect("the supervisor's evidence");
    let before = p.exp_string(QUESTION).expect("acknowledgement question");
    assert!(!before.contains(BANNER) && !before.contains("You>"), "banner before the question:\n{before}");
    p.send_line("n").expect("decline");
    let rest = p.exp_eof().expect("eof after declining");
    assert!(!rest.contains(BANNER) && !rest.contains("You>"), "{rest}");
    assert_eq!(exit_code(&p), Some(1));
    let after_decline = read(&journal_path);
    assert_eq!(records(&after_decline, "recovery_ack"), 0, "{after_decline}");

    // Declining by just pressing Enter changes nothing either.
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string(QUESTION).expect("asked again");
    p.send_line("").expect("enter");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(1));
    assert_eq!(read(&journal_path), after_decline, "declining wrote to the session file");

    // Piped stdin cannot acknowledge.
    let mut cmd = scratch.command(&mock.base_url());
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn piped mino");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"y\n").expect("write y");
    }
    let status = wait_with_timeout(&mut child, Duration::from_secs(60));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err).expect("read stderr");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains(NEEDS_TTY), "{err}");
    assert_eq!(read(&journal_path), after_decline, "the piped run wrote to the session file");

    // Accepting: the banner and prompt follow, and exactly one recovery_ack is saved.
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string(QUESTION).expect("asked again");
    p.send_line(" Yes ").expect("accept");
    p.exp_string(BANNER).expect("banner after accepting");
    p.exp_string("You> ").expect("prompt");
    let acked = read(&journal_path);
    assert_eq!(records(&acked, "recovery_ack"), 1, "{acked}");
    p.send_line("Is milk on the list now?").expect("next question");
    p.exp_string("The earlier append may have run").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
    assert_eq!(records(&read(&journal_path), "recovery_ack"), 1);
    assert_eq!(read(&scratch.work().join("shopping.txt")), "milk\n");

    // The next start asks nothing.
    let mut p = spawn(scratch.command(&mock.base_url()));
    let before = p.exp_string(BANNER).expect("banner");
    assert!(!before.contains(QUESTION), "{before}");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
}

/// A `y` typed while the answer still streams, before any command is on
/// screen, does not approve the command that is shown afterwards.
#[test]
fn a_yes_typed_ahead_does_not_approve_a_command_not_yet_shown() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::Calls {
                text: (0..10).map(|i| format!("word{i} ")).collect(),
                calls: vec![mino_mock_model::ScriptedCall::new("call_1", "touch typed_ahead.txt")],
                delay_ms: 150,
            },
            Reply::text("Not run."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("Make a file.").expect("send question");
    p.exp_string("word0").expect("streaming has begun");
    p.send_line("y").expect("type ahead");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("n").expect("deny");
    p.exp_string("Not run.").expect("final text");
    p.exp_string("You> ").expect("next prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert!(!scratch.work().join("typed_ahead.txt").exists(), "the typed-ahead y approved nothing");
}

/// Ctrl+C while the session opens quits at once, even if the server never
/// answers `initialize`.
#[test]
fn ctrl_c_quits_while_the_session_opens() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    // A copy of mino with no mino-server beside it, and a "server" that
    // never answers. It says on stderr (shown on the terminal since RUST_LOG
    // is set) when the first line of `initialize` has reached it, so Ctrl+C
    // is sent only once mino is waiting for the answer.
    let bin = scratch.dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let client = bin.join("mino");
    std::fs::copy(mino(), &client).expect("copy mino");
    let silent = bin.join("silent-server");
    std::fs::write(
        &silent,
        "#!/bin/sh\nIFS= read -r header\necho \"silent-server received $header\" >&2\nexec sleep 120\n",
    )
    .expect("script");
    std::fs::set_permissions(&silent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut cmd = scratch.command("http://127.0.0.1:9/v1");
    cmd.env("MINO_SERVER", &silent);
    let mut cmd2 = Command::new(&client);
    cmd2.current_dir(scratch.work());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => cmd2.env(k, v),
            None => cmd2.env_remove(k),
        };
    }
    cmd2.env("RUST_LOG", "error");
    let mut p = spawn(cmd2);
    p.exp_string("silent-server received Content-Length:").expect("initialize sent and unanswered");
    p.send_control('c').expect("ctrl+c");
    p.exp_eof().expect("mino quits");
    assert_eq!(exit_code(&p), Some(130));
}

/// On a terminal an edit's approval shows its diff coloured (added lines
/// green, removed red), and the result shows the diff written; with
/// `NO_COLOR` set, the same screen has no colour codes.
#[test]
fn an_edit_is_approved_from_a_coloured_diff_unless_no_color() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::edit_file("call_1", "shopping.txt", "jam\n", "milk\n", false),
            Reply::text("Swapped."),
            Reply::edit_file("call_2", "shopping.txt", "milk\n", "tea\n", false),
            Reply::text("Swapped again."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    std::fs::write(scratch.work().join("shopping.txt"), "bread\njam\n").expect("write the list");
    let raw = |cmd: Command| {
        rexpect::spawn_with_options(cmd, rexpect::reader::Options::new().timeout_ms(Some(TIMEOUT_MS)))
            .expect("spawn mino in a pty")
    };

    let mut cmd = scratch.command(&mock.base_url());
    cmd.env_remove("NO_COLOR");
    let mut p = raw(cmd);
    p.exp_string("You> ").expect("prompt");
    p.send_line("Swap jam for milk.").expect("send question");
    p.exp_string("[Tool: edit_file]").expect("tool header");
    p.exp_string("Path: shopping.txt").expect("path");
    p.exp_string("\u{1b}[31m-jam\u{1b}[0m").expect("removed line in red");
    p.exp_string("\u{1b}[32m+milk\u{1b}[0m").expect("added line in green");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("y").expect("approve");
    p.exp_string("Edited shopping.txt: replaced 1 occurrence of old_text.").expect("result");
    p.exp_string("\u{1b}[32m+milk\u{1b}[0m").expect("the written diff, coloured");
    p.exp_string("[Result: success]").expect("result line");
    p.exp_string("Swapped.").expect("final text");
    p.exp_string("You> ").expect("next prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(read(&scratch.work().join("shopping.txt")), "bread\nmilk\n");

    let mut cmd = scratch.command(&mock.base_url());
    cmd.env("NO_COLOR", "1");
    let mut p = raw(cmd);
    p.exp_string("You> ").expect("prompt");
    p.send_line("Swap milk for tea.").expect("send question");
    p.exp_string("[Tool: edit_file]").expect("tool header");
    let before = p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    assert!(before.contains("-milk\r\n+tea\r\n"), "{before:?}");
    assert!(!before.contains('\u{1b}'), "no colour with NO_COLOR: {before:?}");
    p.send_line("n").expect("deny");
    p.exp_string("[Result: refused]").expect("refused");
    p.exp_string("You> ").expect("next prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(read(&scratch.work().join("shopping.txt")), "bread\nmilk\n");
}

#[test]
fn a_session_opened_in_the_chat_asks_its_acknowledgement_as_at_startup() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::call("call_1", MILK),
            Reply::text("The earlier append may have run; its result was not saved."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    interrupted_session(&scratch, &mock);
    let journal_path = scratch.journal();
    let crashed = journal_path.file_stem().and_then(|s| s.to_str()).expect("session id").to_string();

    let mut cmd = scratch.command(&mock.base_url());
    cmd.arg("--new");
    let mut p = spawn(cmd);
    p.exp_string(BANNER).expect("a new session, no question");
    p.exp_string("You> ").expect("prompt");
    p.send_line(&format!("/open {crashed}")).expect("open");
    p.exp_string(UNKNOWN).expect("the opened session's unknown result");
    p.exp_string(&format!("Command: {MILK:?}")).expect("listed command");
    p.exp_string(QUESTION).expect("asked as at startup");
    // Declining keeps mino running in that session, where chat is refused.
    p.send_line("n").expect("decline");
    p.exp_string("Nothing was acknowledged.").expect("declined");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Is milk on the list now?").expect("question");
    p.exp_string("Acknowledge unknown tool results before continuing").expect("refused");
    assert_eq!(records(&read(&journal_path), "recovery_ack"), 0);
    // Asked again on reopening; accepting lets the conversation go on there.
    p.exp_string("You> ").expect("prompt");
    p.send_line(&format!("/open {crashed}")).expect("open again");
    p.exp_string(QUESTION).expect("asked again");
    p.send_line("y").expect("accept");
    p.exp_string(&format!("session {crashed} (Add milk to shopping.txt.)")).expect("the session's header");
    p.exp_string("You> ").expect("prompt");
    assert_eq!(records(&read(&journal_path), "recovery_ack"), 1);
    p.send_line("Is milk on the list now?").expect("question");
    p.exp_string("The earlier append may have run").expect("answer in the opened session");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
    assert_eq!(read(&scratch.work().join("shopping.txt")), "milk\n", "nothing was run again");
}

/// `a` allows for the session and `w` for the workspace, each asking for the
/// rule prefilled with the server's suggestion (Enter accepts it, other
/// words replace it); under `ask` the client says the rule waits for
/// `/mode rules`, after which a covered command runs without asking and is
/// shown as approved by its rule; `n: reason` denies with a reason the model
/// reads; `/rules` lists both rules.
#[test]
fn the_terminal_allows_for_the_session_and_the_workspace_and_denies_with_a_reason() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::call("c1", "echo alpha one"),
            Reply::text("First done."),
            Reply::call("c2", "echo beta two --loud"),
            Reply::text("Second done."),
            Reply::call("c3", "echo alpha three"),
            Reply::text("Third done."),
            Reply::call("c4", "rm -rf data"),
            Reply::text("Fourth understood."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("First.").expect("send");
    p.exp_string("Sandbox: off (approval mode ask)").expect("the sandbox and the mode are shown");
    p.exp_string("a: allow for this session").expect("the choices are shown");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("a").expect("allow for the session");
    p.exp_string("Allow in this session commands starting with: [echo alpha]").expect("the rule, prefilled");
    p.send_line("").expect("accept the suggestion");
    p.exp_string("rules approve nothing until you switch with /mode rules").expect("ask says so");
    p.exp_string("alpha one").expect("the call ran");
    p.exp_string("First done.").expect("answer");

    p.exp_string("You> ").expect("prompt");
    p.send_line("Second.").expect("send");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("w").expect("allow in the workspace");
    p.exp_string("Allow in this workspace commands starting with: [echo beta]").expect("the rule, prefilled");
    p.send_line("echo beta two").expect("edit the rule");
    p.exp_string("beta two --loud").expect("the call ran");
    p.exp_string("Second done.").expect("answer");

    p.exp_string("You> ").expect("prompt");
    p.send_line("/mode rules").expect("switch the mode");
    p.exp_string("Approval mode rules, sandbox off").expect("settings");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Third.").expect("send");
    p.exp_string("[approved by rule `echo alpha` (session)]").expect("approved by the session rule");
    p.exp_string("alpha three").expect("the call ran without asking");
    p.exp_string("Third done.").expect("answer");

    p.exp_string("You> ").expect("prompt");
    p.send_line("Fourth.").expect("send");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("n: use the test database").expect("deny with a reason");
    p.exp_string("Denied by the user: use the test database").expect("the result says why");
    p.exp_string("Fourth understood.").expect("answer");

    p.exp_string("You> ").expect("prompt");
    p.send_line("/rules").expect("list the rules");
    p.exp_string("session prefix `echo alpha`").expect("the session rule");
    p.exp_string("workspace prefix `echo beta two`").expect("the workspace rule, as edited");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));

    let requests = rt.block_on(mock.wait_for_requests(8, Duration::from_secs(10)));
    assert!(requests[7].body.to_string().contains("Denied by the user: use the test database"), "{}", requests[7].body);
}

/// On an edit, `a` offers a path rule prefilled with the file's path (here
/// edited to a glob), which then approves a matching edit without asking;
/// `D` denies a command and adds a workspace deny rule, prefilled the same
/// way, which then refuses a covered command without asking; `/rules`
/// lists the path rule and the deny rule.
#[test]
fn the_terminal_grants_a_path_rule_for_an_edit_and_a_deny_rule_for_a_command() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::write_file("e1", "a.txt", "a\n"),
            Reply::text("First done."),
            Reply::write_file("e2", "b.txt", "b\n"),
            Reply::text("Second done."),
            Reply::call("c3", "echo gone now"),
            Reply::text("Third understood."),
            Reply::call("c4", "echo gone again"),
            Reply::text("Fourth understood."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("First.").expect("send");
    p.exp_string("[Tool: write_file]").expect("the edit");
    p.exp_string("D: deny in this workspace").expect("the choices are shown for an edit");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("a").expect("allow for the session");
    p.exp_string("Allow in this session edits of files matching: [a.txt]").expect("the path rule, prefilled");
    p.send_line("*.txt").expect("edit the rule into a glob");
    p.exp_string("rules approve nothing until you switch with /mode rules").expect("ask says so");
    p.exp_string("First done.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/mode rules").expect("switch the mode");
    p.exp_string("Approval mode rules, sandbox off").expect("settings");

    p.exp_string("You> ").expect("prompt");
    p.send_line("Second.").expect("send");
    p.exp_string("[approved by rule `*.txt` (session)]").expect("approved by the path rule");
    p.exp_string("Second done.").expect("answer");
    assert_eq!(read(&scratch.work().join("b.txt")), "b\n");

    p.exp_string("You> ").expect("prompt");
    p.send_line("Third.").expect("send");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("D").expect("deny in the workspace");
    p.exp_string("Deny in this workspace commands starting with: [echo gone]").expect("the deny rule, prefilled");
    p.send_line("").expect("accept the suggestion");
    p.exp_string("[Result: refused]").expect("denied");
    p.exp_string("Third understood.").expect("answer");

    p.exp_string("You> ").expect("prompt");
    p.send_line("Fourth.").expect("send");
    let shown = p.exp_string("Fourth understood.").expect("answer");
    assert!(shown.contains("Denied by a rule the user set: prefix \"echo gone\""), "{shown:?}");
    // The refused call had no question and no start: its result names the command.
    assert!(shown.contains("Command: \"echo gone again\""), "{shown:?}");
    assert!(!shown.contains("Approve this operation?"), "the deny rule decided: {shown:?}");

    p.exp_string("You> ").expect("prompt");
    p.send_line("/rules").expect("list the rules");
    p.exp_string("session path `*.txt`").expect("the path rule");
    p.exp_string("workspace prefix `echo gone` [deny]").expect("the deny rule");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
}

/// `cmd` on a terminal that moves the cursor (`TERM=xterm`), `cols` wide.
fn on_xterm(cmd: &Command, cols: u16) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(format!("stty cols {cols} rows 50; exec \"$0\" \"$@\"")).arg(cmd.get_program());
    sh.args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh.env("TERM", "xterm").env_remove("NO_COLOR");
    sh
}

/// `mino` on a capable terminal. What is read keeps its escape codes
/// (rexpect's stripping does not know private modes such as bracketed
/// paste's `\e[?2004h`, and loses the text after them): the strings
/// expected are ones written whole.
fn spawn_xterm(cmd: &Command, cols: u16) -> PtySession {
    rexpect::spawn_with_options(on_xterm(cmd, cols), rexpect::reader::Options::new().timeout_ms(Some(TIMEOUT_MS)))
        .expect("spawn mino in a pty")
}

/// Sends keys at once (rexpect's writer buffers until a newline or a flush).
fn press(p: &mut PtySession, keys: &str) -> Result<(), rexpect::error::Error> {
    p.send(keys)?;
    p.flush()
}

/// The user messages the model was sent in request `i`.
fn user_texts(requests: &[mino_mock_model::RecordedRequest], i: usize) -> String {
    requests[i].body.to_string()
}

/// A block of lines pasted at the prompt (the terminal marks it with
/// bracketed paste) is one question, sent when Enter is pressed.
#[test]
fn a_multi_line_paste_is_one_question() {
    let rt = runtime();
    let mock = rt.block_on(MockModel::start(vec![Reply::text("Both lines read.")])).expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn_xterm(&scratch.command(&mock.base_url()), 200);
    p.exp_string("You> ").expect("prompt");
    press(&mut p, "\x1b[200~first pasted line\nsecond pasted line\n\x1b[201~").expect("paste");
    press(&mut p, "\r").expect("enter");
    p.exp_string("Both lines read.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "one question, not one per line");
    let body = user_texts(&requests, 0);
    assert!(body.contains("first pasted line\\nsecond pasted line"), "{body}");
    assert!(!body.contains("200~") && !body.contains("201~"), "the paste markers are not part of it: {body}");
}

/// A call a rule approves (nobody is asked) still shows the command it runs.
#[test]
fn a_call_approved_by_a_rule_shows_its_command() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::call("c1", "echo alpha one"),
            Reply::text("First done."),
            Reply::call("c2", "echo alpha two"),
            Reply::text("Second done."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("/mode rules").expect("rules mode");
    p.exp_string("Approval mode rules").expect("settings");
    p.exp_string("You> ").expect("prompt");
    p.send_line("First.").expect("send");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("a").expect("allow for the session");
    p.exp_string("[echo alpha]").expect("the rule, prefilled");
    p.send_line("").expect("accept the suggestion");
    p.exp_string("First done.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Second.").expect("send");
    let shown = p.exp_string("[approved by rule `echo alpha` (session)]").expect("approved by the rule");
    assert!(shown.contains("Command: \"echo alpha two\""), "the command is shown: {shown:?}");
    assert!(!shown.contains("Approve this operation?"), "{shown:?}");
    p.exp_string("Second done.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// `/model NAME` for a model the service does not list asks first, No by
/// default, and keeps the current model unless told yes; a listed model
/// is chosen at once. On a capable terminal the question is a menu.
#[test]
fn a_model_the_service_does_not_list_is_chosen_only_when_confirmed() {
    let rt = runtime();
    let mock = rt.block_on(MockModel::start(vec![])).expect("mock model");
    mock.set_models(Some(&["model-listed", "model-other"]));
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("/model model-typo").expect("unlisted model");
    p.exp_string("The service does not list a model named model-typo").expect("asked");
    p.exp_string("Use it anyway? [y/N] ").expect("the question");
    p.send_line("").expect("enter declines");
    p.exp_string("This session keeps").expect("kept");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/model model-typo").expect("unlisted model again");
    p.exp_string("Use it anyway? [y/N] ").expect("the question");
    p.send_line("y").expect("confirm");
    p.exp_string("This session now uses model-typo").expect("chosen");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/model model-other").expect("listed model");
    let shown = p.exp_string("This session now uses model-other").expect("chosen at once");
    assert!(!shown.contains("Use it anyway?"), "{shown:?}");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");

    // The menu: Enter takes No, the highlighted choice.
    let mut p = spawn_xterm(&scratch.command(&mock.base_url()), 200);
    p.exp_string("You> ").expect("prompt");
    p.send_line("/model model-typo2").expect("unlisted model");
    p.exp_string("> No (n)").expect("the menu starts on No");
    press(&mut p, "\r").expect("enter");
    p.exp_string("This session keeps model-other").expect("kept");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// While a command runs, a status line below its output says so and for
/// how long, and is gone once the result is shown.
#[test]
fn a_running_command_shows_its_elapsed_time() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::call("call_1", "echo begun; sleep 3; echo finished"),
            Reply::text("Slept."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn_xterm(&scratch.command(&mock.base_url()), 200);
    p.exp_string("You> ").expect("prompt");
    p.send_line("Sleep.").expect("send");
    p.exp_string("Approve this operation?").expect("approval menu");
    p.send_line("y").expect("approve");
    p.exp_string("begun").expect("output");
    p.exp_string("[running: echo begun; sleep 3; echo finished").expect("the status line");
    p.exp_string(" 1s]").expect("elapsed 1s");
    p.exp_string("[running: echo begun; sleep 3; echo finished").expect("the status line, redrawn");
    p.exp_string(" 2s]").expect("elapsed 2s");
    let rest = p.exp_string("[Result: success, exit code 0]").expect("result");
    // The status line was cleared (back to the line's start, erased) before the output went on.
    assert!(rest.contains("\r\x1b[Kfinished"), "{rest:?}");
    p.exp_string("Slept.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// `/open` takes the start of an id when only one session has it; an
/// ambiguous start lists the sessions it could mean.
#[test]
fn open_takes_a_unique_prefix_of_a_session_id() {
    let rt = runtime();
    let mock = rt.block_on(MockModel::start(vec![Reply::text("One."), Reply::text("Two.")])).expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    let header = p.exp_regex(r"session (\d{8}T\d{6}-[0-9a-f]+)").expect("first session").1;
    let first = header.trim_start_matches("session ").to_string();
    p.exp_string("You> ").expect("prompt");
    p.send_line("Question one.").expect("send");
    p.exp_string("One.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/new").expect("new session");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Question two.").expect("send");
    p.exp_string("Two.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/open 2").expect("ambiguous");
    p.exp_string("2 sessions start with 2; type more of the id:").expect("ambiguous prefix");
    p.exp_string(&first).expect("a candidate");
    p.exp_string("You> ").expect("prompt");
    let prefix = &first[..first.len() - 2];
    p.send_line(&format!("/open {prefix}")).expect("unique prefix");
    p.exp_string(&format!("session {first} (Question one.)")).expect("opened by its prefix");
    p.exp_string("Assistant> One.").expect("its history");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// A refused request is told in words of sessions and commands, not of
/// protocol methods or error codes (those go to the log).
#[test]
fn errors_speak_of_sessions_not_of_methods_and_codes() {
    let rt = runtime();
    let mock = rt.block_on(MockModel::start(vec![])).expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("/open 19990101T000000-abcdef").expect("unknown");
    let shown = p.exp_string("You> ").expect("prompt");
    assert!(shown.contains("Error: no session 19990101T000000-abcdef"), "{shown:?}");
    assert!(shown.contains("/sessions lists this directory's sessions"), "{shown:?}");
    assert!(!shown.contains("mino/") && !shown.contains("error -"), "no methods or codes: {shown:?}");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// On a narrow terminal the banner is broken at words to fit, and the
/// approval's environment line shows PATH shortened, `e` showing it all.
#[test]
fn the_banner_and_the_environment_fit_a_narrow_terminal() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![Reply::call("call_1", "echo hi"), Reply::text("Not run.")]))
        .expect("mock model");
    let scratch = Scratch::new();
    let long_path = format!(
        "{}:/opt/a-rather-long-directory-name/bin:/opt/another-long-directory-name/bin",
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = scratch.command(&mock.base_url());
    cmd.env("PATH", &long_path);
    let mut p = rexpect::spawn_with_options(
        {
            let mut c = on_xterm(&cmd, 40);
            c.env("TERM", "dumb");
            c
        },
        rexpect::reader::Options::new().timeout_ms(Some(TIMEOUT_MS)).strip_ansi_escape_codes(true),
    )
    .expect("spawn");
    let banner = p.exp_string("You> ").expect("prompt");
    for line in banner.lines() {
        assert!(line.trim_end_matches('\r').chars().count() <= 40, "a line wider than 40 columns: {line:?}");
    }
    assert!(banner.contains("History is restored on startup."), "{banner:?}");
    p.send_line("Say hi.").expect("send");
    let screen = p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    // Broken at words to fit: read it as one line.
    let screen = screen.replace("\r\n", " ");
    assert!(screen.contains("(e shows it all)"), "{screen:?}");
    assert!(!screen.contains("another-long-directory-name"), "PATH is shortened: {screen:?}");
    p.send_line("e").expect("show the environment");
    let full = p.exp_string("Approve this operation? [y/N] ").expect("asked again");
    assert!(full.contains("/opt/another-long-directory-name/bin"), "the full PATH: {full:?}");
    p.send_line("n").expect("deny");
    p.exp_string("Not run.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/env").expect("/env");
    p.exp_string("/opt/another-long-directory-name/bin").expect("/env shows it too");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// The model's markdown is rendered on a colour terminal: a heading bold,
/// emphasis bold, a code block's keywords coloured; with NO_COLOR it is
/// shown as written.
#[test]
fn markdown_is_rendered_with_syntax_colour_unless_no_color() {
    let rt = runtime();
    let answer = "# Plan\n\nUse **care** here.\n\n```rust\nfn main() {}\n```\nDone.";
    let mock = rt.block_on(MockModel::start(vec![Reply::text(answer), Reply::text(answer)])).expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn_xterm(&scratch.command(&mock.base_url()), 200);
    p.exp_string("You> ").expect("prompt");
    p.send_line("Plan.").expect("send");
    let shown = p.exp_string("Done.").expect("answer");
    assert!(shown.contains("\x1b[1m\x1b[4mPlan\x1b[0m"), "the heading is bold: {shown:?}");
    assert!(shown.contains("Use \x1b[1mcare\x1b[22m here."), "emphasis is bold: {shown:?}");
    assert!(shown.contains("\x1b[35mfn\x1b[0m"), "the keyword is coloured: {shown:?}");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");

    let mut cmd = scratch.command(&mock.base_url());
    cmd.arg("--new");
    let mut cmd = on_xterm(&cmd, 200);
    cmd.env("NO_COLOR", "1");
    let mut p =
        rexpect::spawn_with_options(cmd, rexpect::reader::Options::new().timeout_ms(Some(TIMEOUT_MS))).expect("spawn");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Plan again.").expect("send");
    let shown = p.exp_string("Done.").expect("answer");
    assert!(shown.contains("Use **care** here."), "as written: {shown:?}");
    assert!(!shown.contains("\x1b[35m"), "{shown:?}");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");

    // Restored history is rendered as the live answer was.
    let mut p = spawn_xterm(&scratch.command(&mock.base_url()), 200);
    let restored = p.exp_string("\x1b[KYou> ").expect("prompt after the history");
    assert!(restored.contains("Assistant> \x1b[1m\x1b[4mPlan\x1b[0m"), "{restored:?}");
    assert!(restored.contains("\x1b[35mfn\x1b[0m"), "{restored:?}");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// On a capable terminal the approval is a menu that starts on Deny: Enter
/// alone denies, ↓ then Enter approves once, and `y` typed still approves;
/// a `y` typed while the answer streamed, before the menu, is dropped.
#[test]
fn the_approval_menu_starts_on_deny_and_drops_type_ahead() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::Calls {
                text: (0..10).map(|i| format!("word{i} ")).collect(),
                calls: vec![mino_mock_model::ScriptedCall::new("call_1", "touch typed_ahead.txt")],
                delay_ms: 150,
            },
            Reply::text("Not run."),
            Reply::call("call_2", "touch by_arrow.txt"),
            Reply::text("Ran."),
            Reply::call("call_3", "touch by_letter.txt"),
            Reply::text("Ran too."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn_xterm(&scratch.command(&mock.base_url()), 200);
    p.exp_string("You> ").expect("prompt");
    p.send_line("Make a file.").expect("send");
    p.exp_string("word0").expect("streaming has begun");
    press(&mut p, "y\r").expect("type ahead");
    p.exp_string("> Deny (n)").expect("the menu, on Deny");
    p.exp_string("Approve once (y)").expect("the other choices");
    press(&mut p, "\r").expect("enter");
    p.exp_string("Approve this operation? Deny").expect("the answer is shown");
    p.exp_string("Not run.").expect("denied");
    assert!(!scratch.work().join("typed_ahead.txt").exists(), "the typed-ahead y approved nothing");

    p.exp_string("You> ").expect("prompt");
    p.send_line("Again.").expect("send");
    p.exp_string("> Deny (n)").expect("the menu");
    press(&mut p, "\x1b[B").expect("down");
    p.exp_string("> Approve once (y)").expect("moved");
    press(&mut p, "\r").expect("enter");
    p.exp_string("Ran.").expect("approved");
    assert!(scratch.work().join("by_arrow.txt").exists());

    p.exp_string("You> ").expect("prompt");
    p.send_line("Once more.").expect("send");
    p.exp_string("> Deny (n)").expect("the menu");
    press(&mut p, "y\r").expect("the letter");
    p.exp_string("Ran too.").expect("approved");
    assert!(scratch.work().join("by_letter.txt").exists());
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// Tab after `@` completes a workspace path; the file goes with the
/// question (under a header naming it), and mino says it was attached.
#[test]
fn at_path_completes_with_tab_and_attaches_the_file() {
    let rt = runtime();
    let mock = rt.block_on(MockModel::start(vec![Reply::text("Summarised.")])).expect("mock model");
    let scratch = Scratch::new();
    std::fs::write(scratch.work().join("notes.txt"), "remember the oat milk\n").expect("notes");
    let mut p = spawn_xterm(&scratch.command(&mock.base_url()), 200);
    p.exp_string("You> ").expect("prompt");
    press(&mut p, "Summarise @no").expect("type");
    press(&mut p, "\t").expect("tab");
    p.exp_string("tes.txt").expect("completed");
    press(&mut p, " please\r").expect("enter");
    p.exp_string("[@notes.txt: attached, 22 bytes]").expect("attached");
    p.exp_string("Summarised.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    let body = user_texts(&mock.requests(), 0);
    assert!(body.contains("Summarise @notes.txt please"), "{body}");
    assert!(body.contains("[File notes.txt (22 bytes), attached with @notes.txt]"), "{body}");
    assert!(body.contains("remember the oat milk"), "{body}");
}

/// The banner names the approval mode and the AGENTS.md in force; `/mode
/// plan` says what plan mode means, a command is then refused without a
/// question, and `/mode ask` asks again.
#[test]
fn the_banner_shows_the_instructions_and_plan_mode_refuses_without_asking() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::call("c1", "touch planned.txt"),
            Reply::text("The plan is ready."),
            Reply::call("c2", "touch asked.txt"),
            Reply::text("Not run."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    std::fs::write(scratch.work().join("AGENTS.md"), "Use tabs.\n").expect("AGENTS.md");
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("Approval mode ask, sandbox off.").expect("mode in the banner");
    p.exp_string(&format!("Instructions: {} (10 bytes).", scratch.work().join("AGENTS.md").display()))
        .expect("instructions in the banner");
    p.exp_string(BANNER).expect("banner");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/mode").expect("/mode alone");
    p.exp_string("Use /mode ask|rules|sandboxed-auto|plan or /sandbox off|read-only|workspace-write.").expect("modes");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/mode plan").expect("plan mode");
    p.exp_string("Approval mode plan").expect("settings");
    p.exp_string("Plan mode: commands and edits are refused, the model plans; /mode ask leaves it.").expect("note");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Make the file.").expect("send");
    let shown = p.exp_string("The plan is ready.").expect("answer");
    assert!(shown.contains("refused"), "the refusal is shown: {shown:?}");
    assert!(!shown.contains("Approve this operation?"), "nothing is asked in plan mode: {shown:?}");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/mode ask").expect("ask mode");
    p.exp_string("Approval mode ask").expect("settings");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Now make it.").expect("send");
    p.exp_string("Approve this operation? [y/N] ").expect("asked again");
    p.send_line("n").expect("deny");
    p.exp_string("Not run.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert!(!scratch.work().join("planned.txt").exists() && !scratch.work().join("asked.txt").exists());
}

/// A model call of one of the read tools, with these arguments.
fn read_call(call_id: &str, tool: &str, arguments: serde_json::Value) -> Reply {
    Reply::NamedCall { call_id: call_id.into(), name: tool.into(), arguments: arguments.to_string() }
}

/// Reads inside the session's directory ask nothing: each is one numbered
/// line (no approval screen, no `[Tool:`/`[Result:` block), `/expand N`
/// shows what it returned, and a restart shows the same lines, which
/// expand the same.
#[test]
fn a_read_is_one_line_that_expand_shows_whole_and_history_restores_the_same() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            read_call("call_1", "read_file", serde_json::json!({ "path": "notes.txt" })),
            read_call("call_2", "search", serde_json::json!({ "pattern": "alp+ha" })),
            Reply::text("They say alpha."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    std::fs::write(scratch.work().join("notes.txt"), "alpha\nbeta-line\n").expect("notes");
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("What do my notes say?").expect("send question");
    let (before, read_line) = p.exp_regex(r"#1 read notes\.txt \S+ [^\r\n]+").expect("the read's line");
    let (between, search_line) = p.exp_regex(r"#2 search /alp\+ha/ \S+ [^\r\n]+").expect("the search's line");
    let (rest, _) = p.exp_regex("They say alpha\\.").expect("final text");
    for shown in [&before, &between, &rest] {
        assert!(!shown.contains("Approve this operation"), "a read asked: {shown}");
        assert!(!shown.contains("[Tool:") && !shown.contains("[Result:"), "a read shown as a call block: {shown}");
        assert!(!shown.contains("beta-line"), "a read's output shown before /expand: {shown}");
    }
    // The answer's prefix waits for its text: no empty `Assistant>` line
    // stands above reads that come first.
    assert!(!before.contains("Assistant>"), "an empty Assistant> line before the reads: {before:?}");
    assert!(rest.contains("Assistant> "), "the answer's own prefix: {rest:?}");
    assert!(read_line.contains("lines"), "the line says which lines it read: {read_line}");
    assert!(search_line.contains("1 match"), "the line says what the search found: {search_line}");
    p.exp_string("You> ").expect("next prompt");
    p.send_line("/expand 1").expect("expand");
    p.exp_string(&read_line).expect("the expanded read names itself");
    p.exp_string("beta-line").expect("the read's output");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/expand").expect("expand the last");
    p.exp_string(&search_line).expect("the last read");
    p.exp_string("notes.txt:1:alpha").expect("the search's output");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
    // The model got what the reads returned.
    let requests = rt.block_on(mock.wait_for_requests(3, Duration::from_secs(10)));
    assert!(requests[2].body.to_string().contains("beta-line"), "{}", requests[2].body);

    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> What do my notes say?").expect("restored input");
    let (_, restored) = p.exp_regex(r"#1 read notes\.txt \S+ [^\r\n]+").expect("the restored read");
    assert_eq!(restored, read_line, "history shows the line the live turn showed");
    let (_, restored) = p.exp_regex(r"#2 search /alp\+ha/ \S+ [^\r\n]+").expect("the restored search");
    assert_eq!(restored, search_line, "history shows the line the live turn showed");
    p.exp_string("They say alpha.").expect("restored answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/expand 1").expect("expand");
    p.exp_string(&read_line).expect("the restored read expands");
    p.exp_string("beta-line").expect("to the same output");
    p.exp_string("You> ").expect("prompt");
    p.send_control('d').expect("ctrl-d");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
}

/// A read leaving the session's directory asks, naming the path and
/// offering no rule; declined, its line says it was refused and the model
/// learns nothing of the file.
#[test]
fn a_read_leaving_the_workspace_asks_and_declined_reveals_nothing() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            read_call("call_1", "read_file", serde_json::json!({ "path": "../secret.txt" })),
            Reply::text("I could not read it."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    std::fs::write(scratch.dir.path().join("secret.txt"), "the-secret-words\n").expect("secret");
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("Read the secret.").expect("send question");
    p.exp_string("[Tool: read_file]").expect("the read's approval screen");
    p.exp_string("Warning: this reads OUTSIDE the session's directory").expect("said prominently");
    p.exp_string(&format!("Path: {}", scratch.dir.path().join("secret.txt").display()))
        .expect("the path, where it leads");
    p.exp_string(ui_outside_choices()).expect("no rule offered");
    p.exp_string("Approve this operation? [y/N] ").expect("the question");
    p.send_line("").expect("decline with Enter");
    let (_, line) = p.exp_regex(r"#1 read \.\./secret\.txt \S+ refused[^\r\n]*").expect("the read's line");
    assert!(line.contains("outside the session's directory"), "{line}");
    p.exp_string("I could not read it.").expect("final text");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    let requests = rt.block_on(mock.wait_for_requests(2, Duration::from_secs(10)));
    assert!(!requests[1].body.to_string().contains("the-secret-words"), "{}", requests[1].body);
}

fn ui_outside_choices() -> &'static str {
    "y: approve once | n, or n: reason: deny (no rule covers a path outside the session's directory)"
}

#[test]
fn rewind_shows_the_plan_declines_by_default_and_puts_the_file_back_on_yes() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![
            Reply::edit_file("call_1", "shopping.txt", "jam\n", "milk\n", false),
            Reply::text("Swapped."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let list = scratch.work().join("shopping.txt");
    std::fs::write(&list, "bread\njam\n").expect("write the list");
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("Swap jam for milk.").expect("send question");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("y").expect("approve");
    p.exp_string("Swapped.").expect("final text");
    p.exp_string("You> ").expect("next prompt");
    assert_eq!(read(&list), "bread\nmilk\n");

    // The plan first; Enter alone declines and nothing is written.
    p.send_line("/rewind").expect("rewind");
    p.exp_string("Rewind 1 turn(s):").expect("the plan");
    p.exp_regex(r"put back: \S*shopping\.txt").expect("the file it puts back");
    p.exp_string("Rewind: put these files back? [y/N] ").expect("the question");
    p.send_line("").expect("Enter");
    p.exp_string("Nothing was changed.").expect("declined");
    p.exp_string("You> ").expect("prompt");
    assert_eq!(read(&list), "bread\nmilk\n", "declining wrote nothing");

    p.send_line("/rewind").expect("rewind again");
    p.exp_string("Rewind: put these files back? [y/N] ").expect("the question");
    p.send_line("y").expect("yes");
    p.exp_regex(r"put back: \S*shopping\.txt").expect("the outcome");
    p.exp_string("Rewound 1 turn(s)").expect("done");
    p.exp_string("You> ").expect("prompt");
    assert_eq!(read(&list), "bread\njam\n", "the content from before the turn");

    // Nothing is left to rewind.
    p.send_line("/rewind").expect("rewind once more");
    p.exp_string("Nothing to rewind that far").expect("nothing left");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

#[test]
fn fork_continues_in_a_new_session_holding_the_turns_up_to_the_one_chosen_and_keeps_the_old_one() {
    let rt = runtime();
    let mock = rt
        .block_on(MockModel::start(vec![Reply::text("Paris."), Reply::text("Lyon."), Reply::text("Rome.")]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("Capital of France?").expect("first question");
    p.exp_string("Paris.").expect("first answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Second city?").expect("second question");
    p.exp_string("Lyon.").expect("second answer");
    p.exp_string("You> ").expect("prompt");
    let sessions = scratch.home().join("sessions");
    let journals = || -> Vec<std::path::PathBuf> {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&sessions)
            .expect("sessions")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        files
    };
    let old = journals().pop().expect("the session");
    let before = std::fs::read(&old).expect("read");

    // Forks at the second-last turn and continues there: no question asked.
    p.send_line("/fork 2").expect("fork");
    p.exp_regex(r"Forked 1 turn\(s\) \(through turn-1\) of session \S+ into session \S+; continuing there")
        .expect("said");
    p.exp_string("You> ").expect("prompt");
    assert_eq!(std::fs::read(&old).expect("read"), before, "the old session is unchanged");
    assert_eq!(journals().len(), 2);
    p.send_line("Capital of Italy?").expect("question in the fork");
    p.exp_string("Rome.").expect("answer in the fork");
    p.exp_string("You> ").expect("prompt");
    let requests = mock.requests();
    let last = requests.last().expect("a request");
    let input = last.body["input"].to_string();
    assert!(input.contains("Capital of France?") && input.contains("Capital of Italy?"), "{input}");
    assert!(!input.contains("Second city?"), "the turn after the fork is not in it: {input}");

    p.send_line("/fork 9").expect("too far");
    p.exp_string("Nothing to fork that far").expect("refused");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
}

/// An MCP call's `a` asks which rule: Enter for this tool, `*` for every
/// tool of its server (the server's rule is taken here). Under `/mode rules` the
/// rule then approves another tool of the server without asking, and
/// `/rules` lists it. Needs the Python SDK's MCP server (`eval "$(scripts/test
/// mcp-env)"`); skipped without it outside CI.
#[test]
fn an_mcp_call_grants_a_rule_for_every_tool_of_its_server() {
    let (Ok(python), Ok(script)) = (std::env::var("MINO_TEST_MCP_PYTHON"), std::env::var("MINO_TEST_MCP_SERVER_PY"))
    else {
        assert!(std::env::var_os("CI").is_none(), "scripts/test sets the MCP servers' variables in CI");
        eprintln!("skipped: MINO_TEST_MCP_PYTHON is not set (eval \"$(scripts/test mcp-env)\" sets it)");
        return;
    };
    let rt = runtime();
    let call = |id: &str, name: &str, arguments: &str| Reply::NamedCall {
        call_id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    let mock = rt
        .block_on(MockModel::start(vec![
            call("c1", "mcp__py__echo", r#"{"text":"from the first"}"#),
            Reply::text("First done."),
            call("c2", "mcp__py__big", r#"{"bytes":7}"#),
            Reply::text("Second done."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let table = format!(
        "[mcp_servers.py]\ncommand = {python:?}\nargs = [{script:?}, \"--transport\", \"stdio\"]\nstartup_timeout_sec = 60\n"
    );
    std::fs::write(scratch.home().join("config.toml"), table).expect("config.toml");
    let mut p = spawn(scratch.command(&mock.base_url()));
    p.exp_string("You> ").expect("prompt");
    p.send_line("First.").expect("send");
    p.exp_string("[Tool: MCP server `py`, tool `echo`]").expect("the MCP approval screen");
    p.exp_string("a/w: always allow this tool or every tool of its server").expect("the rule choices");
    p.exp_string("Approve this operation? [y/N] ").expect("approval question");
    p.send_line("a").expect("allow for the session");
    p.exp_string("Allow in this session the MCP tool [py/echo] (Enter), or * for every tool of the server `py`")
        .expect("which rule");
    p.send_line("*").expect("every tool of the server");
    p.exp_string("rules approve nothing until you switch with /mode rules").expect("ask says so");
    p.exp_string("First done.").expect("answer");

    p.exp_string("You> ").expect("prompt");
    p.send_line("/mode rules").expect("switch the mode");
    p.exp_string("Approval mode rules, sandbox off").expect("settings");
    p.exp_string("You> ").expect("prompt");
    p.send_line("Second.").expect("send");
    p.exp_string("[approved by rule `py/*` (session)]").expect("approved by the server's rule");
    p.exp_string("Second done.").expect("answer");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/rules").expect("list the rules");
    p.exp_string("session mcp `py/*`").expect("the MCP rule");
    p.exp_string("You> ").expect("prompt");
    p.send_line("/exit").expect("exit");
    p.exp_eof().expect("eof");
    assert_eq!(exit_code(&p), Some(0));
    let requests = rt.block_on(mock.wait_for_requests(4, Duration::from_secs(10)));
    assert!(requests[3].body.to_string().contains("xxxxxxx"), "the second call ran: {}", requests[3].body);
}
