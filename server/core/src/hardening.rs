//! Keeping the API key out of reach of the commands Mino runs.
//!
//! An approved command runs as the same user as the server. Without this,
//! it could read the key from `/proc/<server>/environ` (the environment
//! block the server was started with), from `/proc/<server>/mem`, or by
//! attaching a debugger. [`harden_process`], first thing in `main`:
//!
//! - makes the process not dumpable (`PR_SET_DUMPABLE` 0): its `/proc`
//!   files (`environ`, `mem`, `maps`, `fd`) become root's and unreadable by
//!   other processes of the same user, and they cannot `ptrace` it (root
//!   still can: a command running as root is not kept out by this);
//! - allows no core dump (`RLIMIT_CORE` 0), which would hold the key too;
//! - withdraws the secrets ([`SECRET_VARIABLES`]) from the environment:
//!   the value is kept in this process's memory only ([`withdrawn`]), the
//!   bytes of the initial environment block (which `/proc/<pid>/environ`
//!   shows, whatever `unsetenv` did) are overwritten with zeros, and the
//!   variable is unset, so no child can inherit it either;
//! - removes the loader variables (`LD_PRELOAD`, `LD_LIBRARY_PATH`,
//!   `LD_AUDIT`, …) from the environment, so nothing the server starts
//!   loads code through them. (Commands get a cleared environment plus
//!   [`crate::bash::ENV_ALLOWLIST`] anyway.)
//!
//! The supervisor of each command is hardened the same way
//! ([`harden_supervisor`]); it never has the key (it is started with the
//! command's environment).

use std::ffi::{CStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::sync::OnceLock;

/// Variables that hold a secret: read once, then gone from the environment.
pub const SECRET_VARIABLES: &[&str] = &[crate::settings::API_KEY.env];

/// Variables that make the dynamic loader load or audit code.
pub const LOADER_VARIABLES: &[&str] =
    &["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_DEBUG", "LD_DEBUG_OUTPUT", "LD_PROFILE", "LD_ORIGIN_PATH"];

static WITHDRAWN: OnceLock<Vec<(String, OsString)>> = OnceLock::new();

/// What [`harden_process`] put in force, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hardening {
    /// `PR_SET_DUMPABLE` 0 took effect.
    pub not_dumpable: bool,
    /// `RLIMIT_CORE` is 0.
    pub no_core_dump: bool,
    /// The secrets found and withdrawn from the environment.
    pub withdrawn: Vec<String>,
}

impl std::fmt::Display for Hardening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not dumpable: {}; core dumps off: {}; withdrawn from the environment: {}",
            self.not_dumpable,
            self.no_core_dump,
            if self.withdrawn.is_empty() { "none".to_owned() } else { self.withdrawn.join(", ") }
        )
    }
}

extern "C" {
    static mut environ: *mut *mut libc::c_char;
}

/// Hardens the server process (see the module docs).
///
/// # Safety
/// Call it first thing in `main`, before any other thread starts: it
/// changes the process's environment.
pub unsafe fn harden_process() -> Hardening {
    let (not_dumpable, no_core_dump) = restrict_self();
    let mut withdrawn = Vec::new();
    let mut values = Vec::new();
    for name in SECRET_VARIABLES {
        if let Some(value) = wipe_from_environment(name) {
            withdrawn.push((*name).to_owned());
            values.push(((*name).to_owned(), value));
        }
    }
    for name in LOADER_VARIABLES {
        std::env::remove_var(name);
    }
    let _ = WITHDRAWN.set(values);
    Hardening { not_dumpable, no_core_dump, withdrawn }
}

/// A command's supervisor: not dumpable, no core dumps. (It never has the
/// key: it is started with the command's environment.)
pub fn harden_supervisor() {
    restrict_self();
}

fn restrict_self() -> (bool, bool) {
    // SAFETY: prctl and setrlimit with plain integer arguments and a
    // struct that outlives the call.
    unsafe {
        let limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        let no_core = libc::setrlimit(libc::RLIMIT_CORE, &limit) == 0;
        let not_dumpable =
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 && libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) == 0;
        (not_dumpable, no_core)
    }
}

/// Finds `name` in the C environment, copies its value, unsets it, then
/// overwrites each such entry's bytes (name and value) in place with zeros:
/// the initial block is what `/proc/<pid>/environ` reads, whatever
/// `unsetenv` did to the array of pointers.
unsafe fn wipe_from_environment(name: &str) -> Option<OsString> {
    let mut found = None;
    let mut entries: Vec<(*mut libc::c_char, usize)> = Vec::new();
    let mut entry = environ;
    if entry.is_null() {
        return None;
    }
    while !(*entry).is_null() {
        let bytes = CStr::from_ptr(*entry).to_bytes();
        if bytes.len() > name.len() && bytes.starts_with(name.as_bytes()) && bytes[name.len()] == b'=' {
            if found.is_none() {
                found = Some(OsString::from_vec(bytes[name.len() + 1..].to_vec()));
            }
            entries.push((*entry, bytes.len()));
        }
        entry = entry.add(1);
    }
    std::env::remove_var(name);
    for (start, len) in entries {
        std::ptr::write_bytes(start, 0, len);
    }
    found
}

/// The value of a secret withdrawn from the environment at start-up, if it
/// was set then.
pub fn withdrawn(name: &str) -> Option<OsString> {
    WITHDRAWN.get()?.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}
