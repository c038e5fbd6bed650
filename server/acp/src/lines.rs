//! The ACP transport's lines, with a bound on each incoming line and on
//! what waits to be written.
//!
//! The crate's own byte-stream transport reads whole lines, however long: a
//! client (or anything writing to the server's stdin) could make it buffer
//! without limit. Here a line over [`MAX_LINE_BYTES`] is answered with a
//! JSON-RPC error naming the bound and dropped as it is read (never held
//! whole), and the server reads on; so is a line that is not UTF-8.
//! Outgoing lines, the crate's and these errors, go through one queue
//! bounded by bytes ([`OUTGOING_BYTES`], each line with [`LINE_ENVELOPE`])
//! to one writer, so they never interleave.
//!
//! The crate keeps what it is given to send in queues of its own, without
//! bound. So that a client that stops reading cannot grow them, the
//! session's updates (`session/update`, by far the most messages) are sent
//! through [`Outbound`], which counts those sent and those written: a
//! session's event forwarder takes its next event only once fewer than
//! [`UPDATES_IN_FLIGHT`] are unwritten, and the events wait in the agent's
//! stream meanwhile, where text and output deltas merge.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use futures::Stream;
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify, Semaphore};

/// The largest incoming message line, newline excluded.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// Bytes of outgoing lines waiting for the writer; the crate waits when
/// they are past it. A longer line waits until the queue is empty.
pub const OUTGOING_BYTES: usize = 4 * 1024 * 1024;
/// What a queued line costs besides its text (the `String`, its slot).
const LINE_ENVELOPE: usize = 64;
/// `session/update` notifications sent but not yet written, past which a
/// session's forwarder waits ([`Outbound::room`]).
pub const UPDATES_IN_FLIGHT: u64 = 16;
/// How the crate writes a `session/update` notification: the JSON-RPC
/// members first, so only a notification of that method starts with it.
/// (Were a release of the crate to write it otherwise, no update would
/// count as written and a stream would stop after 16:
/// `tests/e2e/tests/backpressure.rs` streams thousands over ACP and fails.)
const UPDATE_LINE_START: &str = r#"{"jsonrpc":"2.0","method":"session/update","#;

// The JSON-RPC error code for a dropped line: its id was never read.
use mino_protocol::jsonrpc_code::INVALID_REQUEST;

/// One line as read.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Text(String),
    /// Over the bound: its length in bytes (it was dropped as it came).
    TooLong(usize),
    NotUtf8,
}

/// Reads the next line (without its `\n` or `\r\n`), keeping at most `max`
/// bytes of it; `None` at the end of input. A last line without a newline
/// counts, as with `BufRead::lines`.
async fn next_line(reader: &mut (impl AsyncBufRead + Unpin), max: usize) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut total = 0usize;
    let mut over = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if total == 0 {
                return Ok(None);
            }
            break;
        }
        let (take, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (buf.len(), false),
        };
        total += take;
        if !over && total > max {
            over = true;
            line = Vec::new();
        }
        if !over {
            line.extend_from_slice(&buf[..take]);
        }
        reader.consume(take + usize::from(end));
        if end {
            break;
        }
    }
    if over {
        return Ok(Some(Line::TooLong(total)));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(String::from_utf8(line).map_or(Line::NotUtf8, Line::Text)))
}

/// The error a dropped line is answered with (`id` null: it was not read).
fn dropped_reply(line: &Line, max: usize) -> Option<String> {
    let message = match line {
        Line::Text(_) => return None,
        Line::TooLong(size) => format!(
            "a message line of {size} bytes was dropped unread: mino-server takes ACP messages of at most {max} bytes \
             ({} MiB) per line; send large context as a resource_link or a smaller embedded resource",
            max / (1024 * 1024)
        ),
        Line::NotUtf8 => "a message line was dropped: it is not UTF-8; ACP messages are UTF-8 JSON".into(),
    };
    Some(json!({ "jsonrpc": "2.0", "id": null, "error": { "code": INVALID_REQUEST, "message": message } }).to_string())
}

/// The outgoing lines, bounded by bytes, to the one writer.
#[derive(Clone)]
struct LineQueue {
    lines: mpsc::UnboundedSender<(String, u32)>,
    room: Arc<Semaphore>,
}

impl LineQueue {
    fn new() -> (Self, mpsc::UnboundedReceiver<(String, u32)>) {
        let (lines, rx) = mpsc::unbounded_channel();
        (LineQueue { lines, room: Arc::new(Semaphore::new(OUTGOING_BYTES)) }, rx)
    }

    /// Queues `line` once there is room for it; an error once the writer is gone.
    async fn push(&self, line: String) -> io::Result<()> {
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "the ACP writer stopped");
        let cost = (line.len() + LINE_ENVELOPE).min(OUTGOING_BYTES) as u32;
        self.room.acquire_many(cost).await.map_err(|_| gone())?.forget();
        self.lines.send((line, cost)).map_err(|_| gone())
    }
}

/// Counts the `session/update` notifications sent and written, so that a
/// session's forwarder can wait for the client (see the module's documentation).
#[derive(Default)]
pub struct Outbound {
    sent: AtomicU64,
    written: AtomicU64,
    /// The client cannot be written to any more: nobody waits.
    broken: AtomicBool,
    progress: Notify,
}

