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
//! - **A mount namespace** (the same user namespace): in `workspace-write`,
//!   the protected paths of the workspace ([`SandboxPolicy::protected`]:
//!   `.git`, `.vscode`, `.envrc`, `.nvim.lua`, and `$MINO_HOME` when it lies
//!   in a writable directory) are bind-mounted read-only over themselves
//!   before Landlock applies, as bubblewrap's `--ro-bind` does. Landlock
//!   alone cannot do this: it only grants, and cannot take back a subpath
//!   of a granted directory. A protected path that does not exist yet gets
//!   an empty placeholder (a directory or a file) for the command's
//!   lifetime, bound read-only the same way, so it cannot be created
//!   either; a mount point cannot be renamed or removed (`EBUSY`), so
//!   `mv .git x` fails too. After the command, whatever is left in its
//!   mount namespace (a process that escaped its group with `setsid`) is
//!   killed, then the placeholders are removed ([`Placeholders`]).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSupport {
    /// The kernel's Landlock ABI version, 0 when Landlock is unavailable
    /// (not built in, disabled at boot, or blocked by seccomp).
    pub landlock_abi: u32,
    /// Whether a process here may create a user and a network namespace
    /// (tried in a short-lived child, not guessed from sysctls).
    pub network_namespace: bool,
    /// Whether a process here may create a user and a mount namespace and
    /// bind-mount a path read-only in it (tried the same way): what keeps
    /// protected paths read-only in `workspace-write`.
    #[serde(default)]
    pub mount_namespace: bool,
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
/// and whether a user + network namespace, and a user + mount namespace
/// with a read-only bind, can be created (forked children try and exit).
/// Probed once per process; later calls return the first answer.
///
/// The children are forks of the caller: the server probes before it
/// withdraws its secrets ([`crate::hardening`]), so no child of a hardened
/// server is ever made dumpable again.
pub fn detect() -> SandboxSupport {
    static SUPPORT: std::sync::OnceLock<SandboxSupport> = std::sync::OnceLock::new();
    *SUPPORT.get_or_init(|| SandboxSupport {
        landlock_abi: landlock_abi(),
        network_namespace: probe(Probe::Network),
        mount_namespace: probe(Probe::Mount),
    })
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

#[derive(Clone, Copy)]
enum Probe {
    Network,
    Mount,
}

fn probe(what: Probe) -> bool {
    let Ok(maps) = IdMaps::current() else { return false };
    let root = c"/";
    // SAFETY: statvfs on a NUL-terminated path into a zeroed struct.
    let root_flags = unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(root.as_ptr(), &mut stat) != 0 {
            return false;
        }
        locked_mount_flags(stat.f_flag)
    };
    // SAFETY: the child only makes system calls (unshare, open, write,
    // close, mount) on data prepared before the fork, then `_exit`s.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            let ok = match what {
                Probe::Network => enter_namespaces(&maps, libc::CLONE_NEWNET).is_ok(),
                Probe::Mount => {
                    let bind = Bind { path: root.to_owned(), flags: root_flags };
                    enter_namespaces(&maps, libc::CLONE_NEWNS).is_ok() && bind_read_only(&[bind]).is_ok()
                }
            };
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
    /// Protected paths are read-only (a mount namespace); always true in
    /// `read-only` (Landlock lets it write nowhere), false in `off`.
    pub protected_paths: bool,
}

