//! The command sandbox: what an approved command may touch, enforced by the
//! kernel in the command's own process before `bash` starts.
//!
//! Modes ([`SandboxMode`]):
//! - `off`: nothing is restricted (the default);
//! - `read-only`: the command may read and execute anything, write nowhere
//!   (except the null-like devices), and has no network;
//! - `workspace-write`: as `read-only`, but it may also write inside the
//!   workspace directory and the temporary directory.
//!
//! Mechanisms:
//! - **Landlock** (Linux ≥ 5.13; ABI 3 or later is required so that
//!   `truncate` is covered too): filesystem writes outside the allowed
//!   directories fail with `EACCES`; with ABI ≥ 4 TCP `bind` and `connect`
//!   fail with `EACCES`; with ABI ≥ 6 abstract unix sockets and signals to
//!   processes outside the sandbox are cut. `no_new_privs` is set, so
//!   setuid programs (`sudo`) do not gain privileges.
//! - **A network namespace** (where unprivileged user namespaces are
//!   allowed): the command gets its own empty network (only a loopback
//!   that is down), so UDP, ICMP, and abstract unix sockets to the outside
//!   are cut as well (`ENETUNREACH`). The user namespace maps the command's
//!   own uid and gid to themselves.
//!
//! What is in force is detected at run time ([`detect`]) and reported as it
//! is ([`SandboxSupport::describe`]); a mode whose promise the machine
//! cannot keep is refused ([`SandboxSupport::check`]) rather than run
//! weaker: `read-only`/`workspace-write` need Landlock ABI ≥ 3 for files and
//! at least one of Landlock TCP rules or a network namespace for the network.
//!
//! Use: [`prepare`] before the fork (opens the allowed directories, builds
//! the Landlock ruleset, formats the uid/gid maps; may allocate), then
//! [`PreparedSandbox::enter`] in the child between fork and exec (a
//! `pre_exec` hook; only system calls there, nothing that allocates on the
//! success path). What the sandbox does not contain is listed in
//! docs/reliability.md ("Command sandbox").

use std::ffi::CString;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use serde::{Deserialize, Serialize};

/// The Landlock ABI this code is written against; older kernels get what
/// they support (best effort), and [`SandboxSupport::check`] decides
/// whether that is enough.
const TARGET_ABI: ABI = ABI::V10;
/// The first ABI whose filesystem rules cover truncation.
const MIN_FS_ABI: u32 = 3;
/// The first ABI with TCP bind/connect rules.
const MIN_TCP_ABI: u32 = 4;

/// What a command may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    #[default]
    Off,
    ReadOnly,
    WorkspaceWrite,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = SandboxError;
    fn from_str(s: &str) -> Result<Self, SandboxError> {
        match s {
            "off" => Ok(SandboxMode::Off),
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            other => Err(SandboxError::UnknownMode(other.to_owned())),
        }
    }
}

/// What this machine can enforce, detected once (at startup).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SandboxSupport {
    /// The kernel's Landlock ABI version, 0 when Landlock is unavailable
    /// (not built in, disabled at boot, or blocked by seccomp).
    pub landlock_abi: u32,
    /// Whether a process here may create a user and a network namespace
    /// (tried in a short-lived child, not guessed from sysctls).
    pub network_namespace: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("unknown sandbox mode {0:?}: use off, read-only or workspace-write")]
    UnknownMode(String),
    #[error("the sandbox mode {mode} cannot be enforced here: {missing}; use `off` (commands then run unrestricted, after approval) or run Mino on Linux 5.19 or later with Landlock enabled")]
    Unsupported { mode: SandboxMode, missing: String },
    #[error("could not prepare the sandbox: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("could not prepare the sandbox: {path}: {message}")]
    Path { path: PathBuf, message: String },
}

/// Detects what the machine supports: the Landlock ABI (one system call)
/// and whether a user + network namespace can be created (a forked child
/// tries and exits).
pub fn detect() -> SandboxSupport {
    SandboxSupport { landlock_abi: landlock_abi(), network_namespace: probe_network_namespace() }
}

fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and this flag the call only
    // returns the ABI version (or an error).
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(abi).unwrap_or(0)
}

fn probe_network_namespace() -> bool {
    let Ok(maps) = IdMaps::current() else { return false };
    // SAFETY: the child only makes system calls (unshare, open, write,
    // close) on data prepared before the fork, then `_exit`s.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            let ok = enter_network_namespace(&maps).is_ok();
            libc::_exit(if ok { 0 } else { 1 });
        }
        if pid < 0 {
            return false;
        }
        let mut status = 0;
        loop {
            let waited = libc::waitpid(pid, &mut status, 0);
            if waited == pid {
                break;
            }
            if waited < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return false;
            }
        }
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }
}

