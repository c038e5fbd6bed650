//! The project's own instructions: the `AGENTS.md` files from the
//! repository root (the nearest ancestor holding `.git`, else the session's
//! directory itself: outside git the workspace is that directory) down to
//! the session's directory, all of them, farther ones first, so the nearer
//! file, which knows the directory better, has the last word. This is the
//! order Codex uses; unlike Codex, whose one 32 KiB budget is spent from the
//! root down (a large root file leaves nothing for the nearer ones), each
//! file has its own cap ([`FILE_CAP`]) and the whole a larger one
//! ([`TOTAL_CAP`]) spent from the nearest file up, so the file nearest the
//! work is the last to be cut. What is cut is said where it is cut.
//!
//! `SOUL.md` stays Mino's own instructions; these come after it. Each file
//! is read safely: opened non-blocking (a FIFO named `AGENTS.md` never
//! blocks the turn), only a regular file is read, and at most
//! [`FILE_CAP`] bytes of it. An empty file is left out.
//!
//! The files are read again for every model request, so an edit made
//! during a session applies to the next request, and the `response` record
//! of each request names the files and the hash of the instructions it was
//! built with ([`InstructionsUsed`]).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The file name the convention uses.
pub const FILE_NAME: &str = "AGENTS.md";

/// The most of one file the model is given (32 KiB).
pub const FILE_CAP: usize = 32 * 1024;

/// The most of all the files together (128 KiB): a deep chain of large
/// files cannot fill the model's window with instructions.
pub const TOTAL_CAP: usize = 4 * FILE_CAP;

/// One instruction file in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionFile {
    /// Absolute.
    pub path: String,
    /// The file's size in bytes when it was read.
    pub size: u64,
    /// Whether only part of it (its first [`InstructionFile::given`] bytes)
    /// was given to the model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The bytes of it given to the model (less than `size` when cut).
    #[serde(default)]
    pub given: u64,
    /// sha256 of the bytes given to the model (64 lowercase hex digits).
    pub sha256: String,
}

/// What a model request's instructions were built from, as the `response`
/// record keeps it (docs/journal.md, "Instructions").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionsUsed {
    /// sha256 of the whole instructions text sent (SOUL.md, these files,
    /// and the plan-mode notice when it was there).
    pub sha256: String,
    /// The `AGENTS.md` files it holds, farther first.
    #[serde(default)]
    pub files: Vec<InstructionFile>,
    /// Whether the plan-mode notice was part of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_mode: bool,
}

/// The project's instruction files and their text for the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectInstructions {
    pub files: Vec<InstructionFile>,
    /// The section appended to SOUL.md; empty when there are no files.
    pub text: String,
}

/// The runtime's notice while the session is in plan mode.
pub const PLAN_MODE_NOTICE: &str = "\
# Runtime notice: plan mode

Mino's runtime says: this session is in plan mode, which the person chose. In plan mode no command runs and no file is edited or written: a `bash`, `edit_file` or `write_file` call is refused without running and without asking. Work out a plan from what you know and what the person tells you, say which commands and edits you would make and why, and ask what is unclear. Only the person leaves plan mode; do not ask them to approve calls meanwhile.";

/// Reads the instruction files for a session in `dir`. A file that cannot
/// be read, or is not a regular file, is left out (and logged): the turn
/// goes on with the others.
pub fn load(dir: &Path) -> ProjectInstructions {
    let mut found = Vec::new();
    for directory in chain(dir) {
        let path = directory.join(FILE_NAME);
        match read_capped(&path) {
            Ok(Some((bytes, size))) if !bytes.iter().all(u8::is_ascii_whitespace) => found.push((path, bytes, size)),
            Ok(_) => {}
            Err(why) => tracing::warn!(path = %path.display(), "{FILE_NAME} is left out of the instructions: {why}"),
        }
    }
    // The total is spent from the nearest file up: the nearer file is the
    // one that knows the directory being worked in.
    let mut left = TOTAL_CAP;
    for (_, bytes, _) in found.iter_mut().rev() {
        let keep = char_boundary(bytes, left.min(bytes.len()));
        bytes.truncate(keep);
        left -= keep;
    }
    let mut files = Vec::new();
    let mut text = String::new();
    for (path, bytes, size) in found {
        let truncated = size > bytes.len() as u64;
        if text.is_empty() {
            text.push_str(
                "# The project's instructions\n\nThese come from the project's AGENTS.md files, from the repository root down to the working directory; a nearer file comes later and wins where they disagree.\n",
            );
        }
        text.push_str(&format!("\n## {}\n\n", path.display()));
        let content = String::from_utf8_lossy(&bytes);
        text.push_str(content.trim_end());
        text.push('\n');
        if truncated {
            text.push_str(&format!(
                "\n[Mino cut this file here: only its first {} of {size} bytes are given (at most {FILE_CAP} bytes of one file, {TOTAL_CAP} of all).]\n",
                bytes.len()
            ));
        }
        files.push(InstructionFile {
            path: path.display().to_string(),
            size,
            truncated,
            given: bytes.len() as u64,
            sha256: hex_sha256(&bytes),
        });
    }
    ProjectInstructions { files, text }
}

