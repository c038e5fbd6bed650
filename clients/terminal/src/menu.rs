//! A choice menu for questions that let something act (approvals, a model
//! the service does not list): ↑/↓ move, Enter takes the highlighted
//! choice, and the old answers typed as text (`y`, `n: reason`, `a`…) still
//! work, Enter sending what was typed.
//!
//! Safety, as for the line prompts: the menu starts on the declining
//! choice, input typed before it appeared is flushed once the terminal is in
//! raw mode (so nothing typed ahead can answer it), and a paste is dropped
//! (bracketed paste marks it) rather than read as keys.

use std::io::Write;

use crate::term;

pub struct Choice {
    /// The answer typed for it (`y`, `n`, `a`…), shown beside it.
    pub key: &'static str,
    pub label: &'static str,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Picked {
    /// The highlighted choice, by index.
    Choice(usize),
    /// Text typed and sent with Enter (interpreted as the line prompt's answer).
    Typed(String),
    /// Ctrl+C.
    Interrupt,
    /// Ctrl+D, or the end of input.
    Eof,
}

/// The keys that move the highlight, or a key that is text.
#[derive(Debug, PartialEq, Eq)]
enum Key {
    Up,
    Down,
    Enter,
    Backspace,
    Interrupt,
    Eof,
    Text(char),
    /// Anything else (other escape sequences, a paste): ignored.
    Ignored,
}

/// Splits what was read into keys; an incomplete sequence at the end stays
/// in `buf` for the next read.
fn keys(buf: &mut Vec<u8>, in_paste: &mut bool) -> Vec<Key> {
    const PASTE_START: &[u8] = b"\x1b[200~";
    const PASTE_END: &[u8] = b"\x1b[201~";
    let mut out = Vec::new();
    let mut i = 0;
    while i < buf.len() {
        let rest = &buf[i..];
        if *in_paste {
            match rest.windows(PASTE_END.len()).position(|w| w == PASTE_END) {
                Some(at) => {
                    *in_paste = false;
                    i += at + PASTE_END.len();
                    out.push(Key::Ignored);
                }
                None => {
                    // Keep a possible start of the end marker.
                    let keep = rest.len().min(PASTE_END.len() - 1);
                    i = buf.len() - keep;
                    break;
                }
            }
            continue;
        }
        match rest[0] {
            0x1b => {
                if rest.len() < 2 {
                    break;
                }
                if rest.starts_with(PASTE_START) {
                    *in_paste = true;
                    i += PASTE_START.len();
                    continue;
                }
                if rest[1] != b'[' && rest[1] != b'O' {
                    out.push(Key::Ignored);
                    i += 1;
                    continue;
                }
                // CSI/SS3: parameters, then one final byte in @..~.
                // Unfinished: wait for the rest.
                let Some(end) = rest[2..].iter().position(|b| (0x40..=0x7e).contains(b)) else { break };
                let seq = &rest[..end + 3];
                out.push(match seq {
                    b"\x1b[A" | b"\x1bOA" => Key::Up,
                    b"\x1b[B" | b"\x1bOB" => Key::Down,
                    _ => Key::Ignored,
                });
                i += seq.len();
            }
            b'\r' | b'\n' => {
                out.push(Key::Enter);
                i += 1;
            }
            0x7f | 0x08 => {
                out.push(Key::Backspace);
                i += 1;
            }
            0x03 => {
                out.push(Key::Interrupt);
                i += 1;
            }
            0x04 => {
                out.push(Key::Eof);
                i += 1;
            }
            b if b < 0x20 => {
                out.push(Key::Ignored);
                i += 1;
            }
            _ => {
                // One UTF-8 character.
                let len = match rest[0] {
                    b if b >= 0xf0 => 4,
                    b if b >= 0xe0 => 3,
                    b if b >= 0xc0 => 2,
                    _ => 1,
                };
                if rest.len() < len {
                    break;
                }
                match std::str::from_utf8(&rest[..len]).ok().and_then(|s| s.chars().next()) {
                    Some(c) => out.push(Key::Text(c)),
                    None => out.push(Key::Ignored),
                }
                i += len;
            }
        }
    }
    buf.drain(..i);
    out
}

