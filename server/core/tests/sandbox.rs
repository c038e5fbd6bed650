//! The command sandbox on real processes: `bash` started through the same
//! `prepare` + `enter` the supervisor uses. Tests that need kernel support
//! detect it and say so when they skip; nothing is assumed.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mino_core::sandbox::{self, SandboxMode, SandboxPolicy, SandboxSupport};

struct Dirs {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    temp: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().expect("tempdir");
    let [workspace, temp, outside] = ["workspace", "tmp", "outside"].map(|name| {
        let dir = root.path().join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        dir
    });
    Dirs { _root: root, workspace, temp, outside }
}

/// The support for `mode`, or `None` (and a message saying why the test is
/// skipped) when this kernel cannot enforce it.
fn supported(mode: SandboxMode) -> Option<SandboxSupport> {
    let support = sandbox::detect();
    match support.check(mode) {
        Ok(_) => Some(support),
        Err(e) => {
            eprintln!("SKIPPED: this machine cannot enforce {mode}: {e}");
            None
        }
    }
}

/// Runs `script` under bash in the sandbox, as the supervisor would.
fn run(policy: &SandboxPolicy, support: &SandboxSupport, script: &str) -> Output {
    let mut prepared = sandbox::prepare(policy, support).expect("prepare");
    let mut command = Command::new("bash");
    command.arg("-c").arg(script).current_dir(&policy.workspace).env("TMPDIR", &policy.temp).stdin(Stdio::null());
    if let Some(mut prepared) = prepared.take() {
        // SAFETY: `enter` only makes system calls; it runs in the child.
        unsafe {
            command.pre_exec(move || prepared.enter());
        }
    }
    command.output().expect("run bash")
}

fn policy(mode: SandboxMode, dirs: &Dirs) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        workspace: dirs.workspace.clone(),
        temp: dirs.temp.clone(),
        protected: mino_core::protect::sandbox_protected(&dirs.workspace, None),
    }
}

