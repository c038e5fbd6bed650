//! Building the application: configuration, model client, home, SOUL.md,
//! session, bash tool and agent, in one place. A transport calls [`open`]
//! once and then only maps its wire types to the [`Agent`]'s calls.
//!
//! [`OpenOptions`] carries what a client may choose (the workspace, a session
//! id, a new session), so that choosing a session per workspace later changes
//! only [`choose_session`].

use std::path::{Path, PathBuf};

use crate::agent::{Agent, Numbered, TurnLimits};
use crate::bash::BashTool;
use crate::config::{Config, ConfigError};
use crate::home::HomeError;
use crate::model::{ModelClient, ModelError};
use crate::recovery::RecoveryReport;
use crate::session::{Session, SessionError};
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
}

/// An open application: the agent, its event stream, and what opening found.
pub struct App {
    pub agent: Agent,
    /// Every event of the agent, in `seq` order; taken once by the transport.
    pub events: tokio::sync::mpsc::UnboundedReceiver<Numbered>,
    /// What recovery did when the session was opened.
    pub recovery: RecoveryReport,
    pub session_id: String,
    pub journal_path: PathBuf,
    pub cwd: PathBuf,
    /// The model's name, as requests name it.
    pub model: String,
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
            e @ (ConfigError::CommandTimeout { .. } | ConfigError::Provider(_) | ConfigError::File { .. }) => {
                OpenError::Setting(e)
            }
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
    let model = ModelClient::with_provider(config.provider, config.model)?;
    let model_name = model.config().model.clone();
    let home = config.home;
    home.ensure_root()?;
    let soul_path = home.soul_path();
    let instructions =
        soul::load_or_create(&soul_path).map_err(|source| OpenError::Instructions { path: soul_path, source })?;
    let (session, recovery) = choose_session(&home, &cwd, &options)?;
    let session_id = session.id().to_string();
    let journal_path = session.path().to_path_buf();
    // A session's commands run where it was created, whichever directory opened it.
    let cwd = PathBuf::from(session.cwd());
    let bash = BashTool::new(cwd.clone(), config.command_limits, options.supervisor);
    let (agent, events) = Agent::new(session, model, bash, instructions, options.limits);
    Ok(App { agent, events, recovery, session_id, journal_path, cwd, model: model_name })
}

/// Today's choice: a new session when asked, else the named one, else the
/// most recent one, else a new one.
fn choose_session(
    home: &MinoHome,
    cwd: &Path,
    options: &OpenOptions,
) -> Result<(Session, RecoveryReport), SessionError> {
    if options.new_session {
        Session::create(home, cwd).map(|s| (s, RecoveryReport::default()))
    } else {
        Session::open_or_create(home, options.session.as_deref(), cwd)
    }
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