/// The model's instructions: SOUL.md, the project's files, and the plan-mode
/// notice when `plan_mode`; with what the journal records about them.
pub fn compose(soul: &str, project: &ProjectInstructions, plan_mode: bool) -> (String, InstructionsUsed) {
    let mut text = soul.to_string();
    for part in [project.text.as_str(), if plan_mode { PLAN_MODE_NOTICE } else { "" }] {
        if !part.is_empty() {
            if !text.is_empty() && !text.ends_with("\n\n") {
                text.push_str(if text.ends_with('\n') { "\n" } else { "\n\n" });
            }
            text.push_str(part);
        }
    }
    let used = InstructionsUsed { sha256: hex_sha256(text.as_bytes()), files: project.files.clone(), plan_mode };
    (text, used)
}

/// The directories from the root down to `dir` (itself last).
fn chain(dir: &Path) -> Vec<PathBuf> {
    let ancestors: Vec<&Path> = dir.ancestors().collect();
    let root = ancestors.iter().position(|a| a.join(".git").exists()).unwrap_or(0);
    ancestors[..=root].iter().rev().map(|p| p.to_path_buf()).collect()
}

/// At most [`FILE_CAP`] bytes of a regular file and its size; `None` when
/// there is no file.
fn read_capped(path: &Path) -> Result<Option<(Vec<u8>, u64)>, String> {
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let mut bytes = Vec::with_capacity(FILE_CAP.min(meta.len() as usize));
    (&file).take(FILE_CAP as u64).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    // Cut at a character boundary, so the note follows whole text.
    if (bytes.len() as u64) < meta.len() {
        let keep = char_boundary(&bytes, bytes.len());
        bytes.truncate(keep);
    }
    let size = meta.len().max(bytes.len() as u64);
    Ok(Some((bytes, size)))
}

/// The largest length at most `at` that does not split a UTF-8 character
/// (bytes that are not UTF-8 are cut where asked).
fn char_boundary(bytes: &[u8], at: usize) -> usize {
    match std::str::from_utf8(&bytes[..at]) {
        Ok(_) => at,
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => at,
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearer_files_come_after_farther_ones_from_the_repository_root() {
        let root = tempfile::tempdir().unwrap();
        let sub = root.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::write(root.path().join(FILE_NAME), "root rules").unwrap();
        std::fs::write(sub.join(FILE_NAME), "deep rules").unwrap();
        let loaded = load(&sub);
        assert_eq!(loaded.files.len(), 2);
        let (root_at, deep_at) = (loaded.text.find("root rules").unwrap(), loaded.text.find("deep rules").unwrap());
        assert!(root_at < deep_at, "{}", loaded.text);
    }

    #[test]
    fn a_fifo_is_left_out_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(load(dir.path()).files.is_empty());
    }

    #[test]
    fn a_long_file_is_cut_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "é".repeat(FILE_CAP)).unwrap();
        let loaded = load(dir.path());
        assert!(loaded.files[0].truncated);
        assert_eq!(loaded.files[0].size, 2 * FILE_CAP as u64);
        assert!(loaded.text.contains("Mino cut this file here"));
    }

    #[test]
    fn the_total_is_spent_from_the_nearest_file_up() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        let mut dir = root.path().to_path_buf();
        for depth in 0..6 {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(FILE_NAME), format!("level {depth} ").repeat(FILE_CAP)).unwrap();
            dir = dir.join("d");
        }
        let loaded = load(dir.parent().unwrap());
        let given: Vec<u64> = loaded.files.iter().map(|f| f.given).collect();
        assert_eq!(given, [0, 0, FILE_CAP as u64, FILE_CAP as u64, FILE_CAP as u64, FILE_CAP as u64]);
        assert!(loaded.files.iter().all(|f| f.truncated));
        assert!(loaded.text.len() < TOTAL_CAP + 4096, "{}", loaded.text.len());
    }

    #[test]
    fn an_empty_file_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "\n  \n").unwrap();
        assert!(load(dir.path()).files.is_empty());
    }
}
