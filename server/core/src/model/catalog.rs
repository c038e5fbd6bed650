//! The models a person can choose from: the service's own list
//! (`GET {base}/models`, as OpenAI, Ollama, vLLM, llama.cpp and LM Studio
//! serve it: `{"data": [{"id": …}, …]}`), else what the configuration
//! names. Listing never fails a client: a service that fails, is too slow,
//! answers too much or has no list gives the configured models instead
//! (`source: "config"`), and why is logged. The same list gives the
//! context window a service reports for a model ([`reported_window`]),
//! which automatic compaction uses where the configuration sets none
//! ([`ModelClient::reported_context_window`]).

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
    /// The rest of the entry, where each server names the context window
    /// its own way ([`reported_window`]).
    #[serde(flatten)]
    fields: serde_json::Map<String, serde_json::Value>,
}

/// Where the OpenAI-compatible services put a model's context window in
/// their `GET /models` entries, in the order they are read; the first that
/// holds a positive whole number is the window. Each is the server's own,
/// checked against its documentation or source:
/// - `context_window`: Groq;
/// - `context_length`: OpenRouter (and gateways copying its list);
/// - `max_model_len`: vLLM (its `--max-model-len`, the window it serves);
/// - `max_context_length`: LM Studio's REST API (`/api/v0/models`), Mistral;
/// - `meta.n_ctx_train`: llama.cpp's `llama-server`, the window the model
///   was trained with, which the server uses unless started with a smaller
///   `--ctx-size` (then set `context_window` in the configuration file).
///
/// OpenAI, Ollama and LM Studio's OpenAI-compatible `/v1/models` give none.
pub const WINDOW_FIELDS: [&[&str]; 5] =
    [&["context_window"], &["context_length"], &["max_model_len"], &["max_context_length"], &["meta", "n_ctx_train"]];

/// The context window a service's model entry reports ([`WINDOW_FIELDS`]).
/// A field whose value is not a positive whole number (a string, a
/// fraction, zero, a negative number) is passed over, logged at debug: a
/// strange entry never makes the list, or a turn, fail.
pub fn reported_window(id: &str, entry: &serde_json::Map<String, serde_json::Value>) -> Option<u64> {
    WINDOW_FIELDS.iter().find_map(|path| {
        let (first, rest) = path.split_first()?;
        let value = rest.iter().try_fold(entry.get(*first)?, |value, key| value.get(key))?;
        match value.as_u64() {
            Some(window) if window > 0 => Some(window),
            _ if value.is_null() => None,
            _ => {
                tracing::debug!(model = id, field = path.join("."), %value, "ignoring a context window that is not a positive whole number");
                None
            }
        }
    })
}

impl ModelClient {
    /// The service's models (`GET {base}/models` with the key), or why not.
    /// Bounded by [`MODEL_LIST_LIMIT`] and [`MODEL_LIST_TIMEOUT`].
    pub async fn service_models(&self) -> Result<Vec<ListedModel>, String> {
        if self.authorization.is_none() && self.config.uses_default_base_url() {
            return Err("OPENAI_API_KEY is not set".into());
        }
        let mut models = match tokio::time::timeout(MODEL_LIST_TIMEOUT, self.fetch_models()).await {
            Ok(listed) => listed.map_err(|why| self.scrub(why))?,
            Err(_) => return Err(format!("no answer within {} s", MODEL_LIST_TIMEOUT.as_secs())),
        };
        // A list without the window (llama-cpp-python's) shows the one the
        // service stated in an error, for the model it was stated for.
        if let Some(window) = self.learned_context_window() {
            for model in models.iter_mut().filter(|m| m.id == self.config.model && m.context_window.is_none()) {
                model.context_window = Some(window);
            }
        }
        Ok(models)
    }

