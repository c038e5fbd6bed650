//! `$MINO_HOME`: where sessions and SOUL.md live (default `~/.mino`).

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct MinoHome {
    root: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("invalid session id {0:?}: use 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit (no paths)")]
    InvalidSessionId(String),
    #[error("neither MINO_HOME nor HOME is set; set MINO_HOME to the directory Mino should keep its sessions in")]
    NoHome,
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// The home (or a directory above it) is something other than a directory.
    #[error("{path} is not a directory ({why}); set MINO_HOME to a directory Mino may write in (it is created if missing), or move what is at that path away")]
    NotADirectory { path: PathBuf, why: String },
}

impl MinoHome {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// Where deleted sessions are moved (never removed): `$MINO_HOME/trash`.
    pub fn trash_dir(&self) -> PathBuf {
        self.root.join("trash")
    }

    /// A session's title once renamed, beside its journal (see `sessions.rs`).
    pub fn title_path(&self, id: &str) -> Result<PathBuf, HomeError> {
        validate_session_id(id)?;
        Ok(self.sessions_dir().join(format!("{id}.title")))
    }

    pub fn soul_path(&self) -> PathBuf {
        self.root.join("SOUL.md")
    }

    /// The file of a session. The id cannot name anything outside the
    /// sessions directory: no separators, no `..`, no leading dot.
    pub fn session_path(&self, id: &str) -> Result<PathBuf, HomeError> {
        validate_session_id(id)?;
        Ok(self.sessions_dir().join(format!("{id}.jsonl")))
    }

    /// Creates the home directory if it is missing, and checks that it is
    /// one: before anything is read from it or written to it.
    pub fn ensure_root(&self) -> Result<(), HomeError> {
        let not_a_directory = |why: String| HomeError::NotADirectory { path: self.root.clone(), why };
        // Follows a symbolic link: a home linked to a directory is fine.
        match std::fs::metadata(&self.root) {
            Ok(meta) if meta.is_dir() => Ok(()),
            Ok(_) => Err(not_a_directory("it is a file".into())),
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                Err(not_a_directory("a path above it is a file".into()))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&self.root).map_err(|source| match source.raw_os_error() {
                    Some(libc::ENOTDIR) | Some(libc::EEXIST) => {
                        not_a_directory(format!("it could not be created: {source}"))
                    }
                    _ => HomeError::Io { path: self.root.clone(), source },
                })
            }
            Err(source) => Err(HomeError::Io { path: self.root.clone(), source }),
        }
    }

    pub fn ensure_sessions_dir(&self) -> Result<PathBuf, HomeError> {
        let dir = self.sessions_dir();
        std::fs::create_dir_all(&dir).map_err(|source| HomeError::Io { path: dir.clone(), source })?;
        Ok(dir)
    }

    /// The most recently written session of any workspace, if any. Not how
    /// a session is chosen at start-up (that is `SessionStore::start`, per
    /// workspace); kept for tools that want the newest file.
    pub fn latest_session(&self) -> Result<Option<String>, HomeError> {
        let dir = self.sessions_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(HomeError::Io { path: dir, source }),
        };
        let mut best: Option<(std::time::SystemTime, String)> = None;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else { continue };
            if validate_session_id(id).is_err() {
                continue;
            }
            // symlink_metadata: a link is not a session (and is refused on open).
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            let candidate = (modified, id.to_string());
            if best.as_ref().is_none_or(|b| candidate > *b) {
                best = Some(candidate);
            }
        }
        Ok(best.map(|(_, id)| id))
    }
}

pub fn validate_session_id(id: &str) -> Result<(), HomeError> {
    let ok = (1..=128).contains(&id.len())
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !id.contains("..");
    if ok {
        Ok(())
    } else {
        Err(HomeError::InvalidSessionId(id.to_string()))
    }
}

/// A new session id: UTC time (sortable) plus randomness.
pub fn new_session_id() -> String {
    let now = time::OffsetDateTime::now_utc();
    let stamp = now
        .format(time::macros::format_description!("[year][month][day]T[hour][minute][second]"))
        .unwrap_or_else(|_| now.unix_timestamp().to_string());
    format!("{stamp}-{:06x}", fastrand::u32(..0x100_0000))
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_cannot_escape_the_sessions_directory() {
        let home = MinoHome::new("/h");
        for bad in ["../x", "/etc/passwd", "a/b", "..", ".hidden", "", "a..b", "x\0y"] {
            assert!(home.session_path(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(home.session_path("2026-a_b.c").unwrap(), PathBuf::from("/h/sessions/2026-a_b.c.jsonl"));
        validate_session_id(&new_session_id()).unwrap();
    }

    #[test]
    fn a_home_that_is_a_file_is_not_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        for root in [file.clone(), file.join("below")] {
            let err = MinoHome::new(&root).ensure_root().unwrap_err();
            assert!(matches!(err, HomeError::NotADirectory { .. }), "{err}");
            assert!(err.to_string().contains(&root.display().to_string()), "{err}");
        }
        let fresh = dir.path().join("a/b");
        MinoHome::new(&fresh).ensure_root().unwrap();
        assert!(fresh.is_dir());
    }
}
