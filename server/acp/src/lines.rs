//! The ACP transport's lines, with a bound on each incoming line.
//!
//! The crate's own byte-stream transport reads whole lines, however long: a
//! client (or anything writing to the server's stdin) could make it buffer
//! without limit. Here a line over [`MAX_LINE_BYTES`] is answered with a
//! JSON-RPC error naming the bound and dropped as it is read (never held
//! whole), and the server reads on; so is a line that is not UTF-8.
//! Outgoing lines, the crate's and these errors, go through one bounded
//! queue to one writer, so they never interleave.

use std::io;

use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// The largest incoming message line, newline excluded.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// Outgoing lines waiting for the writer; the crate waits when it is full.
const OUTGOING_QUEUE: usize = 64;

/// The JSON-RPC error code for a dropped line: its id was never read.
pub const INVALID_REQUEST: i64 = -32600;

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

/// The incoming lines of `reader` for the crate's `Lines` transport; lines
/// it drops are answered through `replies`.
fn incoming(
    reader: impl AsyncBufRead + Unpin + Send + 'static,
    max: usize,
    replies: mpsc::Sender<String>,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    futures::stream::unfold(Some((reader, replies)), move |state| async move {
        let (mut reader, mut replies) = state?;
        loop {
            match next_line(&mut reader, max).await {
                Err(e) => return Some((Err(e), None)),
                Ok(None) => return None,
                Ok(Some(Line::Text(text))) => return Some((Ok(text), Some((reader, replies)))),
                Ok(Some(dropped)) => {
                    tracing::warn!(?dropped, "an incoming ACP line was dropped");
                    if let Some(reply) = dropped_reply(&dropped, max) {
                        // The writer is gone only when the connection is.
                        if replies.send(reply).await.is_err() {
                            return None;
                        }
                    }
                }
            }
        }
    })
}

/// Writes each queued line, then a newline, flushing after each.
async fn write_lines(mut writer: impl AsyncWrite + Unpin, mut lines: mpsc::Receiver<String>) {
    while let Some(mut line) = lines.next().await {
        line.push('\n');
        let written = async {
            writer.write_all(line.as_bytes()).await?;
            writer.flush().await
        };
        if let Err(e) = written.await {
            tracing::debug!("could not write to the ACP client: {e}");
            return;
        }
    }
}

/// The ACP transport over `reader`/`writer` with incoming lines bounded by
/// `max` bytes, and the task writing its output (done once every line
/// queued has been written).
pub fn transport(
    reader: impl AsyncBufRead + Unpin + Send + 'static,
    writer: impl AsyncWrite + Unpin + Send + 'static,
    max: usize,
) -> (
    agent_client_protocol::Lines<
        impl futures::Sink<String, Error = io::Error> + Send + 'static,
        impl Stream<Item = io::Result<String>> + Send + 'static,
    >,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::channel(OUTGOING_QUEUE);
    let writing = tokio::spawn(write_lines(writer, rx));
    let outgoing = tx.clone().sink_map_err(|e| io::Error::new(io::ErrorKind::BrokenPipe, e));
    (agent_client_protocol::Lines::new(outgoing, incoming(reader, max, tx)), writing)
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
