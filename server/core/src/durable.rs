//! Small files replaced whole and durably: the title of a session, a
//! command's evidence record, the workspace rules file. The new content is
//! written and synced under a temporary name in the same directory, renamed
//! over the target, and the directory is synced, so after a crash the file
//! holds the old content or the new, never a mix, and the rename itself is
//! on disk before the caller reports success.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Which step of a durable replacement failed, for messages that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Create,
    Write,
    Sync,
    Rename,
    SyncDirectory,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Create => "create a temporary file",
            Step::Write => "write the temporary file",
            Step::Sync => "sync the temporary file",
            Step::Rename => "rename the temporary file over",
            Step::SyncDirectory => "sync the directory",
        }
    }
}

/// Replaces `path` with `bytes` (file mode `mode`), durably. On failure the
/// temporary file is removed and the target is as it was.
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> Result<(), (Step, io::Error)> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)
        .map_err(|e| (Step::Create, e))?;
    temp.write_all(bytes).map_err(|e| (Step::Write, e))?;
    temp.as_file().sync_all().map_err(|e| (Step::Sync, e))?;
    // Dropping the temporary file on failure deletes it.
    temp.persist(path).map_err(|e| (Step::Rename, e.error))?;
    sync_directory(dir).map_err(|e| (Step::SyncDirectory, e))
}

/// Syncs a directory, so that entries created, renamed or removed in it
/// are on disk.
pub fn sync_directory(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_with_the_mode_asked_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("title");
        replace(&path, b"first", 0o600).expect("first");
        replace(&path, b"second", 0o600).expect("second");
        assert_eq!(std::fs::read(&path).expect("read"), b"second");
        assert_eq!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o600);
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).expect("list").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("title")], "no temporary file is left");
    }

    #[test]
    fn a_failed_replacement_leaves_the_target_and_names_its_step() {
        let dir = tempfile::tempdir().expect("dir");
        let missing = dir.path().join("no-such-dir").join("file");
        let (step, _) = replace(&missing, b"x", 0o600).expect_err("no directory");
        assert_eq!(step, Step::Create);
        // A directory in the target's place cannot be renamed over.
        let target = dir.path().join("taken");
        std::fs::create_dir(&target).expect("dir");
        std::fs::write(target.join("inside"), b"kept").expect("inside");
        let (step, _) = replace(&target, b"x", 0o600).expect_err("a directory is in the way");
        assert_eq!(step, Step::Rename);
        assert_eq!(std::fs::read(target.join("inside")).expect("read"), b"kept");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1, "the temporary file is removed");
    }
}
