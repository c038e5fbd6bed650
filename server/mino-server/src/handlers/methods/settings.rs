//! What a session runs with: approval rules, settings, models and MCP
//! servers.

use mino_core::model::ModelSource;
use mino_protocol as wire;
use tower_lsp_server::jsonrpc::Result;

use crate::handlers::convert::{
    approval_mode, core_approval_mode, core_sandbox_mode, mcp_status, rule_view, sandbox_mode,
};
use crate::handlers::errors::{agent_error, invalid_params};
use crate::handlers::state::{lock, Backend};

impl Backend {
    pub(crate) async fn rules_list(self, _: wire::RulesListParams) -> Result<wire::RulesListResult> {
        let rules = self.agent()?.rules();
        Ok(wire::RulesListResult {
            rules: rules.rules.iter().map(rule_view).collect(),
            workspace_file: rules.workspace_file.map(|p| p.display().to_string()).unwrap_or_default(),
            workspace_file_error: rules.workspace_file_error,
        })
    }

    pub(crate) async fn rules_revoke(self, params: wire::RulesRevokeParams) -> Result<wire::EmptyResult> {
        self.agent()?.revoke_rule(&params.id).await.map_err(agent_error)?;
        Ok(wire::EmptyResult {})
    }

    pub(crate) async fn settings_update(self, params: wire::SettingsUpdateParams) -> Result<wire::SettingsResult> {
        let agent = self.agent()?;
        let settings = agent
            .update_settings(params.approval_mode.map(core_approval_mode), params.sandbox.map(core_sandbox_mode))
            .map_err(|e| agent_error(e.into()))?;
        let (_, support) = agent.settings();
        Ok(wire::SettingsResult {
            approval_mode: approval_mode(settings.approval_mode),
            sandbox: sandbox_mode(settings.sandbox),
            sandbox_support: support,
        })
    }

    pub(crate) async fn models_list(self, _: wire::ModelsListParams) -> Result<wire::ModelsListResult> {
        let agent = self.agent()?;
        let configured = lock(&self.shared.opened).as_ref().map(|o| o.configured_models.clone()).unwrap_or_default();
        let list = agent.models(&configured).await;
        Ok(wire::ModelsListResult {
            models: list
                .models
                .into_iter()
                .map(|m| wire::ModelEntry { id: m.id, context_window: m.context_window })
                .collect(),
            current: list.current,
            source: match list.source {
                ModelSource::Service => wire::ModelSource::Service,
                ModelSource::Config => wire::ModelSource::Config,
            },
        })
    }

    pub(crate) async fn mcp_list(self, _: wire::McpListParams) -> Result<wire::McpListResult> {
        let agent = self.agent()?;
        Ok(wire::McpListResult { servers: agent.mcp().statuses().into_iter().map(mcp_status).collect() })
    }

    pub(crate) async fn mcp_restart(self, params: wire::McpRestartParams) -> Result<wire::McpServerStatus> {
        let agent = self.agent()?;
        let mcp = agent.mcp().clone();
        mcp.restart(&params.server).await.map_err(invalid_params)?;
        let status = mcp.statuses().into_iter().find(|s| s.server == params.server);
        status.map(mcp_status).ok_or_else(|| invalid_params(format!("no MCP server `{}`", params.server)))
    }

    pub(crate) async fn models_select(self, params: wire::ModelsSelectParams) -> Result<wire::ModelsSelectResult> {
        let model = self.agent()?.select_model(&params.model).await.map_err(agent_error)?;
        Ok(wire::ModelsSelectResult { model })
    }
}
