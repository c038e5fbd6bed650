//! The read tools against ripgrep on the same trees in the same run:
//! `search` vs `rg -n -C2 PATTERN`, `list_files` vs `rg --files`, over a
//! generated tree of 100,000 files and over this repository; and
//! `read_file` of a 50 MB file (time and peak memory of a child process).
//! Best of N, the machine's load average beside the figures (the machine
//! may be shared). Goal: within 1.5x of `rg`; the 50 MB read bounded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use mino_core::edit::Workspace;
use mino_core::read::{self, Place, ReadArgs, ReadTool};

use crate::{load_average, Goal};

const TREE_FILES: usize = 100_000;

/// A tree of `files` small source-like files in nested directories, a
/// `.gitignore`d directory and hidden files, each holding a few lines, one
/// file in 100 a match for `needle_[0-9]+`.
fn generate_tree(root: &Path, files: usize) -> Result<()> {
    std::fs::create_dir_all(root.join(".git"))?;
    std::fs::write(root.join(".gitignore"), "ignored/\n")?;
    for i in 0..files {
        let dir = root.join(format!("d{:02}/e{:02}", i % 97, (i / 97) % 31));
        std::fs::create_dir_all(&dir)?;
        let needle = if i % 100 == 0 { format!("let needle_{i} = {i};\n") } else { String::new() };
        let text = format!("// file {i}\nfn f{i}() -> u64 {{\n    {i}\n}}\n{needle}// end\n");
        std::fs::write(dir.join(format!("f{i}.rs")), text)?;
    }
    std::fs::create_dir_all(root.join("ignored"))?;
    std::fs::write(root.join("ignored/needle_x.rs"), "needle_1\n")?;
    std::fs::write(root.join(".hidden.rs"), "needle_2\n")?;
    Ok(())
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let out = f()?;
        best = best.min(started.elapsed().as_secs_f64());
        last = Some(out);
    }
    Ok((best, last.context("no runs")?))
}

fn rg(args: &[&str], dir: &Path) -> Result<usize> {
    let out =
        Command::new("rg").args(args).current_dir(dir).output().context("running rg (apt-get install ripgrep)")?;
    // rg exits 1 when nothing matched.
    if !out.status.success() && out.status.code() != Some(1) {
        bail!("rg {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(out.stdout.len())
}

fn mino(dir: &Path, tool: ReadTool, arguments: &str) -> Result<String> {
    let workspace = Workspace::new(dir)?;
    let args = ReadArgs::parse(tool, arguments).map_err(anyhow::Error::msg)?;
    let Place::Inside(target) = read::locate(&workspace, &args).map_err(anyhow::Error::msg)? else {
        bail!("the bench reads inside its tree");
    };
    let outcome = read::run(&workspace, &args, &target);
    Ok(outcome.output)
}

fn compare(
    name: &str,
    runs: usize,
    ours: impl FnMut() -> Result<String>,
    theirs: impl FnMut() -> Result<usize>,
) -> Result<Goal> {
    let (mino_s, out) = best_of(runs, ours)?;
    let (rg_s, _) = best_of(runs, theirs)?;
    let ratio = mino_s / rg_s;
    let summary = out.lines().next().unwrap_or_default().to_string();
    println!(
        "{name}: mino {:.1} ms, rg {:.1} ms, ratio {ratio:.2} (best of {runs}; load {}); {summary}",
        mino_s * 1e3,
        rg_s * 1e3,
        load_average()
    );
    Ok(Goal {
        name: name.to_string(),
        figure: format!("{:.1} ms vs rg {:.1} ms ({ratio:.2}x)", mino_s * 1e3, rg_s * 1e3),
        goal: "within 1.5x of rg".into(),
        met: ratio <= 1.5,
    })
}

/// `measure read50 PATH`: reads the 50 MB file once in this process and
/// prints its time and peak RSS (run in a child so the peak is the read's).
pub fn measure_read(path: &str) -> Result<()> {
    let path = PathBuf::from(path);
    let dir = path.parent().context("a file in a directory")?;
    let name = path.file_name().and_then(|n| n.to_str()).context("a file name")?;
    let started = Instant::now();
    let out = mino(dir, ReadTool::ReadFile, &serde_json::json!({ "path": name }).to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status")?;
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    println!(
        "{}",
        serde_json::json!({ "seconds": seconds, "peak_kib": peak_kib, "output_bytes": out.len(), "summary": out.lines().next() })
    );
    Ok(())
}

pub fn run(quick: bool) -> Result<Vec<Goal>> {
    let runs = if quick { 2 } else { 5 };
    let files = if quick { 10_000 } else { TREE_FILES };
    let dir = tempfile::tempdir()?;
    let tree = dir.path().join("tree");
    println!("reads: generating {files} files…");
    generate_tree(&tree, files)?;
    let repo = std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))?;
    let mut goals = Vec::new();
    let search = serde_json::json!({ "pattern": "needle_[0-9]+", "context": 2 }).to_string();
    goals.push(compare(
        &format!("search, {files} files"),
        runs,
        || mino(&tree, ReadTool::Search, &search),
        || rg(&["-n", "-C2", "needle_[0-9]+"], &tree),
    )?);
    goals.push(compare(
        &format!("list_files, {files} files"),
        runs,
        || mino(&tree, ReadTool::ListFiles, "{}"),
        || rg(&["--files"], &tree),
    )?);
    let repo_search = serde_json::json!({ "pattern": "fn [a-z_]+\\(", "context": 2 }).to_string();
    goals.push(compare(
        "search, this repository",
        runs,
        || mino(&repo, ReadTool::Search, &repo_search),
        || rg(&["-n", "-C2", "fn [a-z_]+\\("], &repo),
    )?);
    goals.push(compare(
        "list_files, this repository",
        runs,
        || mino(&repo, ReadTool::ListFiles, "{}"),
        || rg(&["--files"], &repo),
    )?);

    // 50 MB of lines, read in a child so its peak memory is the read's own.
    let big = dir.path().join("big.txt");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&big)?);
        let mut n = 0u64;
        let mut written = 0usize;
        while written < 50 * 1024 * 1024 {
            let line = format!("line {n} of a fifty megabyte file, padded to look like a log line\n");
            written += line.len();
            f.write_all(line.as_bytes())?;
            n += 1;
        }
    }
    let mut best = (f64::INFINITY, 0u64);
    for _ in 0..runs {
        let v = crate::child(&["read50", &big.display().to_string()])?;
        let seconds = v["seconds"].as_f64().unwrap_or(f64::INFINITY);
        let peak = v["peak_kib"].as_u64().unwrap_or(0);
        if seconds < best.0 {
            best = (seconds, peak);
        }
        println!("read_file 50 MB: {:.1} ms, peak RSS {} KiB; {}", seconds * 1e3, peak, v["summary"]);
    }
    goals.push(Goal {
        name: "read_file of a 50 MB file".into(),
        figure: format!("{:.1} ms, peak RSS {:.1} MiB (load {})", best.0 * 1e3, best.1 as f64 / 1024.0, load_average()),
        goal: "under 1 s and 64 MiB peak RSS".into(),
        met: best.0 < 1.0 && best.1 < 64 * 1024,
    });
    Ok(goals)
}