/// The menu's state, apart from the terminal.
struct Menu<'a> {
    choices: &'a [Choice],
    selected: usize,
    typed: String,
}

impl Menu<'_> {
    /// Applies one key; `Some` when the menu is answered.
    fn key(&mut self, key: Key) -> Option<Picked> {
        match key {
            Key::Up => {
                self.typed.clear();
                self.selected = self.selected.checked_sub(1).unwrap_or(self.choices.len() - 1);
            }
            Key::Down => {
                self.typed.clear();
                self.selected = (self.selected + 1) % self.choices.len();
            }
            Key::Enter if self.typed.trim().is_empty() => return Some(Picked::Choice(self.selected)),
            Key::Enter => return Some(Picked::Typed(std::mem::take(&mut self.typed))),
            Key::Backspace => {
                self.typed.pop();
            }
            Key::Interrupt => return Some(Picked::Interrupt),
            Key::Eof if self.typed.is_empty() => return Some(Picked::Eof),
            Key::Eof | Key::Ignored => {}
            Key::Text(c) => {
                if self.typed.len() < 4096 {
                    self.typed.push(c);
                }
                // A choice's key moves the highlight to it, so what Enter
                // will do is always on screen.
                let t = self.typed.trim();
                let exact = self.choices.iter().position(|ch| ch.key == t);
                let folded = || self.choices.iter().position(|ch| ch.key.eq_ignore_ascii_case(t));
                let named = match t {
                    "yes" | "Yes" | "YES" => self.choices.iter().position(|ch| ch.key == "y"),
                    _ => None,
                };
                if let Some(at) = exact.or(named).or_else(|| if t == "d" || t == "D" { None } else { folded() }) {
                    self.selected = at;
                }
            }
        }
        None
    }

    fn lines(&self, question: &str, colour: bool) -> Vec<String> {
        let mut lines = vec![question.to_owned()];
        for (i, choice) in self.choices.iter().enumerate() {
            let line = format!("{} {} ({})", if i == self.selected { ">" } else { " " }, choice.label, choice.key);
            lines.push(if i == self.selected && colour { format!("\x1b[7m{line}\x1b[0m") } else { line });
        }
        lines.push(if self.typed.is_empty() {
            "↑/↓ then Enter, or type an answer".to_owned()
        } else {
            format!("answer: {}", crate::term::printable(&self.typed))
        });
        lines
    }
}

/// Rows `lines` take on a terminal `width` wide (colour codes not counted).
fn rows(lines: &[String], width: Option<usize>) -> usize {
    lines
        .iter()
        .map(|l| {
            let shown = l.replace("\x1b[7m", "").replace("\x1b[0m", "").chars().count();
            match width {
                Some(w) if shown > w => shown.div_ceil(w),
                _ => 1,
            }
        })
        .sum()
}

