//! Edits at the workspace's edge, end to end (the real server, the model
//! mocked at the HTTP wire): an approved edit raced by a directory swapped
//! for a symbolic link never lands outside the workspace, and an edit of a
//! file outside the workspace tells the model nothing about that file
//! before the person approved (docs/reliability.md, "An edit raced by a
//! swapped directory" and "Edits outside the workspace tell nothing first").

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use mino_e2e::{chat, open, wire, work_dir, MockModel, Reply, Server, TIMEOUT};
use serde_json::Value;

/// `(call_id, output)` of every `function_call_output` in a model request.
fn outputs(body: &Value) -> Vec<(String, String)> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| (item["call_id"].as_str().unwrap_or_default().to_string(), item["output"].to_string()))
        .collect()
}

/// Every file (not directory, not symbolic link) below `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(entry.path()),
                Ok(t) if t.is_symlink() => {}
                _ => found.push(entry.path()),
            }
        }
    }
    found
}

/// The race of issue 26: `d/…/z` inside the workspace, the same chain
/// outside, `s` a link to the outside one, and a swapper exchanging `d` and
/// `s` with `renameat2(RENAME_EXCHANGE)` without pause, while the model
/// writes `d/…/z/helper-N.desktop` again and again. The person approves
/// every card that says inside and declines every one that says outside.
/// Nothing may land outside, no temporary file may appear there, and
/// every `success` names a path inside that holds the bytes.
/// `MINO_RACE_ATTEMPTS` sets the attempts (default 120, in turns of 6).
#[tokio::test(flavor = "multi_thread")]
async fn an_approved_write_raced_by_a_swapped_directory_never_lands_outside() {
    let attempts: usize = std::env::var("MINO_RACE_ATTEMPTS").ok().and_then(|n| n.parse().ok()).unwrap_or(120);
    let chain: PathBuf = (1..=16).map(|i| format!("c{i}")).chain(["z".to_string()]).collect();
    let requested = |i: usize| format!("d/{}/helper-{i}.desktop", chain.display());
    // A turn makes at most 8 model requests: 6 writes and an answer each.
    const PER_TURN: usize = 6;
    let turns = attempts.div_ceil(PER_TURN);
    let mut replies = Vec::new();
    for turn in 0..turns {
        for i in turn * PER_TURN..((turn + 1) * PER_TURN).min(attempts) {
            let content = format!("[Desktop Entry]\nExec=planted {i}\n");
            replies.push(Reply::write_file(&format!("call_{i}"), &requested(i), &content));
        }
        replies.push(Reply::text("Done."));
    }
    let mock = MockModel::start(replies).await.expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home()).canonicalize().expect("canonical");
    let outside = server.home().join("autostart").canonicalize().unwrap_or_else(|_| {
        std::fs::create_dir(server.home().join("autostart")).expect("mkdir");
        server.home().join("autostart").canonicalize().expect("canonical")
    });
    std::fs::create_dir_all(cwd.join("d").join(&chain)).expect("inside chain");
    std::fs::create_dir_all(outside.join(&chain)).expect("outside chain");
    std::os::unix::fs::symlink(&outside, cwd.join("s")).expect("link");
    open(&mut server, &cwd).await;

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        let d = std::ffi::CString::new(cwd.join("d").to_str().expect("utf-8")).expect("c string");
        let s = std::ffi::CString::new(cwd.join("s").to_str().expect("utf-8")).expect("c string");
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two valid NUL-terminated paths.
                let r = unsafe {
                    libc::renameat2(libc::AT_FDCWD, d.as_ptr(), libc::AT_FDCWD, s.as_ptr(), libc::RENAME_EXCHANGE)
                };
                assert_eq!(r, 0, "renameat2: {}", std::io::Error::last_os_error());
                let n = swaps.fetch_add(1, Ordering::Relaxed);
                // Pauses of 0 to 400 µs: the tree holds still long enough
                // for some writes to be proposed inside and go through.
                std::thread::sleep(std::time::Duration::from_micros(n % 5 * 100));
            }
        })
    };

    let (mut approved, mut declined, mut succeeded, mut failed, mut escapes) = (0, 0, 0, 0, 0);
    for _ in 0..turns {
        let turn = chat(&mut server, "Write the helpers.").await;
        loop {
            let n = server.next_notification_of(&turn, TIMEOUT).await;
            match n.method.as_str() {
                wire::method::APPROVAL_REQUEST => {
                    let request: wire::ApprovalRequest = n.parse();
                    let edit = request.edit.expect("an edit card");
                    let decision = if edit.leaves_workspace {
                        declined += 1;
                        wire::Decision::Deny
                    } else {
                        approved += 1;
                        wire::Decision::Approve
                    };
                    server.approval(&turn, &request.call_id, decision).await.expect("decide");
                }
                wire::method::TOOL_RESULT => {
                    let result: wire::ToolResult = n.parse();
                    if result.status == wire::ToolStatus::Success {
                        succeeded += 1;
                        // "Created <path> (N bytes)." names where the bytes are.
                        let named = result.output.strip_prefix("Created ").and_then(|r| r.split(" (").next());
                        let named = named.unwrap_or_else(|| panic!("{}", result.output));
                        assert!(!named.starts_with('/'), "a success names a path outside: {}", result.output);
                    } else {
                        failed += 1;
                    }
                    if !files_under(&outside).is_empty() {
                        escapes += 1;
                    }
                }
                wire::method::TURN_ENDED => break,
                _ => {}
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    let landed = files_under(&outside);
    let inside = files_under(&cwd);
    println!(
        "race end to end: {attempts} writes, {} swaps; approved as inside {approved}, declined as outside {declined}; \
         success {succeeded}, not written {failed}; results after which a file was outside: {escapes}",
        swaps.load(Ordering::Relaxed)
    );
    assert!(landed.is_empty(), "bytes or temporary files landed outside: {landed:?}");
    assert!(inside.iter().all(|p| !p.to_string_lossy().contains(".mino-edit-")), "{inside:?}");
    assert_eq!(inside.len(), succeeded, "every success is one file inside: {inside:?}");
    assert!(succeeded > 0, "the race must let some approved writes through");
}

/// A model probing a file outside the workspace with `edit_file`
/// (`old_text == new_text`: a match would answer "already holds exactly
/// this content", a miss "old_text was not found") and `write_file` (the
/// same content): every probe asks the person first, and declined probes
/// all get the same answer, so the model learns nothing of the file.
#[tokio::test(flavor = "multi_thread")]
async fn probes_of_a_file_outside_the_workspace_ask_first_and_answer_alike() {
    let mock = MockModel::start(vec![
        Reply::edit_file("hit", "../secret.txt", "key=K7", "key=K7", false),
        Reply::edit_file("miss", "../secret.txt", "key=Q2", "key=Q2", false),
        Reply::write_file("same", "../secret.txt", "key=K7x2\n"),
        Reply::edit_file("absent", "../nothing-here.txt", "a", "b", false),
        Reply::edit_file("approved", "../secret.txt", "key=Q2", "key=Q2", false),
        Reply::text("Done."),
    ])
    .await
    .expect("mock");
    let mut server = Server::spawn(&mock).await;
    let cwd = work_dir(server.home());
    let secret = server.home().join("secret.txt");
    std::fs::write(&secret, "key=K7x2\n").expect("secret");
    open(&mut server, &cwd).await;
    let turn = chat(&mut server, "Look around.").await;
    let mut asked = Vec::new();
    loop {
        let n = server.next_notification_of(&turn, TIMEOUT).await;
        match n.method.as_str() {
            wire::method::APPROVAL_REQUEST => {
                let request: wire::ApprovalRequest = n.parse();
                let edit = request.edit.expect("an edit card");
                assert!(edit.leaves_workspace, "{}", request.call_id);
                asked.push(request.call_id.clone());
                let decision =
                    if request.call_id == "approved" { wire::Decision::Approve } else { wire::Decision::Deny };
                server.approval(&turn, &request.call_id, decision).await.expect("decide");
            }
            wire::method::TURN_ENDED => break,
            _ => {}
        }
    }
    assert_eq!(asked, ["hit", "miss", "same", "absent", "approved"], "every probe asks first");
    let requests = mock.requests();
    let last = outputs(&requests.last().expect("a request").body);
    let of = |id: &str| last.iter().find(|(c, _)| c == id).map(|(_, o)| o.clone()).unwrap_or_default();
    for probe in ["miss", "same", "absent"] {
        assert_eq!(of(probe), of("hit"), "{probe} is told apart from a match");
    }
    assert!(of("hit").contains("denied this edit"), "{}", of("hit"));
    // Once approved, the reason is told.
    assert!(of("approved").contains("was not found"), "{}", of("approved"));
    assert_eq!(std::fs::read_to_string(&secret).expect("read"), "key=K7x2\n");
}