impl Outbound {
    /// Sends a `session/update`; every one goes through here, so that the
    /// count of those in flight is exact.
    pub fn send(
        &self,
        cx: &agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Client>,
        update: agent_client_protocol::v1::schema::SessionNotification,
    ) -> Result<(), agent_client_protocol::Error> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        let sent = cx.send_notification(update);
        if sent.is_err() {
            // Never queued: it will not be written.
            self.sent.fetch_sub(1, Ordering::SeqCst);
        }
        sent
    }

    /// Resolves once fewer than [`UPDATES_IN_FLIGHT`] updates wait to be
    /// written (or the client is gone).
    pub async fn room(&self) {
        loop {
            let progress = self.progress.notified();
            let sent = self.sent.load(Ordering::SeqCst);
            let written = self.written.load(Ordering::SeqCst);
            if self.broken.load(Ordering::SeqCst) || sent.saturating_sub(written) < UPDATES_IN_FLIGHT {
                return;
            }
            progress.await;
        }
    }

    fn line_written(&self, line: &str) {
        if line.starts_with(UPDATE_LINE_START) {
            self.written.fetch_add(1, Ordering::SeqCst);
            self.progress.notify_waiters();
        }
    }

    fn stopped(&self) {
        self.broken.store(true, Ordering::SeqCst);
        self.progress.notify_waiters();
    }
}

/// The incoming lines of `reader` for the crate's `Lines` transport; lines
/// it drops are answered through `replies`.
fn incoming(
    reader: impl AsyncBufRead + Unpin + Send + 'static,
    max: usize,
    replies: LineQueue,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    futures::stream::unfold(Some((reader, replies)), move |state| async move {
        let (mut reader, replies) = state?;
        loop {
            match next_line(&mut reader, max).await {
                Err(e) => return Some((Err(e), None)),
                Ok(None) => return None,
                Ok(Some(Line::Text(text))) => match crate::decisions::screen(text) {
                    crate::decisions::Screened::Pass(text) => return Some((Ok(text), Some((reader, replies)))),
                    crate::decisions::Screened::Refused { instead, reply } => {
                        // The writer is gone only when the connection is.
                        if replies.push(reply).await.is_err() {
                            return None;
                        }
                        if let Some(instead) = instead {
                            return Some((Ok(instead), Some((reader, replies))));
                        }
                    }
                },
                Ok(Some(dropped)) => {
                    tracing::warn!(?dropped, "an incoming ACP line was dropped");
                    if let Some(reply) = dropped_reply(&dropped, max) {
                        // The writer is gone only when the connection is.
                        if replies.push(reply).await.is_err() {
                            return None;
                        }
                    }
                }
            }
        }
    })
}

/// Writes each queued line, then a newline, flushing after each; makes
/// room for the next as each is written.
async fn write_lines(
    mut writer: impl AsyncWrite + Unpin,
    mut lines: mpsc::UnboundedReceiver<(String, u32)>,
    room: Arc<Semaphore>,
    outbound: Arc<Outbound>,
) {
    while let Some((mut line, cost)) = lines.recv().await {
        line.push('\n');
        let written = async {
            writer.write_all(line.as_bytes()).await?;
            writer.flush().await
        };
        if let Err(e) = written.await {
            tracing::debug!("could not write to the ACP client: {e}");
            room.close();
            outbound.stopped();
            return;
        }
        room.add_permits(cost as usize);
        outbound.line_written(&line);
    }
    outbound.stopped();
}

/// The ACP transport over `reader`/`writer` with incoming lines bounded by
/// `max` bytes, the counter of its updates, and the task writing its output
/// (done once every line queued has been written).
// The `impl Trait` parts of this type cannot be named by a type alias on
// stable Rust, which is what the lint asks for.
#[allow(clippy::type_complexity)]
pub fn transport(
    reader: impl AsyncBufRead + Unpin + Send + 'static,
    writer: impl AsyncWrite + Unpin + Send + 'static,
    max: usize,
) -> (
    agent_client_protocol::Lines<
        impl futures::Sink<String, Error = io::Error> + Send + 'static,
        impl Stream<Item = io::Result<String>> + Send + 'static,
    >,
    Arc<Outbound>,
    tokio::task::JoinHandle<()>,
) {
    let (queue, rx) = LineQueue::new();
    let outbound = Arc::new(Outbound::default());
    let writing = tokio::spawn(write_lines(writer, rx, queue.room.clone(), outbound.clone()));
    let outgoing = futures::sink::unfold(queue.clone(), |queue, line: String| async move {
        queue.push(line).await?;
        Ok::<_, io::Error>(queue)
    });
    (agent_client_protocol::Lines::new(outgoing, incoming(reader, max, queue)), outbound, writing)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = tokio::io::BufReader::with_capacity(16, input);
        let mut out = Vec::new();
        while let Some(line) = next_line(&mut reader, max).await.expect("reading a slice") {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn a_line_over_the_bound_is_dropped_and_the_next_is_read() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\n{\"ok\":1}\r\n\xff\nlast");
        assert_eq!(
            lines_of(&input, 40).await,
            vec![Line::TooLong(100), Line::Text("{\"ok\":1}".into()), Line::NotUtf8, Line::Text("last".into())]
        );
        assert_eq!(lines_of(b"", 40).await, vec![]);
        assert_eq!(lines_of(&[b'y'; 40], 40).await, vec![Line::Text("y".repeat(40))], "the bound itself is allowed");
        let reply = dropped_reply(&Line::TooLong(100), MAX_LINE_BYTES).expect("a reply");
        let reply: serde_json::Value = serde_json::from_str(&reply).expect("JSON");
        assert_eq!(reply["id"], serde_json::Value::Null);
        assert_eq!(reply["error"]["code"], INVALID_REQUEST);
        assert!(reply["error"]["message"].as_str().is_some_and(|m| m.contains("8388608 bytes (8 MiB)")), "{reply}");
    }
}
