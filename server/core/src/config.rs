//! Mino's configuration, read in this one place: the environment variables
//! of [`crate::settings::SETTINGS`] (`MINO_HOME`, else `$HOME/.mino`) over
//! the file `$MINO_HOME/config.toml` over the defaults. Nothing else in the
//! core reads these settings, so what a server runs with is decided once,
//! when it opens (see [`crate::app::open`]). A file with an error stops the
//! start with its path and line: Mino never runs half-configured.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bash;
use crate::home::{HomeError, MinoHome};
use crate::model::{ListedModel, ModelConfig, Provider};
use crate::settings;

/// The environment variable that sets a command's time limit in seconds.
pub const COMMAND_TIMEOUT_ENV: &str = settings::COMMAND_TIMEOUT.env;

/// The environment variable that sets the sandbox mode sessions start in
/// (`off`, `read-only`, `workspace-write`); `initializationOptions.sandbox`
/// overrides it.
pub const SANDBOX_ENV: &str = settings::SANDBOX.env;

/// The environment variable that sets the model's context window in tokens
/// (over `[models."<model>"] context_window` in the file, and over the
/// window the model service reports).
pub const CONTEXT_WINDOW_ENV: &str = settings::CONTEXT_WINDOW.env;

/// The environment variable that sets the automatic compaction threshold: the
/// fraction of the context window (over 0, at most 1) that the last
/// request's input tokens must reach.
pub const COMPACT_THRESHOLD_ENV: &str = settings::COMPACT_THRESHOLD.env;

/// The context window assumed for a model neither the configuration nor
/// the model service's list gives one for, in tokens. Conservative: most
/// hosted models have at least this; a smaller local model whose server
/// does not list its window needs its own `context_window`, and a model
/// that refuses a request as too long is compacted then anyway
/// (`context_length_exceeded`).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The default automatic compaction threshold: 80 % of the context window.
pub const DEFAULT_COMPACT_THRESHOLD: f64 = 0.8;

/// When a conversation is compacted automatically (docs/journal.md, "Compaction").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionSettings {
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// The fraction of it (over 0, at most 1) the last request's input
    /// tokens must reach for the next turn to compact first.
    pub threshold: f64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings { context_window: DEFAULT_CONTEXT_WINDOW, threshold: DEFAULT_COMPACT_THRESHOLD }
    }
}

impl CompactionSettings {
    /// The input tokens at which the next turn compacts first.
    pub fn threshold_tokens(&self) -> f64 {
        self.context_window as f64 * self.threshold
    }
}

/// Everything the environment decides.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: MinoHome,
    pub model: ModelConfig,
    /// The wire the model service speaks (`MINO_PROVIDER`; default `responses`).
    pub provider: Provider,
    /// The defaults, with the timeout from [`COMMAND_TIMEOUT_ENV`] when set.
    pub command_limits: bash::Limits,
    /// The sandbox mode from [`SANDBOX_ENV`], when set.
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    /// Every model's context window and automatic compaction threshold.
    pub compaction: CompactionTable,
    /// The models the configuration names, offered when the service has no
    /// list (`mino/models/list`): the configured model, then the file's
    /// `[models."<name>"]` tables in name order.
    pub configured_models: Vec<ListedModel>,
    /// The file's enabled `[mcp_servers.NAME]` tables, in name order.
    pub mcp_servers: Vec<crate::mcp::McpServerConfig>,
    /// The bounds of each session's store of before-content, from
    /// `MINO_REWIND_FILE_LIMIT_BYTES` / `MINO_REWIND_SESSION_LIMIT_BYTES`.
    pub rewind_limits: crate::blobs::Limits,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error("{COMMAND_TIMEOUT_ENV}={value:?} is not a whole number of seconds (at least 1)")]
    CommandTimeout { value: String },
    /// `MINO_PROVIDER` names no provider; the message lists the valid names.
    #[error("{0}")]
    Provider(String),
    /// `$MINO_HOME/config.toml` cannot be read or has an error.
    #[error("{}{}: {message}; fix or remove the file (its keys: {})", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default(), settings::file_keys().collect::<Vec<_>>().join(", "))]
    File { path: PathBuf, line: Option<usize>, message: String },
    #[error("{SANDBOX_ENV}={value:?} is not a sandbox mode: use off, read-only or workspace-write")]
    Sandbox { value: String },
    #[error("{name}={value:?} is not a whole number of bytes (at least 1), e.g. 2097152 for 2 MiB")]
    RewindLimit { name: &'static str, value: String },
    #[error("{CONTEXT_WINDOW_ENV}={value:?} is not a whole number of tokens (at least 1)")]
    ContextWindow { value: String },
    #[error("{COMPACT_THRESHOLD_ENV}={value:?} is not a fraction of the context window: use a number over 0 and at most 1, e.g. 0.8")]
    CompactThreshold { value: String },
}

