//! `list_files` and `search`: a walk of the tree with ripgrep's own crates,
//! `ignore` (`.gitignore`, `.ignore`, hidden files skipped, as `rg`) and
//! `grep-searcher`/`grep-regex` (the regex engine and line search `rg`
//! uses), on as many threads as the machine has cores, as `rg` does.
//!
//! A file inside the workspace is opened beneath the workspace's directory
//! handle ([`Workspace::open_beneath`]), so an entry replaced by a link to
//! outside after the walk listed it is refused, never read; every file is
//! opened non-blocking and searched only if the open file is a regular
//! file (a FIFO or a device in the tree is skipped, never waited on).

use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use super::{cut_line, ReadOutcome, MAX_FILES, MAX_MATCHES, MAX_MATCH_LINE_CHARS, MAX_OUTPUT_BYTES};
use crate::edit::Workspace;

/// The text `search` keeps in memory across files before it only counts:
/// far more than it returns, so the files shown are chosen from many.
const KEPT_TEXT_BUDGET: usize = 4 * 1024 * 1024;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).min(12)
}

fn overrides(root: &Path, glob: Option<&str>) -> Result<Override, String> {
    let mut builder = OverrideBuilder::new(root);
    if let Some(glob) = glob {
        builder.add(glob).map_err(|e| format!("`{glob}` is not a valid glob: {e}."))?;
    }
    builder.build().map_err(|e| format!("the glob could not be used: {e}."))
}

fn walker(root: &Path, glob: Option<&str>) -> Result<ignore::WalkParallel, String> {
    let overrides = overrides(root, glob)?;
    // The standard filters are rg's defaults: hidden files, .gitignore
    // (inside a git repository), .ignore, git's exclude and global files.
    Ok(WalkBuilder::new(root).standard_filters(true).overrides(overrides).threads(threads()).build_parallel())
}

/// How a path is shown: relative to the session's directory inside it.
fn shown(workspace: &Workspace, path: &Path) -> String {
    workspace.display_path(path)
}

/// Runs `make`'s visitors over the walk; each thread's items are gathered
/// into one list when its visitor is dropped.
struct Gather<'a, T, F> {
    all: &'a Mutex<Vec<T>>,
    make: &'a F,
}

struct Visitor<'a, T, V> {
    all: &'a Mutex<Vec<T>>,
    local: Vec<T>,
    visit: V,
}

impl<'a, T: Send, V: FnMut(DirEntry, &mut Vec<T>) -> WalkState + Send> ParallelVisitor for Visitor<'a, T, V> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        match entry {
            Ok(entry) => (self.visit)(entry, &mut self.local),
            // An unreadable directory or a bad ignore file: skipped, as rg does.
            Err(_) => WalkState::Continue,
        }
    }
}

impl<T, V> Drop for Visitor<'_, T, V> {
    fn drop(&mut self) {
        if let Ok(mut all) = self.all.lock() {
            all.append(&mut self.local);
        }
    }
}

impl<'s, T, V, F> ParallelVisitorBuilder<'s> for Gather<'s, T, F>
where
    T: Send + 's,
    V: FnMut(DirEntry, &mut Vec<T>) -> WalkState + Send + 's,
    F: Fn() -> V,
{
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor { all: self.all, local: Vec::new(), visit: (self.make)() })
    }
}

fn gather<T: Send, V, F>(walk: ignore::WalkParallel, make: F) -> Vec<T>
where
    V: FnMut(DirEntry, &mut Vec<T>) -> WalkState + Send,
    F: Fn() -> V,
{
    let all = Mutex::new(Vec::new());
    walk.visit(&mut Gather { all: &all, make: &make });
    all.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(super) fn list_files(workspace: &Workspace, root: &Path, pattern: Option<&str>) -> ReadOutcome {
    let walk = match walker(root, pattern) {
        Ok(walk) => walk,
        Err(why) => return ReadOutcome::failed(why),
    };
    let mut paths: Vec<PathBuf> = gather(walk, || {
        |entry: DirEntry, out: &mut Vec<PathBuf>| {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                out.push(entry.into_path());
            }
            WalkState::Continue
        }
    });
    paths.sort_unstable();
    let total = paths.len();
    let mut body = String::new();
    let mut listed = 0usize;
    let mut cut = None;
    for path in &paths {
        if listed >= MAX_FILES {
            cut = Some("limit 1000 files");
            break;
        }
        let line = shown(workspace, path);
        if body.len() + line.len() + 1 > MAX_OUTPUT_BYTES {
            cut = Some("limit 64 KiB");
            break;
        }
        body.push_str(&line);
        body.push('\n');
        listed += 1;
    }
    let header = match cut {
        None if total == 0 => "no files (hidden and ignored files are not listed)".to_string(),
        None => format!("{total} files"),
        Some(why) => format!("{listed} of {total} files; {} left out ({why})", total - listed),
    };
    ReadOutcome::success(format!("{header}\n{body}"))
}

pub(super) struct SearchOptions<'a> {
    pub pattern: &'a str,
    pub glob: Option<&'a str>,
    pub context: usize,
    pub case_insensitive: bool,
}

/// One line of a file's search output.
struct Line {
    matched: bool,
    text: String,
}

/// What a search found in one file.
struct FileHits {
    path: PathBuf,
    /// The lines kept (matches with their context, `--` between groups).
    lines: Vec<Line>,
    /// Every matching line, kept or not.
    matches: u64,
}

