//! Every setting Mino reads, in one table: its environment variable, its key
//! in `$MINO_HOME/config.toml` when the file may set it, what it sets and its
//! default. [`crate::config`] reads the variables by these names and names
//! them in its errors, `mino-server --help` lists them ([`help`]), and the
//! README's table is [`markdown_table`] (a test keeps the two equal).
//!
//! A leaf: it imports nothing of the crate, so anything may use it.

/// One setting. Texts are Markdown (code in backquotes); [`help`] shows them plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable.
    pub env: &'static str,
    /// Its key in `config.toml`, when the file may set it.
    pub file_key: Option<&'static str>,
    /// What it sets.
    pub meaning: &'static str,
    /// What holds when it is not set.
    pub default: &'static str,
}

/// The largest file whose content before an edit Mino keeps for a rewind
/// (`<session>.blobs/`) by default: 2 MiB. A larger file is still edited; its
/// rewind names it "before-content not kept: larger than 2 MiB".
/// [`REWIND_FILE_LIMIT`] sets another.
pub const REWIND_FILE_LIMIT_BYTES: u64 = 2 * 1024 * 1024;

/// The most before-content one session keeps for rewinds by default:
/// 128 MiB. Past it edits still work and their rewinds name the files whose
/// content was not kept. [`REWIND_SESSION_LIMIT`] sets another.
pub const REWIND_SESSION_LIMIT_BYTES: u64 = 128 * 1024 * 1024;

pub const API_KEY: Setting = Setting {
    env: "OPENAI_API_KEY",
    file_key: None,
    meaning: "the API key; never logged, never written to the journal, never given to commands",
    default: "—",
};

pub const BASE_URL: Setting = Setting {
    env: "OPENAI_BASE_URL",
    file_key: Some("base_url"),
    meaning: "any endpoint speaking the chosen provider's API",
    default: "`https://api.openai.com/v1`",
};

pub const MODEL: Setting =
    Setting { env: "MINO_MODEL", file_key: Some("model"), meaning: "model name", default: "`gpt-5.1`" };

pub const PROVIDER: Setting = Setting {
    env: "MINO_PROVIDER",
    file_key: Some("provider"),
    meaning: "`responses` (the OpenAI Responses API) or `chat-completions` (streamed Chat Completions, as llama.cpp's server, vLLM, LM Studio and Ollama serve it)",
    default: "`responses`",
};

pub const COMMAND_TIMEOUT: Setting = Setting {
    env: "MINO_COMMAND_TIMEOUT_SECS",
    file_key: Some("command_timeout_secs"),
    meaning: "a command's time limit in whole seconds, at least 1 (shown on every approval)",
    default: "`120`",
};

pub const HOME: Setting = Setting {
    env: "MINO_HOME",
    file_key: None,
    meaning: "where sessions (`sessions/*.jsonl`), `SOUL.md` (the instructions) and `config.toml` live",
    default: "`~/.mino`",
};

pub const CONTEXT_WINDOW: Setting = Setting {
    env: "MINO_CONTEXT_WINDOW",
    file_key: Some("[models.\"<name>\"] context_window"),
    meaning: "the context window in tokens of every model, for automatic compaction",
    default: "the model's `context_window` in the file, else the window the service's `GET /models` reports for the model, else `128000`",
};

pub const COMPACT_THRESHOLD: Setting = Setting {
    env: "MINO_COMPACT_THRESHOLD",
    file_key: Some("compact_threshold"),
    meaning: "the fraction of the context window (over 0, at most 1) the last request's input tokens must reach for the next turn to compact first; in the file also per model, under `[models.\"<name>\"]`",
    default: "`0.8`",
};

pub const SANDBOX: Setting = Setting {
    env: "MINO_SANDBOX",
    file_key: None,
    meaning: "the sandbox mode commands start in: `off`, `read-only`, `workspace-write` (refused if the machine cannot enforce it); `initializationOptions.sandbox` overrides it",
    default: "`off`",
};

pub const REWIND_FILE_LIMIT: Setting = Setting {
    env: "MINO_REWIND_FILE_LIMIT_BYTES",
    file_key: None,
    meaning: "the largest file (in bytes) whose content before an edit is kept for a rewind; a larger file is still edited and its rewind names it as not kept",
    default: "`2097152` (2 MiB)",
};

pub const REWIND_SESSION_LIMIT: Setting = Setting {
    env: "MINO_REWIND_SESSION_LIMIT_BYTES",
    file_key: None,
    meaning: "the most before-content (in bytes) one session keeps for rewinds; past it edits still work and their rewinds name the files not kept; a fork copying more is refused",
    default: "`134217728` (128 MiB)",
};

