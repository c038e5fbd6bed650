//! The one seam between the journal and the disk. Every byte the journal
//! writes and every sync it asks for goes through [`JournalFile`], so tests can
//! put a `FaultyFile` in between and fail the N-th write or sync the way a
//! full or failing disk does. The fault layer exists only with the `testing`
//! feature, which only tests and benchmarks turn on.

use std::io;
use std::os::unix::fs::FileExt;
#[cfg(feature = "testing")]
use std::sync::{Arc, Mutex};

pub trait JournalFile: Send {
    /// Writes some prefix of `buf` at `offset`; may be short, like `pwrite(2)`.
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<usize>;
    fn sync_data(&mut self) -> io::Result<()>;
    fn set_len(&mut self, len: u64) -> io::Result<()>;
}

impl JournalFile for std::fs::File {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<usize> {
        FileExt::write_at(self, buf, offset)
    }
    fn sync_data(&mut self) -> io::Result<()> {
        std::fs::File::sync_data(self)
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        std::fs::File::set_len(self, len)
    }
}

#[cfg(feature = "testing")]
/// How an injected fault fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `ENOSPC`, the disk is full.
    NoSpace,
    /// `EIO`, the device failed.
    Io,
    /// Half the buffer is written, then `ENOSPC`: what a full tmpfs does.
    ShortWrite,
}

#[cfg(feature = "testing")]
impl Fault {
    fn error(self) -> io::Error {
        match self {
            Fault::NoSpace | Fault::ShortWrite => io::Error::from_raw_os_error(libc::ENOSPC),
            Fault::Io => io::Error::from_raw_os_error(libc::EIO),
        }
    }
}

#[cfg(feature = "testing")]
/// Which operation fails. Counting starts at 1 with the first operation made
/// through the [`FaultyFile`]; once a fault has fired every later operation
/// of that kind fails too, as a dead disk would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPlan {
    Never,
    Write { nth: usize, fault: Fault },
    Sync { nth: usize, fault: Fault },
}

#[cfg(feature = "testing")]
/// Shared counters so a test can see how many operations a turn made.
#[derive(Debug, Default)]
pub struct FaultCounters {
    pub writes: usize,
    pub syncs: usize,
    pub fired: bool,
}

#[cfg(feature = "testing")]
pub struct FaultyFile {
    inner: Box<dyn JournalFile>,
    plan: FaultPlan,
    counters: Arc<Mutex<FaultCounters>>,
}

#[cfg(feature = "testing")]
impl FaultyFile {
    pub fn new(inner: Box<dyn JournalFile>, plan: FaultPlan) -> (Self, Arc<Mutex<FaultCounters>>) {
        let counters = Arc::new(Mutex::new(FaultCounters::default()));
        (Self { inner, plan, counters: counters.clone() }, counters)
    }

    fn counters(&self) -> std::sync::MutexGuard<'_, FaultCounters> {
        self.counters.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(feature = "testing")]
impl JournalFile for FaultyFile {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let (n, plan) = {
            let mut c = self.counters();
            c.writes += 1;
            (c.writes, self.plan)
        };
        match plan {
            FaultPlan::Write { nth, fault } if n >= nth => {
                let first = !std::mem::replace(&mut self.counters().fired, true);
                if fault == Fault::ShortWrite && first && buf.len() > 1 {
                    return self.inner.write_at(&buf[..buf.len() / 2], offset);
                }
                Err(fault.error())
            }
            _ => self.inner.write_at(buf, offset),
        }
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let (n, plan) = {
            let mut c = self.counters();
            c.syncs += 1;
            (c.syncs, self.plan)
        };
        match plan {
            FaultPlan::Sync { nth, fault } if n >= nth => {
                self.counters().fired = true;
                Err(fault.error())
            }
            _ => self.inner.sync_data(),
        }
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
}
