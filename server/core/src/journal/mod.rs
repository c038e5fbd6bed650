//! The session journal: one JSONL file per conversation, one writer at a time.
//!
//! Records are written straight to the file (no user-space buffer a killed
//! process could lose) and synced only at the save points the caller asks for
//! with [`Journal::sync`]. A failed write or sync truncates the file back to the
//! last synced length and breaks the journal: nothing more is written until the
//! session is reopened, because after a failed sync nothing unsynced can be
//! assumed to be on disk (Linux may drop the dirty pages and report success on
//! a later sync).
//!
//! One writer at a time is enforced by a lock on a file of its own,
//! `<session>.lock` beside the journal, which Mino creates when absent and
//! never replaces or deletes: a lock on the journal itself would leave with
//! its inode when the file is replaced by rename (an editor's save, a sync
//! tool, a backup restore), and a second server could then open the session
//! at once. Every save point also checks that the journal's path (and the
//! lock's) still names the file this process writes; if not, that is a
//! failed save.

pub mod file;
pub mod record;
pub mod rewind_record;

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use file::JournalFile;
#[cfg(feature = "testing")]
pub use file::{Fault, FaultCounters, FaultPlan, FaultyFile};
use record::{decode_line, encode_line, LineError};
pub use record::{Record, RecordBody};

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{path}: could not {action}: {source}")]
    Io { path: PathBuf, action: &'static str, source: io::Error },
    #[error(
        "{path} is open in another Mino process; close it there first (the lock is released when that process exits)"
    )]
    Locked { path: PathBuf },
    #[error("{path}, line {line}: {reason}; the file was left unchanged")]
    Corrupt { path: PathBuf, line: usize, reason: String },
    #[error("{path}, line {line}: record kind `{kind}` (v {v}) was written by a newer Mino; the file was left unchanged — open it with that version")]
    Newer { path: PathBuf, line: usize, v: u32, kind: String },
    #[error("{path}: a previous save failed ({cause}); no further turns until the session is reopened")]
    Broken { path: PathBuf, cause: String },
    /// The journal (or its lock file) is no longer the file at its path.
    #[error("{path} was replaced or deleted while Mino had it open ({what}); {consequence}")]
    Replaced { path: PathBuf, what: String, consequence: String },
    /// A record longer than [`MAX_RECORD_BYTES`]; nothing was written.
    #[error("{path}: a `{kind}` record of {bytes} bytes is longer than the longest record a session file holds ({MAX_RECORD_BYTES} bytes); it was not saved")]
    TooLarge { path: PathBuf, kind: &'static str, bytes: usize },
}

/// The longest line (record and newline) Mino writes, and so the most a
/// reader ever buffers for one line: a longer line is damage, judged without
/// being read into memory. The largest records Mino writes are far below it
/// (a question is at most 1 MiB, a command's saved output 64 KiB, before JSON
/// escaping); a model response longer than this ends its turn `failed`.
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

/// A torn last line that opening cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line number of the torn line.
    pub line: usize,
    /// Byte offset the file was truncated to.
    pub offset: u64,
    /// How many bytes were removed.
    pub bytes: u64,
    pub reason: String,
}

impl std::fmt::Display for TornTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cut a torn last line (line {}, {} bytes at offset {}): {}",
            self.line, self.bytes, self.offset, self.reason
        )
    }
}

/// What opening an existing file found.
pub struct Opened {
    pub journal: Journal,
    pub torn_tail: Option<TornTail>,
}

/// Which file a path named when it was opened: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self { dev: meta.dev(), ino: meta.ino() }
    }

    /// Whether `path` still names this file, without following a symlink:
    /// `Err` says what it names instead.
    fn still_at(self, path: &Path) -> Result<(), String> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if Identity::of(&meta) == self => Ok(()),
            Ok(_) => Err("the path now names another file".into()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err("the path no longer exists".into()),
            Err(e) => Err(format!("the path could not be checked: {e}")),
        }
    }
}

/// The session's lock: an exclusive `flock` on `<session>.lock`, held for as
/// long as the journal is open and released when the process ends.
struct SessionLock {
    path: PathBuf,
    identity: Identity,
    _file: File,
}

/// `sessions/<id>.jsonl` → `sessions/<id>.lock`.
pub fn lock_path(journal: &Path) -> PathBuf {
    let name = journal.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    journal.with_file_name(format!("{stem}.lock"))
}

