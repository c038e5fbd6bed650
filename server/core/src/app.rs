//! Building the application: configuration, model client, home, SOUL.md,
//! session, bash tool and agent, in one place. A transport calls [`open`]
//! once and then only maps its wire types to the [`Agent`]'s calls.
//!
//! [`OpenOptions`] carries what a client may choose (the workspace, a session
//! id, a new session); [`choose_session`] chooses through the
//! [`SessionStore`], which the app keeps so a client can list, switch,
//! rename and trash sessions later.

use std::path::{Path, PathBuf};

use crate::agent::{Agent, TurnLimits};
use crate::bash::BashTool;
use crate::config::{Config, ConfigError};
use crate::home::HomeError;
use crate::model::{ModelClient, ModelError};
use crate::recovery::RecoveryReport;
use crate::session::{Session, SessionError};
use crate::session_store::SessionStore;
use crate::{soul, MinoHome};

/// What the client chose when it opened Mino.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// The workspace commands run in; relative to the server's directory,
    /// which it is when `None`.
    pub cwd: Option<PathBuf>,
    /// A session to open by id.
    pub session: Option<String>,
    /// Start a new session instead of continuing one.
    pub new_session: bool,
    /// The executable each command's supervisor runs as (the server passes
    /// itself; see ARCHITECTURE.md, "Command supervision").
    pub supervisor: PathBuf,
    pub limits: TurnLimits,
    /// The approval mode to start in (`ask` when `None`).
    pub approval_mode: Option<crate::policy::ApprovalMode>,
    /// The sandbox mode to start in; `None` takes `MINO_SANDBOX`, else `off`.
    pub sandbox: Option<crate::sandbox::SandboxMode>,
}

/// An open application: the agent, its event stream, and what opening found.
pub struct App {
    pub agent: Agent,
    /// Every event of the agent, in `seq` order; taken once by the transport.
    pub events: crate::agent::Events,
    /// What recovery did when the session was opened.
    pub recovery: RecoveryReport,
    pub session_id: String,
    pub journal_path: PathBuf,
    pub cwd: PathBuf,
    /// The session's model, as requests name it: the one it chose, else the configured one.
    pub model: String,
    /// The models the configuration names (for `mino/models/list`).
    pub configured_models: Vec<crate::model::ListedModel>,
    /// The session's title (renamed, else its first question's first line).
    pub title: Option<String>,
    /// The sessions of this home as this process sees them; its current
    /// session is the agent's. Switch with [`Agent::switch`] and
    /// `SessionStore::open`/`new_session`.
    pub store: SessionStore,
    /// A sentence when Mino's home lies inside the workspace
    /// ([`crate::protect::home_in_workspace`]); logged at open too.
    pub home_in_workspace: Option<String>,
}

