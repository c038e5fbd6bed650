//! What a command printed: decoded as UTF-8 across reads ([`Utf8Carry`]),
//! kept within the output limit for its result ([`Capture`]: first and last
//! halves) and for its evidence ([`Tail`]: the last bytes).

use std::collections::VecDeque;

/// Appends `note` on a line of its own.
pub(crate) fn push_note(output: &mut String, note: &str) {
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(note);
}

/// Decodes UTF-8 across read boundaries: an incomplete sequence at the end of
/// one read waits for the next instead of becoming replacement characters.
#[derive(Default)]
pub(super) struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    pub(super) fn decode(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        // Only a sequence cut at the very end waits; invalid bytes before it
        // become replacement characters now.
        let keep = incomplete_tail(&self.pending);
        let rest = self.pending.split_off(self.pending.len() - keep);
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending = rest;
        text
    }

    /// What is left when the stream ends: a cut sequence is shown, not lost.
    pub(super) fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

/// How many bytes at the end start a UTF-8 sequence that is not complete yet.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for k in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - k];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if needed > k { k } else { 0 };
    }
    0
}

/// Keeps the head and tail of the output within the limit.
pub(super) struct Capture {
    limit: usize,
    head: String,
    tail: VecDeque<char>,
    tail_bytes: usize,
    cut: usize,
}

impl Capture {
    pub(super) fn new(limit: usize) -> Self {
        Self { limit, head: String::new(), tail: Default::default(), tail_bytes: 0, cut: 0 }
    }

    pub(super) fn push(&mut self, text: &str) {
        let head_limit = self.limit / 2;
        let mut chars = text.chars();
        if self.head.len() < head_limit {
            for c in chars.by_ref() {
                if self.head.len() + c.len_utf8() > head_limit {
                    self.push_tail(c);
                    break;
                }
                self.head.push(c);
            }
        }
        for c in chars {
            self.push_tail(c);
        }
    }

    fn push_tail(&mut self, c: char) {
        let tail_limit = self.limit - self.limit / 2;
        self.tail.push_back(c);
        self.tail_bytes += c.len_utf8();
        while self.tail_bytes > tail_limit {
            if let Some(old) = self.tail.pop_front() {
                self.tail_bytes -= old.len_utf8();
                self.cut += old.len_utf8();
            }
        }
    }

    pub(super) fn finish(self) -> String {
        let mut out = self.head;
        if self.cut > 0 {
            push_note(
                &mut out,
                &format!(
                    "[... {} bytes of output cut: the limit is {} bytes, first and last halves kept ...]\n",
                    self.cut, self.limit
                ),
            );
        }
        out.extend(self.tail);
        out
    }
}

/// The last `limit` bytes of the output (for the evidence record).
pub(super) struct Tail {
    limit: usize,
    bytes: VecDeque<u8>,
}

impl Tail {
    pub(super) fn new(limit: usize) -> Self {
        Self { limit, bytes: VecDeque::new() }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        let skip = bytes.len().saturating_sub(self.limit);
        self.bytes.extend(&bytes[skip..]);
        let excess = self.bytes.len().saturating_sub(self.limit);
        self.bytes.drain(..excess);
    }

    pub(super) fn finish(self) -> String {
        let bytes: Vec<u8> = self.bytes.into();
        // The cut may fall inside a character: start at the next whole one.
        let start = bytes.iter().position(|&b| b & 0xC0 != 0x80).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail_and_says_what_was_cut() {
        let mut c = Capture::new(10);
        c.push("0123456789abcdefghij");
        let out = c.finish();
        assert!(out.starts_with("01234\n[... 10 bytes"), "{out}");
        assert!(out.ends_with("fghij"), "{out}");
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_on_a_character_boundary() {
        let mut t = Tail::new(3);
        t.push("ab".as_bytes());
        t.push("€c".as_bytes());
        assert_eq!(t.finish(), "c", "the euro's cut bytes are dropped, not mangled");
        let mut t = Tail::new(10);
        t.push(b"hello");
        assert_eq!(t.finish(), "hello");
    }

    #[test]
    fn invalid_bytes_do_not_disable_the_carry_and_a_cut_tail_is_kept() {
        let mut d = Utf8Carry::default();
        let euro = "€".as_bytes();
        let mut first = vec![b'x', 0xFF, b'y'];
        first.extend_from_slice(&euro[..2]);
        assert_eq!(d.decode(&first), "x\u{FFFD}y");
        let mut second = euro[2..].to_vec();
        second.push(b'z');
        assert_eq!(d.decode(&second), "€z");
        assert_eq!(d.decode(&euro[..2]), "");
        assert_eq!(d.finish(), "\u{FFFD}", "a sequence cut by the end of the stream is shown, not lost");
    }

    #[test]
    fn utf8_split_across_reads_is_not_mangled() {
        let mut d = Utf8Carry::default();
        let bytes = "é".as_bytes();
        assert_eq!(d.decode(&bytes[..1]), "");
        assert_eq!(d.decode(&bytes[1..]), "é");
    }
}
