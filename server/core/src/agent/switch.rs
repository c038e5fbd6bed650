//! Replacing the current session with another, between turns.

use super::*;

impl Agent {
    /// Replaces the session with the one `open` makes current (it is given
    /// the current session to replace, as `SessionStore::open` and
    /// `new_session` take it), then emits [`AgentEvent::SessionOpened`] with
    /// what `open` recovered, stamped with the new session's id, before any
    /// event of a turn in it. Refused while a turn runs; no turn can start
    /// until it returns. Commands then run in the new session's directory.
    /// `open`'s own error (the session left as it was) is the inner one.
    pub async fn switch<T: Send + 'static, E: Send + 'static>(
        &self,
        open: impl FnOnce(&mut Session) -> Result<(T, RecoveryReport), E> + Send + 'static,
    ) -> Result<Result<T, E>, AgentError> {
        let _claim = self.claim_between_turns()?;
        let opened = self
            .with_session_io(move |s| {
                open(s).map(|(value, report)| (value, report, s.id().to_string(), std::path::PathBuf::from(s.cwd())))
            })
            .await;
        let (value, recovery, session_id, cwd) = match opened {
            Ok(opened) => opened,
            Err(e) => return Ok(Err(e)),
        };
        {
            // The new session's workspace rules replace the old one's.
            let mut policy = lock(&self.state.policy);
            *policy = policy.for_workspace(&cwd);
        }
        {
            let mut bash = lock(&self.state.bash);
            *bash = Arc::new(bash.in_dir(cwd));
        }
        // The new session's model: the one it chose, else the configured one.
        let chosen = self.with_session(|s| session_model(&self.state.configured_model, s));
        *lock(&self.state.model) = chosen;
        self.fetch_context_window();
        lock(&self.state.emitter).session_id = session_id;
        self.emit(AgentEvent::SessionOpened { recovery });
        // The new session's directory may have other instruction files.
        self.project_instructions();
        Ok(Ok(value))
    }
}
