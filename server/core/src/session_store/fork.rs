//! Forking a session (`mino/sessions/fork`, ACP's `session/fork`): a new
//! session whose history is the old one's up to and including one turn,
//! for "try again from here" without losing the first attempt. The old
//! session is only read: not a byte of its files changes.
//!
//! What is copied, in the old file's order, renumbered from `seq` 1 under a
//! new header that names where it came from (`forked_from`): every record up
//! to the chosen turn's `turn_end`, then only the `recovery_ack`s of the
//! copied turns (an acknowledgement belongs to its turn, whenever it was
//! made). A `unknown` result never acknowledged stays unacknowledged, so
//! the fork gates chat as the old session does. Beside it, the files those
//! records name: the before-content of the copied edits (so a rewind in
//! the fork works), the questions' images and the evidence of `unknown`
//! calls, each hard-linked (copied where a link cannot be made).
//!
//! Crash-safe: the side files are linked and their directories synced
//! first; the journal is written whole under a temporary name, synced,
//! linked to its name (which must not exist) and the sessions directory
//! synced. A crash before that link leaves no session (at most side
//! directories no journal names, and a temporary file); after it, a complete
//! one. See docs/journal.md ("Forks").

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::blobs;
use crate::home;
use crate::journal::record::{encode_line, ForkedFrom, RecordBody, ToolStatus};
use crate::session::Session;
use crate::transcript::{SessionHeader, Transcript};

use super::locks::{open_read, try_lock_exclusive};
use super::{SessionInfo, SessionStore, StoreError};

/// Why a fork was refused; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForkError {
    #[error("no turn {turn_id} in session {session_id}")]
    UnknownTurn { session_id: String, turn_id: String },
    #[error("turn {0} has not ended; wait for it to end (or cancel it), then fork")]
    TurnOpen(String),
    #[error("turn {0} was rewound, so its history is not the files' state; fork from a turn before it")]
    Rewound(String),
    #[error("the copied turns' before-content is {need} bytes, more than a session's store of before-content holds ({limit} bytes, MINO_REWIND_SESSION_LIMIT_BYTES); raise it, or fork from an earlier turn")]
    TooLarge { need: u64, limit: u64 },
}

/// Where a fork's copy ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkPoint {
    /// After this turn's `turn_end` (then only its turns' acknowledgements).
    Turn(String),
    /// Every record: the session as it stands (ACP's `session/fork`, which
    /// names no turn), with its last turn's id for the header (`None`: no
    /// turn yet). Refused while that turn runs.
    Whole(Option<String>),
}

/// What a fork made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forked {
    pub info: SessionInfo,
    pub forked_from: ForkedFrom,
    /// Turns the fork holds.
    pub turns: usize,
}

impl SessionStore {
    /// Forks session `id` at `point` into a new session of the same
    /// directory (not made current). `current` is this process's open
    /// session: forking it needs its records up to `point` to be synced
    /// (they are: a turn's end is); the caller holds it, so nothing is
    /// appended meanwhile. Another session is refused while another process
    /// holds it, and locked while it is read so none opens it meanwhile.
    pub fn fork(&self, current: &Session, id: &str, point: &ForkPoint) -> Result<Forked, StoreError> {
        let limits = self.blob_limits;
        let source = if current.id() == id { current.path().to_path_buf() } else { self.existing_journal(id)? };
        // Held for the whole read when the session is not this process's.
        let _held = if current.id() == id { None } else { Some(hold(id, &source)?) };
        let new_id = home::new_session_id();
        let target = self.home.session_path(&new_id)?;
        let staged = Staged::new(&target);
        let result = write_fork(&source, id, &new_id, &target, point, limits, &staged);
        if result.is_err() {
            staged.remove();
        }
        let (forked_from, transcript) = result?;
        let title = transcript.turns.first().and_then(|t| super::default_title(&t.input));
        Ok(Forked {
            info: SessionInfo { session_id: new_id, journal_path: target, cwd: transcript.header.cwd.clone(), title },
            forked_from,
            turns: transcript.turns.len(),
        })
    }
}

/// Locks another session's lock file and journal (exclusively, without
/// creating either): `HeldElsewhere` when a process holds it.
fn hold(id: &str, journal: &Path) -> Result<Vec<File>, StoreError> {
    let held = || StoreError::HeldElsewhere { id: id.to_string() };
    let io_err = |path: &Path, action, source| StoreError::Io { path: path.to_path_buf(), action, source };
    let mut files = Vec::new();
    for path in [crate::journal::lock_path(journal), journal.to_path_buf()] {
        let file = match open_read(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound && path != journal => continue,
            Err(e) => return Err(io_err(&path, "open the session to fork", e)),
        };
        try_lock_exclusive(&file).map_err(|e| e.map_or_else(held, |e| io_err(&path, "lock the session to fork", e)))?;
        files.push(file);
    }
    Ok(files)
}

