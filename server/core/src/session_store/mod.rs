//! The session store: the sessions of one `$MINO_HOME`, which one a process
//! opens, the list a client shows, titles, deletion to the trash, and switching.
//!
//! A session belongs to the directory it was created for (its header's
//! `cwd`). Without an explicit id, a process resumes the most recently active
//! session of its workspace that no other process holds, else starts a new
//! one; it never resumes another workspace's session, and a second process on
//! the same workspace gets a session of its own instead of an error.
//!
//! Listing never parses whole journals: the header and the turn-1 question
//! are in a file's first bytes, and everything else a list shows is in the
//! last turn (turn ids are `turn-N`, and chat is gated while an `unknown`
//! result waits, so one can only wait in the last turn). Each file's first
//! and last [`PROBE_BYTES`] are read, every record used is verified by its
//! checksum, and the tail read grows only when the last turn does not fit.
//! How sessions are chosen, listed, titled and trashed: docs/journal.md.
//!
//! Its rooms: this module (the store: choosing, opening, switching,
//! titles, the trash), `listing` (the list and its pages), `ends` (the
//! facts a list shows, from each journal's first and last records) and
//! `locks` (whether another process holds a session, without disturbing it).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::durable;
use crate::home::{HomeError, MinoHome};
use crate::journal::{self, JournalError};
use crate::recovery::{self, RecoveredTurn, RecoveryReport};
use crate::session::{Session, SessionError};

mod ends;
mod fork;
mod listing;
mod locks;

use ends::read_head;
pub use ends::PROBE_BYTES;
pub use fork::{ForkError, ForkPoint, Forked};
pub use listing::{ListScope, SessionEntry, SessionPage};
use locks::{open_read, try_lock_exclusive};

/// A default title is the first question's first line, cut to this many characters.
pub const DEFAULT_TITLE_CHARS: usize = 80;
/// A title given by `rename` has 1 to this many characters after trimming.
pub const MAX_TITLE_CHARS: usize = 200;
/// The largest title file read back; a bigger one is ignored (not Mino's).
const MAX_TITLE_FILE_BYTES: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("session {id} is open in another Mino process; close it there first, or choose another session")]
    HeldElsewhere { id: String },
    #[error("session {id} is the current session; open or start another session first")]
    Current { id: String },
    /// A fork refused (an unknown, open or rewound turn; too large).
    #[error(transparent)]
    Fork(#[from] ForkError),
    /// A title, cursor or limit the caller got wrong.
    #[error("{0}")]
    InvalidInput(String),
    #[error("{path}: could not {action}: {source}")]
    Io { path: PathBuf, action: &'static str, source: io::Error },
}

impl From<HomeError> for StoreError {
    fn from(e: HomeError) -> Self {
        StoreError::Session(SessionError::Home(e))
    }
}

impl From<JournalError> for StoreError {
    fn from(e: JournalError) -> Self {
        StoreError::Session(SessionError::Journal(e))
    }
}

/// What a client is told about the session it now has open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub session_id: String,
    pub journal_path: PathBuf,
    pub cwd: String,
    pub title: Option<String>,
}

/// The sessions of one `$MINO_HOME` as one process sees them: its workspace
/// and which session is its current one.
pub struct SessionStore {
    home: MinoHome,
    workspace: PathBuf,
    current: Option<String>,
    /// The bounds of each session's store of before-content (settings),
    /// given to every session this store opens or creates.
    blob_limits: crate::blobs::Limits,
}

impl SessionStore {
    /// `workspace` is canonicalised (a symlinked path and its target are one
    /// workspace); it must be an existing directory.
    pub fn new(home: MinoHome, workspace: &Path) -> Result<SessionStore, SessionError> {
        let workspace = canonical_dir(workspace)?;
        Ok(SessionStore { home, workspace, current: None, blob_limits: crate::blobs::Limits::default() })
    }

    /// The bounds of the store of before-content for every session opened
    /// or created from now on (`MINO_REWIND_*_LIMIT_BYTES`).
    pub fn set_blob_limits(&mut self, limits: crate::blobs::Limits) {
        self.blob_limits = limits;
    }

    pub fn blob_limits(&self) -> crate::blobs::Limits {
        self.blob_limits
    }

