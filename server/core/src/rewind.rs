//! Rewinding Mino's own file edits: the plan (what a rewind would put back,
//! what it cannot, and the commands whose effects it cannot undo), computed
//! from the journal's edit records and the files' current bytes; and what a
//! `rewind` record without its `rewind_end` proves after a crash.
//!
//! A file is put back only where it still holds exactly what Mino last
//! wrote (its recorded `after_sha256`), and only to content the session's
//! store kept (`blobs`, by hash); anything else is a conflict, left as it
//! is and named. Nothing here writes a file: [`crate::edit::restore`] does,
//! for [`crate::agent::Agent::rewind`]. See docs/journal.md ("Rewind").

use std::collections::BTreeMap;
use std::path::Path;

use crate::edit::FileNow;
use crate::journal::record::ToolStatus;
use crate::transcript::Transcript;

pub use crate::journal::rewind_record::{
    Conflict, FileAction, FileOutcome, Outcome, PlannedCommand, PlannedFile, RewindDone, RewindPlan,
};

/// Why no plan can be made. The text is for the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("no turn {0} in this session")]
    UnknownTurn(String),
    #[error("turn {0} has not ended; wait for it to end (or cancel it), then rewind")]
    Open(String),
    #[error("turn {0} was already rewound")]
    AlreadyRewound(String),
    #[error(
        "turn {0} is summarised by a compaction, so the model's context cannot drop it; rewind a turn after turn {1}"
    )]
    Compacted(String, String),
    #[error("a rewind of this session has not ended; reopen the session")]
    RewindOpen,
}

/// The digest a plan is confirmed by: sha256 of its JSON, so a client that
/// showed an older plan cannot have a different one carried out.
pub fn digest(plan: &RewindPlan) -> String {
    crate::edit::sha256_hex(&serde_json::to_vec(plan).unwrap_or_default())
}

/// The plan for rewinding `turn_id` and every later turn (turns rewound
/// before are skipped), from the edit records of those turns and the files'
/// bytes now. Reads files (at most [`crate::edit::MAX_FILE_BYTES`] each) and
/// checks the store; writes nothing.
pub fn plan(
    transcript: &Transcript,
    turn_id: &str,
    blobs_dir: &Path,
    workspace_root: &Path,
    limits: crate::blobs::Limits,
) -> Result<RewindPlan, PlanError> {
    if transcript.open_rewind().is_some() {
        return Err(PlanError::RewindOpen);
    }
    let Some(start) = transcript.turns.iter().position(|t| t.id == turn_id) else {
        return Err(PlanError::UnknownTurn(turn_id.to_string()));
    };
    if transcript.turns[start].rewound {
        return Err(PlanError::AlreadyRewound(turn_id.to_string()));
    }
    if let Some(compaction) = transcript.compaction.as_ref().filter(|c| c.through >= start) {
        return Err(PlanError::Compacted(turn_id.to_string(), compaction.through_turn_id.clone()));
    }
    let mut plan = RewindPlan::default();
    // Per file, Mino's writes to it in order: (turn, before, after).
    let mut writes: BTreeMap<String, Vec<Write>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for turn in &transcript.turns[start..] {
        if turn.is_open() {
            return Err(PlanError::Open(turn.id.clone()));
        }
        if turn.rewound {
            continue;
        }
        plan.turns.push(turn.id.clone());
        for call in &turn.calls {
            let status = call.result.as_ref().map(|r| r.status);
            match &call.edit {
                Some(edit) if call.started => {
                    // Only writes that happened, or may have: a refused or
                    // failed edit wrote nothing (apply checks before writing).
                    if !matches!(status, Some(ToolStatus::Success | ToolStatus::Applied | ToolStatus::Unknown)) {
                        continue;
                    }
                    order.retain(|p| *p != edit.path);
                    order.push(edit.path.clone());
                    writes.entry(edit.path.clone()).or_default().push(Write {
                        turn_id: turn.id.clone(),
                        new_file: edit.new_file,
                        before_sha256: edit.before_sha256.clone(),
                        before_size: edit.before_size,
                        after_sha256: edit.after_sha256.clone(),
                    });
                }
                None if call.started && !call.is_read() => plan.commands.push(PlannedCommand {
                    turn_id: turn.id.clone(),
                    call_id: call.call_id.clone(),
                    command: call.command(),
                }),
                _ => {}
            }
        }
    }
    // Newest change first.
    for path in order.iter().rev() {
        let chain = &writes[path];
        let conflict = |why: String| Conflict { path: path.clone(), why };
        if !Path::new(path).starts_with(workspace_root) {
            plan.conflicts.push(conflict(
                "outside the session's directory: a rewind writes only beneath it; left as it is".into(),
            ));
            continue;
        }
        if let Some(pair) = chain.windows(2).find(|w| w[1].before_sha256.as_deref() != Some(w[0].after_sha256.as_str()))
        {
            plan.conflicts.push(conflict(format!(
                "changed by something else between Mino's edits in turns {} and {}; left as it is",
                pair[0].turn_id, pair[1].turn_id
            )));
            continue;
        }
        let (first, last) = (&chain[0], &chain[chain.len() - 1]);
        let now = crate::edit::file_now(path);
        let target_reached = match (&now, first.new_file) {
            (FileNow::Absent, true) => true,
            (FileNow::Content { sha256, .. }, false) => first.before_sha256.as_deref() == Some(sha256.as_str()),
            _ => false,
        };
        if target_reached {
            // Already as before the turns (an edit that never landed): nothing to do.
            continue;
        }
        match now {
            FileNow::Content { sha256, .. } if sha256 == last.after_sha256 => {}
            FileNow::Content { .. } => {
                plan.conflicts.push(conflict("changed since Mino wrote it; left as it is".into()));
                continue;
            }
            FileNow::Absent => {
                plan.conflicts.push(conflict("missing: deleted since Mino wrote it".into()));
                continue;
            }
            FileNow::Unreadable(why) => {
                plan.conflicts.push(conflict(format!("{why}; left as it is")));
                continue;
            }
        }
        if first.new_file {
            plan.files.push(PlannedFile {
                path: path.clone(),
                action: FileAction::Remove,
                from_sha256: last.after_sha256.clone(),
                to_sha256: None,
                to_size: None,
            });
            continue;
        }
        let (Some(before), Some(size)) = (first.before_sha256.clone(), first.before_size) else { continue };
        if crate::blobs::read_checked(blobs_dir, &before).is_err() {
            let why = if size > limits.file {
                crate::blobs::too_large_reason(size, limits)
            } else {
                "it is not in the session's store (the store was full, or the copy could not be saved)".into()
            };
            plan.conflicts.push(conflict(format!("before-content not kept: {why}")));
            continue;
        }
        plan.files.push(PlannedFile {
            path: path.clone(),
            action: FileAction::Restore,
            from_sha256: last.after_sha256.clone(),
            to_sha256: Some(before),
            to_size: Some(size),
        });
    }
    Ok(plan)
}

