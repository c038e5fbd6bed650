//! The list of sessions a client shows, newest (last active) first, in
//! pages: which session files there are (one directory read, no stat of a
//! lock file), each one's [`SessionEntry`] from its two ends (`ends`), and
//! the cursor that continues a page.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use super::ends::{read_head, read_tail, Head, Tail};
use super::locks::{file_held, lock_held, open_read, LockTable};
use super::{SessionStore, StoreError, Workspaces};
use crate::home::{self, HomeError};
use crate::journal;
use crate::recovery;
use crate::session::SessionError;

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

impl SessionStore {
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
            // Only an unheld session's crashed turn counts its unresolved
            // starts: `read_tail` was told who holds it.
            acknowledgement_required: recovery::acknowledgement_required(tail.gate),
            current,
            usage: tail.usage,
            damage: head.damage.or(tail.damage),
        })
    }

    /// Every session file, newest (last active) first.
    pub(super) fn candidates(&self) -> Result<Vec<Candidate>, SessionError> {
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
}

fn rfc3339(t: SystemTime) -> String {
    time::OffsetDateTime::from(t).format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// A session file found in the sessions directory.
pub(super) struct Candidate {
    pub(super) id: String,
    pub(super) path: PathBuf,
    modified: SystemTime,
    pub(super) len: u64,
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