    pub fn home(&self) -> &MinoHome {
        &self.home
    }

    /// The canonical workspace: where new sessions are created by default.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn current_id(&self) -> Option<&str> {
        self.current.as_deref()
    }

    /// The session a process starts with (`initialize`): `session` opens that
    /// id from anywhere; `new_session` starts one in the workspace; else the
    /// most recently active session of the workspace that no other process
    /// holds, else a new one. Its recovery records are synced on return.
    pub fn start(
        &mut self,
        session: Option<&str>,
        new_session: bool,
    ) -> Result<(Session, RecoveryReport), SessionError> {
        let opened = match (session, new_session) {
            (Some(id), _) => Session::open(&self.home, id)?,
            (None, true) => (Session::create(&self.home, &self.workspace)?, RecoveryReport::default()),
            (None, false) => match self.resume_in_workspace()? {
                Some(opened) => opened,
                None => (Session::create(&self.home, &self.workspace)?, RecoveryReport::default()),
            },
        };
        let (mut session, report) = opened;
        session.set_blob_limits(self.blob_limits);
        self.current = Some(session.id().to_string());
        Ok((session, report))
    }

    /// The newest session of the workspace this process can lock.
    fn resume_in_workspace(&self) -> Result<Option<(Session, RecoveryReport)>, SessionError> {
        let mut workspaces = Workspaces::default();
        for candidate in self.candidates()? {
            let Ok(file) = open_read(&candidate.path) else { continue };
            let Ok(head) = read_head(&file, candidate.len) else { continue };
            if !head.header.as_ref().is_some_and(|h| self.in_workspace(&h.cwd, &mut workspaces)) {
                continue;
            }
            drop(file);
            match Session::open(&self.home, &candidate.id) {
                Ok(opened) => return Ok(Some(opened)),
                // Held by another process, or replaced or deleted meanwhile:
                // not this process's to resume.
                Err(SessionError::Journal(JournalError::Locked { .. } | JournalError::Replaced { .. })) => continue,
                Err(SessionError::Journal(JournalError::Io { source, .. }))
                    if source.kind() == io::ErrorKind::NotFound =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Whether a header's `cwd` is this workspace: equal, or equal once
    /// canonicalised (a header written before `cwd`s were recorded
    /// canonical), which is asked once per directory and list.
    pub(super) fn in_workspace(&self, cwd: &str, seen: &mut Workspaces) -> bool {
        if Path::new(cwd) == self.workspace {
            return true;
        }
        *seen
            .entry(cwd.to_string())
            .or_insert_with(|| std::fs::canonicalize(cwd).is_ok_and(|canonical| canonical == self.workspace))
    }

    /// Starts a new session in `cwd` (default: the workspace) and makes it
    /// current (`mino/sessions/new`). `current` is replaced only once the new
    /// one is open, so a failure leaves it untouched.
    pub fn new_session(
        &mut self,
        current: &mut Session,
        cwd: Option<&Path>,
    ) -> Result<(SessionInfo, RecoveryReport), StoreError> {
        refuse_while_turn_runs(current)?;
        let cwd = match cwd {
            Some(dir) => canonical_dir(dir)?,
            None => self.workspace.clone(),
        };
        let session = Session::create(&self.home, &cwd)?;
        Ok(self.switch(current, session, RecoveryReport::default()))
    }

    /// Opens session `id` from any workspace and makes it current
    /// (`mino/sessions/open`); its commands run in its own recorded `cwd`.
    /// The new session is locked before the old one is released, so neither
    /// is ever unlocked while this process means to write it; a failure
    /// leaves `current` untouched. Opening the current session again opens
    /// nothing and reports what still awaits acknowledgement.
    pub fn open(&mut self, current: &mut Session, id: &str) -> Result<(SessionInfo, RecoveryReport), StoreError> {
        refuse_while_turn_runs(current)?;
        if current.id() == id {
            let path = current.path().to_path_buf();
            let report = RecoveryReport {
                unacknowledged: recovery::unacknowledged(current.transcript())
                    .into_iter()
                    .map(|t| RecoveredTurn::of(t, &path))
                    .collect(),
                ..Default::default()
            };
            self.current = Some(id.to_string());
            return Ok((self.info(current), report));
        }
        let (session, report) = Session::open(&self.home, id)?;
        Ok(self.switch(current, session, report))
    }

    fn switch(
        &mut self,
        current: &mut Session,
        mut next: Session,
        report: RecoveryReport,
    ) -> (SessionInfo, RecoveryReport) {
        next.set_blob_limits(self.blob_limits);
        let previous = std::mem::replace(current, next);
        // Dropping it closes its journal and releases its lock, only now.
        drop(previous);
        self.current = Some(current.id().to_string());
        (self.info(current), report)
    }

    /// What a client is told about `session`.
    pub fn info(&self, session: &Session) -> SessionInfo {
        SessionInfo {
            session_id: session.id().to_string(),
            journal_path: session.path().to_path_buf(),
            cwd: session.cwd().to_string(),
            title: self.title(session),
        }
    }

    /// The renamed title, else the first question's first line.
    pub fn title(&self, session: &Session) -> Option<String> {
        self.read_title(session.id())
            .or_else(|| session.transcript().turns.first().and_then(|t| default_title(&t.input)))
    }

    /// Renames a session (`mino/sessions/rename`), held elsewhere or not:
    /// the title lives in `sessions/<id>.title`, replaced atomically (written
    /// and synced under a temporary name, renamed over, the directory
    /// synced), so a crash leaves the old title or the new one.
    pub fn rename(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let title = valid_title(title)?;
        let journal = self.existing_journal(id)?;
        let path = self.home.title_path(id)?;
        let dir = journal.parent().unwrap_or(Path::new(".")).to_path_buf();
        let body = serde_json::json!({ "v": 1, "title": title }).to_string();
        durable::replace(&path, body.as_bytes(), 0o600).map_err(|(step, source)| StoreError::Io {
            path: if step == durable::Step::SyncDirectory { dir } else { path.clone() },
            action: step.as_str(),
            source,
        })
    }

    /// Moves a session's files (journal, title, evidence, kept before-content, lock) into a new
    /// directory under `$MINO_HOME/trash/` and returns it
    /// (`mino/sessions/delete`). Refused for the current session and for one
    /// another process holds; its lock is held while the files move, so no
    /// process opens it meanwhile. Moving the files back restores it.
    pub fn delete(&self, id: &str) -> Result<PathBuf, StoreError> {
        if self.current.as_deref() == Some(id) {
            return Err(StoreError::Current { id: id.to_string() });
        }
        let journal = self.existing_journal(id)?;
        let lock = journal::lock_path(&journal);
        let io_err = |path: &Path, action, source| StoreError::Io { path: path.to_path_buf(), action, source };
        let held = || StoreError::HeldElsewhere { id: id.to_string() };
        // Created if absent, as opening would: holding it keeps openers out
        // while the files move. An opener that got past its own lock first
        // then finds the journal gone from its path and refuses.
        let lock_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&lock)
            .map_err(|e| io_err(&lock, "open the session's lock file", e))?;
        try_lock_exclusive(&lock_file).map_err(|e| e.map_or_else(held, |e| io_err(&lock, "lock the session", e)))?;
        let journal_file = open_read(&journal).map_err(|e| io_err(&journal, "open the session file", e))?;
        try_lock_exclusive(&journal_file)
            .map_err(|e| e.map_or_else(held, |e| io_err(&journal, "lock the session file", e)))?;

        let trash = self.home.trash_dir();
        std::fs::create_dir_all(&trash).map_err(|e| io_err(&trash, "create the trash directory", e))?;
        let target = new_trash_dir(&trash, id)?;
        let sessions = self.home.sessions_dir();
        let mut moving = vec![journal.clone()];
        for extra in
            [self.home.title_path(id)?, sessions.join(format!("{id}.evidence")), sessions.join(format!("{id}.blobs"))]
        {
            if extra.symlink_metadata().is_ok() {
                moving.push(extra);
            }
        }
        moving.push(lock);
        for from in &moving {
            let Some(name) = from.file_name() else { continue };
            std::fs::rename(from, target.join(name)).map_err(|e| io_err(from, "move into the trash", e))?;
        }
        sync_dir(&target)?;
        sync_dir(&trash)?;
        sync_dir(&sessions)?;
        drop((journal_file, lock_file));
        Ok(target)
    }

    fn existing_journal(&self, id: &str) -> Result<PathBuf, StoreError> {
        let path = self.home.session_path(id)?;
        match path.symlink_metadata() {
            Ok(meta) if meta.is_file() => Ok(path),
            _ => Err(SessionError::NotFound { id: id.to_string(), dir: self.home.sessions_dir() }.into()),
        }
    }

    fn read_title(&self, id: &str) -> Option<String> {
        let path = self.home.title_path(id).ok()?;
        let file = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(&path).ok()?;
        let mut bytes = Vec::new();
        if let Err(e) = io::Read::read_to_end(&mut io::Read::take(&file, MAX_TITLE_FILE_BYTES), &mut bytes) {
            tracing::warn!(path = %path.display(), error = %e, "could not read a session title");
            return None;
        }
        #[derive(serde::Deserialize)]
        struct TitleFile {
            v: u32,
            title: String,
        }
        match serde_json::from_slice::<TitleFile>(&bytes) {
            Ok(TitleFile { v: 1, title }) => Some(title),
            Ok(TitleFile { v, .. }) => {
                tracing::warn!(path = %path.display(), v, "a session title of a newer format was ignored");
                None
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "an unreadable session title was ignored");
                None
            }
        }
    }
}

