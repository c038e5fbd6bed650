//! The tidy check over the sources (run by `scripts/test tidy`, and by
//! `cargo test` like any test): every Rust module says what it is in a `//!`
//! line, ARCHITECTURE.md names only files and Rust items that exist, and no
//! method name or error code is written outside the protocol crate and the
//! files generated from it.
//!
//! Names are checked by reading the sources, not by compiling against them:
//! a `Type::member` must find `member` in a definition or `impl` block of a
//! type named `Type`; a `module::item` must find `item` in a file of that
//! module; `function::<N>` needs a generic `fn function<`; a path must exist.
//! A first segment the workspace does not define (`std`, `tokio`, an alias
//! like `wire`) is another crate's and not checked.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// Directories that hold no sources of Mino's: build output, installed
/// packages, test output, editor and tool state.
fn skipped(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "target" | "node_modules" | "test-output" | "out" | "dist")
}

/// Every file of the repository (relative paths), without [`skipped`] directories.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.expect("directory entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                if !skipped(&name) {
                    pending.push(path);
                }
            } else if kind.is_file() {
                found.push(path.strip_prefix(root).expect("under the root").to_path_buf());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_rust_module_says_what_it_is() {
    let root = root();
    let lacking: Vec<String> = files(&root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| {
            let text = std::fs::read_to_string(root.join(p)).expect("read a Rust file");
            !text.lines().any(|l| l.trim_start().starts_with("//!"))
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        lacking.is_empty(),
        "these Rust modules have no `//!` line; start each with one saying what it is for:\n{}",
        lacking.join("\n")
    );
}

/// The Rust sources, by relative path.
struct Sources {
    texts: Vec<(PathBuf, String)>,
    all: Vec<PathBuf>,
    /// Per type name, its definition and `impl` blocks.
    blocks: HashMap<String, Vec<String>>,
}

/// The type a line defines or implements (`struct A`, `impl<T> Trait for A<T> {`), if any.
fn type_of_line(line: &str) -> Option<&str> {
    let code = line.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
    let head = code.split('{').next().unwrap_or(code);
    for keyword in ["struct ", "enum ", "trait ", "union "] {
        if let Some(rest) = head.strip_prefix(keyword) {
            return Some(first_word(rest)).filter(|w| !w.is_empty());
        }
    }
    let rest = head.strip_prefix("impl")?;
    let rest = if rest.starts_with('<') { skip_generics(rest) } else { rest.trim_start() };
    let self_type = rest.rsplit(" for ").next().unwrap_or(rest).trim_start();
    let self_type = self_type.split('<').next().unwrap_or(self_type);
    let name = first_word(self_type.rsplit("::").next().unwrap_or(self_type));
    (!name.is_empty()).then_some(name)
}

impl Sources {
    fn read(root: &Path) -> Sources {
        let all = files(root);
        let texts = all
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .map(|p| (p.clone(), std::fs::read_to_string(root.join(p)).expect("read a Rust file")))
            .collect::<Vec<_>>();
        let mut blocks: HashMap<String, Vec<String>> = HashMap::new();
        for (_, text) in &texts {
            let mut offset = 0;
            for line in text.split_inclusive('\n') {
                if let Some(name) = type_of_line(line) {
                    blocks.entry(name.to_string()).or_default().push(block(&text[offset..]).to_string());
                }
                offset += line.len();
            }
        }
        Sources { texts, all, blocks }
    }

    /// The files of module `name`: `name.rs`, `name/mod.rs` and everything under a `name/` directory.
    fn module(&self, name: &str) -> Vec<&str> {
        let file = format!("{name}.rs");
        self.texts
            .iter()
            .filter(|(p, _)| {
                p.file_name().is_some_and(|f| f == file.as_str()) || p.components().any(|c| c.as_os_str() == name)
            })
            .map(|(_, t)| t.as_str())
            .collect()
    }

    /// Whether some file declares an inline `mod name {`.
    fn inline_module(&self, name: &str) -> Option<String> {
        let opening = format!("mod {name} {{");
        self.texts.iter().find_map(|(_, t)| t.find(&opening).map(|at| block(&t[at..]).to_string()))
    }

    /// The definition and `impl` blocks of a type named `name`.
    fn type_blocks(&self, name: &str) -> &[String] {
        self.blocks.get(name).map_or(&[], Vec::as_slice)
    }

    fn defines_anywhere(&self, name: &str) -> bool {
        let keywords = ["fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ", "mod ", "union "];
        self.texts.iter().any(|(_, t)| {
            keywords.iter().any(|k| {
                t.match_indices(k).any(|(at, _)| {
                    let before = t[..at].chars().next_back();
                    before.is_none_or(|c| !is_ident(c)) && first_word(&t[at + k.len()..]) == name
                })
            }) || t.contains(&format!(" as {name};"))
                || t.contains(&format!("{name}::"))
        })
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn first_word(text: &str) -> &str {
    let end = text.find(|c: char| !is_ident(c)).unwrap_or(text.len());
    &text[..end]
}

/// `text` after its leading `<…>` (nested).
fn skip_generics(text: &str) -> &str {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return text[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    text
}

/// From the start of `text` to the end of its first brace-matched block (or
/// the first `;` when that comes before any `{`: a unit or tuple struct).
fn block(text: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            ';' if depth == 0 => return &text[..=i],
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &text[..=i];
                }
            }
            _ => {}
        }
    }
    text
}

fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        before.is_none_or(|c| !is_ident(c)) && after.is_none_or(|c| !is_ident(c))
    })
}