/// What a mode would actually enforce on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Enforcement {
    pub mode: SandboxMode,
    /// Writes are confined by Landlock.
    pub filesystem: bool,
    /// TCP bind/connect are denied by Landlock.
    pub tcp: bool,
    /// The command runs in its own network namespace.
    pub network_namespace: bool,
}

impl SandboxSupport {
    /// What `mode` enforces here, or why it cannot be enforced. `off` always
    /// succeeds (and enforces nothing).
    pub fn check(&self, mode: SandboxMode) -> Result<Enforcement, SandboxError> {
        if mode == SandboxMode::Off {
            return Ok(Enforcement { mode, filesystem: false, tcp: false, network_namespace: false });
        }
        let filesystem = self.landlock_abi >= MIN_FS_ABI;
        let tcp = self.landlock_abi >= MIN_TCP_ABI;
        let mut missing = Vec::new();
        if !filesystem {
            missing.push(match self.landlock_abi {
                0 => "Landlock is not available (kernel without it, or disabled)".to_owned(),
                abi => format!("Landlock ABI {abi} does not cover truncation (ABI {MIN_FS_ABI} needed)"),
            });
        }
        if !tcp && !self.network_namespace {
            missing.push(
                "neither Landlock network rules (ABI 4) nor unprivileged network namespaces are available".to_owned(),
            );
        }
        if !missing.is_empty() {
            return Err(SandboxError::Unsupported { mode, missing: missing.join("; ") });
        }
        Ok(Enforcement { mode, filesystem, tcp, network_namespace: self.network_namespace })
    }

    /// One line for startup reporting: what `mode` enforces here, or that it
    /// cannot be enforced. Never claims more than [`Self::check`] found.
    pub fn describe(&self, mode: SandboxMode) -> String {
        match self.check(mode) {
            Err(e) => e.to_string(),
            Ok(_) if mode == SandboxMode::Off => "sandbox off: commands run with the server's permissions".to_owned(),
            Ok(e) => {
                let writes = match mode {
                    SandboxMode::WorkspaceWrite => "writes only in the workspace and the temporary directory",
                    _ => "no writes",
                };
                let mut network = Vec::new();
                if e.tcp {
                    network.push(format!("Landlock TCP rules (ABI {})", self.landlock_abi));
                }
                if e.network_namespace {
                    network.push("own network namespace".to_owned());
                }
                format!(
                    "sandbox {mode}: {writes} (Landlock ABI {}); no network ({})",
                    self.landlock_abi,
                    network.join(" + ")
                )
            }
        }
    }
}

/// Where a sandboxed command may write (in `workspace-write`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// The workspace directory (the command's working directory).
    pub workspace: PathBuf,
    /// The temporary directory the command sees as `$TMPDIR`.
    pub temp: PathBuf,
}

/// Devices every command may write to whatever the mode: discarding output
/// (`> /dev/null`) is not a write anyone needs to stop.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// A sandbox ready to be entered in a child: everything that allocates or
/// opens files is done; [`Self::enter`] only makes system calls.
pub struct PreparedSandbox {
    ruleset: Option<RulesetCreated>,
    id_maps: Option<IdMaps>,
}

impl std::fmt::Debug for PreparedSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedSandbox").field("network_namespace", &self.id_maps.is_some()).finish_non_exhaustive()
    }
}

/// Builds the sandbox for `policy` on a machine with `support`. `Ok(None)`
/// for `off`. Fails when the mode cannot be enforced here (see
/// [`SandboxSupport::check`]) or an allowed directory cannot be opened.
pub fn prepare(policy: &SandboxPolicy, support: &SandboxSupport) -> Result<Option<PreparedSandbox>, SandboxError> {
    let enforcement = support.check(policy.mode)?;
    if policy.mode == SandboxMode::Off {
        return Ok(None);
    }
    let abi = TARGET_ABI;
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::BestEffort).handle_access(AccessFs::from_all(abi))?;
    if enforcement.tcp {
        // Handled and never granted: every TCP bind and connect is denied.
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    ruleset = ruleset.scope(Scope::from_all(abi))?;
    let mut created = ruleset.create()?;
    let beneath = |path: &Path, access| -> Result<PathBeneath<PathFd>, SandboxError> {
        let fd = PathFd::new(path).map_err(|e| SandboxError::Path { path: path.to_owned(), message: e.to_string() })?;
        Ok(PathBeneath::new(fd, access))
    };
    created = created.add_rule(beneath(Path::new("/"), AccessFs::from_read(abi))?)?;
    for device in WRITABLE_DEVICES {
        if Path::new(device).exists() {
            created = created.add_rule(beneath(Path::new(device), AccessFs::from_file(abi))?)?;
        }
    }
    if policy.mode == SandboxMode::WorkspaceWrite {
        for dir in [&policy.workspace, &policy.temp] {
            created = created.add_rule(beneath(dir, AccessFs::from_all(abi))?)?;
        }
    }
    let id_maps = if enforcement.network_namespace {
        Some(IdMaps::current().map_err(|message| SandboxError::Path { path: "/proc/self".into(), message })?)
    } else {
        None
    };
    Ok(Some(PreparedSandbox { ruleset: Some(created), id_maps }))
}

