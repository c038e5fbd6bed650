//! Server-sent events with one very long line: a model event of several MB
//! (a long answer delivered as a single delta).
//!
//! - Parse: a 4 MB event parsed by `mino_core::model::parse_sse_events` (the
//!   model client's SSE parser, fed the bytes in chunks of [`CHUNK`], as a
//!   network delivers them) against a floor measured in the same run on the
//!   same bytes in the same chunks: append each chunk to one buffer, find
//!   each `\n` with `memchr` in the new bytes only, and copy each line out as
//!   validated UTF-8 (the least a streaming parser that hands out owned text
//!   must do). The goal: within [`RATIO_GOAL`]x the floor.
//! - Reported: `parse_sse_body` (SSE, then the event's JSON and the response
//!   accumulator) at 1–4 MB, and `ModelClient::respond` against the mock model
//!   over loopback HTTP with one delta of 1, 2 and 3 MB: wall time and the
//!   CPU time of the thread running the client (a current-thread runtime, so
//!   the HTTP reading and the parsing are all on it; the mock runs on threads
//!   of its own).

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use mino_core::model::{ModelClient, ModelEvent, ModelRequest};
use mino_mock_model::Reply;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::mock_stream::MockHost;
use crate::{best, median, Goal};

/// The parse of a 4 MB event may take at most this many times the line split.
pub const RATIO_GOAL: f64 = 3.0;
/// Chunk size of the in-process parse: 16 KiB, the most plaintext one TLS
/// record carries. Over the internet chunks are this size or smaller; over
/// plain-HTTP loopback they are larger (the run prints what it saw). The
/// cost of a parser that re-scans its buffer grows as chunks shrink.
pub const CHUNK: usize = 16 * 1024;
const MB: usize = 1_000_000;

/// About `len` bytes of answer text with what real text has: JSON escapes
/// (quotes, newlines, a backslash) and multi-byte UTF-8.
fn answer_text(len: usize) -> String {
    const PIECE: &str = "Les données \"arrivent\" en un seul événement;\nthe line is never split \\ ever. ";
    let mut text = String::with_capacity(len + PIECE.len());
    while text.len() < len {
        text.push_str(PIECE);
    }
    text
}

/// One `response.output_text.delta` event carrying `text` on a single
/// `data:` line, then `response.completed`: a whole response stream.
fn stream_of(text: &str) -> Vec<u8> {
    let delta = json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": text});
    let completed = json!({"type": "response.completed", "response": {"status": "completed", "output": []}});
    format!("event: response.output_text.delta\ndata: {delta}\n\nevent: response.completed\ndata: {completed}\n\n")
        .into_bytes()
}

/// The floor: split the chunked bytes into lines, scanning each byte once.
fn line_split(bytes: &[u8], chunk: usize) -> Result<usize> {
    let mut buffer: Vec<u8> = Vec::new();
    let mut scanned = 0;
    let mut text_bytes = 0;
    for piece in bytes.chunks(chunk) {
        buffer.extend_from_slice(piece);
        let mut start = 0;
        while let Some(at) = memchr::memchr(b'\n', &buffer[scanned..]) {
            let end = scanned + at;
            let line = std::str::from_utf8(&buffer[start..end])?.to_owned();
            text_bytes += line.len();
            start = end + 1;
            scanned = start;
        }
        buffer.drain(..start);
        scanned = buffer.len();
    }
    Ok(text_bytes)
}

fn time<T>(reps: usize, mut f: impl FnMut() -> Result<T>) -> Result<f64> {
    let mut secs = Vec::new();
    for _ in 0..reps {
        let started = Instant::now();
        std::hint::black_box(f()?);
        secs.push(started.elapsed().as_secs_f64());
    }
    Ok(best(secs))
}

fn parse_events(bytes: &[u8], text_len: usize) -> Result<usize> {
    let events = mino_core::model::parse_sse_events(bytes, CHUNK).map_err(anyhow::Error::msg)?;
    if events.len() != 2 || events[0].data.len() < text_len {
        bail!("the parser saw {} events", events.len());
    }
    Ok(events.len())
}