impl SessionLock {
    /// Creates `<session>.lock` if absent (never a symlink, never anything
    /// but a regular file) and locks it; `Locked` when another process holds it.
    fn acquire(journal: &Path) -> Result<SessionLock, JournalError> {
        let path = lock_path(journal);
        let io_err = |action, source| JournalError::Io { path: path.clone(), action, source };
        // O_NONBLOCK: a FIFO planted under the lock's name must not hang the open.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => io_err(
                    "open the session's lock file",
                    io::Error::other("it is a symbolic link; remove it (Mino creates the lock file itself)"),
                ),
                _ => io_err("open the session's lock file", e),
            })?;
        let meta = file.metadata().map_err(|e| io_err("read the session's lock file", e))?;
        if !meta.is_file() {
            return Err(io_err(
                "use the session's lock file",
                io::Error::other("it is not a regular file; remove it (Mino creates the lock file itself)"),
            ));
        }
        lock(&file, journal)?;
        let identity = Identity::of(&meta);
        identity.still_at(&path).map_err(|what| JournalError::Replaced {
            path: path.clone(),
            what,
            consequence: "it was replaced while being locked; open the session again".into(),
        })?;
        Ok(SessionLock { path, identity, _file: file })
    }
}

pub struct Journal {
    path: PathBuf,
    file: Box<dyn JournalFile>,
    /// The same open file, to read back what was saved (`file` may be
    /// wrapped for fault injection).
    reader: File,
    /// The file `path` named when it was opened; checked at every save point.
    identity: Identity,
    lock: SessionLock,
    /// Bytes written and believed good.
    len: u64,
    /// Bytes covered by the last successful sync.
    synced_len: u64,
    next_seq: u64,
    broken: Option<String>,
    syncs: u64,
}

