//! What an edit whose result was never saved did, proven from the file.
//!
//! The `tool_start` of an edit records the path and the sha256 of the
//! content before (or that the file was new) and after. The write is atomic
//! (see [`super::apply`]), so after any crash the file holds one of the two,
//! unless something else changed it since. Recovery reads it and says which;
//! it writes nothing.

use super::{read_bounded, sha256_hex, EditStartRecord, ReadError};
use crate::tool_facts::ToolStatus;

/// The recovered outcome of an edit call started but without a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditRecovery {
    /// The file holds exactly the edited content: the edit was applied.
    Applied,
    /// The file holds exactly the content from before (a new file: it still
    /// does not exist): the edit was not applied; nothing changed.
    NotApplied,
    /// Neither: the file changed since, was deleted, or cannot be read.
    /// `why` completes "on reopening, <path> …".
    Unknown { why: String },
}

impl EditRecovery {
    /// The `tool_result` status: `applied`, `not_applied` (both verified
    /// from the file) or `unknown` (which the acknowledgement gate applies to).
    pub fn status(&self) -> ToolStatus {
        match self {
            EditRecovery::Applied => ToolStatus::Applied,
            EditRecovery::NotApplied => ToolStatus::NotApplied,
            EditRecovery::Unknown { .. } => ToolStatus::Unknown,
        }
    }

    /// The recovered `tool_result`'s output for the model (docs/journal.md,
    /// "Edit records").
    pub fn output(&self, record: &EditStartRecord) -> String {
        let path = &record.path;
        match self {
            EditRecovery::Applied => format!(
                "Mino stopped while applying this edit; on reopening, {path} held exactly the edited content \
                 (its sha256 matched the approved edit's), so the edit was applied. It was not repeated."
            ),
            EditRecovery::NotApplied if record.new_file => format!(
                "Mino stopped before this edit was written; on reopening, {path} still did not exist, so the file was \
                 not created and nothing was changed. It was not retried."
            ),
            EditRecovery::NotApplied => format!(
                "Mino stopped before this edit was written; on reopening, {path} held exactly its content from before \
                 the edit (its sha256 matched), so the edit was not applied and nothing was changed. It was not retried."
            ),
            EditRecovery::Unknown { why } => format!(
                "Execution was started but its result was not saved, and on reopening, {path} {why} (neither the \
                 content from before the edit nor the edited content). The edit may have been applied and then \
                 changed or deleted by something else. Do not automatically retry it."
            ),
        }
    }
}

/// Classifies an edit whose `tool_start` has no result by what the file at
/// the recorded (resolved) path holds now. Reads at most
/// [`super::MAX_FILE_BYTES`]; writes nothing.
pub fn recover(record: &EditStartRecord) -> EditRecovery {
    let path = std::path::Path::new(&record.path);
    // The recorded path is canonical: its directory is opened with no
    // symbolic link on the way, so a link planted since cannot make
    // recovery read (and claim) some other file.
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return EditRecovery::Unknown { why: "is not a file's path".into() };
    };
    let dir = match super::workspace::open_recorded_dir(parent) {
        Ok(dir) => dir,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) && record.new_file => return EditRecovery::NotApplied,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
            return EditRecovery::Unknown { why: "no longer existed (nor did its directory)".into() }
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return EditRecovery::Unknown {
                why: "could not be read: its directory is now reached through a symbolic link".into(),
            }
        }
        Err(e) => return EditRecovery::Unknown { why: format!("could not be read ({e})") },
    };
    match read_bounded(dir.fd(), name) {
        Ok(None) if record.new_file => EditRecovery::NotApplied,
        Ok(None) => EditRecovery::Unknown { why: "no longer existed".into() },
        Ok(Some((bytes, _))) => {
            let now = sha256_hex(&bytes);
            if now == record.after_sha256 {
                EditRecovery::Applied
            } else if record.before_sha256.as_deref() == Some(now.as_str()) {
                EditRecovery::NotApplied
            } else if record.new_file {
                EditRecovery::Unknown { why: "existed with other content".into() }
            } else {
                EditRecovery::Unknown { why: "held other content".into() }
            }
        }
        Err(ReadError::NotRegular(what)) => EditRecovery::Unknown { why: format!("was {what}") },
        Err(ReadError::TooLarge(size)) => EditRecovery::Unknown { why: format!("held {size} bytes of other content") },
        Err(ReadError::Io(e)) => EditRecovery::Unknown { why: format!("could not be read ({e})") },
    }
}

/// What a recorded (canonical, absolute) path holds now, as a rewind
/// compares it: read without following a symbolic link there or on the way,
/// at most [`super::MAX_FILE_BYTES`]; writes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileNow {
    Absent,
    Content {
        sha256: String,
        size: u64,
    },
    /// Not a regular file, too large, behind a symbolic link, unreadable: the text says which.
    Unreadable(String),
}

pub fn file_now(path: &str) -> FileNow {
    let path = std::path::Path::new(path);
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return FileNow::Unreadable("not a file's path".into());
    };
    let dir = match super::workspace::open_recorded_dir(parent) {
        Ok(dir) => dir,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return FileNow::Absent,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return FileNow::Unreadable("its directory is now reached through a symbolic link".into())
        }
        Err(e) => return FileNow::Unreadable(format!("could not be read ({e})")),
    };
    match read_bounded(dir.fd(), name) {
        Ok(None) => FileNow::Absent,
        Ok(Some((bytes, _))) => FileNow::Content { sha256: sha256_hex(&bytes), size: bytes.len() as u64 },
        Err(ReadError::NotRegular(what)) => FileNow::Unreadable(format!("now {what}")),
        Err(ReadError::TooLarge(size)) => FileNow::Unreadable(format!("now {size} bytes, more than Mino reads")),
        Err(ReadError::Io(e)) => FileNow::Unreadable(format!("could not be read ({e})")),
    }
}
