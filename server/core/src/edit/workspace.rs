//! Where an edit's path leads: resolved with every symbolic link followed,
//! whether the result leaves the session's directory, and an open handle on
//! the directory that holds it, through which the file is read and written.
//!
//! A path given as text can be redirected between a check and a write (a
//! directory swapped for a symbolic link with `renameat2(RENAME_EXCHANGE)`
//! while Mino looks). So the text is only used to find a candidate: its
//! directory's canonical path. That directory is then opened with
//! `openat2(2)`, beneath the workspace's own handle with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS` when the candidate is inside it (from `/` with
//! `RESOLVE_NO_SYMLINKS` when it is outside), so the kernel refuses a
//! symbolic link or an escape anywhere on the way; a refusal means the path
//! changed meanwhile and the resolution starts again (a few times, then the
//! call is refused). The handle is what the file is read from and written
//! to (see [`super::apply`]): once opened, no later rename of a path
//! component can send the bytes elsewhere.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{openat2, AtFlags, FileType, Mode, OFlags, ResolveFlags, CWD};
use rustix::io::Errno;

use super::EditError;

/// Symbolic links followed at the last component before giving up, as the
/// kernel's own limit (`ELOOP`).
const MAX_LINKS: usize = 40;

/// Times a directory that changed while it was being opened is resolved
/// again before the call is refused.
const ATTEMPTS: usize = 3;

/// The session's directory, as the edit tools resolve paths against it:
/// its canonical path and a handle on it, opened once.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// Canonical (absolute, no symbolic links), so a resolved path inside it
    /// starts with it.
    root: PathBuf,
    /// The directory `root` named when the workspace was made; every path
    /// inside the workspace is opened beneath it.
    root_dir: Arc<OwnedFd>,
}

/// An open directory and the canonical path it was opened at.
#[derive(Debug)]
pub(super) struct Directory {
    fd: OwnedFd,
    /// Device and inode: the same directory, whatever its path is now.
    pub(super) id: (u64, u64),
    pub(super) path: PathBuf,
}

impl Directory {
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Where the directory is now (it may have been renamed since it was
    /// opened): the kernel's name for the handle, `None` when it has none
    /// (deleted, or `/proc` is not mounted).
    pub(super) fn current_path(&self) -> Option<PathBuf> {
        use std::os::fd::AsRawFd;
        let path = std::fs::read_link(format!("/proc/self/fd/{}", self.fd.as_raw_fd())).ok()?;
        (path.is_absolute() && !path.as_os_str().as_bytes().ends_with(b" (deleted)")).then_some(path)
    }
}

/// A path as the tools will read and write it.
#[derive(Debug)]
pub struct ResolvedPath {
    /// Absolute; every symbolic link resolved, the last component included
    /// (a link to a file is edited where it points, as editors do).
    pub path: PathBuf,
    /// `path` is not inside the workspace: `..`, an absolute path elsewhere,
    /// or a symbolic link (to the file or any directory above it) pointing out.
    pub leaves_workspace: bool,
    /// The directory holding `path`, opened at `path`'s parent with no
    /// symbolic link on the way.
    pub(super) dir: Directory,
}

impl ResolvedPath {
    /// Opens the file read-only, without blocking (a FIFO without a writer
    /// would block the open) and without following a symbolic link, beneath
    /// the directory handle [`Workspace::resolve`] opened: a name swapped
    /// for a link since the resolution is refused (`ELOOP`), never followed
    /// out. The caller checks the open file's type before reading it.
    pub fn open_read_only(&self) -> std::io::Result<std::fs::File> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd = openat2(
            self.dir.fd(),
            self.name(),
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        )?;
        Ok(std::fs::File::from(fd))
    }

    /// The last component of `path`: the file's name in [`Self::dir`].
    pub(super) fn name(&self) -> &OsStr {
        // `resolve` builds `path` as a directory joined with a name.
        self.path.file_name().unwrap_or_default()
    }
}

