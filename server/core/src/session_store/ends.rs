//! The facts a session list shows, from a journal's two ends without
//! parsing it whole: the header and the turn-1 question are in a file's
//! first bytes, and everything else a list shows is in the last turn (turn
//! ids are `turn-N`, and chat is gated while an `unknown` result waits, so
//! one can only wait in the last turn). Each file's first and last
//! [`PROBE_BYTES`] are read, every record used is verified by its checksum,
//! and the tail read grows only when the last turn does not fit.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::default_title;
use crate::journal::record::{decode_line, LineError, Record, RecordBody};
use crate::journal::MAX_RECORD_BYTES;
use crate::recovery::{self, GateFacts};

/// How much of each end of a journal a listing reads first.
pub const PROBE_BYTES: u64 = 4096;

#[derive(Debug, Clone)]
pub(super) struct Header {
    pub(super) cwd: String,
    pub(super) created_at: String,
}

#[derive(Debug, Default)]
pub(super) struct Head {
    pub(super) header: Option<Header>,
    pub(super) default_title: Option<String>,
    pub(super) damage: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct Tail {
    pub(super) turns: u64,
    /// The last turn's facts for the acknowledgement gate.
    pub(super) gate: GateFacts,
    pub(super) damage: Option<String>,
    pub(super) usage: Option<crate::usage::Usage>,
}

fn read_at(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(io::Error::other)?;
    let mut buf = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

// Lines are found with `memchr` (a word at a time) rather than a closure
// called on each byte: the tail's first, partial line is usually a command's
// output of a few KiB, scanned once per session listed, and byte-at-a-time
// scanning was about a fifth of a list's own instructions (callgrind; the
// records' JSON is most of the rest).

/// `buf`'s lines in order, each with its newline (the last may lack one):
/// `split_inclusive` on `\n`.
fn lines_inclusive(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = buf;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let (line, after) = rest.split_at(end);
        rest = after;
        Some(line)
    })
}

/// The lines of `body` (empty, or ending with a newline), last first,
/// without their newlines: `rsplit` on `\n` of `body` less its last newline.
fn lines_last_first(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = body.strip_suffix(b"\n");
    std::iter::from_fn(move || {
        let lines = rest?;
        match memchr::memrchr(b'\n', lines) {
            Some(i) => {
                rest = Some(&lines[..i]);
                Some(&lines[i + 1..])
            }
            None => {
                rest = None;
                Some(lines)
            }
        }
    })
}

/// The header (record 1) and the turn-1 question (record 2), from the first
/// [`PROBE_BYTES`], read further only when record 2 does not fit.
pub(super) fn read_head(file: &File, len: u64) -> io::Result<Head> {
    let mut want = PROBE_BYTES.min(len);
    loop {
        let buf = read_at(file, 0, want)?;
        let mut lines = lines_inclusive(&buf);
        let mut head = Head::default();
        let complete = |line: &[u8]| line.last() == Some(&b'\n');
        let more = want < len && want < 2 * MAX_RECORD_BYTES as u64;
        match lines.next() {
            Some(line) if complete(line) => match decode_line(&line[..line.len() - 1]) {
                Ok(Record { seq: 1, body: RecordBody::Session { cwd, created_at, .. }, .. }) => {
                    head.header = Some(Header { cwd, created_at });
                }
                Ok(_) => head.damage = Some("record 1 is not a session header".into()),
                Err(e) => head.damage = Some(format!("the session header is unreadable: {e}")),
            },
            _ if more => {
                want = (want * 4).min(len);
                continue;
            }
            _ => {
                head.damage = Some("the session header is incomplete".into());
                return Ok(head);
            }
        }
        if head.header.is_none() {
            return Ok(head);
        }
        match lines.next() {
            Some(line) if complete(line) => {
                if let Ok(Record { seq: 2, body: RecordBody::User { text, .. }, .. }) =
                    decode_line(&line[..line.len() - 1])
                {
                    head.default_title = default_title(&text);
                }
                // Anything else in record 2 is the tail read's to judge.
            }
            Some(_) if more => {
                want = (want * 4).min(len);
                continue;
            }
            _ => {}
        }
        return Ok(head);
    }
}

