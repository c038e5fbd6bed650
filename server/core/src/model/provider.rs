//! Which API the model is reached through, and how one attempt's events are read in its terms.

use std::fmt;

use super::chat::ChatAccumulator;
use super::retry::AttemptError;
use super::sse::{ResponseAccumulator, SseEvent, Step};
use super::{ModelError, ModelEvent, ModelResponse};

/// Which API the model is reached through. The journal holds Responses API items either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// The OpenAI Responses API, `POST {base}/responses` (the default).
    #[default]
    Responses,
    /// Chat Completions, `POST {base}/chat/completions`: llama.cpp's server, vLLM, LM Studio,
    /// Ollama and gateways.
    ChatCompletions,
}

impl Provider {
    /// The name used in configuration and in `MINO_PROVIDER`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Responses => "responses",
            Provider::ChatCompletions => "chat-completions",
        }
    }

    /// The value of `MINO_PROVIDER` (read by [`crate::config`]); unset or blank
    /// gives [`Provider::Responses`].
    pub(crate) fn from_setting(value: Option<&str>) -> Result<Provider, ModelError> {
        match value.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(Provider::default()),
            Some(value) => {
                value.parse().map_err(|err: UnknownProvider| ModelError::fatal(format!("MINO_PROVIDER: {err}")))
            }
        }
    }

    pub(crate) fn endpoint(self) -> &'static str {
        match self {
            Provider::Responses => "responses",
            Provider::ChatCompletions => "chat/completions",
        }
    }

    /// The API's name in messages to the user.
    pub(crate) fn api_name(self) -> &'static str {
        match self {
            Provider::Responses => "Responses API",
            Provider::ChatCompletions => "Chat Completions",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is neither `responses` nor `chat-completions`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown model provider {0:?}: use \"responses\" (the OpenAI Responses API) or \"chat-completions\" (llama.cpp, vLLM, LM Studio, Ollama)")]
pub struct UnknownProvider(pub String);

impl std::str::FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim() {
            "responses" => Ok(Provider::Responses),
            "chat-completions" => Ok(Provider::ChatCompletions),
            other => Err(UnknownProvider(other.to_string())),
        }
    }
}

/// Reads one attempt's events in its provider's terms.
pub(crate) enum StreamReader {
    Responses(ResponseAccumulator),
    ChatCompletions(ChatAccumulator),
}

impl StreamReader {
    pub(crate) fn new(provider: Provider) -> Self {
        match provider {
            Provider::Responses => StreamReader::Responses(ResponseAccumulator::default()),
            Provider::ChatCompletions => StreamReader::ChatCompletions(ChatAccumulator::default()),
        }
    }

    pub(crate) fn handle(
        &mut self,
        event: &SseEvent,
        on_event: &mut dyn FnMut(ModelEvent<'_>),
    ) -> Result<Step, AttemptError> {
        match self {
            StreamReader::Responses(accumulator) => accumulator.handle(&event.event, &event.data, on_event),
            StreamReader::ChatCompletions(accumulator) => accumulator.handle(&event.data, on_event),
        }
    }

    /// The response a stream that ended without its terminal event still makes, if any.
    pub(crate) fn at_end(&mut self) -> Option<ModelResponse> {
        match self {
            StreamReader::Responses(_) => None,
            StreamReader::ChatCompletions(accumulator) => accumulator.at_end(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelClient, ModelConfig};
    use serde_json::Value;

    #[test]
    fn provider_setting() {
        assert_eq!(Provider::from_setting(None).ok(), Some(Provider::Responses));
        assert_eq!(Provider::from_setting(Some("  ")).ok(), Some(Provider::Responses));
        assert_eq!(Provider::from_setting(Some("chat-completions\n")).ok(), Some(Provider::ChatCompletions));
        assert_eq!(Provider::from_setting(Some("responses")).ok(), Some(Provider::Responses));
        let err = Provider::from_setting(Some("chat")).expect_err("unknown");
        assert!(err.to_string().contains("MINO_PROVIDER") && err.to_string().contains("chat-completions"), "{err}");
        assert_eq!(serde_json::to_value(Provider::ChatCompletions).ok(), Some(Value::from("chat-completions")));
        let config = ModelConfig { base_url: "http://127.0.0.1:9/v1/".into(), ..ModelConfig::default() };
        let client = ModelClient::with_provider(Provider::ChatCompletions, config).unwrap();
        assert_eq!(client.url.as_str(), "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(client.provider(), Provider::ChatCompletions);
    }
}