    /// The context window the service reports for this client's model, or
    /// `None` when it does not say (or cannot be asked): the window an
    /// error of the service stated ([`ModelClient::learned_context_window`]),
    /// else (Chat Completions) llama.cpp's `GET /props`
    /// ([`super::PROPS_WINDOW`]), else its list's. The list and `/props` are asked once per
    /// client (a chosen model is a new client): every later call, and any
    /// made while the first is under way, share their answer. Never longer
    /// than [`MODEL_LIST_TIMEOUT`] and [`super::servers::PROBE_TIMEOUT`].
    pub async fn reported_context_window(&self) -> Option<u64> {
        if let Some(window) = self.learned_context_window() {
            return Some(window);
        }
        *self
            .reported_window
            .get_or_init(|| async {
                let model = &self.config.model;
                // The window llama.cpp serves (`--ctx-size`) before the one its
                // list gives (`n_ctx_train`, the model's own).
                if let Some(window) = self.props_window().await {
                    tracing::info!(model, window, "the model service's /props gives the context window");
                    return Some(window);
                }
                let listed = self.service_models().await;
                let window = listed
                    .as_ref()
                    .ok()
                    .and_then(|models| models.iter().find(|m| m.id == *model).and_then(|m| m.context_window));
                match listed {
                    Ok(_) => {
                        match window {
                            Some(window) => tracing::info!(model, window, "the model service reports a context window"),
                            None => tracing::info!(model, "the model service reports no context window for the model"),
                        }
                        window
                    }
                    Err(why) => {
                        tracing::info!(model, %why, "the model service's list is not available for its context window");
                        None
                    }
                }
            })
            .await
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
        parse_list(&body)
    }
}

/// The models of a `GET /models` body, each with the window it reports.
fn parse_list(body: &[u8]) -> Result<Vec<ListedModel>, String> {
    let list: ServiceList =
        serde_json::from_slice(body).map_err(|e| format!("not a model list ({{\"data\": [{{\"id\": …}}]}}): {e}"))?;
    Ok(list
        .data
        .into_iter()
        .filter(|m| !m.id.trim().is_empty())
        .map(|m| ListedModel { context_window: reported_window(&m.id, &m.fields), id: m.id })
        .collect())
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

    /// The window of each entry of a `GET /models` body.
    fn windows(data: serde_json::Value) -> Vec<Option<u64>> {
        let body = serde_json::json!({ "object": "list", "data": data }).to_string();
        parse_list(body.as_bytes()).expect("a model list").into_iter().map(|m| m.context_window).collect()
    }

    #[test]
    fn each_services_field_gives_the_window() {
        let data = serde_json::json!([
            {"id": "groq", "object": "model", "context_window": 131072},
            {"id": "openrouter", "context_length": 200000, "top_provider": {"context_length": 8000}},
            {"id": "vllm", "owned_by": "vllm", "max_model_len": 8192},
            {"id": "lmstudio", "type": "llm", "state": "loaded", "max_context_length": 32768},
            {"id": "llama.cpp", "meta": {"vocab_type": 2, "n_ctx_train": 4096, "n_embd": 2048}},
            {"id": "openai", "object": "model", "created": 1, "owned_by": "system"},
        ]);
        assert_eq!(windows(data), [Some(131072), Some(200000), Some(8192), Some(32768), Some(4096), None]);
    }

    #[test]
    fn a_window_that_is_not_a_positive_whole_number_is_ignored_and_the_list_stands() {
        for bad in [
            serde_json::json!("8192"),
            serde_json::json!(8192.5),
            serde_json::json!(0),
            serde_json::json!(-4096),
            serde_json::json!(null),
            serde_json::json!(true),
            serde_json::json!({"tokens": 8192}),
            serde_json::json!([8192]),
            serde_json::json!(1e30),
        ] {
            let data = serde_json::json!([
                {"id": "a", "context_window": bad},
                {"id": "b", "meta": bad},
                {"id": "c", "context_length": bad, "max_model_len": 2048},
                {"id": "d", "max_context_length": 16384},
            ]);
            assert_eq!(windows(data), [None, None, Some(2048), Some(16384)], "{bad}");
        }
    }

    #[test]
    fn an_entry_naming_the_window_several_ways_gives_the_first_in_order() {
        let data = serde_json::json!([{"id": "a", "meta": {"n_ctx_train": 131072}, "max_model_len": 8192, "context_length": 4096}]);
        assert_eq!(windows(data), [Some(4096)]);
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
