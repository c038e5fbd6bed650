//! Protected paths: files whose content a program later runs outside any
//! sandbox, or that decide what Mino itself runs without asking.
//!
//! - `.git` (its `config` names programs such as `core.fsmonitor`, its
//!   `hooks/` are run by git; the directory a `.git` file points to, in a
//!   worktree, too);
//! - Mino's own home, `$MINO_HOME` (the workspace rules files,
//!   `config.toml`, `SOUL.md`, the journals and evidence records);
//! - editor and shell settings that run commands: `.vscode/` (tasks,
//!   settings, launch configurations), `.envrc` (direnv), `.nvim.lua`
//!   (Neovim's `exrc`).
//!
//! Two guards use this list: a `workspace-write` command may read them but
//! never write them, not even create them ([`sandbox_protected`], kept
//! read-only by [`crate::sandbox`]), and an edit of one always asks,
//! whatever rule or mode is in force, its approval request saying why
//! ([`why_protected`]).

use std::path::{Component, Path, PathBuf};

use crate::sandbox::ProtectedPath;

/// The protected names at the top of a workspace: the name, whether it is
/// a directory when it exists, and why it is protected.
const WORKSPACE_NAMES: [(&str, bool); 4] = [(".git", true), (".vscode", true), (".envrc", false), (".nvim.lua", false)];

/// Mino's own files in its home: what a workspace inside the home (an odd
/// but possible layout) leaves protected, instead of the whole home.
const HOME_ENTRIES: [(&str, bool); 5] =
    [("config.toml", false), ("SOUL.md", false), ("sessions", true), ("workspaces", true), ("trash", true)];

const WHY_GIT: &str =
    "it is part of a git repository's own files (.git): git runs the programs its config and hooks name (core.fsmonitor, hooks/*) outside any sandbox";
const WHY_VSCODE: &str =
    "it is VS Code's folder settings (.vscode): tasks, settings and launch configurations there can run commands when the folder is opened";
const WHY_ENVRC: &str = "it is a direnv file (.envrc): your shell runs it when you enter the directory";
const WHY_NVIM: &str = "it is a Neovim local configuration (.nvim.lua): Neovim runs it when started here with 'exrc'";
const WHY_GITCONFIG: &str = "it is a git configuration file: git runs the programs it names outside any sandbox";

/// The paths a sandboxed command of `workspace` must not write, existing or
/// not: the workspace's protected names, the directory a `.git` file points
/// to (and that repository's common directory), and `home` (`$MINO_HOME`).
pub fn sandbox_protected(workspace: &Path, home: Option<&Path>) -> Vec<ProtectedPath> {
    let mut out: Vec<ProtectedPath> = WORKSPACE_NAMES
        .iter()
        .map(|(name, directory)| ProtectedPath { path: workspace.join(name), directory: *directory })
        .collect();
    for dir in linked_git_dirs(workspace) {
        out.push(ProtectedPath { path: dir, directory: true });
    }
    if let Some(home) = home {
        out.extend(home_paths(workspace, home));
    }
    out
}

/// The home itself, or (when the workspace lies inside it) Mino's own
/// files there: the workspace stays writable.
fn home_paths(workspace: &Path, home: &Path) -> Vec<ProtectedPath> {
    let resolve = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    if resolve(workspace).starts_with(resolve(home)) {
        HOME_ENTRIES
            .iter()
            .map(|(name, directory)| ProtectedPath { path: home.join(name), directory: *directory })
            .collect()
    } else {
        vec![ProtectedPath { path: home.to_owned(), directory: true }]
    }
}

/// For a workspace whose `.git` is a file (`gitdir: <dir>`, as in a git
/// worktree or a submodule): that directory and the `commondir` it names.
fn linked_git_dirs(workspace: &Path) -> Vec<PathBuf> {
    let dot_git = workspace.join(".git");
    let is_file = std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file());
    if !is_file {
        return Vec::new();
    }
    // A `.git` file is a line or two; anything larger is not one.
    let Ok(text) = read_small(&dot_git) else { return Vec::new() };
    let Some(target) = text.lines().find_map(|l| l.strip_prefix("gitdir:")).map(str::trim) else {
        return Vec::new();
    };
    let gitdir = workspace.join(target);
    let mut dirs = vec![gitdir.clone()];
    if let Ok(common) = read_small(&gitdir.join("commondir")) {
        let common = common.trim();
        if !common.is_empty() {
            dirs.push(gitdir.join(common));
        }
    }
    dirs
}

