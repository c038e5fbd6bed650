//! `mino/sessions/*`: listing, starting, opening, renaming and deleting
//! the sessions of the home, through the store `initialize` opened.

use mino_core::recovery::RecoveryReport;
use mino_core::{ListScope, Session, SessionStore, StoreError};
use mino_protocol as wire;
use tower_lsp_server::jsonrpc::Result;

use crate::handlers::convert::{session_entry, session_info};
use crate::handlers::errors::{agent_error, invalid_params, store_error};
use crate::handlers::state::{lock, Backend};

/// `mino/sessions/list`'s page size when none is asked for, and the largest.
const DEFAULT_LIST_LIMIT: u64 = 50;
const MAX_LIST_LIMIT: u64 = 500;

impl Backend {
    /// Makes another session current through `open` (the store's `open` or
    /// `new_session`); the agent then sends its `mino/recovery`.
    async fn switch(
        &self,
        open: impl FnOnce(
                &mut SessionStore,
                &mut Session,
            ) -> std::result::Result<(mino_core::SessionInfo, RecoveryReport), StoreError>
            + Send
            + 'static,
    ) -> Result<wire::SessionInfo> {
        let agent = self.agent()?;
        let store = self.store()?;
        let info = agent
            .switch(move |session| open(&mut lock(&store), session))
            .await
            .map_err(agent_error)?
            .map_err(store_error)?;
        tracing::info!(session_id = info.session_id, journal_path = %info.journal_path.display(), cwd = info.cwd, "session switched");
        Ok(session_info(info))
    }

    pub(crate) async fn sessions_list(self, params: wire::SessionsListParams) -> Result<wire::SessionsListResult> {
        let limit = match params.limit {
            None => DEFAULT_LIST_LIMIT,
            Some(n @ 1..=MAX_LIST_LIMIT) => n,
            Some(n) => return Err(invalid_params(format!("limit must be 1 to {MAX_LIST_LIMIT}; it was {n}"))),
        };
        let scope = match params.scope.unwrap_or(wire::ListScope::Workspace) {
            wire::ListScope::Workspace => ListScope::Workspace,
            wire::ListScope::All => ListScope::All,
        };
        let page = self.with_store(move |store| store.list(scope, limit as usize, params.cursor.as_deref())).await?;
        Ok(wire::SessionsListResult {
            sessions: page.sessions.into_iter().map(session_entry).collect(),
            next_cursor: page.next_cursor,
        })
    }

    pub(crate) async fn sessions_new(self, params: wire::SessionsNewParams) -> Result<wire::SessionInfo> {
        self.switch(move |store, session| {
            // Relative to the workspace, as the client sees it.
            let cwd = params.cwd.map(|dir| store.workspace().join(dir));
            store.new_session(session, cwd.as_deref())
        })
        .await
    }

    pub(crate) async fn sessions_open(self, params: wire::SessionsOpenParams) -> Result<wire::SessionInfo> {
        self.switch(move |store, session| store.open(session, &params.session_id)).await
    }

    pub(crate) async fn sessions_rename(self, params: wire::SessionsRenameParams) -> Result<wire::EmptyResult> {
        self.with_store(move |store| store.rename(&params.session_id, &params.title)).await?;
        Ok(wire::EmptyResult {})
    }

    pub(crate) async fn sessions_delete(
        self,
        params: wire::SessionsDeleteParams,
    ) -> Result<wire::SessionsDeleteResult> {
        let trashed = self.with_store(move |store| store.delete(&params.session_id)).await?;
        Ok(wire::SessionsDeleteResult { trashed_to: trashed.display().to_string() })
    }
}