fn write_script(dir: &Path) -> String {
    format!("echo hi > '{}/file'", dir.display())
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn workspace_write_writes_in_the_workspace_and_temp_only() {
    let Some(support) = supported(SandboxMode::WorkspaceWrite) else { return };
    let d = dirs();
    let policy = policy(SandboxMode::WorkspaceWrite, &d);
    for dir in [&d.workspace, &d.temp] {
        let out = run(&policy, &support, &write_script(dir));
        assert!(out.status.success(), "{}: {}", dir.display(), stderr(&out));
        assert_eq!(std::fs::read_to_string(dir.join("file")).expect("written"), "hi\n");
    }
    let out = run(&policy, &support, "mkdir sub && echo x > sub/y && mv sub/y z && rm z && echo ok");
    assert!(out.status.success(), "{}", stderr(&out));

    let out = run(&policy, &support, &write_script(&d.outside));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Permission denied"), "{}", stderr(&out));
    assert!(!d.outside.join("file").exists(), "a write outside the workspace happened");

    // Nor any other way of changing what is outside (metadata is the
    // exception: Landlock does not cover chmod/chown/utime, see
    // docs/reliability.md).
    std::fs::write(d.outside.join("kept"), "kept").expect("seed");
    for script in [
        format!("rm '{}/kept'", d.outside.display()),
        format!("truncate -s 0 '{}/kept'", d.outside.display()),
        format!("mv '{}/kept' '{}/moved'", d.outside.display(), d.workspace.display()),
        format!("mkdir '{}/dir'", d.outside.display()),
        format!("ln -s /etc/passwd '{}/link'", d.outside.display()),
    ] {
        let out = run(&policy, &support, &script);
        assert!(!out.status.success(), "{script} succeeded");
    }
    assert_eq!(std::fs::read_to_string(d.outside.join("kept")).expect("kept"), "kept");
    assert_eq!(std::fs::read_dir(&d.outside).expect("list").count(), 1);

    // Reading outside is not restricted, and discarding output works.
    let out = run(
        &policy,
        &support,
        &format!("cat '{}/kept' > /dev/null && cat '{}/kept'", d.outside.display(), d.outside.display()),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "kept", "{}", stderr(&out));
}

#[test]
fn read_only_writes_nowhere() {
    let Some(support) = supported(SandboxMode::ReadOnly) else { return };
    let d = dirs();
    let policy = policy(SandboxMode::ReadOnly, &d);
    for dir in [&d.workspace, &d.temp, &d.outside] {
        let out = run(&policy, &support, &write_script(dir));
        assert!(!out.status.success(), "wrote in {}", dir.display());
        assert!(!dir.join("file").exists());
    }
    let out = run(&policy, &support, "echo discarded > /dev/null && pwd");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn off_changes_nothing() {
    let d = dirs();
    let policy = policy(SandboxMode::Off, &d);
    let support = sandbox::detect();
    assert!(sandbox::prepare(&policy, &support).expect("off always prepares").is_none());
    let out = run(&policy, &support, &write_script(&d.outside));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(d.outside.join("file").exists());
}

/// What a hostile command would plant so that code runs later outside the
/// sandbox: git's config and hooks, editor settings that run commands,
/// direnv's file. Existing or not, none of it may be written, created,
/// renamed away or replaced; reading stays possible, and ordinary files
/// beside them are written as before.
#[test]
fn workspace_write_keeps_protected_paths_read_only_existing_or_not() {
    let Some(support) = supported(SandboxMode::WorkspaceWrite) else { return };
    if !support.mount_namespace {
        eprintln!("SKIPPED: no mount namespace here; sandboxed-auto then asks (tested in policy.rs)");
        return;
    }
    let d = dirs();
    let ws = &d.workspace;
    std::fs::create_dir_all(ws.join(".git/hooks")).expect("hooks");
    std::fs::write(ws.join(".git/config"), "[core]\n").expect("config");
    let policy = policy(SandboxMode::WorkspaceWrite, &d);
    let attempts = [
        "git config core.fsmonitor 'touch /tmp/planted'",
        "echo '[core] fsmonitor = x' >> .git/config",
        "printf '#!/bin/sh\\ntouch x' > .git/hooks/post-checkout",
        "rm .git/config",
        "mv .git moved",
        "mv .git/hooks .git/h2",
        "rm -rf .git",
        "mkdir -p .vscode && echo '{}' > .vscode/tasks.json",
        "echo '{}' > .vscode/settings.json",
        "echo 'touch x' > .envrc",
        "echo 'os.execute(\"x\")' > .nvim.lua",
        "rmdir .vscode",
        "ln -s elsewhere .envrc",
        "ln .git/config hardlink",
    ];
    for script in attempts {
        let out = run(&policy, &support, script);
        assert!(!out.status.success(), "`{script}` succeeded: {}", stderr(&out));
    }
    assert_eq!(std::fs::read_to_string(ws.join(".git/config")).expect("config"), "[core]\n");
    assert_eq!(std::fs::read_dir(ws.join(".git/hooks")).expect("hooks").count(), 0);
    for planted in [".vscode", ".envrc", ".nvim.lua", "moved", "hardlink"] {
        assert!(std::fs::symlink_metadata(ws.join(planted)).is_err(), "{planted} exists after the command");
    }
    // Reading the protected files and writing beside them still work.
    let out = run(&policy, &support, "cat .git/config && echo ok > notes.txt && mkdir -p src && echo x > src/a");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[core]\n");
    assert!(ws.join("notes.txt").exists() && ws.join("src/a").exists());
}

/// `$MINO_HOME` inside the workspace (Mino started in `~`): a sandboxed
/// command cannot append a rule to the workspace rules file there, nor
/// change config.toml.
#[test]
fn workspace_write_cannot_forge_rules_in_a_home_inside_the_workspace() {
    let Some(support) = supported(SandboxMode::WorkspaceWrite) else { return };
    if !support.mount_namespace {
        eprintln!("SKIPPED: no mount namespace here");
        return;
    }
    let d = dirs();
    let home = d.workspace.join(".mino");
    let rules = home.join("workspaces/w-1/rules.toml");
    std::fs::create_dir_all(rules.parent().expect("dir")).expect("mkdir");
    std::fs::write(&rules, "").expect("rules");
    let policy = SandboxPolicy {
        protected: mino_core::protect::sandbox_protected(&d.workspace, Some(&home)),
        ..policy(SandboxMode::WorkspaceWrite, &d)
    };
    for script in [
        "printf '[[rule]]\\nid = \"x\"\\nkind = \"prefix\"\\ncommand = \"curl\"\\nscope = \"workspace\"\\n' >> .mino/workspaces/w-1/rules.toml",
        "echo 'model = \"x\"' > .mino/config.toml",
        "mv .mino elsewhere",
    ] {
        let out = run(&policy, &support, script);
        assert!(!out.status.success(), "`{script}` succeeded");
    }
    assert_eq!(std::fs::read_to_string(&rules).expect("rules"), "");
    assert!(!home.join("config.toml").exists());
}

/// A listener the sandboxed command must not reach.
fn listener() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    (listener, port)
}

#[test]
fn workspace_write_cuts_tcp_connect_and_bind_and_udp() {
    let Some(support) = supported(SandboxMode::WorkspaceWrite) else { return };
    let d = dirs();
    let (_listener, port) = listener();
    // The same script reaches the listener without the sandbox: the
    // failure below is the sandbox's.
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let out = run(&policy(SandboxMode::Off, &d), &support, &connect);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "connected\n", "{}", stderr(&out));

    let policy = policy(SandboxMode::WorkspaceWrite, &d);
    let out = run(&policy, &support, &connect);
    assert!(!out.status.success(), "connected from inside the sandbox");
    assert!(out.stdout.is_empty());

    // Binding a TCP port (python would be nicer; bash cannot listen, so use
    // whatever the machine has and skip the part otherwise).
    let bind =
        "exec python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); print(\"bound\")'";
    let unsandboxed = run(&SandboxPolicy { mode: SandboxMode::Off, ..policy.clone() }, &support, bind);
    if unsandboxed.status.success() {
        let out = run(&policy, &support, bind);
        assert!(!out.status.success(), "bound a TCP port inside the sandbox");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("bound"));
    } else {
        eprintln!("SKIPPED (bind part): python3 is not available: {}", stderr(&unsandboxed));
    }

    if support.network_namespace {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
        let port = udp.local_addr().expect("addr").port();
        let send = format!("echo hi > /dev/udp/127.0.0.1/{port} && echo sent");
        let out = run(&SandboxPolicy { mode: SandboxMode::Off, ..policy.clone() }, &support, &send);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "sent\n", "{}", stderr(&out));
        let out = run(&policy, &support, &send);
        assert!(!out.status.success(), "sent UDP from inside the network namespace");
        assert!(stderr(&out).contains("Network is unreachable"), "{}", stderr(&out));
    } else {
        eprintln!("SKIPPED (UDP part): no unprivileged network namespaces here");
    }
}