impl SandboxSupport {
    /// What `mode` enforces here, or why it cannot be enforced. `off` always
    /// succeeds (and enforces nothing).
    pub fn check(&self, mode: SandboxMode) -> Result<Enforcement, SandboxError> {
        if mode == SandboxMode::Off {
            return Ok(Enforcement {
                mode,
                filesystem: false,
                tcp: false,
                network_namespace: false,
                protected_paths: false,
            });
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
        let protected_paths = mode == SandboxMode::ReadOnly || self.mount_namespace;
        Ok(Enforcement { mode, filesystem, tcp, network_namespace: self.network_namespace, protected_paths })
    }

    /// One line for startup reporting: what `mode` enforces here, or that it
    /// cannot be enforced. Never claims more than [`Self::check`] found.
    pub fn describe(&self, mode: SandboxMode) -> String {
        match self.check(mode) {
            Err(e) => e.to_string(),
            Ok(_) if mode == SandboxMode::Off => "sandbox off: commands run with the server's permissions".to_owned(),
            Ok(e) => {
                let writes = match mode {
                    SandboxMode::WorkspaceWrite if e.protected_paths => {
                        "writes only in the workspace and the temporary directory, protected paths \
                         (.git, .vscode, .envrc, .nvim.lua, Mino's home) read-only (mount namespace)"
                    }
                    SandboxMode::WorkspaceWrite => {
                        "writes only in the workspace and the temporary directory; protected paths \
                         (.git, .vscode, .envrc, .nvim.lua, Mino's home) are NOT kept read-only (no mount \
                         namespace here), so sandboxed-auto asks for every command"
                    }
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
    /// Paths a `workspace-write` command may read but never write, existing
    /// or not ([`crate::protect::sandbox_protected`]); only those inside the
    /// workspace or the temporary directory need the mount namespace (Landlock
    /// already keeps everything else read-only).
    #[serde(default)]
    pub protected: Vec<ProtectedPath>,
}

/// A path kept read-only inside the sandbox, and what it is when it does
/// not exist yet (its placeholder is then made as that).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedPath {
    pub path: PathBuf,
    pub directory: bool,
}

/// Devices every command may write to whatever the mode: discarding output
/// (`> /dev/null`) is not a write anyone needs to stop.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// A sandbox ready to be entered in a child: everything that allocates or
/// opens files is done; [`Self::enter`] only makes system calls.
pub struct PreparedSandbox {
    ruleset: Option<RulesetCreated>,
    namespaces: Option<Namespaces>,
    placeholders: Placeholders,
    /// The child's end of [`NamespaceReceiver`]'s socket, when the parent
    /// wants to hold the mount namespace: a descriptor number, open across
    /// the fork (the parent keeps it open until the spawn has returned).
    report_mount_namespace: Option<std::os::fd::RawFd>,
}

/// The namespaces a command enters: always a user namespace (own ids),
/// and a network and/or a mount namespace.
struct Namespaces {
    maps: IdMaps,
    /// `CLONE_NEWNET` and/or `CLONE_NEWNS`.
    flags: libc::c_int,
    /// Read-only binds, made in the mount namespace.
    binds: Vec<Bind>,
}

/// One protected path bound read-only over itself, with the mount flags
/// that the remount must keep (a user namespace may not clear them).
struct Bind {
    path: CString,
    flags: libc::c_ulong,
}

impl std::fmt::Debug for PreparedSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let flags = self.namespaces.as_ref().map_or(0, |n| n.flags);
        f.debug_struct("PreparedSandbox")
            .field("network_namespace", &(flags & libc::CLONE_NEWNET != 0))
            .field("mount_namespace", &(flags & libc::CLONE_NEWNS != 0))
            .field("placeholders", &self.placeholders.made)
            .finish_non_exhaustive()
    }
}

/// The placeholders [`prepare`] made for protected paths that did not
/// exist: removed on [`Placeholders::remove`] or drop, each only while it
/// is still the empty file or directory made (same device and inode).
/// Remove them only once nothing is left in the command's mount namespace
/// ([`kill_namespace`]): the read-only bind lives as long as it does.
/// (An unlink from outside the namespace detaches a bind there, so a
/// placeholder goes even while the namespace is still held open.)
#[derive(Debug, Default)]
pub struct Placeholders {
    made: Vec<(PathBuf, bool, u64, u64)>,
}

impl Placeholders {
    /// How many placeholders there are.
    pub fn len(&self) -> usize {
        self.made.len()
    }

    pub fn is_empty(&self) -> bool {
        self.made.is_empty()
    }

    /// Removes each placeholder that is still the one made and empty.
    pub fn remove(mut self) {
        self.remove_all();
    }

    fn remove_all(&mut self) {
        use std::os::unix::fs::MetadataExt;
        for (path, directory, dev, ino) in self.made.drain(..) {
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if meta.dev() != dev || meta.ino() != ino {
                continue;
            }
            let removed = if directory {
                std::fs::remove_dir(&path)
            } else if meta.len() == 0 {
                std::fs::remove_file(&path)
            } else {
                continue;
            };
            if let Err(e) = removed {
                eprintln!("mino supervisor: the placeholder {} could not be removed: {e}", path.display());
            }
        }
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        self.remove_all();
    }
}

/// A command's own mount namespace, held open. The open descriptor keeps
/// the namespace alive, so its identity (the nsfs device and inode) cannot
/// be given to another namespace while [`kill_namespace`] looks for what is
/// left in it: a freed namespace's inode number is reused, and without the
/// hold a supervisor scanning for "its" namespace could find (and kill) the
/// processes of another command started meanwhile, in a parallel session.
#[derive(Debug)]
pub struct MountNamespace {
    _held: std::fs::File,
    dev: u64,
    ino: u64,
}

impl MountNamespace {
    /// The mount namespace of process `pid`, held; `None` when it cannot be
    /// read (the process is gone) or it is the caller's own, which is never
    /// a command's to clear.
    pub fn of(pid: u32) -> Option<Self> {
        Self::held(std::fs::File::open(format!("/proc/{pid}/ns/mnt")).ok()?)
    }

    /// The mount namespace `held` (an open `ns/mnt` file) stands for;
    /// `None` when it is the caller's own.
    fn held(held: std::fs::File) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let meta = held.metadata().ok()?;
        let (dev, ino) = (meta.dev(), meta.ino());
        let own = std::fs::metadata("/proc/self/ns/mnt").ok()?;
        if (own.dev(), own.ino()) == (dev, ino) {
            return None;
        }
        Some(Self { _held: held, dev, ino })
    }

    /// Whether process `pid` (a `/proc` entry) is in this namespace.
    fn holds(&self, proc_entry: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(proc_entry.join("ns/mnt")).is_ok_and(|m| (m.dev(), m.ino()) == (self.dev, self.ino))
    }
}

/// What [`kill_namespace`] did: how many SIGKILLs it sent (a process that
/// is slow to go is counted once per scan), and how many processes were
/// still in the namespace at its last scan (0: it is empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cleared {
    pub killed: usize,
    pub left: usize,
}

