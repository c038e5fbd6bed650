//! Mino's benchmarks. Every figure is a ratio against a floor measured in the
//! same run, because absolute times on shared machines drift.
//!
//! `mino-bench all [--quick]` runs everything and prints a table; it exits
//! non-zero when a goal is missed. Each measurement runs in a child process of
//! its own (`mino-bench measure …`) so peak memory (VmHWM) is that
//! measurement's alone. Run it through `scripts/bench` (release build).

mod client;
mod comparison;
mod context;
mod crash;
mod journal_gen;
mod mcp;
mod mock_stream;
mod open;
mod peers;
mod reads;
mod relay;
mod sessions;
mod sse;
mod startup;
mod turn;

use std::process::Command;

use anyhow::{bail, Context, Result};

pub struct Goal {
    pub name: String,
    pub figure: String,
    pub goal: String,
    pub met: bool,
}

/// Mino's benchmarks; run them through scripts/bench (release build).
#[derive(clap::Parser, Debug)]
#[command(name = "mino-bench")]
enum Cli {
    /// Every part but the peers, then the table of goals
    All(Quick),
    /// Session open against a parsing floor
    Open(Quick),
    /// Context build (the request body) against a floor
    Context(Quick),
    /// Turn overhead
    Turn(Quick),
    /// Streaming relay
    Relay(Quick),
    /// Start-up
    Startup(Quick),
    /// SSE parsing of long events
    Sse(Quick),
    /// Session listing
    Sessions(Quick),
    /// The read tools beside ripgrep, and a read of a 50 MB file
    Reads(Quick),
    /// MCP: the time Mino adds to a tool call, and start-up with 5 stdio servers
    Mcp(Quick),
    /// Mino beside the Codex app-server: timing table and crash comparison
    Peers {
        #[command(flatten)]
        quick: Quick,
        /// Write docs/comparison.md (or another file) from this run
        #[arg(long, value_name = "PATH")]
        doc: Option<String>,
    },
    /// Only the crash comparison, printed
    PeersCrash(Quick),
    /// Write a session file of RECORDS records to PATH
    Gen {
        records: usize,
        path: String,
        /// With CWD: make it that session of that folder, as a client opens it
        #[arg(requires = "cwd")]
        session_id: Option<String>,
        cwd: Option<String>,
    },
    /// One measurement in this process (the parts run it in a child): KIND PATH [REPS], or request-body ...
    Measure {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        args: Vec<String>,
    },
}

#[derive(clap::Args, Debug)]
struct Quick {
    /// Fewer runs and smaller streams (a smoke check, not for the doc)
    #[arg(long)]
    quick: bool,
}

fn main() -> Result<()> {
    match <Cli as clap::Parser>::parse() {
        Cli::All(q) => run_all(q.quick, None),
        Cli::Open(q) => run_all(q.quick, Some("open")),
        Cli::Context(q) => run_all(q.quick, Some("context")),
        Cli::Turn(q) => run_all(q.quick, Some("turn")),
        Cli::Relay(q) => run_all(q.quick, Some("relay")),
        Cli::Startup(q) => run_all(q.quick, Some("startup")),
        Cli::Sse(q) => run_all(q.quick, Some("sse")),
        Cli::Sessions(q) => run_all(q.quick, Some("sessions")),
        Cli::Reads(q) => run_all(q.quick, Some("reads")),
        Cli::Mcp(q) => run_all(q.quick, Some("mcp")),
        Cli::Peers { quick, doc } => run_peers(quick.quick, doc.as_deref()),
        // `--quick` changes nothing here: the crash comparison is one run of each.
        Cli::PeersCrash(_) => {
            let reports = crash_both()?;
            print!("{}", comparison::render(&doc_context(0.0), None, &reports));
            Ok(())
        }
        Cli::Measure { args } if args.first().map(String::as_str) == Some("request-body") => {
            context::measure(&args[1..])
        }
        Cli::Measure { args } if args.first().map(String::as_str) == Some("read50") => {
            reads::measure_read(args.get(1).context("measure read50 PATH")?)
        }
        Cli::Measure { args } => open::measure(&args),
        Cli::Gen { records, path, session_id, cwd } => {
            let bytes = journal_gen::write_session(std::path::Path::new(&path), records)?;
            if let (Some(id), Some(cwd)) = (session_id, cwd) {
                journal_gen::rehome(std::path::Path::new(&path), &id, &cwd)?;
            }
            println!("wrote {records} records, {bytes} bytes to {path}");
            Ok(())
        }
    }
}

