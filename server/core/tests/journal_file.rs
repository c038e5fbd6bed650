//! The session file as a file: its lock, a journal replaced or deleted while
//! open, damage that only looks like a newer format, and lines longer than
//! any record. Real files in temporary homes.

use std::path::{Path, PathBuf};

use mino_core::journal::{lock_path, JournalError, MAX_RECORD_BYTES};
use mino_core::{MinoHome, Session, SessionError, TurnStatus};
use serde_json::{json, Value};

fn home() -> (tempfile::TempDir, MinoHome) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = MinoHome::new(dir.path().join("home"));
    (dir, home)
}

fn message(text: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
        "content": [{ "type": "output_text", "text": text, "annotations": [] }],
    })
}

/// A session with one completed turn (4 records); the session stays open.
fn one_turn(home: &MinoHome) -> (Session, PathBuf) {
    let mut s = Session::create(home, Path::new("/work")).expect("create");
    let t = s.begin_turn("Hello").expect("begin");
    s.record_response_without_usage(&t, vec![message("Hi")]).expect("response");
    s.end_turn_without_partial_text(&t, TurnStatus::Completed, None).expect("end");
    let path = s.path().to_path_buf();
    (s, path)
}

const REPLACED: &str = "was replaced or deleted while Mino had it open";

// ------------------------------------------------------------------ replaced or deleted while open

#[test]
fn a_journal_replaced_by_rename_stops_saving_and_stays_locked() {
    let (_dir, home) = home();
    let (mut s, path) = one_turn(&home);
    let id = s.id().to_string();
    // An editor's save: the same bytes, a new inode at the same path.
    let copy = path.with_extension("swp");
    std::fs::copy(&path, &copy).expect("copy");
    std::fs::rename(&copy, &path).expect("rename over");
    let replaced = std::fs::read(&path).expect("read");

    let err = s.begin_turn("Are you saving?").expect_err("the save point notices");
    assert!(matches!(err, SessionError::Journal(JournalError::Replaced { .. })), "{err}");
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()) && message.contains(REPLACED), "{message}");
    assert!(message.contains("now names another file"), "{message}");
    assert_eq!(std::fs::read(&path).expect("read"), replaced, "the file at the path is not written");
    assert_eq!(s.transcript().turns.len(), 1, "the unsaved turn is not shown");

    // Broken for this process, with the reason.
    let err = s.begin_turn("again").expect_err("broken");
    assert!(err.to_string().contains(REPLACED), "{err}");

    // The lock did not move with the old inode.
    let err = Session::open(&home, &id).err().expect("still locked");
    assert!(matches!(err, SessionError::Journal(JournalError::Locked { .. })), "{err}");
    drop(s);
    let (reopened, _) = Session::open(&home, &id).expect("opens once the holder is gone");
    assert_eq!(reopened.transcript().turns.len(), 1);
}

#[test]
fn a_deleted_journal_stops_saving_and_is_not_recreated() {
    let (_dir, home) = home();
    let (mut s, path) = one_turn(&home);
    std::fs::remove_file(&path).expect("unlink");
    let err = s.begin_turn("Still there?").expect_err("the save point notices");
    let message = err.to_string();
    assert!(message.contains(REPLACED) && message.contains("no longer exists"), "{message}");
    assert!(!path.exists(), "nothing recreated it");
    assert!(lock_path(&path).exists(), "the lock file stays while held");
}

