//! The model's markdown, rendered for a colour terminal as it streams.
//!
//! Text appears as it arrives, plain; each line, once complete, is parsed
//! (pulldown-cmark for headings, lists, quotes, emphasis, code spans and
//! links; fenced code blocks highlighted by syntect's grammars) and, where
//! that changes anything, written again over its plain self. A line never
//! completed stays plain. The text is made [`printable`] before it is
//! parsed, so nothing the model writes can emit control sequences of its
//! own; the only escapes written are the styles chosen here.
//!
//! Only on a capable terminal with colour (not with `NO_COLOR`, not to a
//! pipe): elsewhere the text is shown as it came.

use std::sync::OnceLock;

use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
use syntect::parsing::{ParseState, ScopeStack, SyntaxSet};

use crate::term::printable;

/// Longer lines are not highlighted (a grammar's regexes on a huge line can be slow).
const MAX_HIGHLIGHTED_LINE: usize = 4096;

const BOLD: &str = "\x1b[1m";
const NOT_BOLD: &str = "\x1b[22m";
const ITALIC: &str = "\x1b[3m";
const NOT_ITALIC: &str = "\x1b[23m";
const UNDERLINE: &str = "\x1b[4m";
const NOT_UNDERLINE: &str = "\x1b[24m";
const DIM: &str = "\x1b[2m";
const CYAN: &str = "\x1b[36m";
const DEFAULT_FG: &str = "\x1b[39m";
const RESET: &str = "\x1b[0m";

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// An open fenced code block.
struct Code {
    /// ``` or ~~~ (as long as the opening fence).
    fence: String,
    parse: Option<ParseState>,
    stack: ScopeStack,
}

/// The renderer of one answer.
pub struct Markdown {
    code: Option<Code>,
    /// The current line's text so far, as shown (made printable).
    line: String,
    /// Columns of it already written plain.
    written: usize,
    /// The column the line started at (after `Assistant> `).
    start_col: usize,
}

impl Default for Markdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Markdown {
    pub fn new() -> Markdown {
        Markdown { code: None, line: String::new(), written: 0, start_col: 0 }
    }

    /// The line being written starts at `col` (a prefix is before it).
    pub fn line_starts_at(&mut self, col: usize) {
        if self.line.is_empty() {
            self.start_col = col;
        }
    }

    /// Something else was written on its own line: the current line ends as it is.
    pub fn break_line(&mut self) {
        self.line.clear();
        self.written = 0;
        self.start_col = 0;
    }

    /// What to write for `delta` on a terminal `width` columns wide.
    pub fn push(&mut self, delta: &str, width: Option<usize>) -> String {
        let delta = printable(delta);
        let mut out = String::new();
        let mut rest: &str = &delta;
        while let Some(at) = rest.find('\n') {
            let piece = &rest[..at];
            self.line.push_str(piece);
            let rendered = self.render_line();
            if rendered == self.line {
                out.push_str(piece);
            } else {
                out.push_str(&self.rewrite(width));
                out.push_str(&rendered);
            }
            out.push('\n');
            self.line.clear();
            self.written = 0;
            self.start_col = 0;
            rest = &rest[at + 1..];
        }
        if !rest.is_empty() {
            self.line.push_str(rest);
            self.written += columns(rest);
            out.push_str(rest);
        }
        out
    }

    /// At the end of the answer: the last line, if it had no newline, rendered.
    pub fn finish(&mut self, width: Option<usize>) -> String {
        if self.line.is_empty() {
            return String::new();
        }
        let rendered = self.render_line();
        let out = if rendered == self.line { String::new() } else { format!("{}{rendered}", self.rewrite(width)) };
        self.break_line();
        out
    }

    /// Moves back to where the current line started, and clears from there.
    fn rewrite(&self, width: Option<usize>) -> String {
        if self.written == 0 {
            return String::new();
        }
        let mut out = String::new();
        let end = self.start_col + self.written;
        if let Some(w) = width {
            // The cursor sits after the last column written; a line that
            // filled its last row exactly leaves it at that row's end.
            let up = (end.saturating_sub(1)) / w;
            if up > 0 {
                out.push_str(&format!("\x1b[{up}A"));
            }
        }
        out.push('\r');
        if self.start_col > 0 {
            out.push_str(&format!("\x1b[{}C", self.start_col));
        }
        out.push_str("\x1b[J");
        out
    }

