//! The stdio transport: LSP base-protocol framing (`Content-Length`) around
//! the `tower-lsp-server` service.
//!
//! `tower_lsp_server::Server` is not used because its reader stops for good at
//! the first malformed frame or unparseable body (tokio-util's `FramedRead`
//! ends the stream after a decode error), and the protocol promises that the
//! server answers malformed input and keeps serving. Here frames come from
//! `mino-framing`, whose decoder reports a bad frame as an item and has
//! already resynchronised: a bad frame or bad JSON gets a JSON-RPC error
//! response and the next frame is read as usual.
//!
//! The transport knows no method: which message may leave out its params,
//! which acts while requests wait, which cancels another, which is answered
//! alone and which ends the service all come from the front door's
//! [`Routes`] (`crate::dispatch`), looked up by the message's method.
//!
//! Each request is handled in a task of its own, at most [`MAX_IN_FLIGHT`] at
//! once (handlers return quickly; a turn runs in the agent's task). One
//! writer thread owns stdout and drains the outbox, every frame in the order
//! it was queued; server notifications reach it through one pump task, so
//! they stay in the order they were sent. A response and a notification are
//! not ordered relative to each other.
//!
//! Every queue here has a bound (see [`serve`]), counted in bytes with each
//! message's envelope: what waits for the client ([`OUTBOX_LIMIT`], and
//! [`NOTIFICATION_ROOM`] before a notification may join it), requests in
//! flight, and frames read ahead while the client is behind. A client that
//! does not read makes the server wait, never drop a message; a turn's
//! events wait in the agent's stream meanwhile, where deltas merge.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mino_framing::{Frame, FrameCodec};
use serde_json::{json, Value};
use tokio::io::AsyncRead;
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tower::Service;
use tower_lsp_server::jsonrpc::Request;
use tower_lsp_server::{LanguageServer, LspService};

use futures::StreamExt;

use crate::dispatch::{FrontDoor, Outgoing, Routes, Schedule, Session};

/// Frames already queued are written together, up to about this many bytes.
const WRITE_BATCH: usize = 256 * 1024;

use mino_protocol::jsonrpc_code::{INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, REQUEST_CANCELLED};

