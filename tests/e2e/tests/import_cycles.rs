//! No room imports another that imports it back: read from the sources, in
//! every Rust crate of the workspace and in the VS Code extension.
//!
//! Rust: the modules of a crate are its files (`src/a.rs` and `src/a/mod.rs`
//! are `a`, `src/a/b.rs` is `a::b`). Under each module, its children are
//! the nodes, and a file inside child `A` that names (`use`, or a path in
//! code) something inside sibling `B` is an edge `A -> B`; paths to the
//! module itself or its ancestors are the parent's business and count at
//! the parent's level. So a folder may re-export its children and they may
//! use its items, but two siblings never lean on each other in a circle.
//! `#[cfg(test)] mod` blocks are left out: test code may reach anywhere.
//!
//! TypeScript: each file under `vscode-extension/src`, `webview` and `media` is a
//! node, every `import … from './x'` and `export … from './x'` (type-only
//! ones too) an edge.
//!
//! A circle is a strongly connected component of more than one node. Each
//! one still left is in [`ALLOWED`] with why; a circle not listed fails the
//! test, and so does a listed one that is gone or has changed, so the list
//! can only shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The circles still left: (crate or package, the module whose children
/// they are, the children in the circle, sorted).
const ALLOWED: &[(&str, &str, &[&str])] = &[];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// Every crate whose sources are checked, relative to the workspace root.
const RUST_CRATES: &[&str] = &[
    "server/core",
    "server/mino-server",
    "server/acp",
    "server/protocol",
    "server/framing",
    "clients/terminal",
    "tests/mock-model",
    "tests/bench",
    "tests/e2e",
];

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let root = workspace_root();
    let mut found: BTreeSet<(String, String, Vec<String>)> = BTreeSet::new();
    for krate in RUST_CRATES {
        for (parent, circle) in rust_circles(&root.join(krate)) {
            found.insert((krate.to_string(), parent, circle));
        }
    }
    for circle in ts_circles(&root.join("vscode-extension")) {
        found.insert(("vscode-extension".into(), String::new(), circle));
    }
    let allowed: BTreeSet<(String, String, Vec<String>)> = ALLOWED
        .iter()
        .map(|(k, p, c)| (k.to_string(), p.to_string(), c.iter().map(|s| s.to_string()).collect()))
        .collect();
    let new: Vec<_> = found.difference(&allowed).collect();
    let gone: Vec<_> = allowed.difference(&found).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "import circles differ from the allowlist in tests/e2e/tests/import_cycles.rs.\n\
         New circles (break them by moving what both sides share into a leaf module): {new:#?}\n\
         Listed circles that are gone or changed (remove or update their line in ALLOWED): {gone:#?}"
    );
}

#[test]
fn the_check_sees_a_circle_and_a_one_way_edge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("room")).expect("mkdir");
    let write = |path: &str, text: &str| std::fs::write(src.join(path), text).expect("write");
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod room;\npub use a::X;\n");
    write("a.rs", "use crate::b::Y; // crate::c::Z in a comment is no edge\npub struct X;\n");
    write("b.rs", "pub struct Y;\nfn f() { let _ = crate::a::X; let _ = \"crate::c::Z\"; }\n");
    write("c.rs", "#[cfg(test)]\nmod tests {\n    use crate::a::X;\n}\n");
    write("room/mod.rs", "mod inner;\nmod other;\nmod third;\npub use inner::I;\npub struct Shared;\n");
    write("room/inner.rs", "use super::{other::{self, O}, Shared};\npub struct I;\n");
    write("room/other.rs", "use super::Shared as S;\npub struct O;\n");
    // `super::I` is inner's, re-exported: an edge to inner, closing a circle.
    write("room/third.rs", "use super::{I, Shared};\n");
    assert_eq!(
        rust_circles(dir.path()),
        vec![(String::new(), vec!["a".to_string(), "b".to_string()])],
        "a -> b -> a is a circle; room/ has edges one way only"
    );
    write("room/other.rs", "use super::I;\npub struct O;\n");
    assert_eq!(
        rust_circles(dir.path()),
        vec![
            (String::new(), vec!["a".to_string(), "b".to_string()]),
            ("room".to_string(), vec!["inner".to_string(), "other".to_string()])
        ],
        "other reaches inner through the re-export"
    );
}

// ---- Rust ----

