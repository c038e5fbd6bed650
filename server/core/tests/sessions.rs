//! Many sessions under one home: which one a process opens, the list a
//! client shows, titles, the trash, switching. Real files in temporary homes.
//!
//! "Another process" is a second `SessionStore` (or a second `Session`) in
//! this test process: the session lock is an `flock`, which belongs to an
//! open file description, so two opens of the lock file exclude each other
//! exactly as two processes do.

use std::path::{Path, PathBuf};

use mino_core::journal::{lock_path, JournalError};
use mino_core::session_store::{ListScope, SessionEntry, SessionStore, StoreError};
use mino_core::{ApprovalDecision, MinoHome, Session, SessionError, ToolStatus, TurnStatus};
use serde_json::{json, Value};

struct Fixture {
    _dir: tempfile::TempDir,
    home: MinoHome,
    a: PathBuf,
    b: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = MinoHome::new(dir.path().join("home"));
    let a = dir.path().join("project-a");
    let b = dir.path().join("project-b");
    std::fs::create_dir_all(&a).expect("mkdir a");
    std::fs::create_dir_all(&b).expect("mkdir b");
    // Canonical, as the store records them.
    let a = std::fs::canonicalize(a).expect("canonical a");
    let b = std::fs::canonicalize(b).expect("canonical b");
    Fixture { _dir: dir, home, a, b }
}

fn store(f: &Fixture, workspace: &Path) -> SessionStore {
    SessionStore::new(f.home.clone(), workspace).expect("store")
}

fn message(text: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
        "content": [{ "type": "output_text", "text": text, "annotations": [] }],
    })
}

fn function_call(call_id: &str, command: &str) -> Value {
    json!({
        "id": format!("fc_{call_id}"), "type": "function_call", "status": "completed",
        "call_id": call_id, "name": "bash", "arguments": json!({ "command": command }).to_string(),
    })
}

fn completed_turn(s: &mut Session, question: &str) {
    let t = s.begin_turn(question).expect("begin");
    s.record_response_without_usage(&t, vec![message("Done.")]).expect("response");
    s.end_turn_without_partial_text(&t, TurnStatus::Completed, None).expect("end");
}

/// A turn whose approved command was started and whose process then died:
/// the session is dropped with the call started and no result.
fn interrupted_after_start(mut s: Session) -> String {
    let t = s.begin_turn("Append milk").expect("begin");
    s.record_response_without_usage(&t, vec![function_call("call_1", "echo milk >> list")]).expect("response");
    s.record_decision(&t, "call_1", ApprovalDecision::Approved).expect("approve");
    s.record_unsandboxed_tool_start(&t, "call_1", "echo milk >> list", "/w").expect("start");
    s.id().to_string()
}

fn list_all(store: &SessionStore, scope: ListScope) -> Vec<SessionEntry> {
    store.list(scope, 500, None).expect("list").sessions
}

fn entry<'a>(entries: &'a [SessionEntry], id: &str) -> &'a SessionEntry {
    entries.iter().find(|e| e.session_id == id).unwrap_or_else(|| panic!("{id} not listed: {entries:?}"))
}

/// Sets a journal's modification time, so "last active" order is the test's.
fn touch(home: &MinoHome, id: &str, secs: i64) {
    let path = home.session_path(id).expect("path");
    let file = std::fs::File::options().write(true).open(path).expect("open");
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::try_from(secs).expect("secs"));
    file.set_modified(t).expect("set mtime");
}

// ------------------------------------------------------------------ choosing at start

#[test]
fn a_second_workspace_never_resumes_the_first_ones_session() {
    let f = fixture();
    let mut store_a = store(&f, &f.a);
    let (mut session_a, _) = store_a.start(None, false).expect("A starts");
    completed_turn(&mut session_a, "Question in A");
    let a_id = session_a.id().to_string();
    assert_eq!(session_a.cwd(), f.a.display().to_string());

    // While A is open: B gets its own, no "open in another process".
    let (session_b, _) = store(&f, &f.b).start(None, false).expect("B starts while A is open");
    assert_ne!(session_b.id(), a_id);
    assert_eq!(session_b.cwd(), f.b.display().to_string());
    let b_id = session_b.id().to_string();
    drop(session_b);

    // After A closes, B resumes B's session, not A's newer one.
    drop(session_a);
    touch(&f.home, &b_id, 1_000);
    let (again_b, _) = store(&f, &f.b).start(None, false).expect("B again");
    assert_eq!(again_b.id(), b_id, "B resumed another workspace's session");
    drop(again_b);
    let (again_a, _) = store(&f, &f.a).start(None, false).expect("A again");
    assert_eq!(again_a.id(), a_id);
    assert_eq!(again_a.transcript().turns.len(), 1);
}

