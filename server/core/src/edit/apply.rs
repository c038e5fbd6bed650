//! Writing an approved edit: only onto the content that was approved, and
//! atomically (the file holds the old content or the new, never a mix, and
//! the new survives a crash once `apply` returns).

use std::io::Write;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

use super::{capped_diff, read_bounded, sha256_hex, EditError, EditProposal, EditTool, ReadError, Workspace};

/// Prefix and suffix of the temporary file written beside the target (a
/// crash between its creation and the rename leaves it there; it is never
/// the target, and can be deleted).
pub const TEMP_PREFIX: &str = ".mino-edit-";
pub const TEMP_SUFFIX: &str = ".tmp";

/// What a written edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The diff written (the proposal's, which was approved).
    pub diff: String,
    /// The call's result for the model: what was done and the diff (cut at
    /// [`super::RESULT_DIFF_LIMIT`]), and the warning when the directory
    /// could not be synced.
    pub output: String,
    /// `false` when the content is in place but syncing its directory
    /// failed, so a power loss could still bring back the old content.
    pub durable: bool,
    /// Where the bytes were written, resolved: the proposal's path, unless
    /// the directory itself was renamed while it was written.
    pub written_to: PathBuf,
}

/// Why an approved edit was not written. In every case nothing was: the
/// file is exactly as it was. The text is the call's result for the model.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("Not applied: `{path}` {why} since this edit was proposed, so it no longer holds the content the approved diff was made from. Nothing was written. Read the file again and propose the edit against its current content.")]
    Changed { path: String, why: String },
    #[error("Not applied: {0} Nothing was written.")]
    Refused(EditError),
    #[error("Not applied: could not {action} ({source}). Nothing was written; `{path}` is unchanged.")]
    Write {
        action: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Writes an approved [`EditProposal`]. Re-resolves the path first (see
/// [`super::Workspace::resolve`]: the directory is opened with no symbolic
/// link on the way, beneath the workspace's handle when inside it) and
/// re-reads the file through that handle: when the path now leads
/// elsewhere, its directory is another one than at the proposal, or the
/// file's content (sha256) differs from the proposal's before-content (or a
/// new file now exists, or an existing one is gone), nothing is written
/// ([`ApplyError::Changed`]). Otherwise the new content goes to a temporary
/// file created in that same directory handle (with the file's permission
/// bits), is `fsync`ed, renamed over the target within the handle, and the
/// directory is `fsync`ed. No step names the directory by its path again,
/// so a directory on the way swapped for a symbolic link meanwhile cannot
/// send the bytes, or the temporary file, anywhere else.
///
/// Failpoints (feature `failpoints`): `edit::after_temp_file` (the
/// temporary file written and synced, not renamed), `edit::after_rename`
/// (renamed, the directory not yet synced).
pub fn apply(workspace: &Workspace, proposal: &EditProposal) -> Result<Applied, ApplyError> {
    let target = &proposal.path;
    let display = workspace.display_path(target);
    let changed = |why: &str| ApplyError::Changed { path: display.clone(), why: why.to_string() };
    let resolved = workspace.resolve(&proposal.requested_path).map_err(ApplyError::Refused)?;
    if resolved.path != *target {
        return Err(ApplyError::Changed {
            path: display.clone(),
            why: format!("now leads to {} (a symbolic link or directory changed)", resolved.path.display()),
        });
    }
    if resolved.dir.id != proposal.dir_id {
        return Err(changed("is in another directory of the same name (its directory was replaced)"));
    }
    let dir = resolved.dir.fd();
    let name = resolved.name();
    match (&proposal.before, read_bounded(dir, name)) {
        (None, Ok(None)) => {}
        (None, Ok(Some(_)) | Err(ReadError::NotRegular(_) | ReadError::TooLarge(_))) => {
            return Err(changed("was created"))
        }
        (Some(_), Ok(None)) => return Err(changed("was deleted")),
        (Some(before), Ok(Some((bytes, _)))) => {
            if sha256_hex(&bytes) != before.sha256 {
                return Err(changed("was changed"));
            }
        }
        (Some(_), Err(ReadError::NotRegular(what))) => return Err(changed(&format!("was replaced by {what}"))),
        (Some(_), Err(ReadError::TooLarge(_))) => return Err(changed("was changed")),
        (_, Err(ReadError::Io(source))) => {
            return Err(ApplyError::Write { action: format!("read `{display}` again"), path: display, source })
        }
    }
    let io_error = |action: String| {
        let path = display.clone();
        move |source: std::io::Error| ApplyError::Write { action, path, source }
    };
    // A new file gets 0666 less the umask, as any program's new file; an
    // existing one keeps its bits, set explicitly below because the umask
    // narrows the mode given at creation.
    let mut temp = TempFile::create(dir, proposal.mode.unwrap_or(0o666))
        .map_err(io_error(format!("create a temporary file in {}", resolved.dir.path.display())))?;
    if let Some(mode) = proposal.mode {
        rustix::fs::fchmod(&temp.file, rustix::fs::Mode::from_raw_mode(mode))
            .map_err(|e| io_error("set the temporary file's permissions".into())(e.into()))?;
    }
    temp.file.write_all(proposal.after_content.as_bytes()).map_err(io_error("write the temporary file".into()))?;
    temp.file.sync_all().map_err(io_error("sync the temporary file".into()))?;
    fail::fail_point!("edit::after_temp_file");
    // On failure the temporary file is removed with the error.
    rustix::fs::renameat(dir, temp.name.as_str(), dir, name).map_err(|e| ApplyError::Write {
        action: format!("rename the temporary file over `{display}`"),
        path: display.clone(),
        source: e.into(),
    })?;
    temp.renamed = true;
    fail::fail_point!("edit::after_rename");
    let synced = rustix::fs::fsync(dir).map_err(std::io::Error::from);
    // Where the bytes are: the directory handle's path now. Only a rename of
    // the directory itself between its open and here makes it differ.
    let written_to = resolved.dir.current_path().map_or_else(|| target.clone(), |dir| dir.join(name));
    let written = workspace.display_path(&written_to);
    let mut output = match (&proposal.narrowed, proposal.tool) {
        (Some(narrowed), _) => format!(
            "{} {written}: the person accepted {} of the {} hunks of the proposed diff ({}) and rejected the rest; \
             only the accepted hunks were written. The diff below is what was written.\n\n",
            if proposal.new_file { "Created" } else { "Edited" },
            narrowed.accepted.len(),
            narrowed.of,
            hunk_list(&narrowed.accepted),
        ),
        (None, EditTool::EditFile) => format!(
            "Edited {written}: replaced {} occurrence{} of old_text.\n\n",
            proposal.replacements,
            if proposal.replacements == 1 { "" } else { "s" }
        ),
        (None, EditTool::WriteFile) if proposal.new_file => {
            format!("Created {written} ({} bytes).\n\n", proposal.after.size)
        }
        (None, EditTool::WriteFile) => format!("Wrote {written} ({} bytes).\n\n", proposal.after.size),
    };
    if written_to != *target {
        // Said before the diff, which `diff_of_output` reads after the first blank line.
        output.insert_str(
            output.len() - 2,
            &format!(
                " Its directory was moved while the file was written (by something else): the approved path was {display}"
            ),
        );
    }
    if proposal.from_editor {
        // Said before the diff, as above: the model learns that the file
        // now also holds what the person had typed and not saved.
        output.insert_str(
            output.len() - 2,
            " The file was open in the person's editor with unsaved changes: the edit was made to the editor's \
             text, so the file now holds those changes too.",
        );
    }
    output.push_str(&capped_diff(&proposal.diff));
    if let Err(e) = &synced {
        output.push_str(&format!(
            "{} ({e}); after a power loss the file could hold its earlier content.\n",
            super::UNSYNCED_WARNING
        ));
    }
    Ok(Applied { diff: proposal.diff.clone(), output, durable: synced.is_ok(), written_to })
}

/// Why a rewind did not put a file back. In every case the file is as it was.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The file no longer holds what the rewind's plan expected.
    #[error("{0}")]
    Changed(String),
    #[error("outside the session's directory: a rewind writes only beneath it")]
    Outside,
    #[error("could not {action} ({source}); it was left as it was")]
    Io {
        action: String,
        #[source]
        source: std::io::Error,
    },
}

/// Puts a file back for a rewind: `content` written over it (atomically,
/// as [`apply`] writes: a temporary file in the same directory handle with
/// the file's permission bits, synced, renamed over, the directory synced),
/// or, `None`, the file removed (a file Mino created). Only beneath the
/// workspace, the directory opened beneath its handle with no symbolic link
/// on the way, and only when the file still holds `expected_sha256` (what
/// Mino last wrote), re-read through that handle just before the write:
/// a file changed since the plan is a [`RestoreError::Changed`], never
/// overwritten.
///
/// Failpoint (feature `failpoints`): `rewind::after_temp_file` (the
/// temporary file written and synced, not renamed).
pub fn restore(
    workspace: &Workspace,
    path: &std::path::Path,
    expected_sha256: &str,
    content: Option<&[u8]>,
) -> Result<(), RestoreError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |action: &str| {
        let action = action.to_string();
        move |source: std::io::Error| RestoreError::Io { action, source }
    };
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(RestoreError::Changed("not a file's path".into()));
    };
    let dir = match workspace.open_recorded_beneath(parent) {
        None => return Err(RestoreError::Outside),
        Some(Err(e)) if e.raw_os_error() == Some(libc::ENOENT) => {
            return Err(RestoreError::Changed("missing: its directory was deleted since Mino wrote it".into()))
        }
        Some(Err(e)) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(RestoreError::Changed("its directory is now reached through a symbolic link".into()))
        }
        Some(Err(e)) => return Err(io("open its directory")(e)),
        Some(Ok(dir)) => dir,
    };
    let mode = match read_bounded(dir.fd(), name) {
        Ok(Some((bytes, meta))) if sha256_hex(&bytes) == expected_sha256 => meta.permissions().mode() & 0o7777,
        Ok(Some(_)) | Err(ReadError::TooLarge(_)) => {
            return Err(RestoreError::Changed("changed since Mino wrote it (since the plan was shown)".into()))
        }
        Ok(None) => return Err(RestoreError::Changed("missing: deleted since the plan was shown".into())),
        Err(ReadError::NotRegular(what)) => return Err(RestoreError::Changed(format!("replaced by {what}"))),
        Err(ReadError::Io(e)) => return Err(io("read it again")(e)),
    };
    let Some(content) = content else {
        rustix::fs::unlinkat(dir.fd(), name, rustix::fs::AtFlags::empty()).map_err(|e| io("remove it")(e.into()))?;
        return rustix::fs::fsync(dir.fd()).map_err(|e| io("sync its directory after removing it")(e.into()));
    };
    let mut temp = TempFile::create(dir.fd(), mode).map_err(io("create a temporary file beside it"))?;
    rustix::fs::fchmod(&temp.file, rustix::fs::Mode::from_raw_mode(mode))
        .map_err(|e| io("set the temporary file's permissions")(e.into()))?;
    temp.file.write_all(content).map_err(io("write the temporary file"))?;
    temp.file.sync_all().map_err(io("sync the temporary file"))?;
    fail::fail_point!("rewind::after_temp_file");
    rustix::fs::renameat(dir.fd(), temp.name.as_str(), dir.fd(), name)
        .map_err(|e| io("rename the temporary file over it")(e.into()))?;
    temp.renamed = true;
    rustix::fs::fsync(dir.fd()).map_err(|e| io("sync its directory")(e.into()))
}

