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
//! ```toml
//! [mcp_servers.docs]
//! url = "https://mcp.example.com/mcp"
//! bearer_token_env_var = "DOCS_MCP_TOKEN"       # Authorization: Bearer $DOCS_MCP_TOKEN
//! http_headers = { X-Team = "blue" }            # sent as written
//! env_http_headers = { X-Api-Key = "DOCS_KEY" } # header = environment variable
//! ```
//!
//! `command` (stdio) or `url` (streamable HTTP) — exactly one. Read by [`crate::config`] with the
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
    /// A header's value from an environment variable: header = "VAR".
    #[serde(default)]
    env_http_headers: BTreeMap<String, String>,
    bearer_token_env_var: Option<String>,
    /// Refused as Codex refuses it: a token belongs in the environment.
    bearer_token: Option<toml::Value>,
    startup_timeout_sec: Option<f64>,
    /// Codex also accepts milliseconds.
    startup_timeout_ms: Option<u64>,
    tool_timeout_sec: Option<f64>,
    enabled: Option<bool>,
}

/// Where a server is.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    Stdio(StdioServerSpec),
    /// Streamable HTTP. `headers` may hold secrets: never logged or
    /// journaled (their `Debug` shows names only).
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// A server Mino cannot connect to (an ACP client's `sse` server, a
    /// token's variable that is not set): it is listed `failed` with
    /// `why`, so its missing tools are seen.
    Unsupported {
        why: String,
    },
}

impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpTransport::Stdio(spec) => f.debug_tuple("Stdio").field(&spec.command).field(&spec.args.len()).finish(),
            McpTransport::Http { url, headers } => {
                f.debug_struct("Http").field("url", url).field("headers", &headers.keys().collect::<Vec<_>>()).finish()
            }
            McpTransport::Unsupported { why } => f.debug_struct("Unsupported").field("why", why).finish(),
        }
    }
}

/// Whether `url` is one Mino connects to: http or https with a host.
pub fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("`url` {url:?} is not an http:// or https:// URL"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(format!("`url` {url:?} names no host"));
    }
    Ok(())
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

    /// A streamable HTTP server with the default limits (an ACP client's
    /// `http` entry).
    pub fn http(name: &str, url: &str, headers: BTreeMap<String, String>) -> Self {
        let transport = match check_url(url) {
            Ok(()) => McpTransport::Http { url: url.to_string(), headers },
            Err(why) => McpTransport::Unsupported { why },
        };
        McpServerConfig {
            name: name.to_string(),
            transport,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
        }
    }

    /// A server Mino will not connect to, listed `failed` with `why`.
    pub fn unsupported(name: &str, why: String) -> Self {
        McpServerConfig {
            name: name.to_string(),
            transport: McpTransport::Unsupported { why },
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

pub use crate::mcp_name::{valid_server_name, MAX_SERVER_NAME};

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
                if !table.http_headers.is_empty()
                    || !table.env_http_headers.is_empty()
                    || table.bearer_token_env_var.is_some()
                    || table.bearer_token.is_some()
                {
                    return Err(fail(
                        "`http_headers`, `env_http_headers` and `bearer_token_env_var` are for a `url` server".into(),
                    ));
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
                check_url(url).map_err(fail)?;
                if !table.args.is_empty() || !table.env.is_empty() || table.cwd.is_some() {
                    return Err(fail("`args`, `env` and `cwd` are for a `command` server".into()));
                }
                if table.bearer_token.is_some() {
                    return Err(fail(
                        "a token is not written in config.toml: put it in an environment variable and name that variable in `bearer_token_env_var`".into(),
                    ));
                }
                http_transport(table, &env)
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

/// An HTTP table's transport: its headers with the environment's values
/// filled in. A variable that is not set leaves the server unusable (listed
/// `failed`, saying which variable) rather than sent without its header.
fn http_transport(table: &McpServerFile, env: &impl Fn(&str) -> Option<String>) -> McpTransport {
    let Some(url) = &table.url else { return McpTransport::Unsupported { why: "no `url`".into() } };
    let mut headers = table.http_headers.clone();
    let mut missing = Vec::new();
    for (header, var) in &table.env_http_headers {
        match env(var) {
            Some(value) => {
                headers.insert(header.clone(), value);
            }
            None => missing.push(format!("{var} (env_http_headers.{header})")),
        }
    }
    if let Some(var) = &table.bearer_token_env_var {
        match env(var) {
            Some(token) => {
                headers.insert("Authorization".into(), format!("Bearer {token}"));
            }
            None => missing.push(format!("{var} (bearer_token_env_var)")),
        }
    }
    if !missing.is_empty() {
        return McpTransport::Unsupported {
            why: format!(
                "not started: the environment variable {} is not set in Mino's environment (set it and start Mino again)",
                missing.join(", ")
            ),
        };
    }
    McpTransport::Http { url: url.clone(), headers }
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
        assert!(parse("[mcp_servers.a]\nurl=\"ftp://h/mcp\"\n").unwrap_err().contains("not an http:// or https://"));
        assert!(parse("[mcp_servers.a]\nurl=\"http:///mcp\"\n").unwrap_err().contains("no host"));
        let inline = parse("[mcp_servers.a]\nurl=\"http://h\"\nbearer_token=\"s3cret\"\n").unwrap_err();
        assert!(inline.contains("bearer_token_env_var") && !inline.contains("s3cret"), "{inline}");
        assert!(parse("[mcp_servers.a]\ncommand=\"x\"\nhttp_headers={A=\"1\"}\n")
            .unwrap_err()
            .contains("`url` server"));
    }

    #[test]
    fn headers_come_from_the_table_and_the_environment_and_never_show_in_debug() {
        let servers = parse(
            "[mcp_servers.web]\nurl = \"http://127.0.0.1:1/mcp\"\nhttp_headers = { X-Team = \"blue\" }\n\
             env_http_headers = { X-Key = \"TOKEN\" }\n",
        )
        .unwrap();
        let McpTransport::Http { headers, .. } = &servers[0].transport else { panic!("{:?}", servers[0]) };
        assert_eq!(headers["X-Team"], "blue");
        assert_eq!(headers["X-Key"], "s3cret");
        assert!(!format!("{:?}", servers[0]).contains("s3cret"));
    }

    #[test]
    fn a_variable_that_is_not_set_leaves_the_server_failed_and_named() {
        let servers =
            parse("[mcp_servers.web]\nurl = \"http://h/mcp\"\nbearer_token_env_var = \"UNSET_VAR\"\n").unwrap();
        let McpTransport::Unsupported { why } = &servers[0].transport else { panic!("{:?}", servers[0]) };
        assert!(why.contains("UNSET_VAR") && why.contains("bearer_token_env_var"), "{why}");
    }
}