    /// The current (complete) line, styled.
    fn render_line(&mut self) -> String {
        let line = self.line.clone();
        let trimmed = line.trim_start();
        if let Some(code) = &mut self.code {
            let t = trimmed.trim_end();
            if t.starts_with(&code.fence) && t.chars().all(|c| c == code.fence.as_bytes()[0] as char) {
                self.code = None;
                return format!("{DIM}{line}{RESET}");
            }
            return highlight(code, &line);
        }
        for marker in ["```", "~~~"] {
            if trimmed.starts_with(marker) {
                let fence: String = trimmed.chars().take_while(|c| marker.starts_with(*c)).collect();
                let lang = trimmed[fence.len()..].split_whitespace().next().unwrap_or("");
                let set = syntaxes();
                let parse = (!lang.is_empty()).then(|| set.find_syntax_by_token(lang)).flatten().map(ParseState::new);
                self.code = Some(Code { fence, parse, stack: ScopeStack::new() });
                return format!("{DIM}{line}{RESET}");
            }
        }
        // An indented line: code or a list's continuation; as it is.
        if line.starts_with("    ") || line.starts_with('\t') || trimmed.is_empty() {
            return line;
        }
        inline(&line)
    }
}

/// One line of prose rendered: a heading bold, a list item with a bullet,
/// a quote behind a bar, a rule as a line, and the inline styles.
fn inline(line: &str) -> String {
    let indent = &line[..line.len() - line.trim_start().len()];
    let mut out = String::from(indent);
    let mut lists: Vec<Option<u64>> = Vec::new();
    for event in Parser::new(line) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                out.push_str(BOLD);
                if level == HeadingLevel::H1 {
                    out.push_str(UNDERLINE);
                }
            }
            Event::End(TagEnd::Heading(_)) => out.push_str(RESET),
            Event::Start(Tag::List(first)) => lists.push(first),
            Event::End(TagEnd::List(_)) => {
                lists.pop();
            }
            Event::Start(Tag::Item) => match lists.last_mut() {
                Some(Some(n)) => {
                    out.push_str(&format!("{n}. "));
                    *n += 1;
                }
                _ => out.push_str("• "),
            },
            Event::Start(Tag::BlockQuote(_)) => out.push_str(&format!("{DIM}│{RESET} ")),
            Event::Rule => out.push_str(&format!("{DIM}{}{RESET}", "─".repeat(24))),
            Event::Start(Tag::Strong) => out.push_str(BOLD),
            Event::End(TagEnd::Strong) => out.push_str(NOT_BOLD),
            Event::Start(Tag::Emphasis) => out.push_str(ITALIC),
            Event::End(TagEnd::Emphasis) => out.push_str(NOT_ITALIC),
            Event::Start(Tag::Link { .. }) => out.push_str(UNDERLINE),
            Event::End(TagEnd::Link) => out.push_str(NOT_UNDERLINE),
            Event::Code(code) => out.push_str(&format!("{CYAN}{code}{DEFAULT_FG}")),
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => out.push_str(&text),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            _ => {}
        }
    }
    out
}

/// A line of code coloured by its grammar's scopes, in the terminal's own
/// palette (so a light or dark theme keeps its contrast).
fn highlight(code: &mut Code, line: &str) -> String {
    let Some(parse) = code.parse.as_mut().filter(|_| line.len() <= MAX_HIGHLIGHTED_LINE) else {
        return line.to_owned();
    };
    let with_newline = format!("{line}\n");
    let Ok(ops) = parse.parse_line(&with_newline, syntaxes()) else {
        return line.to_owned();
    };
    // Runs of one colour, merged so each gets one pair of codes.
    let mut runs: Vec<(Option<&'static str>, String)> = Vec::new();
    let mut push = |text: &str, colour: Option<&'static str>| match runs.last_mut() {
        Some((c, run)) if *c == colour => run.push_str(text),
        _ => runs.push((colour, text.to_owned())),
    };
    let mut at = 0;
    for (pos, op) in ops {
        let pos = pos.min(line.len());
        if pos > at {
            push(&line[at..pos], colour_of(&code.stack));
            at = pos;
        }
        if code.stack.apply(&op).is_err() {
            return line.to_owned();
        }
    }
    if at < line.len() {
        push(&line[at..], colour_of(&code.stack));
    }
    let mut out = String::with_capacity(line.len() + 32);
    for (colour, text) in runs {
        match colour {
            Some(colour) => out.push_str(&format!("{colour}{text}{RESET}")),
            None => out.push_str(&text),
        }
    }
    out
}

