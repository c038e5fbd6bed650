//! The agent's part of a rewind: the plan, and carrying out the plan the
//! person confirmed, file by file, between its two synced records.

use super::*;

/// What a rewind did: its plan and each planned file's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindOutcome {
    pub turn_id: String,
    pub plan: crate::rewind::RewindPlan,
    pub outcomes: Vec<crate::rewind::FileOutcome>,
}

/// Puts one planned file back (or removes it), and says what became of it.
pub(super) fn restore_one(
    workspace: &Workspace,
    session: &Session,
    file: &crate::rewind::PlannedFile,
) -> crate::rewind::FileOutcome {
    use crate::rewind::{FileAction, FileOutcome, Outcome};
    let outcome = |outcome, why: Option<String>| FileOutcome { path: file.path.clone(), outcome, why };
    let content = match (&file.action, &file.to_sha256) {
        (FileAction::Remove, _) => None,
        (FileAction::Restore, Some(sha256)) => {
            match crate::blobs::read_checked(&crate::blobs::dir_for(session.path()), sha256) {
                Ok(bytes) => Some(bytes),
                Err(e) => return outcome(Outcome::NotRestored, Some(format!("before-content not kept: {e}"))),
            }
        }
        (FileAction::Restore, None) => {
            return outcome(Outcome::NotRestored, Some("the plan names no content to put back".into()))
        }
    };
    match edit::restore(workspace, Path::new(&file.path), &file.from_sha256, content.as_deref()) {
        Ok(()) if content.is_none() => outcome(Outcome::Removed, None),
        Ok(()) => outcome(Outcome::Restored, None),
        Err(edit::RestoreError::Changed(why)) => outcome(Outcome::Conflict, Some(why)),
        Err(e) => outcome(Outcome::NotRestored, Some(e.to_string())),
    }
}

impl Agent {
    /// The plan for rewinding `turn_id` and every later turn, with the
    /// digest that [`Agent::rewind`] must be given to carry it out. Writes
    /// nothing.
    pub async fn rewind_plan(&self, turn_id: &str) -> Result<(crate::rewind::RewindPlan, String), AgentError> {
        let turn_id = turn_id.to_string();
        let plan = self.with_session_io(move |s| s.rewind_plan(&turn_id)).await?;
        let digest = crate::rewind::digest(&plan);
        Ok((plan, digest))
    }

    /// Carries out the rewind of `turn_id` the person confirmed: refused
    /// ([`AgentError::StalePlan`]) unless the plan made now has `digest`.
    /// No turn may start meanwhile. The plan is recorded (`rewind`, synced)
    /// before the first file is touched; each file is put back atomically
    /// beneath the workspace ([`edit::restore`]), re-checked against what
    /// Mino wrote just before the write (a file changed since the plan is a
    /// conflict, left as it is); then `rewind_end`, synced, records each
    /// outcome. See docs/journal.md ("Rewind").
    pub async fn rewind(&self, turn_id: &str, digest: &str) -> Result<RewindOutcome, AgentError> {
        let _claim = self.claim_between_turns()?;
        let (turn_id, digest) = (turn_id.to_string(), digest.to_string());
        let outcome = self
            .with_session_io(move |s| -> Result<RewindOutcome, AgentError> {
                let plan = s.rewind_plan(&turn_id)?;
                if crate::rewind::digest(&plan) != digest {
                    return Err(AgentError::StalePlan);
                }
                let workspace = Workspace::new(Path::new(s.cwd())).map_err(|e| {
                    SessionError::Usage(format!(
                        "the session's directory {} cannot be opened ({e}); nothing was written",
                        s.cwd()
                    ))
                })?;
                fail::fail_point!("rewind::before_plan_record");
                s.record_rewind(&turn_id, &digest, plan.clone())?;
                fail::fail_point!("rewind::after_plan_record");
                let mut outcomes = Vec::with_capacity(plan.files.len());
                for (index, file) in plan.files.iter().enumerate() {
                    if index > 0 {
                        fail::fail_point!("rewind::between_files");
                    }
                    outcomes.push(restore_one(&workspace, s, file));
                }
                fail::fail_point!("rewind::before_end_record");
                s.record_rewind_end(&turn_id, outcomes.clone(), false)?;
                Ok(RewindOutcome { turn_id, plan, outcomes })
            })
            .await?;
        tracing::info!(turn_id = %outcome.turn_id, files = outcome.outcomes.len(), "rewound");
        Ok(outcome)
    }
}