/// The name of the configuration file in `$MINO_HOME`.
pub const CONFIG_FILE: &str = "config.toml";

/// What `$MINO_HOME/config.toml` may set; the environment overrides each.
/// An unknown key is an error, so a misspelt setting is never silently
/// ignored. The API key is not among them: it stays in the environment.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    provider: Option<String>,
    base_url: Option<String>,
    model: Option<String>,
    command_timeout_secs: Option<toml::Spanned<i64>>,
    /// The fraction of the context window that triggers compaction, for
    /// every model (a model's own entry wins).
    compact_threshold: Option<toml::Spanned<f64>>,
    /// Per model name: `[models."gpt-5.1"] context_window = 400000`.
    #[serde(default)]
    models: std::collections::BTreeMap<String, ModelFileSettings>,
    /// `[mcp_servers.NAME]`: the MCP servers every session starts
    /// ([`crate::mcp::config`]).
    #[serde(default)]
    mcp_servers: std::collections::BTreeMap<String, crate::mcp::config::McpServerFile>,
}

/// One `[models."<name>"]` table.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFileSettings {
    context_window: Option<toml::Spanned<i64>>,
    compact_threshold: Option<toml::Spanned<f64>>,
}

/// The most of config.toml Mino reads: 1 MiB (a settings file is a few
/// hundred bytes).
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

fn valid_threshold(value: f64) -> bool {
    value > 0.0 && value <= 1.0
}

impl ConfigFile {
    /// The file's settings; a missing file sets nothing.
    fn read(path: &Path) -> Result<ConfigFile, ConfigError> {
        // Non-blocking, regular files only, bounded: a FIFO or `/dev/zero`
        // under the name must not hang or exhaust start-up.
        let text = match crate::files::read_capped_to_string(path, MAX_CONFIG_BYTES) {
            Ok(text) => text,
            // No file, or a home that is no directory (which opening the
            // home reports, naming what to do): nothing is set by a file.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                return Ok(ConfigFile::default())
            }
            Err(e) => return Err(ConfigError::File { path: path.to_path_buf(), line: None, message: e.to_string() }),
        };
        let file_error = |span: Option<std::ops::Range<usize>>, message: String| ConfigError::File {
            path: path.to_path_buf(),
            line: span.map(|span| line_of(&text, span.start)),
            message,
        };
        let file: ConfigFile = toml::from_str(&text).map_err(|e| {
            // Name the setting the line holds: toml's type errors do not.
            let key = e.span().and_then(|span| {
                let line = text.get(..span.start.min(text.len()))?.rsplit('\n').next()?.to_string()
                    + text.get(span.start.min(text.len())..)?.split('\n').next()?;
                line.split_once('=').map(|(key, _)| key.trim().to_string()).filter(|k| !k.is_empty())
            });
            let message = e.message().trim();
            file_error(e.span(), key.map(|k| format!("{k}: {message}")).unwrap_or_else(|| message.to_string()))
        })?;
        if let Some(timeout) = &file.command_timeout_secs {
            if *timeout.get_ref() < 1 {
                return Err(file_error(
                    Some(timeout.span()),
                    "command_timeout_secs must be a whole number of seconds, at least 1".into(),
                ));
            }
        }
        let thresholds =
            file.compact_threshold.iter().chain(file.models.values().filter_map(|m| m.compact_threshold.as_ref()));
        for threshold in thresholds {
            if !valid_threshold(*threshold.get_ref()) {
                return Err(file_error(
                    Some(threshold.span()),
                    "compact_threshold must be a fraction of the context window, over 0 and at most 1 (e.g. 0.8)"
                        .into(),
                ));
            }
        }
        for window in file.models.values().filter_map(|m| m.context_window.as_ref()) {
            if *window.get_ref() < 1 {
                return Err(file_error(
                    Some(window.span()),
                    "context_window must be a whole number of tokens, at least 1".into(),
                ));
            }
        }
        if let Some(provider) = &file.provider {
            Provider::from_setting(Some(provider)).map_err(|e| {
                let line = text.lines().position(|l| l.trim_start().starts_with("provider")).map(|i| i + 1);
                ConfigError::File {
                    path: path.to_path_buf(),
                    line,
                    message: e.to_string().replace("MINO_PROVIDER", "provider"),
                }
            })?;
        }
        Ok(file)
    }
}

