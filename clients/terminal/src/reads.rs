//! Reads (`read_file`, `list_files`, `search`) are shown as one numbered
//! line each, live and in restored history alike; their output is kept
//! here so that `/expand N` can show it whole.
//!
//! Bounded: the newest [`MAX_READS`] reads, at most [`MAX_BYTES`] of output
//! in all; older ones are dropped first and `/expand` says so.

use std::collections::VecDeque;

/// Reads kept for `/expand` at most.
pub const MAX_READS: usize = 256;
/// Output kept for `/expand` at most, all reads together (bytes).
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

struct Entry {
    number: u64,
    line: String,
    output: String,
}

/// The reads shown in this session view, numbered from 1 in the order
/// they were shown (history first, then live turns).
pub struct ReadLog {
    entries: VecDeque<Entry>,
    bytes: usize,
    next: u64,
}

impl Default for ReadLog {
    fn default() -> Self {
        ReadLog::new()
    }
}

impl ReadLog {
    pub fn new() -> ReadLog {
        ReadLog { entries: VecDeque::new(), bytes: 0, next: 1 }
    }

    /// A session was opened (or switched to): its history numbers its reads from 1 again.
    pub fn clear(&mut self) {
        *self = ReadLog::new();
    }

    /// The number the next read will get.
    pub fn next_number(&self) -> u64 {
        self.next
    }

    /// Keeps a read's one line and output; returns its number.
    pub fn add(&mut self, line: String, output: String) -> u64 {
        let number = self.next;
        self.next += 1;
        // One read larger than the whole bound keeps its start only.
        let output = if output.len() > MAX_BYTES {
            let mut cut = MAX_BYTES;
            while !output.is_char_boundary(cut) {
                cut -= 1;
            }
            output[..cut].to_owned()
        } else {
            output
        };
        self.bytes += output.len();
        self.entries.push_back(Entry { number, line, output });
        while self.entries.len() > MAX_READS || self.bytes > MAX_BYTES {
            match self.entries.pop_front() {
                Some(old) => self.bytes -= old.output.len(),
                None => break,
            }
        }
        number
    }

    /// What `/expand` (no number: the newest read) or `/expand N` shows.
    pub fn expand(&self, arg: Option<&str>) -> String {
        let number = match arg.map(str::trim).filter(|a| !a.is_empty()) {
            None => match self.entries.back() {
                Some(e) => e.number,
                None => return "No read has been shown yet: /expand N shows the output of read #N.\n".to_owned(),
            },
            Some(a) => match a.trim_start_matches('#').parse::<u64>() {
                Ok(n) => n,
                Err(_) => {
                    return format!(
                        "/expand takes a read's number (the #N its line starts with), not {:?}.\n",
                        crate::term::printable(a)
                    )
                }
            },
        };
        match self.entries.iter().find(|e| e.number == number) {
            Some(e) => {
                let mut shown = format!("{}\n", e.line);
                if e.output.is_empty() {
                    shown.push_str("(no output)\n");
                } else {
                    shown.push_str(&e.output);
                    if !e.output.ends_with('\n') {
                        shown.push('\n');
                    }
                }
                shown
            }
            None if number == 0 || number >= self.next => {
                format!("There is no read #{number} in this session view (reads are numbered from 1).\n")
            }
            None => format!(
                "Read #{number} is no longer kept: mino keeps the output of the last {MAX_READS} reads (at most {} MiB).\n",
                MAX_BYTES / (1024 * 1024)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_numbered_expanded_and_bounded() {
        let mut log = ReadLog::new();
        assert!(log.expand(None).starts_with("No read has been shown yet"));
        assert_eq!(log.add("#1 read a.txt · lines 1-2 of 2".into(), "1\talpha\n2\tbeta\n".into()), 1);
        assert_eq!(log.add("#2 search /x/ · 0 matches".into(), String::new()), 2);
        assert_eq!(log.expand(Some("1")), "#1 read a.txt · lines 1-2 of 2\n1\talpha\n2\tbeta\n");
        assert_eq!(log.expand(Some("#1")), log.expand(Some("1")));
        assert_eq!(log.expand(None), "#2 search /x/ · 0 matches\n(no output)\n");
        assert!(log.expand(Some("9")).starts_with("There is no read #9"));
        assert!(log.expand(Some("x")).contains("takes a read's number"));
        for i in 0..MAX_READS {
            log.add(format!("#{} read", i + 3), "y".into());
        }
        assert!(log.expand(Some("1")).starts_with("Read #1 is no longer kept"));
        assert!(log.expand(Some("3")).starts_with("#3 read"));
        log.clear();
        assert_eq!(log.next_number(), 1);
    }

    #[test]
    fn the_bytes_kept_are_bounded() {
        let mut log = ReadLog::new();
        log.add("#1".into(), "a".repeat(MAX_BYTES / 2 + 1));
        log.add("#2".into(), "b".repeat(MAX_BYTES / 2 + 1));
        assert!(log.expand(Some("1")).starts_with("Read #1 is no longer kept"));
        log.add("#3".into(), "é".repeat(MAX_BYTES));
        assert!(log.bytes <= MAX_BYTES);
        assert!(log.expand(Some("3")).starts_with("#3\n"));
    }
}