struct Collect<'a> {
    shown: &'a str,
    lines: Vec<Line>,
    matches: u64,
    /// Text kept across every file, against [`KEPT_TEXT_BUDGET`].
    budget: &'a AtomicUsize,
    keeping: bool,
}

impl Collect<'_> {
    fn push(&mut self, matched: bool, number: Option<u64>, bytes: &[u8]) {
        if !self.keeping {
            return;
        }
        let kept_matches = self.lines.iter().filter(|l| l.matched).count();
        if kept_matches >= MAX_MATCHES {
            self.keeping = false;
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = cut_line(text, MAX_MATCH_LINE_CHARS);
        let sep = if matched { ':' } else { '-' };
        let line = format!("{}{sep}{}{sep}{text}", self.shown, number.unwrap_or(0));
        if self.budget.fetch_add(line.len(), Ordering::Relaxed) + line.len() > KEPT_TEXT_BUDGET {
            self.keeping = false;
            return;
        }
        self.lines.push(Line { matched, text: line });
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let mut number = mat.line_number();
        for line in mat.lines() {
            self.matches += 1;
            self.push(true, number, line);
            number = number.map(|n| n + 1);
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push(false, ctx.line_number(), ctx.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.keeping && !self.lines.is_empty() {
            self.lines.push(Line { matched: false, text: "--".to_string() });
        }
        Ok(true)
    }
}

/// Opens a file the walk found: beneath the workspace's handle when the
/// search is inside it; never blocking; `None` unless it is a regular file.
fn open_found(workspace: &Workspace, path: &Path, inside: bool) -> Option<File> {
    let file = if inside {
        let relative = path.strip_prefix(workspace.root()).ok()?;
        workspace.open_beneath(relative).ok()?
    } else {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
            .open(path)
            .ok()?
    };
    file.metadata().ok().filter(std::fs::Metadata::is_file).map(|_| file)
}

pub(super) fn search(workspace: &Workspace, root: &Path, inside: bool, options: &SearchOptions<'_>) -> ReadOutcome {
    let matcher: RegexMatcher = match RegexMatcherBuilder::new()
        .case_insensitive(options.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(options.pattern)
    {
        Ok(matcher) => matcher,
        Err(e) => {
            return ReadOutcome::failed(format!(
                "`{}` is not a valid regular expression (ripgrep's syntax): {e}",
                options.pattern
            ))
        }
    };
    let walk = match walker(root, options.glob) {
        Ok(walk) => walk,
        Err(why) => return ReadOutcome::failed(why),
    };
    let budget = AtomicUsize::new(0);
    let searched = AtomicU64::new(0);
    let context = options.context;
    let mut found: Vec<FileHits> = gather(walk, || {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            // As rg: a file with a NUL byte is binary and not searched further.
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .build();
        let (budget, searched) = (&budget, &searched);
        move |entry: DirEntry, out: &mut Vec<FileHits>| {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Some(file) = open_found(workspace, entry.path(), inside) else { return WalkState::Continue };
            searched.fetch_add(1, Ordering::Relaxed);
            let path_shown = shown(workspace, entry.path());
            let mut sink = Collect { shown: &path_shown, lines: Vec::new(), matches: 0, budget, keeping: true };
            if searcher.search_file(&matcher, &file, &mut sink).is_ok() && sink.matches > 0 {
                let (lines, matches) = (sink.lines, sink.matches);
                out.push(FileHits { path: entry.into_path(), lines, matches });
            }
            WalkState::Continue
        }
    });
    found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let total: u64 = found.iter().map(|f| f.matches).sum();
    let files = found.len();
    let mut body = String::new();
    let mut shown_matches = 0u64;
    let mut cut = None;
    'files: for (i, hits) in found.iter().enumerate() {
        if context > 0 && i > 0 && !body.is_empty() {
            body.push_str("--\n");
        }
        for line in &hits.lines {
            if line.matched && shown_matches >= MAX_MATCHES as u64 {
                cut = Some("limit 200 matching lines");
                break 'files;
            }
            if body.len() + line.text.len() + 1 > MAX_OUTPUT_BYTES {
                cut = Some("limit 64 KiB");
                break 'files;
            }
            body.push_str(&line.text);
            body.push('\n');
            shown_matches += u64::from(line.matched);
        }
        if (hits.lines.iter().filter(|l| l.matched).count() as u64) < hits.matches {
            // This file's own text stopped early (its lines, or the budget).
            cut.get_or_insert("limit 200 matching lines per file, or the memory budget");
        }
    }
    while body.ends_with("--\n") {
        body.truncate(body.len() - 3);
    }
    let searched = searched.load(Ordering::Relaxed);
    let noun = |n: usize| if n == 1 { "file" } else { "files" };
    let mut header = if total == 0 {
        format!("no matches in {searched} {} searched", noun(searched as usize))
    } else {
        let m = if total == 1 { "match" } else { "matches" };
        format!("{total} {m} in {files} {}", noun(files))
    };
    if shown_matches < total {
        let why = cut.unwrap_or("limit 200 matching lines");
        let _ = write!(header, "; {shown_matches} shown, {} left out ({why})", total - shown_matches);
    }
    ReadOutcome::success(format!("{header}\n{body}"))
}
