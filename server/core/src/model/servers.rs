//! Where the Chat Completions servers differ, in one place: the fields a
//! request carries ([`REQUEST_FIELDS`]), how each server counts a prompt's
//! tokens ([`TOKENIZE_ENDPOINTS`]), where it says its context window
//! ([`PROPS_WINDOW`], and `catalog::WINDOW_FIELDS` for `GET /models`), and
//! how it says a prompt is too long ([`window_in_message`]; whether an
//! error says so at all, in each server's words, is
//! [`super::names_the_context`], beside the error's classification). The rest of the model client follows these
//! tables instead of testing for a server.
//!
//! Each entry says what it was checked against: a server run here
//! (llama-cpp-python 0.3.36) or the server's documentation and source only.

use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{json, Value};

use super::{error_chain, ModelClient, Provider};

/// Every top-level field of a Chat Completions request, and why each is
/// there. Only fields every server family accepts: a default spelled out
/// (`"tool_choice": "auto"`) is left out, because llama-cpp-python's
/// `chatml-function-calling` handler refuses it when streaming ("Automatic
/// streaming tool choice is not supported", raised after answering 200, so
/// the stream is empty) and every server defaults to it anyway. No output
/// limit (`max_tokens`) is sent either: so a `length` stop always means the
/// context window filled up ([`super::chat`]). (The summary request of a
/// compaction alone carries `max_tokens`, an eighth of a known window,
/// [`ModelClient::respond_summary`]; its `length` stop ends a summary that
/// is kept.)
pub const REQUEST_FIELDS: [(&str, &str); 6] = [
    ("model", "which model answers"),
    ("messages", "the conversation"),
    ("tools", "Mino's tools; llama-cpp-python's chatml-function-calling leaves them out of the prompt unless a tool_choice is given"),
    ("parallel_tool_calls", "several calls in one answer; servers that do not know it ignore it (llama-cpp-python, llama.cpp)"),
    ("stream", "always true"),
    ("stream_options", "include_usage, for the servers that report usage when streaming (vLLM, llama.cpp, Ollama, OpenAI); llama-cpp-python ignores it and reports none"),
];

/// How a server's tokenize endpoint is asked and answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenizeEndpoint {
    /// The server family, for logs and docs.
    pub server: &'static str,
    /// The path at the server's root (the base URL without its `/v1`).
    pub path: &'static str,
    /// The request field that holds the text.
    pub text_field: &'static str,
    /// Whether the request names the model too.
    pub with_model: bool,
    /// Where the answer holds the count.
    pub count: TokenCount,
    /// What it was checked against.
    pub checked: &'static str,
}

/// Where a tokenize answer holds the number of tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCount {
    /// `{"count": n}`.
    Count,
    /// `{"tokens": [...]}`: its length.
    Tokens,
}

/// The tokenize endpoints, tried in this order the first time a count is
/// needed; the first that answers is used from then on, and a server with
/// none gets [`byte_estimate`].
pub const TOKENIZE_ENDPOINTS: [TokenizeEndpoint; 3] = [
    TokenizeEndpoint {
        server: "llama-cpp-python",
        path: "extras/tokenize/count",
        text_field: "input",
        with_model: true,
        count: TokenCount::Count,
        checked: "run here (0.3.36)",
    },
    TokenizeEndpoint {
        server: "vLLM",
        path: "tokenize",
        text_field: "prompt",
        with_model: true,
        count: TokenCount::Count,
        checked: "its documentation only",
    },
    TokenizeEndpoint {
        server: "llama.cpp llama-server",
        path: "tokenize",
        text_field: "content",
        with_model: false,
        count: TokenCount::Tokens,
        checked: "its documentation only",
    },
];

/// llama.cpp's `llama-server` says the window it serves (its `--ctx-size`)
/// at `GET /props`, under this path (checked against its documentation
/// only). `GET /models`' `meta.n_ctx_train` is the window the model was
/// trained with, which a smaller `--ctx-size` overrides.
pub const PROPS_WINDOW: [&str; 2] = ["default_generation_settings", "n_ctx"];

/// Tokens a chat template adds around each message (ChatML's
/// `<|im_start|>role\n` and `<|im_end|>\n` are five): added to a count of
/// the messages' text, which is what a tokenize endpoint is given.
pub const TOKENS_PER_MESSAGE: u64 = 5;

/// The longest a tokenize request or `GET /props` is waited for.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// A request's tokens from its bytes, without the server: one token per
/// three bytes, rounded up. English prose and code average about four bytes
/// a token with the tokenizers of today's models, so this errs towards
/// compacting early rather than overflowing; it is the fallback, used only
/// where the service neither reports usage nor counts tokens.
pub fn byte_estimate(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(3)
}

