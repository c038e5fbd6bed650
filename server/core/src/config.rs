//! Mino's configuration, read from the environment in this one place:
//! `MINO_HOME` (else `$HOME/.mino`), `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
//! `MINO_MODEL`, `MINO_COMMAND_TIMEOUT_SECS` and `MINO_SANDBOX`. Nothing else in the core
//! reads these variables, so what a server runs with is decided once, when
//! it opens (see [`crate::app::open`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::bash;
use crate::home::{HomeError, MinoHome};
use crate::model::ModelConfig;

/// The environment variable that sets a command's time limit in seconds.
pub const COMMAND_TIMEOUT_ENV: &str = "MINO_COMMAND_TIMEOUT_SECS";

/// The environment variable that sets the sandbox mode sessions start in
/// (`off`, `read-only`, `workspace-write`); `initializationOptions.sandbox`
/// overrides it.
pub const SANDBOX_ENV: &str = "MINO_SANDBOX";

/// Everything the environment decides.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: MinoHome,
    pub model: ModelConfig,
    /// The defaults, with the timeout from [`COMMAND_TIMEOUT_ENV`] when set.
    pub command_limits: bash::Limits,
    /// The sandbox mode from [`SANDBOX_ENV`], when set.
    pub sandbox: Option<crate::sandbox::SandboxMode>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error("{COMMAND_TIMEOUT_ENV}={value:?} is not a whole number of seconds (at least 1)")]
    CommandTimeout { value: String },
    #[error("{SANDBOX_ENV}={value:?} is not a sandbox mode: use off, read-only or workspace-write")]
    Sandbox { value: String },
}

impl Config {
    /// Reads the process's environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads each variable through `lookup`; unset or blank variables give
    /// the defaults.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Config, ConfigError> {
        let set = |name: &str| lookup(name).filter(|v| !v.is_empty());
        let home = match (set("MINO_HOME"), set("HOME")) {
            (Some(dir), _) => MinoHome::new(dir),
            (None, Some(home)) => MinoHome::new(PathBuf::from(home).join(".mino")),
            (None, None) => return Err(HomeError::NoHome.into()),
        };
        let model = ModelConfig::from_lookup(|name| set(name).map(|v| v.to_string_lossy().into_owned()));
        let mut command_limits = bash::Limits::default();
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
        Ok(Config { home, model, command_limits, sandbox })
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
}
