//! The server's notifications, in the order they arrived, on one bounded queue.
//!
//! The transport's receiver ([`crate::transport::Receiver`]) reads every
//! frame; a notification (a `method` and no `id`) is parsed here and queued
//! for the app, everything else (responses) goes on to jsonrpsee. There is
//! one queue and one reader, so the app sees notifications exactly in the
//! order the server wrote them, whatever their methods.

use std::borrow::Cow;
use std::sync::Arc;

use mino_protocol::{
    method, CompactionEnded, CompactionStarted, InstructionsChanged, McpStatusNotification, RecoveryNotification,
    TurnNotification,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// How many bytes of notifications (as they came over the wire) may wait for
/// the app. Once full, the receiver stops reading, the pipe fills and the
/// server waits for us (its own backpressure), so nothing is dropped.
///
/// The app reads this queue all through a turn, and its approvals and
/// cancels run beside that loop, so the queue fills only while the terminal
/// is slower than the server. The one call awaited without reading it is
/// `mino/chat`, at the start of a turn with the queue drained; the server
/// queues at most its outbox limit (64 MiB) of notifications before any
/// response, so a queue larger than that always lets the answer through.
pub const QUEUE_BYTES: usize = 96 * 1024 * 1024;

/// One server notification.
// Nearly every event is a turn's: boxing that variant would cost an
// allocation per notification to shrink the rare others.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Event {
    /// `mino/recovery`, sent once after `initialized`.
    Recovery(RecoveryNotification),
    /// Everything a turn sends.
    Turn(TurnNotification),
    /// `mino/compactionStarted` (shown when it runs in a turn).
    CompactionStarted(CompactionStarted),
    /// `mino/compactionEnded` (shown when it ran in a turn).
    CompactionEnded(CompactionEnded),
    /// `mino/instructionsChanged` (shown when it comes in a turn).
    InstructionsChanged(InstructionsChanged),
    /// `mino/mcp/status`: an MCP server's state changed.
    McpStatus(McpStatusNotification),
}

/// What a frame is, read without parsing the rest of it.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<IgnoredAny>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// What a frame's body holds, as far as the notification queue cares.
// Returned once per frame and matched at once, never stored: boxing the
// event would cost an allocation per notification and save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Incoming {
    Notification(Event),
    /// A notification this client does not show (another method, or params it cannot read).
    Skip,
    /// A response (or anything else): jsonrpsee's business.
    Other,
}

/// Classifies one frame's body.
pub fn classify(body: &str) -> Incoming {
    let Ok(envelope) = serde_json::from_str::<Envelope>(body) else {
        return Incoming::Other;
    };
    let Some(name) = envelope.method.filter(|_| envelope.id.is_none()) else {
        return Incoming::Other;
    };
    let parsed = if name == method::RECOVERY {
        let params = envelope.params.map_or("null", RawValue::get);
        serde_json::from_str::<RecoveryNotification>(params).map(Event::Recovery)
    } else if name == method::COMPACTION_STARTED {
        let params = envelope.params.map_or("null", RawValue::get);
        serde_json::from_str::<CompactionStarted>(params).map(Event::CompactionStarted)
    } else if name == method::COMPACTION_ENDED {
        let params = envelope.params.map_or("null", RawValue::get);
        serde_json::from_str::<CompactionEnded>(params).map(Event::CompactionEnded)
    } else if name == method::INSTRUCTIONS_CHANGED {
        let params = envelope.params.map_or("null", RawValue::get);
        serde_json::from_str::<InstructionsChanged>(params).map(Event::InstructionsChanged)
    } else if name == method::MCP_STATUS {
        let params = envelope.params.map_or("null", RawValue::get);
        serde_json::from_str::<McpStatusNotification>(params).map(Event::McpStatus)
    } else if method::TURN_NOTIFICATIONS.contains(&name.as_ref()) {
        serde_json::from_str::<TurnNotification>(body).map(Event::Turn)
    } else {
        tracing::debug!("ignoring the notification {name}");
        return Incoming::Skip;
    };
    match parsed {
        Ok(event) => Incoming::Notification(event),
        Err(e) => {
            tracing::warn!("ignoring a malformed {name} notification: {e}");
            Incoming::Skip
        }
    }
}

/// The receiver's end of the queue.
pub struct Queue {
    events: mpsc::UnboundedSender<(Event, OwnedSemaphorePermit)>,
    /// Bytes still free; each queued event holds its size until the app takes it.
    room: Arc<Semaphore>,
    limit: usize,
}