impl App {
    /// The approval and sandbox modes in force, and one line saying what
    /// the machine's sandbox enforces.
    pub fn settings(&self) -> (crate::policy::Settings, String) {
        self.agent.settings()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("initializationOptions.cwd {} is not a directory", path.display())]
    WorkspaceNotADirectory { path: PathBuf },
    #[error("initializationOptions.cwd {}: {source}", path.display())]
    Workspace { path: PathBuf, source: std::io::Error },
    #[error("cannot read the server's working directory: {0}")]
    WorkingDirectory(std::io::Error),
    /// A setting from the environment is invalid; the message names it.
    #[error("{0}")]
    Setting(ConfigError),
    /// A sandbox mode this machine cannot enforce (never run weaker).
    #[error("{0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("the model client could not be set up: {0}")]
    Model(#[from] ModelError),
    #[error("Mino's home directory is unusable: {0}")]
    Home(#[from] HomeError),
    #[error("{}: could not read the instructions: {source}", path.display())]
    Instructions { path: PathBuf, source: std::io::Error },
    #[error("The session could not be opened: {0}")]
    Session(#[from] SessionError),
}

impl From<ConfigError> for OpenError {
    fn from(e: ConfigError) -> Self {
        match e {
            ConfigError::Home(e) => OpenError::Home(e),
            e @ (ConfigError::CommandTimeout { .. }
            | ConfigError::Provider(_)
            | ConfigError::File { .. }
            | ConfigError::Sandbox { .. }
            | ConfigError::ContextWindow { .. }
            | ConfigError::CompactThreshold { .. }
            | ConfigError::RewindLimit { .. }) => OpenError::Setting(e),
        }
    }
}

/// Opens Mino with the configuration read from the environment.
pub fn open(options: OpenOptions) -> Result<App, OpenError> {
    // The workspace first: a wrong directory is the client's error, named
    // as such whatever else is wrong.
    let cwd = workspace(options.cwd.as_deref())?;
    open_with(Config::from_env()?, cwd, options)
}

/// Opens Mino in the workspace `cwd` (already resolved) with `config`.
/// Everything that can fail without touching the session comes first, so a
/// refused open writes nothing to it.
pub fn open_with(config: Config, cwd: PathBuf, options: OpenOptions) -> Result<App, OpenError> {
    // The sandbox before the session: a mode the machine cannot enforce is
    // refused before anything is written.
    let support = crate::sandbox::detect();
    let settings = crate::policy::Settings {
        approval_mode: options.approval_mode.unwrap_or_default(),
        sandbox: options.sandbox.or(config.sandbox).unwrap_or_default(),
    };
    support.check(settings.sandbox)?;
    tracing::info!(support = %crate::policy::support_line(&support), "command sandbox");
    let model = ModelClient::with_provider(config.provider, config.model)?;
    let home = config.home;
    home.ensure_root()?;
    let soul_path = home.soul_path();
    let instructions =
        soul::load_or_create(&soul_path).map_err(|source| OpenError::Instructions { path: soul_path, source })?;
    let (store, session, recovery) = choose_session(&home, &cwd, &options, config.rewind_limits)?;
    let title = store.title(&session);
    let session_id = session.id().to_string();
    let journal_path = session.path().to_path_buf();
    // A session's commands run where it was created, whichever directory opened it.
    let cwd = PathBuf::from(session.cwd());
    let bash =
        BashTool::new(cwd.clone(), config.command_limits, options.supervisor).with_home(home.root().to_path_buf());
    let policy = crate::policy::Policy::open(&home, &cwd, support, settings)?;
    let (agent, events) = Agent::with_policy(session, model, bash, instructions, options.limits, policy);
    agent.set_compaction(config.compaction);
    agent.fetch_context_window();
    agent.start_mcp(config.mcp_servers);
    let model = agent.model_client().config().model.clone();
    let configured_models = config.configured_models;
    let home_in_workspace = crate::protect::home_in_workspace(&cwd, home.root());
    if let Some(warning) = &home_in_workspace {
        tracing::warn!("{warning}");
    }
    Ok(App {
        agent,
        events,
        recovery,
        session_id,
        journal_path,
        cwd,
        model,
        configured_models,
        title,
        store,
        home_in_workspace,
    })
}

/// The named session (from anywhere), else a new one when asked, else the
/// most recently active session of the workspace `cwd` that no other
/// process holds, else a new one ([`SessionStore::start`]).
fn choose_session(
    home: &MinoHome,
    cwd: &Path,
    options: &OpenOptions,
    rewind_limits: crate::blobs::Limits,
) -> Result<(SessionStore, Session, RecoveryReport), SessionError> {
    let mut store = SessionStore::new(home.clone(), cwd)?;
    store.set_blob_limits(rewind_limits);
    let (session, recovery) = store.start(options.session.as_deref(), options.new_session)?;
    Ok((store, session, recovery))
}

/// The workspace directory: `requested` against the server's directory.
fn workspace(requested: Option<&Path>) -> Result<PathBuf, OpenError> {
    let here = std::env::current_dir().map_err(OpenError::WorkingDirectory)?;
    let dir = match requested {
        None => here,
        Some(dir) => here.join(dir),
    };
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(OpenError::WorkspaceNotADirectory { path: dir }),
        Err(source) => Err(OpenError::Workspace { path: dir, source }),
    }
}