/// The window a "too long" message states: "maximum context length is 1024
/// tokens" (OpenAI, vLLM, llama-cpp-python), "exceed context window of
/// 1024" (llama-cpp-python's own words), "context size (1024)"/"n_ctx:
/// 1024" (llama.cpp). `None` when it states none.
pub fn window_in_message(message: &str) -> Option<u64> {
    let lower = message.to_ascii_lowercase();
    for marker in ["maximum context length is", "context window of", "context size (", "n_ctx", "n_ctx_slot"] {
        let Some(at) = lower.find(marker) else { continue };
        let rest = &lower[at + marker.len()..];
        let rest = rest.trim_start_matches([' ', ':', '=', '(']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(window) = digits.parse::<u64>() {
            if window > 0 {
                return Some(window);
            }
        }
    }
    None
}

/// The text a tokenize endpoint is given for a Chat Completions body: each
/// message's role, content and tool calls, and the tools' definitions,
/// one per line; and the number of messages (for [`TOKENS_PER_MESSAGE`]).
pub fn prompt_text(body: &Value) -> (String, u64) {
    let mut text = String::new();
    let mut messages = 0u64;
    for message in body.get("messages").and_then(Value::as_array).into_iter().flatten() {
        messages += 1;
        if let Some(role) = message.get("role").and_then(Value::as_str) {
            text.push_str(role);
            text.push('\n');
        }
        match message.get("content") {
            Some(Value::String(content)) => text.push_str(content),
            Some(Value::Null) | None => {}
            Some(other) => text.push_str(&other.to_string()),
        }
        text.push('\n');
        if let Some(calls) = message.get("tool_calls").filter(|c| !c.is_null()) {
            text.push_str(&calls.to_string());
            text.push('\n');
        }
    }
    if let Some(tools) = body.get("tools").filter(|t| !t.is_null()) {
        text.push_str(&tools.to_string());
    }
    (text, messages)
}

/// The server's root: the base URL without a trailing `/v1`.
pub(crate) fn root_url(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base).to_string()
}

/// How many tokens a request holds, and who counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTokens {
    pub tokens: u64,
    /// The server family whose tokenize endpoint counted, or `None` for
    /// [`byte_estimate`].
    pub counted_by: Option<&'static str>,
}

impl ModelClient {
    /// How many tokens `body` (a request body as sent) holds: counted by
    /// the service's tokenize endpoint where it has one (Chat Completions
    /// only; which one is found once per client), else [`byte_estimate`].
    /// Never fails and never waits longer than [`PROBE_TIMEOUT`] per
    /// endpoint tried.
    pub async fn request_tokens(&self, body: &[u8]) -> RequestTokens {
        let fallback = RequestTokens { tokens: byte_estimate(body.len()), counted_by: None };
        if self.provider != Provider::ChatCompletions {
            return fallback;
        }
        let Ok(parsed) = serde_json::from_slice::<Value>(body) else { return fallback };
        let (text, messages) = prompt_text(&parsed);
        let extra = messages.saturating_mul(TOKENS_PER_MESSAGE);
        let known = *self.tokenizer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let candidates: Vec<usize> = match known {
            Some(Some(index)) => vec![index],
            Some(None) => return fallback,
            None => (0..TOKENIZE_ENDPOINTS.len()).collect(),
        };
        for index in candidates {
            let endpoint = &TOKENIZE_ENDPOINTS[index];
            match self.tokenize(endpoint, &text).await {
                Ok(count) => {
                    if known.is_none() {
                        tracing::info!(
                            server = endpoint.server,
                            path = endpoint.path,
                            "the model service counts tokens"
                        );
                    }
                    *self.tokenizer.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Some(index));
                    return RequestTokens { tokens: count.saturating_add(extra), counted_by: Some(endpoint.server) };
                }
                Err(why) => tracing::debug!(server = endpoint.server, path = endpoint.path, %why, "no token count"),
            }
        }
        if known.is_none() {
            tracing::info!("the model service has no tokenize endpoint; estimating request sizes from their bytes");
            *self.tokenizer.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(None);
        }
        fallback
    }

    async fn tokenize(&self, endpoint: &TokenizeEndpoint, text: &str) -> Result<u64, String> {
        let url = format!("{}/{}", root_url(&self.config.base_url), endpoint.path);
        let mut body = serde_json::Map::new();
        body.insert(endpoint.text_field.into(), Value::String(text.to_string()));
        if endpoint.with_model {
            body.insert("model".into(), Value::String(self.config.model.clone()));
        }
        let mut request = self
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .json(&Value::Object(body));
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let answer: Value = self.small_json(request).await?;
        match endpoint.count {
            TokenCount::Count => answer.get("count").and_then(Value::as_u64),
            TokenCount::Tokens => answer.get("tokens").and_then(Value::as_array).map(|t| t.len() as u64),
        }
        .ok_or_else(|| "the answer holds no count".to_string())
    }

    /// The window llama.cpp's `GET /props` states ([`PROPS_WINDOW`]).
    pub(crate) async fn props_window(&self) -> Option<u64> {
        if self.provider != Provider::ChatCompletions {
            return None;
        }
        let url = format!("{}/props", root_url(&self.config.base_url));
        let mut request = self.http.get(url).header(ACCEPT, "application/json");
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        match self.small_json(request).await {
            Ok(props) => {
                let value = PROPS_WINDOW.iter().try_fold(&props, |value, key| value.get(key))?;
                value.as_u64().filter(|w| *w > 0)
            }
            Err(why) => {
                tracing::debug!(%why, "no GET /props");
                None
            }
        }
    }

    /// A small JSON answer (at most 1 MiB, within [`PROBE_TIMEOUT`]).
    async fn small_json(&self, request: reqwest::RequestBuilder) -> Result<Value, String> {
        const LIMIT: usize = 1024 * 1024;
        let read = async {
            let mut response = request.send().await.map_err(|e| error_chain(&e.without_url()))?;
            if !response.status().is_success() {
                return Err(format!("HTTP {}", response.status()));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| error_chain(&e.without_url()))? {
                if body.len() + chunk.len() > LIMIT {
                    return Err("the answer is larger than 1 MiB".to_string());
                }
                body.extend_from_slice(&chunk);
            }
            serde_json::from_slice::<Value>(&body).map_err(|e| format!("not JSON: {e}"))
        };
        match tokio::time::timeout(PROBE_TIMEOUT, read).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
        }
    }
}