#[test]
fn the_lock_is_a_file_of_its_own_that_is_never_a_link() {
    let (dir, home) = home();
    let (s, path) = one_turn(&home);
    let lock = lock_path(&path);
    assert_eq!(lock.extension().and_then(|e| e.to_str()), Some("lock"));
    assert_eq!(lock.parent(), path.parent());
    assert_eq!(std::fs::metadata(&lock).expect("lock file").len(), 0);
    let id = s.id().to_string();
    drop(s);

    // A link (or anything but a regular file) under the lock's name is refused.
    let outside = dir.path().join("outside");
    std::fs::write(&outside, "not yours").expect("outside");
    std::fs::remove_file(&lock).expect("remove the lock file (nobody holds it)");
    std::os::unix::fs::symlink(&outside, &lock).expect("symlink");
    let err = Session::open(&home, &id).err().expect("refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&outside).expect("outside"), "not yours");
    std::fs::remove_file(&lock).expect("remove the link");
    std::fs::create_dir(&lock).expect("a directory");
    let err = Session::open(&home, &id).err().expect("refused");
    assert!(err.to_string().contains(&lock.display().to_string()), "{err}");
    std::fs::remove_dir(&lock).expect("remove the directory");
    Session::open(&home, &id).expect("the lock file is created again when absent");
}

// ------------------------------------------------------------------ damage that looks newer

fn flip_kind_on_line(path: &Path, line_no: usize) -> Vec<u8> {
    let text = std::fs::read_to_string(path).expect("read");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let line = &mut lines[line_no - 1];
    let at = line.find("\"kind\":\"").expect("kind") + "\"kind\":\"".len();
    // One byte: `user` → `vser`, `turn_end` → `uurn_end`, … (an unknown kind).
    let mut bytes = std::mem::take(line).into_bytes();
    bytes[at] += 1;
    *line = String::from_utf8(bytes).expect("still text");
    let damaged = format!("{}\n", lines.join("\n")).into_bytes();
    std::fs::write(path, &damaged).expect("write");
    damaged
}

#[test]
fn a_flipped_byte_in_a_kind_is_damage_not_a_newer_mino() {
    let (_dir, home) = home();
    let (s, path) = one_turn(&home);
    let id = s.id().to_string();
    drop(s);
    let good = std::fs::read(&path).expect("read");
    for line in [2, 4] {
        std::fs::write(&path, &good).expect("restore");
        let damaged = flip_kind_on_line(&path, line);
        let err = Session::open(&home, &id).err().expect("refused");
        let message = err.to_string();
        assert!(matches!(err, SessionError::Journal(JournalError::Corrupt { .. })), "line {line}: {message}");
        assert!(message.contains(&format!("line {line}")) && message.contains("checksum"), "{message}");
        assert!(!message.contains("newer"), "line {line}: {message}");
        assert_eq!(std::fs::read(&path).expect("read"), damaged, "left as it was (the last line is not cut)");
    }
}

// ------------------------------------------------------------------ lines longer than any record

#[test]
fn a_line_longer_than_any_record_is_cut_at_the_end_and_refused_in_the_middle() {
    let (_dir, home) = home();
    let (s, path) = one_turn(&home);
    let id = s.id().to_string();
    drop(s);
    let good = std::fs::read(&path).expect("read");
    let long = vec![b'x'; MAX_RECORD_BYTES + 10];

    // At the end, with or without a newline: a torn tail.
    for newline in [false, true] {
        let mut bytes = good.clone();
        bytes.extend_from_slice(&long);
        if newline {
            bytes.push(b'\n');
        }
        std::fs::write(&path, &bytes).expect("write");
        let (session, report) = Session::open(&home, &id).expect("opens");
        let tail = report.torn_tail.expect("cut");
        assert_eq!((tail.line, tail.offset), (5, good.len() as u64));
        assert!(tail.reason.contains("longer than any record"), "{}", tail.reason);
        drop(session);
        assert_eq!(std::fs::read(&path).expect("read"), good);
    }

    // In the middle: refused, untouched.
    let mut bytes = good.clone();
    bytes.extend_from_slice(&long);
    bytes.extend_from_slice(b"\n");
    bytes.extend_from_slice(&good[good.iter().position(|&b| b == b'\n').expect("newline") + 1..]);
    std::fs::write(&path, &bytes).expect("write");
    let err = Session::open(&home, &id).err().expect("refused");
    let message = err.to_string();
    assert!(message.contains("line 5") && message.contains("longer than any record"), "{message}");
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "untouched");
}

#[test]
fn a_record_longer_than_the_maximum_is_not_written_and_the_turn_can_still_end() {
    let (_dir, home) = home();
    let mut s = Session::create(&home, Path::new("/work")).expect("create");
    let t = s.begin_turn("Write a novel").expect("begin");
    let before = std::fs::read(s.path()).expect("read");
    let err = s.record_response_without_usage(&t, vec![message(&"x".repeat(MAX_RECORD_BYTES))]).expect_err("too large");
    assert!(err.to_string().contains("longer than the longest record"), "{err}");
    assert_eq!(std::fs::read(s.path()).expect("read"), before, "not a byte written");
    assert!(s.journal().is_broken().is_none(), "not a failed save");
    s.end_turn_without_partial_text(&t, TurnStatus::Failed, Some(err.to_string())).expect("the turn ends on file");
    let id = s.id().to_string();
    drop(s);
    Session::open(&home, &id).expect("the file reopens");
}

// ------------------------------------------------------------------ a lock held by a forked child

/// A command started while a session is open forks, and the child holds a
/// copy of the lock file's descriptor until its `exec` closes it: closed and
/// opened again in that instant, the session is this process's, not
/// "open in another Mino process". The child here holds its copy for 30 ms
/// (a `pre_exec` hook), long past the microseconds a fork usually takes.
#[test]
fn a_session_closed_and_reopened_while_a_child_is_forked_opens() {
    use std::io::Read;
    use std::os::unix::process::CommandExt;

    let (_dir, home) = home();
    let (s, _path) = one_turn(&home);
    let id = s.id().to_string();
    let (mut forked, child_end) = std::io::pipe().expect("pipe");
    let child_fd = std::os::fd::AsRawFd::as_raw_fd(&child_end);
    let mut command = std::process::Command::new("true");
    // SAFETY: the hook calls only write(2) and nanosleep(2), which are
    // async-signal-safe, on a descriptor the parent keeps open.
    unsafe {
        command.pre_exec(move || {
            libc::write(child_fd, b"f".as_ptr().cast(), 1);
            let pause = libc::timespec { tv_sec: 0, tv_nsec: 30_000_000 };
            libc::nanosleep(&pause, std::ptr::null_mut());
            Ok(())
        });
    }
    let spawned = std::thread::spawn(move || command.status().expect("spawn true"));
    let mut byte = [0u8; 1];
    forked.read_exact(&mut byte).expect("the child was forked");
    // The child holds the lock's descriptor now; this process lets go.
    drop(s);
    let (reopened, _) = Session::open(&home, &id).expect("reopens: the lock is this process's own");
    assert_eq!(reopened.transcript().turns.len(), 1);
    assert!(spawned.join().expect("join").success());
    drop(child_end);
}
