//! The session journal: one JSONL file per conversation, one writer at a time.
//!
//! Records are written straight to the file (no user-space buffer a killed
//! process could lose) and synced only at the save points the caller asks for
//! with [`Journal::sync`]. A failed write or sync truncates the file back to the
//! last synced length and breaks the journal: nothing more is written until the
//! session is reopened, because after a failed sync nothing unsynced can be
//! assumed to be on disk (Linux may drop the dirty pages and report success on
//! a later sync).

pub mod file;
pub mod record;

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub use file::{Fault, FaultCounters, FaultPlan, FaultyFile, JournalFile};
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
}

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

pub struct Journal {
    path: PathBuf,
    file: Box<dyn JournalFile>,
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
        let tmp = path.with_extension(format!("jsonl.tmp-{}", std::process::id()));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_err("create the session file", e))?;
        let result = (|| {
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
        Ok(Journal {
            path: path.to_path_buf(),
            file: Box::new(file),
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
        let file =
            OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path).map_err(|e| match e
                .raw_os_error()
            {
                Some(libc::ELOOP) => io_err(
                    "open the session file",
                    io::Error::other("it is a symbolic link; session files must be regular files"),
                ),
                _ => io_err("open the session file", e),
            })?;
        lock(&file, path)?;
        let file_len = file.metadata().map_err(|e| io_err("read the session file", e))?.len();
        let scan = scan(path, io::BufReader::with_capacity(1 << 16, &file), file_len, visit)?;
        if let Some(torn) = &scan.torn_tail {
            file.set_len(torn.offset).map_err(|e| io_err("cut the torn last line", e))?;
            file.sync_data().map_err(|e| io_err("sync the cut", e))?;
        }
        let journal = Journal {
            path: path.to_path_buf(),
            file: Box::new(file),
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

    /// Puts a layer between the journal and its file (fault injection in tests).
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

    /// A save point: everything appended so far is on disk when this returns Ok.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        self.check_usable()?;
        if self.synced_len == self.len {
            return Ok(());
        }
        self.syncs += 1;
        match self.file.sync_data() {
            Ok(()) => {
                self.synced_len = self.len;
                Ok(())
            }
            Err(e) => Err(self.fail("sync the session file", e)),
        }
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
        if let Err(e) = self.file.set_len(self.synced_len) {
            tracing::error!(path = %self.path.display(), error = %e, "could not truncate after a failed save");
        } else if self.len != self.synced_len {
            let _ = self.file.sync_data();
        }
        self.len = self.synced_len;
        self.broken = Some(cause);
        JournalError::Io { path: self.path.clone(), action, source }
    }
}

fn lock(file: &File, path: &Path) -> Result<(), JournalError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(JournalError::Locked { path: path.to_path_buf() }),
        Err(TryLockError::Error(source)) => {
            Err(JournalError::Io { path: path.to_path_buf(), action: "lock the session file", source })
        }
    }
}

/// Stands in for the file for the instant `wrap_file` swaps it.
struct NoFile;
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
        let n = io::BufRead::read_until(&mut reader, b'\n', &mut line).map_err(io_err)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let has_newline = line.last() == Some(&b'\n');
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