#[test]
fn the_command_keeps_its_own_uid_inside_the_namespace() {
    let Some(support) = supported(SandboxMode::WorkspaceWrite) else { return };
    if !support.network_namespace {
        eprintln!("SKIPPED: no unprivileged network namespaces here");
        return;
    }
    let d = dirs();
    let out = run(&policy(SandboxMode::WorkspaceWrite, &d), &support, "id -u");
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), uid.to_string(), "{}", stderr(&out));
}

#[test]
fn support_is_reported_as_detected_and_never_claimed_without_it() {
    let support = sandbox::detect();
    let line = support.describe(SandboxMode::WorkspaceWrite);
    if support.landlock_abi >= 3 {
        assert!(line.contains(&format!("Landlock ABI {}", support.landlock_abi)), "{line}");
    }
    assert_eq!(
        line.contains("own network namespace"),
        support.network_namespace && support.check(SandboxMode::WorkspaceWrite).is_ok()
    );
    let none = SandboxSupport { landlock_abi: 0, network_namespace: false, mount_namespace: false };
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        let err = none.check(mode).expect_err("nothing to enforce with");
        assert!(err.to_string().contains("Landlock is not available"), "{err}");
        assert!(none.describe(mode).contains("cannot be enforced"));
        let d = dirs();
        assert!(sandbox::prepare(&policy(mode, &d), &none).is_err(), "prepared a sandbox that is not there");
    }
    let old = SandboxSupport { landlock_abi: 2, network_namespace: true, mount_namespace: true };
    assert!(old.check(SandboxMode::WorkspaceWrite).is_err());
    let no_network = SandboxSupport { landlock_abi: 3, network_namespace: false, mount_namespace: false };
    assert!(no_network.check(SandboxMode::ReadOnly).is_err());
    assert!(none.check(SandboxMode::Off).is_ok());
    assert_eq!("workspace-write".parse::<SandboxMode>().expect("mode"), SandboxMode::WorkspaceWrite);
    assert!("workspace".parse::<SandboxMode>().is_err());
}