/// The number of turns and whether an `unknown` result waits, from the last
/// records, read backwards from the end: [`PROBE_BYTES`] first, growing (×4)
/// only while the records that settle it are not all in reach. `busy`: a
/// process holds the session, so an open last turn is running, not crashed.
pub(super) fn read_tail(file: &File, len: u64, busy: bool) -> io::Result<Tail> {
    let mut want = PROBE_BYTES.min(len);
    loop {
        let start = len - want;
        let buf = read_at(file, start, want)?;
        // The usual last record (a `turn_end`) settles both from one read of
        // it; otherwise the tokens are summed over the buffer on their own.
        let mut usage = UsageScan::default();
        let tail = scan_tail(&buf, start == 0, busy, &mut usage);
        let usage = tail.as_ref().and_then(|_| usage.settled.or_else(|| scan_usage(&buf, start == 0)));
        match (tail, usage) {
            (Some(mut tail), Some(usage)) => {
                tail.usage = usage;
                return Ok(tail);
            }
            _ if want < len => want = (want * 4).min(len),
            (Some(tail), None) => return Ok(tail),
            (None, _) => {
                return Ok(Tail {
                    damage: Some("the file holds no readable session header".into()),
                    ..Default::default()
                })
            }
        }
    }
}

/// The last turn's number, the acknowledgement gate's facts
/// ([`recovery::LastTurnGate`] decides which records settle them) and any
/// damage, from the records of `buf` read last first; the tokens are
/// gathered on the way (`usage`).
///
/// `None` when `buf` (the file's last bytes; the whole file when
/// `from_start`) does not reach far enough back to tell.
fn scan_tail(buf: &[u8], from_start: bool, busy: bool, usage: &mut UsageScan) -> Option<Tail> {
    let mut gate = recovery::LastTurnGate::new(busy);
    let mut tail = scan_records(buf, from_start, &mut gate, usage)?;
    tail.gate = gate.facts();
    Some(tail)
}

/// [`scan_tail`]'s walk, the gate's facts left in `gate`.
fn scan_records(
    buf: &[u8],
    from_start: bool,
    gate: &mut recovery::LastTurnGate,
    usage: &mut UsageScan,
) -> Option<Tail> {
    let mut tail = Tail::default();
    let mut body = buf;
    // A last line without a newline is torn: opening the session cuts it,
    // so the facts are those of the records before it.
    if body.last() != Some(&b'\n') {
        let cut = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
        if cut == 0 && !from_start {
            return None;
        }
        tail.damage = Some("the last record is torn (no newline at its end); opening the session cuts it".into());
        body = &body[..cut];
    }
    // The first line may have begun before the bytes read.
    if !from_start {
        let first = memchr::memchr(b'\n', body)?;
        body = &body[first + 1..];
    }
    let mut last_turn: Option<String> = None;
    let mut next_seq: Option<u64> = None;
    let mut is_last_line = true;
    // Complete lines, last first (`body` is empty or ends with a newline).
    for line in lines_last_first(body) {
        let last_line = std::mem::replace(&mut is_last_line, false);
        let record = match decode_line(line) {
            Ok(record) => record,
            // Opening would cut a garbled last line as torn.
            Err(LineError::Garbled(why)) if last_line && tail.damage.is_none() => {
                tail.damage = Some(format!("the last record is torn ({why}); opening the session cuts it"));
                continue;
            }
            Err(e) => {
                tail.damage = Some(format!("a record near the end is unreadable ({e}); opening the session says more"));
                return Some(tail);
            }
        };
        if let Some(expected) = next_seq {
            if record.seq + 1 != expected {
                tail.damage = Some(format!(
                    "records near the end are out of order (seq {} before {expected}); opening the session says more",
                    record.seq
                ));
                return Some(tail);
            }
        }
        next_seq = Some(record.seq);
        usage.record(&record.body);
        let turn_id = match &record.body {
            RecordBody::Session { .. } => return Some(tail),
            // Rules granted or revoked, the model chosen and a compaction (it
            // summarises ended turns) belong to the session, not to a turn.
            RecordBody::Rule { .. }
            | RecordBody::RuleRevoke { .. }
            | RecordBody::Compaction { .. }
            | RecordBody::Model { .. }
            | RecordBody::Rewind { .. }
            | RecordBody::RewindEnd { .. } => continue,
            RecordBody::User { turn_id, .. }
            | RecordBody::Response { turn_id, .. }
            | RecordBody::Approval { turn_id, .. }
            | RecordBody::ToolStart { turn_id, .. }
            | RecordBody::ToolResult { turn_id, .. }
            | RecordBody::TurnEnd { turn_id, .. }
            | RecordBody::RecoveryAck { turn_id } => turn_id,
        };
        match &last_turn {
            None => {
                tail.turns = turn_id.strip_prefix("turn-").and_then(|n| n.parse().ok()).unwrap_or(0);
                last_turn = Some(turn_id.clone());
            }
            // An earlier turn's record: the last turn has been read whole.
            Some(last) if last != turn_id => return Some(tail),
            Some(_) => {}
        }
        if gate.record_before(record.body).is_break() {
            return Some(tail);
        }
    }
    if from_start {
        // Not even the header: read_head reports the damage.
        return Some(tail);
    }
    None
}