#[test]
fn a_second_process_on_one_workspace_gets_its_own_session() {
    let f = fixture();
    let (first, _) = store(&f, &f.a).start(None, false).expect("first");
    let (second, _) = store(&f, &f.a).start(None, false).expect("second: never -32015");
    assert_ne!(first.id(), second.id());
    assert_eq!(second.cwd(), f.a.display().to_string());
    // A third resumes neither while both are held.
    let (third, _) = store(&f, &f.a).start(None, false).expect("third");
    assert!(third.id() != first.id() && third.id() != second.id());
    // Once the first closes, the next start resumes it (the newest unheld one).
    let first_id = first.id().to_string();
    drop(first);
    touch(&f.home, &first_id, 2_000_000_000);
    let (fourth, _) = store(&f, &f.a).start(None, false).expect("fourth");
    assert_eq!(fourth.id(), first_id);
}

#[test]
fn a_symlinked_workspace_is_the_same_workspace() {
    let f = fixture();
    let link = f.a.parent().expect("parent").join("link-to-a");
    std::os::unix::fs::symlink(&f.a, &link).expect("symlink");
    let (s, _) = store(&f, &f.a).start(None, false).expect("start");
    let id = s.id().to_string();
    drop(s);
    let (again, _) = store(&f, &link).start(None, false).expect("via link");
    assert_eq!(again.id(), id);
}

#[test]
fn an_explicit_id_opens_from_anywhere_and_keeps_its_own_directory() {
    let f = fixture();
    let (mut s, _) = store(&f, &f.a).start(None, false).expect("A");
    completed_turn(&mut s, "In A");
    let id = s.id().to_string();
    drop(s);
    let mut from_b = store(&f, &f.b);
    let (opened, _) = from_b.start(Some(&id), false).expect("open A's session from B");
    assert_eq!(opened.id(), id);
    assert_eq!(opened.cwd(), f.a.display().to_string(), "commands run in the session's own directory");
    assert_eq!(from_b.current_id(), Some(id.as_str()));
    assert_eq!(from_b.info(&opened).cwd, f.a.display().to_string());

    // Held: refused with the lock error (-32015 on the wire), not a new session.
    let err = store(&f, &f.b).start(Some(&id), false).err().expect("held");
    assert!(matches!(err, SessionError::Journal(JournalError::Locked { .. })), "{err}");
    // Missing: named.
    let err = store(&f, &f.b).start(Some("20990101T000000-abcdef"), false).err().expect("missing");
    assert!(matches!(err, SessionError::NotFound { .. }), "{err}");
}

#[test]
fn new_session_starts_fresh_even_when_one_could_be_resumed() {
    let f = fixture();
    let (s, _) = store(&f, &f.a).start(None, false).expect("first");
    let id = s.id().to_string();
    drop(s);
    let (fresh, _) = store(&f, &f.a).start(None, true).expect("new");
    assert_ne!(fresh.id(), id);
}

#[test]
fn the_old_entry_point_chooses_per_workspace_too() {
    let f = fixture();
    let (a, _) = Session::open_or_create(&f.home, None, &f.a).expect("A");
    let a_id = a.id().to_string();
    drop(a);
    let (b, _) = Session::open_or_create(&f.home, None, &f.b).expect("B");
    assert_ne!(b.id(), a_id);
}

// ------------------------------------------------------------------ listing

