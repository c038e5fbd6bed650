//! The stdio transport: LSP base-protocol framing (`Content-Length`) around
//! the `tower-lsp-server` service.
//!
//! `tower_lsp_server::Server` is not used because its reader stops for good at
//! the first malformed frame or unparseable body (tokio-util's `FramedRead`
//! ends the stream after a decode error), and the protocol promises that the
//! server answers malformed input and keeps serving. Here a bad frame or bad
//! JSON gets a JSON-RPC error response and the next frame is read as usual.
//!
//! Every request is handled in its own task (no concurrency limit, so a
//! pending approval or cancel is never starved). One writer thread owns stdout;
//! server notifications reach it through one pump task, so they stay in the
//! order they were sent. A response and a notification are not ordered
//! relative to each other.

use std::future::poll_fn;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tower::Service;
use tower_lsp_server::jsonrpc::Request;
use tower_lsp_server::{ClientSocket, LspService};

use futures::StreamExt;

use crate::handlers::{Backend, Handle, OPTIONAL_PARAMS};

/// Headers longer than this without a blank line are garbage.
pub const MAX_HEADER: usize = 8 * 1024;
/// Bodies above this are refused (and skipped).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// Frames already queued are written together, up to about this many bytes.
const WRITE_BATCH: usize = 256 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;

/// What one read from the input produced.
#[derive(Debug, PartialEq)]
pub enum Frame {
    Body(Vec<u8>),
    /// Bytes that are not a frame; the reader has skipped them.
    Malformed(String),
}

/// Reads `Content-Length` frames, resynchronising after garbage.
///
/// Memory is bounded by what arrives, never by what a header claims: a body
/// is buffered as its bytes come in, and a `Content-Length` above
/// [`MAX_BODY`] is answered at once and its bytes are dropped as they arrive
/// until the next header, so a lying length cannot stall or swallow the
/// stream.
pub struct FrameReader<R> {
    input: R,
    buf: Vec<u8>,
    eof: bool,
    /// After an oversized header: input is dropped up to the next header.
    discarding: bool,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(input: R) -> Self {
        Self { input, buf: Vec::with_capacity(8192), eof: false, discarding: false }
    }

    /// Reads more input; false at end of input.
    async fn fill(&mut self) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let mut chunk = [0u8; 8192];
        let n = self.input.read(&mut chunk).await?;
        if n == 0 {
            self.eof = true;
            return Ok(false);
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(true)
    }

    /// The next frame, or `None` once the input has ended.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            if self.discarding {
                match find(&self.buf, b"Content-Length") {
                    Some(start) => {
                        self.buf.drain(..start);
                        self.discarding = false;
                    }
                    None => {
                        // Keep a tail that may be the start of the next header.
                        let keep = self.buf.len().min(b"Content-Length".len() - 1);
                        self.buf.drain(..self.buf.len() - keep);
                        if !self.fill().await? {
                            return Ok(None);
                        }
                        continue;
                    }
                }
            }
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let header = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                let length = match content_length(&header) {
                    Ok(length) => {
                        self.buf.drain(..end + 4);
                        length
                    }
                    Err(why) => {
                        // Garbage before what looks like a header: skip to
                        // it, so the frame that follows is still read. The
                        // last candidate: garbage (a bad frame's body) may
                        // itself mention "Content-Length".
                        let resync =
                            rfind(&self.buf[..end], b"Content-Length").filter(|&p| p > 0 && self.buf[p - 1] != b'\n');
                        match resync {
                            Some(start) => drop(self.buf.drain(..start)),
                            None => drop(self.buf.drain(..end + 4)),
                        }
                        return Ok(Some(Frame::Malformed(why)));
                    }
                };
                if length > MAX_BODY {
                    self.discarding = true;
                    return Ok(Some(Frame::Malformed(format!(
                        "Content-Length {length} exceeds {MAX_BODY} bytes; its body is skipped up to the next header"
                    ))));
                }
                while self.buf.len() < length {
                    if !self.fill().await? {
                        let got = self.buf.len();
                        self.buf.clear();
                        return Ok(Some(Frame::Malformed(format!(
                            "input ended inside a frame ({got} of {length} bytes)"
                        ))));
                    }
                }
                let body: Vec<u8> = self.buf.drain(..length).collect();
                return Ok(Some(Frame::Body(body)));
            }
            if self.buf.len() > MAX_HEADER {
                // Keep a possible header start; drop the rest.
                let keep = find(&self.buf, b"Content-Length").filter(|&p| p > 0).unwrap_or(self.buf.len() - 3);
                let skipped = self.buf.len().min(keep);
                self.buf.drain(..skipped);
                return Ok(Some(Frame::Malformed(format!("{skipped} bytes without a frame header"))));
            }
            if !self.fill().await? {
                if self.buf.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                let rest = String::from_utf8_lossy(&self.buf).into_owned();
                self.buf.clear();
                return Ok(Some(Frame::Malformed(format!("input ended inside a header: {rest:?}"))));
            }
        }
    }
}