/// The default title: the question's first non-empty line, trimmed, cut to
/// [`DEFAULT_TITLE_CHARS`] characters.
pub fn default_title(question: &str) -> Option<String> {
    let line = question.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(DEFAULT_TITLE_CHARS).collect::<String>().trim_end().to_string())
}

/// A title as `rename` stores it: trimmed, 1 to [`MAX_TITLE_CHARS`]
/// characters, one line.
pub fn valid_title(title: &str) -> Result<String, StoreError> {
    let title = title.trim();
    let chars = title.chars().count();
    if chars == 0 || chars > MAX_TITLE_CHARS {
        return Err(StoreError::InvalidInput(format!(
            "a title has 1 to {MAX_TITLE_CHARS} characters after trimming; this one has {chars}"
        )));
    }
    if title.chars().any(char::is_control) {
        return Err(StoreError::InvalidInput(
            "a title is one line without control characters; remove the line breaks or tabs".into(),
        ));
    }
    Ok(title.to_string())
}

fn refuse_while_turn_runs(current: &Session) -> Result<(), SessionError> {
    match current.transcript().open_turn() {
        Some(turn) => Err(SessionError::TurnInProgress(turn.id.clone())),
        None => Ok(()),
    }
}

fn canonical_dir(dir: &Path) -> Result<PathBuf, SessionError> {
    let canonical = std::fs::canonicalize(dir)
        .map_err(|source| SessionError::Home(HomeError::Io { path: dir.to_path_buf(), source }))?;
    if !canonical.is_dir() {
        return Err(SessionError::InvalidInput(format!(
            "{} is not a directory; give a workspace directory",
            dir.display()
        )));
    }
    Ok(canonical)
}