/// The workspace's crates, as Rust names them.
const CRATES: &[&str] =
    &["mino_core", "mino_protocol", "mino_server", "mino_acp", "mino_framing", "mino_mock_model", "mino_e2e", "mino"];

/// Why ARCHITECTURE.md's `name` (a Rust path) names nothing, or `None` when it does.
fn missing_item(sources: &Sources, name: &str) -> Option<String> {
    let mut segments: Vec<&str> = name.split("::").collect();
    if segments.len() > 1 && CRATES.contains(&segments[0]) {
        segments.remove(0);
    }
    for pair in segments.windows(2) {
        let (outer, inner) = (pair[0], pair[1]);
        if inner.starts_with('<') {
            // `function::<N>`: a generic function.
            let generic_fn = format!("fn {outer}<");
            if !sources.texts.iter().any(|(_, t)| t.contains(&generic_fn)) {
                return Some(format!("no generic function `{outer}`"));
            }
            continue;
        }
        if outer.chars().next().is_some_and(char::is_uppercase) {
            let blocks = sources.type_blocks(outer);
            if blocks.is_empty() {
                // Another crate's type, an alias or a re-export: not ours to check.
                if sources.defines_anywhere(outer) {
                    continue;
                }
                return None;
            }
            if !blocks.iter().any(|b| has_word(b, inner)) {
                return Some(format!("`{outer}` has no `{inner}`"));
            }
        } else {
            let mut texts: Vec<String> = sources.module(outer).into_iter().map(str::to_string).collect();
            texts.extend(sources.inline_module(outer));
            if texts.is_empty() {
                // `std`, `tokio`, an alias such as `wire`: another crate's.
                return None;
            }
            if !texts.iter().any(|t| has_word(t, inner)) {
                return Some(format!("module `{outer}` has no `{inner}`"));
            }
        }
    }
    None
}

/// The backquoted spans of `markdown`, outside fenced code blocks.
fn code_spans(markdown: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Between the 1st and 2nd backquote, the 3rd and 4th, …; an unclosed one opens nothing.
        let parts: Vec<&str> = line.split('`').collect();
        spans.extend(parts.iter().skip(1).step_by(2).take((parts.len() - 1) / 2).map(|s| s.to_string()));
    }
    spans
}

