//! The session's approval and sandbox modes: read and changed.

use super::*;

impl Agent {
    /// The session's settings and what the machine's sandbox enforces.
    pub fn settings(&self) -> (Settings, String) {
        let policy = lock(&self.state.policy);
        (policy.settings(), policy.support_line())
    }

    /// Changes the approval or sandbox mode for the calls asked about from
    /// now on (a call already waiting runs as its request said). A sandbox
    /// the machine cannot enforce is refused.
    pub fn update_settings(
        &self,
        approval_mode: Option<ApprovalMode>,
        sandbox: Option<SandboxMode>,
    ) -> Result<Settings, PolicyError> {
        let settings = lock(&self.state.policy).update(approval_mode, sandbox)?;
        tracing::info!(approval_mode = %settings.approval_mode, sandbox = %settings.sandbox, "settings changed");
        self.emit(AgentEvent::SettingsChanged { settings });
        Ok(settings)
    }
}
