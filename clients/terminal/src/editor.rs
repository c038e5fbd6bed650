//! The question prompt on a capable terminal: rustyline's line editor
//! (history, editing keys), with bracketed paste, so that a pasted block of
//! lines is one question, and Tab completing a workspace path after `@`.
//! `@path` in a question attaches that file, see [`attach`].

use std::path::{Path, PathBuf};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Config, Context, Editor, Helper};

/// At most this many completions are offered (a huge directory stays quick).
const MAX_COMPLETIONS: usize = 200;
/// The most of one file a question carries.
pub const MAX_ATTACHED_FILE: usize = 64 * 1024;
/// The most all the files of one question carry together.
pub const MAX_ATTACHED_TOTAL: usize = 256 * 1024;

/// Completes `@path` against the workspace.
pub struct PathCompleter {
    root: PathBuf,
}

impl Completer for PathCompleter {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(complete_path(&self.root, line, pos))
    }
}

impl Hinter for PathCompleter {
    type Hint = String;
}
impl Highlighter for PathCompleter {}
impl Validator for PathCompleter {}
impl Helper for PathCompleter {}

/// Where the completions of the word before `pos` start, and them, when
/// that word is `@…`: entries of the workspace directory it names whose
/// names start with what follows its last `/` (hidden ones only when asked
/// for with a leading `.`); a directory ends with `/`.
pub fn complete_path(root: &Path, line: &str, pos: usize) -> (usize, Vec<Pair>) {
    let before = &line[..pos.min(line.len())];
    let start = before.rfind(char::is_whitespace).map_or(0, |at| at + 1);
    let Some(partial) = before[start..].strip_prefix('@') else {
        return (pos, Vec::new());
    };
    let (dir, prefix) = match partial.rfind('/') {
        Some(at) => (&partial[..=at], &partial[at + 1..]),
        None => ("", partial),
    };
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return (pos, Vec::new());
    };
    let mut found: Vec<Pair> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            let shown = if is_dir { format!("{name}/") } else { name };
            Some(Pair { display: shown.clone(), replacement: format!("{dir}{shown}") })
        })
        .take(MAX_COMPLETIONS)
        .collect();
    found.sort_by(|a, b| a.display.cmp(&b.display));
    (start + 1, found)
}

/// The line editor, moved to a blocking thread for each question.
pub struct LineEditor {
    editor: Option<Editor<PathCompleter, DefaultHistory>>,
}

/// What the question prompt produced.
pub enum Read {
    Line(String),
    Eof,
    Interrupt,
}

impl LineEditor {
    /// `None` if rustyline cannot drive this terminal.
    pub fn new(root: PathBuf) -> Option<LineEditor> {
        let config = Config::builder()
            .completion_type(CompletionType::List)
            .bracketed_paste(true)
            .auto_add_history(false)
            .max_history_size(1000)
            .ok()?
            .build();
        let mut editor = Editor::with_config(config).ok()?;
        editor.set_helper(Some(PathCompleter { root }));
        Some(LineEditor { editor: Some(editor) })
    }

    /// Reads one question (a paste, newlines and all, is part of it).
    pub async fn read(&mut self, prompt: &str) -> Read {
        let Some(mut editor) = self.editor.take() else {
            return Read::Eof;
        };
        let prompt = prompt.to_owned();
        let done = tokio::task::spawn_blocking(move || {
            let line = editor.readline(&prompt);
            (editor, line)
        })
        .await;
        let Ok((mut editor, line)) = done else {
            return Read::Eof;
        };
        let read = match line {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                Read::Line(line)
            }
            Err(ReadlineError::Interrupted) => Read::Interrupt,
            Err(_) => Read::Eof,
        };
        self.editor = Some(editor);
        read
    }
}