/// A span that is a Rust path (`Type::member`, `module::item`, with `()` or
/// `::<N>`), without the call parentheses.
fn rust_path(span: &str) -> Option<&str> {
    let span = span.strip_suffix("()").unwrap_or(span);
    let span = match span.find('(') {
        Some(at) if span.ends_with(')') => &span[..at],
        _ => span,
    };
    let segments: Vec<&str> = span.split("::").collect();
    let ok = segments.len() > 1
        && segments.iter().enumerate().all(|(i, s)| {
            let ident = !s.is_empty() && s.chars().all(is_ident) && !s.starts_with(|c: char| c.is_ascii_digit());
            let turbofish = i == segments.len() - 1
                && s.starts_with('<')
                && s.ends_with('>')
                && s[1..s.len() - 1].chars().all(is_ident);
            ident || turbofish
        });
    ok.then_some(span)
}

const SOURCE_EXTENSIONS: &[&str] = &["rs", "ts", "js", "mjs", "lua", "sh"];

/// Why the span `path` names no file of the repository, or `None` when it
/// does or is not a repository path (a method name such as `mino/chat`, a
/// user's file such as `config.toml`).
fn missing_path(root: &Path, all: &[PathBuf], path: &str) -> Option<String> {
    // Globs, placeholders, home-relative paths and a user's dotfiles (`.nvim.lua`) are not the repository's.
    if path.starts_with('.') || path.contains(|c: char| c.is_whitespace() || "*<>{}$~:".contains(c)) {
        return None;
    }
    let trimmed = path.trim_end_matches('/');
    let extension = Path::new(trimmed).extension().and_then(|e| e.to_str());
    let source = extension.is_some_and(|e| SOURCE_EXTENSIONS.contains(&e));
    let top: BTreeSet<String> = all
        .iter()
        .filter_map(|p| p.components().next())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let first = trimmed.split('/').next().unwrap_or(trimmed);
    if trimmed.contains('/') && top.contains(first) && root.join(trimmed).exists() {
        return None;
    }
    if trimmed.contains('/') && top.contains(first) && !source {
        return Some(format!("`{path}` does not exist"));
    }
    if source {
        // A file named by its name or the end of its path (`handlers.rs`,
        // `core/agent.rs`, a crate's `tests/generated.rs`).
        let found = all.iter().any(|p| {
            let p = p.to_string_lossy();
            p == trimmed || p.ends_with(&format!("/{trimmed}"))
        });
        return (!found).then(|| format!("no file `{path}`"));
    }
    None
}

#[test]
fn architecture_names_only_what_exists() {
    let root = root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let sources = Sources::read(&root);
    let mut wrong: HashMap<String, String> = HashMap::new();
    for span in code_spans(&text) {
        if let Some(path) = rust_path(&span) {
            if let Some(why) = missing_item(&sources, path) {
                wrong.insert(span.clone(), why);
            }
        } else if let Some(why) = missing_path(&root, &sources.all, &span) {
            wrong.insert(span.clone(), why);
        }
    }
    let mut wrong: Vec<String> = wrong.into_iter().map(|(span, why)| format!("`{span}`: {why}")).collect();
    wrong.sort();
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md names what does not exist; correct the names or the text:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checks_catch_what_they_are_for() {
    let root = root();
    let sources = Sources::read(&root);
    // Names the document once had wrong, and their right forms.
    assert!(missing_item(&sources, "notify::<N>").is_some());
    assert!(missing_item(&sources, "message::<N>").is_none());
    assert!(missing_item(&sources, "Provider::from_env").is_some());
    assert!(missing_item(&sources, "Provider::from_setting").is_none());
    assert!(missing_item(&sources, "Config::from_env").is_none());
    assert!(missing_item(&sources, "mino_core::supervisor::FLAG").is_none());
    assert!(missing_item(&sources, "supervisor::NO_SUCH_ITEM").is_some());
    assert!(missing_path(&root, &sources.all, "server/core/src/no_such_file.rs").is_some());
    assert!(missing_path(&root, &sources.all, "server/core/src/config.rs").is_none());
    assert!(missing_path(&root, &sources.all, "no_such_module.rs").is_some());
    assert!(missing_path(&root, &sources.all, "mino/chat").is_none(), "a method name is no path");
}

/// Where the clients and the servers keep their production code; the
/// protocol crate and the files generated from it are where the wire's facts
/// are written, and tests may spell the wire out to check it.
const PRODUCTION_SOURCES: &[&str] = &[
    "server/core/src",
    "server/mino-server/src",
    "server/acp/src",
    "server/framing/src",
    "clients/terminal/src",
    "clients/nvim/lua",
    "clients/nvim/plugin",
    "vscode-extension/src",
    "vscode-extension/media",
    "vscode-extension/webview",
];

/// Generated from the protocol crate (`mino-protocol-gen`).
fn generated(path: &Path) -> bool {
    path.starts_with("vscode-extension/src/generated") || path == Path::new("clients/nvim/lua/mino/protocol.lua")
}

/// A source's code without its comments' lines and, in Rust, without the
/// `#[cfg(test)] mod` that closes a file.
fn production_code(path: &Path, text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut end = lines.len();
    if path.extension().is_some_and(|e| e == "rs") {
        for (i, line) in lines.iter().enumerate() {
            let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty()).map(|l| l.trim_start());
            if line.trim() == "#[cfg(test)]" && next.is_some_and(|n| n.starts_with("mod ")) {
                end = i;
                break;
            }
        }
    }
    lines[..end]
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start();
            !(t.starts_with("//") || t.starts_with("/*") || t.starts_with('*') || t.starts_with("--"))
        })
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