fn content_length(header: &str) -> Result<usize, String> {
    let mut length = None;
    for line in header.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("not a header line: {line:?}"));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("Content-Length") {
            length = Some(value.parse::<usize>().map_err(|e| format!("bad Content-Length {value:?}: {e}"))?);
        } else if name.eq_ignore_ascii_case("Content-Type") {
            let charset = value.split(';').skip(1).map(str::trim).find_map(|p| p.strip_prefix("charset="));
            if !matches!(charset, None | Some("utf-8" | "utf8")) {
                return Err(format!("unsupported Content-Type {value:?}: only utf-8 is understood"));
            }
        }
    }
    length.ok_or_else(|| "a header without Content-Length".to_string())
}

fn error_response(id: Value, code: i64, message: impl Into<String>) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into() } }).to_string()
}

fn frame(body: &str) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// What a frame's body asks for.
pub enum Incoming {
    Request(Request),
    /// Answer with this error text (a JSON-RPC response).
    Reject(String),
    /// A response from the client (this server sends no requests) or nothing to do.
    Ignore,
}

/// Decides what a frame's body is: a request (or notification) for the
/// service, an error to answer, or nothing to do.
pub fn classify(body: &[u8]) -> Incoming {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(e) => return Incoming::Reject(error_response(Value::Null, PARSE_ERROR, format!("Parse error: {e}"))),
    };
    let Value::Object(mut map) = value else {
        return Incoming::Reject(error_response(
            Value::Null,
            INVALID_REQUEST,
            "Invalid request: a message must be a JSON object (batches are not supported)",
        ));
    };
    let id = map.get("id").cloned();
    let valid_id = matches!(id, None | Some(Value::Number(_) | Value::String(_) | Value::Null));
    let reply_id = id.clone().filter(|_| valid_id).unwrap_or(Value::Null);
    if !map.contains_key("method") {
        if map.contains_key("result") || map.contains_key("error") {
            return Incoming::Ignore;
        }
        return Incoming::Reject(error_response(reply_id, INVALID_REQUEST, "Invalid request: no method"));
    }
    if map.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Incoming::Reject(error_response(reply_id, INVALID_REQUEST, "Invalid request: jsonrpc must be \"2.0\""));
    }
    if !valid_id {
        return Incoming::Reject(error_response(
            Value::Null,
            INVALID_REQUEST,
            "Invalid request: id must be a number or a string",
        ));
    }
    // Methods whose params are all optional accept a request without them.
    let method = map.get("method").and_then(Value::as_str).unwrap_or_default();
    // `$/` methods are notifications that may be ignored; the service
    // ignores them even when sent as requests, which would leave the
    // request unanswered. The LSP says to answer those MethodNotFound.
    if method.starts_with("$/") && id.is_some() {
        return Incoming::Reject(
            json!({ "jsonrpc": "2.0", "id": reply_id, "error": {
                "code": METHOD_NOT_FOUND,
                "message": format!("Method not found: {method} is not a request"),
                "data": method,
            } })
            .to_string(),
        );
    }
    if OPTIONAL_PARAMS.contains(&method) && matches!(map.get("params"), None | Some(Value::Null)) {
        map.insert("params".into(), json!({}));
    }
    match serde_json::from_value::<Request>(Value::Object(map)) {
        Ok(request) => Incoming::Request(request),
        Err(e) if id.is_some() => {
            Incoming::Reject(error_response(reply_id, INVALID_REQUEST, format!("Invalid request: {e}")))
        }
        Err(e) => {
            tracing::warn!("ignoring an invalid notification: {e}");
            Incoming::Ignore
        }
    }
}