/// A question with the files it names as `@path` attached: the protocol's
/// question is text alone, so each file follows the question under a header
/// naming it, at most [`MAX_ATTACHED_FILE`] bytes of it and
/// [`MAX_ATTACHED_TOTAL`] in all. Also returns one note per `@path` for the
/// person (attached, cut, or why not).
pub fn attach(text: &str, root: &Path) -> (String, Vec<String>) {
    let mut question = text.to_owned();
    let mut notes = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut total = 0;
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else { continue };
        let path = path.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
        if path.is_empty() || seen.iter().any(|p| p == path) {
            continue;
        }
        seen.push(path.to_owned());
        let full = root.join(path);
        if !full.is_file() {
            // `@name` may just be a handle in prose: only say so when it looks like a path.
            if path.contains('/') || path.contains('.') {
                notes.push(format!("[@{path}: no such file in the workspace; not attached]"));
            }
            continue;
        }
        let bytes = match std::fs::read(&full) {
            Ok(b) => b,
            Err(e) => {
                notes.push(format!("[@{path}: could not be read ({e}); not attached]"));
                continue;
            }
        };
        let room = MAX_ATTACHED_FILE.min(MAX_ATTACHED_TOTAL.saturating_sub(total));
        if room == 0 {
            notes.push(format!("[@{path}: not attached; the question already carries {} KiB of files]", total / 1024));
            continue;
        }
        let mut cut = bytes.len().min(room);
        // Cut on a character boundary.
        while cut > 0 && cut < bytes.len() && std::str::from_utf8(&bytes[..cut]).is_err() {
            cut -= 1;
        }
        let Ok(content) = std::str::from_utf8(&bytes[..cut]) else {
            notes.push(format!("[@{path}: not text (not UTF-8); not attached]"));
            continue;
        };
        total += cut;
        let size = if cut < bytes.len() {
            notes.push(format!("[@{path}: attached the first {cut} of {} bytes]", bytes.len()));
            format!("first {cut} of {} bytes", bytes.len())
        } else {
            notes.push(format!("[@{path}: attached, {} bytes]", bytes.len()));
            format!("{} bytes", bytes.len())
        };
        let fence = if content.contains("```") { "~~~~" } else { "```" };
        question.push_str(&format!("\n\n[File {path} ({size}), attached with @{path}]\n{fence}\n{content}"));
        if !content.ends_with('\n') {
            question.push('\n');
        }
        question.push_str(fence);
    }
    (question, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_completes_workspace_paths_and_only_after_at() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("src")).expect("src");
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").expect("file");
        std::fs::write(dir.path().join("notes.txt"), "n\n").expect("file");
        std::fs::write(dir.path().join(".hidden"), "h\n").expect("file");
        let names = |line: &str| {
            let (start, found) = complete_path(dir.path(), line, line.len());
            (start, found.into_iter().map(|p| p.replacement).collect::<Vec<_>>())
        };
        assert_eq!(names("look at @no"), (9, vec!["notes.txt".to_owned()]));
        assert_eq!(names("@s"), (1, vec!["src/".to_owned()]));
        assert_eq!(names("@src/m"), (1, vec!["src/main.rs".to_owned()]));
        assert_eq!(names("@"), (1, vec!["notes.txt".to_owned(), "src/".to_owned()]));
        assert_eq!(names("@."), (1, vec![".hidden".to_owned()]));
        assert!(names("no at sign").1.is_empty());
    }

    #[test]
    fn attached_files_follow_the_question_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "alpha\n").expect("file");
        std::fs::write(dir.path().join("big.txt"), "x".repeat(MAX_ATTACHED_FILE + 10)).expect("file");
        std::fs::write(dir.path().join("bin.dat"), [0xff, 0xfe, 0x00]).expect("file");
        let (q, notes) = attach("Explain @a.txt, then @big.txt and @bin.dat; ask @bob", dir.path());
        assert!(q.starts_with("Explain @a.txt, then"), "{q}");
        assert!(q.contains("[File a.txt (6 bytes), attached with @a.txt]\n```\nalpha\n```"), "{q}");
        assert!(q.contains(&format!("[File big.txt (first {MAX_ATTACHED_FILE} of {} bytes)", MAX_ATTACHED_FILE + 10)));
        assert!(!q.contains("bin.dat ("), "{q}");
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(notes[2].contains("not text"), "{notes:?}");
        let (q, notes) = attach("no files here, mail me@example.com", dir.path());
        assert_eq!(q, "no files here, mail me@example.com");
        assert!(notes.is_empty());
    }
}