#[test]
fn the_list_shows_title_turns_held_unknown_and_current() {
    let f = fixture();
    let mut mine = store(&f, &f.a);
    let (mut current, _) = mine.start(None, true).expect("current");
    completed_turn(&mut current, "  Fix the build on CI  \nIt fails since Monday.");
    completed_turn(&mut current, "And the docs?");
    let current_id = current.id().to_string();

    // Held by "another process", with three turns.
    let (mut held, _) = store(&f, &f.a).start(None, true).expect("held");
    for q in ["one", "two", "three"] {
        completed_turn(&mut held, q);
    }
    let held_id = held.id().to_string();

    // A crash after a command started: will need acknowledgement once opened.
    let crashed = interrupted_after_start(Session::create(&f.home, &f.a).expect("create"));
    // Another workspace's session: only in the "all" list.
    let (other, _) = store(&f, &f.b).start(None, true).expect("other");
    let other_id = other.id().to_string();
    drop(other);

    let long = "x".repeat(300);
    let (mut long_title, _) = store(&f, &f.a).start(None, true).expect("long");
    completed_turn(&mut long_title, &long);
    let long_id = long_title.id().to_string();
    drop(long_title);

    let entries = list_all(&mine, ListScope::Workspace);
    assert_eq!(entries.len(), 4, "{entries:?}");
    assert!(entries.iter().all(|e| e.session_id != other_id), "another workspace's session listed");

    let e = entry(&entries, &current_id);
    assert_eq!(e.title.as_deref(), Some("Fix the build on CI"));
    assert_eq!((e.turns, e.current, e.held_elsewhere, e.acknowledgement_required), (2, true, false, false));
    assert_eq!(e.cwd, f.a.display().to_string());
    assert!(e.created_at.starts_with("20") && e.last_active_at.ends_with('Z'), "{e:?}");
    assert_eq!(e.damage, None);

    let e = entry(&entries, &held_id);
    assert_eq!((e.turns, e.current, e.held_elsewhere), (3, false, true));
    assert_eq!(e.title.as_deref(), Some("one"));

    let e = entry(&entries, &crashed);
    assert_eq!((e.turns, e.held_elsewhere, e.acknowledgement_required), (1, false, true), "{e:?}");

    let e = entry(&entries, &long_id);
    assert_eq!(e.title.as_deref().map(|t| t.chars().count()), Some(80));

    // Opened, the crashed session gets its `unknown` result: still flagged,
    // now from the record; acknowledged, the flag clears.
    let (mut reopened, report) = Session::open(&f.home, &crashed).expect("open crashed");
    assert_eq!(report.unacknowledged.len(), 1);
    let e = entry(&list_all(&mine, ListScope::Workspace), &crashed).clone();
    assert!(e.acknowledgement_required && e.held_elsewhere, "{e:?}");
    reopened.acknowledge(None).expect("ack");
    drop(reopened);
    let e = entry(&list_all(&mine, ListScope::Workspace), &crashed).clone();
    assert!(!e.acknowledgement_required && !e.held_elsewhere, "{e:?}");

    let all = list_all(&mine, ListScope::All);
    assert_eq!(all.len(), 5);
    assert_eq!(entry(&all, &other_id).cwd, f.b.display().to_string());
    assert_eq!(entry(&all, &other_id).turns, 0);
    assert_eq!(entry(&all, &other_id).title, None);

    // The held session is still untouched by all this listing.
    completed_turn(&mut held, "four");
}

#[test]
fn a_crash_after_a_long_output_is_found_by_growing_the_tail_read() {
    let f = fixture();
    let mut s = Session::create(&f.home, &f.a).expect("create");
    completed_turn(&mut s, "first");
    let t = s.begin_turn("Run both").expect("begin");
    s.record_response_without_usage(&t, vec![function_call("call_1", "true"), function_call("call_2", "true")])
        .expect("resp");
    s.record_decision(&t, "call_1", ApprovalDecision::Approved).expect("approve");
    s.record_unsandboxed_tool_start(&t, "call_1", "true", "/w").expect("start");
    // Far more than the first 4 KiB read, between the turn's start and its end.
    s.record_tool_result(&t, "call_1", ToolStatus::Success, &"o".repeat(60_000), Some(0)).expect("result");
    s.record_decision(&t, "call_2", ApprovalDecision::Approved).expect("approve 2");
    s.record_unsandboxed_tool_start(&t, "call_2", "true", "/w").expect("start 2");
    let id = s.id().to_string();
    // Held: the turn is running, nothing waits.
    let e = entry(&list_all(&store(&f, &f.b), ListScope::All), &id).clone();
    assert!(e.held_elsewhere && !e.acknowledgement_required, "{e:?}");
    drop(s);
    let e = entry(&list_all(&store(&f, &f.a), ListScope::Workspace), &id).clone();
    assert!(e.acknowledgement_required, "{e:?}");
    assert_eq!(e.turns, 2);
    // Opened and closed again: recovery wrote `unknown` and `interrupted`.
    drop(Session::open(&f.home, &id).expect("open"));
    let e = entry(&list_all(&store(&f, &f.a), ListScope::Workspace), &id).clone();
    assert!(e.acknowledgement_required && !e.held_elsewhere, "{e:?}");
}

