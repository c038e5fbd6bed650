//! The agent's part of compaction: when a turn compacts first, the summary
//! request and its synced record, `mino/compact` and its cancel. What a
//! summary covers and its input are `crate::compaction`'s.

use super::*;

/// The reason of a compaction cancelled before its record's sync began
/// ([`Agent::cancel_compaction`], a cancelled turn, the client gone).
pub const COMPACTION_CANCELLED: &str = "cancelled; the conversation was left as it was";

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompactionOutcome {
    /// A `compaction` record was synced: later requests start with the summary.
    pub compacted: bool,
    /// Turns newly summarised.
    pub summarized_turns: usize,
    /// Turns covered by the summary that are replayed verbatim after it.
    pub kept_turns: usize,
    /// The last turn the summary covers (when compacted).
    pub through_turn_id: Option<String>,
    /// Why nothing changed (when not compacted).
    pub reason: Option<String>,
    /// The summary request's tokens, when the service reported them.
    pub usage: Option<Usage>,
}

impl CompactionOutcome {
    pub(super) fn unchanged(reason: impl Into<String>) -> Self {
        CompactionOutcome { reason: Some(reason.into()), ..Default::default() }
    }
}

impl Agent {
    /// Sets every model's context window and automatic compaction threshold
    /// (`mino_core::open` passes the configuration's; one
    /// [`crate::config::CompactionSettings`] applies to every model).
    pub fn set_compaction(&self, table: impl Into<CompactionTable>) {
        *lock(&self.state.compaction) = table.into();
    }

