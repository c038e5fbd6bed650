//! The models a person can choose from: the service's own list
//! (`GET {base}/models`, as OpenAI, Ollama, vLLM, llama.cpp and LM Studio
//! serve it: `{"data": [{"id": …}, …]}`), else what the configuration
//! names. Listing never fails a client: a service that fails, is too slow,
//! answers too much or has no list gives the configured models instead
//! (`source: "config"`), and why is logged.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION};
use serde::Deserialize;

use super::{error_chain, ModelClient};

/// The most bytes of the service's list read: a broken service or proxy
/// cannot fill the server's memory.
pub const MODEL_LIST_LIMIT: usize = 4 * 1024 * 1024;
/// The longest the service's list is waited for, connection included.
pub const MODEL_LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// One model a person can choose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedModel {
    pub id: String,
    /// Its context window in tokens, when the service or the configuration says.
    pub context_window: Option<u64>,
}

/// Where a [`ModelList`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// The service's `GET /models`.
    Service,
    /// The configured model and the configuration file's `[models.*]` entries.
    Config,
}

/// The models to choose from, and which one the current session uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelList {
    pub models: Vec<ListedModel>,
    pub current: String,
    pub source: ModelSource,
}

/// The service's answer; every other field is ignored.
#[derive(Deserialize)]
struct ServiceList {
    data: Vec<ServiceModel>,
}

#[derive(Deserialize)]
struct ServiceModel {
    id: String,
    /// Named differently by each server: OpenRouter and LM Studio say
    /// `context_length`, vLLM `max_model_len`.
    #[serde(alias = "context_length", alias = "max_model_len")]
    context_window: Option<u64>,
}

impl ModelClient {
    /// The service's models (`GET {base}/models` with the key), or why not.
    /// Bounded by [`MODEL_LIST_LIMIT`] and [`MODEL_LIST_TIMEOUT`].
    pub async fn service_models(&self) -> Result<Vec<ListedModel>, String> {
        if self.authorization.is_none() && self.config.uses_default_base_url() {
            return Err("OPENAI_API_KEY is not set".into());
        }
        match tokio::time::timeout(MODEL_LIST_TIMEOUT, self.fetch_models()).await {
            Ok(listed) => listed.map_err(|why| self.scrub(why)),
            Err(_) => Err(format!("no answer within {} s", MODEL_LIST_TIMEOUT.as_secs())),
        }
    }

    async fn fetch_models(&self) -> Result<Vec<ListedModel>, String> {
        let url = format!("{}/models", self.config.base_url.trim_end_matches('/'));
        let mut request = self.http.get(url).header(ACCEPT, "application/json");
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let mut response = request.send().await.map_err(|e| error_chain(&e.without_url()))?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        if response.content_length().is_some_and(|n| n > MODEL_LIST_LIMIT as u64) {
            return Err(format!("the list is larger than {} MiB", MODEL_LIST_LIMIT / (1024 * 1024)));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| error_chain(&e.without_url()))? {
            if body.len() + chunk.len() > MODEL_LIST_LIMIT {
                return Err(format!("the list is larger than {} MiB", MODEL_LIST_LIMIT / (1024 * 1024)));
            }
            body.extend_from_slice(&chunk);
        }
        let list: ServiceList = serde_json::from_slice(&body)
            .map_err(|e| format!("not a model list ({{\"data\": [{{\"id\": …}}]}}): {e}"))?;
        Ok(list
            .data
            .into_iter()
            .filter(|m| !m.id.trim().is_empty())
            .map(|m| ListedModel { id: m.id, context_window: m.context_window.filter(|w| *w > 0) })
            .collect())
    }
}

/// The list a client is shown: the service's models when it gave any, else
/// `configured` (the configured model first, then the file's entries); the
/// current model is always among them. A context window the service does
/// not give is taken from the configuration.
pub fn model_list(service: Result<Vec<ListedModel>, String>, configured: &[ListedModel], current: &str) -> ModelList {
    let (mut models, source) = match service {
        Ok(models) if !models.is_empty() => (models, ModelSource::Service),
        Ok(_) => {
            tracing::info!("the model service lists no models; offering the configured ones");
            (configured.to_vec(), ModelSource::Config)
        }
        Err(why) => {
            tracing::info!(%why, "the model service's list is not available; offering the configured models");
            (configured.to_vec(), ModelSource::Config)
        }
    };
    let mut seen = std::collections::HashSet::new();
    models.retain(|m| seen.insert(m.id.clone()));
    for model in &mut models {
        if model.context_window.is_none() {
            model.context_window = configured.iter().find(|c| c.id == model.id).and_then(|c| c.context_window);
        }
    }
    if !models.iter().any(|m| m.id == current) {
        let context_window = configured.iter().find(|c| c.id == current).and_then(|c| c.context_window);
        models.insert(0, ListedModel { id: current.to_string(), context_window });
    }
    ModelList { models, current: current.to_string(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(id: &str, window: Option<u64>) -> ListedModel {
        ListedModel { id: id.into(), context_window: window }
    }

    #[test]
    fn the_service_list_wins_and_the_configuration_fills_its_windows() {
        let configured = [listed("a", None), listed("b", Some(8192))];
        let list = model_list(Ok(vec![listed("b", None), listed("c", Some(4096))]), &configured, "b");
        assert_eq!(list.source, ModelSource::Service);
        assert_eq!(list.models, vec![listed("b", Some(8192)), listed("c", Some(4096))]);
    }

    #[test]
    fn a_failed_or_empty_service_list_gives_the_configured_models_with_the_current_one() {
        let configured = [listed("a", None), listed("b", Some(8192))];
        for service in [Err("HTTP 404".to_string()), Ok(Vec::new())] {
            let list = model_list(service, &configured, "chosen");
            assert_eq!(list.source, ModelSource::Config);
            assert_eq!(list.current, "chosen");
            assert_eq!(list.models, vec![listed("chosen", None), listed("a", None), listed("b", Some(8192))]);
        }
    }
}
