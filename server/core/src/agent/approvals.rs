//! Approvals: a call waits for the person's decision (one call at a time),
//! [`Agent::decide`] delivers it, and a denial (the person's or a deny
//! rule's) is journaled with the call's `refused` result.

use super::*;

/// The person's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    /// Not run; the model hears `Denied by the user: <reason>` when a
    /// reason is given.
    Deny {
        reason: Option<String>,
    },
    /// Approve, and grant `rule` (its scope says for the session or the
    /// workspace). The rule is journaled before it applies.
    Allow(Rule),
    /// Deny, and grant `rule`, a deny rule (journaled before it applies).
    DenyWithRule(Rule),
    /// Approve only these hunks of an edit's proposed diff (0-based, in the
    /// diff's order): the rest are rejected and not written. Only for an
    /// edit; [`Agent::decide`] refuses it for a command and checks the
    /// indices against the proposal.
    ApproveHunks(Vec<usize>),
}

/// A [`Decision`] once the rule it grants is on file.
pub(super) enum Answer {
    Approve,
    /// An edit approved in part (see [`Decision::ApproveHunks`]).
    ApproveHunks(Vec<usize>),
    Deny {
        reason: Option<String>,
    },
}

impl From<ApprovalDecision> for Decision {
    fn from(decision: ApprovalDecision) -> Self {
        match decision {
            ApprovalDecision::Approved => Decision::Approve,
            ApprovalDecision::Denied => Decision::Deny { reason: None },
        }
    }
}

impl Agent {
    /// A test's shortcut: [`Agent::decide`] with a plain approve or deny.
    #[cfg(any(test, feature = "testing"))]
    pub fn approve(&self, turn_id: &str, call_id: &str, decision: ApprovalDecision) -> Result<(), AgentError> {
        self.decide(turn_id, call_id, decision.into())
    }

    /// Delivers the person's decision on the call waiting for it (any answer
    /// a person can give: a reason for a denial, a rule to grant, the hunks
    /// of an edit), which `turn_id` and `call_id` must both name; anything
    /// else is refused and decides nothing.
    pub fn decide(&self, turn_id: &str, call_id: &str, decision: Decision) -> Result<(), AgentError> {
        let refused = || AgentError::NoPendingApproval { turn_id: turn_id.to_string(), call_id: call_id.to_string() };
        let mut slot = lock(&self.state.slot);
        let turn = slot
            .running
            .as_mut()
            .filter(|turn| turn.turn_id == turn_id && !turn.compaction && !turn.cancel.is_cancelled())
            .ok_or_else(refused)?;
        let waiting = turn.approval.as_ref().filter(|pending| pending.call_id == call_id).ok_or_else(refused)?;
        if let Decision::ApproveHunks(hunks) = &decision {
            let Some(of) = waiting.edit_hunks else {
                return Err(AgentError::BadHunks(format!(
                    "call {call_id} is a command, not an edit: only an edit's hunks can be accepted"
                )));
            };
            if hunks.is_empty() {
                return Err(AgentError::BadHunks(edit::NarrowError::NoneAccepted.to_string()));
            }
            if let Some(&index) = hunks.iter().find(|&&i| i >= of) {
                return Err(AgentError::BadHunks(edit::NarrowError::OutOfRange { index, of }.to_string()));
            }
        }
        let pending = turn.approval.take().ok_or_else(refused)?;
        drop(slot);
        pending.decision.send(decision).map_err(|_| refused())
    }

    /// Refuses a call deny rules cover, without asking: its `approval`
    /// (`denied`, `decided_by: rule`, naming them) and its `refused` result.
    pub(super) async fn deny_by_rules(
        &self,
        turn_id: &str,
        call_id: &str,
        rules: Vec<Rule>,
    ) -> Result<bool, SessionError> {
        tracing::info!(turn_id, call_id, "denied by a rule without asking");
        let output = outputs::denied_by_rule(&rules);
        let (t, c) = (turn_id.to_string(), call_id.to_string());
        self.with_session_io(move |s| {
            s.record_approval(&t, &c, ApprovalDecision::Denied, Some(ApprovedBy::Rule), rules)
        })
        .await?;
        self.save_result(turn_id, call_id, ToolStatus::Refused, &output, None).await?;
        Ok(false)
    }

    /// Records the person's denial of a call and its `refused` result, synced
    /// together (the decision's save point is the result's sync): the model
    /// reads the reason they gave, else `refused`.
    pub(super) async fn record_denial(
        &self,
        turn_id: &str,
        call_id: &str,
        reason: Option<String>,
        refused: &str,
        facts: ApprovalFacts,
    ) -> Result<(), SessionError> {
        let output = match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
            Some(reason) => outputs::denied_with_reason(reason),
            None => refused.to_string(),
        };
        let (t, c, o) = (turn_id.to_string(), call_id.to_string(), output.clone());
        let command = self
            .with_session_io(move |s| {
                s.record_approval_of(&t, &c, ApprovalDecision::Denied, (None, Vec::new()), facts)?;
                let command = pending_call_command(s, &c);
                s.record_tool_result(&t, &c, ToolStatus::Refused, &o, None)?;
                Ok::<_, SessionError>(command)
            })
            .await?;
        self.emit_result(turn_id, call_id, command, ToolStatus::Refused, output, None, None);
        Ok(())
    }

    /// Emits `request` (an approval request) and waits for the person's
    /// decision on it; `None` when the turn is cancelled first. A cancel
    /// wins over a decision that arrives at the same moment: once
    /// `mino/cancel` has answered, nothing of this turn may start.
    pub(super) async fn wait_for_decision(
        &self,
        turn_id: &str,
        call_id: &str,
        edit_hunks: Option<usize>,
        request: AgentEvent,
        cancel: &CancellationToken,
    ) -> Option<Decision> {
        let (sender, receiver) = oneshot::channel();
        if let Some(turn) = lock(&self.state.slot).running.as_mut() {
            turn.approval = Some(PendingApproval { call_id: call_id.to_string(), edit_hunks, decision: sender });
        }
        debug_assert!(matches!(&request, AgentEvent::ApprovalRequest { turn_id: t, .. } if t == turn_id));
        self.emit(request);
        let decision = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            decision = receiver => decision.ok(),
        };
        let decision = decision.filter(|_| !cancel.is_cancelled());
        if let Some(turn) = lock(&self.state.slot).running.as_mut() {
            turn.approval = None;
        }
        decision
    }
}