/// The fork's files as they are made, removed again if it fails: only
/// those this fork created (a directory that existed is never removed).
struct Staged {
    tmp: PathBuf,
    dirs: [PathBuf; 3],
    created: std::cell::RefCell<Vec<PathBuf>>,
}

impl Staged {
    fn new(target: &Path) -> Staged {
        Staged {
            tmp: target.with_extension(format!("jsonl.fork-{}", std::process::id())),
            dirs: [blobs::dir_for(target), crate::images::dir_for(target), crate::supervisor::evidence_dir(target)],
            created: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// After a failure: the temporary journal and the directories this fork made.
    fn remove(&self) {
        let _ = std::fs::remove_file(&self.tmp);
        for dir in self.created.borrow().iter() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Where the copy stands in the old file.
#[derive(PartialEq)]
enum Cut {
    Before,
    After,
}

fn write_fork(
    source: &Path,
    id: &str,
    new_id: &str,
    target: &Path,
    point: &ForkPoint,
    limits: blobs::Limits,
    staged: &Staged,
) -> Result<(ForkedFrom, Transcript), StoreError> {
    let io_err = |path: &Path, action, source| StoreError::Io { path: path.to_path_buf(), action, source };
    let file = open_read(source).map_err(|e| io_err(source, "open the session to fork", e))?;
    let len = file.metadata().map_err(|e| io_err(source, "read the session to fork", e))?.len();
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&staged.tmp)
        .map_err(|e| io_err(&staged.tmp, "create the fork's session file", e))?;
    // `None`: copy every record (the cut is never reached).
    let (turn_id, last_turn) = match point {
        ForkPoint::Turn(turn) => (Some(turn.clone()), Some(turn.clone())),
        ForkPoint::Whole(last) => (None, last.clone()),
    };
    let forked_from = ForkedFrom { session_id: id.to_string(), turn_id: last_turn };
    let mut transcript: Option<Transcript> = None;
    let mut cut = Cut::Before;
    let mut seq = 1u64;
    let mut write_error: Option<io::Error> = None;
    let mut refused: Option<ForkError> = None;
    let mut emit = |body: &RecordBody, out: &mut File| {
        if write_error.is_none() {
            if let Err(e) = out.write_all(&encode_line(seq, body)) {
                write_error = Some(e);
            }
        }
        seq += 1;
    };
    let visit = |record: crate::journal::Record| -> Result<(), String> {
        if refused.is_some() {
            return Ok(());
        }
        match record.body {
            RecordBody::Session { cwd, .. } => {
                let created_at = home::now_rfc3339();
                let header = RecordBody::Session {
                    session_id: new_id.to_string(),
                    created_at: created_at.clone(),
                    cwd: cwd.clone(),
                    mino_version: env!("CARGO_PKG_VERSION").to_string(),
                    forked_from: Some(forked_from.clone()),
                };
                emit(&header, &mut out);
                transcript = Some(Transcript::new(SessionHeader { session_id: new_id.to_string(), created_at, cwd }));
            }
            body => {
                let Some(fork) = transcript.as_mut() else { return Err("the session header must be record 1".into()) };
                match cut {
                    Cut::Before => {
                        let ends_cut =
                            matches!(&body, RecordBody::TurnEnd { turn_id: t, .. } if Some(t) == turn_id.as_ref());
                        fork.apply_owned(body.clone())?;
                        emit(&body, &mut out);
                        if ends_cut {
                            cut = Cut::After;
                        }
                    }
                    Cut::After => match &body {
                        RecordBody::RecoveryAck { turn_id: t } if fork.turn(t).is_some() => {
                            fork.apply_owned(body.clone())?;
                            emit(&body, &mut out);
                        }
                        // A later rewind of a copied turn: that turn's edits
                        // were undone, so its history no longer is the files'.
                        RecordBody::Rewind { plan, .. } => {
                            if let Some(t) = plan.turns.iter().find(|t| fork.turn(t).is_some()) {
                                refused = Some(ForkError::Rewound(t.clone()));
                            }
                        }
                        _ => {}
                    },
                }
            }
        }
        Ok(())
    };
    crate::journal::visit_reader(source, io::BufReader::with_capacity(1 << 16, &file), len, visit)?;
    if let Some(e) = write_error {
        return Err(io_err(&staged.tmp, "write the fork's session file", e));
    }
    let Some(fork) = transcript else {
        return Err(io_err(source, "read the session to fork", io::Error::other("no header")));
    };
    if let Some(why) = refused {
        return Err(StoreError::Fork(why));
    }
    if let Some(turn_id) = &turn_id {
        match fork.turn(turn_id) {
            None => {
                return Err(StoreError::Fork(ForkError::UnknownTurn {
                    session_id: id.to_string(),
                    turn_id: turn_id.clone(),
                }))
            }
            Some(turn) if turn.is_open() => return Err(StoreError::Fork(ForkError::TurnOpen(turn_id.clone()))),
            Some(turn) if turn.rewound => return Err(StoreError::Fork(ForkError::Rewound(turn_id.clone()))),
            Some(_) => {}
        }
    } else if let Some(turn) = fork.open_turn().or_else(|| fork.open_rewind().and(fork.turns.last())) {
        return Err(StoreError::Fork(ForkError::TurnOpen(turn.id.clone())));
    }
    if fork.turns.last().map(|t| &t.id) != forked_from.turn_id.as_ref() {
        // The session moved on between the caller's look and this read.
        let now = fork.turns.last().map_or_else(|| "none".to_string(), |t| t.id.clone());
        return Err(StoreError::Fork(ForkError::UnknownTurn { session_id: id.to_string(), turn_id: now }));
    }

    link_side_files(source, &fork, limits, staged)?;
    fail::fail_point!("fork::after_side_files");
    out.sync_all().map_err(|e| io_err(&staged.tmp, "sync the fork's session file", e))?;
    drop(out);
    fail::fail_point!("fork::after_journal_sync");
    std::fs::hard_link(&staged.tmp, target).map_err(|e| io_err(target, "link the fork's session file", e))?;
    let _ = std::fs::remove_file(&staged.tmp);
    fail::fail_point!("fork::after_link");
    let sessions = target.parent().unwrap_or(Path::new("."));
    crate::durable::sync_directory(sessions).map_err(|e| io_err(sessions, "sync the sessions directory", e))?;
    Ok((forked_from, fork))
}

/// Links (or copies) into the fork's directories every file its records
/// name: before-content of started edits, images, evidence of `unknown`
/// calls. Each directory is synced once filled.
fn link_side_files(source: &Path, fork: &Transcript, limits: blobs::Limits, staged: &Staged) -> Result<(), StoreError> {
    let [blobs_to, images_to, evidence_to] = &staged.dirs;
    let (blobs_from, images_from) = (blobs::dir_for(source), crate::images::dir_for(source));
    let mut befores = BTreeSet::new();
    let mut images = BTreeSet::new();
    let mut evidence = BTreeSet::new();
    for turn in &fork.turns {
        for image in &turn.images {
            images.insert(crate::images::path_in(&images_from, image));
        }
        for (index, call) in turn.calls.iter().enumerate() {
            if let Some(before) = call.edit.as_ref().filter(|_| call.started).and_then(|e| e.before_sha256.clone()) {
                befores.insert(before);
            }
            if call.result.as_ref().is_some_and(|r| r.status == ToolStatus::Unknown) {
                if let Some(path) = crate::supervisor::evidence_path(source, &turn.id, index) {
                    evidence.insert(path);
                }
            }
        }
    }
    // Content never kept (past a bound) stays so: the fork's rewind names it.
    let befores: Vec<PathBuf> =
        befores.iter().map(|sha| blobs::path_in(&blobs_from, sha)).filter(|p| p.is_file()).collect();
    let need: u64 = befores.iter().filter_map(|p| p.metadata().ok()).map(|m| m.len()).sum();
    if need > limits.session {
        return Err(StoreError::Fork(ForkError::TooLarge { need, limit: limits.session }));
    }
    let images: Vec<PathBuf> = images.into_iter().filter(|p| p.is_file()).collect();
    let evidence: Vec<PathBuf> = evidence.into_iter().filter(|p| p.is_file()).collect();
    for (files, dir) in [(befores, blobs_to), (images, images_to), (evidence, evidence_to)] {
        if files.is_empty() {
            continue;
        }
        let io_err = |path: &Path, action, source| StoreError::Io { path: path.to_path_buf(), action, source };
        // `create_dir` fails on a directory that exists: never another session's.
        std::fs::create_dir(dir).map_err(|e| io_err(dir, "create a directory of the fork", e))?;
        staged.created.borrow_mut().push(dir.clone());
        for from in &files {
            let Some(name) = from.file_name() else { continue };
            let to = dir.join(name);
            if std::fs::hard_link(from, &to).is_err() {
                // Another file system, or links refused: a copy, synced.
                copy_synced(from, &to).map_err(|e| io_err(&to, "copy a file into the fork", e))?;
            }
        }
        crate::durable::sync_directory(dir).map_err(|e| io_err(dir, "sync a directory of the fork", e))?;
    }
    let sessions = staged.tmp.parent().unwrap_or(Path::new("."));
    crate::durable::sync_directory(sessions).map_err(|e| StoreError::Io {
        path: sessions.to_path_buf(),
        action: "sync the sessions directory",
        source: e,
    })
}

fn copy_synced(from: &Path, to: &Path) -> io::Result<()> {
    let mut reader = open_read(from)?;
    let mut writer = {
        use std::os::unix::fs::OpenOptionsExt;
        OpenOptions::new().write(true).create_new(true).mode(0o600).open(to)?
    };
    io::copy(&mut reader, &mut writer)?;
    writer.sync_all()
}