/// The circles of one crate: (parent module path, its children in the circle).
fn rust_circles(krate: &Path) -> Vec<(String, Vec<String>)> {
    let src = krate.join("src");
    let has_lib = src.join("lib.rs").exists();
    let mut modules: BTreeMap<Vec<String>, PathBuf> = BTreeMap::new();
    collect_rust(&src, &src, has_lib, &mut modules);
    let code: BTreeMap<&Vec<String>, String> = modules
        .iter()
        .map(|(module, file)| (module, strip_rust(&std::fs::read_to_string(file).expect("source file"))))
        .collect();
    // What each module re-exports (`pub use`), so `crate::MinoHome` is an
    // edge to `home`, not to the crate root.
    let mut reexports: Reexports = BTreeMap::new();
    for (module, code) in &code {
        for path in referenced_paths(&public_uses(code), module, &modules) {
            if let Some(name) = path.last() {
                reexports.entry((*module).clone()).or_default().insert(name.clone(), path.clone());
            }
        }
    }
    // For each parent: edges between its children.
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (module, code) in &code {
        let module = *module;
        for path in referenced_paths(code, module, &modules) {
            let target = resolve(&path, &modules, &reexports, 0);
            // The deepest common ancestor: the level at which the edge counts.
            let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common < module.len() && common < target.len() {
                graphs
                    .entry(module[..common].to_vec())
                    .or_default()
                    .entry(module[common].clone())
                    .or_default()
                    .insert(target[common].clone());
            }
        }
    }
    let mut circles = Vec::new();
    for (parent, graph) in graphs {
        for circle in components(&graph) {
            circles.push((parent.join("::"), circle));
        }
    }
    circles
}

fn collect_rust(dir: &Path, src: &Path, has_lib: bool, out: &mut BTreeMap<Vec<String>, PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(src).expect("under src");
        if path.is_dir() {
            if rel != Path::new("bin") {
                collect_rust(&path, src, has_lib, out);
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        let last = parts.pop().expect("a file name");
        let stem = last.trim_end_matches(".rs").to_string();
        match stem.as_str() {
            "lib" if parts.is_empty() => {}
            // A binary beside a library is a crate of its own, reaching the library by its name.
            "main" if parts.is_empty() && has_lib => continue,
            "main" if parts.is_empty() => {}
            "mod" => {}
            _ => parts.push(stem),
        }
        out.insert(parts, path);
    }
}

/// Source without comments, string and character literals, and
/// `#[cfg(test)]` modules.
fn strip_rust(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|&c| c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body = 2 + hashes;
            i += body + rest[body..].find(&close).map_or(rest.len() - body, |e| e + close.len());
            out.push_str("\"\"");
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            out.push_str("\"\"");
        } else if bytes[i] == b'\'' && char_literal_len(rest).is_some() {
            i += char_literal_len(rest).unwrap_or(1);
            out.push_str("' '");
        } else {
            let c = rest.chars().next().expect("a character");
            out.push(c);
            i += c.len_utf8();
        }
    }
    remove_test_modules(&out)
}

/// `'x'`, `'\n'`, `'\u{1F600}'`: a character literal's length, not a lifetime's.
fn char_literal_len(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices().skip(1);
    let (_, first) = chars.next()?;
    if first == '\\' {
        return rest[2..].find('\'').map(|e| e + 3);
    }
    let (at, second) = chars.next()?;
    (second == '\'').then_some(at + 1)
}

fn remove_test_modules(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = &out[at..];
        let Some(open) = after.find('{') else { break };
        let head = &after["#[cfg(test)]".len()..open];
        let end = if head.split_whitespace().any(|w| w == "mod") {
            let mut depth = 0;
            let mut end = after.len();
            for (k, c) in after[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            end
        } else {
            "#[cfg(test)]".len()
        };
        out.replace_range(at..at + end, "");
    }
    out
}

