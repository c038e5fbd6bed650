//! `mino` without a terminal: flags, the missing API key, a refused session,
//! and the piped demo (the README's main command and the CI smoke test).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

fn run_piped(mut cmd: Command, input: &str) -> (std::process::ExitStatus, String, String) {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn mino");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write stdin");
    drop(stdin);
    // Read both pipes on threads so a full pipe cannot stall the child.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let status = wait_with_timeout(&mut child, Duration::from_secs(120));
    (status, out.join().expect("stdout thread"), err.join().expect("stderr thread"))
}

#[test]
fn help_and_version() {
    let out = Command::new(mino()).arg("--help").output().expect("mino --help");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--demo") && text.contains("--session") && text.contains("OPENAI_API_KEY"), "{text}");

    let out = Command::new(mino()).arg("--version").output().expect("mino --version");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("mino {}", env!("CARGO_PKG_VERSION")));

    let out = Command::new(mino()).arg("--bogus").output().expect("mino --bogus");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn without_an_api_key_it_explains_how_to_set_one_or_try_the_demo() {
    let scratch = Scratch::new();
    let out = Command::new(mino())
        .current_dir(scratch.work())
        .env("MINO_HOME", scratch.home())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .expect("run mino");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("export OPENAI_API_KEY="), "{err}");
    assert!(err.contains("mino --demo"), "{err}");
    // Nothing was created.
    assert!(std::fs::read_dir(scratch.home()).expect("home").next().is_none());
}

#[test]
fn piped_demo_streams_an_answer_asks_for_approval_and_adds_milk() {
    let scratch = Scratch::new();
    let mut cmd = Command::new(mino());
    // The user's own home and settings must stay untouched.
    cmd.arg("--demo")
        .current_dir(scratch.work())
        .env("MINO_HOME", scratch.home())
        .env("HOME", scratch.dir.path())
        .env("MINO_SERVER", server())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("RUST_LOG");
    let (status, out, err) = run_piped(cmd, "Add milk to shopping.txt.\ny\n/exit\n");
    assert!(status.success(), "exit {status:?}\nstdout:\n{out}\nstderr:\n{err}");
    for needle in [
        "History is restored on startup. Bash commands require approval. Use /exit, Ctrl+D, or Ctrl+C to quit.",
        "You> Add milk to shopping.txt.",
        "Assistant> I'll append milk",
        "[Tool: bash]",
        "Command: \"echo milk >> shopping.txt\"",
        "Limits: timeout",
        "Approve this operation? [y/N] y",
        "[Result: success, exit code 0]",
        "Done: milk is now the last line of shopping.txt.",
        // The tokens the (scripted) model reported for the turn and the session.
        "[tokens: ",
        " this turn (",
        " this session]",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}\nstderr:\n{err}");
    }
    let workspace = out
        .lines()
        .find_map(|l| l.strip_prefix("Demo workspace: "))
        .and_then(|rest| rest.split(" (").next())
        .unwrap_or_else(|| panic!("no demo workspace line in:\n{out}"));
    let workspace = std::path::PathBuf::from(workspace);
    assert!(workspace.starts_with(std::env::temp_dir()), "{}", workspace.display());
    let list = read(&workspace.join("work").join("shopping.txt"));
    assert_eq!(list.matches("milk").count(), 1, "{list}");
    assert!(std::fs::read_dir(workspace.join("home").join("sessions")).expect("demo sessions").next().is_some());
    // The demo touched neither MINO_HOME nor the working directory.
    assert!(std::fs::read_dir(scratch.home()).expect("home").next().is_none());
    assert!(std::fs::read_dir(scratch.work()).expect("work").next().is_none());
    let _ = std::fs::remove_dir_all(&workspace);
}

#[test]
fn a_refused_session_prints_the_server_message_and_exits_non_zero() {
    let scratch = Scratch::new();
    let mut cmd = scratch.command("http://127.0.0.1:9/v1");
    cmd.args(["--session", "../escape"]);
    let (status, out, err) = run_piped(cmd, "");
    assert_eq!(status.code(), Some(1), "stdout:\n{out}\nstderr:\n{err}");
    assert!(err.contains("session"), "{err}");
    assert!(!out.contains("History is restored"), "{out}");
}

