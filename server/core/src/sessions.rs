//! Many sessions under one `$MINO_HOME`: which one a process opens, the
//! list a client shows, titles, deletion to the trash, and switching.
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

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::durable;
use crate::home::{self, HomeError, MinoHome};
use crate::journal::record::{decode_line, LineError, Record, RecordBody, ToolStatus, TurnStatus};
use crate::journal::{self, JournalError, MAX_RECORD_BYTES};
use crate::recovery::{RecoveredTurn, RecoveryReport};
use crate::session::{Session, SessionError};

/// How much of each end of a journal a listing reads first.
pub const PROBE_BYTES: u64 = 4096;
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

/// Which sessions a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListScope {
    /// Sessions whose header `cwd` is this store's workspace.
    #[default]
    Workspace,
    All,
}

/// One line of a session list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionEntry {
    pub session_id: String,
    /// The directory the session was created for (its commands run there).
    pub cwd: String,
    pub title: Option<String>,
    /// RFC 3339, from the header.
    pub created_at: String,
    /// RFC 3339: the journal's modification time.
    pub last_active_at: String,
    pub turns: u64,
    /// Another process (or another store in this one) holds its lock.
    pub held_elsewhere: bool,
    /// Its last turn has an `unknown` result without a `recovery_ack`, or
    /// will have once opened (a started call without a result, no process
    /// holding it): opening it shows the acknowledgement prompt.
    pub acknowledgement_required: bool,
    /// It is this store's current session.
    pub current: bool,
    /// The tokens of all its responses, summed: the last `turn_end`'s
    /// `session_usage` plus any response after it. `None` when none were
    /// reported, or when that `turn_end` was written by a Mino before
    /// `session_usage` existed.
    pub usage: Option<crate::usage::Usage>,
    /// Set when the file's tail is torn or a record read is unreadable: the
    /// facts above then come from what could be read (opening the session
    /// says exactly what is wrong, and cuts a torn last line).
    pub damage: Option<String>,
}

/// One page of a list, newest (last active) first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPage {
    pub sessions: Vec<SessionEntry>,
    /// Pass back to `list` for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
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
}