impl Journal {
    /// Creates a new session file holding `header` as record 1, atomically: the
    /// header is written and synced under a temporary name, linked to `path`
    /// (which must not exist), and the directory is synced, so the file either
    /// exists complete and durable or not at all.
    pub fn create(path: &Path, header: &RecordBody) -> Result<Journal, JournalError> {
        let io_err = |action, source| JournalError::Io { path: path.to_path_buf(), action, source };
        let dir = path.parent().unwrap_or(Path::new("."));
        let session_lock = SessionLock::acquire(path)?;
        let tmp = path.with_extension(format!("jsonl.tmp-{}", std::process::id()));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_err("create the session file", e))?;
        let result = (|| {
            // Also on the journal itself, as Mino before the lock file did,
            // so that version and this one keep each other out too.
            lock(&file, path)?;
            let line = encode_line(1, header);
            io::Write::write_all(&mut file, &line).map_err(|e| io_err("write the session header", e))?;
            file.sync_all().map_err(|e| io_err("sync the new session file", e))?;
            std::fs::hard_link(&tmp, path).map_err(|e| io_err("link the new session file", e))?;
            Ok(line.len() as u64)
        })();
        // The temporary name is never needed again, whatever happened.
        let _ = std::fs::remove_file(&tmp);
        let len = result?;
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io_err("sync the sessions directory", e))?;
        let identity = Identity::of(&file.metadata().map_err(|e| io_err("read the session file", e))?);
        let reader = file.try_clone().map_err(|e| io_err("open the session file", e))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file: Box::new(file),
            reader,
            identity,
            lock: session_lock,
            len,
            synced_len: len,
            next_seq: 2,
            broken: None,
            syncs: 2,
        })
    }

    /// Opens, locks and verifies an existing session file, handing each
    /// record to `visit` in order as it is read (so the file is never held in
    /// memory whole). `visit` may reject a record with a reason. A torn last
    /// line is cut off (and the cut synced); any other damage refuses the file
    /// without writing a byte.
    pub fn open(path: &Path, visit: impl FnMut(Record) -> Result<(), String>) -> Result<Opened, JournalError> {
        let io_err = |action, source| JournalError::Io { path: path.to_path_buf(), action, source };
        // O_NOFOLLOW: a session file that is a symlink could point anywhere.
        // Non-blocking and regular files only: a FIFO under a journal's name
        // would block every read of the scan below (and with it the server).
        let file =
            crate::files::open_regular_with(path, true, libc::O_NOFOLLOW).map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => io_err(
                    "open the session file",
                    io::Error::other("it is a symbolic link; session files must be regular files"),
                ),
                _ => io_err("open the session file", e),
            })?;
        let session_lock = SessionLock::acquire(path)?;
        // Also on the journal itself, as Mino before the lock file did.
        lock(&file, path)?;
        let meta = file.metadata().map_err(|e| io_err("read the session file", e))?;
        let identity = Identity::of(&meta);
        // Replaced between the open and the lock: this may not be the file
        // another process was writing while it held the lock.
        identity.still_at(path).map_err(|what| JournalError::Replaced {
            path: path.to_path_buf(),
            what,
            consequence: "it was replaced while being opened; open the session again".into(),
        })?;
        let file_len = meta.len();
        let scan = scan(path, io::BufReader::with_capacity(1 << 16, &file), file_len, visit)?;
        if let Some(torn) = &scan.torn_tail {
            file.set_len(torn.offset).map_err(|e| io_err("cut the torn last line", e))?;
            file.sync_data().map_err(|e| io_err("sync the cut", e))?;
        }
        let reader = file.try_clone().map_err(|e| io_err("open the session file", e))?;
        let journal = Journal {
            path: path.to_path_buf(),
            file: Box::new(file),
            reader,
            identity,
            lock: session_lock,
            len: scan.good_len,
            synced_len: scan.good_len,
            next_seq: scan.records + 1,
            broken: None,
            syncs: 0,
        };
        Ok(Opened { journal, torn_tail: scan.torn_tail })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `seq` the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Syncs performed since this journal was opened (creation counts two:
    /// the file and its directory).
    pub fn sync_count(&self) -> u64 {
        self.syncs
    }

    /// Bytes known to be on disk: covered by the last successful sync.
    pub fn synced_len(&self) -> u64 {
        self.synced_len
    }

    /// Bytes written (synced or not).
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Puts a layer between the journal and its file (fault injection in
    /// tests, timing in the benchmarks).
    #[cfg(feature = "testing")]
    pub fn wrap_file(&mut self, wrap: impl FnOnce(Box<dyn JournalFile>) -> Box<dyn JournalFile>) {
        let placeholder: Box<dyn JournalFile> = Box::new(NoFile);
        let inner = std::mem::replace(&mut self.file, placeholder);
        self.file = wrap(inner);
    }

    /// Writes one record through to the file (not synced). Returns its `seq`.
    pub fn append(&mut self, body: &RecordBody) -> Result<u64, JournalError> {
        self.check_usable()?;
        let seq = self.next_seq;
        let line = encode_line(seq, body);
        if line.len() > MAX_RECORD_BYTES {
            // Refused before a byte is written: the journal stays usable.
            return Err(JournalError::TooLarge { path: self.path.clone(), kind: body.kind(), bytes: line.len() });
        }
        let mut written = 0usize;
        while written < line.len() {
            match self.file.write_at(&line[written..], self.len + written as u64) {
                Ok(0) => {
                    return Err(self.fail("append a record", io::ErrorKind::WriteZero.into()));
                }
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail("append a record", e)),
            }
        }
        self.len += line.len() as u64;
        self.next_seq += 1;
        Ok(seq)
    }

    /// A save point: everything appended so far is on disk, in the file at
    /// the journal's path, when this returns Ok.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        self.check_usable()?;
        if self.synced_len != self.len {
            self.syncs += 1;
            if let Err(e) = self.file.sync_data() {
                return Err(self.fail("sync the session file", e));
            }
        }
        // After the sync, so a replacement made while it ran is caught too:
        // a sync of a file no longer at the path saves nothing anyone will read.
        self.check_in_place()?;
        self.synced_len = self.len;
        Ok(())
    }

    /// Whether the journal's path and its lock's path still name the files
    /// this process opened; if not, the journal breaks like a failed save.
    fn check_in_place(&mut self) -> Result<(), JournalError> {
        let journal = self.identity.still_at(&self.path).map_err(|what| {
            let consequence = "records written since then did not reach the file at that path, so this session saves \
                               and runs nothing more; reopen the session to continue from what the file at that path holds";
            (self.path.clone(), what, consequence.to_string())
        });
        let checked = journal.and_then(|()| {
            self.lock.identity.still_at(&self.lock.path).map_err(|what| {
                let consequence = format!(
                    "it is the lock that keeps a second Mino from writing {}, so this session saves and runs nothing \
                     more; reopen the session",
                    self.path.display()
                );
                (self.lock.path.clone(), what, consequence)
            })
        });
        let Err((path, what, consequence)) = checked else { return Ok(()) };
        let err = JournalError::Replaced { path, what, consequence };
        let cause = err.to_string();
        tracing::error!(path = %self.path.display(), %cause, "journal save failed");
        self.discard_unsynced();
        self.broken = Some(cause);
        Err(err)
    }

    /// What the last successful save left on disk, read from the open file
    /// (not the path: after a replacement that names something else).
    pub fn saved_bytes(&self) -> io::Result<Vec<u8>> {
        let len = usize::try_from(self.synced_len).map_err(io::Error::other)?;
        let mut bytes = vec![0u8; len];
        self.reader.read_exact_at(&mut bytes, 0)?;
        Ok(bytes)
    }

    fn check_usable(&self) -> Result<(), JournalError> {
        match &self.broken {
            Some(cause) => Err(JournalError::Broken { path: self.path.clone(), cause: cause.clone() }),
            None => Ok(()),
        }
    }

    /// Breaks the journal after a failed write or sync, truncating the file to
    /// the last synced length: what was not synced is not assumed to be on disk.
    fn fail(&mut self, action: &'static str, source: io::Error) -> JournalError {
        let cause = format!("could not {action}: {source}");
        tracing::error!(path = %self.path.display(), %cause, "journal save failed");
        self.discard_unsynced();
        self.broken = Some(cause);
        JournalError::Io { path: self.path.clone(), action, source }
    }

    /// Truncates the open file back to the last synced length.
    fn discard_unsynced(&mut self) {
        if let Err(e) = self.file.set_len(self.synced_len) {
            tracing::error!(path = %self.path.display(), error = %e, "could not truncate after a failed save");
        } else if self.len != self.synced_len {
            let _ = self.file.sync_data();
        }
        self.len = self.synced_len;
    }
}