#[test]
fn a_long_first_question_and_a_long_last_record_are_read_whole() {
    let f = fixture();
    let mut s = Session::create(&f.home, &f.a).expect("create");
    let question = format!("Summarise this log\n{}", "log line\n".repeat(2_000));
    completed_turn(&mut s, &question);
    let t = s.begin_turn(&"q".repeat(30_000)).expect("begin");
    let id = s.id().to_string();
    drop((s, t));
    let e = entry(&list_all(&store(&f, &f.a), ListScope::Workspace), &id).clone();
    assert_eq!(e.title.as_deref(), Some("Summarise this log"));
    assert_eq!((e.turns, e.acknowledgement_required, e.damage.clone()), (2, false, None), "{e:?}");
}

#[test]
fn pages_follow_each_other_newest_first_without_gaps_or_repeats() {
    let f = fixture();
    let mut ids = Vec::new();
    for i in 0..7 {
        let s = Session::create(&f.home, &f.a).expect("create");
        ids.push(s.id().to_string());
        drop(s);
        touch(&f.home, &ids[i], 1_000 + i as i64);
    }
    // One with the same time as another: the id breaks the tie.
    touch(&f.home, &ids[6], 1_005);
    let store = store(&f, &f.a);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = store.list(ListScope::Workspace, 3, cursor.as_deref()).expect("page");
        pages += 1;
        assert!(page.sessions.len() <= 3);
        seen.extend(page.sessions.iter().map(|e| e.session_id.clone()));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut expected = ids.clone();
    expected.sort_by_key(|id| {
        let modified = std::fs::metadata(f.home.session_path(id).expect("path")).expect("meta").modified().expect("m");
        std::cmp::Reverse((modified, id.clone()))
    });
    assert_eq!(seen, expected);
    assert_eq!(seen[0], ids[6].clone().max(ids[5].clone()), "newest first, ties by id");

    let err = store.list(ListScope::Workspace, 3, Some("not a cursor")).expect_err("bad cursor");
    assert!(matches!(err, StoreError::InvalidInput(_)), "{err}");
    assert!(store.list(ListScope::Workspace, 0, None).is_err(), "a limit of 0 is refused");
}