/// `trash/<id>`, or `trash/<id>.2`, `.3`, … when a session of that id was
/// trashed before.
fn new_trash_dir(trash: &Path, id: &str) -> Result<PathBuf, StoreError> {
    for n in 1..10_000u32 {
        let dir = if n == 1 { trash.join(id) } else { trash.join(format!("{id}.{n}")) };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(StoreError::Io { path: dir, action: "create a trash directory", source }),
        }
    }
    Err(StoreError::Io {
        path: trash.join(id),
        action: "create a trash directory",
        source: io::Error::other("too many trashed sessions of this id; empty the trash"),
    })
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|source| StoreError::Io {
        path: dir.to_path_buf(),
        action: "sync the directory",
        source,
    })
}

/// Header `cwd`s already compared with the workspace, within one call.
type Workspaces = HashMap<String, bool>;

#[cfg(feature = "testing")]
impl Session {
    /// The named session (from any workspace), else the most recently
    /// active session of `cwd` that no other process holds, else a new one
    /// in `cwd`: [`SessionStore::start`]. A shortcut for tests.
    pub fn open_or_create(
        home: &MinoHome,
        id: Option<&str>,
        cwd: &Path,
    ) -> Result<(Session, RecoveryReport), SessionError> {
        SessionStore::new(home.clone(), cwd)?.start(id, false)
    }
}