/// The body of the request that asks, once, why a stream came back empty:
/// the same request unstreamed and with one output token, so a server that
/// raised its error inside the stream (llama-cpp-python, for a prompt longer
/// than its window) answers it as an HTTP error instead, at the cost of
/// reading the prompt once more.
pub(crate) fn diagnostic_body(body: &[u8]) -> Option<Vec<u8>> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    let fields = value.as_object_mut()?;
    fields.insert("stream".into(), json!(false));
    fields.remove("stream_options");
    fields.insert("max_tokens".into(), json!(1));
    serde_json::to_vec(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{names_the_context, ModelConfig, ModelRequest};

    #[test]
    fn a_chat_request_carries_exactly_the_fields_of_the_table() {
        let client = ModelClient::with_provider(
            Provider::ChatCompletions,
            ModelConfig { base_url: "http://127.0.0.1:9/v1".into(), ..ModelConfig::default() },
        )
        .expect("client");
        let input = [json!({"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]})];
        let body = client.request_body(&ModelRequest { instructions: "Be brief.", input: &input });
        let mut sent: Vec<&str> = body.as_object().expect("object").keys().map(String::as_str).collect();
        let mut table: Vec<&str> = REQUEST_FIELDS.iter().map(|(field, _)| *field).collect();
        sent.sort_unstable();
        table.sort_unstable();
        assert_eq!(sent, table);
        assert!(body.get("tool_choice").is_none() && body.get("max_tokens").is_none(), "{body}");
    }

    #[test]
    fn messages_naming_the_context_and_the_window_they_state() {
        let cases = [
            ("This model's maximum context length is 1024 tokens. However, you requested 1300 tokens (1300 in the messages, None in the completion).", true, Some(1024)),
            ("Requested tokens (1300) exceed context window of 1024", true, Some(1024)),
            ("the request exceeds the available context size, try increasing it", true, None),
            ("request (1300 tokens) exceeds the available context size (1024 tokens)", true, Some(1024)),
            ("input length exceeds the context length", true, None),
            ("Invalid API key", false, None),
            ("Automatic streaming tool choice is not supported", false, None),
        ];
        for (message, names, window) in cases {
            assert_eq!(names_the_context(message), names, "{message}");
            assert_eq!(window_in_message(message), window, "{message}");
        }
    }

    #[test]
    fn the_byte_estimate_rounds_up_and_the_root_drops_v1() {
        assert_eq!(byte_estimate(0), 0);
        assert_eq!(byte_estimate(1), 1);
        assert_eq!(byte_estimate(3000), 1000);
        assert_eq!(root_url("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080");
        assert_eq!(root_url("http://host/api"), "http://host/api");
    }

    #[test]
    fn the_prompt_text_holds_every_message_and_the_tools() {
        let body = json!({"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "done"}
        ], "tools": [{"type": "function", "function": {"name": "bash"}}]});
        let (text, messages) = prompt_text(&body);
        assert_eq!(messages, 3);
        for part in ["Be brief.", "\"arguments\":\"{}\"", "done", "\"name\":\"bash\""] {
            assert!(text.contains(part), "{part} in {text}");
        }
    }

    #[test]
    fn the_diagnostic_request_is_unstreamed_with_one_output_token() {
        let body = br#"{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}"#;
        let diagnostic: Value = serde_json::from_slice(&diagnostic_body(body).expect("json")).expect("json");
        assert_eq!(diagnostic, json!({"model":"m","messages":[],"stream":false,"max_tokens":1}));
    }
}