/// Shows the menu and waits for an answer (blocking: run it off the async
/// threads). Starts on `default`, which must be the declining choice.
pub fn pick(question: &str, choices: &[Choice], default: usize, colour: bool) -> Picked {
    let Some(raw) = term::Raw::enter() else {
        return Picked::Eof;
    };
    // Raw mode is on: from here every key is read by this menu, so what
    // the queue holds now was typed before the menu appeared.
    term::flush_input();
    let mut menu = Menu { choices, selected: default, typed: String::new() };
    let mut stdout = std::io::stdout();
    let draw = |menu: &Menu, previous: usize, stdout: &mut std::io::Stdout| -> usize {
        let lines = menu.lines(question, colour);
        let mut text = String::new();
        if previous > 1 {
            text.push_str(&format!("\x1b[{}A", previous - 1));
        }
        text.push_str("\r\x1b[J");
        text.push_str(&lines.join("\r\n"));
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        rows(&lines, term::width())
    };
    let _ = stdout.write_all(term::PASTE_ON.as_bytes());
    let mut drawn = draw(&menu, 0, &mut stdout);
    let (mut buf, mut in_paste) = (Vec::new(), false);
    let picked = 'read: loop {
        match term::read_some(-1) {
            Ok(bytes) => buf.extend_from_slice(&bytes),
            Err(_) => break 'read Picked::Eof,
        }
        for key in keys(&mut buf, &mut in_paste) {
            if let Some(picked) = menu.key(key) {
                break 'read picked;
            }
        }
        drawn = draw(&menu, drawn, &mut stdout);
    };
    // The menu gives way to one line: the question and what was chosen.
    let answer = match &picked {
        Picked::Choice(i) => choices[*i].label.to_owned(),
        Picked::Typed(t) => crate::term::printable(t).into_owned(),
        Picked::Interrupt => "^C".to_owned(),
        Picked::Eof => String::new(),
    };
    let mut text = String::new();
    if drawn > 1 {
        text.push_str(&format!("\x1b[{}A", drawn - 1));
    }
    text.push_str(&format!("\r\x1b[J{question} {answer}\r\n{}", term::PASTE_OFF));
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    drop(raw);
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHOICES: &[Choice] = &[
        Choice { key: "n", label: "Deny" },
        Choice { key: "y", label: "Approve once" },
        Choice { key: "d", label: "Deny for this session" },
        Choice { key: "D", label: "Deny in this workspace" },
    ];

    fn run(input: &[u8]) -> Option<Picked> {
        let mut menu = Menu { choices: CHOICES, selected: 0, typed: String::new() };
        let (mut buf, mut paste) = (input.to_vec(), false);
        keys(&mut buf, &mut paste).into_iter().find_map(|k| menu.key(k))
    }

    #[test]
    fn enter_takes_the_default_arrows_move_and_typed_answers_still_work() {
        assert_eq!(run(b"\r"), Some(Picked::Choice(0)));
        assert_eq!(run(b"\x1b[B\r"), Some(Picked::Choice(1)));
        assert_eq!(run(b"\x1b[A\r"), Some(Picked::Choice(3)), "up from the top wraps to the bottom");
        assert_eq!(run(b"\x1bOB\x1bOB\x1b[A\r"), Some(Picked::Choice(1)));
        assert_eq!(run(b"y\r"), Some(Picked::Typed("y".into())));
        assert_eq!(run(b"n: not now\n"), Some(Picked::Typed("n: not now".into())));
        assert_eq!(run(b"x\x7f\r"), Some(Picked::Choice(0)), "a typed answer erased leaves the highlight");
        assert_eq!(run(b"\x03"), Some(Picked::Interrupt));
        assert_eq!(run(b"\x04"), Some(Picked::Eof));
    }

    #[test]
    fn a_paste_is_dropped_not_read_as_keys() {
        assert_eq!(run(b"\x1b[200~y\r\x1b[201~\r"), Some(Picked::Choice(0)));
        // Split across reads.
        let mut menu = Menu { choices: CHOICES, selected: 0, typed: String::new() };
        let (mut buf, mut paste) = (b"\x1b[200~y\r\x1b[2".to_vec(), false);
        assert!(keys(&mut buf, &mut paste).into_iter().all(|k| menu.key(k).is_none()));
        buf.extend_from_slice(b"01~\x1b[B\r");
        let got = keys(&mut buf, &mut paste).into_iter().find_map(|k| menu.key(k));
        assert_eq!(got, Some(Picked::Choice(1)));
    }

    #[test]
    fn typing_a_key_highlights_its_choice_case_mattering_for_d() {
        let mut menu = Menu { choices: CHOICES, selected: 0, typed: String::new() };
        menu.key(Key::Text('D'));
        assert_eq!(menu.selected, 3);
        menu.key(Key::Backspace);
        menu.key(Key::Text('d'));
        assert_eq!(menu.selected, 2);
        menu.key(Key::Backspace);
        menu.key(Key::Text('Y'));
        assert_eq!(menu.selected, 1);
    }
}
