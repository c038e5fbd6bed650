//! Writing an approved edit: only onto the content that was approved, and
//! atomically (the file holds the old content or the new, never a mix, and
//! the new survives a crash once `apply` returns).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

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

/// Writes an approved [`EditProposal`]. Re-resolves the path and re-reads
/// the file first: when the path now leads elsewhere or the file's content
/// (sha256) differs from the proposal's before-content (or a new file now
/// exists, or an existing one is gone), nothing is written
/// ([`ApplyError::Changed`]). Otherwise the new content goes to a temporary
/// file in the same directory (with the file's permission bits), is
/// `fsync`ed, renamed over the target, and the directory is `fsync`ed.
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
    match (&proposal.before, read_bounded(target)) {
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
    let dir = target.parent().unwrap_or(Path::new("/"));
    let io_error = |action: String| {
        let path = display.clone();
        move |source: std::io::Error| ApplyError::Write { action, path, source }
    };
    // A new file gets 0666 less the umask, as any program's new file; an
    // existing one keeps its bits, set explicitly below because the umask
    // narrows the mode given at creation.
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .permissions(std::fs::Permissions::from_mode(proposal.mode.unwrap_or(0o666)))
        .tempfile_in(dir)
        .map_err(io_error(format!("create a temporary file in {}", dir.display())))?;
    if let Some(mode) = proposal.mode {
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(io_error("set the temporary file's permissions".into()))?;
    }
    temp.write_all(proposal.after_content.as_bytes()).map_err(io_error("write the temporary file".into()))?;
    temp.as_file().sync_all().map_err(io_error("sync the temporary file".into()))?;
    fail::fail_point!("edit::after_temp_file");
    // On failure the temporary file is dropped (deleted) with the error.
    temp.persist(target).map_err(|e| ApplyError::Write {
        action: format!("rename the temporary file over `{display}`"),
        path: display.clone(),
        source: e.error,
    })?;
    fail::fail_point!("edit::after_rename");
    let synced = std::fs::File::open(dir).and_then(|d| d.sync_all());
    let mut output = match (&proposal.narrowed, proposal.tool) {
        (Some(narrowed), _) => format!(
            "{} {display}: the person accepted {} of the {} hunks of the proposed diff ({}) and rejected the rest; \
             only the accepted hunks were written. The diff below is what was written.\n\n",
            if proposal.new_file { "Created" } else { "Edited" },
            narrowed.accepted.len(),
            narrowed.of,
            hunk_list(&narrowed.accepted),
        ),
        (None, EditTool::EditFile) => format!(
            "Edited {display}: replaced {} occurrence{} of old_text.\n\n",
            proposal.replacements,
            if proposal.replacements == 1 { "" } else { "s" }
        ),
        (None, EditTool::WriteFile) if proposal.new_file => {
            format!("Created {display} ({} bytes).\n\n", proposal.after.size)
        }
        (None, EditTool::WriteFile) => format!("Wrote {display} ({} bytes).\n\n", proposal.after.size),
    };
    output.push_str(&capped_diff(&proposal.diff));
    if let Err(e) = &synced {
        output.push_str(&format!(
            "{} ({e}); after a power loss the file could hold its earlier content.\n",
            super::UNSYNCED_WARNING
        ));
    }
    Ok(Applied { diff: proposal.diff.clone(), output, durable: synced.is_ok() })
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