/// How long a held lock is retried before it is reported held. Two holders
/// hold a lock only for an instant: a child this process forked before it
/// released the lock (the fork copies every descriptor, the lock file's
/// too, and only the child's `exec` closes it, `O_CLOEXEC`), so closing a
/// session and opening it again while a command or MCP server is being
/// started would report the session open in another process; and a listing
/// in another process, which tests each lock by holding it shared for a few
/// microseconds. A lock another Mino process holds is held for far longer,
/// so the wait only delays that error. Half a second: on a loaded machine
/// (the test run at a load of 6 on 2 cores) a forked child waited past
/// 100 ms for the CPU before its `exec`.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

fn lock(file: &File, path: &Path) -> Result<(), JournalError> {
    let deadline = std::time::Instant::now() + LOCK_GRACE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => return Err(JournalError::Locked { path: path.to_path_buf() }),
            Err(TryLockError::Error(source)) => {
                return Err(JournalError::Io { path: path.to_path_buf(), action: "lock the session file", source });
            }
        }
    }
}

/// Stands in for the file for the instant `wrap_file` swaps it.
#[cfg(feature = "testing")]
struct NoFile;
#[cfg(feature = "testing")]
impl JournalFile for NoFile {
    fn write_at(&mut self, _: &[u8], _: u64) -> io::Result<usize> {
        Err(io::Error::other("no file"))
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Err(io::Error::other("no file"))
    }
    fn set_len(&mut self, _: u64) -> io::Result<()> {
        Err(io::Error::other("no file"))
    }
}

/// Verifies a session file's bytes in memory exactly as opening verifies
/// the file (without the transcript's consistency checks): the number of
/// good records and the torn tail that opening would cut. For fuzzing.
pub fn verify_bytes(bytes: &[u8]) -> Result<(u64, Option<TornTail>), JournalError> {
    visit_bytes(bytes, |_| Ok(()))
}

/// [`verify_bytes`], handing each good record to `visit`.
pub fn visit_bytes(
    bytes: &[u8],
    visit: impl FnMut(Record) -> Result<(), String>,
) -> Result<(u64, Option<TornTail>), JournalError> {
    let scan = scan(Path::new("<memory>"), bytes, bytes.len() as u64, visit)?;
    Ok((scan.records, scan.torn_tail))
}