/// What in `line` writes a wire fact again: a method name as a string, or
/// an error code (Mino's or JSON-RPC's) as a number.
fn copied_facts(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for name in mino_protocol::method::REQUESTS.iter().chain(mino_protocol::method::NOTIFICATIONS) {
        if line.contains(&format!("\"{name}\"")) || line.contains(&format!("'{name}'")) {
            found.push(format!("the method name {name}"));
        }
    }
    let codes = mino_protocol::ErrorCode::ALL
        .iter()
        .map(|c| (c.name(), c.code()))
        .chain(mino_protocol::jsonrpc_code::ALL.iter().copied());
    for (name, code) in codes {
        let literal = code.to_string();
        let mut rest = line;
        while let Some(at) = rest.find(&literal) {
            let before = rest[..at].chars().next_back();
            let after = rest[at + literal.len()..].chars().next();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !after.is_some_and(|c| c.is_ascii_digit()) {
                found.push(format!("the error code {literal} ({name})"));
                break;
            }
            rest = &rest[at + literal.len()..];
        }
    }
    for word in status_and_decision_words() {
        // Backticks are left out: in Rust strings they mark prose for people
        // and the model (the instructions name `success`), not a value.
        for quote in ['"', '\''] {
            let quoted = format!("{quote}{word}{quote}");
            // `word: 'word'`: a label table's entry, whose key the type check
            // holds to the protocol's vocabulary and whose value is prose.
            let label = [format!("{word}: {quoted}"), format!("{word} = {quoted}")];
            if line.contains(&quoted) && !label.iter().any(|l| line.contains(l.as_str())) {
                found.push(format!("the wire word {word}"));
                break;
            }
        }
    }
    found
}

/// The words of the protocol's turn statuses, tool statuses and decisions a
/// client or server could copy, less those another vocabulary also uses
/// (there the check cannot tell one from the other): an MCP server's state,
/// a rule's effect, ACP's tool call status, the extension's server state
/// ("failed", "completed", "deny"). Those are named by constants too; this
/// check does not see a copy of them.
fn status_and_decision_words() -> Vec<&'static str> {
    use mino_protocol::{Decision, McpState, RuleEffect, ToolStatus, TurnStatus};
    const ACP_TOOL_CALL_STATUS: &[&str] = &["pending", "in_progress", "completed", "failed"];
    const EXTENSION_SERVER_STATE: &[&str] = &["starting", "ready", "stopped", "crashed", "failed"];
    let shared: Vec<&str> = McpState::ALL
        .iter()
        .map(|s| s.as_str())
        .chain(RuleEffect::ALL.iter().map(|e| e.as_str()))
        .chain(ACP_TOOL_CALL_STATUS.iter().copied())
        .chain(EXTENSION_SERVER_STATE.iter().copied())
        .collect();
    TurnStatus::ALL
        .iter()
        .map(|s| s.as_str())
        .chain(ToolStatus::ALL.iter().map(|s| s.as_str()))
        .chain(Decision::ALL.iter().map(|d| d.as_str()))
        .filter(|word| !shared.contains(word))
        .collect()
}