/// A model's own `[models."<name>"]` settings, as the file gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ModelCompaction {
    context_window: Option<u64>,
    threshold: Option<f64>,
}

/// Where the context window used for a model's compaction came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// [`CONTEXT_WINDOW_ENV`].
    Environment,
    /// The model's `[models."<name>"] context_window` in the file.
    ConfigFile,
    /// The model service's `GET /models` entry for the model.
    Service,
    /// [`DEFAULT_CONTEXT_WINDOW`].
    Default,
}

impl WindowSource {
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::Environment => CONTEXT_WINDOW_ENV,
            WindowSource::ConfigFile => "config.toml",
            WindowSource::Service => "the model service",
            WindowSource::Default => "the default",
        }
    }
}

/// The compaction settings of every model, resolved for the model a session
/// uses at each check (a session may switch models: `mino/models/select`).
/// For each setting the environment wins (it applies to every model), then
/// the model's `[models."<name>"]` table, then (window) what the model
/// service reports for the model, then (threshold) the file's top level,
/// then the defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactionTable {
    models: std::collections::BTreeMap<String, ModelCompaction>,
    file_threshold: Option<f64>,
    env_window: Option<u64>,
    env_threshold: Option<f64>,
}

impl CompactionTable {
    /// `model`'s context window and threshold, without a window from the service.
    pub fn for_model(&self, model: &str) -> CompactionSettings {
        self.resolve(model, None).0
    }

    /// The window the environment or the file sets for `model`, if either
    /// does: then what the service reports is not needed.
    pub fn configured_window(&self, model: &str) -> Option<(u64, WindowSource)> {
        let file = self.models.get(model).and_then(|m| m.context_window);
        self.env_window.map(|w| (w, WindowSource::Environment)).or(file.map(|w| (w, WindowSource::ConfigFile)))
    }

    /// `model`'s context window and threshold, with `reported` (the window
    /// the service reports for it) used when neither the environment nor
    /// the file sets one; and where the window came from.
    pub fn resolve(&self, model: &str, reported: Option<u64>) -> (CompactionSettings, WindowSource) {
        let entry = self.models.get(model).copied().unwrap_or_default();
        let defaults = CompactionSettings::default();
        let (context_window, source) = self
            .configured_window(model)
            .or(reported.filter(|w| *w > 0).map(|w| (w, WindowSource::Service)))
            .unwrap_or((defaults.context_window, WindowSource::Default));
        let threshold = self.env_threshold.or(entry.threshold).or(self.file_threshold).unwrap_or(defaults.threshold);
        (CompactionSettings { context_window, threshold }, source)
    }

    /// The same table with `model`'s own settings (as a `[models."<model>"]`
    /// table giving both would).
    pub fn with_model(mut self, model: &str, settings: CompactionSettings) -> Self {
        let entry =
            ModelCompaction { context_window: Some(settings.context_window), threshold: Some(settings.threshold) };
        self.models.insert(model.to_string(), entry);
        self
    }
}