    /// Asks the model service in the background for the context window it
    /// reports for the current session's model (its `GET /models`), unless
    /// the environment or the configuration file sets that model's window:
    /// called when a session opens, is switched to, or chooses a model, so a
    /// turn rarely waits for it. Without a runtime to run it on, the first
    /// turn that needs the figure asks.
    pub fn fetch_context_window(&self) {
        let client = self.model_client();
        let table = lock(&self.state.compaction).clone();
        if table.configured_window(&client.config().model).is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let reported = client.reported_context_window().await;
            let model = &client.config().model;
            let (settings, source) = table.resolve(model, reported);
            tracing::info!(
                model,
                window = settings.context_window,
                from = source.as_str(),
                "the context window automatic compaction uses"
            );
        });
    }

    /// The compaction settings of the model a turn uses: the window the
    /// environment or the file sets, else the one the service reports for
    /// it, else the default. The service's answer is waited for (at most
    /// [`crate::model::MODEL_LIST_TIMEOUT`], usually not at all: it was
    /// asked when the session opened, and is asked once per model) only
    /// when the check depends on it: no configured window and a last
    /// request's size to compare; a cancel stops the wait. (Whether there is
    /// anything to compact is left to the caller, after `due`: it walks the
    /// whole history, which no turn should pay for otherwise.)
    pub(super) async fn compaction_settings(
        &self,
        model: &ModelClient,
        cancel: &CancellationToken,
    ) -> CompactionSettings {
        let table = lock(&self.state.compaction).clone();
        let name = &model.config().model;
        let needed = table.configured_window(name).is_none()
            && self.with_session(|s| s.transcript().last_input_tokens.is_some());
        let reported = if needed {
            tokio::select! {
                window = model.reported_context_window() => window,
                () = cancel.cancelled() => None,
            }
        } else {
            // For a request's estimated size: what is known without waiting.
            model.known_context_window()
        };
        let (settings, source) = table.resolve(name, reported);
        tracing::debug!(model = name, window = settings.context_window, from = source.as_str(), "compaction window");
        settings
    }

    /// Whether the turn compacts before its first request: the last
    /// request's input tokens passed the threshold, as the service reported
    /// them; or, when it reported none (a local server that gives no usage,
    /// or the first request since a compaction), the request about to be
    /// sent does, counted by the service's tokenize endpoint or estimated
    /// from its bytes ([`ModelClient::request_tokens`]). And there is a turn
    /// to summarise.
    pub(super) async fn auto_compaction_due(&self, model: &ModelClient, settings: &CompactionSettings) -> bool {
        let reported = self.with_session(|s| s.transcript().last_input_tokens);
        let tokens = match reported {
            Some(tokens) => tokens,
            None => {
                let body = self.with_session(|s| s.request_body(model, &self.state.instructions));
                let Ok(body) = body else { return false };
                let counted = model.request_tokens(&body).await;
                tracing::debug!(tokens = counted.tokens, by = counted.counted_by, "the next request's size");
                counted.tokens
            }
        };
        crate::compaction::passes_threshold(tokens, settings)
            && self.with_session(|s| crate::compaction::plan(s.transcript()).is_some())
    }

    /// Compacts the conversation now (`mino/compact`): the model summarises
    /// every ended turn, and the summary's record is synced before this
    /// returns. Refused while a turn or another compaction runs, and while
    /// an unknown result awaits acknowledgement (the person must have seen
    /// it before anything acts on the conversation). Emits
    /// [`AgentEvent::CompactionStarted`] and [`AgentEvent::CompactionEnded`].
    ///
    /// A boxed future from a function kept out of line, so the compaction
    /// (the model request and the journal's writes) is compiled once, here,
    /// and not again in each front door that awaits it: an `async fn`'s body
    /// is inlinable across crates, and each crate that polled it compiled its
    /// own copy (docs/performance.md, "Build time").
    #[inline(never)]
    pub fn compact(&self) -> futures::future::BoxFuture<'_, Result<CompactionOutcome, AgentError>> {
        Box::pin(self.compact_now())
    }

    async fn compact_now(&self) -> Result<CompactionOutcome, AgentError> {
        let cancel = {
            let mut slot = lock(&self.state.slot);
            if let Some(refused) = slot.refusal() {
                return Err(refused);
            }
            if !lock(&self.state.session).pending_acknowledgement().is_empty() {
                return Err(SessionError::AcknowledgementRequired.into());
            }
            let cancel = CancellationToken::new();
            slot.running =
                Some(RunningTurn { turn_id: String::new(), cancel: cancel.clone(), approval: None, compaction: true });
            self.state.busy.send_replace(true);
            cancel
        };
        // Freed however this ends (a failed save, a panic), as a turn is.
        struct ClearCompaction<'a>(&'a SessionState);
        impl Drop for ClearCompaction<'_> {
            fn drop(&mut self) {
                let mut slot = lock(&self.0.slot);
                if slot.running.as_ref().is_some_and(|t| t.compaction) {
                    slot.running.take();
                    self.0.busy.send_replace(false);
                }
            }
        }
        let _clear = ClearCompaction(&self.state);
        let outcome = self.run_compaction(Trigger::Manual, None, &cancel).await?;
        // Announced and freed in one step, as a turn's end is: a chat sent
        // on hearing the end is never refused as busy.
        let mut slot = lock(&self.state.slot);
        self.emit(AgentEvent::CompactionEnded { trigger: Trigger::Manual, turn_id: None, outcome: outcome.clone() });
        slot.running.take();
        self.state.busy.send_replace(false);
        Ok(outcome)
    }

    /// Summarises the ended turns (all of them, through the last one) and
    /// syncs the `compaction` record. Emits [`AgentEvent::CompactionStarted`];
    /// the caller emits the end. A model failure, a cancel or an empty
    /// summary leave the session as it was and say why; only a failed save
    /// is an error.
    pub(super) async fn run_compaction(
        &self,
        trigger: Trigger,
        turn_id: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactionOutcome, SessionError> {
        self.emit(AgentEvent::CompactionStarted { trigger, turn_id: turn_id.map(str::to_string) });
        let prepared = self.with_session(|s| {
            let transcript = s.transcript();
            crate::compaction::plan(transcript).map(|plan| {
                let input = crate::compaction::summary_input(transcript, &plan);
                (plan, input)
            })
        });
        let Some((plan, mut input)) = prepared else {
            return Ok(CompactionOutcome::unchanged(crate::compaction::NOTHING_TO_COMPACT));
        };
        tracing::info!(trigger = trigger.as_str(), through = plan.through_turn_id, "compacting the conversation");
        // The summary is bounded like a turn's text: a model that never
        // stops must not fill the journal.
        let stop_stream = cancel.child_token();
        let model = self.model_client();
        // A summary of at most an eighth of a window the configuration or
        // the service gave (not the default's guess).
        let output_limit = {
            let table = lock(&self.state.compaction).clone();
            let (settings, source) = table.resolve(&model.config().model, model.known_context_window());
            (source != crate::config::WindowSource::Default).then_some(settings.context_window / 8)
        };
        let mut shortened = false;
        let response = loop {
            let mut streamed = 0usize;
            let request = ModelRequest { instructions: &self.state.instructions, input: &input };
            let mut on_event = |event: ModelEvent<'_>| match event {
                ModelEvent::TextDelta(delta) => {
                    streamed += delta.len();
                    if streamed > TURN_TEXT_LIMIT {
                        stop_stream.cancel();
                    }
                }
                ModelEvent::Retrying { attempt, delay, reason } => {
                    streamed = 0;
                    tracing::warn!(attempt, ?delay, reason, "retrying the summary request");
                }
            };
            let response = model.respond_summary(&request, output_limit, &mut on_event, &stop_stream).await;
            match response {
                // The summary request itself is too long for the window (a
                // small local window, a turn that filled it): once, its
                // texts are shortened to about half the window and it is
                // sent again. Only the summary request is: the records
                // keep every word.
                Err(e) if !shortened && crate::compaction::is_context_length_exceeded(&e) => {
                    shortened = true;
                    let body = serde_json::to_vec(&model.request_body_without_tools(&request)).unwrap_or_default();
                    let tokens = model.request_tokens(&body).await.tokens.max(1);
                    let window = model.known_context_window().unwrap_or(tokens);
                    let keep = window as f64 * crate::compaction::SHORTENED_SHARE / tokens as f64;
                    tracing::info!(tokens, window, keep, "the summary request is too long; shortening its texts");
                    crate::compaction::shorten_texts(&mut input, keep);
                }
                other => break other,
            }
        };
        let response = match response {
            Ok(response) => response,
            Err(ModelError::Cancelled) if !cancel.is_cancelled() => {
                return Ok(CompactionOutcome::unchanged(format!(
                    "the summary passed 4 MiB ({TURN_TEXT_LIMIT} bytes); the conversation was left as it was"
                )))
            }
            Err(ModelError::Cancelled) => return Ok(CompactionOutcome::unchanged(COMPACTION_CANCELLED)),
            Err(e) => {
                return Ok(CompactionOutcome::unchanged(format!(
                    "the summary request failed: {e}; the conversation was left as it was"
                )))
            }
        };
        // A summary the window cut short is still a summary of what came
        // before (and the smaller request it makes room for is the point);
        // any other cut is not kept.
        if let Some(why) = response.incomplete.as_ref().filter(|why| *why != CONTEXT_WINDOW_FULL) {
            return Ok(CompactionOutcome::unchanged(format!(
                "the summary was cut short ({why}); the conversation was left as it was"
            )));
        }
        let Some(summary) = crate::compaction::summary_text(&response.items) else {
            return Ok(CompactionOutcome::unchanged(
                "the model answered without a summary; the conversation was left as it was",
            ));
        };
        // A cancel that came with (or after) the summary's last bytes still
        // wins until the record's sync begins; from then on the outcome is
        // what the disk holds, so the record is written and reported.
        if cancel.is_cancelled() {
            return Ok(CompactionOutcome::unchanged(COMPACTION_CANCELLED));
        }
        fail::fail_point!("compaction::before_record");
        let usage = response.usage;
        let through = plan.through_turn_id.clone();
        self.with_session_io(move |s| s.record_compaction(&through, summary, usage)).await?;
        tracing::info!(summarized = plan.summarized_turns, kept = plan.kept_turns, "conversation compacted");
        Ok(CompactionOutcome {
            compacted: true,
            summarized_turns: plan.summarized_turns,
            kept_turns: plan.kept_turns,
            through_turn_id: Some(plan.through_turn_id),
            reason: None,
            usage,
        })
    }

    /// Cancels the running [`Agent::compact`], if one runs: its summary
    /// request is abandoned and it answers `compacted: false` (reason
    /// [`COMPACTION_CANCELLED`]) with no `compaction` record written,
    /// unless the record's sync had already begun, in which case it answers
    /// with the compaction the disk holds. `false` when no compaction runs.
    /// (A compaction inside a turn is cancelled with the turn, [`Agent::cancel`].)
    pub fn cancel_compaction(&self) -> bool {
        match lock(&self.state.slot).running.as_ref() {
            Some(running) if running.compaction => {
                running.cancel.cancel();
                true
            }
            _ => false,
        }
    }

    /// [`Agent::run_compaction`] inside a turn, with its end announced.
    pub(super) async fn compact_in_turn(
        &self,
        trigger: Trigger,
        turn_id: &str,
        cancel: &CancellationToken,
    ) -> Result<CompactionOutcome, SessionError> {
        let outcome = self.run_compaction(trigger, Some(turn_id), cancel).await?;
        self.emit(AgentEvent::CompactionEnded {
            trigger,
            turn_id: Some(turn_id.to_string()),
            outcome: outcome.clone(),
        });
        Ok(outcome)
    }
}