/// SIGKILLs every process in mount namespace `namespace` (a command's own,
/// from [`MountNamespace::of`]) until a scan of `/proc` finds none, or
/// `within` has passed. A killed process stays in the namespace until the
/// kernel has run its exit, which on a loaded machine takes a while: the
/// limit is time, not a number of scans (a fixed 50 scans 5 ms apart was
/// too short under load, and left placeholders behind).
/// The supervisor calls this after the command's group is gone: nothing a
/// sandboxed command started outlives it, not even past `setsid`.
pub fn kill_namespace(namespace: &MountNamespace, within: std::time::Duration) -> Cleared {
    let deadline = std::time::Instant::now() + within;
    let mut killed = 0;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            // Nothing can be seen, so nothing can be said to be gone.
            return Cleared { killed, left: usize::MAX };
        };
        let mut found = 0;
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            if namespace.holds(&entry.path()) {
                // SAFETY: kill(2) only sends a signal.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                found += 1;
            }
        }
        killed += found;
        if found == 0 || std::time::Instant::now() >= deadline {
            return Cleared { killed, left: found };
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(20));
    }
}

impl PreparedSandbox {
    /// The placeholders made for missing protected paths; keep them until
    /// the command and all it started are gone, then remove them.
    pub fn take_placeholders(&mut self) -> Placeholders {
        std::mem::take(&mut self.placeholders)
    }

    /// Whether the command gets a mount namespace (protected paths bound
    /// read-only).
    pub fn mount_namespace(&self) -> bool {
        self.namespaces.as_ref().is_some_and(|n| n.flags & libc::CLONE_NEWNS != 0)
    }