fn error_response(id: Value, code: i64, message: impl Into<String>) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into() } }).to_string()
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
/// service, an error to answer, or nothing to do. `routes` says whose
/// params may be left out.
pub fn classify(body: &[u8], routes: &Routes) -> Incoming {
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
    // JSON-RPC 2.0 discourages a null id in requests (it is what a response to an unreadable
    // request carries), so a request with one is refused rather than answered with `id: null`.
    let valid_id = matches!(id, None | Some(Value::Number(_) | Value::String(_)));
    // Parsed above, a key named twice kept its last value; a decision
    // (`mino/approval`, `mino/acknowledge`, ...) must not mean one thing to
    // Mino and another to whatever read the first. Nothing with one is acted on.
    if let Some(duplicate) = mino_protocol::strict::duplicate_key(body) {
        tracing::warn!(key = %duplicate.key, path = %duplicate.path, "refused a message with a duplicate key");
        // The id itself named twice is not an id to answer.
        let id_named_twice = duplicate.key == "id" && duplicate.path.is_empty();
        let reply_id = id.clone().filter(|_| valid_id && !id_named_twice).unwrap_or(Value::Null);
        if !map.contains_key("method") && (map.contains_key("result") || map.contains_key("error")) {
            return Incoming::Ignore;
        }
        if id.is_none() && map.contains_key("method") {
            // A notification is not answered; it is not acted on either.
            return Incoming::Ignore;
        }
        return Incoming::Reject(error_response(reply_id, INVALID_REQUEST, format!("Invalid request: {duplicate}")));
    }
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
    if routes.get(method).params_optional && matches!(map.get("params"), None | Some(Value::Null)) {
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

/// What waits for the client (queued frames not yet written, each with
/// [`FRAME_ENVELOPE`]), above which no new request is read: backpressure on
/// a client that does not read. Nothing is dropped or reordered.
pub const OUTBOX_LIMIT: usize = 64 * 1024 * 1024;
/// A notification is queued only while what waits is within this: past it
/// the turn's events wait in the agent's stream instead, where text and
/// output deltas merge (`mino_core::events`), so a client that stops
/// reading costs the server about the text, not an envelope per delta.
pub const NOTIFICATION_ROOM: usize = 1024 * 1024;
/// What a queued frame costs besides its body: its header, the `String`
/// and its queue slot.
const FRAME_ENVELOPE: usize = 64;
/// Requests handled at once; the next waits until one is answered, so a
/// burst of expensive requests (a long session's history) cannot each hold
/// its answer in memory before the outbox is even checked.
pub const MAX_IN_FLIGHT: usize = 4;
/// While reading is paused, frames are still read ahead up to this many
/// bytes (each counted with [`LOOKAHEAD_FRAME_COST`] on top), so that
/// what acts while paused (an exit, a cancel) is acted on at once.
const LOOKAHEAD_BYTES: usize = 1024 * 1024;
/// What a frame read ahead costs besides its body (the parsed request).
const LOOKAHEAD_FRAME_COST: usize = 256;
/// Cancels and exits acted on while reading is paused; past this many
/// nothing at all is read until the client reads (each queues an answer).
const MAX_CONTROLS_WHILE_PAUSED: usize = 1024;
/// After the input ends or `exit`: how long queued output may take to drain.
const DRAIN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

const PAUSE_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Default)]
struct OutboxState {
    queue: VecDeque<String>,
    /// Bytes queued or being written, not yet accepted by the client.
    bytes: usize,
    /// No more messages will come; the writer ends once the queue is empty.
    closed: bool,
    /// The client cannot be written to any more: everything is dropped.
    broken: bool,
}

/// The frames waiting for the client, counted in bytes, in send order.
/// Pushing never blocks or drops (except once the client is gone); the
/// bound is kept by those who push waiting for room ([`Outbox::push_when_room`])
/// or not reading more input (the main loop).
#[derive(Default)]
struct Outbox {
    state: std::sync::Mutex<OutboxState>,
    /// Wakes the writer thread.
    queued: std::sync::Condvar,
    /// Wakes the notification pump: there is room again.
    room: Notify,
    /// Wakes the main loop: output was written, a request finished, or
    /// the pump stopped waiting.
    progress: Notify,
    /// The pump holds a notification it may not queue yet.
    pump_waiting: AtomicBool,
    /// Shutting down: the last notifications go out without waiting.
    unlimited: AtomicBool,
}

impl Outbox {
    fn lock(&self) -> std::sync::MutexGuard<'_, OutboxState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, message: String) {
        let mut state = self.lock();
        if state.broken {
            return;
        }
        state.bytes += message.len() + FRAME_ENVELOPE;
        state.queue.push_back(message);
        drop(state);
        self.queued.notify_one();
    }

    fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn has_room_for_a_notification(&self) -> bool {
        let state = self.lock();
        state.broken || state.bytes <= NOTIFICATION_ROOM || self.unlimited.load(Ordering::SeqCst)
    }

    /// Queues `message` once what waits is within [`NOTIFICATION_ROOM`]:
    /// the sender (a running turn's notifications) waits for the client to
    /// read.
    async fn push_when_room(&self, message: String) {
        loop {
            let room = self.room.notified();
            if self.has_room_for_a_notification() {
                break;
            }
            self.pump_waiting.store(true, Ordering::SeqCst);
            room.await;
        }
        self.push(message);
        if self.pump_waiting.swap(false, Ordering::SeqCst) {
            self.progress.notify_one();
        }
    }

    /// The writer's next batch: every queued frame up to about
    /// [`WRITE_BATCH`] bytes (at least one). `None` once closed and empty.
    fn next_batch(&self, batch: &mut Vec<u8>) -> Option<usize> {
        let mut state = self.lock();
        while state.queue.is_empty() && !state.closed {
            state = self.queued.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        batch.clear();
        let mut taken = 0;
        while let Some(message) = state.queue.pop_front() {
            tracing::trace!(message = %message, "->");
            taken += message.len() + FRAME_ENVELOPE;
            mino_framing::append_frame(batch, message.as_bytes());
            if batch.len() >= WRITE_BATCH {
                break;
            }
        }
        (taken > 0 || !state.closed).then_some(taken)
    }

    /// The client took `bytes` (or is gone): make room and wake whoever waits.
    fn written(&self, bytes: usize, broken: bool) {
        let mut state = self.lock();
        state.bytes = state.bytes.saturating_sub(bytes);
        if broken {
            state.broken = true;
            state.queue.clear();
            state.bytes = 0;
        }
        drop(state);
        self.room.notify_one();
        self.progress.notify_one();
    }

    fn close(&self) {
        self.lock().closed = true;
        self.queued.notify_one();
    }
}