/// The temporary file of one write, created in the target's directory
/// handle and removed from it on drop unless it was renamed over the target.
struct TempFile<'a> {
    dir: BorrowedFd<'a>,
    name: String,
    file: std::fs::File,
    renamed: bool,
}

impl<'a> TempFile<'a> {
    /// A new file `.mino-edit-<random>.tmp` in `dir` (never an existing one,
    /// never through a symbolic link), with `mode` less the umask.
    fn create(dir: BorrowedFd<'a>, mode: u32) -> std::io::Result<TempFile<'a>> {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut last = rustix::io::Errno::EXIST;
        for _ in 0..64 {
            let name = format!("{TEMP_PREFIX}{}{TEMP_SUFFIX}", random_name());
            match rustix::fs::openat(dir, name.as_str(), flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => return Ok(TempFile { dir, name, file: std::fs::File::from(fd), renamed: false }),
                Err(e @ rustix::io::Errno::EXIST) => last = e,
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.into())
    }
}

/// Twelve random letters and digits.
fn random_name() -> String {
    std::iter::repeat_with(fastrand::alphanumeric).take(12).collect()
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_str(), rustix::fs::AtFlags::empty());
        }
    }
}

/// `hunk 1`, `hunks 1 and 3`, `hunks 1, 2 and 4`: numbered from 1, as a
/// person (and the model) counts them.
fn hunk_list(accepted: &[usize]) -> String {
    let names: Vec<String> = accepted.iter().map(|i| (i + 1).to_string()).collect();
    match names.as_slice() {
        [one] => format!("hunk {one}"),
        [rest @ .., last] => format!("hunks {} and {last}", rest.join(", ")),
        [] => "no hunks".to_string(),
    }
}
