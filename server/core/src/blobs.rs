//! The content of files before Mino edited them, kept by content hash beside
//! the session (`<session id>.blobs/<sha256>`, mode 0600), so a rewind can
//! put a file back without git or any other copy. Written and synced before
//! the edit's `tool_start` (docs/journal.md, "Rewind"); bounded per file and
//! per session ([`crate::settings::REWIND_FILE_LIMIT_BYTES`],
//! [`crate::settings::REWIND_SESSION_LIMIT_BYTES`]); moved to the trash with
//! the session.

use std::io;
use std::path::{Path, PathBuf};

use crate::settings::{REWIND_FILE_LIMIT_BYTES, REWIND_SESSION_LIMIT_BYTES};

/// The bounds a store keeps content within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub file: u64,
    pub session: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { file: REWIND_FILE_LIMIT_BYTES, session: REWIND_SESSION_LIMIT_BYTES }
    }
}

/// `<session id>.blobs` beside the session file.
pub fn dir_for(session_path: &Path) -> PathBuf {
    let name = session_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    session_path.with_file_name(format!("{name}.blobs"))
}

/// Where the content with `sha256` is kept.
pub fn path_in(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(sha256)
}

/// Whether content was kept, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    Kept,
    /// Not kept: the text completes "before-content not kept: …".
    NotKept(String),
}

/// A size as a person reads it: `2 MiB`, `640 KiB`, `17 bytes`.
pub fn size_text(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// The reason a file too large for the store gives.
pub fn too_large_reason(size: u64, limits: Limits) -> String {
    format!("larger than {} ({size} bytes)", size_text(limits.file))
}

/// Keeps `bytes` (whose sha256 is `sha256`) in `dir`, durably: the
/// directory is created (and its parent synced) when absent; the content is
/// written under a temporary name, synced, renamed to its hash, the
/// directory synced. Content already kept whole is not written again.
/// Past a bound nothing is written and the reason is returned; an error
/// writing is returned as such (the caller decides whether the edit goes on).
pub fn keep(dir: &Path, bytes: &[u8], sha256: &str, limits: Limits) -> io::Result<Kept> {
    let size = bytes.len() as u64;
    if size > limits.file {
        return Ok(Kept::NotKept(too_large_reason(size, limits)));
    }
    let path = path_in(dir, sha256);
    if read_checked(dir, sha256).is_ok() {
        return Ok(Kept::Kept);
    }
    if !dir.is_dir() {
        std::fs::create_dir(dir).or_else(|e| if e.kind() == io::ErrorKind::AlreadyExists { Ok(()) } else { Err(e) })?;
        if let Some(parent) = dir.parent() {
            crate::durable::sync_directory(parent)?;
        }
    }
    let held = held_bytes(dir)?;
    if held + size > limits.session {
        return Ok(Kept::NotKept(format!(
            "the session's store of before-content was full ({} of at most {})",
            size_text(held),
            size_text(limits.session)
        )));
    }
    crate::durable::replace(&path, bytes, 0o600).map_err(|(step, e)| {
        io::Error::new(e.kind(), format!("could not {} {}: {e}", step.as_str(), path.display()))
    })?;
    fail::fail_point!("blobs::after_keep");
    Ok(Kept::Kept)
}

/// The bytes kept under `sha256`, checked against it: an error when absent,
/// or when the file no longer holds those bytes.
pub fn read_checked(dir: &Path, sha256: &str) -> io::Result<Vec<u8>> {
    let path = path_in(dir, sha256);
    let meta = std::fs::symlink_metadata(&path)?;
    if !meta.is_file() || meta.len() > REWIND_FILE_LIMIT_BYTES.max(crate::edit::MAX_FILE_BYTES) {
        return Err(io::Error::other(format!("{} is not a kept file", path.display())));
    }
    let bytes = std::fs::read(&path)?;
    if crate::edit::sha256_hex(&bytes) != sha256 {
        return Err(io::Error::other(format!("{} no longer holds the content it is named by", path.display())));
    }
    Ok(bytes)
}

/// Bytes of every regular file in `dir` (temporary files of a crashed
/// write included: they count against the bound until removed).
fn held_bytes(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let meta = entry?.metadata()?;
        if meta.is_file() {
            total += meta.len();
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::sha256_hex;

    #[test]
    fn content_is_kept_by_hash_and_read_back_checked() {
        let home = tempfile::tempdir().expect("dir");
        let dir = dir_for(&home.path().join("s1.jsonl"));
        assert!(dir.ends_with("s1.blobs"));
        let bytes = b"bread\nbutter\njam\n";
        let sha = sha256_hex(bytes);
        assert_eq!(keep(&dir, bytes, &sha, Limits::default()).expect("keep"), Kept::Kept);
        assert_eq!(read_checked(&dir, &sha).expect("read"), bytes);
        // Kept again: not rewritten, still there.
        assert_eq!(keep(&dir, bytes, &sha, Limits::default()).expect("keep"), Kept::Kept);
        // A garbled copy is refused, never handed back as the content.
        std::fs::write(path_in(&dir, &sha), b"bread\n").expect("garble");
        assert!(read_checked(&dir, &sha).is_err());
    }

    #[test]
    fn past_a_bound_nothing_is_written_and_the_reason_names_it() {
        let home = tempfile::tempdir().expect("dir");
        let dir = dir_for(&home.path().join("s1.jsonl"));
        let limits = Limits { file: 8, session: 12 };
        let big = b"0123456789";
        match keep(&dir, big, &sha256_hex(big), limits).expect("keep") {
            Kept::NotKept(why) => assert_eq!(why, "larger than 8 bytes (10 bytes)"),
            Kept::Kept => panic!("kept past the file bound"),
        }
        assert!(read_checked(&dir, &sha256_hex(big)).is_err());
        assert_eq!(keep(&dir, b"1234567", &sha256_hex(b"1234567"), limits).expect("keep"), Kept::Kept);
        match keep(&dir, b"abcdef", &sha256_hex(b"abcdef"), limits).expect("keep") {
            Kept::NotKept(why) => assert!(why.contains("full (7 bytes of at most 12 bytes)"), "{why}"),
            Kept::Kept => panic!("kept past the session bound"),
        }
    }
}