#[test]
fn a_missing_workspace_is_an_error_before_anything_runs() {
    let Some(support) = supported(SandboxMode::WorkspaceWrite) else { return };
    let d = dirs();
    let policy = SandboxPolicy { workspace: d.workspace.join("missing"), ..policy(SandboxMode::WorkspaceWrite, &d) };
    let err = sandbox::prepare(&policy, &support).expect_err("no such directory");
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn a_failure_the_sandbox_caused_gets_a_note_naming_it() {
    let d = dirs();
    let ww = policy(SandboxMode::WorkspaceWrite, &d);
    let note = sandbox::failure_note(&ww, "bash: /home/x/file: Permission denied", Some(1)).expect("note");
    assert!(note.contains("workspace-write") && note.contains(&d.workspace.display().to_string()), "{note}");
    assert!(sandbox::failure_note(&ww, "curl: (7) Couldn't connect to server", Some(7)).is_some());
    assert!(sandbox::failure_note(&ww, "Permission denied", Some(0)).is_none(), "a success needs no note");
    assert!(sandbox::failure_note(&ww, "error: test failed", Some(101)).is_none(), "unrelated failures get none");
    let off = policy(SandboxMode::Off, &d);
    assert!(sandbox::failure_note(&off, "Permission denied", Some(1)).is_none());
    let ro = policy(SandboxMode::ReadOnly, &d);
    assert!(sandbox::failure_note(&ro, "Read-only file system", None).expect("note").contains("read-only"));

    // And a real denied write produces output the note recognises.
    if let Some(support) = supported(SandboxMode::WorkspaceWrite) {
        let out = run(&ww, &support, &write_script(&d.outside));
        let text = stderr(&out);
        assert!(sandbox::failure_note(&ww, &text, out.status.code()).is_some(), "{text}");
    }
}

/// The same through the bash tool and its supervisor, as the turn loop runs
/// commands: the result names the sandbox when it was the cause.
#[tokio::test]
async fn the_bash_tool_runs_commands_in_the_sandbox_and_says_so_when_it_bites() {
    use mino_core::bash::{BashTool, Limits};
    use mino_core::ToolStatus;
    use tokio_util::sync::CancellationToken;
    const SUPERVISOR: &str = env!("CARGO_BIN_EXE_mino-supervisor");

    let Some(_support) = supported(SandboxMode::WorkspaceWrite) else { return };
    let d = dirs();
    // The tool's commands may write in their `$TMPDIR` (else `/tmp`), where
    // `dirs()` lives: the outside directory must be in neither, wherever
    // this checkout is (a clone under `/tmp` has its target dir there too).
    let Some(outside_tmp) = outside_the_temporary_directory() else { return };
    let d = Dirs { outside: outside_tmp.path().to_path_buf(), ..d };
    let tool = BashTool::new(d.workspace.clone(), Limits::default(), SUPERVISOR.into())
        .with_sandbox(SandboxMode::WorkspaceWrite);
    let cancel = CancellationToken::new();

    let inside = tool.run("echo in > here && cat here", &mut |_, _| {}, &cancel).await;
    assert_eq!((inside.status, inside.output.as_str()), (ToolStatus::Success, "in\n"));

    let outside = tool.run(&write_script(&d.outside), &mut |_, _| {}, &cancel).await;
    assert_eq!(outside.status, ToolStatus::Failed, "{}", outside.output);
    assert!(!d.outside.join("file").exists());
    assert!(outside.output.contains("Permission denied"), "{}", outside.output);
    assert!(outside.output.contains("the sandbox (workspace-write) forbids writing outside"), "{}", outside.output);

    // Off (the default) is unchanged.
    let unsandboxed = BashTool::new(d.workspace.clone(), Limits::default(), SUPERVISOR.into());
    let outcome = unsandboxed.run(&write_script(&d.outside), &mut |_, _| {}, &cancel).await;
    assert_eq!(outcome.status, ToolStatus::Success, "{}", outcome.output);
    assert!(d.outside.join("file").exists());
}

/// A new directory that a `workspace-write` command may not write to: not
/// under the temporary directory commands get (`$TMPDIR`, else `/tmp`).
/// The first of the build's own temporary directory, `/var/tmp` and `$HOME`
/// that is outside it; `None` (the test says why and is skipped) if none is.
fn outside_the_temporary_directory() -> Option<tempfile::TempDir> {
    let temp =
        std::env::var_os("TMPDIR").filter(|t| !t.is_empty()).map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let temp = std::fs::canonicalize(&temp).unwrap_or(temp);
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    for base in candidates.into_iter().flatten() {
        let Ok(canonical) = std::fs::canonicalize(&base) else { continue };
        if canonical.starts_with(&temp) {
            continue;
        }
        if let Ok(dir) = tempfile::tempdir_in(&canonical) {
            return Some(dir);
        }
    }
    eprintln!("skipped: no writable directory outside {} to write to from the sandbox", temp.display());
    None
}

/// A sandbox the supervisor cannot set up means the command does not run,
/// and the result says why.
#[tokio::test]
async fn a_sandbox_that_cannot_be_prepared_stops_the_command() {
    use mino_core::bash::{BashTool, Limits};
    use mino_core::ToolStatus;
    use tokio_util::sync::CancellationToken;
    const SUPERVISOR: &str = env!("CARGO_BIN_EXE_mino-supervisor");

    let d = dirs();
    let gone = d.workspace.join("gone");
    std::fs::create_dir(&gone).expect("mkdir");
    let tool =
        BashTool::new(gone.clone(), Limits::default(), SUPERVISOR.into()).with_sandbox(SandboxMode::WorkspaceWrite);
    std::fs::remove_dir(&gone).expect("rmdir");
    let marker = d.outside.join("ran");
    let outcome = tool.run(&format!("touch '{}'", marker.display()), &mut |_, _| {}, &CancellationToken::new()).await;
    assert_eq!(outcome.status, ToolStatus::Failed, "{}", outcome.output);
    assert!(outcome.output.starts_with("The command did not run:"), "{}", outcome.output);
    assert!(!marker.exists(), "the command ran");
}

/// A sandboxed command's process that escaped its group with `setsid` does
/// not outlive the command: it is in the command's mount namespace, and is
/// killed when the command ends (so the placeholders can go safely). The
/// command ends at once, and eight run side by side: a supervisor that
/// looked its command's namespace up by pid after the spawn found it gone
/// already, now and then (once in a CI run), and the escapee lived on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_setsid_escapee_of_a_sandboxed_command_does_not_outlive_it() {
    use mino_core::bash::{BashTool, Limits};
    use tokio_util::sync::CancellationToken;
    const SUPERVISOR: &str = env!("CARGO_BIN_EXE_mino-supervisor");

    let Some(support) = supported(SandboxMode::WorkspaceWrite) else { return };
    if !support.mount_namespace {
        eprintln!("SKIPPED: no mount namespace here");
        return;
    }
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
    };
    let runs = (0..8).map(|_| {
        tokio::spawn(async move {
            let d = dirs();
            let tool = BashTool::new(d.workspace.clone(), Limits::default(), SUPERVISOR.into())
                .with_sandbox(SandboxMode::WorkspaceWrite);
            let outcome = tool
                .run(
                    "setsid sleep 313 > /dev/null 2>&1 < /dev/null & echo $!",
                    &mut |_, _| {},
                    &CancellationToken::new(),
                )
                .await;
            (d, outcome.output)
        })
    });
    for run in runs.collect::<Vec<_>>() {
        let (d, output) = run.await.expect("the command's task");
        let pid: i32 = output.trim().parse().unwrap_or_else(|_| panic!("no pid: {output}"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive(pid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        if alive(pid) {
            // SAFETY: kill(2) only sends a signal; the test's own leftover.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the setsid'd sleep {pid} outlived its command");
        }
        assert!(!d.workspace.join(".envrc").exists(), "a placeholder was left behind");
    }
}

/// A process in a mount namespace of its own (`unshare` makes it, as the
/// supervisor's child does), once that namespace is in place.
fn in_own_mount_namespace() -> Option<std::process::Child> {
    let child = Command::new("unshare")
        .args(["-Urm", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let own = std::fs::read_link("/proc/self/ns/mnt").ok()?;
    for _ in 0..400 {
        match std::fs::read_link(format!("/proc/{}/ns/mnt", child.id())) {
            Ok(ns) if ns != own => return Some(child),
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            Err(_) => return None,
        }
    }
    None
}

#[test]
fn clearing_a_commands_namespace_never_touches_another_commands() {
    assert!(
        sandbox::MountNamespace::of(std::process::id()).is_none(),
        "the supervisor's own namespace is never a command's to clear"
    );
    let Some(support) = supported(SandboxMode::WorkspaceWrite) else { return };
    if !support.mount_namespace {
        eprintln!("SKIPPED: no unprivileged mount namespaces here");
        return;
    }
    let Some(mut first) = in_own_mount_namespace() else {
        eprintln!("SKIPPED: unshare -Urm is not available");
        return;
    };
    let held = sandbox::MountNamespace::of(first.id()).expect("the first command's namespace");
    let cleared = sandbox::kill_namespace(&held, std::time::Duration::from_secs(10));
    assert!(cleared.killed >= 1 && cleared.left == 0, "the command in the namespace was not killed: {cleared:?}");
    let status = first.wait().expect("wait");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    // The first namespace is empty but still held; commands started now get
    // namespaces of their own, and clearing the first leaves them alone
    // (with a freed namespace's identity reused, this killed them).
    let mut others: Vec<_> = (0..8).filter_map(|_| in_own_mount_namespace()).collect();
    assert!(!others.is_empty(), "no second namespace could be made");
    let cleared = sandbox::kill_namespace(&held, std::time::Duration::from_millis(50));
    assert_eq!(cleared, sandbox::Cleared { killed: 0, left: 0 }, "an empty namespace's clearing found processes");
    for other in &mut others {
        assert!(other.try_wait().expect("try_wait").is_none(), "another command's process was killed");
        let _ = other.kill();
        let _ = other.wait();
    }
}