/// [`visit_bytes`] over a reader of a file `len` bytes long (`path` names
/// it in errors): memory is bounded by the longest record, not the file.
pub fn visit_reader(
    path: &Path,
    reader: impl io::BufRead,
    len: u64,
    visit: impl FnMut(Record) -> Result<(), String>,
) -> Result<(u64, Option<TornTail>), JournalError> {
    let scan = scan(path, reader, len, visit)?;
    Ok((scan.records, scan.torn_tail))
}

struct Scan {
    records: u64,
    good_len: u64,
    torn_tail: Option<TornTail>,
}

/// Reads and verifies a whole file line by line: every line parses,
/// checksums match, `seq` counts up from 1 without gaps, and record 1 is the
/// session header.
fn scan(
    path: &Path,
    mut reader: impl io::BufRead,
    file_len: u64,
    mut visit: impl FnMut(Record) -> Result<(), String>,
) -> Result<Scan, JournalError> {
    let corrupt = |line: usize, reason: String| JournalError::Corrupt { path: path.to_path_buf(), line, reason };
    let io_err = |source| JournalError::Io { path: path.to_path_buf(), action: "read the session file", source };
    let mut line = Vec::with_capacity(4096);
    let mut offset = 0u64;
    let mut line_no = 0usize;
    let mut records = 0u64;
    let mut torn_tail = None;
    loop {
        line.clear();
        // Never more than the longest record: memory is bounded by what Mino
        // writes, not by the longest run of garbage in the file.
        let n = io::BufRead::read_until(&mut io::Read::take(&mut reader, MAX_RECORD_BYTES as u64), b'\n', &mut line)
            .map_err(io_err)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let has_newline = line.last() == Some(&b'\n');
        let skipped =
            if !has_newline && n == MAX_RECORD_BYTES { skip_line(&mut reader, &mut line).map_err(io_err)? } else { 0 };
        if skipped > 0 {
            let len = n as u64 + skipped;
            let reason = format!(
                "the line is {len} bytes, longer than any record Mino writes (at most {MAX_RECORD_BYTES} bytes)"
            );
            if offset + len >= file_len {
                let bytes = file_len.saturating_sub(offset);
                torn_tail = Some(TornTail { line: line_no, offset, bytes, reason });
                break;
            }
            return Err(corrupt(line_no, reason));
        }
        let is_last = offset + n as u64 >= file_len;
        let tear = |reason: String| TornTail { line: line_no, offset, bytes: file_len.saturating_sub(offset), reason };
        if !has_newline {
            torn_tail = Some(tear("no newline at the end of the file".into()));
            break;
        }
        let record = match decode_line(&line[..n - 1]) {
            Ok(record) => record,
            Err(LineError::Garbled(why)) if is_last => {
                torn_tail = Some(tear(format!("unparseable: {why}")));
                break;
            }
            Err(LineError::Newer { v, kind }) => {
                return Err(JournalError::Newer { path: path.to_path_buf(), line: line_no, v, kind })
            }
            Err(e) => return Err(corrupt(line_no, e.to_string())),
        };
        let expected = records + 1;
        if record.seq != expected {
            return Err(corrupt(
                line_no,
                format!("seq {} where {expected} was expected (a record is missing or repeated)", record.seq),
            ));
        }
        if (expected == 1) != matches!(record.body, RecordBody::Session { .. }) {
            return Err(corrupt(line_no, "the session header must be record 1, and only record 1".into()));
        }
        visit(record).map_err(|reason| corrupt(line_no, reason))?;
        records += 1;
        offset += n as u64;
    }
    if records == 0 {
        return Err(corrupt(1, "the file holds no session header".into()));
    }
    Ok(Scan { records, good_len: offset, torn_tail })
}

/// Reads past the rest of the current line (its newline included) in
/// bounded pieces, keeping none of it; returns how many bytes it passed.
fn skip_line(reader: &mut impl io::BufRead, scratch: &mut Vec<u8>) -> io::Result<u64> {
    let mut skipped = 0u64;
    loop {
        scratch.clear();
        let n = io::BufRead::read_until(&mut io::Read::take(&mut *reader, 1 << 16), b'\n', scratch)?;
        skipped += n as u64;
        if n == 0 || scratch.last() == Some(&b'\n') {
            return Ok(skipped);
        }
    }
}
