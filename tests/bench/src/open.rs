//! Opening a session and building its context, against the floor of reading
//! the file and parsing each line into a `serde_json::Value`.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::{best, child, Goal};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// `measure floor|open|context PATH [REPS]`: one measurement in this
/// process, repeated REPS times (default 1); the fastest repetition is
/// reported, which keeps a busy machine's noise out of millisecond figures.
/// Floor and Mino get the same treatment.
pub fn measure(args: &[String]) -> Result<()> {
    let kind = args.first().context("measure KIND PATH")?.as_str();
    let path = Path::new(args.get(1).context("measure KIND PATH")?);
    let reps: usize = args.get(2).map(|r| r.parse()).transpose()?.unwrap_or(1).max(1);
    let mut best = f64::INFINITY;
    let mut answer = json!({});
    for _ in 0..reps {
        let started = Instant::now();
        answer = match kind {
            "floor" => {
                let bytes = std::fs::read(path)?;
                let mut n = 0usize;
                for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                    let v: serde_json::Value = serde_json::from_slice(line)?;
                    n += usize::from(v.is_object());
                }
                json!({ "lines": n })
            }
            "open" => {
                let (session, report) = mino_core::Session::open_path(path)?;
                json!({ "turns": session.transcript().turns.len(), "recovered": report.recovered.len() })
            }
            "context" => {
                let (session, _) = mino_core::Session::open_path(path)?;
                let t = Instant::now();
                let input = session.context();
                best = best.min(t.elapsed().as_secs_f64());
                answer = json!({ "items": input.len() });
                continue;
            }
            other => bail!("unknown measurement {other}"),
        };
        best = best.min(started.elapsed().as_secs_f64());
    }
    answer["secs"] = json!(best);
    answer["peak_kib"] = json!(peak_kib());
    println!("{answer}");
    Ok(())
}

pub fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

pub fn run(quick: bool) -> Result<Vec<Goal>> {
    let dir = tempfile::tempdir()?;
    let mut goals = Vec::new();
    let mut open_per_record = Vec::new();
    for records in SIZES {
        // Small files take milliseconds, where a busy machine's noise is
        // large: more runs for them (they are cheap).
        let runs = match (quick, records) {
            (true, 100_000) => 3,
            (true, _) => 5,
            (false, 100_000) => 5,
            (false, 10_000) => 7,
            (false, _) => 11,
        };
        let path = dir.path().join(format!("s{records}.jsonl"));
        let bytes = crate::journal_gen::write_session(&path, records)?;
        let p = path.to_str().context("utf-8 path")?;
        // Each open may append recovery records; measure on a fresh copy.
        let fresh = |tag: &str| -> Result<String> {
            let copy = dir.path().join(format!("s{records}-{tag}.jsonl"));
            std::fs::copy(&path, &copy)?;
            Ok(copy.to_str().context("utf-8 path")?.to_string())
        };
        // Warm the page cache so every run reads from memory alike.
        let _ = std::fs::read(&path)?;
        // Within each child: repetitions enough for about 8 MB of reading.
        let reps = (8 << 20) / bytes.max(1) + 1;
        let reps = reps.min(10).to_string();
        let reps = reps.as_str();
        let (mut floor, mut open, mut context, mut open_peak, mut floor_peak) = (vec![], vec![], vec![], 0u64, 0u64);
        for _ in 0..runs {
            let f = child(&["floor", p, reps])?;
            floor.push(f["secs"].as_f64().unwrap_or(f64::NAN));
            floor_peak = floor_peak.max(f["peak_kib"].as_u64().unwrap_or(0));
            let copy = fresh("open")?;
            let _ = std::fs::read(&copy)?;
            let o = child(&["open", &copy, reps])?;
            open.push(o["secs"].as_f64().unwrap_or(f64::NAN));
            open_peak = open_peak.max(o["peak_kib"].as_u64().unwrap_or(0));
            let copy = fresh("ctx")?;
            let c = child(&["context", &copy, reps])?;
            context.push(c["secs"].as_f64().unwrap_or(f64::NAN));
        }
        // The best run of each (each child already keeps its fastest repetition).
        let (floor, open, context) = (best(floor), best(open), best(context));
        open_per_record.push(open / records as f64);
        let mib = bytes as f64 / (1024.0 * 1024.0);
        let limit_kib = (bytes as f64 * 1.5 / 1024.0) as u64 + 20 * 1024;
        println!(
            "open {records:>6} records ({mib:.1} MiB): floor {:.1} ms (peak {} MiB), open {:.1} ms ({:.2}x, peak {} MiB), context {:.1} ms ({:.2}x)",
            floor * 1e3,
            floor_peak / 1024,
            open * 1e3,
            open / floor,
            open_peak / 1024,
            context * 1e3,
            context / floor
        );
        goals.push(Goal {
            name: format!("open+verify+recover, {records} records ({mib:.0} MiB)"),
            figure: format!("{:.2}x floor ({:.1} ms vs {:.1} ms)", open / floor, open * 1e3, floor * 1e3),
            goal: "<= 1.3x".into(),
            met: open / floor <= 1.3,
        });
        goals.push(Goal {
            name: format!("peak memory of open, {records} records"),
            figure: format!("{:.1} MiB (file {mib:.1} MiB)", open_peak as f64 / 1024.0),
            goal: format!("<= 1.5x file + 20 MiB = {:.1} MiB", limit_kib as f64 / 1024.0),
            met: open_peak <= limit_kib,
        });
        goals.push(Goal {
            name: format!("context build, {records} records"),
            figure: format!("{:.2}x floor ({:.1} ms)", context / floor, context * 1e3),
            goal: "<= 1.3x".into(),
            met: context / floor <= 1.3,
        });
    }
    // Linear growth: cost per record at 100k within 1.5x of that at 10k.
    let growth = open_per_record[2] / open_per_record[1];
    goals.push(Goal {
        name: "open cost per record, 100k vs 10k".into(),
        figure: format!("{growth:.2}x"),
        goal: "linear (<= 1.5x)".into(),
        met: growth <= 1.5,
    });
    Ok(goals)
}
