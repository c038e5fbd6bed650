//! The `[mcp_servers.NAME]` tables of `config.toml`, in the shape Codex
//! reads them, so a table can be copied from one to the other:
//!
//! ```toml
//! [mcp_servers.fs]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]
//! env = { LOG_LEVEL = "warn" }
//! startup_timeout_sec = 20
//! tool_timeout_sec = 120
//! ```
//!
//! `command` (stdio) or `url` (streamable HTTP, with `http_headers` and
//! `bearer_token_env_var`) — exactly one. Read by [`crate::config`] with the
//! rest of the file; an error names the table and the key.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::process::StdioServerSpec;

/// How long a server may take to answer `initialize` and `tools/list`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one `tools/call` may take.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// One `[mcp_servers.NAME]` table as the file gives it.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpServerFile {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    /// Codex's name for them; `headers` is taken too.
    #[serde(default, alias = "headers")]
    http_headers: BTreeMap<String, String>,
    bearer_token_env_var: Option<String>,
    startup_timeout_sec: Option<f64>,
    /// Codex also accepts milliseconds.
    startup_timeout_ms: Option<u64>,
    tool_timeout_sec: Option<f64>,
    enabled: Option<bool>,
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    Stdio(StdioServerSpec),
    /// Streamable HTTP. `headers` may hold secrets: never logged or journaled.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    pub name: String,
    pub transport: McpTransport,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
}

impl McpServerConfig {
    /// A stdio server with the default limits.
    pub fn stdio(name: &str, command: &str, args: Vec<String>, env: BTreeMap<String, String>) -> Self {
        McpServerConfig {
            name: name.to_string(),
            transport: McpTransport::Stdio(StdioServerSpec {
                name: name.to_string(),
                command: command.to_string(),
                args,
                env,
                cwd: None,
            }),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
        }
    }
}

fn seconds(key: &str, value: Option<f64>, default: Duration) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        Some(_) => Err(format!("{key} must be a number of seconds over 0 (at most 86400)")),
    }
}

/// The longest name a server may have: its tools are offered as
/// `mcp__<server>__<tool>` within 64 characters.
pub const MAX_SERVER_NAME: usize = 32;

/// Whether `name` can name a server: letters, digits, `_` and `-`.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The enabled servers of the file's tables, in name order; an error says
/// which table and what is wrong with it. `env` reads the environment (for
/// `bearer_token_env_var`).
pub(crate) fn servers(
    tables: &BTreeMap<String, McpServerFile>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<McpServerConfig>, String> {
    let mut servers = Vec::new();
    for (name, table) in tables {
        let fail = |why: String| format!("[mcp_servers.{name}]: {why}");
        if !valid_server_name(name) {
            return Err(fail(format!("a server's name is 1 to {MAX_SERVER_NAME} letters, digits, `_` or `-`")));
        }
        if table.enabled == Some(false) {
            continue;
        }
        let startup = match table.startup_timeout_ms {
            Some(ms) if table.startup_timeout_sec.is_none() && ms > 0 => Duration::from_millis(ms),
            Some(_) if table.startup_timeout_sec.is_some() => {
                return Err(fail("set startup_timeout_sec or startup_timeout_ms, not both".into()))
            }
            Some(_) => return Err(fail("startup_timeout_ms must be over 0".into())),
            None => seconds("startup_timeout_sec", table.startup_timeout_sec, DEFAULT_STARTUP_TIMEOUT).map_err(fail)?,
        };
        let tool = seconds("tool_timeout_sec", table.tool_timeout_sec, DEFAULT_TOOL_TIMEOUT).map_err(fail)?;
        let transport = match (&table.command, &table.url) {
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(fail("`command` is empty".into()));
                }
                if !table.http_headers.is_empty() || table.bearer_token_env_var.is_some() {
                    return Err(fail("`http_headers` and `bearer_token_env_var` are for a `url` server".into()));
                }
                McpTransport::Stdio(StdioServerSpec {
                    name: name.clone(),
                    command: command.clone(),
                    args: table.args.clone(),
                    env: table.env.clone(),
                    cwd: table.cwd.clone(),
                })
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(fail(format!("`url` {url:?} is not an http:// or https:// URL")));
                }
                if !table.args.is_empty() || !table.env.is_empty() || table.cwd.is_some() {
                    return Err(fail("`args`, `env` and `cwd` are for a `command` server".into()));
                }
                let mut headers = table.http_headers.clone();
                if let Some(var) = &table.bearer_token_env_var {
                    let token =
                        env(var).ok_or_else(|| fail(format!("bearer_token_env_var names {var}, which is not set")))?;
                    headers.insert("Authorization".into(), format!("Bearer {token}"));
                }
                McpTransport::Http { url: url.clone(), headers }
            }
            (Some(_), Some(_)) => return Err(fail("set `command` (stdio) or `url` (HTTP), not both".into())),
            (None, None) => {
                return Err(fail("set `command` (a stdio server) or `url` (a streamable HTTP server)".into()))
            }
        };
        servers.push(McpServerConfig { name: name.clone(), transport, startup_timeout: startup, tool_timeout: tool });
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<McpServerConfig>, String> {
        #[derive(serde::Deserialize)]
        struct File {
            mcp_servers: BTreeMap<String, McpServerFile>,
        }
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        servers(&file.mcp_servers, |v| (v == "TOKEN").then(|| "s3cret".to_string()))
    }

    #[test]
    fn a_codex_table_is_read() {
        let servers = parse(
            "[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\nenv = { A = \"1\" }\nstartup_timeout_sec = 20\ntool_timeout_sec = 5\n\
             [mcp_servers.web]\nurl = \"https://example.invalid/mcp\"\nbearer_token_env_var = \"TOKEN\"\n\
             [mcp_servers.off]\ncommand = \"x\"\nenabled = false\n",
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].name, "fs");
        assert_eq!(servers[0].startup_timeout, Duration::from_secs(20));
        assert_eq!(servers[0].tool_timeout, Duration::from_secs(5));
        match &servers[1].transport {
            McpTransport::Http { headers, .. } => assert_eq!(headers["Authorization"], "Bearer s3cret"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bad_table_is_named() {
        assert!(parse("[mcp_servers.a]\nargs=[]\n").unwrap_err().contains("[mcp_servers.a]: set `command`"));
        assert!(parse("[mcp_servers.a]\ncommand=\"x\"\nurl=\"http://h\"\n").unwrap_err().contains("not both"));
        assert!(parse("[mcp_servers.\"a b\"]\ncommand=\"x\"\n").unwrap_err().contains("name"));
        assert!(parse("[mcp_servers.a]\ncommand=\"x\"\nstartup_timeout_sec=0\n").unwrap_err().contains("over 0"));
        assert!(parse("[mcp_servers.a]\ncommand=\"x\"\ncolour=1\n").unwrap_err().contains("colour"));
    }
}
