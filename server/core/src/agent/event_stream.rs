//! The agent's event stream: every [`AgentEvent`] in `seq` order, from the
//! turn loop to the front door that sends them on.
//!
//! A front door takes the next event only when its client has room for it,
//! so a client that stops reading leaves the events here. A turn does not
//! wait for the client (its end must reach the disk), so this queue would
//! grow with every event, and an event's envelope (the ids, the struct, the
//! queue slot: a few hundred bytes) costs far more than a one-byte text
//! delta. Hence, once [`COALESCE_AFTER`] bytes wait, a text delta is
//! appended to the text delta queued last (same turn), and command output
//! to the output queued last (same call and stream): the client gets the
//! same text in fewer events, in the same order relative to every other
//! event, with `seq` still counting up by one. Live output that cannot be
//! merged (stdout and stderr alternating) stops being queued past
//! [`QUEUE_LIMIT`], with one line saying so; the call's result keeps its
//! output. Every other event is bounded by the turn itself (a turn's text
//! is capped, a call waits for an approval the client has not seen).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::{lock, Agent, AgentEvent, Numbered};

/// Bytes waiting (envelopes included) past which deltas are merged into the
/// one queued last: a client reading along never sees a merge.
pub const COALESCE_AFTER: usize = 64 * 1024;
/// Bytes waiting past which live output that cannot be merged is no longer
/// queued (the call's result still holds it).
pub const QUEUE_LIMIT: usize = 16 * 1024 * 1024;
/// What an event costs besides its text: the struct, the queue slot, and
/// the allocations of its ids.
const ENVELOPE: usize = std::mem::size_of::<Numbered>() + 3 * 32;

/// Replaces live output once [`QUEUE_LIMIT`] is reached.
pub const OUTPUT_SKIPPED: &str =
    "\n[live output skipped: the client was not reading; the result keeps the output's head and tail]\n";

#[derive(Default)]
struct State {
    queue: VecDeque<(Numbered, usize)>,
    /// Bytes queued, envelopes included.
    bytes: usize,
    /// The agent is gone: nothing more will come.
    sender_gone: bool,
    /// Nobody reads any more: events are dropped (the journal has them).
    receiver_gone: bool,
    /// Calls whose live output was skipped (their note already queued).
    skipped: HashSet<(String, String)>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    ready: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The agent's end of the stream.
pub(crate) struct EventSender {
    shared: Arc<Shared>,
}

/// The front door's end of the stream: [`Events::recv`] in `seq` order.
pub struct Events {
    shared: Arc<Shared>,
}

pub(crate) fn channel() -> (EventSender, Events) {
    let shared = Arc::new(Shared::default());
    (EventSender { shared: shared.clone() }, Events { shared })
}

/// What [`EventSender::send`] did with an event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Queued as an event of its own: it took its `seq`.
    Queued,
    /// Appended to the event queued last, or dropped: it took no `seq`.
    Merged,
}

fn cost(event: &AgentEvent) -> usize {
    ENVELOPE
        + match event {
            AgentEvent::TextDelta { turn_id, delta } => turn_id.len() + delta.len(),
            AgentEvent::ToolOutput { turn_id, call_id, chunk, .. } => turn_id.len() + call_id.len() + chunk.len(),
            // Other events are few per turn; their size matters little here.
            _ => 0,
        }
}

impl EventSender {
    /// Queues `event` (numbered `seq`), or merges it into the event queued
    /// last when the client is behind (see the module's documentation).
    pub(crate) fn send(&self, seq: u64, session_id: &str, event: AgentEvent) -> Sent {
        let mut state = self.shared.lock();
        if state.receiver_gone {
            return Sent::Queued;
        }
        if let AgentEvent::ToolOutput { turn_id, call_id, .. } = &event {
            // Its note is queued: the rest of this call's live output is not.
            if !state.skipped.is_empty() && state.skipped.contains(&(turn_id.clone(), call_id.clone())) {
                return Sent::Merged;
            }
        }
        let behind = state.bytes >= COALESCE_AFTER;
        if behind {
            if let Some((last, last_cost)) = state.queue.back_mut() {
                if last.session_id == session_id {
                    if let Some(added) = merge(&mut last.event, &event) {
                        *last_cost += added;
                        state.bytes += added;
                        return Sent::Merged;
                    }
                }
            }
        }
        let mut event = event;
        if let AgentEvent::ToolOutput { turn_id, call_id, chunk, .. } = &mut event {
            if state.bytes >= QUEUE_LIMIT {
                state.skipped.insert((turn_id.clone(), call_id.clone()));
                *chunk = OUTPUT_SKIPPED.to_string();
            }
        }
        let size = cost(&event);
        state.bytes += size;
        state.queue.push_back((Numbered { seq, session_id: session_id.to_string(), event }, size));
        drop(state);
        self.shared.ready.notify_one();
        Sent::Queued
    }
}

