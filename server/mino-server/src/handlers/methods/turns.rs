//! The conversation: `mino/chat`, `mino/approval`, `mino/acknowledge`,
//! `mino/cancel`, `mino/history`, `mino/image` and `mino/compact`.

use std::path::PathBuf;

use mino_protocol as wire;
use serde_json::json;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};

use crate::handlers::convert::{chat_images, compact_result, decision, history_turn, instruction_files, token_usage};
use crate::handlers::errors::{agent_error, error, internal, invalid_params};
use crate::handlers::state::Backend;

impl Backend {
    pub(crate) async fn chat(self, params: wire::ChatParams) -> Result<wire::ChatResult> {
        let agent = self.agent()?;
        let turn_id = if params.images.is_empty() {
            agent.chat(&params.text).await
        } else {
            let cwd = PathBuf::from(agent.with_session(|s| s.cwd().to_string()));
            let images = tokio::task::spawn_blocking(move || chat_images(params.images, &cwd))
                .await
                .map_err(|e| internal(format!("reading the question's images failed: {e}")))?
                .map_err(|e| invalid_params(e.to_string()))?;
            agent.chat_with_images(&params.text, images).await
        }
        .map_err(agent_error)?;
        Ok(wire::ChatResult { turn_id })
    }

    /// The bytes of an image a question of the current session carried.
    pub(crate) async fn image(self, params: wire::ImageParams) -> Result<wire::ImageResult> {
        let agent = self.agent()?;
        let found = agent.with_session(|s| {
            let image = s.transcript().turns.iter().flat_map(|t| &t.images).find(|i| i.sha256 == params.sha256)?;
            Some((image.clone(), s.transcript().images_dir.clone()?))
        });
        let Some((image, dir)) = found else {
            return Err(invalid_params(format!(
                "sha256 {:?} names no image of this session; use a sha256 from mino/history",
                params.sha256
            )));
        };
        let bytes = tokio::task::spawn_blocking(move || {
            mino_core::images::read_checked(&mino_core::images::path_in(&dir, &image), &image)
                .map(|bytes| (image.mime_type, bytes))
        })
        .await
        .map_err(|e| internal(format!("reading the image failed: {e}")))?;
        match bytes {
            Ok((mime_type, bytes)) => Ok(wire::ImageResult { mime_type, data: mino_core::images::base64(&bytes) }),
            Err(why) => Err(error(wire::error_code::JOURNAL_FAILURE, format!("The image cannot be read: {why}"))),
        }
    }

    pub(crate) async fn approval(self, params: wire::ApprovalParams) -> Result<wire::EmptyResult> {
        let agent = self.agent()?;
        let decision = decision(&params)?;
        agent.decide(&params.turn_id, &params.call_id, decision).map_err(agent_error)?;
        Ok(wire::EmptyResult {})
    }

    /// Waits for the summary to be saved (or for the reason it was not).
    pub(crate) async fn compact(self, _: wire::CompactParams) -> Result<wire::CompactResult> {
        let outcome = self.agent()?.compact().await.map_err(agent_error)?;
        Ok(compact_result(outcome))
    }

    pub(crate) async fn acknowledge(self, params: wire::AcknowledgeParams) -> Result<wire::AcknowledgeResult> {
        let acknowledged = self.agent()?.acknowledge(params.turn_ids).await.map_err(agent_error)?;
        Ok(wire::AcknowledgeResult { acknowledged })
    }

    pub(crate) async fn cancel(self, params: wire::CancelParams) -> Result<wire::EmptyResult> {
        self.agent()?.cancel(&params.turn_id).map_err(agent_error)?;
        Ok(wire::EmptyResult {})
    }

    /// The session's turns, or a page of them (see `wire::HistoryParams`):
    /// a client need never hold a whole long session at once.
    pub(crate) async fn history(self, params: wire::HistoryParams) -> Result<wire::HistoryResult> {
        let agent = self.agent()?;
        let instruction_files = instruction_files(&agent.project_instructions());
        agent.with_session(|s| {
            let turns = &s.transcript().turns;
            let end = match params.before_turn_id.as_deref() {
                None => turns.len(),
                Some(id) => turns.iter().position(|t| t.id == id).ok_or_else(|| Error {
                    code: ErrorCode::InvalidParams,
                    message: format!(
                        "beforeTurnId {id:?} names no turn of this session; use a turnId from an earlier mino/history result"
                    )
                    .into(),
                    data: Some(json!({ "beforeTurnId": id })),
                })?,
            };
            let start = match params.limit {
                None => 0,
                Some(limit) => end.saturating_sub(usize::try_from(limit).unwrap_or(usize::MAX)),
            };
            Ok(wire::HistoryResult {
                session_id: s.id().to_string(),
                turns: turns[start..end].iter().map(|t| history_turn(s, t)).collect(),
                has_more: start > 0,
                usage: s.transcript().usage.map(token_usage),
                instruction_files,
            })
        })
    }
}
