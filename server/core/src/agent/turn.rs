//! The turn loop: a chat claims the session, then the model's requests
//! and their calls follow until the model answers without calls or a
//! limit, an error or a cancel ends the turn; its end is announced and
//! the session freed in one step.

use super::*;

pub const DEFAULT_MAX_REQUESTS: u32 = 8;

pub const DEFAULT_MAX_CALLS: u32 = 16;

/// The most text a turn may stream (all its model responses together): a
/// model that never stops would otherwise fill the client, the journal and
/// the queues towards the client without end. Past it the turn ends `failed`.
pub const TURN_TEXT_LIMIT: usize = 4 * 1024 * 1024;

/// The `mino/turnEnded` reason of a turn stopped by a failed save: the end it
/// reports is not in the session file, which shows the turn `interrupted` once
/// reopened (docs/journal.md, "When a save fails").
pub fn unsaved_end_reason(cause: &dyn std::fmt::Display) -> String {
    format!(
        "The session could not be saved, so the turn stopped and its end is not on file \
         (reopened, the session shows it interrupted): {cause}"
    )
}

/// The reason a turn ends with when its text passes [`TURN_TEXT_LIMIT`].
pub fn turn_text_limit_reason() -> String {
    format!(
        "the model's answer passed 4 MiB ({TURN_TEXT_LIMIT} bytes), the most a turn may stream; \
         the rest was not read and the turn was stopped"
    )
}

#[derive(Debug, Clone, Copy)]
pub struct TurnLimits {
    pub max_requests: u32,
    pub max_calls: u32,
}

impl Default for TurnLimits {
    fn default() -> Self {
        Self { max_requests: DEFAULT_MAX_REQUESTS, max_calls: DEFAULT_MAX_CALLS }
    }
}

/// The result of a call whose id an earlier call of the same response
/// already used. Names the command, since the id cannot tell the model which
/// call this is.
pub(super) fn duplicate_call_output(call_id: &str, arguments: &str) -> String {
    let command = crate::calls::command_of(arguments).unwrap_or_else(|_| arguments.to_string());
    format!(
        "Not run: this response already has a call with call_id {call_id}, and a result cannot say which of them it answers. This call (`{command}`) was not executed; ask for it again in a new response if it is still needed."
    )
}

pub(super) struct TurnEnded {
    pub(super) turn_id: String,
    pub(super) status: TurnStatus,
    pub(super) reason: Option<String>,
    pub(super) text: Option<String>,
}

impl Agent {
    /// Starts a turn: the user's record is synced when this returns its id;
    /// the rest happens in a spawned task and is reported through events.
    ///
    /// The turn is claimed under the turn slot's lock, and the lock is let
    /// go before the user's record is synced: a concurrent `chat` is refused
    /// at once, and `approve`/`cancel` never wait behind the disk.
    pub async fn chat(&self, text: &str) -> Result<String, AgentError> {
        self.chat_with_images(text, Vec::new()).await
    }

    /// [`Agent::chat`] with the question's images, kept and synced before
    /// the user's record (`Session::begin_turn_with_images`).
    pub async fn chat_with_images(
        &self,
        text: &str,
        images: Vec<crate::images::ImageInput>,
    ) -> Result<String, AgentError> {
        let turn_id = {
            let mut slot = lock(&self.state.slot);
            if let Some(refused) = slot.refusal() {
                return Err(refused);
            }
            let turn_id = lock(&self.state.session).next_turn_id();
            let cancel = CancellationToken::new();
            slot.running = Some(RunningTurn { turn_id: turn_id.clone(), cancel, approval: None, compaction: false });
            self.state.busy.send_replace(true);
            turn_id
        };
        let owned = text.to_string();
        let begun = self.with_session_io(move |s| s.begin_turn_with_images(&owned, images)).await;
        let begun = begun.map_err(AgentError::from).and_then(|id| {
            if id == turn_id {
                Ok(id)
            } else {
                Err(SessionError::Usage(format!("the session opened {id} where {turn_id} was expected")).into())
            }
        });
        let cancel = {
            let mut slot = lock(&self.state.slot);
            if let Err(e) = begun {
                // Nothing was started: free the claim for the next chat.
                if slot.running.as_ref().is_some_and(|t| t.turn_id == turn_id) {
                    slot.running.take();
                    self.state.busy.send_replace(false);
                }
                return Err(e);
            }
            // A close while the record was being synced cancelled this token:
            // the turn then ends `cancelled` on file like any other.
            slot.running.as_ref().map(|t| t.cancel.clone()).unwrap_or_default()
        };
        self.emit(AgentEvent::TurnStarted { turn_id: turn_id.clone(), input: text.to_string() });
        self.spawn_turn(turn_id.clone(), cancel);
        Ok(turn_id)
    }