#[test]
fn piped_turn_keeps_the_server_order_under_heavy_output() {
    let rt = runtime();
    let mock = rt
        .block_on(mino_mock_model::MockModel::start(vec![
            mino_mock_model::Reply::Calls {
                text: vec!["Counting".into(), " now.".into()],
                calls: vec![mino_mock_model::ScriptedCall::new(
                    "call_1",
                    "for i in $(seq 1 4000); do echo line-$i; done; echo err-line >&2",
                )],
                delay_ms: 0,
            },
            mino_mock_model::Reply::text("Counted to four thousand."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let (status, out, err) = run_piped(scratch.command(&mock.base_url()), "Count.\ny\n");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let pos = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("missing {needle:?} in:\n{out}"));
    let text = pos("Assistant> Counting now.");
    let approval = pos("Approve this operation? [y/N] y");
    let first = pos("line-1\n");
    let last = pos("line-4000\n");
    let result = pos("[Result: success, exit code 0]");
    let answer = pos("Counted to four thousand.");
    assert!(
        text < approval && approval < first && first < last && last < result && result < answer,
        "out of order:\n{out}"
    );
    // The command's stderr is a stream of its own: the server reads both
    // pipes as data comes, so its line may land anywhere in the stdout text,
    // even inside a line (a stdout chunk ends where a read ended). It is
    // shown once, after the approval and before the result.
    let err_line = pos("err-line\n");
    assert_eq!(out.matches("err-line\n").count(), 1, "{out}");
    assert!(approval < err_line && err_line < result, "stderr line out of place:\n{out}");
    // Without it, every stdout line, whole and in order.
    let stdout_text = out.replacen("err-line\n", "", 1);
    let lines: Vec<&str> = stdout_text.lines().filter(|l| l.starts_with("line-")).collect();
    let expected: Vec<String> = (1..=4000).map(|i| format!("line-{i}")).collect();
    assert!(lines == expected, "stdout lines lost or out of order:\n{out}");
}

#[test]
fn a_second_mino_asking_for_an_open_session_is_refused_and_without_an_id_gets_its_own() {
    let scratch = Scratch::new();
    let mut first = scratch.command("http://127.0.0.1:9/v1");
    first.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut first = first.spawn().expect("spawn the first mino");
    let mut first_out = first.stdout.take().expect("stdout");
    // Wait until the first one shows its prompt: the session is open and locked.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("You> ") {
        let n = std::io::Read::read(&mut first_out, &mut buf).expect("read first mino");
        assert!(n > 0, "first mino ended early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    // Asked for by id, the open session is refused with the server's message.
    let banner = String::from_utf8_lossy(&seen).into_owned();
    let session_id = banner
        .split_whitespace()
        .skip_while(|word| *word != "session")
        .nth(1)
        .unwrap_or_else(|| panic!("no session id in the banner: {banner}"))
        .to_string();
    let mut second = scratch.command("http://127.0.0.1:9/v1");
    second.args(["--session", &session_id]);
    let (status, out, err) = run_piped(second, "");
    assert_eq!(status.code(), Some(1), "stdout:\n{out}\nstderr:\n{err}");
    assert!(err.contains("another Mino process"), "{err}");
    assert!(!out.contains("You>"), "{out}");
    // Without an id, a second mino in the same directory gets a session of its own.
    let (status, out, err) = run_piped(scratch.command("http://127.0.0.1:9/v1"), "");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("session ") && !out.contains(&session_id), "{out}");
    drop(first.stdin.take());
    let status = wait_with_timeout(&mut first, Duration::from_secs(60));
    assert!(status.success(), "{status:?}");
}

#[test]
fn piped_demo_declined_command_is_not_run() {
    let scratch = Scratch::new();
    let mut cmd = Command::new(mino());
    cmd.arg("--demo")
        .current_dir(scratch.work())
        .env("MINO_HOME", scratch.home())
        .env("HOME", scratch.dir.path())
        .env("MINO_SERVER", server())
        .env_remove("RUST_LOG");
    let (status, out, err) = run_piped(cmd, "Add milk to shopping.txt.\nno\n");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("Approve this operation? [y/N] no"), "{out}");
    assert!(out.contains("[Result: refused]"), "{out}");
    assert!(out.contains("Okay, I did not run it"), "{out}");
    let workspace = out
        .lines()
        .find_map(|l| l.strip_prefix("Demo workspace: "))
        .and_then(|rest| rest.split(" (").next())
        .unwrap_or_else(|| panic!("no demo workspace line in:\n{out}"));
    let workspace = std::path::PathBuf::from(workspace);
    assert!(!read(&workspace.join("work").join("shopping.txt")).contains("milk"));
    let _ = std::fs::remove_dir_all(&workspace);
}

/// The demo's edit: the approval shows the tool, the path and the unified
/// diff (plain text through a pipe: no colour codes), and once approved the
/// file holds the edit and the result shows the diff written.
#[test]
fn piped_demo_shows_an_edit_as_a_diff_and_applies_it() {
    let scratch = Scratch::new();
    let mut cmd = Command::new(mino());
    cmd.arg("--demo")
        .current_dir(scratch.work())
        .env("MINO_HOME", scratch.home())
        .env("HOME", scratch.dir.path())
        .env("MINO_SERVER", server())
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG");
    let (status, out, err) = run_piped(cmd, "Add butter after bread.\ny\n");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let approval = "[Tool: edit_file]\nPath: shopping.txt\nSize after the edit: 18 bytes\n--- a/shopping.txt\n+++ b/shopping.txt\n@@ -1,2 +1,3 @@\n bread\n+butter\n eggs\ny: approve once | n, or n: reason: deny | a: allow for this session | w: allow in this workspace | d: deny for this session | D: deny in this workspace\nApprove this operation? [y/N] y";
    assert!(out.contains(approval), "{out}");
    assert!(!out.contains('\u{1b}'), "no colour codes through a pipe: {out:?}");
    assert!(out.contains("Edited shopping.txt: replaced 1 occurrence of old_text.\n\n--- a/shopping.txt"), "{out}");
    assert!(out.contains("[Result: success]"), "{out}");
    assert!(out.contains("Done: butter now follows bread"), "{out}");
    let workspace = out
        .lines()
        .find_map(|l| l.strip_prefix("Demo workspace: "))
        .and_then(|rest| rest.split(" (").next())
        .unwrap_or_else(|| panic!("no demo workspace line in:\n{out}"));
    let workspace = std::path::PathBuf::from(workspace);
    assert_eq!(read(&workspace.join("work").join("shopping.txt")), "bread\nbutter\neggs\n");
    let _ = std::fs::remove_dir_all(&workspace);
}

/// The session id `mino` names in its header line (`… - session ID …`),
/// the last one printed.
fn session_in_header(out: &str) -> String {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with("Mino ") && l.contains(" - session "))
        .unwrap_or_else(|| panic!("no session header in:\n{out}"));
    line.split(" - session ").nth(1).and_then(|rest| rest.split_whitespace().next()).expect("an id").to_string()
}

/// The line of `--list` or `/sessions` output naming `id`.
fn listed<'a>(out: &'a str, id: &str) -> &'a str {
    out.lines().find(|l| l.trim_start().starts_with(id)).unwrap_or_else(|| panic!("{id} not listed in:\n{out}"))
}

