//! Rules the person grants while answering a call (journaled, and written
//! to the workspace rules file for a workspace rule), listed and revoked.

use super::*;

/// The rules a client can list: those in force, and the workspace file.
#[derive(Debug, Clone)]
pub struct RulesInForce {
    pub rules: Vec<Rule>,
    pub workspace_file: Option<std::path::PathBuf>,
    pub workspace_file_error: Option<String>,
}

impl Agent {
    /// The rules in force (this session's and the workspace file's).
    pub fn rules(&self) -> RulesInForce {
        let granted = self.with_session(|s| s.transcript().rules.clone());
        let policy = lock(&self.state.policy);
        RulesInForce {
            rules: policy.rules_in_force(&granted),
            workspace_file: policy.workspace_file.clone(),
            workspace_file_error: policy.workspace_file_error.clone(),
        }
    }

    /// Revokes a rule: a rule this session granted gets a synced
    /// `rule_revoke` record; a workspace rule is also removed from the
    /// workspace rules file (rewritten atomically).
    pub async fn revoke_rule(&self, id: &str) -> Result<(), AgentError> {
        let granted = self.with_session(|s| s.transcript().rules.iter().find(|r| r.id() == id).cloned());
        let (in_file, path) = {
            let policy = lock(&self.state.policy);
            (policy.workspace_rules.iter().find(|r| r.id() == id).cloned(), policy.workspace_file.clone())
        };
        if granted.is_none() && in_file.is_none() {
            return Err(AgentError::Policy(PolicyError::UnknownRule(id.to_owned())));
        }
        if granted.is_some() {
            let owned = id.to_owned();
            self.with_session_io(move |s| s.record_rule_revoke(&owned)).await?;
        }
        let workspace_rule = in_file.is_some() || granted.is_some_and(|r| r.scope() == RuleScope::Workspace);
        if workspace_rule {
            lock(&self.state.policy).workspace_rules.retain(|r| r.id() != id);
            if let Some(path) = path {
                let owned = id.to_owned();
                let removed = tokio::task::spawn_blocking(move || crate::rules::file::remove(&path, &owned)).await;
                match removed {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(AgentError::Policy(PolicyError::File(e))),
                    Err(e) => return Err(AgentError::Session(SessionError::Usage(e.to_string()))),
                }
            }
        }
        tracing::info!(rule = id, "rule revoked");
        Ok(())
    }

    /// Grants the rule a decision carries while answering `call_id`, and
    /// returns the plain decision left (`Approve` or `Deny`). The rule is on
    /// file (a synced `rule` record, and the workspace rules file for a
    /// workspace rule) before it applies to anything.
    pub(super) async fn grant_rule(
        &self,
        turn_id: &str,
        call_id: &str,
        decision: Option<Decision>,
    ) -> Result<Option<Answer>, SessionError> {
        let (rule, left) = match decision {
            None => return Ok(None),
            Some(Decision::Approve) => return Ok(Some(Answer::Approve)),
            Some(Decision::ApproveHunks(hunks)) => return Ok(Some(Answer::ApproveHunks(hunks))),
            Some(Decision::Deny { reason }) => return Ok(Some(Answer::Deny { reason })),
            Some(Decision::Allow(rule)) => (rule, Answer::Approve),
            Some(Decision::DenyWithRule(rule)) => (rule, Answer::Deny { reason: None }),
        };
        let (t, c, r) = (turn_id.to_string(), call_id.to_string(), rule.clone());
        self.with_session_io(move |s| s.record_rule(&t, &c, r)).await?;
        tracing::info!(rule = rule.id(), text = rule.command(), effect = ?rule.effect(), scope = ?rule.scope(), "rule granted");
        if rule.scope() == RuleScope::Workspace {
            self.write_workspace_rule(&rule).await;
        }
        Ok(Some(left))
    }

    /// Appends a granted workspace rule to the workspace rules file. A
    /// failure is logged: the rule still holds for this session (its `rule`
    /// record says so) and is missing from the file for later ones.
    pub(super) async fn write_workspace_rule(&self, rule: &Rule) {
        let (path, workspace) = {
            let policy = lock(&self.state.policy);
            (policy.workspace_file.clone(), lock(&self.state.bash).cwd().to_path_buf())
        };
        let Some(path) = path else {
            tracing::warn!(
                rule = rule.id(),
                "the workspace rules file cannot be located; the rule holds for this session only"
            );
            return;
        };
        let owned = rule.clone();
        let written = tokio::task::spawn_blocking(move || crate::rules::file::append(&path, &workspace, &owned)).await;
        match written {
            Ok(Ok(_)) => {
                let mut policy = lock(&self.state.policy);
                if policy.workspace_file_error.is_none() && !policy.workspace_rules.iter().any(|r| r.id() == rule.id())
                {
                    policy.workspace_rules.push(rule.clone());
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(rule = rule.id(), error = %e, "the workspace rule could not be written to the rules file; it holds for this session only")
            }
            Err(e) => tracing::warn!(rule = rule.id(), error = %e, "writing the workspace rule was abandoned"),
        }
    }
}
