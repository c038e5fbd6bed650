//! What the model client's tests share: a client configuration with short
//! retries against the scripted server, and a request that records what its
//! callback heard.

use std::time::Duration;

use mino_core::model::{ModelClient, ModelConfig, ModelError, ModelEvent, ModelRequest, ModelResponse, RetryPolicy};
use mino_mock_model::{MockModel, Reply};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A configuration for `base_url` with fast retries (4, 5–50 ms) and the
/// given key, model name and stall timeout.
pub fn model_config(base_url: &str, api_key: &str, model: &str, stall_timeout: Duration) -> ModelConfig {
    ModelConfig {
        base_url: base_url.to_string(),
        api_key: Some(api_key.to_string()),
        model: model.to_string(),
        retry: RetryPolicy {
            max_retries: 4,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(50),
        },
        stall_timeout,
        connect_timeout: Duration::from_secs(2),
    }
}

/// What the callback heard.
#[derive(Debug, Default)]
pub struct Heard {
    pub deltas: Vec<String>,
    pub retries: Vec<(u32, Duration, String)>,
}

/// One response to `input` with the instructions "Be brief.".
pub async fn ask(
    client: &ModelClient,
    input: &[Value],
    cancel: &CancellationToken,
) -> (Result<ModelResponse, ModelError>, Heard) {
    let request = ModelRequest { instructions: "Be brief.", input };
    let mut heard = Heard::default();
    let mut on_event = |event: ModelEvent<'_>| match event {
        ModelEvent::TextDelta(text) => heard.deltas.push(text.to_string()),
        ModelEvent::Retrying { attempt, delay, reason } => heard.retries.push((attempt, delay, reason.to_string())),
    };
    let result = client.respond(&request, &mut on_event, cancel).await;
    (result, heard)
}

pub async fn mock(script: Vec<Reply>) -> MockModel {
    MockModel::start(script).await.expect("mock model")
}
