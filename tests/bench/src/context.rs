//! Mino's own time per model request in a long session: the request body
//! built (the bytes sent; the network excluded), at 1k and 100k records, and
//! the peak memory that building takes beside the journal's size.
//!
//! Two builders, measured in alternating children on the same files:
//! `cached` is the turn loop's (`Session::request_body`, the ended turns'
//! replay kept as bytes), `rebuilt` is the whole input rebuilt from the
//! records and serialised for every request (`Session::context`, then
//! `ModelClient::request_body`), as Mino did before.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use mino_core::model::{ModelClient, ModelConfig, ModelRequest, Provider};
use mino_core::{ApprovalDecision, Session, ToolStatus, TurnStatus};
use serde_json::json;

use crate::{best, child, median, Goal};

const SIZES: [usize; 2] = [1_000, 100_000];
const INSTRUCTIONS: &str = "You are Mino, a careful coding assistant.";

/// `measure request-body cached|rebuilt responses|chat PATH TURNS`: opens the
/// session, then runs TURNS turns of two model requests each (a call and its
/// result, then a final answer), timing only the bodies. Answers the
/// fastest request (the first one after open apart: it serialises the
/// history once), which keeps a busy machine's preemptions out of a figure
/// of tens of microseconds (as `open.rs` reports its fastest repetition),
/// and the peak memory above what the open session held.
pub fn measure(args: &[String]) -> Result<()> {
    let usage = "measure request-body cached|rebuilt responses|chat PATH TURNS";
    let builder = args.first().context(usage)?.as_str();
    let provider = match args.get(1).context(usage)?.as_str() {
        "responses" => Provider::Responses,
        "chat" => Provider::ChatCompletions,
        other => bail!("unknown provider {other}"),
    };
    let path = Path::new(args.get(2).context(usage)?);
    let turns: usize = args.get(3).context(usage)?.parse()?;
    let client = ModelClient::with_provider(provider, ModelConfig::default())?;
    let (mut session, _) = Session::open_path(path)?;
    let held_kib = reset_peak()?;
    let body = |session: &mut Session| -> Result<(f64, usize)> {
        let started = Instant::now();
        let bytes = match builder {
            "cached" => session.request_body(&client, INSTRUCTIONS)?.len(),
            "rebuilt" => {
                let input = session.context();
                serde_json::to_vec(&client.request_body(&ModelRequest { instructions: INSTRUCTIONS, input: &input }))?
                    .len()
            }
            other => bail!("unknown builder {other}"),
        };
        Ok((started.elapsed().as_secs_f64(), bytes))
    };
    let mut first = None;
    let mut times = Vec::new();
    let mut body_bytes = 0;
    for n in 0..turns {
        let turn = session.begin_turn(&format!("Please check the list again ({n})."))?;
        let (secs, _) = body(&mut session)?;
        match first {
            None => first = Some(secs),
            Some(_) => times.push(secs),
        }
        let call_id = format!("bench_call_{n}");
        session.record_response_without_usage(
            &turn,
            vec![
                json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]}),
                json!({"type": "function_call", "call_id": call_id, "name": "bash", "arguments": "{\"command\":\"cat list\"}"}),
            ],
        )?;
        session.record_decision(&turn, &call_id, ApprovalDecision::Approved)?;
        session.record_unsandboxed_tool_start(&turn, &call_id, "cat list", "/work")?;
        session.record_tool_result(&turn, &call_id, ToolStatus::Success, "milk\neggs\nbread\n", Some(0))?;
        let (secs, bytes) = body(&mut session)?;
        times.push(secs);
        body_bytes = bytes;
        session.record_response_without_usage(
            &turn,
            vec![json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Milk, eggs, bread."}]})],
        )?;
        session.end_turn_without_partial_text(&turn, TurnStatus::Completed, None)?;
    }
    let peak_kib = crate::open::peak_kib();
    println!(
        "{}",
        json!({
            "first_secs": first.unwrap_or(f64::NAN),
            "secs": times.iter().cloned().fold(f64::INFINITY, f64::min),
            "body_bytes": body_bytes,
            "held_kib": held_kib,
            "peak_above_kib": peak_kib.saturating_sub(held_kib),
        })
    );
    Ok(())
}

/// Resets the peak resident size to the current one (`/proc/self/clear_refs`)
/// and returns it, so the peak read later is what came after.
fn reset_peak() -> Result<u64> {
    std::fs::write("/proc/self/clear_refs", "5").context("cannot reset the peak memory (/proc/self/clear_refs)")?;
    Ok(crate::open::peak_kib())
}