struct Write {
    turn_id: String,
    new_file: bool,
    before_sha256: Option<String>,
    before_size: Option<u64>,
    after_sha256: String,
}

/// What each planned file's bytes prove after Mino stopped during a rewind
/// (a `rewind` record without `rewind_end`): the content from before
/// (`restored`; absent for a removal: `removed`), what Mino wrote
/// (`not_restored`), or neither (`changed`, named). Reads, never writes.
pub fn recover(plan: &RewindPlan) -> Vec<FileOutcome> {
    plan.files
        .iter()
        .map(|file| {
            let now = crate::edit::file_now(&file.path);
            let (outcome, why) = match (&now, file.action) {
                (FileNow::Absent, FileAction::Remove) => (Outcome::Removed, None),
                (FileNow::Content { sha256, .. }, FileAction::Restore)
                    if file.to_sha256.as_deref() == Some(sha256.as_str()) =>
                {
                    (Outcome::Restored, None)
                }
                (FileNow::Content { sha256, .. }, _) if *sha256 == file.from_sha256 => (
                    Outcome::NotRestored,
                    Some("Mino stopped before putting it back: it still holds what Mino wrote".to_string()),
                ),
                (FileNow::Absent, FileAction::Restore) => {
                    (Outcome::Changed, Some("missing: deleted by something else".to_string()))
                }
                (FileNow::Content { .. }, _) => (
                    Outcome::Changed,
                    Some("holds neither the content from before nor what Mino wrote: changed by something else".into()),
                ),
                (FileNow::Unreadable(why), _) => (Outcome::Changed, Some(why.clone())),
            };
            FileOutcome { path: file.path.clone(), outcome, why }
        })
        .collect()
}

/// The runtime notice the model reads where a rewind happened: what was
/// undone, what could not be, and the commands whose effects remain.
pub fn notice(done: &RewindDone) -> String {
    let mut text = format!(
        "Mino runtime notice: the person rewound {} ({}): those turns are no longer part of this conversation.",
        if done.plan.turns.len() == 1 { "one turn" } else { "several turns" },
        done.plan.turns.join(", ")
    );
    let restored: Vec<&str> = done
        .outcomes
        .iter()
        .filter(|o| matches!(o.outcome, Outcome::Restored | Outcome::Removed))
        .map(|o| o.path.as_str())
        .collect();
    if restored.is_empty() {
        text.push_str(" No file was put back.");
    } else {
        text.push_str(&format!(" Files put back as they were before those turns: {}.", restored.join(", ")));
    }
    let mut not_undone: Vec<String> = done.plan.conflicts.iter().map(|c| format!("{} ({})", c.path, c.why)).collect();
    not_undone.extend(done.outcomes.iter().filter(|o| !matches!(o.outcome, Outcome::Restored | Outcome::Removed)).map(
        |o| {
            format!("{} ({}{})", o.path, o.outcome.as_str(), o.why.as_ref().map_or(String::new(), |w| format!(": {w}")))
        },
    ));
    if !not_undone.is_empty() {
        text.push_str(&format!(" Not undone, left as they are: {}.", not_undone.join("; ")));
    }
    if !done.plan.commands.is_empty() {
        let commands: Vec<&str> = done.plan.commands.iter().map(|c| c.command.as_str()).collect();
        text.push_str(&format!(
            " Commands ran in those turns and their effects were not undone: {}.",
            commands.join("; ")
        ));
    }
    text
}
