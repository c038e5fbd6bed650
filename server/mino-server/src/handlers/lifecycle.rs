//! The LSP lifecycle: `initialize` opens the session, `initialized` starts
//! its notifications, `shutdown` stops the running turn. (`exit` is the
//! transport's, which stops the turn first; see `crate::dispatch::Schedule`.)

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mino_core::agent::TurnLimits;
use mino_core::{App, OpenOptions};
use mino_protocol as wire;
use serde_json::{json, Value};
use tower_lsp_server::gen_lsp_types::{
    InitializeParams, InitializeResult, InitializedParams, ServerCapabilities, ServerInfo,
};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::LanguageServer;

use super::convert::{
    approval_mode, core_approval_mode, core_sandbox_mode, instruction_files, recovery_notification, sandbox_mode,
};
use super::errors::{internal, invalid_params, open_error};
use super::state::{lock, Backend, Opened};
use crate::dispatch::Session as _;

pub const SERVER_NAME: &str = "mino-server";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let options: wire::InitializationOptions = match params.initialization_options {
            None | Some(Value::Null) => wire::InitializationOptions::default(),
            Some(value) => serde_json::from_value(value)
                .map_err(|e| invalid_params(format!("invalid initializationOptions: {e}")))?,
        };
        if lock(&self.shared.opened).is_some() {
            return Err(Error::invalid_request());
        }
        // Each command runs under this very binary in supervise mode.
        let supervisor = std::env::current_exe()
            .map_err(|e| internal(format!("cannot find the server's own executable to supervise commands: {e}")))?;
        let app = mino_core::open(OpenOptions {
            cwd: options.cwd.map(PathBuf::from),
            session: options.session,
            new_session: options.new_session,
            supervisor,
            limits: TurnLimits::default(),
            approval_mode: options.approval_mode.map(core_approval_mode),
            sandbox: options.sandbox.map(core_sandbox_mode),
        })
        .map_err(open_error)?;
        let (settings, sandbox_support) = app.settings();
        let instruction_files = instruction_files(&app.agent.project_instructions());
        let App {
            agent,
            events,
            recovery,
            session_id,
            journal_path,
            cwd,
            model: model_name,
            configured_models,
            title,
            store,
            home_in_workspace,
        } = app;
        let journal_path = journal_path.display().to_string();
        let recovery = recovery_notification(&session_id, &recovery);
        tracing::info!(session_id, journal_path, cwd = %cwd.display(), model = model_name, "session open");
        {
            let mut opened = lock(&self.shared.opened);
            if opened.is_some() {
                // A concurrent initialize won; this one's session is dropped (and unlocked).
                return Err(Error::invalid_request());
            }
            *opened = Some(Opened {
                agent,
                store: Arc::new(Mutex::new(store)),
                configured_models,
                stream: Some((recovery, events)),
            });
        }

        let mino = wire::ServerCapabilities {
            session_id,
            journal_path,
            cwd: cwd.display().to_string(),
            model: model_name,
            title,
            approval_mode: approval_mode(settings.approval_mode),
            sandbox: sandbox_mode(settings.sandbox),
            sandbox_support,
            home_in_workspace,
            instruction_files,
        };
        let mino = serde_json::to_value(mino).map_err(|e| internal(e.to_string()))?;
        Ok(InitializeResult {
            capabilities: ServerCapabilities { experimental: Some(json!({ "mino": mino })), ..Default::default() },
            server_info: Some(ServerInfo { name: SERVER_NAME.to_string(), version: Some(VERSION.to_string()) }),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        self.start_streaming();
    }

    async fn shutdown(&self) -> Result<()> {
        self.handle().shutdown().await;
        Ok(())
    }
}