pub fn run(quick: bool) -> Result<Vec<Goal>> {
    let dir = tempfile::tempdir()?;
    let runs = if quick { 3 } else { 5 };
    let turns = if quick { "3" } else { "10" };
    let mut goals = Vec::new();
    // (records, journal bytes, cached per request, rebuilt per request, cached peak, rebuilt peak)
    let mut rows = Vec::new();
    for records in SIZES {
        let path = dir.path().join(format!("c{records}.jsonl"));
        let journal_bytes = crate::journal_gen::write_session(&path, records)?;
        // Each child appends its turns: every run starts from a fresh copy.
        let fresh = |tag: &str| -> Result<String> {
            let copy = dir.path().join(format!("c{records}-{tag}.jsonl"));
            std::fs::copy(&path, &copy)?;
            Ok(copy.to_str().context("utf-8 path")?.to_string())
        };
        let mut figures: Vec<Vec<serde_json::Value>> = vec![Vec::new(); 3];
        for _ in 0..runs {
            // Alternating, so both builders see the same machine load.
            for (slot, (builder, provider)) in
                [("cached", "responses"), ("rebuilt", "responses"), ("cached", "chat")].into_iter().enumerate()
            {
                let copy = fresh(builder)?;
                let _ = std::fs::read(&copy)?;
                figures[slot].push(child(&["request-body", builder, provider, &copy, turns])?);
            }
        }
        let secs = |slot: usize, key: &str| -> Vec<f64> {
            figures[slot].iter().map(|f| f[key].as_f64().unwrap_or(f64::NAN)).collect()
        };
        let peak = |slot: usize| figures[slot].iter().filter_map(|f| f["peak_above_kib"].as_u64()).max().unwrap_or(0);
        let range = |xs: &[f64]| {
            let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            format!("{:.3}–{:.3} ms", lo * 1e3, hi * 1e3)
        };
        let mib = journal_bytes as f64 / (1024.0 * 1024.0);
        let body_mib = figures[0].last().and_then(|f| f["body_bytes"].as_f64()).unwrap_or(0.0) / (1024.0 * 1024.0);
        let (cached, rebuilt, chat) = (secs(0, "secs"), secs(1, "secs"), secs(2, "secs"));
        println!(
            "context {records:>6} records (journal {mib:.1} MiB, body {body_mib:.1} MiB): per request (fastest in each child, range over children) cached {} (median {:.3} ms), chat cached {}, rebuilt {} (median {:.1} ms); first request after open cached {}; peak above the open session: cached {:.1} MiB, rebuilt {:.1} MiB",
            range(&cached),
            median(cached.clone()) * 1e3,
            range(&chat),
            range(&rebuilt),
            median(rebuilt.clone()) * 1e3,
            range(&secs(0, "first_secs")),
            peak(0) as f64 / 1024.0,
            peak(1) as f64 / 1024.0,
        );
        // The fastest child of each: what the machine's other work adds is noise.
        rows.push((records, journal_bytes, best(cached), best(rebuilt), best(chat), peak(0), peak(1)));
    }
    let (small, large) = (&rows[0], &rows[1]);
    let growth = large.2 / small.2;
    goals.push(Goal {
        name: "time per model request (body built), 100k vs 1k records".into(),
        figure: format!(
            "{growth:.2}x ({:.3} ms vs {:.3} ms; rebuilt as before: {:.1} ms vs {:.2} ms, {:.0}x)",
            large.2 * 1e3,
            small.2 * 1e3,
            large.3 * 1e3,
            small.3 * 1e3,
            large.3 / small.3
        ),
        goal: "<= 2x".into(),
        met: growth <= 2.0,
    });
    goals.push(Goal {
        name: "time per model request, Chat Completions, 100k vs 1k records".into(),
        figure: format!("{:.2}x ({:.3} ms vs {:.3} ms)", large.4 / small.4, large.4 * 1e3, small.4 * 1e3),
        goal: "<= 2x".into(),
        met: large.4 / small.4 <= 2.0,
    });
    let journal_kib = large.1 as f64 / 1024.0;
    goals.push(Goal {
        name: "context's peak memory, 100k records".into(),
        figure: format!(
            "{:.2}x journal ({:.1} MiB vs {:.1} MiB; rebuilt as before: {:.2}x)",
            large.5 as f64 / journal_kib,
            large.5 as f64 / 1024.0,
            journal_kib / 1024.0,
            large.6 as f64 / journal_kib
        ),
        goal: "<= 1.5x journal".into(),
        met: large.5 as f64 <= 1.5 * journal_kib,
    });
    Ok(goals)
}