#[test]
fn sessions_are_listed_started_and_opened_from_the_command_line_and_the_chat() {
    const MILK: &str = "echo milk >> shopping.txt; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)";
    let rt = runtime();
    let mock = rt
        .block_on(mino_mock_model::MockModel::start(vec![
            mino_mock_model::Reply::call("call_1", MILK),
            mino_mock_model::Reply::text("Hello from a new session."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let command = || scratch.command(&mock.base_url());

    // A session left with an unknown result by a real crash mid-command.
    let (status, out, err) = run_piped(command(), "Add milk to shopping.txt.\ny\n");
    assert_eq!(status.code(), Some(1), "the server was killed:\n{out}\n{err}");
    let crashed = session_in_header(&out);

    // `mino --list`: the session, its title and turns, and its marks.
    let mut list = command();
    list.arg("--list");
    let (status, out, err) = run_piped(list, "");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let line = listed(&out, &crashed);
    assert!(line.contains("Add milk to shopping.txt.") && line.contains("1 turn"), "{line}");
    assert!(line.contains("[unknown result: acknowledge when opened]"), "{line}");
    assert!(!out.contains("You>"), "--list only lists:\n{out}");

    // `mino --new`, then `/sessions` and `/open` of the crashed one: its
    // recovery is shown and its gate applies (piped: nothing can be
    // acknowledged, so chat stays refused).
    let mut new = command();
    new.arg("--new");
    let input = format!("/sessions\n/open {crashed}\nIs milk on the list?\n");
    let (status, out, err) = run_piped(new, &input);
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let fresh = out
        .lines()
        .find(|l| l.starts_with("Mino ") && l.contains(" - session "))
        .and_then(|l| l.split(" - session ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the new session's header")
        .to_string();
    assert_ne!(fresh, crashed);
    assert!(listed(&out, &fresh).contains("[current]"), "{out}");
    assert!(listed(&out, &crashed).contains("[unknown result: acknowledge when opened]"), "{out}");
    let pos = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("missing {needle:?} in:\n{out}"));
    let unknown = pos("A previous command started, but its result is unknown.");
    let command_line = pos(&format!("Command: {MILK:?}"));
    let header = pos(&format!("session {crashed} (Add milk to shopping.txt.)"));
    let refused = pos("Error: Acknowledge unknown tool results before continuing");
    assert!(unknown < command_line && command_line < header && header < refused, "out of order:\n{out}");
    assert!(err.contains("Unknown tool results require acknowledgement in an interactive terminal"), "{err}");
    assert_eq!(read(&scratch.work().join("shopping.txt")), "milk\n", "nothing was run again");

    // `mino --session ID` opens that one; `/new` switches to a new session,
    // where the conversation goes on.
    let mut open = command();
    open.args(["--session", &fresh]);
    let (status, out, err) = run_piped(open, "/new\nSay hello.\n");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let first_header = out.find(&format!("session {fresh}")).unwrap_or_else(|| panic!("opened {fresh}:\n{out}"));
    let third = session_in_header(&out);
    assert!(third != fresh && third != crashed, "{out}");
    assert!(out.find(&format!("session {third}")).expect("new header") > first_header);
    assert!(out.contains("Assistant> Hello from a new session."), "{out}");

    let mut list = command();
    list.arg("--list");
    let (status, out, _) = run_piped(list, "");
    assert!(status.success());
    assert!(listed(&out, &third).contains("Say hello."), "titled by its first question:\n{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("  ")).count(), 3, "{out}");

    let mut both = command();
    both.args(["--list", "--new"]);
    let (status, _, err) = run_piped(both, "");
    assert_eq!(status.code(), Some(2), "{err}");
}

/// `/compact` says in one line what happened, and the next question is sent
/// with the summary instead of the earlier turn.
#[test]
fn slash_compact_says_what_happened_and_the_next_question_sends_the_summary() {
    let rt = runtime();
    let mock = rt
        .block_on(mino_mock_model::MockModel::start(vec![
            mino_mock_model::Reply::text("Paris."),
            mino_mock_model::Reply::summary("They asked about France."),
            mino_mock_model::Reply::text("Rome."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let (status, out, err) =
        run_piped(scratch.command(&mock.base_url()), "/compact\nCapital of France?\n/compact\nCapital of Italy?\n");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let pos = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("missing {needle:?} in:\n{out}"));
    let nothing = pos("Not compacted: nothing to compact");
    let compacted = pos("Compacted: 1 turn summarised by the model.");
    assert!(nothing < pos("Paris.") && pos("Paris.") < compacted && compacted < pos("Rome."), "{out}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let input = requests[2].body["input"].as_array().expect("input");
    assert_eq!(input.len(), 2, "the summary and the question: {input:?}");
    assert!(input[0].to_string().contains("They asked about France."), "{input:?}");
}

/// A compaction inside a turn (automatic, past a tiny context window) is
/// told in one line when it starts and what it did when it ends.
#[test]
fn an_automatic_compaction_during_a_turn_is_shown() {
    let rt = runtime();
    let mock = rt
        .block_on(mino_mock_model::MockModel::start(vec![
            mino_mock_model::Reply::text("Paris."),
            mino_mock_model::Reply::summary("They asked about France."),
            mino_mock_model::Reply::text("Rome."),
        ]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut cmd = scratch.command(&mock.base_url());
    // The mock reports about a token per four bytes: far past 80 % of 10.
    cmd.env("MINO_CONTEXT_WINDOW", "10");
    let (status, out, err) = run_piped(cmd, "Capital of France?\nCapital of Italy?\n");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let pos = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("missing {needle:?} in:\n{out}"));
    let started = pos("Compacting the conversation…\n");
    let ended = pos("Compacted: 1 turn summarised by the model.");
    assert!(pos("Paris.") < started && started < ended && ended < pos("Rome."), "{out}");
}

/// `/model` lists the service's models with the current one marked;
/// `/model NAME` chooses one, and the next question asks it.
#[test]
fn model_lists_the_models_and_model_name_chooses_one() {
    let rt = runtime();
    let mock = rt
        .block_on(mino_mock_model::MockModel::start(vec![mino_mock_model::Reply::text("Asked the large one.")]))
        .expect("mock model");
    let scratch = Scratch::new();
    let (status, out, err) = run_piped(scratch.command(&mock.base_url()), "/model\n/model mock-model-large\nHi\n");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    let pos = |needle: &str| out.find(needle).unwrap_or_else(|| panic!("missing {needle:?} in:\n{out}"));
    let listed = pos("Models the service offers:\n* gpt-5.1\n  mock-model\n  mock-model-large  (32768 tokens)\n");
    let chosen = pos("This session now uses mock-model-large");
    let answer = pos("Asked the large one.");
    assert!(listed < chosen && chosen < answer, "out of order:\n{out}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["model"], "mock-model-large");
}

/// `/image PATH` attaches an image to the next question: the model receives
/// its bytes; a file that is not an image is refused by the server with the
/// reason, the question is not sent and the attachment stays until
/// `/image clear`; history shows each image by name and size.
#[test]
fn slash_image_attaches_an_image_to_the_next_question_and_history_names_it() {
    let rt = runtime();
    let mock = rt
        .block_on(mino_mock_model::MockModel::start(vec![mino_mock_model::Reply::text("A tiny picture.")]))
        .expect("mock model");
    let scratch = Scratch::new();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[7u8; 2040]);
    std::fs::write(scratch.work().join("shot.png"), &png).expect("write shot.png");
    std::fs::write(scratch.work().join("notes.txt"), "not a picture\n").expect("write notes.txt");

    let input = "/image notes.txt\nWhat is this?\n/image clear\n/image shot.png\n/image\nWhat is this?\n";
    let (status, out, err) = run_piped(scratch.command(&mock.base_url()), input);
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("Attached ") && out.contains("notes.txt (14 B)"), "{out}");
    assert!(out.contains("is not an image Mino can send (text)"), "{out}");
    assert!(out.contains("Your question was not sent; 1 image still attached"), "{out}");
    assert!(out.contains("Attached images dropped."), "{out}");
    assert!(out.contains("shot.png (2.0 KiB)"), "{out}");
    assert!(out.contains("A tiny picture."), "{out}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "only the question with the image reached the model");
    let sent = requests[0].body.to_string();
    let data = {
        use std::fmt::Write as _;
        // The data URL's base64 of the file's bytes, computed here without a crate.
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut s = String::new();
        for chunk in png.chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    s.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    s.push('=');
                }
            }
        }
        let mut url = String::new();
        let _ = write!(url, "data:image/png;base64,{s}");
        url
    };
    assert!(sent.contains(&data), "the model received the file's exact bytes");

    let (status, out, err) = run_piped(scratch.command(&mock.base_url()), "");
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("[image: shot.png, 2.0 KiB]"), "history names the image:\n{out}");
}