/// Opens `path` (canonical, absolute) as a directory, refusing a symbolic
/// link anywhere on the way; beneath `base` (whose canonical path is
/// `base_path`) when given, so nothing can lead out of it.
fn open_dir_no_symlinks(base: Option<(BorrowedFd<'_>, &Path)>, path: &Path) -> Result<(OwnedFd, bool), Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOCTTY;
    if let Some((fd, base_path)) = base {
        if let Ok(relative) = path.strip_prefix(base_path) {
            let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
            let dir = openat2(fd, relative, flags, Mode::empty(), ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS)?;
            return Ok((dir, true));
        }
    }
    Ok((openat2(CWD, path, flags, Mode::empty(), ResolveFlags::NO_SYMLINKS)?, false))
}

/// Opens the directory at `path` (absolute, canonical as recorded) with no
/// symbolic link on the way: how recovery reads a recorded edit's file.
pub(super) fn open_recorded_dir(path: &Path) -> std::io::Result<Directory> {
    let (fd, _) = open_dir_no_symlinks(None, path)?;
    let stat = rustix::fs::fstat(&fd)?;
    Ok(Directory { fd, id: (stat.st_dev, stat.st_ino), path: path.to_path_buf() })
}

/// The kernel refused the open because the path changed since it was made
/// canonical: a symbolic link, a missing directory, a file where a
/// directory was, or (beneath the workspace) an escape.
fn raced(e: Errno) -> bool {
    matches!(e, Errno::LOOP | Errno::NOENT | Errno::NOTDIR | Errno::XDEV | Errno::AGAIN)
}

impl Workspace {
    /// The workspace rooted at `dir` (the session's `cwd`), which must exist.
    pub fn new(dir: &Path) -> std::io::Result<Workspace> {
        let root = std::fs::canonicalize(dir)?;
        let (root_dir, _) = open_dir_no_symlinks(None, &root)?;
        Ok(Workspace { root, root_dir: Arc::new(root_dir) })
    }

    /// Opens the directory at `path` (canonical, as an edit record names
    /// it), which must be inside the workspace, beneath the workspace's own
    /// handle with no symbolic link on the way: how a rewind reaches the
    /// file it puts back. `None` for a path outside the workspace.
    pub(super) fn open_recorded_beneath(&self, path: &Path) -> Option<std::io::Result<Directory>> {
        if !path.starts_with(&self.root) {
            return None;
        }
        let opened =
            open_dir_no_symlinks(Some((self.root_dir.as_fd(), &self.root)), path).map_err(std::io::Error::from);
        Some(opened.and_then(|(fd, _)| {
            let stat = rustix::fs::fstat(&fd)?;
            Ok(Directory { fd, id: (stat.st_dev, stat.st_ino), path: path.to_path_buf() })
        }))
    }

    /// The workspace's canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens `relative` (a path beneath the root, as a walk of the root
    /// found it) read-only and without blocking, with the kernel keeping
    /// the whole resolution beneath the root's handle and refusing any
    /// symbolic link on the way: an entry swapped for a link to outside
    /// after the walk listed it is refused, never read.
    pub fn open_beneath(&self, relative: &Path) -> std::io::Result<std::fs::File> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
        let fd = openat2(
            self.root_dir.as_fd(),
            relative,
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        )?;
        Ok(std::fs::File::from(fd))
    }

    /// Resolves `requested` (relative to the root, or absolute): its
    /// directory must exist; the file need not. Reports, never refuses, a
    /// path outside the workspace; refuses one that keeps changing while it
    /// is resolved.
    pub fn resolve(&self, requested: &str) -> Result<ResolvedPath, EditError> {
        if requested.is_empty() {
            return Err(EditError::EmptyPath);
        }
        let given = Path::new(requested);
        let mut joined = if given.is_absolute() { given.to_path_buf() } else { self.root.join(given) };
        // `Path::file_name` skips a trailing `.` and `/`; a file path must end
        // in a name, as written.
        let ends_in_name = !requested.ends_with('/')
            && matches!(given.components().next_back(), Some(Component::Normal(_)))
            && !requested.ends_with("/.")
            && requested != ".";
        if !ends_in_name {
            return Err(EditError::NotAFilePath { path: requested.to_string() });
        }
        // The first symbolic link followed at the last component, for the
        // message when the chain ends nowhere.
        let mut first_link: Option<PathBuf> = None;
        for _ in 0..=MAX_LINKS {
            let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
                return Err(EditError::NotAFilePath { path: requested.to_string() });
            };
            let dir = match self.open_dir(parent, requested) {
                Err(EditError::NoDirectory { .. }) if first_link.is_some() => {
                    let target = first_link.unwrap_or_default().display().to_string();
                    return Err(EditError::DanglingLink { path: requested.to_string(), target });
                }
                other => other?,
            };
            let name = name.to_os_string();
            match rustix::fs::statat(dir.fd(), name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                    let target = rustix::fs::readlinkat(dir.fd(), name.as_os_str(), Vec::new()).map_err(|e| {
                        EditError::Io { action: "read the symbolic link", path: requested.into(), source: e.into() }
                    })?;
                    let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                    first_link.get_or_insert_with(|| target.clone());
                    joined = if target.is_absolute() { target } else { dir.path.join(target) };
                    continue;
                }
                Ok(_) => {}
                Err(Errno::NOENT) => {
                    if let Some(target) = first_link {
                        return Err(EditError::DanglingLink {
                            path: requested.to_string(),
                            target: target.display().to_string(),
                        });
                    }
                }
                Err(e) => return Err(EditError::Io { action: "look up", path: requested.into(), source: e.into() }),
            }
            let path = dir.path.join(&name);
            // The journal records the path as text, and recovery reads the file
            // at exactly that text: a name that text cannot hold is refused.
            if path.to_str().is_none() {
                return Err(EditError::PathNotUtf8 {
                    path: requested.to_string(),
                    resolved: path.display().to_string(),
                });
            }
            let leaves_workspace = !path.starts_with(&self.root);
            return Ok(ResolvedPath { path, leaves_workspace, dir });
        }
        Err(EditError::Io {
            action: "resolve",
            path: requested.into(),
            source: std::io::Error::from_raw_os_error(libc::ELOOP),
        })
    }

    /// Opens the directory `parent` names (any path) at its canonical path,
    /// with no symbolic link on the way: beneath the workspace's handle
    /// when that path is inside it.
    fn open_dir(&self, parent: &Path, requested: &str) -> Result<Directory, EditError> {
        let no_directory = || EditError::NoDirectory { path: requested.to_string(), dir: parent.display().to_string() };
        for _ in 0..ATTEMPTS {
            // Only a candidate: the open below is what counts.
            let canonical = match std::fs::canonicalize(parent) {
                Ok(dir) => dir,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => return Err(no_directory()),
                Err(source) => {
                    return Err(EditError::Io { action: "resolve the directory of", path: requested.into(), source })
                }
            };
            match open_dir_no_symlinks(Some((self.root_dir.as_fd(), &self.root)), &canonical) {
                Ok((fd, _)) => {
                    let stat = rustix::fs::fstat(&fd).map_err(|e| EditError::Io {
                        action: "look up the directory of",
                        path: requested.into(),
                        source: e.into(),
                    })?;
                    return Ok(Directory { fd, id: (stat.st_dev, stat.st_ino), path: canonical });
                }
                Err(e) if raced(e) => continue,
                Err(Errno::NOSYS) => return Err(EditError::NoOpenat2),
                Err(e) => {
                    return Err(EditError::Io {
                        action: "open the directory of",
                        path: requested.into(),
                        source: e.into(),
                    })
                }
            }
        }
        Err(EditError::Unstable { path: requested.to_string(), dir: parent.display().to_string() })
    }

    /// For a path that could not be resolved: where it leads as far as it
    /// exists, when that is outside the workspace (the nearest existing
    /// directory above it, canonical, is outside, or the path names a place
    /// outside as written). `None` when it stays inside.
    pub fn outside_hint(&self, requested: &str) -> Option<PathBuf> {
        let given = Path::new(requested);
        let joined = if given.is_absolute() { given.to_path_buf() } else { self.root.join(given) };
        let mut lexical = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::ParentDir => {
                    lexical.pop();
                }
                Component::CurDir => {}
                other => lexical.push(other),
            }
        }
        if !lexical.starts_with(&self.root) {
            return Some(lexical);
        }
        let mut above = joined.parent();
        while let Some(dir) = above {
            if let Ok(canonical) = std::fs::canonicalize(dir) {
                return (!canonical.starts_with(&self.root))
                    .then(|| canonical.join(joined.file_name().unwrap_or_default()));
            }
            above = dir.parent();
        }
        None
    }

    /// How a resolved path is shown: relative to the root when inside it,
    /// absolute otherwise.
    pub fn display_path(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
            _ => path.display().to_string(),
        }
    }
}