impl SessionStore {
    /// `workspace` is canonicalised (a symlinked path and its target are one
    /// workspace); it must be an existing directory.
    pub fn new(home: MinoHome, workspace: &Path) -> Result<SessionStore, SessionError> {
        let workspace = canonical_dir(workspace)?;
        Ok(SessionStore { home, workspace, current: None })
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
            (Some(id), _) => open_retrying(&self.home, id)?,
            (None, true) => (Session::create(&self.home, &self.workspace)?, RecoveryReport::default()),
            (None, false) => match self.resume_in_workspace()? {
                Some(opened) => opened,
                None => (Session::create(&self.home, &self.workspace)?, RecoveryReport::default()),
            },
        };
        self.current = Some(opened.0.id().to_string());
        Ok(opened)
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
            match open_retrying(&self.home, &candidate.id) {
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

    /// A page of sessions (`mino/sessions/list`), newest first. `limit` is
    /// at least 1; `cursor` is a previous page's `next_cursor`.
    pub fn list(&self, scope: ListScope, limit: usize, cursor: Option<&str>) -> Result<SessionPage, StoreError> {
        if limit == 0 {
            return Err(StoreError::InvalidInput("limit must be at least 1".into()));
        }
        let after = cursor.map(Cursor::parse).transpose()?;
        let candidates = self.candidates()?;
        let locks = LockTable::read(&self.home.sessions_dir());
        let mut workspaces = Workspaces::default();
        let mut sessions = Vec::new();
        let mut next_cursor = None;
        let mut last_kept = None;
        for candidate in candidates.iter().filter(|c| after.as_ref().is_none_or(|a| a.is_before(c))) {
            let Some(entry) = self.entry(candidate, scope, locks.as_ref(), &mut workspaces) else { continue };
            if sessions.len() == limit {
                // One more exists: the page ends at the last one kept.
                next_cursor = last_kept.map(|c: &Candidate| Cursor::of(c).to_string());
                break;
            }
            sessions.push(entry);
            last_kept = Some(candidate);
        }
        Ok(SessionPage { sessions, next_cursor })
    }

    /// The list entry of one candidate, `None` when outside `scope`.
    fn entry(
        &self,
        candidate: &Candidate,
        scope: ListScope,
        locks: Option<&LockTable>,
        workspaces: &mut Workspaces,
    ) -> Option<SessionEntry> {
        let current = self.current.as_deref() == Some(candidate.id.as_str());
        let file = match open_read(&candidate.path) {
            Ok(file) => Some(file),
            // Whose workspace an unreadable file belongs to is unknown.
            Err(_) if scope == ListScope::Workspace => return None,
            Err(_) => None,
        };
        let head = match &file {
            Some(file) => read_head(file, candidate.len).unwrap_or_else(|e| Head {
                damage: Some(format!("the start of the file could not be read: {e}")),
                ..Default::default()
            }),
            None => Head { damage: Some("the session file could not be opened".into()), ..Default::default() },
        };
        match (&head.header, scope) {
            (Some(h), ListScope::Workspace) if !self.in_workspace(&h.cwd, workspaces) => return None,
            (None, ListScope::Workspace) => return None,
            _ => {}
        }
        let held_elsewhere = !current
            && match (&file, candidate.lock_ino) {
                // Not in the table of held locks: nobody holds it, no lock taken.
                (_, Some(ino)) if locks.is_some_and(|t| !t.has(ino)) => false,
                (_, Some(_)) => lock_held(&journal::lock_path(&candidate.path)),
                // No lock file: a Mino from before it locks the journal itself.
                (_, None) if locks.is_some_and(|t| !t.has(candidate.ino)) => false,
                (Some(file), None) => file_held(file),
                (None, None) => false,
            };
        let tail = match &file {
            Some(file) => read_tail(file, candidate.len, held_elsewhere || current).unwrap_or_else(|e| Tail {
                damage: Some(format!("the end of the file could not be read: {e}")),
                ..Default::default()
            }),
            None => Tail::default(),
        };
        let title = if candidate.has_title { self.read_title(&candidate.id) } else { None };
        let header = head.header;
        Some(SessionEntry {
            session_id: candidate.id.clone(),
            cwd: header.as_ref().map(|h| h.cwd.clone()).unwrap_or_default(),
            title: title.or(head.default_title),
            created_at: header.map(|h| h.created_at).unwrap_or_default(),
            last_active_at: rfc3339(candidate.modified),
            turns: tail.turns,
            held_elsewhere,
            acknowledgement_required: tail.unknown_waiting
                || (tail.started_without_result && !held_elsewhere && !current),
            current,
            usage: tail.usage,
            damage: head.damage.or(tail.damage),
        })
    }

    /// Every session file, newest (last active) first.
    fn candidates(&self) -> Result<Vec<Candidate>, SessionError> {
        let dir = self.home.sessions_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(HomeError::Io { path: dir, source }.into()),
        };
        let mut journals = Vec::new();
        let mut titles = HashSet::new();
        let mut locks = HashMap::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) = name.strip_suffix(".jsonl") {
                if home::validate_session_id(id).is_ok() {
                    journals.push((id.to_string(), entry));
                }
            } else if let Some(id) = name.strip_suffix(".title") {
                titles.insert(id.to_string());
            } else if let Some(id) = name.strip_suffix(".lock") {
                // The entry's inode number, without a stat.
                locks.insert(id.to_string(), std::os::unix::fs::DirEntryExt::ino(&entry));
            }
        }
        let mut candidates: Vec<Candidate> = journals
            .into_iter()
            .filter_map(|(id, entry)| {
                // A symlink is not a session (and is refused on open).
                // Relative to the directory, without following a symlink.
                let meta = entry.metadata().ok().filter(|m| m.is_file())?;
                Some(Candidate {
                    has_title: titles.contains(&id),
                    lock_ino: locks.get(&id).copied(),
                    ino: std::os::unix::fs::MetadataExt::ino(&meta),
                    path: entry.path(),
                    modified: meta.modified().unwrap_or(UNIX_EPOCH),
                    len: meta.len(),
                    id,
                })
            })
            .collect();
        candidates.sort_by(|a, b| (b.modified, &b.id).cmp(&(a.modified, &a.id)));
        Ok(candidates)
    }

    /// Whether a header's `cwd` is this workspace: equal, or equal once
    /// canonicalised (a header written before `cwd`s were recorded
    /// canonical), which is asked once per directory and list.
    fn in_workspace(&self, cwd: &str, seen: &mut Workspaces) -> bool {
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
                unacknowledged: current
                    .transcript()
                    .unacknowledged()
                    .into_iter()
                    .map(|t| RecoveredTurn::of(t, &path))
                    .collect(),
                ..Default::default()
            };
            self.current = Some(id.to_string());
            return Ok((self.info(current), report));
        }
        let (session, report) = open_retrying(&self.home, id)?;
        Ok(self.switch(current, session, report))
    }

    fn switch(
        &mut self,
        current: &mut Session,
        next: Session,
        report: RecoveryReport,
    ) -> (SessionInfo, RecoveryReport) {
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

    /// Moves a session's files (journal, title, evidence, lock) into a new
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
        for extra in [self.home.title_path(id)?, sessions.join(format!("{id}.evidence"))] {
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

/// Opens a session; a lock found held is tried again twice, a millisecond
/// apart, because a listing in another process tests each lock by holding
/// it shared for a few microseconds.
fn open_retrying(home: &MinoHome, id: &str) -> Result<(Session, RecoveryReport), SessionError> {
    let mut tries = 0;
    loop {
        match Session::open(home, id) {
            Err(SessionError::Journal(JournalError::Locked { .. })) if tries < 2 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            other => return other,
        }
    }
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

fn rfc3339(t: SystemTime) -> String {
    time::OffsetDateTime::from(t).format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// Header `cwd`s already compared with the workspace, within one call.
type Workspaces = HashMap<String, bool>;

/// A session file found in the sessions directory.
struct Candidate {
    id: String,
    path: PathBuf,
    modified: SystemTime,
    len: u64,
    has_title: bool,
    /// The lock file's inode number, when there is one.
    lock_ino: Option<u64>,
    /// The journal's inode number.
    ino: u64,
}

/// Where a page ended: the last entry's modification time and id.
struct Cursor {
    modified_ns: u128,
    id: String,
}

impl Cursor {
    fn of(c: &Candidate) -> Cursor {
        Cursor { modified_ns: nanos(c.modified), id: c.id.clone() }
    }

    fn parse(text: &str) -> Result<Cursor, StoreError> {
        let bad = || {
            StoreError::InvalidInput(format!(
                "cursor {text:?} is not one Mino gave; pass a list's nextCursor unchanged"
            ))
        };
        let (ns, id) = text.split_once(':').ok_or_else(bad)?;
        let modified_ns = ns.parse().map_err(|_| bad())?;
        home::validate_session_id(id).map_err(|_| bad())?;
        Ok(Cursor { modified_ns, id: id.to_string() })
    }

    /// Whether `c` comes after this cursor in newest-first order.
    fn is_before(&self, c: &Candidate) -> bool {
        (nanos(c.modified), c.id.as_str()) < (self.modified_ns, self.id.as_str())
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.modified_ns, self.id)
    }
}

fn nanos(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

fn open_read(path: &Path) -> io::Result<File> {
    // O_NONBLOCK: a FIFO planted under a session's name must not hang a list.
    OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

/// `Err(None)` when another open file holds the lock, `Err(Some)` on failure.
fn try_lock_exclusive(file: &File) -> Result<(), Option<io::Error>> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(None),
        Err(TryLockError::Error(e)) => Err(Some(e)),
    }
}

/// Whether some process holds the session's lock file. Tested by taking a
/// shared lock on a read-only descriptor and closing it at once: a holder
/// (exclusive) is never disturbed; an opener racing this instant finds it
/// busy, which is why openers try again (`open_retrying`).
/// The inode numbers of every file some process holds an `flock` on, from
/// `/proc/locks`, read once per list so that a session nobody holds costs
/// no lock test at all (a number found there is still confirmed by
/// [`lock_held`]). Only trusted after checking that a lock this process
/// takes (shared, on the sessions directory, which nothing else locks)
/// shows up under the directory's own inode number; else `None`, and every
/// session's lock is tested.
struct LockTable {
    inodes: HashSet<u64>,
}

impl LockTable {
    /// `/proc/locks` is one line per lock; more than this is not read.
    const MAX_BYTES: u64 = 4 << 20;

    fn read(sessions: &Path) -> Option<LockTable> {
        let dir = File::open(sessions).ok()?;
        let ino = std::os::unix::fs::MetadataExt::ino(&dir.metadata().ok()?);
        dir.try_lock_shared().ok()?;
        let mut text = String::new();
        let read = File::open("/proc/locks")
            .and_then(|f| io::Read::read_to_string(&mut io::Read::take(f, Self::MAX_BYTES), &mut text));
        let _ = dir.unlock();
        if read.ok()? as u64 >= Self::MAX_BYTES {
            return None;
        }
        // `1: FLOCK  ADVISORY  WRITE 4242 fd:01:131090 0 EOF`; a line with
        // `->` is a process waiting for a lock, which holds nothing.
        let inodes: HashSet<u64> = text
            .lines()
            .filter(|line| !line.contains("->"))
            .filter_map(|line| {
                let mut fields = line.split_whitespace().skip(1);
                if fields.next()? != "FLOCK" {
                    return None;
                }
                fields.nth(3)?.rsplit(':').next()?.parse().ok()
            })
            .collect();
        inodes.contains(&ino).then_some(LockTable { inodes })
    }

    fn has(&self, ino: u64) -> bool {
        self.inodes.contains(&ino)
    }
}

fn lock_held(lock: &Path) -> bool {
    match open_read(lock) {
        // The shared lock taken here goes with the descriptor, at once.
        Ok(file) => probe(&file),
        Err(_) => false,
    }
}

/// [`lock_held`] for a descriptor that stays open: the shared lock is
/// released explicitly.
fn file_held(file: &File) -> bool {
    let held = probe(file);
    if !held {
        let _ = file.unlock();
    }
    held
}

fn probe(file: &File) -> bool {
    match file.try_lock_shared() {
        Ok(()) => false,
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(e)) => {
            tracing::warn!(error = %e, "could not test a session's lock");
            false
        }
    }
}

#[derive(Debug, Clone)]
struct Header {
    cwd: String,
    created_at: String,
}

#[derive(Debug, Default)]
struct Head {
    header: Option<Header>,
    default_title: Option<String>,
    damage: Option<String>,
}

#[derive(Debug, Default)]
struct Tail {
    turns: u64,
    unknown_waiting: bool,
    started_without_result: bool,
    damage: Option<String>,
    usage: Option<crate::usage::Usage>,
}

fn read_at(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(io::Error::other)?;
    let mut buf = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

// Lines are found with `memchr` (a word at a time) rather than a closure
// called on each byte: the tail's first, partial line is usually a command's
// output of a few KiB, scanned once per session listed, and byte-at-a-time
// scanning was about a fifth of a list's own instructions (callgrind; the
// records' JSON is most of the rest).

/// `buf`'s lines in order, each with its newline (the last may lack one):
/// `split_inclusive` on `\n`.
fn lines_inclusive(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = buf;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let (line, after) = rest.split_at(end);
        rest = after;
        Some(line)
    })
}

/// The lines of `body` (empty, or ending with a newline), last first,
/// without their newlines: `rsplit` on `\n` of `body` less its last newline.
fn lines_last_first(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = body.strip_suffix(b"\n");
    std::iter::from_fn(move || {
        let lines = rest?;
        match memchr::memrchr(b'\n', lines) {
            Some(i) => {
                rest = Some(&lines[..i]);
                Some(&lines[i + 1..])
            }
            None => {
                rest = None;
                Some(lines)
            }
        }
    })
}

/// The header (record 1) and the turn-1 question (record 2), from the first
/// [`PROBE_BYTES`], read further only when record 2 does not fit.
fn read_head(file: &File, len: u64) -> io::Result<Head> {
    let mut want = PROBE_BYTES.min(len);
    loop {
        let buf = read_at(file, 0, want)?;
        let mut lines = lines_inclusive(&buf);
        let mut head = Head::default();
        let complete = |line: &[u8]| line.last() == Some(&b'\n');
        let more = want < len && want < 2 * MAX_RECORD_BYTES as u64;
        match lines.next() {
            Some(line) if complete(line) => match decode_line(&line[..line.len() - 1]) {
                Ok(Record { seq: 1, body: RecordBody::Session { cwd, created_at, .. }, .. }) => {
                    head.header = Some(Header { cwd, created_at });
                }
                Ok(_) => head.damage = Some("record 1 is not a session header".into()),
                Err(e) => head.damage = Some(format!("the session header is unreadable: {e}")),
            },
            _ if more => {
                want = (want * 4).min(len);
                continue;
            }
            _ => {
                head.damage = Some("the session header is incomplete".into());
                return Ok(head);
            }
        }
        if head.header.is_none() {
            return Ok(head);
        }
        match lines.next() {
            Some(line) if complete(line) => {
                if let Ok(Record { seq: 2, body: RecordBody::User { text, .. }, .. }) =
                    decode_line(&line[..line.len() - 1])
                {
                    head.default_title = default_title(&text);
                }
                // Anything else in record 2 is the tail read's to judge.
            }
            Some(_) if more => {
                want = (want * 4).min(len);
                continue;
            }
            _ => {}
        }
        return Ok(head);
    }
}

/// The number of turns and whether an `unknown` result waits, from the last
/// records, read backwards from the end: [`PROBE_BYTES`] first, growing (×4)
/// only while the records that settle it are not all in reach. `busy`: a
/// process holds the session, so an open last turn is running, not crashed.
fn read_tail(file: &File, len: u64, busy: bool) -> io::Result<Tail> {
    let mut want = PROBE_BYTES.min(len);
    loop {
        let start = len - want;
        let buf = read_at(file, start, want)?;
        // The usual last record (a `turn_end`) settles both from one read of
        // it; otherwise the tokens are summed over the buffer on their own.
        let mut usage = UsageScan::default();
        let tail = scan_tail(&buf, start == 0, busy, &mut usage);
        let usage = tail.as_ref().and_then(|_| usage.settled.or_else(|| scan_usage(&buf, start == 0)));
        match (tail, usage) {
            (Some(mut tail), Some(usage)) => {
                tail.usage = usage;
                return Ok(tail);
            }
            _ if want < len => want = (want * 4).min(len),
            (Some(tail), None) => return Ok(tail),
            (None, _) => {
                return Ok(Tail {
                    damage: Some("the file holds no readable session header".into()),
                    ..Default::default()
                })
            }
        }
    }
}

/// Which records settle the question, walking back from the last one:
///
/// - `recovery_ack`: nothing waits (only the last turn can wait);
/// - `turn_end` `completed`: nothing waits. Mino writes an `unknown` result
///   only while closing a turn that did not complete (recovery, or a turn
///   stopped with calls unresolved), in the run of `tool_result` records
///   right before its `turn_end`; so for any other `turn_end`, that run is
///   read back to its first record, and an `unknown` in it waits;
/// - a last turn without `turn_end`: running when `busy`; else it crashed,
///   and opening will record `unknown` for each call started without a
///   result, so the turn is read back to its `user` record to find one.
///
/// `None` when `buf` (the file's last bytes; the whole file when
/// `from_start`) does not reach far enough back to tell.
fn scan_tail(buf: &[u8], from_start: bool, busy: bool, usage: &mut UsageScan) -> Option<Tail> {
    let mut tail = Tail::default();
    let mut body = buf;
    // A last line without a newline is torn: opening the session cuts it,
    // so the facts are those of the records before it.
    if body.last() != Some(&b'\n') {
        let cut = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
        if cut == 0 && !from_start {
            return None;
        }
        tail.damage = Some("the last record is torn (no newline at its end); opening the session cuts it".into());
        body = &body[..cut];
    }
    // The first line may have begun before the bytes read.
    if !from_start {
        let first = memchr::memchr(b'\n', body)?;
        body = &body[first + 1..];
    }
    enum Last {
        /// A non-`completed` `turn_end`: its closing run of results.
        ClosingRun,
        /// No `turn_end`, nobody holds it: the whole turn.
        Crashed,
    }
    let mut mode: Option<Last> = None;
    let mut last_turn: Option<String> = None;
    let mut next_seq: Option<u64> = None;
    let mut is_last_line = true;
    // Results seen (walking backwards) per call id, to pair them with starts.
    let mut results: HashMap<String, u32> = HashMap::new();
    // Complete lines, last first (`body` is empty or ends with a newline).
    for line in lines_last_first(body) {
        let last_line = std::mem::replace(&mut is_last_line, false);
        let record = match decode_line(line) {
            Ok(record) => record,
            // Opening would cut a garbled last line as torn.
            Err(LineError::Garbled(why)) if last_line && tail.damage.is_none() => {
                tail.damage = Some(format!("the last record is torn ({why}); opening the session cuts it"));
                continue;
            }
            Err(e) => {
                tail.damage = Some(format!("a record near the end is unreadable ({e}); opening the session says more"));
                return Some(tail);
            }
        };
        if let Some(expected) = next_seq {
            if record.seq + 1 != expected {
                tail.damage = Some(format!(
                    "records near the end are out of order (seq {} before {expected}); opening the session says more",
                    record.seq
                ));
                return Some(tail);
            }
        }
        next_seq = Some(record.seq);
        usage.record(&record.body);
        let turn_id = match &record.body {
            RecordBody::Session { .. } => return Some(tail),
            // Rules granted or revoked, the model chosen and a compaction (it
            // summarises ended turns) belong to the session, not to a turn.
            RecordBody::Rule { .. }
            | RecordBody::RuleRevoke { .. }
            | RecordBody::Compaction { .. }
            | RecordBody::Model { .. } => continue,
            RecordBody::User { turn_id, .. }
            | RecordBody::Response { turn_id, .. }
            | RecordBody::Approval { turn_id, .. }
            | RecordBody::ToolStart { turn_id, .. }
            | RecordBody::ToolResult { turn_id, .. }
            | RecordBody::TurnEnd { turn_id, .. }
            | RecordBody::RecoveryAck { turn_id } => turn_id,
        };
        match &last_turn {
            None => {
                tail.turns = turn_id.strip_prefix("turn-").and_then(|n| n.parse().ok()).unwrap_or(0);
                last_turn = Some(turn_id.clone());
            }
            // An earlier turn's record: the last turn has been read whole.
            Some(last) if last != turn_id => return Some(tail),
            Some(_) => {}
        }
        match (&mode, record.body) {
            (None, RecordBody::RecoveryAck { .. }) => return Some(tail),
            (None, RecordBody::TurnEnd { status: TurnStatus::Completed, .. }) => return Some(tail),
            (None, RecordBody::TurnEnd { .. }) => mode = Some(Last::ClosingRun),
            (None, _) if busy => return Some(tail),
            (None, body) => {
                mode = Some(Last::Crashed);
                if track_crashed(&mut tail, &mut results, body).is_none() {
                    return Some(tail);
                }
            }
            (Some(_), RecordBody::ToolResult { status: ToolStatus::Unknown, .. }) => {
                tail.unknown_waiting = true;
                tail.started_without_result = false;
                return Some(tail);
            }
            (Some(Last::ClosingRun), RecordBody::ToolResult { .. }) => {}
            (Some(Last::ClosingRun), _) => return Some(tail),
            (Some(Last::Crashed), body) => {
                if track_crashed(&mut tail, &mut results, body).is_none() {
                    return Some(tail);
                }
            }
        }
    }
    if from_start {
        // Not even the header: read_head reports the damage.
        return Some(tail);
    }
    None
}

/// The session's tokens from its last records, walking back: the responses'
/// `usage` summed until a `turn_end` with `session_usage` (which holds the
/// sum of everything before it) or the session header. Usually the last
/// record is that `turn_end`; a running or crashed last turn is read back
/// to the `turn_end` before it. `Some(None)` when the sum cannot be told
/// (none reported, a `turn_end` from a Mino before `session_usage`, an
/// unreadable record); `None` when `buf` does not reach far enough back.
fn scan_usage(buf: &[u8], from_start: bool) -> Option<Option<crate::usage::Usage>> {
    // A torn last line is cut by opening; the records before it count.
    let cut = memchr::memrchr(b'\n', buf).map_or(0, |i| i + 1);
    let mut body = &buf[..cut];
    if !from_start {
        let first = memchr::memchr(b'\n', body)?;
        body = &body[first + 1..];
    }
    let mut usage = UsageScan::default();
    for line in lines_last_first(body) {
        let Ok(record) = decode_line(line) else { return Some(None) };
        usage.record(&record.body);
        if usage.settled.is_some() {
            return usage.settled;
        }
    }
    // The whole file and no header: nothing to sum.
    from_start.then_some(None)
}

/// The session's tokens, summed over records read walking back (see
/// [`scan_usage`]).
#[derive(Default)]
struct UsageScan {
    sum: Option<crate::usage::Usage>,
    /// Set once the sum is known (`Some(None)`: it cannot be told).
    settled: Option<Option<crate::usage::Usage>>,
}

impl UsageScan {
    /// The record before those already seen.
    fn record(&mut self, body: &RecordBody) {
        if self.settled.is_some() {
            return;
        }
        match body {
            RecordBody::Response { usage: Some(usage), .. } => *self.sum.get_or_insert_with(Default::default) += *usage,
            RecordBody::TurnEnd { session_usage: Some(before), .. } => {
                let mut sum = self.sum.take();
                *sum.get_or_insert_with(Default::default) += *before;
                self.settled = Some(sum);
            }
            RecordBody::TurnEnd { session_usage: None, .. } => self.settled = Some(None),
            RecordBody::Session { .. } => self.settled = Some(self.sum.take()),
            _ => {}
        }
    }
}

/// One record of a crashed last turn, walking back: `None` once its `user`
/// record is reached (the turn has been read whole).
fn track_crashed(tail: &mut Tail, results: &mut HashMap<String, u32>, body: RecordBody) -> Option<()> {
    match body {
        RecordBody::ToolResult { call_id, .. } => *results.entry(call_id).or_default() += 1,
        RecordBody::ToolStart { call_id, .. } => match results.get_mut(&call_id) {
            Some(n) if *n > 0 => *n -= 1,
            _ => tail.started_without_result = true,
        },
        RecordBody::User { .. } => return None,
        _ => {}
    }
    Some(())
}