/// Module paths named in `code` of `module`, as absolute segment lists.
fn referenced_paths(code: &str, module: &[String], modules: &BTreeMap<Vec<String>, PathBuf>) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let absolute = |path: &[String]| -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => {
                let mut base = module.to_vec();
                base.pop()?;
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            // A child of this module named without `self::` (a `use` in lib.rs or mod.rs).
            name => {
                let mut child = module.to_vec();
                child.push(name.to_string());
                if !modules.contains_key(&child) {
                    return None;
                }
                child.extend(rest.iter().cloned());
                return Some(child);
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    };
    // `use` trees, braces expanded.
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let stmt = &rest[at + 3..];
        let Some(end) = stmt.find(';') else { break };
        for path in expand_use(stmt[..end].trim()) {
            paths.extend(absolute(&path));
        }
        rest = &stmt[end..];
    }
    // Paths in code: `crate::a::b`, `super::a`, `self::a`.
    for start in ["crate", "super", "self"] {
        let mut rest = code;
        while let Some(at) = find_word(rest, start) {
            let mut segments = vec![start.to_string()];
            let mut tail = &rest[at + start.len()..];
            while let Some(next) = tail.trim_start().strip_prefix("::") {
                let next = next.trim_start();
                let name: String = next.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if name.is_empty() {
                    break;
                }
                tail = &next[name.len()..];
                segments.push(name);
            }
            if segments.len() > 1 {
                paths.extend(absolute(&segments));
            }
            rest = tail;
        }
    }
    paths
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let at = from + at;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if boundary(before) && boundary(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `a::{b, c::{self, D}}` -> `a::b`, `a::c`, `a::c::D`.
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    // `X as Y` names X: the alias goes, what follows it (`,` `}`) stays.
    let mut words: Vec<String> = Vec::new();
    let mut alias = false;
    for word in tree.split_whitespace() {
        if alias {
            words.push(word.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_').to_string());
            alias = false;
        } else if word == "as" {
            alias = true;
        } else {
            words.push(word.to_string());
        }
    }
    let tree: String = words.concat();
    let mut out = Vec::new();
    expand_into(&tree, Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let mut base = prefix.clone();
        base.extend(tree[..open].split("::").filter(|s| !s.is_empty()).map(String::from));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        for part in split_top_level(inner) {
            expand_into(part, base.clone(), out);
        }
        return;
    }
    let mut path = prefix;
    for segment in tree.split("::").filter(|s| !s.is_empty() && *s != "*") {
        if segment != "self" || path.is_empty() {
            path.push(segment.to_string());
        }
    }
    if !path.is_empty() {
        out.push(path);
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Per module, each name it re-exports and the path it stands for.
type Reexports = BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>;

/// The `pub use` statements of `code` (any `pub(…)` too), as `use` statements.
fn public_uses(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "pub") {
        let tail = rest[at + 3..].trim_start();
        let tail = match tail.strip_prefix('(') {
            Some(inner) => inner.split_once(')').map_or("", |(_, after)| after).trim_start(),
            None => tail,
        };
        if tail.starts_with("use ") {
            if let Some(end) = tail.find(';') {
                out.push_str(&tail[..=end]);
                out.push('\n');
            }
        }
        rest = &rest[at + 3..];
    }
    out
}

/// The deepest module a path reaches, through re-exports.
fn resolve(
    path: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
    reexports: &Reexports,
    depth: u32,
) -> Vec<String> {
    let module =
        (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains_key(p)).unwrap_or_default();
    let through = path.get(module.len()).and_then(|name| reexports.get(&module)?.get(name));
    match through {
        Some(target) if depth < 8 && target.as_slice() != path => {
            let mut target = target.clone();
            target.extend(path[module.len() + 1..].iter().cloned());
            resolve(&target, modules, reexports, depth + 1)
        }
        _ => module,
    }
}

// ---- TypeScript ----

fn ts_circles(package: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    for dir in ["src", "webview", "media"] {
        collect_ts(&package.join(dir), &mut files);
    }
    let name =
        |path: &Path| path.strip_prefix(package).expect("in the package").with_extension("").display().to_string();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let code = strip_ts(&std::fs::read_to_string(file).expect("source file"));
        let from = name(file);
        for spec in ts_specifiers(&code) {
            let target = file.parent().expect("a directory").join(&spec);
            let target = normalise(&target);
            let found = ["ts", "js", "mts", "tsx"]
                .iter()
                .map(|ext| target.with_extension(ext))
                .chain([target.join("index.ts")])
                .find(|p| files.contains(p));
            if let Some(found) = found {
                graph.entry(from.clone()).or_default().insert(name(&found));
            }
        }
    }
    components(&graph)
}

fn collect_ts(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "node_modules") {
                collect_ts(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "ts" || e == "mts" || e == "tsx")
            && !path.to_string_lossy().ends_with(".d.ts")
        {
            out.push(normalise(&path));
        }
    }
}

fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn strip_ts(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if rest.starts_with("//") {
            rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
        } else if rest.starts_with("/*") {
            rest = &rest[rest.find("*/").map_or(rest.len(), |e| e + 2)..];
        } else {
            let c = rest.chars().next().expect("a character");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The relative module specifiers of `from '…'` clauses and `import('…')`.
fn ts_specifiers(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for marker in ["from", "import"] {
        let mut rest = code;
        while let Some(at) = find_word(rest, marker) {
            let tail = rest[at + marker.len()..].trim_start();
            let tail = tail.strip_prefix('(').unwrap_or(tail).trim_start();
            if let Some(quote) = tail.chars().next().filter(|c| *c == '\'' || *c == '"') {
                if let Some(end) = tail[1..].find(quote) {
                    let spec = &tail[1..1 + end];
                    if spec.starts_with("./") || spec.starts_with("../") {
                        out.push(spec.to_string());
                    }
                }
            }
            rest = &rest[at + marker.len()..];
        }
    }
    out
}

// ---- Graphs ----

/// Strongly connected components of more than one node (Tarjan), each sorted.
fn components(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}