fn read_small(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?.take(4096).read_to_string(&mut text)?;
    Ok(text)
}

/// Why an edit of `path` (absolute, every symbolic link resolved, as the
/// edit would write it) must be asked about whatever rule or mode is in
/// force; `None` when it is not protected. `workspace` is the session's
/// directory, `home` Mino's home.
pub fn why_protected(workspace: &Path, home: Option<&Path>, path: &Path) -> Option<String> {
    let resolve = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    if let Some(home) = home {
        let in_home = home_paths(workspace, home).iter().any(|p| path.starts_with(resolve(&p.path)));
        let home = resolve(home);
        if in_home {
            return Some(format!(
                "it is in Mino's own home ({}): the rules files, config.toml, SOUL.md and sessions there decide what Mino runs without asking",
                home.display()
            ));
        }
    }
    let workspace = resolve(workspace);
    for dir in linked_git_dirs(&workspace) {
        if path.starts_with(resolve(&dir)) {
            return Some(WHY_GIT.to_owned());
        }
    }
    let names: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    // Any `.git` or `.vscode` directory on the way, the workspace's or a
    // nested repository's: git and VS Code read those too.
    let (dirs, file) = names.split_at(names.len().saturating_sub(1));
    if dirs.iter().any(|n| *n == ".git") {
        return Some(WHY_GIT.to_owned());
    }
    if dirs.iter().any(|n| *n == ".vscode") {
        return Some(WHY_VSCODE.to_owned());
    }
    match file.first().and_then(|n| n.to_str()) {
        // A file named `.git` is a pointer to a repository (`gitdir:`).
        Some(".git") => Some(WHY_GIT.to_owned()),
        Some(".vscode") => Some(WHY_VSCODE.to_owned()),
        Some(".envrc") => Some(WHY_ENVRC.to_owned()),
        Some(".nvim.lua") => Some(WHY_NVIM.to_owned()),
        Some(".gitconfig") => Some(WHY_GITCONFIG.to_owned()),
        _ => None,
    }
}

/// A sentence for start-up when Mino's home lies inside the workspace
/// (Mino started in `~` with the default `~/.mino`): what keeps a command
/// from forging its rules there. `None` when it does not.
pub fn home_in_workspace(workspace: &Path, home: &Path) -> Option<String> {
    let resolve = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let (workspace, home) = (resolve(workspace), resolve(home));
    home.starts_with(&workspace).then(|| {
        format!(
            "Mino's home {} is inside the workspace {}: its rules, configuration and sessions are protected paths \
             (a sandboxed command can read but not write them, and an edit there always asks), but a command \
             run with the sandbox off can change them; consider setting MINO_HOME outside the workspace",
            home.display(),
            workspace.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_editor_and_mino_files_are_protected_anywhere_and_ordinary_files_are_not() {
        let ws = Path::new("/w");
        let home = Path::new("/h/.mino");
        for (path, protected) in [
            ("/w/.git/config", true),
            ("/w/.git/hooks/pre-commit", true),
            ("/w/sub/.git/config", true),
            ("/w/.git", true),
            ("/w/.vscode/tasks.json", true),
            ("/w/.vscode/settings.json", true),
            ("/w/.envrc", true),
            ("/w/src/.envrc", true),
            ("/w/.nvim.lua", true),
            ("/h/.mino/workspaces/x/rules.toml", true),
            ("/h/.mino/config.toml", true),
            ("/w/src/main.rs", false),
            ("/w/.github/workflows/ci.yml", false),
            ("/w/.gitignore", false),
            ("/w/git/config", false),
        ] {
            assert_eq!(why_protected(ws, Some(home), Path::new(path)).is_some(), protected, "{path}");
        }
    }

    #[test]
    fn a_workspace_inside_the_home_stays_editable_but_minos_files_there_do_not() {
        let home = Path::new("/h");
        let ws = Path::new("/h/work");
        assert!(why_protected(ws, Some(home), Path::new("/h/work/a.txt")).is_none());
        assert!(why_protected(ws, Some(home), Path::new("/h/config.toml")).is_some());
        assert!(why_protected(ws, Some(home), Path::new("/h/workspaces/w/rules.toml")).is_some());
    }

    #[test]
    fn a_home_inside_the_workspace_is_named_and_one_outside_is_not() {
        assert!(home_in_workspace(Path::new("/h"), Path::new("/h/.mino")).is_some());
        assert!(home_in_workspace(Path::new("/w"), Path::new("/h/.mino")).is_none());
    }
}