impl From<CompactionSettings> for CompactionTable {
    /// The same settings for every model.
    fn from(settings: CompactionSettings) -> Self {
        CompactionTable {
            env_window: Some(settings.context_window),
            env_threshold: Some(settings.threshold),
            ..CompactionTable::default()
        }
    }
}

/// The compaction table of the file and the environment (checked here, so
/// a bad variable is refused at start).
fn compaction_table(file: &ConfigFile, env: impl Fn(&str) -> Option<String>) -> Result<CompactionTable, ConfigError> {
    let models = file
        .models
        .iter()
        .map(|(name, m)| {
            let entry = ModelCompaction {
                // Checked to be at least 1 when the file was read.
                context_window: m.context_window.as_ref().map(|w| w.get_ref().unsigned_abs()),
                threshold: m.compact_threshold.as_ref().map(|t| *t.get_ref()),
            };
            (name.clone(), entry)
        })
        .collect();
    let env_window = match env(CONTEXT_WINDOW_ENV) {
        None => None,
        Some(value) => match value.parse::<u64>() {
            Ok(tokens) if tokens >= 1 => Some(tokens),
            _ => return Err(ConfigError::ContextWindow { value }),
        },
    };
    let env_threshold = match env(COMPACT_THRESHOLD_ENV) {
        None => None,
        Some(value) => match value.parse::<f64>() {
            Ok(fraction) if valid_threshold(fraction) => Some(fraction),
            _ => return Err(ConfigError::CompactThreshold { value }),
        },
    };
    Ok(CompactionTable {
        models,
        file_threshold: file.compact_threshold.as_ref().map(|t| *t.get_ref()),
        env_window,
        env_threshold,
    })
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

impl Config {
    /// Reads the process's environment; a secret withdrawn from it at
    /// start-up ([`crate::hardening`]) is read from where it was kept.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|name| crate::hardening::withdrawn(name).or_else(|| std::env::var_os(name)))
    }

    /// Reads each variable through `lookup`, then `$MINO_HOME/config.toml`;
    /// a setting neither gives is the default. Unset or blank variables
    /// count as not given.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Config, ConfigError> {
        let set = |name: &str| lookup(name).filter(|v| !v.is_empty());
        let home = match (set(settings::HOME.env), set("HOME")) {
            (Some(dir), _) => MinoHome::new(dir),
            (None, Some(home)) => MinoHome::new(PathBuf::from(home).join(".mino")),
            (None, None) => return Err(HomeError::NoHome.into()),
        };
        let file = ConfigFile::read(&home.root().join(CONFIG_FILE))?;
        // The environment first, then the file: each setting has one winner.
        let string = |name: &str| set(name).map(|v| v.to_string_lossy().into_owned());
        let model = ModelConfig::from_lookup(|name| {
            string(name).or_else(|| match name {
                name if name == settings::BASE_URL.env => file.base_url.clone(),
                name if name == settings::MODEL.env => file.model.clone(),
                _ => None,
            })
        });
        let provider = string(settings::PROVIDER.env).or_else(|| file.provider.clone());
        let provider = Provider::from_setting(provider.as_deref()).map_err(|e| ConfigError::Provider(e.to_string()))?;
        let mut command_limits = bash::Limits::default();
        if let Some(timeout) = &file.command_timeout_secs {
            // Checked to be at least 1 when the file was read.
            command_limits.timeout = Duration::from_secs(timeout.get_ref().unsigned_abs());
        }
        if let Some(value) = set(COMMAND_TIMEOUT_ENV) {
            let value = value.to_string_lossy().into_owned();
            match value.trim().parse::<u64>() {
                Ok(secs) if secs >= 1 => command_limits.timeout = Duration::from_secs(secs),
                _ if value.trim().is_empty() => {}
                _ => return Err(ConfigError::CommandTimeout { value }),
            }
        }
        let sandbox = match set(SANDBOX_ENV) {
            None => None,
            Some(value) => {
                let value = value.to_string_lossy().into_owned();
                Some(value.trim().parse().map_err(|_| ConfigError::Sandbox { value })?)
            }
        };
        let mut configured_models = vec![ListedModel { id: model.model.clone(), context_window: None }];
        for (name, settings) in &file.models {
            // Checked to be at least 1 when the file was read.
            let context_window = settings.context_window.as_ref().map(|w| w.get_ref().unsigned_abs());
            match configured_models.iter_mut().find(|m| m.id == *name) {
                Some(configured) => configured.context_window = context_window,
                None => configured_models.push(ListedModel { id: name.clone(), context_window }),
            }
        }
        let compaction = compaction_table(&file, |name| {
            set(name).map(|v| v.to_string_lossy().trim().to_string()).filter(|v| !v.is_empty())
        })?;
        let config_path = home.root().join(CONFIG_FILE);
        let mcp_servers = crate::mcp::config::servers(&file.mcp_servers, |name| string(name))
            .map_err(|message| ConfigError::File { path: config_path.clone(), line: None, message })?;
        let mut rewind_limits = crate::blobs::Limits::default();
        for (setting, bound) in [
            (&settings::REWIND_FILE_LIMIT, &mut rewind_limits.file),
            (&settings::REWIND_SESSION_LIMIT, &mut rewind_limits.session),
        ] {
            let Some(value) = set(setting.env) else { continue };
            let value = value.to_string_lossy().into_owned();
            match value.trim().parse::<u64>() {
                Ok(bytes) if bytes >= 1 => *bound = bytes,
                _ if value.trim().is_empty() => {}
                _ => return Err(ConfigError::RewindLimit { name: setting.env, value }),
            }
        }
        Ok(Config {
            home,
            model,
            provider,
            command_limits,
            sandbox,
            compaction,
            configured_models,
            mcp_servers,
            rewind_limits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| OsString::from(v)))
    }

    #[test]
    fn home_is_mino_home_else_dot_mino_under_home() {
        let c = config(&[("MINO_HOME", "/m"), ("HOME", "/h")]).expect("config");
        assert_eq!(c.home.root(), std::path::Path::new("/m"));
        let c = config(&[("MINO_HOME", ""), ("HOME", "/h")]).expect("config");
        assert_eq!(c.home.root(), std::path::Path::new("/h/.mino"));
        let e = config(&[]).expect_err("no home");
        assert!(e.to_string().contains("set MINO_HOME"), "{e}");
    }

    #[test]
    fn the_sandbox_mode_is_one_of_three() {
        let c = config(&[("HOME", "/h"), (SANDBOX_ENV, "workspace-write")]).expect("config");
        assert_eq!(c.sandbox, Some(crate::sandbox::SandboxMode::WorkspaceWrite));
        assert_eq!(config(&[("HOME", "/h")]).expect("config").sandbox, None);
        let e = config(&[("HOME", "/h"), (SANDBOX_ENV, "strict")]).expect_err("unknown mode");
        assert!(e.to_string().contains("MINO_SANDBOX") && e.to_string().contains("read-only"), "{e}");
    }

    #[test]
    fn the_command_timeout_is_whole_seconds_at_least_one() {
        let c = config(&[("HOME", "/h"), (COMMAND_TIMEOUT_ENV, " 7 ")]).expect("config");
        assert_eq!(c.command_limits.timeout, Duration::from_secs(7));
        let c = config(&[("HOME", "/h"), (COMMAND_TIMEOUT_ENV, "  ")]).expect("config");
        assert_eq!(c.command_limits.timeout, bash::Limits::default().timeout);
        for bad in ["0", "1.5", "ten"] {
            let e = config(&[("HOME", "/h"), (COMMAND_TIMEOUT_ENV, bad)]).expect_err(bad);
            assert!(e.to_string().contains("MINO_COMMAND_TIMEOUT_SECS") && e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn the_provider_is_responses_unless_mino_provider_names_another() {
        let c = config(&[("HOME", "/h")]).expect("config");
        assert_eq!(c.provider, Provider::Responses);
        let c = config(&[("HOME", "/h"), ("MINO_PROVIDER", "chat-completions")]).expect("config");
        assert_eq!(c.provider, Provider::ChatCompletions);
        let e = config(&[("HOME", "/h"), ("MINO_PROVIDER", "ollama")]).expect_err("unknown provider");
        let e = e.to_string();
        assert!(e.contains("MINO_PROVIDER") && e.contains("chat-completions") && e.contains("responses"), "{e}");
    }

    /// A home directory holding `config.toml` with `text`.
    fn home_with_file(text: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().expect("home");
        std::fs::write(home.path().join(CONFIG_FILE), text).expect("config file");
        home
    }

    fn config_in(home: &tempfile::TempDir, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut vars = vars.to_vec();
        let root = home.path().display().to_string();
        vars.push(("MINO_HOME", &root));
        config(&vars)
    }

    #[test]
    fn the_file_sets_what_the_environment_does_not() {
        let home = home_with_file(
            "# a local model\nprovider = \"chat-completions\"\nbase_url = \"http://localhost:11434/v1\"\nmodel = \"qwen3:8b\"\ncommand_timeout_secs = 30\n",
        );
        let c = config_in(&home, &[]).expect("config");
        assert_eq!(c.provider, Provider::ChatCompletions);
        assert_eq!(c.model.base_url, "http://localhost:11434/v1");
        assert_eq!(c.model.model, "qwen3:8b");
        assert_eq!(c.command_limits.timeout, Duration::from_secs(30));

        let c =
            config_in(&home, &[("MINO_PROVIDER", "responses"), ("MINO_MODEL", "gpt-5.1"), (COMMAND_TIMEOUT_ENV, "9")])
                .expect("config");
        assert_eq!(c.provider, Provider::Responses, "the environment wins");
        assert_eq!(c.model.model, "gpt-5.1");
        assert_eq!(c.model.base_url, "http://localhost:11434/v1", "what the environment leaves, the file sets");
        assert_eq!(c.command_limits.timeout, Duration::from_secs(9));
    }

    #[test]
    fn the_context_window_is_per_model_with_the_environment_over_the_file() {
        let home = home_with_file(
            "compact_threshold = 0.7\n[models.\"gpt-5.1\"]\ncontext_window = 400000\n[models.\"small\"]\ncontext_window = 8192\ncompact_threshold = 0.5\n",
        );
        // Resolved per model, whichever model the session starts with.
        let c = config_in(&home, &[("MINO_MODEL", "gpt-5.1")]).expect("config");
        assert_eq!(c.compaction.for_model("gpt-5.1"), CompactionSettings { context_window: 400_000, threshold: 0.7 });
        assert_eq!(c.compaction.for_model("small"), CompactionSettings { context_window: 8192, threshold: 0.5 });
        assert_eq!(
            c.compaction.for_model("other").context_window,
            DEFAULT_CONTEXT_WINDOW,
            "a model the file does not name"
        );
        assert_eq!(c.compaction.for_model("other").threshold, 0.7, "the file's top-level threshold");
        let c =
            config_in(&home, &[("MINO_MODEL", "small"), (CONTEXT_WINDOW_ENV, "1000"), (COMPACT_THRESHOLD_ENV, "0.9")])
                .expect("config");
        for model in ["small", "gpt-5.1", "other"] {
            let settings = c.compaction.for_model(model);
            assert_eq!(settings, CompactionSettings { context_window: 1000, threshold: 0.9 }, "the environment wins");
        }
        let c = config(&[("HOME", "/h")]).expect("config");
        assert_eq!(c.compaction.for_model(&c.model.model), CompactionSettings::default());
        for (name, bad) in [
            (CONTEXT_WINDOW_ENV, "0"),
            (CONTEXT_WINDOW_ENV, "lots"),
            (COMPACT_THRESHOLD_ENV, "80"),
            (COMPACT_THRESHOLD_ENV, "0"),
        ] {
            let e = config(&[("HOME", "/h"), (name, bad)]).expect_err(bad).to_string();
            assert!(e.contains(name) && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn the_window_is_the_environment_then_the_file_then_the_service_then_the_default() {
        let home =
            home_with_file("[models.\"local\"]\ncontext_window = 8192\n[models.\"tuned\"]\ncompact_threshold = 0.5\n");
        let c = config_in(&home, &[]).expect("config");
        let resolve = |model: &str, reported| {
            let (settings, source) = c.compaction.resolve(model, reported);
            (settings.context_window, settings.threshold, source)
        };
        assert_eq!(
            resolve("local", Some(4096)),
            (8192, 0.8, WindowSource::ConfigFile),
            "the file wins over the service"
        );
        assert_eq!(resolve("tuned", Some(4096)), (4096, 0.5, WindowSource::Service), "the threshold stays the file's");
        assert_eq!(resolve("other", Some(32768)), (32768, 0.8, WindowSource::Service));
        assert_eq!(
            resolve("other", Some(0)),
            (DEFAULT_CONTEXT_WINDOW, 0.8, WindowSource::Default),
            "zero is no window"
        );
        assert_eq!(resolve("other", None), (DEFAULT_CONTEXT_WINDOW, 0.8, WindowSource::Default));
        assert_eq!(c.compaction.configured_window("local"), Some((8192, WindowSource::ConfigFile)));
        assert_eq!(c.compaction.configured_window("tuned"), None, "a table without a window sets none");
        let c = config_in(&home, &[(CONTEXT_WINDOW_ENV, "1000")]).expect("config");
        for model in ["local", "tuned", "other"] {
            let (settings, source) = c.compaction.resolve(model, Some(4096));
            assert_eq!((settings.context_window, source), (1000, WindowSource::Environment), "{model}");
        }
    }

    #[test]
    fn the_configured_models_are_the_model_then_the_files_tables() {
        let home = home_with_file(
            "model = \"qwen3:8b\"\n[models.\"llama3.2:3b\"]\ncontext_window = 8192\n[models.\"qwen3:8b\"]\ncontext_window = 32768\n",
        );
        let c = config_in(&home, &[]).expect("config");
        let listed: Vec<(&str, Option<u64>)> =
            c.configured_models.iter().map(|m| (m.id.as_str(), m.context_window)).collect();
        assert_eq!(listed, [("qwen3:8b", Some(32768)), ("llama3.2:3b", Some(8192))]);
        let home = home_with_file("[models.m]\ncontext_window = 0\n");
        let e = config_in(&home, &[]).expect_err("a zero window").to_string();
        assert!(e.contains(":2:") && e.contains("context_window"), "{e}");
    }

    #[test]
    fn a_missing_file_sets_nothing() {
        let home = tempfile::tempdir().expect("home");
        let c = config_in(&home, &[]).expect("config");
        assert_eq!(c.provider, Provider::Responses);
        assert_eq!(c.model.model, ModelConfig::default().model);
    }

    #[test]
    fn a_file_with_an_error_is_refused_with_its_path_and_line() {
        for (text, line, says) in [
            ("model = \"m\"\nbase_url = http://x\n", 2, "quoted"),
            ("model = \"m\"\n\nmodle = \"typo\"\n", 3, "modle"),
            ("command_timeout_secs = 0\n", 1, "at least 1"),
            ("command_timeout_secs = \"ten\"\n", 1, "command_timeout_secs"),
            ("# comment\nprovider = \"ollama\"\n", 2, "chat-completions"),
            ("api_key = \"sk-in-a-file\"\n", 1, "api_key"),
            ("compact_threshold = 80.0\n", 1, "compact_threshold"),
            ("[models.m]\ncontext_window = 0\n", 2, "context_window"),
            ("[models.m]\ncontext_windw = 10\n", 2, "context_windw"),
        ] {
            let home = home_with_file(text);
            let e = config_in(&home, &[]).expect_err(text).to_string();
            let at = format!("{}:{line}", home.path().join(CONFIG_FILE).display());
            assert!(e.starts_with(&at), "{text:?} must be refused at {at}: {e}");
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(!e.contains("sk-in-a-file"), "a key written in the file is never repeated: {e}");
        }
    }
}