/// Runs `mino-bench measure <args>` in a child and returns its JSON answer.
pub fn child(args: &[&str]) -> Result<serde_json::Value> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe).arg("measure").args(args).output()?;
    if !out.status.success() {
        bail!("measure {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// One part of the run: its measurements and their goals.
type Part = fn(bool) -> Result<Vec<Goal>>;

fn run_all(quick: bool, only: Option<&str>) -> Result<()> {
    let machine = machine_line();
    println!("machine: {machine}");
    let mut load = LoadWatch::new();
    println!("load average at start: {}", load_average());
    let mut goals = Vec::new();
    let parts: [(&str, Part); 9] = [
        ("open", open::run),
        ("context", context::run),
        ("turn", turn::run),
        ("relay", relay::run),
        ("startup", startup::run),
        ("sse", sse::run),
        ("sessions", sessions::run),
        ("reads", reads::run),
        ("mcp", mcp::run),
    ];
    for (part, run) in parts {
        if only.is_none_or(|o| o == part) {
            goals.extend(run(quick)?);
            // Each part's figures beside the load they were measured under.
            println!("  load average after {part}: {}", load.sample());
        }
    }
    println!("load average at end: {}", load_average());
    let loaded = load.loaded();
    println!();
    println!("| measurement | figure | goal | met |");
    println!("|---|---|---|---|");
    for g in &goals {
        let met = match (g.met, &loaded) {
            (true, _) => "yes",
            (false, None) => "NO",
            (false, Some(_)) => "NO (machine loaded)",
        };
        println!("| {} | {} | {} | {met} |", g.name, g.figure, g.goal);
    }
    let missed = goals.iter().filter(|g| !g.met).count();
    if missed > 0 {
        // Still a failure: a loaded machine can hide a regression as well as
        // cause a miss, so only a rerun on a quiet machine tells.
        match loaded {
            Some(why) => eprintln!(
                "{missed} goal(s) missed while the machine was loaded ({why}): rerun when it is quiet before calling it a regression"
            ),
            None => eprintln!("{missed} goal(s) missed"),
        }
        std::process::exit(1);
    }
    Ok(())
}

/// The highest 1-minute load average seen during a run, against the cores:
/// above one runnable task per core, every measurement shares its core and
/// a missed goal may be the machine's other work rather than Mino's.
struct LoadWatch {
    highest: f64,
    cores: usize,
}

impl LoadWatch {
    fn new() -> Self {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let mut watch = LoadWatch { highest: 0.0, cores };
        watch.sample();
        watch
    }

    /// Reads the load average now, keeps the highest, returns it as printed.
    fn sample(&mut self) -> String {
        let text = load_average();
        if let Some(one) = text.split_whitespace().next().and_then(|f| f.parse::<f64>().ok()) {
            self.highest = self.highest.max(one);
        }
        text
    }

    /// Why the run counts as loaded, if it does.
    fn loaded(&mut self) -> Option<String> {
        self.sample();
        (self.highest > self.cores as f64)
            .then(|| format!("1-minute load average up to {:.2} on {} cores", self.highest, self.cores))
    }
}

/// Mino beside its peer: the timing table, then the crash comparison; with
/// `doc`, docs/comparison.md is written from this run.
fn run_peers(quick: bool, doc: Option<&str>) -> Result<()> {
    let started = std::time::Instant::now();
    println!("machine: {}", machine_line());
    let measured = peers::measure(quick)?;
    let reports = crash_both()?;
    println!();
    print!("{}", peers::table(&measured.rows));
    for report in &reports {
        println!(
            "crash, {}: `ran` written {} time(s), `late` {}, {} approval question(s) after the restart",
            report.agent.name(),
            report.ran_count(),
            if report.late() { "written after the kill" } else { "not written" },
            report.approvals_after_restart
        );
    }
    if let Some(path) = doc {
        let text = comparison::render(&doc_context(started.elapsed().as_secs_f64()), Some(&measured), &reports);
        std::fs::write(path, text).with_context(|| format!("cannot write {path}"))?;
        println!("wrote {path}");
    }
    let missed = measured.rows.iter().filter(|r| !r.met()).count();
    if missed > 0 {
        eprintln!("{missed} goal(s) missed");
        std::process::exit(1);
    }
    Ok(())
}

fn crash_both() -> Result<Vec<crash::CrashReport>> {
    let host = mock_stream::MockHost::start()?;
    [peers::Agent::Mino, peers::Agent::Peer].into_iter().map(|agent| crash::crash_one(agent, &host)).collect()
}

fn doc_context(elapsed_secs: f64) -> comparison::Context {
    let run = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into())
    };
    comparison::Context {
        date: run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine: machine_line(),
        mino_version: peers::mino_version(),
        mino_commit: run("git", &["rev-parse", "--short", "HEAD"]),
        peer_version: peers::peer_version(),
        peer_bin: peers::peer_bin().map(|p| p.display().to_string()).unwrap_or_else(|_| "unknown".into()),
        elapsed_secs,
    }
}

/// `/proc/loadavg`'s 1-, 5- and 15-minute figures and the runnable count,
/// e.g. `2.10 1.85 1.40 (3/412 runnable)`: a run's figures are only as
/// good as the machine was quiet.
pub fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let fields: Vec<&str> = text.split_whitespace().collect();
    match fields.as_slice() {
        [one, five, fifteen, runnable, ..] => format!("{one} {five} {fifteen} ({runnable} runnable)"),
        _ => "unknown".into(),
    }
}

fn machine_line() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{cpu}, {cores} cores")
}

/// The smallest of `xs` (0 when empty): the run least disturbed by the
/// machine's other work.
pub fn best(xs: Vec<f64>) -> f64 {
    xs.into_iter().reduce(f64::min).unwrap_or(0.0)
}

pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if xs.is_empty() {
        return 0.0;
    }
    xs[xs.len() / 2]
}
