//! The clients' copies of the contract, generated from this crate so that no
//! client restates a method, status, error code or fixed message by hand:
//! the VS Code extension's TypeScript types and constants (types through
//! `ts-rs`) and the Neovim plugin's Lua constants.
//!
//! The files are checked in. `cargo run -p mino-protocol --bin
//! mino-protocol-gen` writes them ([`REGENERATE`]); the crate's
//! `generated_files_are_current` test fails when a checked-in file differs
//! from what this module generates.

use std::any::TypeId;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use ts_rs::{Config, TypeVisitor, TS};

use crate::notification::Notification;
use crate::request::Request;
use crate::{
    jsonrpc_code, message, method, ApprovalMode, Decision, ErrorCode, EvidenceOutcome, InitializationOptions,
    OutputStream, SandboxMode, ServerCapabilities, ToolName, ToolStatus, TurnNotification, TurnStatus, Visitor,
};

/// The command that rewrites the generated files.
pub const REGENERATE: &str = "cargo run -p mino-protocol --bin mino-protocol-gen";

/// Where the TypeScript file goes, relative to the workspace root.
pub const TYPESCRIPT_PATH: &str = "vscode-extension/src/generated/protocol.ts";
/// Where the Lua module goes, relative to the workspace root.
pub const LUA_PATH: &str = "clients/nvim/lua/mino/protocol.lua";

/// One generated file: its path relative to the workspace root, and its text.
pub struct GeneratedFile {
    pub path: &'static str,
    pub contents: String,
}

/// Every generated file.
pub fn files() -> Vec<GeneratedFile> {
    vec![
        GeneratedFile { path: TYPESCRIPT_PATH, contents: typescript() },
        GeneratedFile { path: LUA_PATH, contents: lua() },
    ]
}

fn banner(comment: &str) -> String {
    format!(
        "{comment} Generated from server/protocol (mino-protocol) by `{REGENERATE}`.\n\
         {comment} Do not edit: change the crate and run that command.\n"
    )
}

/// The wire name without the `mino/` prefix, as an identifier:
/// `mino/turnStarted` → `turnStarted`, `mino/rules/list` → `rulesList`
/// (a `/` is not valid in a TypeScript or Lua key).
fn short_name(method: &str) -> String {
    let mut parts = method.strip_prefix("mino/").unwrap_or(method).split('/');
    let mut name = parts.next().unwrap_or_default().to_string();
    for part in parts {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            name.extend(first.to_uppercase());
            name.push_str(chars.as_str());
        }
    }
    name
}

/// `TURN_IN_PROGRESS` → `turnInProgress`.
fn lower_camel(screaming: &str) -> String {
    let mut out = String::new();
    for (i, word) in screaming.split('_').enumerate() {
        let word = word.to_ascii_lowercase();
        let mut chars = word.chars();
        match (i, chars.next()) {
            (0, Some(c)) => out.push(c),
            (_, Some(c)) => out.push(c.to_ascii_uppercase()),
            (_, None) => {}
        }
        out.extend(chars);
    }
    out
}

fn quoted(s: &str) -> String {
    // JSON string syntax is valid in both TypeScript and Lua for the ASCII
    // sentences used here; serde_json escapes quotes and backslashes.
    serde_json::to_string(s).unwrap_or_default()
}

// ---------------------------------------------------------------- TypeScript

fn ts_config() -> Config {
    // Sequence numbers, limits and delays are far below 2^53: plain numbers,
    // as JSON.parse gives them, not bigints.
    Config::new().with_large_int("number")
}

/// Collects every named type reachable from the roots, with its declaration.
struct Declarations {
    config: Config,
    seen: HashSet<TypeId>,
    /// Name → `export type …;` with its doc comment, sorted by name.
    decls: BTreeMap<String, String>,
}

impl TypeVisitor for Declarations {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if !self.seen.insert(TypeId::of::<T>()) {
            return;
        }
        if T::output_path().is_some() {
            let docs = T::docs().unwrap_or_default();
            let decl = format!("{docs}export {}", T::decl(&self.config));
            self.decls.insert(T::ident(&self.config), decl);
        }
        T::visit_dependencies(self);
        T::visit_generics(self);
    }
}

