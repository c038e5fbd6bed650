//! What the terminal can do, and putting it back as it was.
//!
//! The line editor, the approval menu and the live status line need a
//! terminal that understands cursor movement; a pipe, or `TERM=dumb`, gets
//! the plain line prompts instead.

use std::io::Write;
use std::sync::OnceLock;

/// Turns bracketed paste off (the line editor turns it on while it reads).
pub const PASTE_OFF: &str = "\x1b[?2004l";
/// Turns bracketed paste on: a paste then arrives between `\e[200~` and `\e[201~`.
pub const PASTE_ON: &str = "\x1b[?2004h";
/// Back to the start of the line, and clear it.
pub const CLEAR_LINE: &str = "\r\x1b[K";

/// The terminal's settings when mino started, restored on a panic.
static SAVED: OnceLock<Option<libc::termios>> = OnceLock::new();

/// stdin and stdout are a terminal whose `TERM` moves the cursor.
pub fn capable() -> bool {
    // SAFETY: isatty only inspects the descriptors.
    let ttys = unsafe { libc::isatty(0) == 1 && libc::isatty(1) == 1 };
    ttys && capable_term(std::env::var("TERM").ok().as_deref())
}

/// Terminals that cannot move the cursor (the list line editors agree on).
pub fn capable_term(term: Option<&str>) -> bool {
    !matches!(term, None | Some("" | "dumb" | "cons25" | "emacs"))
}

/// The terminal's width in columns; `None` when unknown (a pipe, or a
/// terminal that reports 0).
pub fn width() -> Option<usize> {
    // SAFETY: TIOCGWINSZ fills the winsize given, nothing else.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut size) };
    (got == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// Saves the terminal's settings and installs a panic hook that puts them
/// back and turns bracketed paste off, so a crash never leaves the shell in
/// raw mode or wrapping pastes in escape codes.
pub fn guard_on_crash() {
    // SAFETY: tcgetattr fills the termios given.
    let saved = unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(0, &mut t) == 0).then_some(t)
    };
    let _ = SAVED.set(saved);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

/// Puts the terminal back as it was at start (after a panic, or at exit).
pub fn restore() {
    if let Some(Some(t)) = SAVED.get() {
        // SAFETY: a termios read from this descriptor earlier.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, t);
        }
        let mut stdout = std::io::stdout();
        let _ = stdout.write_all(PASTE_OFF.as_bytes());
        let _ = stdout.flush();
    }
}

/// Raw input (no echo, no line editing, no signals from keys) until dropped.
pub struct Raw {
    saved: libc::termios,
}

impl Raw {
    pub fn enter() -> Option<Raw> {
        // SAFETY: tcgetattr/tcsetattr on stdin with termios values we own.
        unsafe {
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut saved) != 0 {
                return None;
            }
            let mut raw = saved;
            raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
            raw.c_iflag &= !(libc::IXON | libc::ICRNL);
            raw.c_cc[libc::VMIN] = 1;
            raw.c_cc[libc::VTIME] = 0;
            if libc::tcsetattr(0, libc::TCSANOW, &raw) != 0 {
                return None;
            }
            Some(Raw { saved })
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: the termios read in `enter`.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, &self.saved);
        }
    }
}

/// Drops input typed before now (the terminal's queue only).
pub fn flush_input() {
    // SAFETY: tcflush only discards the terminal's pending input.
    unsafe {
        libc::tcflush(0, libc::TCIFLUSH);
    }
}

/// Reads what is available on stdin, waiting up to `timeout_ms` (-1: for
/// ever); `Ok(empty)` on timeout, `Err` at end of input.
pub fn read_some(timeout_ms: i32) -> std::io::Result<Vec<u8>> {
    let mut poll = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd for the duration of the call.
    let ready = unsafe { libc::poll(&mut poll, 1, timeout_ms) };
    if ready < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted { Ok(Vec::new()) } else { Err(e) };
    }
    if ready == 0 {
        return Ok(Vec::new());
    }
    let mut chunk = [0u8; 1024];
    // SAFETY: reads into a buffer of the length given.
    let n = unsafe { libc::read(0, chunk.as_mut_ptr().cast(), chunk.len()) };
    match n {
        n if n < 0 => {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                Ok(Vec::new())
            } else {
                Err(e)
            }
        }
        0 => Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "end of input")),
        n => Ok(chunk[..n as usize].to_vec()),
    }
}

/// Writes to stdout and flushes; a closed stdout is not worth a panic.
/// Everything shown passes through here, and text from the model, from
/// commands and from history may hold terminal control sequences: they are
/// shown as visible escapes, so nothing printed can hide or restyle the
/// approval screen.
pub fn out(text: &str) {
    let text = printable(text);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes text that is already safe to show (built by `ui` from
/// [`printable`] pieces and Mino's own colour codes) and flushes.
pub fn out_shown(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// `text` with control characters other than newline and tab made visible
/// (`^[` for ESC, `^?` for DEL, U+FFFD for C1 controls).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let needs = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(needs) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' | '\t' => shown.push(c),
            '\u{7f}' => shown.push_str("^?"),
            c if (c as u32) < 0x20 => {
                shown.push('^');
                shown.push(char::from(b'@' + c as u8));
            }
            c if c.is_control() => shown.push('\u{FFFD}'),
            c => shown.push(c),
        }
    }
    std::borrow::Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    #[test]
    fn dumb_terminals_get_plain_prompts() {
        for term in [None, Some(""), Some("dumb"), Some("emacs")] {
            assert!(!super::capable_term(term), "{term:?}");
        }
        assert!(super::capable_term(Some("xterm-256color")));
    }
}