/// SIGINT is ignored: a terminal's Ctrl+C reaches the whole foreground
/// process group, and the client, not the server, decides what it means
/// (cancel the turn, or quit and close our stdin). SIGTERM and SIGHUP (the
/// terminal or session went away) stop the server like the end of input
/// does: the running turn is cancelled and its end recorded. Returns the
/// token they cancel.
fn watch_signals() -> CancellationToken {
    use tokio::signal::unix::{signal, SignalKind};
    let terminate = CancellationToken::new();
    match signal(SignalKind::interrupt()) {
        Ok(mut interrupts) => {
            tokio::spawn(async move {
                while interrupts.recv().await.is_some() {
                    tracing::info!("SIGINT ignored: the client cancels turns; close stdin to stop the server");
                }
            });
        }
        Err(e) => tracing::warn!("cannot handle SIGINT: {e}"),
    }
    for (kind, name) in [(SignalKind::terminate(), "SIGTERM"), (SignalKind::hangup(), "SIGHUP")] {
        match signal(kind) {
            Ok(mut signals) => {
                let token = terminate.clone();
                tokio::spawn(async move {
                    if signals.recv().await.is_some() {
                        tracing::info!("{name}: stopping");
                        token.cancel();
                    }
                });
            }
            Err(e) => tracing::warn!("cannot handle {name}: {e}"),
        }
    }
    terminate
}

