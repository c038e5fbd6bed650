//! Whether another process holds a session, asked without disturbing it:
//! Mino holds a session by an exclusive `flock` on its lock file (or, for
//! a journal from before lock files, on the journal itself).

use std::collections::HashSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens a session's file for reading without following a symlink.
pub(super) fn open_read(path: &Path) -> io::Result<File> {
    // O_NONBLOCK: a FIFO planted under a session's name must not hang a list.
    OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

/// `Err(None)` when another open file holds the lock, `Err(Some)` on failure.
pub(super) fn try_lock_exclusive(file: &File) -> Result<(), Option<io::Error>> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(None),
        Err(TryLockError::Error(e)) => Err(Some(e)),
    }
}

/// The inode numbers of every file some process holds an `flock` on, from
/// `/proc/locks`, read once per list so that a session nobody holds costs
/// no lock test at all (a number found there is still confirmed by
/// [`lock_held`]). Only trusted after checking that a lock this process
/// takes (shared, on the sessions directory, which nothing else locks)
/// shows up under the directory's own inode number; else `None`, and every
/// session's lock is tested.
pub(super) struct LockTable {
    inodes: HashSet<u64>,
}

impl LockTable {
    /// `/proc/locks` is one line per lock; more than this is not read.
    const MAX_BYTES: u64 = 4 << 20;

    pub(super) fn read(sessions: &Path) -> Option<LockTable> {
        let dir = File::open(sessions).ok()?;
        let ino = std::os::unix::fs::MetadataExt::ino(&dir.metadata().ok()?);
        dir.try_lock_shared().ok()?;
        let mut text = String::new();
        let read = File::open("/proc/locks")
            .and_then(|f| io::Read::read_to_string(&mut io::Read::take(f, Self::MAX_BYTES), &mut text));
        let _ = dir.unlock();
        if read.ok()? as u64 >= Self::MAX_BYTES {
            return None;
        }
        // `1: FLOCK  ADVISORY  WRITE 4242 fd:01:131090 0 EOF`; a line with
        // `->` is a process waiting for a lock, which holds nothing.
        let inodes: HashSet<u64> = text
            .lines()
            .filter(|line| !line.contains("->"))
            .filter_map(|line| {
                let mut fields = line.split_whitespace().skip(1);
                if fields.next()? != "FLOCK" {
                    return None;
                }
                fields.nth(3)?.rsplit(':').next()?.parse().ok()
            })
            .collect();
        inodes.contains(&ino).then_some(LockTable { inodes })
    }

    pub(super) fn has(&self, ino: u64) -> bool {
        self.inodes.contains(&ino)
    }
}

/// Whether some process holds the session's lock file. Tested by taking a
/// shared lock on a read-only descriptor and closing it at once: a holder
/// (exclusive) is never disturbed; an opener racing this instant finds it
/// busy, which is why opening tries a held lock again for a moment (`journal::LOCK_GRACE`).
pub(super) fn lock_held(lock: &Path) -> bool {
    match open_read(lock) {
        // The shared lock taken here goes with the descriptor, at once.
        Ok(file) => probe(&file),
        Err(_) => false,
    }
}

/// [`lock_held`] for a descriptor that stays open: the shared lock is
/// released explicitly.
pub(super) fn file_held(file: &File) -> bool {
    let held = probe(file);
    if !held {
        let _ = file.unlock();
    }
    held
}

fn probe(file: &File) -> bool {
    match file.try_lock_shared() {
        Ok(()) => false,
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(e)) => {
            tracing::warn!(error = %e, "could not test a session's lock");
            false
        }
    }
}