/// The session's tokens from its last records, walking back: the responses'
/// `usage` summed until a `turn_end` with `session_usage` (which holds the
/// sum of everything before it) or the session header. Usually the last
/// record is that `turn_end`; a running or crashed last turn is read back
/// to the `turn_end` before it. `Some(None)` when the sum cannot be told
/// (none reported, a `turn_end` from a Mino before `session_usage`, an
/// unreadable record); `None` when `buf` does not reach far enough back.
fn scan_usage(buf: &[u8], from_start: bool) -> Option<Option<crate::usage::Usage>> {
    // A torn last line is cut by opening; the records before it count.
    let cut = memchr::memrchr(b'\n', buf).map_or(0, |i| i + 1);
    let mut body = &buf[..cut];
    if !from_start {
        let first = memchr::memchr(b'\n', body)?;
        body = &body[first + 1..];
    }
    let mut usage = UsageScan::default();
    for line in lines_last_first(body) {
        let Ok(record) = decode_line(line) else { return Some(None) };
        usage.record(&record.body);
        if usage.settled.is_some() {
            return usage.settled;
        }
    }
    // The whole file and no header: nothing to sum.
    from_start.then_some(None)
}

/// The session's tokens, summed over records read walking back (see
/// [`scan_usage`]).
#[derive(Default)]
struct UsageScan {
    sum: Option<crate::usage::Usage>,
    /// Set once the sum is known (`Some(None)`: it cannot be told).
    settled: Option<Option<crate::usage::Usage>>,
}

impl UsageScan {
    /// The record before those already seen.
    fn record(&mut self, body: &RecordBody) {
        if self.settled.is_some() {
            return;
        }
        match body {
            RecordBody::Response { usage: Some(usage), .. } => *self.sum.get_or_insert_with(Default::default) += *usage,
            RecordBody::TurnEnd { session_usage: Some(before), .. } => {
                let mut sum = self.sum.take();
                *sum.get_or_insert_with(Default::default) += *before;
                self.settled = Some(sum);
            }
            RecordBody::TurnEnd { session_usage: None, .. } => self.settled = Some(None),
            RecordBody::Session { .. } => self.settled = Some(self.sum.take()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{lines_inclusive, lines_last_first};

    /// The memchr scans split exactly as the slice methods they replace, on
    /// the shapes a journal's ends take: empty, torn, blank lines, one line.
    #[test]
    fn line_scans_split_as_the_slice_methods() {
        let cases: [&[u8]; 8] =
            [b"", b"\n", b"a", b"a\n", b"a\nb", b"a\nb\n", b"\n\na\n\n", b"{\"x\":1}\n{\"y\":2}\ntorn"];
        for case in cases {
            let inclusive: Vec<&[u8]> = lines_inclusive(case).collect();
            let expected: Vec<&[u8]> = case.split_inclusive(|b| *b == b'\n').collect();
            assert_eq!(inclusive, expected, "lines_inclusive of {:?}", String::from_utf8_lossy(case));
            // lines_last_first takes a body that is empty or ends with a newline.
            if case.is_empty() || case.ends_with(b"\n") {
                let last_first: Vec<&[u8]> = lines_last_first(case).collect();
                let expected: Vec<&[u8]> =
                    case.strip_suffix(b"\n").map(|b| b.rsplit(|c| *c == b'\n').collect()).unwrap_or_default();
                assert_eq!(last_first, expected, "lines_last_first of {:?}", String::from_utf8_lossy(case));
            }
        }
    }
}