/// The methods' lines of the TypeScript file.
#[derive(Default)]
struct TsMethods {
    names: Vec<(String, &'static str)>,
    request_map: Vec<String>,
    notification_names: Vec<(String, &'static str)>,
    notification_map: Vec<String>,
    roots: Vec<fn(&mut Declarations)>,
}

impl Visitor for TsMethods {
    fn request<R: Request>(&mut self) {
        let cfg = ts_config();
        self.names.push((short_name(R::METHOD), R::METHOD));
        self.request_map.push(format!(
            "  '{}': {{ params: {}; result: {} }};",
            R::METHOD,
            R::Params::name(&cfg),
            R::Result::name(&cfg)
        ));
        self.roots.push(|d| d.visit::<R::Params>());
        self.roots.push(|d| d.visit::<R::Result>());
    }

    fn notification<N: Notification>(&mut self) {
        let cfg = ts_config();
        self.notification_names.push((short_name(N::METHOD), N::METHOD));
        self.notification_map.push(format!("  '{}': {};", N::METHOD, N::Params::name(&cfg)));
        self.roots.push(|d| d.visit::<N::Params>());
    }
}

fn ts_union_list(name: &str, ty: &str, values: impl IntoIterator<Item = &'static str>) -> String {
    let values: Vec<String> = values.into_iter().map(|v| format!("'{v}'")).collect();
    format!("export const {name}: readonly {ty}[] = [{}] as const;\n", values.join(", "))
}

/// A vocabulary as an object whose keys are its values (as the Lua module's
/// `values` tables), so a client names one as `TOOL_STATUS.unknown` and the
/// type check catches a misspelt or withdrawn word.
fn ts_value_table(name: &str, ty: &str, values: impl IntoIterator<Item = &'static str>) -> String {
    let values: Vec<String> = values.into_iter().map(|v| format!("{v}: '{v}'")).collect();
    format!("export const {name} = {{ {} }} as const satisfies Record<string, {ty}>;\n", values.join(", "))
}

/// The TypeScript module: every wire type, and the names, statuses, error
/// codes and messages as constants.
pub fn typescript() -> String {
    let mut methods = TsMethods::default();
    crate::visit(&mut methods);

    let mut decls = Declarations { config: ts_config(), seen: HashSet::new(), decls: BTreeMap::new() };
    for root in &methods.roots {
        root(&mut decls);
    }
    // Types a client uses outside any method's params or result.
    decls.visit::<InitializationOptions>();
    decls.visit::<ServerCapabilities>();
    decls.visit::<TurnNotification>();

    let mut out = banner("//");
    out.push_str(
        "/* eslint-disable */\n\n// ---------------------------------------------------------------- types\n\n",
    );
    for decl in decls.decls.values() {
        out.push_str(decl);
        out.push_str("\n\n");
    }

    out.push_str("// ---------------------------------------------------------------- methods\n\n");
    out.push_str("/** Client-to-server requests. */\nexport const Method = {\n");
    for (key, name) in &methods.names {
        let _ = writeln!(out, "  {key}: '{name}',");
    }
    out.push_str("} as const;\n\n/** Server-to-client notifications. */\nexport const Notification = {\n");
    for (key, name) in &methods.notification_names {
        let _ = writeln!(out, "  {key}: '{name}',");
    }
    out.push_str("} as const;\n\n/** Every notification a turn emits, in the order a turn emits them. */\n");
    let turn: Vec<String> = method::TURN_NOTIFICATIONS.iter().map(|m| format!("'{m}'")).collect();
    let _ = writeln!(out, "export const TURN_NOTIFICATIONS = [{}] as const;\n", turn.join(", "));
    out.push_str("/** Each request method's params and result. */\nexport interface RequestMap {\n");
    for line in &methods.request_map {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("}\n\n/** Each notification method's params. */\nexport interface NotificationMap {\n");
    for line in &methods.notification_map {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("}\n\n");

    out.push_str("// ---------------------------------------------------------------- vocabulary\n\n");
    out.push_str(&ts_union_list("TURN_STATUSES", "TurnStatus", TurnStatus::ALL.iter().map(|s| s.as_str())));
    out.push_str(&ts_union_list("TOOL_STATUSES", "ToolStatus", ToolStatus::ALL.iter().map(|s| s.as_str())));
    out.push_str(&ts_union_list("TOOL_NAMES", "ToolName", ToolName::ALL.iter().map(|s| s.as_str())));
    out.push_str(&ts_union_list(
        "READ_TOOLS",
        "ToolName",
        ToolName::ALL.iter().filter(|t| t.is_read()).map(|s| s.as_str()),
    ));
    out.push_str(&ts_union_list("DECISIONS", "Decision", Decision::ALL.iter().map(|s| s.as_str())));
    out.push_str(&ts_union_list(
        "EVIDENCE_OUTCOMES",
        "EvidenceOutcome",
        EvidenceOutcome::ALL.iter().map(|s| s.as_str()),
    ));
    out.push_str(&ts_union_list("OUTPUT_STREAMS", "OutputStream", OutputStream::ALL.iter().map(|s| s.as_str())));
    // Least permissive first, as a client lists them.
    out.push_str(&ts_union_list("APPROVAL_MODES", "ApprovalMode", ApprovalMode::ALL.iter().map(|s| s.as_str())));
    out.push_str(&ts_union_list("SANDBOX_MODES", "SandboxMode", SandboxMode::ALL.iter().map(|s| s.as_str())));
    out.push_str(&ts_value_table("TURN_STATUS", "TurnStatus", TurnStatus::ALL.iter().map(|s| s.as_str())));
    out.push_str(&ts_value_table("TOOL_STATUS", "ToolStatus", ToolStatus::ALL.iter().map(|s| s.as_str())));
    out.push_str(&ts_value_table("DECISION", "Decision", Decision::ALL.iter().map(|s| s.as_str())));

    out.push_str("\n/** Mino's own JSON-RPC error codes. */\nexport const ErrorCode = {\n");
    for code in ErrorCode::ALL {
        let _ = writeln!(out, "  {}: {},", lower_camel(code.name()), code.code());
    }
    out.push_str("} as const;\n\n");
    out.push_str("/** JSON-RPC's own error codes, and the two of the language-server lifecycle. */\nexport const JsonRpcCode = {\n");
    for (name, code) in jsonrpc_code::ALL {
        let _ = writeln!(out, "  {}: {},", lower_camel(name), code);
    }
    out.push_str("} as const;\n\n");
    for (name, text) in message::ALL {
        let _ = writeln!(out, "export const {name}{} = {};", ts_message_suffix(name), quoted(text));
    }
    out
}

/// `ACKNOWLEDGEMENT_REQUIRED` is an error's message, so it keeps the name
/// the crate gives it at its root (`ACKNOWLEDGEMENT_REQUIRED_MESSAGE`);
/// a question is named as it is.
fn ts_message_suffix(name: &str) -> &'static str {
    if ErrorCode::ALL.iter().any(|c| c.name() == name) {
        "_MESSAGE"
    } else {
        ""
    }
}

// ---------------------------------------------------------------- Lua

#[derive(Default)]
struct LuaMethods {
    requests: Vec<&'static str>,
    notifications: Vec<&'static str>,
}

impl Visitor for LuaMethods {
    fn request<R: Request>(&mut self) {
        self.requests.push(R::METHOD);
    }

    fn notification<N: Notification>(&mut self) {
        self.notifications.push(N::METHOD);
    }
}

/// A table as one line, `M.name = { key = value, … }`: generated, and kept
/// short so that no run of lines restates the crate's own listing.
fn lua_table(out: &mut String, doc: &str, name: &str, entries: impl IntoIterator<Item = (String, String)>) {
    let entries: Vec<String> = entries.into_iter().map(|(key, value)| format!("{key} = {value}")).collect();
    let _ = writeln!(out, "--- {doc}\nM.{name} = {{ {} }}\n", entries.join(", "));
}

/// A status table as one line, `M.name = values { "a", "b" }`: each value is
/// its own key (`M.name.a == "a"`), written once.
fn lua_status_table(out: &mut String, doc: &str, name: &str, values: impl IntoIterator<Item = &'static str>) {
    let values: Vec<String> = values.into_iter().map(quoted).collect();
    let _ = writeln!(out, "--- {doc}\nM.{name} = values {{ {} }}\n", values.join(", "));
}

/// The Lua module `mino.protocol`: method names, statuses, decisions, error
/// codes and fixed messages.
pub fn lua() -> String {
    let mut methods = LuaMethods::default();
    crate::visit(&mut methods);

    let mut out = banner("--");
    out.push_str("local M = {}\n\n");
    out.push_str("--- A table whose keys are its values.\nlocal function values(list)\n  local t = {}\n  for _, v in ipairs(list) do\n    t[v] = v\n  end\n  return t\nend\n\n");
    lua_table(
        &mut out,
        "Client-to-server requests.",
        "method",
        methods.requests.iter().map(|m| (short_name(m), quoted(m))),
    );
    lua_table(
        &mut out,
        "Server-to-client notifications.",
        "notification",
        methods.notifications.iter().map(|m| (short_name(m), quoted(m))),
    );
    let turn: Vec<String> = method::TURN_NOTIFICATIONS.iter().map(|m| quoted(m)).collect();
    let _ = writeln!(
        out,
        "--- Every notification a turn emits, in the order a turn emits them.\nM.turn_notifications = {{ {} }}\n",
        turn.join(", ")
    );
    lua_status_table(&mut out, "Turn statuses.", "turn_status", TurnStatus::ALL.iter().map(|s| s.as_str()));
    lua_status_table(&mut out, "Tool statuses.", "tool_status", ToolStatus::ALL.iter().map(|s| s.as_str()));
    lua_status_table(
        &mut out,
        "Tools a call's `tool` names (absent: bash).",
        "tool_name",
        ToolName::ALL.iter().map(|s| s.as_str()),
    );
    lua_status_table(
        &mut out,
        "The read-only tools: shown as one line each.",
        "read_tool",
        ToolName::ALL.iter().filter(|t| t.is_read()).map(|s| s.as_str()),
    );
    lua_status_table(&mut out, "Decisions in mino/approval.", "decision", Decision::ALL.iter().map(|s| s.as_str()));
    lua_status_table(&mut out, "Approval modes.", "approval_mode", ApprovalMode::ALL.iter().map(|s| s.as_str()));
    let modes: Vec<String> = ApprovalMode::ALL.iter().map(|m| quoted(m.as_str())).collect();
    let _ = writeln!(
        out,
        "--- Approval modes in the protocol's order (a picker's).\nM.approval_modes = {{ {} }}\n",
        modes.join(", ")
    );
    lua_status_table(&mut out, "Sandbox modes.", "sandbox_mode", SandboxMode::ALL.iter().map(|s| s.as_str()));
    lua_table(
        &mut out,
        "Mino's own JSON-RPC error codes.",
        "errors",
        ErrorCode::ALL.iter().map(|c| (c.name().to_string(), c.code().to_string())),
    );
    lua_table(
        &mut out,
        "JSON-RPC's own error codes, and the two of the language-server lifecycle.",
        "jsonrpc_errors",
        jsonrpc_code::ALL.iter().map(|(name, code)| (name.to_string(), code.to_string())),
    );
    lua_table(
        &mut out,
        "Fixed sentences shown exactly as written.",
        "messages",
        message::ALL.iter().map(|(name, text)| (name.to_string(), quoted(text))),
    );
    out.push_str("return M\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_derived_as_the_clients_spell_them() {
        assert_eq!(short_name("mino/approvalRequest"), "approvalRequest");
        assert_eq!(short_name("mino/sessions/list"), "sessionsList");
        assert_eq!(short_name("mino/rules/list"), "rulesList");
        assert_eq!(lower_camel("ACKNOWLEDGEMENT_REQUIRED"), "acknowledgementRequired");
        assert_eq!(ts_message_suffix("ACKNOWLEDGEMENT_REQUIRED"), "_MESSAGE");
        assert_eq!(ts_message_suffix("ACKNOWLEDGEMENT_QUESTION"), "");
    }

    #[test]
    fn every_method_and_status_reaches_both_clients() {
        let ts = typescript();
        let lua = lua();
        for name in method::REQUESTS.iter().chain(method::NOTIFICATIONS) {
            assert!(ts.contains(&format!("'{name}'")), "{name} missing from the TypeScript");
            assert!(lua.contains(&format!("\"{name}\"")), "{name} missing from the Lua");
        }
        for status in ToolStatus::ALL {
            assert!(lua.contains(&format!("\"{}\"", status.as_str())), "{status:?}");
        }
        assert!(ts.contains("export type ToolStatus = "), "{ts}");
        assert!(ts.contains("export type RecoveryNotification = "), "{ts}");
        assert!(!ts.contains("bigint"), "sequence numbers are plain numbers: {ts}");
    }
}