#[test]
fn a_torn_or_damaged_tail_is_flagged_and_the_rest_is_still_listed() {
    let f = fixture();
    let mut torn = Session::create(&f.home, &f.a).expect("create");
    completed_turn(&mut torn, "Torn one");
    let torn_id = torn.id().to_string();
    drop(torn);
    let path = f.home.session_path(&torn_id).expect("path");
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.extend_from_slice(br#"{"v":2,"seq":5,"kind":"user","turn_id":"turn-2","te"#);
    std::fs::write(&path, &bytes).expect("write");

    let mut flipped = Session::create(&f.home, &f.a).expect("create");
    completed_turn(&mut flipped, "Flipped one");
    let flipped_id = flipped.id().to_string();
    drop(flipped);
    let path = f.home.session_path(&flipped_id).expect("path");
    let text = std::fs::read_to_string(&path).expect("read").replace("\"completed\"", "\"completes\"");
    std::fs::write(&path, text).expect("write");

    let good = Session::create(&f.home, &f.a).expect("create");
    let good_id = good.id().to_string();
    drop(good);

    let entries = list_all(&store(&f, &f.a), ListScope::Workspace);
    assert_eq!(entries.len(), 3);
    let e = entry(&entries, &torn_id);
    assert!(e.damage.as_deref().is_some_and(|d| d.contains("torn")), "{e:?}");
    assert_eq!((e.turns, e.title.as_deref()), (1, Some("Torn one")), "facts of the records before the tear");
    let e = entry(&entries, &flipped_id);
    assert!(e.damage.as_deref().is_some_and(|d| d.contains("unreadable")), "{e:?}");
    assert_eq!(entry(&entries, &good_id).damage, None);

    // Opening cuts the torn line, and the flag goes.
    drop(Session::open(&f.home, &torn_id).expect("open torn"));
    let entries = list_all(&store(&f, &f.a), ListScope::Workspace);
    assert_eq!(entry(&entries, &torn_id).damage, None);
}

// ------------------------------------------------------------------ titles

#[test]
fn a_rename_survives_reopening_and_is_validated() {
    let f = fixture();
    let mut st = store(&f, &f.a);
    let (mut s, _) = st.start(None, true).expect("start");
    completed_turn(&mut s, "Original question");
    let id = s.id().to_string();
    assert_eq!(st.info(&s).title.as_deref(), Some("Original question"));
    st.rename(&id, "  Release checklist  ").expect("rename");
    assert_eq!(st.info(&s).title.as_deref(), Some("Release checklist"));
    drop(s);
    drop(st);

    let mut again = store(&f, &f.b);
    let (reopened, _) = again.start(Some(&id), false).expect("reopen");
    assert_eq!(again.info(&reopened).title.as_deref(), Some("Release checklist"));
    assert_eq!(entry(&list_all(&again, ListScope::All), &id).title.as_deref(), Some("Release checklist"));
    // Renaming a session another process holds is fine: the journal is not written.
    store(&f, &f.a).rename(&id, "Held but renamed").expect("rename held");
    assert_eq!(again.info(&reopened).title.as_deref(), Some("Held but renamed"));

    for bad in ["", "   ", &"t".repeat(201), "two\nlines"] {
        let err = again.rename(&id, bad).expect_err("invalid title");
        assert!(matches!(err, StoreError::InvalidInput(_)), "{bad:?}: {err}");
    }
    assert!(again.rename(&id, &"t".repeat(200)).is_ok());
    let err = again.rename("20990101T000000-abcdef", "x").expect_err("missing");
    assert!(matches!(err, StoreError::Session(SessionError::NotFound { .. })), "{err}");
    // No temporary files left behind.
    let leftovers: Vec<_> = std::fs::read_dir(f.home.sessions_dir())
        .expect("dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

// ------------------------------------------------------------------ trash

#[test]
fn delete_moves_to_the_trash_and_moving_back_restores() {
    let f = fixture();
    let mut st = store(&f, &f.a);
    let (current, _) = st.start(None, true).expect("current");
    let current_id = current.id().to_string();

    let mut victim = Session::create(&f.home, &f.a).expect("victim");
    completed_turn(&mut victim, "Delete me later");
    let victim_id = victim.id().to_string();
    st.rename(&victim_id, "Doomed").expect("rename");
    let evidence = f.home.sessions_dir().join(format!("{victim_id}.evidence"));
    std::fs::create_dir_all(&evidence).expect("evidence dir");
    std::fs::write(evidence.join("turn-1.call-0.json"), "{}").expect("evidence");

    // Refused while another process holds it, and for the current one.
    let err = st.delete(&victim_id).expect_err("held");
    assert!(matches!(err, StoreError::HeldElsewhere { .. }), "{err}");
    assert!(f.home.session_path(&victim_id).expect("p").exists());
    let err = st.delete(&current_id).expect_err("current");
    assert!(matches!(err, StoreError::Current { .. }), "{err}");
    drop(victim);

    let trashed = st.delete(&victim_id).expect("delete");
    assert!(trashed.starts_with(f.home.trash_dir()), "{}", trashed.display());
    for name in [format!("{victim_id}.jsonl"), format!("{victim_id}.title"), format!("{victim_id}.lock")] {
        assert!(trashed.join(&name).is_file(), "{name} not in the trash");
        assert!(!f.home.sessions_dir().join(&name).exists(), "{name} left behind");
    }
    assert!(trashed.join(format!("{victim_id}.evidence/turn-1.call-0.json")).is_file());
    assert!(list_all(&st, ListScope::All).iter().all(|e| e.session_id != victim_id));
    let err = Session::open(&f.home, &victim_id).err().expect("gone");
    assert!(matches!(err, SessionError::NotFound { .. }), "{err}");

    // Restore by moving everything back.
    for item in std::fs::read_dir(&trashed).expect("trash").flatten() {
        std::fs::rename(item.path(), f.home.sessions_dir().join(item.file_name())).expect("move back");
    }
    let (restored, _) = Session::open(&f.home, &victim_id).expect("restored session opens");
    assert_eq!(restored.transcript().turns.len(), 1);
    assert_eq!(entry(&list_all(&st, ListScope::All), &victim_id).title.as_deref(), Some("Doomed"));
    drop(restored);
    // Trashed again, it gets a directory of its own.
    let again = st.delete(&victim_id).expect("delete again");
    assert_ne!(again, trashed);
}

// ------------------------------------------------------------------ switching

#[test]
fn switching_locks_the_new_session_before_releasing_the_old() {
    let f = fixture();
    let mut st = store(&f, &f.a);
    let (mut current, _) = st.start(None, true).expect("start");
    let first = current.id().to_string();
    let crashed = interrupted_after_start(Session::create(&f.home, &f.b).expect("create"));

    let (info, report) = st.open(&mut current, &crashed).expect("open");
    assert_eq!(info.session_id, crashed);
    assert_eq!(info.cwd, f.b.display().to_string());
    assert_eq!(current.id(), crashed);
    assert_eq!(report.unacknowledged.len(), 1, "recovery ran on the newly opened session");
    // The old one is released: another process may open it now.
    drop(Session::open(&f.home, &first).expect("the old session is free"));
    // The new one is held: another process may not.
    let err = Session::open(&f.home, &crashed).err().expect("held");
    assert!(matches!(err, SessionError::Journal(JournalError::Locked { .. })), "{err}");

    // A held target leaves the current session as it was.
    let (other, _) = store(&f, &f.a).start(None, true).expect("other");
    let err = st.open(&mut current, other.id()).expect_err("held elsewhere");
    assert!(matches!(err, StoreError::Session(SessionError::Journal(JournalError::Locked { .. }))), "{err}");
    assert_eq!(current.id(), crashed);
    assert_eq!(st.current_id(), Some(crashed.as_str()));

    // Refused while a turn runs.
    current.acknowledge(None).expect("ack");
    let t = current.begin_turn("running").expect("begin");
    assert!(matches!(st.new_session(&mut current, None), Err(StoreError::Session(SessionError::TurnInProgress(_)))));
    current.end_turn_without_partial_text(&t, TurnStatus::Completed, None).expect("end");

    let (info, _) = st.new_session(&mut current, Some(&f.b)).expect("new");
    assert_eq!(info.cwd, f.b.display().to_string());
    assert_eq!(info.title, None);
    assert_eq!(st.current_id(), Some(info.session_id.as_str()));
    drop(Session::open(&f.home, &crashed).expect("released after new"));

    // Opening the current one again opens nothing.
    let id = current.id().to_string();
    let (info, _) = st.open(&mut current, &id).expect("same");
    assert_eq!(info.session_id, id);
}

#[test]
fn a_journal_swapped_under_the_lock_stays_held_and_is_never_resumed() {
    let f = fixture();
    let (mut held, _) = store(&f, &f.a).start(None, true).expect("held");
    completed_turn(&mut held, "Original");
    let id = held.id().to_string();
    let path = held.path().to_path_buf();
    // A sync tool replaces the file: same bytes, new inode.
    let copy = path.with_extension("swap");
    std::fs::copy(&path, &copy).expect("copy");
    std::fs::rename(&copy, &path).expect("rename over");
    assert!(lock_path(&path).exists());

    let other = store(&f, &f.a);
    let e = entry(&list_all(&other, ListScope::Workspace), &id).clone();
    assert!(e.held_elsewhere, "{e:?}");
    assert_eq!(e.turns, 1);
    let mut other = other;
    let (second, _) = other.start(None, false).expect("second process");
    assert_ne!(second.id(), id, "a session held elsewhere was resumed");
    let err = other.delete(&id).expect_err("held");
    assert!(matches!(err, StoreError::HeldElsewhere { .. }), "{err}");
}

// ------------------------------------------------------------------ usage

fn usage(input: u64, output: u64) -> mino_core::usage::Usage {
    mino_core::usage::Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Default::default()
    }
}

/// A turn whose one response used `tokens`, ended `completed`.
fn turn_with_usage(s: &mut Session, question: &str, tokens: mino_core::usage::Usage) {
    let t = s.begin_turn(question).expect("begin");
    s.record_response(&t, vec![message("Done.")], Some(tokens), None).expect("response");
    s.end_turn_without_partial_text(&t, TurnStatus::Completed, None).expect("end");
}

#[test]
fn the_list_shows_each_sessions_tokens_summed_over_all_its_turns() {
    let f = fixture();
    let (mut s, _) = store(&f, &f.a).start(None, false).expect("start");
    // Enough turns that the first ones lie far outside the tail the list reads.
    for i in 0..40 {
        turn_with_usage(&mut s, &format!("Question {i}: {}", "words ".repeat(40)), usage(100, 10));
    }
    let id = s.id().to_string();
    let listed = entry(&list_all(&store(&f, &f.a), ListScope::Workspace), &id).usage;
    assert_eq!(listed, Some(usage(4000, 400)), "the sum of all 40 turns, as mino/history has it");
    assert_eq!(listed, s.transcript().usage);

    // A turn still running adds its responses to the last turn's sum.
    let t = s.begin_turn("One more").expect("begin");
    s.record_response(&t, vec![function_call("call_1", "true")], Some(usage(7, 3)), None).expect("response");
    let listed = entry(&list_all(&store(&f, &f.a), ListScope::Workspace), &id).usage;
    assert_eq!(listed, Some(usage(4007, 403)));
}

#[test]
fn a_session_whose_last_turn_ended_in_an_older_mino_lists_no_usage_rather_than_a_wrong_one() {
    let f = fixture();
    let (mut s, _) = store(&f, &f.a).start(None, false).expect("start");
    turn_with_usage(&mut s, "First", usage(100, 10));
    let id = s.id().to_string();
    let path = s.path().to_path_buf();
    drop(s);
    // The same file as a Mino before `session_usage` wrote it: the last
    // turn_end without the sum (checksum recomputed).
    let text = std::fs::read_to_string(&path).expect("read");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let last = lines.pop().expect("turn_end");
    let mut record: Value = serde_json::from_str(&last).expect("json");
    assert!(record.get("session_usage").is_some(), "new turn_end carries the sum: {last}");
    let object = record.as_object_mut().expect("object");
    object.remove("session_usage");
    object.remove("crc");
    let body = serde_json::to_string(&record).expect("json");
    let covered = &body[..body.len() - 1];
    let crc = crc32fast::hash(covered.as_bytes());
    lines.push(format!("{covered},\"crc\":\"{crc:08x}\"}}"));
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");

    let listed = entry(&list_all(&store(&f, &f.a), ListScope::Workspace), &id).clone();
    assert_eq!(listed.usage, None);
    assert_eq!((listed.turns, listed.damage.as_deref()), (1, None), "the older file still lists");
    // Opening it still sums every response.
    let (opened, _) = Session::open(&f.home, &id).expect("open");
    assert_eq!(opened.transcript().usage, Some(usage(100, 10)));
}

/// The session's model: the last `model` record wins when the session is
/// reopened, one is refused while a turn is open (nothing is written), and
/// a `model` record at the end of the file does not hide the turns from the
/// list (it belongs to no turn).
#[test]
fn the_last_chosen_model_is_read_back_and_none_is_chosen_mid_turn() {
    let f = fixture();
    let mut s = Session::create(&f.home, &f.a).expect("create");
    assert_eq!(s.transcript().model, None, "a new session uses the configured model");
    completed_turn(&mut s, "First");
    s.record_model("small").expect("choose");
    s.record_model("large").expect("choose again");
    let t = s.begin_turn("Second").expect("begin");
    let refused = s.record_model("other").expect_err("mid-turn");
    assert!(refused.to_string().contains("has not ended"), "{refused}");
    s.end_turn_without_partial_text(&t, TurnStatus::Completed, None).expect("end");
    s.record_model("large-2").expect("choose after the turn");
    let id = s.id().to_string();
    let path = s.path().to_path_buf();
    drop(s);
    let text = std::fs::read_to_string(&path).expect("journal");
    assert!(!text.contains("\"other\""), "a refused choice writes nothing");
    assert_eq!(text.matches("\"kind\":\"model\"").count(), 3);
    assert!(text.lines().filter(|l| l.contains("\"kind\":\"model\"")).all(|l| l.starts_with("{\"v\":3,")));

    let entries = list_all(&store(&f, &f.a), ListScope::Workspace);
    assert_eq!(entry(&entries, &id).turns, 2, "{entries:?}");
    let (reopened, _) = Session::open(&f.home, &id).expect("reopen");
    assert_eq!(reopened.transcript().model.as_deref(), Some("large-2"));
}