    /// Makes [`Self::enter`] hand the child's new mount namespace to the
    /// parent, which takes it with [`NamespaceReceiver::receive`] once the
    /// spawn has returned. Looking it up by pid after the spawn is a race:
    /// a command that ends at once (`setsid sleep 99 &`) has let go of its
    /// namespace before the parent looks, and a `setsid` escapee left in it
    /// would then be neither found nor killed, and the placeholders would
    /// go from under it. `None` without a mount namespace.
    pub fn report_mount_namespace(&mut self) -> std::io::Result<Option<NamespaceReceiver>> {
        use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
        use std::os::fd::AsRawFd;
        if !self.mount_namespace() {
            return Ok(None);
        }
        let (parent, child) = socketpair(AddressFamily::UNIX, SocketType::DGRAM, SocketFlags::CLOEXEC, None)?;
        self.report_mount_namespace = Some(child.as_raw_fd());
        Ok(Some(NamespaceReceiver { parent, child: Some(child) }))
    }
}

/// The parent's end of the socket on which a sandboxed child sends its
/// mount namespace (see [`PreparedSandbox::report_mount_namespace`]).
#[derive(Debug)]
pub struct NamespaceReceiver {
    parent: std::os::fd::OwnedFd,
    child: Option<std::os::fd::OwnedFd>,
}

impl NamespaceReceiver {
    /// The namespace the child sent, held; call it after the spawn has
    /// returned (the child sent it before its exec). `None` if nothing
    /// came, which a spawn that returned `Ok` never leaves.
    pub fn receive(mut self) -> Option<MountNamespace> {
        use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
        use std::mem::MaybeUninit;
        self.child = None;
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut ancillary = RecvAncillaryBuffer::new(&mut space);
        let mut byte = [0u8; 1];
        let flags = RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC;
        recvmsg(&self.parent, &mut [std::io::IoSliceMut::new(&mut byte)], &mut ancillary, flags).ok()?;
        let held = ancillary.drain().find_map(|message| match message {
            RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        })?;
        MountNamespace::held(std::fs::File::from(held))
    }
}

/// Sends this process's mount namespace on socket `to` (the child's end
/// of a [`NamespaceReceiver`]). System calls only, on the stack.
fn send_own_mount_namespace(to: std::os::fd::RawFd) -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::mem::MaybeUninit;
    use std::os::fd::{AsFd, BorrowedFd};
    let own = rustix::fs::open(c"/proc/self/ns/mnt", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    let fds = [own.as_fd()];
    if !ancillary.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(std::io::Error::from_raw_os_error(libc::ENOBUFS));
    }
    // SAFETY: `to` is the socket the parent made and keeps open until the
    // spawn has returned; this runs in the child before that.
    let to = unsafe { BorrowedFd::borrow_raw(to) };
    sendmsg(to, &[std::io::IoSlice::new(b"n")], &mut ancillary, SendFlags::empty())?;
    Ok(())
}

/// The mount flags of `statvfs` that a bind's read-only remount must
/// repeat: a user namespace may not clear `nosuid`, `nodev`, `noexec` or
/// the atime setting of a mount it did not make.
fn locked_mount_flags(f_flag: libc::c_ulong) -> libc::c_ulong {
    let mut flags = 0;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if f_flag & st != 0 {
            flags |= ms;
        }
    }
    flags
}

