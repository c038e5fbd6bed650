//! `mino/rewind/plan` and `mino/rewind`: what rewinding would put back,
//! and doing it.

use mino_protocol as wire;
use tower_lsp_server::jsonrpc::Result;

use crate::handlers::convert::{rewind_command, rewind_conflict, rewind_file_outcome};
use crate::handlers::errors::agent_error;
use crate::handlers::state::Backend;

impl Backend {
    pub(crate) async fn rewind_plan(self, params: wire::RewindPlanParams) -> Result<wire::RewindPlanResult> {
        let (plan, digest) = self.agent()?.rewind_plan(&params.turn_id).await.map_err(agent_error)?;
        Ok(wire::RewindPlanResult {
            turn_id: params.turn_id,
            turns: plan.turns.clone(),
            files: plan
                .files
                .iter()
                .map(|f| wire::RewindFile {
                    path: f.path.clone(),
                    action: match f.action {
                        mino_core::rewind::FileAction::Restore => wire::RewindAction::Restore,
                        mino_core::rewind::FileAction::Remove => wire::RewindAction::Remove,
                    },
                })
                .collect(),
            conflicts: plan.conflicts.iter().map(rewind_conflict).collect(),
            commands: plan.commands.iter().map(rewind_command).collect(),
            digest,
        })
    }

    pub(crate) async fn rewind(self, params: wire::RewindParams) -> Result<wire::RewindResult> {
        let done = self.agent()?.rewind(&params.turn_id, &params.digest).await.map_err(agent_error)?;
        Ok(wire::RewindResult {
            turn_id: done.turn_id,
            turns: done.plan.turns.clone(),
            files: done.outcomes.iter().map(rewind_file_outcome).collect(),
            conflicts: done.plan.conflicts.iter().map(rewind_conflict).collect(),
            commands: done.plan.commands.iter().map(rewind_command).collect(),
        })
    }
}