fn parse_body(bytes: &[u8]) -> Result<usize> {
    match mino_core::model::parse_sse_body(bytes, CHUNK).map_err(anyhow::Error::msg)? {
        Some(response) => Ok(response.items.len()),
        None => bail!("the stream did not complete"),
    }
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_THREAD is the calling thread.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// `ModelClient::respond` for one reply of a single `text_len`-byte delta:
/// (wall seconds, client thread CPU seconds).
fn respond_once(host: &MockHost, text: &str) -> Result<(f64, f64)> {
    host.mock.push(Reply::Text { deltas: vec![text.to_string()], delay_ms: 0 });
    let client = ModelClient::new(crate::turn::model_config(&host.mock)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let input = [json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Long."}]})];
    let request = ModelRequest { instructions: "", input: &input };
    let mut heard = 0usize;
    let mut on_event = |event: ModelEvent<'_>| {
        if let ModelEvent::TextDelta(delta) = event {
            heard += delta.len();
        }
    };
    let cancel = CancellationToken::new();
    let (cpu, started) = (thread_cpu(), Instant::now());
    runtime.block_on(client.respond(&request, &mut on_event, &cancel)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (wall, cpu) = (started.elapsed().as_secs_f64(), (thread_cpu() - cpu).as_secs_f64());
    if heard != text.len() {
        bail!("{heard} of {} bytes of text arrived", text.len());
    }
    Ok((wall, cpu))
}

/// How the mock's response body arrives over loopback: (chunks, median chunk bytes).
fn loopback_chunks(host: &MockHost, text: &str) -> Result<(usize, usize)> {
    use futures::StreamExt;
    host.mock.push(Reply::Text { deltas: vec![text.to_string()], delay_ms: 0 });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut body = crate::mock_stream::request_stream(&host.mock).await?.bytes_stream();
        let mut sizes = Vec::new();
        while let Some(chunk) = body.next().await {
            sizes.push(chunk?.len() as f64);
        }
        Ok((sizes.len(), median(sizes) as usize))
    })
}

pub fn run(quick: bool) -> Result<Vec<Goal>> {
    let reps = if quick { 3 } else { 7 };
    let ms = |s: f64| s * 1e3;
    let mut goals = Vec::new();

    for size_mb in [1, 2, 3, 4] {
        let text = answer_text(size_mb * MB);
        let bytes = stream_of(&text);
        // Interleaved so both see the machine in the same state.
        let floor = time(reps, || line_split(&bytes, CHUNK))?;
        let events = time(reps, || parse_events(&bytes, text.len()))?;
        let floor = floor.min(time(reps, || line_split(&bytes, CHUNK))?);
        let body = time(reps.min(3), || parse_body(&bytes))?;
        let ratio = events / floor;
        println!(
            "sse {size_mb} MB event on one line ({} bytes, {} KiB chunks): parse {:.2} ms, line split {:.2} ms ({ratio:.2}x); with the JSON and accumulator (parse_sse_body) {:.2} ms",
            bytes.len(),
            CHUNK / 1024,
            ms(events),
            ms(floor),
            ms(body)
        );
        if size_mb == 4 {
            goals.push(Goal {
                name: "SSE parse of a 4 MB single-line event vs line split (memchr)".into(),
                figure: format!("{ratio:.2}x ({:.2} ms vs {:.2} ms)", ms(events), ms(floor)),
                goal: format!("<= {RATIO_GOAL:.0}x"),
                met: ratio <= RATIO_GOAL,
            });
            goals.push(Goal {
                name: "parse_sse_body of a 4 MB single-line event (SSE + JSON + accumulator)".into(),
                figure: format!("{:.2} ms ({:.1}x line split)", ms(body), body / floor),
                goal: "report".into(),
                met: true,
            });
        }
    }

    let host = MockHost::start()?;
    let (chunks, median_chunk) = loopback_chunks(&host, &answer_text(4 * MB))?;
    println!("sse over loopback: a 4 MB event arrived in {chunks} chunks, median {median_chunk} bytes");
    let sizes: &[usize] = if quick { &[1] } else { &[1, 2, 3] };
    for &size_mb in sizes {
        let text = answer_text(size_mb * MB);
        let runs = 3;
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        for _ in 0..runs {
            let (wall, cpu) = respond_once(&host, &text)?;
            walls.push(wall);
            cpus.push(cpu);
        }
        let (wall, cpu) = (best(walls), best(cpus));
        println!(
            "sse ModelClient::respond, one {size_mb} MB delta from the mock over loopback (best of {runs}): {:.1} ms wall, {:.1} ms client CPU",
            ms(wall),
            ms(cpu)
        );
        goals.push(Goal {
            name: format!("ModelClient::respond, one {size_mb} MB delta (loopback mock)"),
            figure: format!("{:.1} ms wall, {:.1} ms client CPU", ms(wall), ms(cpu)),
            goal: "report".into(),
            met: true,
        });
    }
    Ok(goals)
}
