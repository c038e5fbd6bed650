//! Where an edit's path leads: resolved inside the session's directory, with
//! every symbolic link followed, and whether the result leaves it.

use std::path::{Component, Path, PathBuf};

use super::EditError;

/// The session's directory, as the edit tools resolve paths against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// Canonical (absolute, no symbolic links), so a resolved path inside it
    /// starts with it.
    root: PathBuf,
}

/// A path as the tools will read and write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute; every symbolic link resolved, the last component included
    /// (a link to a file is edited where it points, as editors do).
    pub path: PathBuf,
    /// `path` is not inside the workspace: `..`, an absolute path elsewhere,
    /// or a symbolic link (to the file or any directory above it) pointing out.
    pub leaves_workspace: bool,
}

impl Workspace {
    /// The workspace rooted at `dir` (the session's `cwd`), which must exist.
    pub fn new(dir: &Path) -> std::io::Result<Workspace> {
        Ok(Workspace { root: std::fs::canonicalize(dir)? })
    }

    /// The workspace's canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `requested` (relative to the root, or absolute): its
    /// directory must exist; the file need not. Reports, never refuses, a
    /// path outside the workspace.
    pub fn resolve(&self, requested: &str) -> Result<ResolvedPath, EditError> {
        if requested.is_empty() {
            return Err(EditError::EmptyPath);
        }
        let given = Path::new(requested);
        let joined = if given.is_absolute() { given.to_path_buf() } else { self.root.join(given) };
        // `Path::file_name` skips a trailing `.` and `/`; a file path must end
        // in a name, as written.
        let ends_in_name = !requested.ends_with('/')
            && matches!(given.components().next_back(), Some(Component::Normal(_)))
            && !requested.ends_with("/.")
            && requested != ".";
        let (Some(parent), Some(name), true) = (joined.parent(), joined.file_name(), ends_in_name) else {
            return Err(EditError::NotAFilePath { path: requested.to_string() });
        };
        let dir = match std::fs::canonicalize(parent) {
            Ok(dir) => dir,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(EditError::NoDirectory { path: requested.to_string(), dir: parent.display().to_string() })
            }
            Err(source) => {
                return Err(EditError::Io { action: "resolve the directory of", path: requested.into(), source })
            }
        };
        let candidate = dir.join(name);
        let path = match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => match std::fs::canonicalize(&candidate) {
                Ok(target) => target,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let target = std::fs::read_link(&candidate).unwrap_or_default();
                    return Err(EditError::DanglingLink {
                        path: requested.to_string(),
                        target: target.display().to_string(),
                    });
                }
                Err(source) => {
                    return Err(EditError::Io { action: "resolve the symbolic link", path: requested.into(), source })
                }
            },
            Ok(_) => candidate,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => candidate,
            Err(source) => return Err(EditError::Io { action: "look up", path: requested.into(), source }),
        };
        // The journal records the path as text, and recovery reads the file
        // at exactly that text: a name that text cannot hold is refused.
        if path.to_str().is_none() {
            return Err(EditError::PathNotUtf8 { path: requested.to_string(), resolved: path.display().to_string() });
        }
        let leaves_workspace = !path.starts_with(&self.root);
        Ok(ResolvedPath { path, leaves_workspace })
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