/// The innermost scope that has a colour decides.
fn colour_of(stack: &ScopeStack) -> Option<&'static str> {
    const COLOURS: &[(&str, &str)] = &[
        ("comment", "\x1b[2m"),
        ("string", "\x1b[32m"),
        ("constant.numeric", "\x1b[33m"),
        ("constant.language", "\x1b[33m"),
        ("constant.character", "\x1b[33m"),
        ("keyword", "\x1b[35m"),
        ("storage", "\x1b[35m"),
        ("entity.name.function", "\x1b[34m"),
        ("support.function", "\x1b[34m"),
        ("entity.name.type", "\x1b[36m"),
        ("entity.name.class", "\x1b[36m"),
        ("support.type", "\x1b[36m"),
    ];
    stack.as_slice().iter().rev().find_map(|scope| {
        let name = scope.build_string();
        COLOURS.iter().find(|(prefix, _)| name.starts_with(prefix)).map(|(_, c)| *c)
    })
}

/// Columns a piece of one line takes (a tab counted as one: close enough
/// for moving back over a line that wrapped).
fn columns(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str) -> String {
        let mut md = Markdown::new();
        let mut out = md.push(text, Some(80));
        out.push_str(&md.finish(Some(80)));
        out
    }

    #[test]
    fn prose_without_markdown_is_left_alone() {
        assert_eq!(render("Just words, no markup.\nTwo lines.\n"), "Just words, no markup.\nTwo lines.\n");
    }

    #[test]
    fn headings_lists_emphasis_and_code_spans_are_styled() {
        let out = render("# Title\n- **bold** and `code`\n1. first\n> quoted\n");
        assert!(out.contains(&format!("{BOLD}{UNDERLINE}Title{RESET}\n")), "{out:?}");
        assert!(out.contains(&format!("• {BOLD}bold{NOT_BOLD} and {CYAN}code{DEFAULT_FG}\n")), "{out:?}");
        assert!(out.contains("1. first\n"), "{out:?}");
        assert!(out.contains("│"), "{out:?}");
        assert!(!out.contains("**"), "{out:?}");
    }

    #[test]
    fn a_fenced_block_is_highlighted_by_its_language() {
        let out = render("```rust\nfn main() { let s = \"hi\"; }\n```\nafter\n");
        assert!(out.contains("\x1b[35mfn"), "the keyword is coloured: {out:?}");
        assert!(out.contains("\x1b[32m\"hi"), "the string is coloured: {out:?}");
        assert!(out.ends_with("after\n"), "the block is closed: {out:?}");
    }

    #[test]
    fn a_line_streamed_in_pieces_is_written_plain_then_rewritten_once_complete() {
        let mut md = Markdown::new();
        md.line_starts_at(11);
        assert_eq!(md.push("Some **bo", Some(80)), "Some **bo");
        let out = md.push("ld** text\nnext", Some(80));
        // Back to column 12 of the same row, cleared, then the styled line.
        assert!(out.starts_with("\r\x1b[11C\x1b[J"), "{out:?}");
        assert!(out.contains(&format!("Some {BOLD}bold{NOT_BOLD} text\nnext")), "{out:?}");
        // A wrapped line goes up the rows it took.
        let mut md = Markdown::new();
        md.push(&format!("{} **x", "a".repeat(100)), Some(40));
        assert!(md.push("**\n", Some(40)).starts_with("\x1b[2A\r\x1b[J"));
    }

    #[test]
    fn the_models_control_sequences_stay_visible() {
        let out = render("**\x1b[8mhidden**\n");
        assert!(out.contains("^[[8mhidden"), "{out:?}");
        assert!(!out.contains("\x1b[8m"), "{out:?}");
    }
}