/// Serves until the input ends, `exit` arrives or SIGTERM/SIGHUP; then stops the agent.
pub async fn serve<R, W>(input: R, output: W, mut service: LspService<Backend>, socket: ClientSocket, handle: Handle)
where
    R: AsyncRead + Unpin,
    W: std::io::Write + Send + 'static,
{
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();
    // The writer is a thread of its own doing plain blocking writes: tokio's
    // stdout would hand every write to its blocking pool and wake this task
    // again when it is done, two thread switches per message that a text
    // stream pays in latency and throughput. A client that stops reading
    // blocks only this thread.
    let (written_tx, written) = tokio::sync::oneshot::channel::<()>();
    let writer = std::thread::Builder::new().name("stdout-writer".into()).spawn(move || {
        let mut output = output;
        let mut broken = false;
        let mut batch = Vec::new();
        while let Some(message) = out_rx.blocking_recv() {
            if broken {
                continue;
            }
            // Whatever else is already queued goes out in the same write
            // (a fast stream); a lone message is written at once.
            batch.clear();
            tracing::trace!(message = %message, "->");
            batch.extend_from_slice(&frame(&message));
            while batch.len() < WRITE_BATCH {
                let Ok(message) = out_rx.try_recv() else {
                    break;
                };
                tracing::trace!(message = %message, "->");
                batch.extend_from_slice(&frame(&message));
            }
            if let Err(e) = output.write_all(&batch).and_then(|()| output.flush()) {
                tracing::warn!("cannot write to the client any more: {e}");
                broken = true;
            }
        }
        let _ = written_tx.send(());
    });
    if let Err(e) = writer {
        tracing::error!("cannot start the writer thread: {e}");
        return;
    }

    // Notifications (and any other server-to-client message) in send order.
    let (mut requests, _responses) = socket.split();
    let pump_tx = out_tx.clone();
    let pump = tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            match serde_json::to_string(&request) {
                Ok(text) => {
                    if pump_tx.send(text).is_err() {
                        break;
                    }
                }
                Err(e) => tracing::error!("cannot serialize a notification: {e}"),
            }
        }
    });

    let terminate = watch_signals();
    let mut reader = FrameReader::new(input);
    loop {
        let next = tokio::select! {
            next = reader.next() => next,
            _ = terminate.cancelled() => break,
        };
        let frame = match next {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                tracing::info!("input closed");
                break;
            }
            Err(e) => {
                tracing::warn!("cannot read input: {e}");
                break;
            }
        };
        let body = match frame {
            Frame::Body(body) => body,
            Frame::Malformed(why) => {
                tracing::warn!("malformed input: {why}");
                let _ = out_tx.send(error_response(Value::Null, PARSE_ERROR, format!("Parse error: {why}")));
                continue;
            }
        };
        tracing::trace!(message = %String::from_utf8_lossy(&body), "<-");
        let request = match classify(&body) {
            Incoming::Request(request) => request,
            Incoming::Reject(response) => {
                let _ = out_tx.send(response);
                continue;
            }
            Incoming::Ignore => continue,
        };
        if poll_fn(|cx| service.poll_ready(cx)).await.is_err() {
            break;
        }
        let is_exit = request.method() == "exit";
        if is_exit {
            // Stop the running turn while notifications can still be sent:
            // once the service has seen `exit` it sends nothing more, and the
            // client should still learn how its turn ended.
            handle.shutdown().await;
        }
        // `initialize` is answered before the next message is read: two at
        // once would both run, and the loser's error would reset the
        // service's lifecycle state under the winner.
        let is_initialize = request.method() == "initialize";
        let call = service.call(request);
        let tx = out_tx.clone();
        let answer = async move {
            if let Ok(Some(response)) = call.await {
                match serde_json::to_string(&response) {
                    Ok(text) => {
                        let _ = tx.send(text);
                    }
                    Err(e) => tracing::error!("cannot serialize a response: {e}"),
                }
            }
        };
        if is_initialize {
            answer.await;
        } else {
            tokio::spawn(answer);
        }
        if is_exit {
            tracing::info!("exit notification received");
            break;
        }
    }

    handle.shutdown().await;
    // Let the last notifications reach the writer, then let it drain.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    pump.abort();
    drop(service);
    drop(out_tx);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), written).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = FrameReader::new(input);
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await.expect("reading a slice cannot fail") {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn reads_frames_and_resynchronises_after_garbage() {
        let got = frames(b"Content-Length: 2\r\n\r\n{}garbage\r\n\r\nxxContent-Length: 4\r\n\r\nnull").await;
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], Frame::Body(b"{}".to_vec()));
        assert!(matches!(got[1], Frame::Malformed(_)));
        assert!(matches!(got[2], Frame::Malformed(_)));
        assert_eq!(got[3], Frame::Body(b"null".to_vec()));
    }

    #[tokio::test]
    async fn a_bad_frame_whose_body_mentions_content_length_does_not_swallow_the_next() {
        let body = br#"{"text":"what is a Content-Length: header?"}"#;
        let mut input = b"Content-Length: abc\r\n\r\n".to_vec();
        input.extend_from_slice(body);
        input.extend_from_slice(b"Content-Length: 4\r\n\r\nnullContent-Length: 2\r\n\r\n{}");
        let got = frames(&input).await;
        let bodies: Vec<&Frame> = got.iter().filter(|f| matches!(f, Frame::Body(_))).collect();
        assert_eq!(bodies, [&Frame::Body(b"null".to_vec()), &Frame::Body(b"{}".to_vec())], "{got:?}");

        let mut input = b"Content-Length: 999999999999\r\n\r\n".to_vec();
        input.extend_from_slice(body);
        input.extend_from_slice(b"Content-Length: 4\r\n\r\nnull");
        let got = frames(&input).await;
        assert_eq!(got.last(), Some(&Frame::Body(b"null".to_vec())), "{got:?}");
    }

    #[tokio::test]
    async fn other_headers_may_come_first() {
        let got =
            frames(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}").await;
        assert_eq!(got, vec![Frame::Body(b"{}".to_vec())]);
        let got = frames(b"Content-Type: text/plain; charset=latin1\r\nContent-Length: 2\r\n\r\n{}").await;
        assert!(matches!(got[0], Frame::Malformed(_)), "{got:?}");
    }

    #[tokio::test]
    async fn an_oversized_length_is_answered_at_once_and_the_next_frame_is_read() {
        let got = frames(b"Content-Length: 10000000000\r\n\r\n{\"partial\":Content-Length: 2\r\n\r\n{}").await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(matches!(&got[0], Frame::Malformed(m) if m.contains("exceeds")), "{got:?}");
        assert_eq!(got[1], Frame::Body(b"{}".to_vec()));
        // A lying length followed by nothing: the input just ends.
        let got = frames(b"Content-Length: 99999999999\r\n\r\nabc").await;
        assert_eq!(got.len(), 1, "{got:?}");
    }

    #[tokio::test]
    async fn a_truncated_frame_is_reported() {
        let got = frames(b"Content-Length: 10\r\n\r\n{}").await;
        assert!(matches!(&got[..], [Frame::Malformed(_)]), "{got:?}");
    }

    #[test]
    fn bad_json_and_non_objects_are_rejected() {
        assert!(matches!(classify(b"{nope"), Incoming::Reject(r) if r.contains("-32700")));
        assert!(matches!(classify(b"[1]"), Incoming::Reject(r) if r.contains("-32600")));
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1}"#), Incoming::Reject(r) if r.contains("-32600")));
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1,"result":null}"#), Incoming::Ignore));
    }

    #[test]
    fn dollar_requests_are_answered_method_not_found() {
        let got = classify(br#"{"jsonrpc":"2.0","id":3,"method":"$/nothing"}"#);
        assert!(matches!(got, Incoming::Reject(r) if r.contains("-32601") && r.contains(r#""id":3"#)));
        let got = classify(br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#);
        assert!(matches!(got, Incoming::Request(_)));
    }

    #[test]
    fn optional_params_are_filled_in() {
        let Incoming::Request(r) = classify(br#"{"jsonrpc":"2.0","id":1,"method":"mino/history"}"#) else {
            panic!("not a request")
        };
        assert_eq!(r.params(), Some(&json!({})));
    }
}
