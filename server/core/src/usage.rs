//! The tokens a response used, in one shape for both providers.

use serde_json::Value;

/// The tokens one response used, as the service reported them (provider-neutral: the
/// Responses API's `input_tokens`/`output_tokens`, Chat Completions' `prompt_tokens`/
/// `completion_tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    /// Input tokens served from the service's prompt cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Output tokens spent on reasoning, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl std::ops::AddAssign for Usage {
    /// Sums of several responses; a detail counts when any part reported it.
    fn add_assign(&mut self, other: Usage) {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        self.cached_input_tokens = add(self.cached_input_tokens, other.cached_input_tokens);
        self.reasoning_tokens = add(self.reasoning_tokens, other.reasoning_tokens);
    }
}

impl Usage {
    /// `usage` of `response.completed` / `response.incomplete`.
    pub(crate) fn from_responses(usage: &Value) -> Usage {
        Usage::read(
            usage,
            ["input_tokens", "output_tokens"],
            "/input_tokens_details/cached_tokens",
            "/output_tokens_details/reasoning_tokens",
        )
    }

    /// `usage` of the last chat completion chunk (`stream_options.include_usage`).
    pub(crate) fn from_chat(usage: &Value) -> Usage {
        Usage::read(
            usage,
            ["prompt_tokens", "completion_tokens"],
            "/prompt_tokens_details/cached_tokens",
            "/completion_tokens_details/reasoning_tokens",
        )
    }

    fn read(usage: &Value, [input, output]: [&str; 2], cached: &str, reasoning: &str) -> Usage {
        let number = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
        let (input_tokens, output_tokens) = (number(input), number(output));
        Usage {
            input_tokens,
            output_tokens,
            total_tokens: usage
                .get("total_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(input_tokens.saturating_add(output_tokens)),
            cached_input_tokens: usage.pointer(cached).and_then(Value::as_u64),
            reasoning_tokens: usage.pointer(reasoning).and_then(Value::as_u64),
        }
    }
}
