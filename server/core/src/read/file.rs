//! `read_file`: a file's lines, numbered, within [`super::MAX_LINES`] and
//! [`super::MAX_OUTPUT_BYTES`], with the file's size and line count.
//!
//! The file is opened beneath its directory's handle, read-only and
//! non-blocking, and checked on the open file itself: anything but a
//! regular file is refused before a byte is read, as is a file over
//! [`super::MAX_FILE_BYTES`] or one that looks binary (a NUL byte in its
//! first 8 KiB, as ripgrep and git decide). The file is streamed once in
//! fixed chunks: the lines asked for are kept, the rest only counted, so
//! memory stays bounded whatever its size.

use std::fmt::Write as _;
use std::io::Read;

use super::{cut_line, ReadOutcome, ToolStatus, MAX_FILE_BYTES, MAX_LINES, MAX_LINE_CHARS, MAX_OUTPUT_BYTES};
use crate::edit::ResolvedPath;

/// The bytes looked at for a NUL before anything is returned.
const BINARY_PROBE: usize = 8 * 1024;
/// The read buffer.
const CHUNK: usize = 64 * 1024;

pub(super) fn read_file(resolved: &ResolvedPath, given: &str, start: Option<u64>, end: Option<u64>) -> ReadOutcome {
    let file = match resolved.open_read_only() {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return ReadOutcome::failed(format!(
                "`{given}` changed into a symbolic link while Mino opened it; nothing was read. Read it again once nothing is moving it."
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ReadOutcome::failed(format!("`{given}` does not exist."))
        }
        Err(e) => return ReadOutcome::failed(format!("`{given}` could not be opened: {e}.")),
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(e) => return ReadOutcome::failed(format!("`{given}` could not be examined: {e}.")),
    };
    if !meta.is_file() {
        return ReadOutcome::failed(format!(
            "Refused: `{given}` is {}, not a regular file; read_file reads only regular files (it never waits on a pipe or a device).",
            crate::files::kind_of(&meta)
        ));
    }
    let size = meta.len();
    if size > MAX_FILE_BYTES {
        return ReadOutcome::failed(format!(
            "Refused: `{given}` is {size} bytes, more than read_file's limit of {MAX_FILE_BYTES} bytes (256 MiB); use search to find what you need in it."
        ));
    }
    read_lines(file, given, size, start.unwrap_or(1), end)
}

fn read_lines(mut file: impl Read, given: &str, size: u64, start: u64, end: Option<u64>) -> ReadOutcome {
    let last_wanted = end.unwrap_or(u64::MAX);
    let mut buf = vec![0u8; CHUNK];
    let mut line: Vec<u8> = Vec::new();
    let mut body = String::new();
    // Line numbers of the lines kept.
    let (mut first_kept, mut last_kept) = (None::<u64>, 0u64);
    // Why the lines asked for were not all kept.
    let mut cut: Option<&'static str> = None;
    let mut number = 1u64;
    let mut read_total = 0u64;
    let mut probed = false;
    let mut ends_with_newline = true;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return ReadOutcome::failed(format!("`{given}` could not be read: {e}.")),
        };
        let chunk = &buf[..n];
        if !probed {
            let probe = &chunk[..chunk.len().min(BINARY_PROBE)];
            if probe.contains(&0) {
                return ReadOutcome::failed(format!(
                    "Refused: `{given}` looks binary (it holds a NUL byte in its first {BINARY_PROBE} bytes); read_file returns text only."
                ));
            }
            probed = true;
        }
        read_total += n as u64;
        // A file that grows while it is read is read no further than its
        // limit.
        if read_total > MAX_FILE_BYTES {
            return ReadOutcome::failed(format!(
                "Refused: `{given}` grew past read_file's limit of {MAX_FILE_BYTES} bytes while it was read."
            ));
        }
        let mut rest = chunk;
        while !rest.is_empty() {
            // Past the lines kept: only counted, a chunk at a time.
            if number > last_wanted || cut.is_some() {
                number += memchr::memchr_iter(b'\n', rest).count() as u64;
                ends_with_newline = rest.last() == Some(&b'\n');
                break;
            }
            let wanted = number >= start && number <= last_wanted && cut.is_none();
            match memchr::memchr(b'\n', rest) {
                Some(at) => {
                    if wanted {
                        line.extend_from_slice(&rest[..at]);
                        keep(&mut body, &mut line, number, &mut first_kept, &mut last_kept, &mut cut);
                    }
                    number += 1;
                    rest = &rest[at + 1..];
                    ends_with_newline = true;
                }
                None => {
                    // Only the head of a very long line is kept: the rest
                    // would be cut anyway.
                    if wanted && line.len() < MAX_LINE_CHARS * 4 + 4 {
                        line.extend_from_slice(&rest[..rest.len().min(MAX_LINE_CHARS * 4 + 4 - line.len())]);
                    }
                    rest = &[];
                    ends_with_newline = false;
                }
            }
        }
    }
    // A last line without a newline.
    if !ends_with_newline {
        if number >= start && number <= last_wanted && cut.is_none() {
            keep(&mut body, &mut line, number, &mut first_kept, &mut last_kept, &mut cut);
        }
    } else {
        number -= 1;
    }
    let total = number;
    if size == 0 || total == 0 {
        return ReadOutcome::success(format!("empty file (0 lines, {size} bytes)\n"));
    }
    let Some(first) = first_kept else {
        return ReadOutcome::failed(format!(
            "start_line {start} is past the end of `{given}`: it has {total} lines ({size} bytes)."
        ));
    };
    let asked_last = last_wanted.min(total);
    let mut header = format!("lines {first}-{last_kept} of {total} ({size} bytes)");
    if last_kept < asked_last {
        let left = asked_last - last_kept;
        let _ = write!(
            header,
            "; {left} lines left out ({}): read on with start_line {}",
            cut.unwrap_or("limit"),
            last_kept + 1
        );
    }
    ReadOutcome::success(format!("{header}\n{body}"))
}

/// `read_file` over the text the person's editor holds of the file (an
/// open buffer, perhaps with unsaved changes), bounded as a read of the
/// disk is; `differs` says the text is not what the disk holds, which the
/// summary line then tells.
pub(super) fn read_editor_text(
    text: &str,
    given: &str,
    start: Option<u64>,
    end: Option<u64>,
    differs: bool,
) -> ReadOutcome {
    let mut outcome = read_lines(text.as_bytes(), given, text.len() as u64, start.unwrap_or(1), end);
    if differs && outcome.status == ToolStatus::Success {
        if let Some(at) = outcome.output.find('\n') {
            outcome.output.insert_str(at, "; as open in the editor, with changes not saved to disk");
        }
    }
    outcome
}

/// Appends one numbered line to `body`, unless a bound says stop.
fn keep(
    body: &mut String,
    line: &mut Vec<u8>,
    number: u64,
    first_kept: &mut Option<u64>,
    last_kept: &mut u64,
    cut: &mut Option<&'static str>,
) {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    let text = String::from_utf8_lossy(line);
    let text = cut_line(&text, MAX_LINE_CHARS);
    let kept = first_kept.map_or(0, |f| *last_kept + 1 - f);
    if kept >= MAX_LINES {
        *cut = Some("limit 2000 lines");
    } else if body.len() + text.len() + 8 > MAX_OUTPUT_BYTES {
        *cut = Some("limit 64 KiB");
    } else {
        let _ = writeln!(body, "{number:>6}\t{text}");
        first_kept.get_or_insert(number);
        *last_kept = number;
    }
    line.clear();
}
