//! A turn's own overhead: an in-process [`Agent`] against the mock model on
//! loopback (answering at once), one `bash` call running `true`, approved by
//! the bench as soon as it is asked.
//!
//! The journal's file is wrapped in a timing layer that counts syncs and
//! their time, so a turn's time splits into
//!
//! - syncs (measured inside the turn, compared with a bare loop of the same
//!   number of `sync_data` calls on a file in the same directory),
//! - model round trips (the floor: a bare `reqwest` POST of the very bodies
//!   Mino sent, to the same mock, reading the whole SSE body; Mino's
//!   `ModelClient::respond` on the same input is measured too),
//! - the command (the floor: a bare `tokio::process` spawn of `bash -c true`
//!   with piped output; Mino's `BashTool::run` is measured too),
//! - and the rest, which is Mino's own: the goal is under 1 ms per turn step
//!   (a step is one model request or one tool call; this turn has 3).

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mino_core::agent::Events;
use mino_core::agent::{Agent, AgentEvent, Numbered, TurnLimits};
use mino_core::bash::{BashTool, Limits};
use mino_core::journal::JournalFile;
use mino_core::model::{ModelClient, ModelConfig, ModelRequest, RetryPolicy};
use mino_core::{ApprovalDecision, MinoHome, Session, TurnStatus};
use mino_mock_model::{MockModel, Reply};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{best, median, Goal};

const INSTRUCTIONS: &str = "Be brief.";
/// Model requests + tool calls in the benchmarked turn.
const STEPS: f64 = 3.0;
/// docs/journal.md: 2 + 2 per call run.
const EXPECTED_SYNCS: u64 = 4;

#[derive(Default)]
struct SyncStats {
    syncs: u64,
    sync_secs: f64,
    writes: u64,
    write_secs: f64,
}

/// The timing layer between the journal and its file.
struct Timed {
    inner: Box<dyn JournalFile>,
    stats: Arc<Mutex<SyncStats>>,
}

impl JournalFile for Timed {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> std::io::Result<usize> {
        let t = Instant::now();
        let r = self.inner.write_at(buf, offset);
        let secs = t.elapsed().as_secs_f64();
        let mut s = self.stats.lock().unwrap();
        s.writes += 1;
        s.write_secs += secs;
        r
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        let t = Instant::now();
        let r = self.inner.sync_data();
        let secs = t.elapsed().as_secs_f64();
        let mut s = self.stats.lock().unwrap();
        s.syncs += 1;
        s.sync_secs += secs;
        r
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
}

struct TurnSample {
    total: f64,
    sync_secs: f64,
    syncs: u64,
    writes: u64,
    write_secs: f64,
}

pub(crate) fn model_config(mock: &MockModel) -> ModelConfig {
    ModelConfig {
        base_url: mock.base_url(),
        api_key: Some("sk-bench".into()),
        model: "bench-model".into(),
        retry: RetryPolicy {
            max_retries: 0,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(1),
        },
        stall_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(5),
    }
}

async fn one_turn(
    agent: &Agent,
    mock: &MockModel,
    events: &mut Events,
    stats: &Arc<Mutex<SyncStats>>,
    i: usize,
) -> Result<TurnSample> {
    let before = {
        let s = stats.lock().unwrap();
        (s.syncs, s.sync_secs, s.writes, s.write_secs)
    };
    mock.push(Reply::call(&format!("call_{i}"), "true"));
    mock.push(Reply::text("Done: it printed nothing."));
    let started = Instant::now();
    agent.chat(&format!("Run true, please ({i}).")).await?;
    loop {
        let Some(Numbered { event, .. }) = tokio::time::timeout(Duration::from_secs(30), events.recv()).await? else {
            bail!("agent events closed");
        };
        match event {
            AgentEvent::ApprovalRequest { turn_id, call_id, .. } => {
                agent.approve(&turn_id, &call_id, ApprovalDecision::Approved)?
            }
            AgentEvent::TurnEnded { status, reason, .. } => {
                if status != TurnStatus::Completed {
                    bail!("turn ended {status:?}: {reason:?}");
                }
                break;
            }
            AgentEvent::ToolResult { status, output, .. } if status != mino_core::ToolStatus::Success => {
                bail!("`true` did not succeed: {status:?} {output}");
            }
            _ => {}
        }
    }
    let total = started.elapsed().as_secs_f64();
    let s = stats.lock().unwrap();
    Ok(TurnSample {
        total,
        sync_secs: s.sync_secs - before.1,
        syncs: s.syncs - before.0,
        writes: s.writes - before.2,
        write_secs: s.write_secs - before.3,
    })
}

/// Bare `sync_data` loop on a file in `dir`: a small append then a sync, like a save point.
fn bare_syncs(dir: &std::path::Path, n: usize) -> Result<Vec<f64>> {
    let path = dir.join("bare-sync.bin");
    let file = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path)?;
    let line = vec![b'x'; 300];
    let mut offset = 0u64;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        file.write_all_at(&line, offset)?;
        offset += line.len() as u64;
        let t = Instant::now();
        file.sync_data()?;
        out.push(t.elapsed().as_secs_f64());
    }
    std::fs::remove_file(&path)?;
    Ok(out)
}