/// A message read while requests were paused, kept in input order.
enum Pending {
    Request(Request, Schedule),
    /// An error answer to bad input.
    Reply(String),
}

/// Serves until the input ends, `exit` arrives or SIGTERM/SIGHUP; then stops the agent.
///
/// Backpressure: while more than [`OUTBOX_LIMIT`] bytes wait for the client,
/// or a notification waits for room, or [`MAX_IN_FLIGHT`] requests are being
/// handled, no new request is handled. Frames are still read ahead (up to
/// 1 MiB): those whose [`Schedule`] acts while paused (exit, cancels) are
/// acted on at once; everything else waits, in order.
pub async fn serve<R, W, S, H>(input: R, output: W, door: FrontDoor<S, H>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: std::io::Write + Send + 'static,
    S: LanguageServer,
    H: Session,
{
    let FrontDoor { mut service, socket, routes, session } = door;
    let outbox = Arc::new(Outbox::default());
    // The writer is a thread of its own doing plain blocking writes: tokio's
    // stdout would hand every write to its blocking pool and wake this task
    // again when it is done, two thread switches per message that a text
    // stream pays in latency and throughput. A client that stops reading
    // blocks only this thread; the outbox's bound stops the rest.
    let (written_tx, written) = tokio::sync::oneshot::channel::<()>();
    let writer_outbox = outbox.clone();
    let writer = std::thread::Builder::new().name("stdout-writer".into()).spawn(move || {
        let outbox = writer_outbox;
        let mut output = output;
        let mut batch = Vec::new();
        // Whatever is already queued goes out in the same write (a fast
        // stream); a lone message is written at once.
        while let Some(taken) = outbox.next_batch(&mut batch) {
            let result = output.write_all(&batch).and_then(|()| output.flush());
            if let Err(e) = &result {
                tracing::warn!("cannot write to the client any more: {e}");
            }
            outbox.written(taken, result.is_err());
        }
        let _ = written_tx.send(());
    });
    if let Err(e) = writer {
        tracing::error!("cannot start the writer thread: {e}");
        return;
    }

    // Notifications (and any other server-to-client message) in send order.
    // The pump waits for room, so a running turn's events wait (in order)
    // for the client to read in the agent's stream, where text and output
    // deltas merge, rather than pile up here one frame per delta. The agent's events
    // come straight from its stream (no task or channel in between); the
    // service's own socket carries nothing else Mino sends.
    let (mut requests, _responses) = socket.split();
    let mut notifications = session.notifications();
    let pump_outbox = outbox.clone();
    let drain = CancellationToken::new();
    let drain_now = drain.clone();
    let pump = tokio::spawn(async move {
        let mut socket_open = true;
        loop {
            let text = tokio::select! {
                biased;
                _ = drain_now.cancelled() => break,
                text = async { notifications.as_mut()?.next().await }, if notifications.is_some() => match text {
                    Some(text) => text,
                    None => {
                        notifications = None;
                        continue;
                    }
                },
                request = requests.next(), if socket_open => match request.map(|r| serde_json::to_string(&r)) {
                    Some(Ok(text)) => text,
                    Some(Err(e)) => {
                        tracing::error!("cannot serialize a notification: {e}");
                        continue;
                    }
                    None => {
                        socket_open = false;
                        continue;
                    }
                },
                else => break,
            };
            pump_outbox.push_when_room(text).await;
        }
        // Stopping: what the agent has sent so far (its last turn's end)
        // goes out too.
        while let Some(text) = notifications.as_mut().and_then(|n| n.try_next()) {
            pump_outbox.push(text);
        }
    });

    // Frames are read in a task of their own and handed over one at a time,
    // so the loop below can wait for the client and for input together
    // (the frame reader cannot be interrupted mid-frame).
    let (frames_tx, mut frames) = mpsc::channel::<std::io::Result<Option<Frame>>>(1);
    let reader = tokio::spawn(async move {
        let mut reader = FramedRead::new(input, FrameCodec::new());
        loop {
            let next = reader.next().await.transpose();
            let last = !matches!(next, Ok(Some(_)));
            if frames_tx.send(next).await.is_err() || last {
                break;
            }
        }
    });

    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let ready = |outbox: &Outbox| {
        outbox.bytes() <= OUTBOX_LIMIT
            && !outbox.pump_waiting.load(Ordering::SeqCst)
            && in_flight.available_permits() > 0
    };
    let terminate = watch_signals();
    let mut lookahead: VecDeque<(Pending, usize)> = VecDeque::new();
    let mut lookahead_bytes = 0usize;
    // Set when the input ends: what was read ahead may still be handled
    // until then, if the client reads.
    let mut input_ended: Option<tokio::time::Instant> = None;
    let mut paused = false;
    let mut last_pause_logged: Option<std::time::Instant> = None;
    let mut controls_while_paused = 0usize;
    loop {
        let progress = outbox.progress.notified();
        let can_dispatch = ready(&outbox);
        if can_dispatch {
            if let Some((pending, size)) = lookahead.pop_front() {
                lookahead_bytes -= size;
                controls_while_paused = 0;
                let permit = in_flight.clone().try_acquire_owned().ok();
                match dispatch(pending, permit, &mut service, &session, &outbox).await {
                    Dispatched::Continue => continue,
                    Dispatched::Stop => break,
                }
            }
            if input_ended.is_some() {
                break;
            }
        }
        let backlog = outbox.bytes();
        let client_behind = backlog > OUTBOX_LIMIT || outbox.pump_waiting.load(Ordering::SeqCst);
        if client_behind && !paused {
            // A slow reader pauses and resumes all the time; say so now and then.
            if last_pause_logged.is_none_or(|at| at.elapsed() > PAUSE_LOG_INTERVAL) {
                last_pause_logged = Some(std::time::Instant::now());
                tracing::info!(
                    backlog,
                    limit = OUTBOX_LIMIT,
                    "reading paused: the client is not reading its output; requests wait until it does"
                );
            }
        } else if paused && !client_behind {
            tracing::debug!(backlog, "reading resumed");
        }
        paused = client_behind;
        let can_read = input_ended.is_none()
            && (can_dispatch
                || (lookahead_bytes < LOOKAHEAD_BYTES && controls_while_paused < MAX_CONTROLS_WHILE_PAUSED));
        let next = tokio::select! {
            next = frames.recv(), if can_read => next,
            _ = progress, if !can_dispatch => continue,
            _ = terminate.cancelled() => {
                tracing::info!("SIGTERM or SIGHUP: stopping");
                break;
            }
            _ = tokio::time::sleep_until(input_ended.unwrap_or_else(tokio::time::Instant::now)), if input_ended.is_some() => {
                tracing::warn!(pending = lookahead.len(), "input closed; requests the client left unread are dropped");
                break;
            }
        };
        let frame = match next {
            Some(Ok(Some(frame))) => frame,
            Some(Ok(None)) | None => {
                tracing::info!("input closed");
                input_ended = Some(tokio::time::Instant::now() + DRAIN_GRACE);
                continue;
            }
            Some(Err(e)) => {
                tracing::warn!("cannot read input: {e}");
                input_ended = Some(tokio::time::Instant::now() + DRAIN_GRACE);
                continue;
            }
        };
        let (pending, size) = match frame {
            Frame::Body(body) => {
                tracing::trace!(message = %String::from_utf8_lossy(&body), "<-");
                let pending = match classify(&body, &routes) {
                    Incoming::Request(request) => {
                        let schedule = routes.get(request.method()).schedule;
                        Pending::Request(request, schedule)
                    }
                    Incoming::Reject(response) => Pending::Reply(response),
                    Incoming::Ignore => continue,
                };
                (pending, body.len() + LOOKAHEAD_FRAME_COST)
            }
            Frame::Malformed(why) => {
                tracing::warn!("malformed input: {why}");
                let reply = error_response(Value::Null, PARSE_ERROR, format!("Parse error: {why}"));
                (Pending::Reply(reply), LOOKAHEAD_FRAME_COST)
            }
        };
        if lookahead.is_empty() && ready(&outbox) {
            controls_while_paused = 0;
            let permit = in_flight.clone().try_acquire_owned().ok();
            match dispatch(pending, permit, &mut service, &session, &outbox).await {
                Dispatched::Continue => continue,
                Dispatched::Stop => break,
            }
        }
        // Paused: cancels and exit act now; everything else waits its turn.
        if matches!(&pending, Pending::Request(_, schedule) if schedule.acts_while_paused()) {
            controls_while_paused += 1;
        }
        match pending {
            Pending::Request(request, Schedule::CancelsRequest) => {
                let target = request.params().and_then(|p| p.get("id")).cloned();
                let queued = target.as_ref().and_then(|target| {
                    lookahead
                        .iter()
                        .position(|(p, _)| matches!(p, Pending::Request(r, _) if id_value(r).as_ref() == Some(target)))
                });
                if let Some(index) = queued {
                    if let Some((_, size)) = lookahead.remove(index) {
                        lookahead_bytes -= size;
                    }
                    let id = target.unwrap_or(Value::Null);
                    outbox.push(error_response(id, REQUEST_CANCELLED, "Request cancelled before it was handled"));
                } else if let Dispatched::Stop =
                    dispatch(Pending::Request(request, Schedule::CancelsRequest), None, &mut service, &session, &outbox)
                        .await
                {
                    break;
                }
            }
            Pending::Request(request, schedule @ (Schedule::Exit | Schedule::Urgent)) => {
                if schedule == Schedule::Exit && !lookahead.is_empty() {
                    tracing::warn!(
                        pending = lookahead.len(),
                        "exit: requests waiting for the client to read are dropped"
                    );
                    lookahead.clear();
                }
                if let Dispatched::Stop =
                    dispatch(Pending::Request(request, schedule), None, &mut service, &session, &outbox).await
                {
                    break;
                }
            }
            pending => {
                lookahead_bytes += size;
                lookahead.push_back((pending, size));
            }
        }
    }

    // Resolves once the running turn's end is recorded and sent to the stream.
    session.shutdown().await;
    // Let the last notifications reach the writer (without waiting for
    // room: the server is stopping), then let it drain.
    outbox.unlimited.store(true, Ordering::SeqCst);
    outbox.room.notify_one();
    drain.cancel();
    let _ = pump.await;
    reader.abort();
    drop(service);
    outbox.close();
    let _ = tokio::time::timeout(DRAIN_GRACE, written).await;
}

/// A request's id as it appears in JSON (a cancel names it so).
fn id_value(request: &Request) -> Option<Value> {
    request.id().and_then(|id| serde_json::to_value(id).ok())
}

enum Dispatched {
    Continue,
    /// `exit` was handled, or the service has stopped.
    Stop,
}

/// Hands one message to the service (or queues its error answer). A
/// request's answer is queued by a task of its own, which holds `permit`
/// (one of [`MAX_IN_FLIGHT`]) until then.
async fn dispatch<S: LanguageServer, H: Session>(
    pending: Pending,
    permit: Option<OwnedSemaphorePermit>,
    service: &mut LspService<S>,
    session: &H,
    outbox: &Arc<Outbox>,
) -> Dispatched {
    let (request, schedule) = match pending {
        Pending::Request(request, schedule) => (request, schedule),
        Pending::Reply(reply) => {
            outbox.push(reply);
            return Dispatched::Continue;
        }
    };
    if poll_fn(|cx| service.poll_ready(cx)).await.is_err() {
        return Dispatched::Stop;
    }
    let is_exit = schedule == Schedule::Exit;
    if is_exit {
        // Stop the running turn while notifications can still be sent:
        // once the service has seen `exit` it sends nothing more, and the
        // client should still learn how its turn ended.
        session.shutdown().await;
    }
    let call = service.call(request);
    let outbox = outbox.clone();
    let answer = async move {
        if let Ok(Some(response)) = call.await {
            match serde_json::to_string(&response) {
                Ok(text) => outbox.push(text),
                Err(e) => tracing::error!("cannot serialize a response: {e}"),
            }
        }
        drop(permit);
        outbox.progress.notify_one();
    };
    if schedule == Schedule::Alone {
        answer.await;
    } else {
        tokio::spawn(answer);
    }
    if is_exit {
        tracing::info!("exit notification received");
        return Dispatched::Stop;
    }
    Dispatched::Continue
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The routes the server runs with.
    fn routes() -> Routes {
        crate::handlers::service().routes
    }

    fn classify(body: &[u8]) -> Incoming {
        super::classify(body, &routes())
    }

    #[test]
    fn a_request_with_a_null_id_is_refused() {
        let got = classify(br#"{"jsonrpc":"2.0","id":null,"method":"mino/history"}"#);
        assert!(
            matches!(&got, Incoming::Reject(r) if r.contains("-32600") && r.contains("id must be a number or a string")),
            "{:?}",
            matches!(got, Incoming::Request(_))
        );
        // A response the client sends with a null id is still ignored, not answered.
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}"#),
            Incoming::Ignore
        ));
    }

    #[test]
    fn bad_json_and_non_objects_are_rejected() {
        assert!(matches!(classify(b"{nope"), Incoming::Reject(r) if r.contains("-32700")));
        assert!(matches!(classify(b"[1]"), Incoming::Reject(r) if r.contains("-32600")));
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1}"#), Incoming::Reject(r) if r.contains("-32600")));
        assert!(matches!(classify(br#"{"jsonrpc":"2.0","id":1,"result":null}"#), Incoming::Ignore));
    }

    #[test]
    fn a_message_naming_a_key_twice_is_refused_naming_it() {
        let got = classify(
            br#"{"jsonrpc":"2.0","id":4,"method":"mino/approval","params":{"turnId":"t","callId":"c","decision":"deny","decision":"approve"}}"#,
        );
        assert!(
            matches!(&got, Incoming::Reject(r) if r.contains("-32600") && r.contains(r#""id":4"#)
                && r.contains(r#"duplicate key \"decision\" in `params`"#)),
            "{}",
            match got {
                Incoming::Reject(r) => r,
                _ => "not refused".into(),
            }
        );
        let got = classify(br#"{"jsonrpc":"2.0","id":4,"id":5,"method":"mino/history"}"#);
        assert!(matches!(&got, Incoming::Reject(r) if r.contains(r#""id":null"#)));
        let got = classify(br#"{"jsonrpc":"2.0","method":"mino/cancel","method":"mino/history"}"#);
        assert!(matches!(got, Incoming::Ignore));
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