/// Whether `path` lies in `dir` (both resolved as far as they exist).
fn inside(path: &Path, dir: &Path) -> bool {
    let resolve = |p: &Path| -> PathBuf {
        // The path itself may be missing: resolve its parent, keep its name.
        match (p.parent(), p.file_name()) {
            (Some(parent), Some(name)) => {
                std::fs::canonicalize(parent).map(|d| d.join(name)).unwrap_or_else(|_| p.to_owned())
            }
            _ => p.to_owned(),
        }
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    resolve(path).starts_with(dir)
}

/// The binds (and placeholders) for `policy`'s protected paths that lie in
/// a writable directory.
fn protected_binds(policy: &SandboxPolicy) -> Result<(Vec<Bind>, Placeholders), SandboxError> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut binds = Vec::new();
    let mut placeholders = Placeholders::default();
    let failed = |path: &Path, message: String| SandboxError::Path { path: path.to_owned(), message };
    for protected in &policy.protected {
        let path = &protected.path;
        if !(inside(path, &policy.workspace) || inside(path, &policy.temp)) {
            continue;
        }
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(failed(
                    path,
                    "a protected path is a symbolic link, which a read-only bind cannot cover (the link itself could be replaced); replace it with what it points to, or set the sandbox to off".into(),
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !path.parent().is_some_and(Path::is_dir) {
                    continue;
                }
                let made = if protected.directory {
                    std::fs::create_dir(path)
                } else {
                    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o644).open(path).map(drop)
                };
                match made {
                    Ok(()) => {
                        let meta = std::fs::symlink_metadata(path).map_err(|e| failed(path, e.to_string()))?;
                        placeholders.made.push((path.clone(), protected.directory, meta.dev(), meta.ino()));
                    }
                    // Made by someone else meanwhile: bind what is there.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(failed(path, format!("its placeholder could not be made: {e}"))),
                }
            }
            Err(e) => return Err(failed(path, e.to_string())),
        }
        let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|e| failed(path, e.to_string()))?;
        // SAFETY: statvfs on a NUL-terminated path into a zeroed struct.
        let f_flag = unsafe {
            let mut stat: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(c_path.as_ptr(), &mut stat) != 0 {
                return Err(failed(path, std::io::Error::last_os_error().to_string()));
            }
            stat.f_flag
        };
        binds.push(Bind { path: c_path, flags: locked_mount_flags(f_flag) });
    }
    Ok((binds, placeholders))
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
    let (binds, placeholders) = if policy.mode == SandboxMode::WorkspaceWrite && enforcement.protected_paths {
        protected_binds(policy)?
    } else {
        (Vec::new(), Placeholders::default())
    };
    let mut flags = 0;
    if enforcement.network_namespace {
        flags |= libc::CLONE_NEWNET;
    }
    if !binds.is_empty() {
        flags |= libc::CLONE_NEWNS;
    }
    let namespaces = if flags != 0 {
        let maps = IdMaps::current().map_err(|message| SandboxError::Path { path: "/proc/self".into(), message })?;
        Some(Namespaces { maps, flags, binds })
    } else {
        None
    };
    Ok(Some(PreparedSandbox { ruleset: Some(created), namespaces, placeholders, report_mount_namespace: None }))
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
        if let Some(namespaces) = &self.namespaces {
            enter_namespaces(&namespaces.maps, namespaces.flags)?;
            bind_read_only(&namespaces.binds)?;
            if let Some(to) = self.report_mount_namespace {
                send_own_mount_namespace(to)?;
            }
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

/// `unshare(CLONE_NEWUSER | flags)` and the id maps. System calls only.
fn enter_namespaces(maps: &IdMaps, flags: libc::c_int) -> std::io::Result<()> {
    // SAFETY: plain system calls on NUL-terminated strings made before the fork.
    unsafe {
        // A hardened parent (the supervisor) is not dumpable, which makes
        // this process's /proc files root's: a user other than root could
        // then not write its own id maps. This child holds nothing secret
        // (the supervisor never has the key) and is about to exec, which
        // sets the flag again anyway.
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        if libc::unshare(libc::CLONE_NEWUSER | flags) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        write_proc(c"/proc/self/setgroups", c"deny")?;
        write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
        write_proc(c"/proc/self/gid_map", &maps.gid_map)?;
    }
    Ok(())
}

/// In a fresh mount namespace: stops mounts propagating back, then binds
/// each path over itself and remounts it read-only. System calls only.
fn bind_read_only(binds: &[Bind]) -> std::io::Result<()> {
    let none: *const libc::c_char = std::ptr::null();
    // SAFETY: mount(2) on NUL-terminated strings made before the fork.
    unsafe {
        if !binds.is_empty()
            && libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        for bind in binds {
            let path = bind.path.as_ptr();
            if libc::mount(path, path, none, libc::MS_BIND | libc::MS_REC, std::ptr::null()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | bind.flags;
            if libc::mount(none, path, none, flags, std::ptr::null()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
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
    const DENIED: &[&str] = &[
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "EACCES",
        "EPERM",
        "EROFS",
        "Device or resource busy",
        "EBUSY",
    ];
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
            "[the sandbox (workspace-write) forbids writing outside {} and {}, writing protected paths (.git, .vscode, .envrc, .nvim.lua, Mino's home), and network access; this failure may be the sandbox's doing]",
            policy.workspace.display(),
            policy.temp.display()
        ),
        _ => "[the sandbox (read-only) forbids writing anywhere and network access; this failure may be the sandbox's doing]".to_owned(),
    })
}