pub const LOG: Setting = Setting {
    env: "RUST_LOG",
    file_key: None,
    meaning: "server log level (`mino-server` logs to stderr, never stdout; the `mino` client sends them to `$MINO_HOME/logs/server.log` unless `RUST_LOG` is set)",
    default: "`warn`",
};

/// Every setting, in the order the README and `--help` list them.
pub const SETTINGS: &[Setting] = &[
    API_KEY,
    BASE_URL,
    MODEL,
    PROVIDER,
    COMMAND_TIMEOUT,
    HOME,
    CONTEXT_WINDOW,
    COMPACT_THRESHOLD,
    SANDBOX,
    REWIND_FILE_LIMIT,
    REWIND_SESSION_LIMIT,
    LOG,
];

/// The keys `config.toml` takes, as [`SETTINGS`] lists them.
pub fn file_keys() -> impl Iterator<Item = &'static str> {
    SETTINGS.iter().filter_map(|s| s.file_key)
}

/// The README's table of settings.
pub fn markdown_table() -> String {
    let mut table = String::from("| variable | `config.toml` | meaning | default |\n|---|---|---|---|\n");
    for s in SETTINGS {
        let key = s.file_key.map(|k| format!("`{k}`")).unwrap_or_else(|| "—".into());
        table.push_str(&format!("| `{}` | {key} | {} | {} |\n", s.env, s.meaning, s.default));
    }
    table
}

/// The settings for a terminal: one per paragraph, without Markdown's backquotes.
pub fn help() -> String {
    let plain = |text: &str| text.replace('`', "");
    let mut help = String::from(
        "Environment (each variable, when set and not empty, wins over its key in $MINO_HOME/config.toml):\n",
    );
    for s in SETTINGS {
        help.push_str(&format!("  {}", s.env));
        if let Some(key) = s.file_key {
            help.push_str(&format!(" (config.toml: {key})"));
        }
        help.push_str(&format!("\n      {}", plain(s.meaning)));
        if s.default != "—" {
            help.push_str(&format!("; default: {}", plain(s.default)));
        }
        help.push('\n');
    }
    help
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variable_and_key_is_listed_once() {
        let mut names: Vec<&str> = SETTINGS.iter().map(|s| s.env).chain(file_keys()).collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a variable or key listed twice");
    }

    /// The defaults the table states are the ones the code applies.
    #[test]
    fn the_stated_defaults_are_the_codes() {
        let model = crate::model::ModelConfig::default();
        assert_eq!(BASE_URL.default, format!("`{}`", model.base_url));
        assert_eq!(MODEL.default, format!("`{}`", model.model));
        assert_eq!(PROVIDER.default, format!("`{}`", crate::model::Provider::default().as_str()));
        assert_eq!(COMMAND_TIMEOUT.default, format!("`{}`", crate::bash::Limits::default().timeout.as_secs()));
        assert!(CONTEXT_WINDOW.default.ends_with(&format!("`{}`", crate::config::DEFAULT_CONTEXT_WINDOW)));
        assert_eq!(COMPACT_THRESHOLD.default, format!("`{}`", crate::config::DEFAULT_COMPACT_THRESHOLD));
        let rewind = crate::blobs::Limits::default();
        assert!(REWIND_FILE_LIMIT.default.starts_with(&format!("`{}` ", rewind.file)));
        assert!(REWIND_SESSION_LIMIT.default.starts_with(&format!("`{}` ", rewind.session)));
    }

    /// README.md's table is this one, so the docs list what the code reads.
    #[test]
    fn the_readme_table_is_this_table() {
        let readme = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
        let readme = std::fs::read_to_string(&readme).expect("read README.md");
        assert!(
            readme.contains(&markdown_table()),
            "README.md's table of settings differs from server/core/src/settings.rs; put this table in README.md:\n\n{}",
            markdown_table()
        );
    }

    /// docs/protocol.md's table of variables (with what `initialize` answers
    /// for each) names the same variables.
    #[test]
    fn the_protocol_doc_names_every_variable() {
        let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol.md");
        let doc = std::fs::read_to_string(&doc).expect("read docs/protocol.md");
        let mut documented: Vec<&str> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once('`').map(|(name, _)| name))
            .filter(|name| name.starts_with("MINO_") || name.starts_with("OPENAI_") || *name == LOG.env)
            .collect();
        documented.sort();
        documented.dedup();
        let mut expected: Vec<&str> = SETTINGS.iter().map(|s| s.env).collect();
        expected.sort();
        assert_eq!(documented, expected, "docs/protocol.md's table of environment variables");
    }
}