impl PreparedSandbox {
    /// Enters the sandbox: the calling process (the forked child, just
    /// before exec) gets its own network namespace (if prepared) and the
    /// Landlock restrictions. Made for a `pre_exec` hook: system calls only.
    /// An error means the command must not run (the spawn fails with it);
    /// a sandbox is never silently skipped.
    ///
    /// # Safety
    /// Call it only in a freshly forked child of a possibly multi-threaded
    /// process, as `pre_exec` does, and at most once.
    pub unsafe fn enter(&mut self) -> std::io::Result<()> {
        if let Some(maps) = &self.id_maps {
            enter_network_namespace(maps)?;
        }
        let Some(ruleset) = self.ruleset.take() else {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        };
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset != RulesetStatus::NotEnforced && status.no_new_privs => Ok(()),
            Ok(_) => Err(std::io::Error::from_raw_os_error(libc::ENOSYS)),
            Err(_) => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
        }
    }
}

/// The `/proc/self/{setgroups,uid_map,gid_map}` writes that keep the
/// command's own uid and gid inside its new user namespace, formatted
/// before the fork.
struct IdMaps {
    uid_map: CString,
    gid_map: CString,
}

impl IdMaps {
    fn current() -> Result<Self, String> {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let uid_map = CString::new(format!("{uid} {uid} 1\n")).map_err(|e| e.to_string())?;
        let gid_map = CString::new(format!("{gid} {gid} 1\n")).map_err(|e| e.to_string())?;
        Ok(Self { uid_map, gid_map })
    }
}

/// `unshare(CLONE_NEWUSER | CLONE_NEWNET)` and the id maps. System calls only.
fn enter_network_namespace(maps: &IdMaps) -> std::io::Result<()> {
    // SAFETY: plain system calls on NUL-terminated strings made before the fork.
    unsafe {
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        write_proc(c"/proc/self/setgroups", c"deny")?;
        write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
        write_proc(c"/proc/self/gid_map", &maps.gid_map)?;
    }
    Ok(())
}

unsafe fn write_proc(path: &std::ffi::CStr, content: &std::ffi::CStr) -> std::io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let bytes = content.to_bytes();
    let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    let error = std::io::Error::last_os_error();
    libc::close(fd);
    if written != bytes.len() as isize {
        return Err(error);
    }
    Ok(())
}

/// A note for a sandboxed command's result when its failure looks like the
/// sandbox's doing: a permission error (`EACCES`/`EPERM` wording, or
/// "Read-only file system") or an unreachable network, with a non-zero exit.
/// `None` when the mode is `off`, the command succeeded, or nothing in its
/// output points at the sandbox. Append it with the output's other notes.
pub fn failure_note(policy: &SandboxPolicy, output: &str, exit_code: Option<i32>) -> Option<String> {
    if policy.mode == SandboxMode::Off || exit_code == Some(0) {
        return None;
    }
    const DENIED: &[&str] =
        &["Permission denied", "Operation not permitted", "Read-only file system", "EACCES", "EPERM", "EROFS"];
    const NETWORK: &[&str] = &[
        "Network is unreachable",
        "ENETUNREACH",
        "Temporary failure in name resolution",
        "Could not resolve host",
        "Name or service not known",
        "Connection refused",
        "Couldn't connect",
        "Failed to connect",
    ];
    let hit = |needles: &[&str]| needles.iter().any(|n| output.contains(n));
    if !hit(DENIED) && !hit(NETWORK) {
        return None;
    }
    Some(match policy.mode {
        SandboxMode::WorkspaceWrite => format!(
            "[the sandbox (workspace-write) forbids writing outside {} and {}, and network access; this failure may be the sandbox's doing]",
            policy.workspace.display(),
            policy.temp.display()
        ),
        _ => "[the sandbox (read-only) forbids writing anywhere and network access; this failure may be the sandbox's doing]".to_owned(),
    })
}
