//! The session's model: its client, the models to choose from, and a
//! choice saved before it applies.

use super::*;

/// The longest model name `mino/models/select` takes.
pub const MAX_MODEL_NAME: usize = 256;

/// The client for `session`'s model: the one its last `model` record names,
/// else `configured`.
pub(super) fn session_model(configured: &ModelClient, session: &Session) -> ModelClient {
    match &session.transcript().model {
        Some(model) => configured.with_model(model),
        None => configured.clone(),
    }
}

impl Agent {
    /// The client for the current session's model.
    pub fn model_client(&self) -> ModelClient {
        lock(&self.state.model).clone()
    }

    /// The models to choose from: the service's list, else `configured`
    /// (see [`crate::model::model_list`]); never an error.
    pub async fn models(&self, configured: &[crate::model::ListedModel]) -> crate::model::ModelList {
        let service = self.state.configured_model.service_models().await;
        // Read after the service answers: a model chosen meanwhile is the current one.
        let current = self.model_client().config().model.clone();
        crate::model::model_list(service, configured, &current)
    }

    /// The models to offer without asking the service: the configured
    /// ones, with the current model among them (for a caller that cannot
    /// wait on the service's list, e.g. while a session opens).
    pub fn configured_models(&self, configured: &[crate::model::ListedModel]) -> crate::model::ModelList {
        let current = self.model_client().config().model.clone();
        crate::model::model_list(
            Err("not awaited: the service's list is asked for separately".into()),
            configured,
            &current,
        )
    }

    /// Chooses the model of the current session's requests from the next
    /// turn on: a synced `model` record first, so the session keeps it when
    /// reopened. Refused while a turn runs (or a switch is under way).
    pub async fn select_model(&self, model: &str) -> Result<String, AgentError> {
        let model = model.trim().to_string();
        if model.is_empty() || model.len() > MAX_MODEL_NAME || model.chars().any(char::is_control) {
            return Err(SessionError::InvalidInput(format!(
                "`model` must name a model: 1 to {MAX_MODEL_NAME} bytes without control characters \
                 (mino/models/list lists them)"
            ))
            .into());
        }
        // No turn can start while the record is written, and none runs
        // with a model it did not start with.
        let _claim = self.claim_between_turns()?;
        let owned = model.clone();
        self.with_session_io(move |s| s.record_model(&owned)).await?;
        *lock(&self.state.model) = self.state.configured_model.with_model(&model);
        tracing::info!(model, "model chosen");
        self.fetch_context_window();
        Ok(model)
    }
}