#[test]
fn wire_facts_are_written_only_in_the_protocol() {
    let root = root();
    let mut copies = Vec::new();
    for path in files(&root) {
        let source = path.extension().is_some_and(|e| ["rs", "ts", "js", "mjs", "lua", "vim"].iter().any(|x| e == *x));
        if !source || generated(&path) || !PRODUCTION_SOURCES.iter().any(|dir| path.starts_with(dir)) {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&path)).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        // The journal's file format (docs/journal.md) writes its own words for
        // statuses, once, in the core; the server converts them to the wire's
        // enums by an exhaustive match.
        let journal_format = ["server/core/src/tool_facts.rs", "server/core/src/journal/record.rs"]
            .iter()
            .any(|file| path == Path::new(file));
        for (number, line) in production_code(&path, &text) {
            for fact in copied_facts(&line) {
                if journal_format && fact.starts_with("the wire word") {
                    continue;
                }
                copies.push(format!("{}:{number}: {fact}", path.display()));
            }
        }
    }
    assert!(
        copies.is_empty(),
        "wire facts written outside server/protocol and its generated files; use the protocol's constants \
         (mino_protocol::method, error_code, jsonrpc_code, the vocabulary's enums; Notification, Request, ErrorCode, \
         JsonRpcCode, TOOL_STATUS, TURN_STATUS and DECISION in vscode-extension/src/generated/protocol.ts; \
         protocol.lua's tables in Neovim):\n{}",
        copies.join("\n")
    );
}

#[test]
fn the_wire_facts_check_sees_a_copy() {
    assert_eq!(copied_facts(r#"case 'mino/textDelta':"#), ["the method name mino/textDelta"]);
    assert_eq!(copied_facts(r#"request("mino/chat", params)"#), ["the method name mino/chat"]);
    assert_eq!(copied_facts("if (code === -32010) {"), ["the error code -32010 (ACKNOWLEDGEMENT_REQUIRED)"]);
    assert_eq!(copied_facts("M.INVALID_PARAMS = -32602"), ["the error code -32602 (INVALID_PARAMS)"]);
    assert!(copied_facts("code >= -32099 && code <= -32096").is_empty(), "not a code of the protocol");
    assert!(copied_facts("let x = 320100;").is_empty());
    assert_eq!(copied_facts("if (status === 'unknown') {"), ["the wire word unknown"]);
    assert_eq!(copied_facts(r#"elseif result.status == "not_executed" then"#), ["the wire word not_executed"]);
    assert_eq!(copied_facts("decide(card, id, 'allowSession')"), ["the wire word allowSession"]);
    assert!(copied_facts("    not_applied: 'not applied',").is_empty(), "a label for a word");
    assert!(copied_facts("    applied: 'applied',").is_empty(), "a label that is the word");
    assert!(copied_facts("status === TOOL_STATUS.unknown").is_empty());
    assert!(copied_facts("a result unknown to Mino").is_empty(), "prose");
    assert!(copied_facts(r#""see mino/chat's docs""#).is_empty(), "prose naming a method");
    let rust = "fn a() {}\n// \"mino/chat\"\n#[cfg(test)]\nmod tests {\n    const X: &str = \"mino/chat\";\n}\n";
    assert!(production_code(Path::new("a.rs"), rust).iter().all(|(_, l)| copied_facts(l).is_empty()));
}