    /// Runs the turn in a task of its own. Kept out of line so the turn loop
    /// (`run_turn` and everything it awaits: model requests, tools,
    /// approvals, the journal) is compiled once, in this crate: `chat`'s body
    /// is an `async fn`'s, inlinable across crates, and with the spawn in it
    /// each front door compiled its own copy of the whole loop
    /// (docs/performance.md, "Build time").
    #[inline(never)]
    fn spawn_turn(&self, turn_id: String, cancel: CancellationToken) {
        let agent = self.clone();
        tokio::spawn(async move { agent.run_turn(turn_id, cancel).await });
    }

    /// Cancels the running turn; it ends `cancelled` through its own events.
    pub fn cancel(&self, turn_id: &str) -> Result<(), AgentError> {
        match lock(&self.state.slot).running.as_ref() {
            Some(turn) if turn.turn_id == turn_id && !turn.compaction => {
                turn.cancel.cancel();
                Ok(())
            }
            _ => Err(AgentError::UnknownTurn(turn_id.to_string())),
        }
    }

    pub(super) fn cancel_reason(&self) -> String {
        if lock(&self.state.slot).closed {
            "cancelled: the client is gone".into()
        } else {
            "cancelled by the user".into()
        }
    }

    pub(super) async fn run_turn(self, turn_id: String, cancel: CancellationToken) {
        // Whatever happens to this task (a panic included), the session must
        // not stay "running" forever; the journal still shows an open turn,
        // which the next open recovers.
        // Only this turn's entry: once it has ended, the client may already
        // have started the next turn, whose entry must stay.
        struct ClearRunning<'a>(&'a SessionState, String);
        impl Drop for ClearRunning<'_> {
            fn drop(&mut self) {
                let mut slot = lock(&self.0.slot);
                if slot.running.as_ref().is_some_and(|t| t.turn_id == self.1) {
                    slot.running.take();
                    self.0.busy.send_replace(false);
                }
            }
        }
        let _clear = ClearRunning(&self.state, turn_id.clone());
        // What was streamed of a response that has not finished: kept in
        // the turn's end when the turn stops mid-response (shown in history,
        // never replayed).
        let mut partial_text = String::new();
        let end = self.turn_steps(&turn_id, &cancel, &mut partial_text).await;
        let (status, reason) = match end {
            Ok((status, reason)) => (status, reason),
            Err(e @ SessionError::Journal(_)) => {
                // A failed save: the turn stops here, and nothing claims an
                // outcome the disk does not hold (no turn_end is written, and
                // the reason says the end is not on file).
                tracing::error!(turn_id, error = %e, "turn stopped by a journal failure");
                let reason = unsaved_end_reason(&e);
                self.finish(TurnEnded { turn_id, status: TurnStatus::Failed, reason: Some(reason), text: None });
                return;
            }
            // Not a failed save (e.g. an inconsistent model response): the
            // journal is healthy, so the turn ends on file like any other.
            Err(e) => (TurnStatus::Failed, Some(format!("The turn stopped: {e}"))),
        };
        let saved = {
            let (turn_id, reason) = (turn_id.clone(), reason.clone());
            self.with_session_io(move |s| {
                s.close_unresolved_calls(&turn_id)?;
                s.end_turn(&turn_id, status, reason, Some(partial_text))
            })
            .await
        };
        let text = self.with_session(|s| s.transcript().turn(&turn_id).map(|t| t.text())).filter(|t| !t.is_empty());
        let (status, reason) = match saved {
            Ok(()) => (status, reason),
            // The outcome is not on file: say so, rather than report the
            // status the failed turn_end would have recorded.
            Err(e) => (TurnStatus::Failed, Some(unsaved_end_reason(&e))),
        };
        self.finish(TurnEnded { turn_id, status, reason, text });
    }

    /// Announces the turn's end and frees the session for the next turn in
    /// one step, so no next turn can start (and announce itself) in between.
    pub(super) fn finish(&self, ended: TurnEnded) {
        let TurnEnded { turn_id, status, reason, text } = ended;
        // Read first, so that neither lock is held while the other is taken.
        let (usage, session_usage) =
            self.with_session(|s| (s.transcript().turn(&turn_id).and_then(|t| t.usage), s.transcript().usage));
        let mut slot = lock(&self.state.slot);
        self.emit(AgentEvent::TurnEnded { turn_id, status, reason, text, usage, session_usage });
        slot.running.take();
        self.state.busy.send_replace(false);
    }

    /// The turn's steps; returns how it ends, or the save that failed.
    pub(super) async fn turn_steps(
        &self,
        turn_id: &str,
        cancel: &CancellationToken,
        partial_text: &mut String,
    ) -> Result<(TurnStatus, Option<String>), SessionError> {
        let limits = self.state.limits;
        // Fixed for the turn: the model is chosen only between turns.
        let model = self.model_client();
        let mut requests = 0u32;
        let mut calls_seen = 0u32;
        // Text of the turn's finished responses; a retried attempt's text is void.
        let mut turn_text = 0usize;
        // `context_length_exceeded` compacts once per turn, then the request is
        // repeated once (a model request is safe to repeat; a command never is).
        let mut compacted_for_length = false;
        // Whether that compaction, asked for by an answer that filled the
        // window, changed nothing.
        let mut window_compaction_failed = false;
        // The window of the model this turn uses, not the one configured at
        // start: the session may have switched (`mino/models/select`).
        let settings = self.compaction_settings(&model, cancel).await;
        if cancel.is_cancelled() {
            return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
        }
        let due = self.auto_compaction_due(&model, &settings).await;
        if due {
            // Failing here is not the turn's failure: the request may fit
            // anyway, and if it does not, the service says so below.
            self.compact_in_turn(Trigger::Auto, turn_id, cancel).await?;
            if cancel.is_cancelled() {
                return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
            }
        }
        loop {
            if requests == limits.max_requests {
                return Ok((
                    TurnStatus::Failed,
                    Some(format!("limit reached: at most {} model requests per turn", limits.max_requests)),
                ));
            }
            requests += 1;
            // Read and composed for each request: a file or the mode may
            // change between them.
            let project = self.project_instructions();
            let plan_mode = lock(&self.state.policy).approval_mode == ApprovalMode::Plan;
            let (instructions, used) = project_instructions::compose(&self.state.instructions, &project, plan_mode);
            // The session's MCP servers may still be starting (an editor's
            // `mcpServers` start with the session), or relisting tools a call
            // just changed: each request offers what they end up with.
            tokio::select! {
                _ = self.state.mcp.settled() => {}
                _ = cancel.cancelled() => return Ok((TurnStatus::Cancelled, Some(self.cancel_reason()))),
            }
            let mcp_tools = self.state.mcp.tool_definitions();
            let body = self.with_session(|s| s.request_body_with_tools(&model, &instructions, &mcp_tools));
            fail::fail_point!("agent::before_model_request");
            // Stops this response's stream (and only it) once the turn's text
            // passes its limit; the user's cancel stops it too.
            let stop_stream = cancel.child_token();
            let mut streamed = 0usize;
            let mut text_over_limit = false;
            let response = {
                let mut on_event = |event: ModelEvent<'_>| match event {
                    ModelEvent::TextDelta(_) if text_over_limit => {}
                    ModelEvent::TextDelta(delta) => {
                        streamed += delta.len();
                        if turn_text + streamed > TURN_TEXT_LIMIT {
                            text_over_limit = true;
                            stop_stream.cancel();
                            return;
                        }
                        partial_text.push_str(delta);
                        self.emit(AgentEvent::TextDelta { turn_id: turn_id.to_string(), delta: delta.to_string() });
                        fail::fail_point!("agent::after_text_delta");
                    }
                    ModelEvent::Retrying { attempt, delay, reason } => {
                        streamed = 0;
                        partial_text.clear();
                        tracing::warn!(turn_id, attempt, ?delay, reason, "retrying the model request");
                        self.emit(AgentEvent::Retrying {
                            turn_id: turn_id.to_string(),
                            attempt,
                            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                            reason: reason.to_string(),
                        });
                    }
                };
                match body {
                    Ok(body) => model.respond_with_body(body, &mut on_event, &stop_stream).await,
                    Err(e) => Err(e),
                }
            };
            if text_over_limit && !cancel.is_cancelled() {
                tracing::warn!(turn_id, limit = TURN_TEXT_LIMIT, "the model's text passed the turn's limit");
                return Ok((TurnStatus::Failed, Some(turn_text_limit_reason())));
            }
            turn_text += streamed;
            let response = match response {
                Ok(response) => response,
                Err(ModelError::Cancelled) => return Ok((TurnStatus::Cancelled, Some(self.cancel_reason()))),
                Err(e) if crate::compaction::is_context_length_exceeded(&e) => {
                    if compacted_for_length {
                        return Ok((TurnStatus::Failed, Some(crate::compaction::too_long_reason(&e, true))));
                    }
                    compacted_for_length = true;
                    let outcome = self.compact_in_turn(Trigger::ContextLengthExceeded, turn_id, cancel).await?;
                    if cancel.is_cancelled() {
                        return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
                    }
                    if !outcome.compacted {
                        let reason = match outcome.reason.as_deref() {
                            Some(crate::compaction::NOTHING_TO_COMPACT) | None => {
                                crate::compaction::too_long_reason(&e, false)
                            }
                            Some(why) => crate::compaction::compaction_failed_reason(why),
                        };
                        return Ok((TurnStatus::Failed, Some(reason)));
                    }
                    // The same request again, shorter: it is not another of
                    // the turn's requests.
                    requests -= 1;
                    continue;
                }
                Err(e) => return Ok((TurnStatus::Failed, Some(e.to_string()))),
            };
            if response.incomplete.as_deref() == Some(CONTEXT_WINDOW_FULL) && !compacted_for_length {
                // The window filled up while the model answered: as a refusal
                // of the request as too long, compact once and ask again.
                compacted_for_length = true;
                let outcome = self.compact_in_turn(Trigger::ContextLengthExceeded, turn_id, cancel).await?;
                if cancel.is_cancelled() {
                    return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
                }
                if outcome.compacted {
                    // What this response streamed is void, as after a retry.
                    turn_text -= streamed;
                    partial_text.clear();
                    self.emit(AgentEvent::Retrying {
                        turn_id: turn_id.to_string(),
                        attempt: 1,
                        delay_ms: 0,
                        reason: crate::compaction::WINDOW_FULL_RETRY.to_string(),
                    });
                    requests -= 1;
                    continue;
                }
                window_compaction_failed = true;
            }
            fail::fail_point!("agent::after_model_response");
            // The calls are what the transcript made of the recorded response:
            // one reading of the items, shared with recovery and replay.
            // The response is written through, not synced (no save point):
            // a write into the page cache, done here rather than handed to
            // another thread, which cost more than the write itself
            // (docs/performance.md, "The turn step's own time").
            let usage = response.usage;
            let calls = self.with_session(|s| -> Result<Vec<(String, String, String)>, SessionError> {
                s.record_response(turn_id, response.items, response.usage, Some(used))?;
                Ok(s.transcript()
                    .turn(turn_id)
                    .map(|turn| {
                        let last = turn.responses.len().saturating_sub(1);
                        turn.calls
                            .iter()
                            .filter(|c| c.response_index == last)
                            .map(|c| (c.call_id.clone(), c.name.clone(), c.arguments.clone()))
                            .collect()
                    })
                    .unwrap_or_default())
            })?;
            // Recorded: its text is in the response record now.
            partial_text.clear();
            if let Some(usage) = usage {
                self.emit(AgentEvent::ResponseUsage {
                    turn_id: turn_id.to_string(),
                    usage,
                    context_window: settings.context_window,
                });
            }
            if calls.is_empty() {
                return Ok(match response.incomplete {
                    Some(why) if why == CONTEXT_WINDOW_FULL => {
                        (TurnStatus::Failed, Some(crate::compaction::window_full_reason(window_compaction_failed)))
                    }
                    Some(why) => (TurnStatus::Failed, Some(format!("the model's answer was cut short ({why})"))),
                    None => (TurnStatus::Completed, None),
                });
            }
            let mut over_limit = false;
            let mut cancelled = false;
            // Ids already used in this response: a second call with one of
            // them cannot be answered unambiguously (its output would carry
            // the same call_id as the first's), so it is not run.
            let mut ids_in_response: HashSet<String> = HashSet::new();
            for (call_id, name, arguments) in calls {
                if !ids_in_response.insert(call_id.clone()) {
                    let output = duplicate_call_output(&call_id, &arguments);
                    self.save_result(turn_id, &call_id, ToolStatus::Failed, &output, None).await?;
                    continue;
                }
                if cancelled || over_limit || calls_seen == limits.max_calls {
                    over_limit |= !cancelled;
                    let output = if cancelled {
                        outputs::NOT_RUN_AFTER_CANCEL.to_string()
                    } else {
                        format!("Not executed: the turn reached its limit of {} tool calls.", limits.max_calls)
                    };
                    self.save_result(turn_id, &call_id, ToolStatus::NotExecuted, &output, None).await?;
                    continue;
                }
                calls_seen += 1;
                cancelled = self.handle_call(turn_id, &call_id, &name, &arguments, cancel).await?;
            }
            if cancelled {
                return Ok((TurnStatus::Cancelled, Some(self.cancel_reason())));
            }
            if over_limit {
                return Ok((
                    TurnStatus::Failed,
                    Some(format!("limit reached: at most {} tool calls per turn", limits.max_calls)),
                ));
            }
        }
    }
}
