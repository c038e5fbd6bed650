//! The mock model the benchmarks stream from, and the figures of a stamped
//! stream: a mock on a runtime of its own, the floor of the relay's latency
//! (the stream read straight from the mock, no Mino in between), and the
//! latencies and percentiles the relay and the peers' comparison report.

use anyhow::{bail, Result};
use mino_mock_model::{MockModel, MockOptions, Reply};
use serde_json::Value;

use crate::client::DeltaLog;

/// A mock model on a runtime of its own (one worker thread), alive until dropped.
pub struct MockHost {
    pub mock: MockModel,
    _runtime: tokio::runtime::Runtime,
}

impl MockHost {
    pub fn start() -> Result<MockHost> {
        MockHost::start_with(MockOptions::default())
    }

    pub fn start_with(options: MockOptions) -> Result<MockHost> {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let mock = runtime.block_on(MockModel::start_with(loopback, Vec::new(), options))?;
        Ok(MockHost { mock, _runtime: runtime })
    }
}

/// Asks the mock for its next reply as a streamed response, straight over
/// loopback HTTP by this process (no Mino in between).
pub async fn request_stream(mock: &MockModel) -> Result<reqwest::Response> {
    Ok(reqwest::Client::new()
        .post(format!("{}/responses", mock.base_url()))
        .header("content-type", "application/json")
        .body(r#"{"model":"bench","input":[],"stream":true}"#)
        .send()
        .await?)
}

/// The floor of the latency: the same paced stream read straight from the
/// mock over loopback HTTP by this process (no Mino in between), each event
/// timed as its chunk arrives.
pub fn direct_once(mock: &MockModel, count: usize, delay_ms: u64) -> Result<DeltaLog> {
    use futures::StreamExt;
    mock.push(Reply::StampedText { count, delay_ms });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut body = request_stream(mock).await?.bytes_stream();
        let mut log = DeltaLog::default();
        let mut pending = Vec::new();
        while let Some(chunk) = body.next().await {
            let read_at = mino_mock_model::monotonic_nanos();
            pending.extend_from_slice(&chunk?);
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = pending.drain(..end + 2).collect();
                let text = String::from_utf8_lossy(&event);
                if let Some(data) = text.lines().find_map(|l| l.strip_prefix("data: ")) {
                    let v: Value = serde_json::from_str(data)?;
                    if v["type"] == "response.output_text.delta" {
                        let stamp = v["delta"].as_str().unwrap_or("").trim_end().parse().unwrap_or(0);
                        log.deltas.push((read_at, stamp));
                    }
                }
            }
        }
        if log.deltas.len() != count {
            bail!("{} of {count} deltas read straight from the mock", log.deltas.len());
        }
        Ok(log)
    })
}

pub fn percentile(mut xs: Vec<f64>, p: f64) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if xs.is_empty() {
        return f64::NAN;
    }
    let i = ((xs.len() as f64 - 1.0) * p).round() as usize;
    xs[i]
}

pub fn latencies_ms(log: &DeltaLog) -> Vec<f64> {
    log.deltas.iter().map(|&(read, sent)| read.saturating_sub(sent) as f64 / 1e6).collect()
}
