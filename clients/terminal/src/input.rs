//! Lines from stdin, for prompts.
//!
//! On a terminal nothing is read until a prompt asks for a line: a reader
//! that read ahead could hold a line typed before an approval question in
//! its own buffer, where the terminal's flush cannot reach it, and hand it
//! over as the answer. So the reader thread waits for a request, polls the
//! terminal, and reads (in canonical mode one `read` returns at most one
//! line) only while the request stands; withdrawing a request, or
//! discarding typed-ahead input, waits for a read in progress to finish.
//! Piped input is read ahead as before (nothing there is typed ahead of a
//! question, and it can never acknowledge).

use std::io::BufRead;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::sync::mpsc;

/// How often a waiting reader looks again whether its request still stands.
const POLL_MS: i32 = 100;
/// The longest line kept; the rest of a longer line is read and dropped.
const MAX_LINE: usize = 1024 * 1024 + 1;

#[derive(Default)]
struct Demand {
    /// A prompt waits for a line.
    wanted: bool,
    /// The start of a line whose end has not been read yet.
    partial: Vec<u8>,
}

struct Shared {
    demand: Mutex<Demand>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Demand> {
        self.demand.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub struct Input {
    lines: mpsc::UnboundedReceiver<Option<String>>,
    /// Present on a terminal: reads happen only on demand.
    shared: Option<Arc<Shared>>,
    /// stdin is a terminal: it echoes what is typed. Otherwise answers are
    /// echoed after their prompt so the transcript reads the same.
    pub interactive: bool,
    ended: bool,
}

/// Withdraws the request for a line when the waiting prompt goes away
/// (Ctrl+C), so no read happens for a prompt no longer on screen.
struct Withdraw<'a>(Option<&'a Shared>);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Some(shared) = self.0 {
            shared.lock().wanted = false;
        }
    }
}

impl Input {
    pub fn start() -> Input {
        // SAFETY: isatty only inspects the descriptor.
        let interactive = unsafe { libc::isatty(0) } == 1;
        let (tx, lines) = mpsc::unbounded_channel();
        if !interactive {
            std::thread::spawn(move || read_ahead(tx));
            return Input { lines, shared: None, interactive, ended: false };
        }
        let shared = Arc::new(Shared { demand: Mutex::new(Demand::default()), changed: Condvar::new() });
        let reader = shared.clone();
        std::thread::spawn(move || read_on_demand(&reader, tx));
        Input { lines, shared: Some(shared), interactive, ended: false }
    }

    /// Drops lines typed before a question was shown: an answer must be
    /// given to the question on screen, not typed ahead of it.
    pub fn discard_typed_ahead(&mut self) {
        let Some(shared) = &self.shared else { return };
        // Holding the lock waits out a read in progress; none starts while held.
        let mut demand = shared.lock();
        demand.wanted = false;
        demand.partial.clear();
        // SAFETY: tcflush only discards the terminal's pending input.
        unsafe {
            libc::tcflush(0, libc::TCIFLUSH);
        }
        while let Ok(line) = self.lines.try_recv() {
            if line.is_none() {
                self.ended = true;
            }
        }
    }

    /// Waits for a line; `None` at end of input.
    pub async fn recv(&mut self) -> Option<String> {
        if self.ended {
            return None;
        }
        let _withdraw = Withdraw(self.shared.as_deref());
        if let Some(shared) = &self.shared {
            shared.lock().wanted = true;
            shared.changed.notify_one();
        }
        let line = self.lines.recv().await.flatten();
        if line.is_none() {
            self.ended = true;
        }
        if !self.interactive {
            match &line {
                Some(l) => crate::term::out(&format!("{l}\n")),
                None => crate::term::out("\n"),
            }
        }
        line
    }
}

fn trim(buf: &[u8]) -> String {
    String::from_utf8_lossy(buf).trim_end_matches(['\n', '\r']).to_owned()
}

fn read_ahead(tx: mpsc::UnboundedSender<Option<String>>) {
    let stdin = std::io::stdin();
    let mut lock = stdin.lock();
    loop {
        let mut buf = Vec::new();
        match lock.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if tx.send(Some(trim(&buf))).is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send(None);
}

fn read_on_demand(shared: &Shared, tx: mpsc::UnboundedSender<Option<String>>) {
    let fd = std::io::stdin().as_raw_fd();
    loop {
        {
            let mut demand = shared.lock();
            while !demand.wanted {
                demand = shared.changed.wait(demand).unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        }
        let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut poll, 1, POLL_MS) };
        if ready <= 0 {
            continue;
        }
        let mut demand = shared.lock();
        if !demand.wanted {
            continue;
        }
        let mut chunk = [0u8; 4096];
        // SAFETY: reads into a buffer of the length given.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            let _ = tx.send(None);
            return;
        }
        if n == 0 {
            let _ = tx.send(None);
            return;
        }
        let got = &chunk[..n as usize];
        let room = MAX_LINE.saturating_sub(demand.partial.len());
        demand.partial.extend_from_slice(&got[..got.len().min(room)]);
        if got.ends_with(b"\n") {
            demand.wanted = false;
            let text = trim(&demand.partial);
            demand.partial.clear();
            if tx.send(Some(text)).is_err() {
                return;
            }
        }
    }
}