/// Appends `next` to `last` when both are deltas of the same stream;
/// returns the bytes added.
fn merge(last: &mut AgentEvent, next: &AgentEvent) -> Option<usize> {
    match (last, next) {
        (AgentEvent::TextDelta { turn_id, delta }, AgentEvent::TextDelta { turn_id: next_turn, delta: more })
            if turn_id == next_turn =>
        {
            delta.push_str(more);
            Some(more.len())
        }
        (
            AgentEvent::ToolOutput { turn_id, call_id, stream, chunk },
            AgentEvent::ToolOutput { turn_id: next_turn, call_id: next_call, stream: next_stream, chunk: more },
        ) if turn_id == next_turn && call_id == next_call && stream == next_stream => {
            chunk.push_str(more);
            Some(more.len())
        }
        _ => None,
    }
}

impl Drop for EventSender {
    fn drop(&mut self) {
        self.shared.lock().sender_gone = true;
        self.shared.ready.notify_one();
    }
}

impl Events {
    fn pop(&self, state: &mut State) -> Option<Numbered> {
        let (numbered, size) = state.queue.pop_front()?;
        state.bytes -= size;
        if state.queue.is_empty() {
            state.skipped.clear();
        }
        Some(numbered)
    }

    /// The next event; `None` once the agent is gone and every event was taken.
    pub async fn recv(&mut self) -> Option<Numbered> {
        loop {
            let ready = self.shared.ready.notified();
            {
                let mut state = self.shared.lock();
                if let Some(numbered) = self.pop(&mut state) {
                    return Some(numbered);
                }
                if state.sender_gone {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// The next event already waiting, without waiting for one.
    pub fn try_recv(&mut self) -> Option<Numbered> {
        let mut state = self.shared.lock();
        self.pop(&mut state)
    }

    /// Bytes waiting, envelopes included.
    pub fn queued_bytes(&self) -> usize {
        self.shared.lock().bytes
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.receiver_gone = true;
        state.queue.clear();
        state.bytes = 0;
    }
}

/// Numbers the events and queues them: the one way out of the agent.
pub(super) struct Emitter {
    pub(super) next_seq: u64,
    /// The current session's id, stamped on every event.
    pub(super) session_id: String,
    pub(super) sender: EventSender,
}

impl Agent {
    pub(super) fn emit(&self, event: AgentEvent) {
        let mut emitter = lock(&self.state.emitter);
        let seq = emitter.next_seq;
        // `seq` numbers the turn events (a client sees it count up by one);
        // a switch's `SessionOpened` is not one of them and takes none, nor
        // does a delta merged into the one queued last (the client is behind).
        let counts = !matches!(
            event,
            AgentEvent::SessionOpened { .. }
                | AgentEvent::ResponseUsage { .. }
                | AgentEvent::SettingsChanged { .. }
                | AgentEvent::InstructionsChanged { .. }
                | AgentEvent::ToolTerminal { .. }
                | AgentEvent::McpStatus { .. }
        );
        // Nobody listening any more drops the event: the journal still
        // records everything.
        let sent = emitter.sender.send(seq, &emitter.session_id, event);
        if counts && sent == Sent::Queued {
            emitter.next_seq += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bash::Stream;

    fn text(turn: &str, delta: &str) -> AgentEvent {
        AgentEvent::TextDelta { turn_id: turn.into(), delta: delta.into() }
    }

    fn output(call: &str, stream: Stream, chunk: &str) -> AgentEvent {
        AgentEvent::ToolOutput { turn_id: "t".into(), call_id: call.into(), stream, chunk: chunk.into() }
    }

    /// Sends as the agent does: `seq` counts the events queued.
    fn send_all(sender: &EventSender, events: Vec<AgentEvent>) {
        let mut seq = 1;
        for event in events {
            if sender.send(seq, "s", event) == Sent::Queued {
                seq += 1;
            }
        }
    }

    fn drain(events: &mut Events) -> Vec<Numbered> {
        std::iter::from_fn(|| events.try_recv()).collect()
    }

    #[test]
    fn a_reader_keeping_up_sees_every_delta_as_sent() {
        let (sender, mut events) = channel();
        for i in 0..1000 {
            assert_eq!(sender.send(i + 1, "s", text("t", "x")), Sent::Queued);
            let got = events.try_recv().expect("an event");
            assert_eq!((got.seq, got.event), (i + 1, text("t", "x")));
        }
    }

    #[test]
    fn a_reader_far_behind_gets_the_same_text_in_fewer_events_seq_contiguous_and_in_order() {
        let (sender, mut events) = channel();
        let mut sent = Vec::new();
        for i in 0..200_000 {
            sent.push(text("t", &(i % 10).to_string()));
        }
        sent.push(output("c", Stream::Stdout, "out"));
        sent.extend((0..100_000).map(|_| output("c", Stream::Stdout, "o")));
        sent.push(output("c", Stream::Stderr, "err"));
        sent.push(text("t", "after"));
        sent.push(AgentEvent::Retrying { turn_id: "t".into(), attempt: 1, delay_ms: 0, reason: "r".into() });
        sent.push(text("t", "end"));
        let expected_text: String = (0..200_000).map(|i| (i % 10).to_string()).collect();
        send_all(&sender, sent);
        assert!(events.queued_bytes() < 4 * 300_000 + 2 * COALESCE_AFTER, "{} bytes", events.queued_bytes());
        let got = drain(&mut events);
        assert!(got.len() < 2_000, "{} events", got.len());
        let seqs: Vec<u64> = got.iter().map(|n| n.seq).collect();
        assert_eq!(seqs, (1..=got.len() as u64).collect::<Vec<_>>());
        let mut text_before_output = String::new();
        let mut order = Vec::new();
        for n in &got {
            let kind = match &n.event {
                AgentEvent::TextDelta { delta, .. } => {
                    if order.is_empty() || order.last() == Some(&"text") {
                        text_before_output.push_str(delta);
                    }
                    "text"
                }
                AgentEvent::ToolOutput { stream: Stream::Stdout, .. } => "stdout",
                AgentEvent::ToolOutput { .. } => "stderr",
                AgentEvent::Retrying { .. } => "retrying",
                _ => "other",
            };
            if order.last() != Some(&kind) {
                order.push(kind);
            }
        }
        assert_eq!(text_before_output, expected_text);
        assert_eq!(order, ["text", "stdout", "stderr", "text", "retrying", "text"]);
        let stdout: String = got
            .iter()
            .filter_map(|n| match &n.event {
                AgentEvent::ToolOutput { stream: Stream::Stdout, chunk, .. } => Some(chunk.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(stdout, format!("out{}", "o".repeat(100_000)));
    }

    #[test]
    fn output_that_cannot_merge_stops_at_the_bound_with_one_note() {
        let (sender, mut events) = channel();
        let mut sent = Vec::new();
        for i in 0..200_000 {
            let stream = if i % 2 == 0 { Stream::Stdout } else { Stream::Stderr };
            sent.push(output("c", stream, "x"));
        }
        sent.push(text("t", "done"));
        send_all(&sender, sent);
        assert!(events.queued_bytes() <= QUEUE_LIMIT + 4096, "{} bytes", events.queued_bytes());
        let got = drain(&mut events);
        let notes = got
            .iter()
            .filter(|n| matches!(&n.event, AgentEvent::ToolOutput { chunk, .. } if chunk == OUTPUT_SKIPPED))
            .count();
        assert_eq!(notes, 1);
        assert_eq!(got.last().map(|n| &n.event), Some(&text("t", "done")));
        let seqs: Vec<u64> = got.iter().map(|n| n.seq).collect();
        assert_eq!(seqs, (1..=got.len() as u64).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn the_stream_ends_after_the_last_event_once_the_agent_is_gone() {
        let (sender, mut events) = channel();
        sender.send(1, "s", text("t", "a"));
        drop(sender);
        assert_eq!(events.recv().await.map(|n| n.event), Some(text("t", "a")));
        assert_eq!(events.recv().await, None);
    }
}