/// The app's end: notifications in arrival order.
pub struct Events {
    events: mpsc::UnboundedReceiver<(Event, OwnedSemaphorePermit)>,
    /// Taken off the queue by [`Events::take_mcp_statuses`] and not MCP
    /// statuses: served first, in order.
    held: std::collections::VecDeque<(Event, OwnedSemaphorePermit)>,
}

/// A queue holding at most `limit` bytes of notifications.
pub fn queue(limit: usize) -> (Queue, Events) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Queue { events: tx, room: Arc::new(Semaphore::new(limit)), limit },
        Events { events: rx, held: Default::default() },
    )
}

impl Queue {
    /// Queues `event` (`size` bytes on the wire), waiting for room. False
    /// once the app has stopped listening.
    pub async fn push(&self, event: Event, size: usize) -> bool {
        // A single notification larger than the whole queue still goes
        // through, alone (frames are capped well below u32::MAX).
        let size = u32::try_from(size.clamp(1, self.limit)).unwrap_or(u32::MAX);
        let Ok(permit) = self.room.clone().acquire_many_owned(size).await else {
            return false;
        };
        self.events.send((event, permit)).is_ok()
    }
}

impl Events {
    /// The next notification; `None` once the connection is closed and everything was taken.
    pub async fn next(&mut self) -> Option<Event> {
        if let Some((event, _room)) = self.held.pop_front() {
            return Some(event);
        }
        // The permit goes with the event: its bytes are free again.
        self.events.recv().await.map(|(event, _room)| event)
    }

    /// The MCP statuses that arrived so far (between turns, to show before
    /// the prompt); every other notification stays queued, in order.
    pub fn take_mcp_statuses(&mut self) -> Vec<McpStatusNotification> {
        let mut statuses = Vec::new();
        let mut kept = std::collections::VecDeque::new();
        for (event, room) in self.held.drain(..) {
            match event {
                Event::McpStatus(status) => statuses.push(status),
                other => kept.push_back((other, room)),
            }
        }
        while let Ok((event, room)) = self.events.try_recv() {
            match event {
                Event::McpStatus(status) => statuses.push(status),
                other => kept.push_back((other, room)),
            }
        }
        self.held = kept;
        statuses
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    fn delta(seq: u64) -> Event {
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"mino/textDelta","params":{{"turnId":"t","seq":{seq},"sessionId":"s","delta":"x"}}}}"#
        );
        match classify(&body) {
            Incoming::Notification(event) => event,
            other => panic!("not a notification: {other:?}"),
        }
    }

    #[test]
    fn notifications_are_told_from_responses() {
        assert!(matches!(delta(1), Event::Turn(TurnNotification::TextDelta(d)) if d.seq == 1));
        let recovery = r#"{"jsonrpc":"2.0","method":"mino/recovery","params":{"sessionId":"s","turns":[],"acknowledgementRequired":false,"unacknowledgedTurnIds":[],"repairs":[]}}"#;
        assert!(matches!(classify(recovery), Incoming::Notification(Event::Recovery(r)) if r.session_id == "s"));
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), Incoming::Other));
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","id":2,"method":"x","params":{}}"#), Incoming::Other));
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","method":"window/logMessage","params":{}}"#), Incoming::Skip));
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","method":"mino/textDelta","params":{}}"#), Incoming::Skip));
    }

    #[tokio::test]
    async fn the_queue_is_bounded_in_bytes_and_frees_what_the_app_took() {
        let (queue, mut events) = super::queue(100);
        assert!(queue.push(delta(1), 60).await);
        // No room for another 60 bytes until the app takes the first.
        let mut second = Box::pin(queue.push(delta(2), 60));
        assert!((&mut second).now_or_never().is_none());
        assert!(matches!(events.next().await, Some(Event::Turn(n)) if n.seq() == 1));
        assert!(second.await);
        // Larger than the whole queue: it goes through once the queue is empty.
        let mut big = Box::pin(queue.push(delta(3), 1_000));
        assert!((&mut big).now_or_never().is_none());
        assert!(matches!(events.next().await, Some(Event::Turn(n)) if n.seq() == 2));
        assert!(big.await);
        drop(queue);
        assert!(matches!(events.next().await, Some(Event::Turn(n)) if n.seq() == 3));
        assert!(events.next().await.is_none());
    }
}