pub fn run(quick: bool) -> Result<Vec<Goal>> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run_async(quick))
}

async fn run_async(quick: bool) -> Result<Vec<Goal>> {
    // Measured turns come in batches; Mino's own time is the best batch's
    // median, so a burst of the machine's other work costs one batch. The
    // quick run has batches as long as the full run's and two more of them:
    // with 6 batches of 8 its turn step spread over 0.69-1.09 ms from one
    // run to the next (goal 1 ms), and a turn costs about 20 ms.
    let (warmup, turns, batch) = if quick { (3, 80, 10) } else { (5, 60, 10) };
    let dir = tempfile::tempdir()?;
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&cwd)?;
    let home = MinoHome::new(dir.path().join("home"));
    let mut session = Session::create(&home, &cwd)?;
    let stats = Arc::new(Mutex::new(SyncStats::default()));
    let layer = stats.clone();
    session.journal_mut().wrap_file(move |inner| Box::new(Timed { inner, stats: layer }));
    let journal_dir: PathBuf = session.path().parent().context("journal dir")?.to_path_buf();

    let mock = MockModel::start(Vec::new()).await?;
    let model = ModelClient::new(model_config(&mock)).map_err(|e| anyhow::anyhow!("{e}"))?;
    // Commands run under `mino-server --supervise`, as in the server;
    // scripts/bench builds it beside this binary.
    let supervisor = std::env::current_exe()?.with_file_name("mino-server");
    if !supervisor.exists() {
        bail!("{} is missing: build it first (scripts/bench does)", supervisor.display());
    }
    let bash = BashTool::new(cwd.clone(), Limits::default(), supervisor);
    let (agent, mut events) =
        Agent::new(session, model.clone(), bash.clone(), INSTRUCTIONS.into(), TurnLimits::default());

    for i in 0..warmup {
        one_turn(&agent, &mock, &mut events, &stats, i).await?;
    }
    // Each measured turn is followed at once by its floors, so a turn and
    // the floors subtracted from it see the machine in the same state: the
    // bare POSTs of the very bodies the turn sent, a bare spawn, and Mino's
    // own `ModelClient::respond` and `BashTool::run` on the same inputs.
    let http = reqwest::Client::new();
    let url = format!("{}/responses", mock.base_url());
    let mut samples = Vec::new();
    let (mut floor_call, mut floor_text, mut respond_call, mut respond_text) = (vec![], vec![], vec![], vec![]);
    let (mut cmd_floor, mut cmd_mino, mut own_per_turn) = (vec![], vec![], vec![]);
    for i in warmup..warmup + turns {
        let sample = one_turn(&agent, &mock, &mut events, &stats, i).await?;
        // Only this turn's two requests: copying every recorded body each
        // turn would churn the heap the next turn runs on.
        let sent = mock.last_requests(2);
        if sent.len() != 2 {
            bail!("the mock recorded {} requests for the turn, not 2", sent.len());
        }
        let mut model_floor = 0.0;
        for (n, request) in sent.iter().enumerate() {
            let is_call = n == 0;
            let reply =
                || if is_call { Reply::call("call_x", "true") } else { Reply::text("Done: it printed nothing.") };
            let body = serde_json::to_vec(&request.body)?;
            mock.push(reply());
            let t = Instant::now();
            let bytes = http
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .header("authorization", "Bearer sk-bench")
                .body(body)
                .send()
                .await?
                .bytes()
                .await?;
            let secs = t.elapsed().as_secs_f64();
            if !bytes.ends_with(b"\n\n") {
                bail!("bare POST did not read a whole stream");
            }
            model_floor += secs;
            if is_call {
                floor_call.push(secs)
            } else {
                floor_text.push(secs)
            }

            let input: Vec<Value> = request.body["input"].as_array().cloned().unwrap_or_default();
            mock.push(reply());
            let request = ModelRequest { instructions: INSTRUCTIONS, input: &input };
            let t = Instant::now();
            model
                .respond(&request, &mut |_| {}, &CancellationToken::new())
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let secs = t.elapsed().as_secs_f64();
            if is_call {
                respond_call.push(secs)
            } else {
                respond_text.push(secs)
            }
        }

        // Command floor: a bare spawn of `bash -c true` (output piped, as Mino does).
        let t = Instant::now();
        let out = tokio::process::Command::new("bash")
            .arg("-c")
            .arg("true")
            .current_dir(&cwd)
            .stdin(std::process::Stdio::null())
            .output()
            .await?;
        let spawn = t.elapsed().as_secs_f64();
        cmd_floor.push(spawn);
        if !out.status.success() {
            bail!("bash -c true failed");
        }
        let t = Instant::now();
        let outcome = bash.run("true", &mut |_, _| {}, &CancellationToken::new()).await;
        cmd_mino.push(t.elapsed().as_secs_f64());
        if outcome.exit_code != Some(0) {
            bail!("BashTool true failed: {outcome:?}");
        }
        // The journal's `pwrite`s are disk I/O like its syncs: microseconds,
        // unless the disk is busy enough to hold them up.
        own_per_turn.push(sample.total - sample.sync_secs - sample.write_secs - model_floor - spawn);
        samples.push(sample);
    }
    let syncs_per_turn: Vec<u64> = samples.iter().map(|s| s.syncs).collect();
    let writes_per_turn = samples.iter().map(|s| s.writes).max().unwrap_or(0);
    let syncs_ok = syncs_per_turn.iter().all(|&n| n == EXPECTED_SYNCS);
    let model_floor = median(floor_call.clone()) + median(floor_text.clone());
    let model_respond = median(respond_call.clone()) + median(respond_text.clone());
    let cmd_floor = median(cmd_floor);
    let cmd_mino = median(cmd_mino);

    let bare = bare_syncs(&journal_dir, turns * EXPECTED_SYNCS as usize)?;
    let bare_per_sync = median(bare);

    let total = median(samples.iter().map(|s| s.total).collect());
    let syncs = median(samples.iter().map(|s| s.sync_secs).collect());
    let per_sync = median(samples.iter().map(|s| s.sync_secs / s.syncs.max(1) as f64).collect());
    let writes = median(samples.iter().map(|s| s.write_secs).collect());
    // Per-turn remainder, the median of each batch, then the best batch:
    // Mino's own time with its floors subtracted.
    let own = best(own_per_turn.chunks(batch).map(|b| median(b.to_vec())).collect());
    let own_step = own / STEPS;
    let ms = |s: f64| s * 1e3;
    println!(
        "turn (1 call of `true`, {turns} turns): total {:.2} ms = syncs {:.2} ms ({} syncs, {:.3} ms each; bare sync_data {:.3} ms, {:.2}x) + journal writes {:.3} ms ({} pwrites) + model floor {:.2} ms (2 bare POSTs; ModelClient::respond {:.2} ms) + command floor {:.2} ms (bare spawn; BashTool::run {:.2} ms) + Mino's own {:.2} ms ({:.3} ms per step; the best of {} batches of {batch} turns, each its median)",
        ms(total),
        ms(syncs),
        syncs_per_turn.first().copied().unwrap_or(0),
        ms(per_sync),
        ms(bare_per_sync),
        per_sync / bare_per_sync,
        ms(writes),
        writes_per_turn,
        ms(model_floor),
        ms(model_respond),
        ms(cmd_floor),
        ms(cmd_mino),
        ms(own),
        ms(own_step),
        turns / batch,
    );
    println!(
        "  of Mino's own: ModelClient over bare POSTs {:.3} ms (call {:.3}/{:.3}, text {:.3}/{:.3}), BashTool over bare spawn {:.3} ms, the rest of the turn loop {:.3} ms",
        ms(model_respond - model_floor),
        ms(median(respond_call)),
        ms(median(floor_call)),
        ms(median(respond_text)),
        ms(median(floor_text)),
        ms(cmd_mino - cmd_floor),
        ms(own - (model_respond - model_floor) - (cmd_mino - cmd_floor)),
    );
    std::io::stdout().flush()?;

    Ok(vec![
        Goal {
            name: "syncs per turn with 1 call (docs/journal.md: 2 + 2 per call)".into(),
            figure: format!(
                "{} (every turn)",
                if syncs_ok { EXPECTED_SYNCS.to_string() } else { format!("{syncs_per_turn:?}") }
            ),
            goal: format!("= {EXPECTED_SYNCS}"),
            met: syncs_ok,
        },
        Goal {
            name: "turn: sync time vs bare sync_data loop".into(),
            figure: format!(
                "{:.2}x ({:.3} ms vs {:.3} ms per sync; {:.2} ms of {:.2} ms per turn)",
                per_sync / bare_per_sync,
                ms(per_sync),
                ms(bare_per_sync),
                ms(syncs),
                ms(total)
            ),
            goal: "report".into(),
            met: true,
        },
        Goal {
            name: "turn: Mino's own non-sync time per step (journal I/O, model and command floors taken out)".into(),
            figure: format!(
                "{:.3} ms ({:.2} ms per turn of 3 steps; turn {:.2} ms, of which syncs {:.2}, writes {:.3})",
                ms(own_step),
                ms(own),
                ms(total),
                ms(syncs),
                ms(writes)
            ),
            goal: "< 1 ms".into(),
            met: own_step < 1e-3,
        },
    ])
}
