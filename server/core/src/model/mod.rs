//! The model client: one streamed model call, with retries, stall detection and cancellation
//! inside, through one of two providers ([`Provider`]): the OpenAI Responses API
//! (`POST {base}/responses`, the default) or Chat Completions (`POST {base}/chat/completions`,
//! for local and self-hosted servers; see `chat.rs`). Both take and return Responses API items,
//! so the journal does not depend on the provider.
//!
//! [`ModelClient::respond`] sends the request built by [`ModelClient::request_body`], streams
//! text deltas to a callback as they arrive and returns the finished output items. Retryable
//! failures (network errors, 429, 5xx, a cut or stalled stream, `response.failed` with a
//! transient code) are retried with exponential backoff that honours the server's hints; the
//! callback hears [`ModelEvent::Retrying`] before each retry, after which any text streamed by
//! the failed attempt is void.

mod catalog;
mod chat;
mod provider;
mod request;
mod retry;
mod servers;
mod sse;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::usage::Usage;
pub use catalog::{
    model_list, reported_window, ListedModel, ModelList, ModelSource, MODEL_LIST_LIMIT, MODEL_LIST_TIMEOUT,
    WINDOW_FIELDS,
};
pub use chat::{chat_bash_tool, chat_messages, chat_tools, CONTEXT_WINDOW_FULL};
pub use provider::{Provider, UnknownProvider};
pub use request::{bash_tool, tools};
pub use retry::{names_the_context, parse_retry_hint, CONTEXT_LENGTH_EXCEEDED};
pub use servers::{
    byte_estimate, window_in_message, RequestTokens, TokenCount, TokenizeEndpoint, PROPS_WINDOW, REQUEST_FIELDS,
    TOKENIZE_ENDPOINTS, TOKENS_PER_MESSAGE,
};
pub use sse::{parse_sse_body, parse_sse_events, SseEvent, MAX_EVENT_BYTES};

use provider::StreamReader;
use retry::AttemptError;
use sse::{SseError, Step};

/// The OpenAI API, used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model used when `MINO_MODEL` is not set.
pub const DEFAULT_MODEL: &str = "gpt-5.1";

/// Where and how to reach the model.
#[derive(Clone)]
pub struct ModelConfig {
    /// `OPENAI_BASE_URL` or [`DEFAULT_BASE_URL`]; a trailing slash is tolerated.
    pub base_url: String,
    /// `OPENAI_API_KEY`. Never logged: `Debug` shows it redacted.
    pub api_key: Option<String>,
    /// `MINO_MODEL` or [`DEFAULT_MODEL`].
    pub model: String,
    pub retry: RetryPolicy,
    /// No SSE bytes (or no response headers) for this long is a retryable stream failure.
    pub stall_timeout: Duration,
    /// Limit on establishing the TCP/TLS connection.
    pub connect_timeout: Duration,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: None,
            model: DEFAULT_MODEL.to_string(),
            retry: RetryPolicy::default(),
            stall_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

impl fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("retry", &self.retry)
            .field("stall_timeout", &self.stall_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl ModelConfig {
    /// `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `MINO_MODEL` as `lookup` gives
    /// them (the environment, read by [`crate::config::Config`]); unset or
    /// blank variables give the defaults. Everything else is
    /// [`ModelConfig::default`].
    pub(crate) fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let var = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let defaults = ModelConfig::default();
        ModelConfig {
            base_url: var(crate::settings::BASE_URL.env).unwrap_or(defaults.base_url),
            api_key: var(crate::settings::API_KEY.env),
            model: var(crate::settings::MODEL.env).unwrap_or(defaults.model),
            ..defaults
        }
    }

    fn uses_default_base_url(&self) -> bool {
        self.base_url.trim_end_matches('/') == DEFAULT_BASE_URL
    }
}

/// How often and how patiently to retry.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 4, so at most 5 requests).
    pub max_retries: u32,
    /// The first backoff (default 200 ms); doubled on each retry, ±10 % jitter.
    pub initial_backoff: Duration,
    /// Cap on any wait, the server's hints included (default 30 s).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// One request: the instructions and the input items (messages, function calls and their
/// outputs, reasoning items), already in wire form.
#[derive(Clone, Copy, Debug)]
pub struct ModelRequest<'a> {
    pub instructions: &'a str,
    pub input: &'a [Value],
}

/// The bytes of a request body around its input items
/// ([`ModelClient::body_frame`]): `head`, the items separated by commas,
/// then `tail`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyFrame {
    pub provider: Provider,
    /// Through the `[` that opens the items (`input`, or Chat Completions'
    /// `messages` with the `system` message already in it).
    pub head: Vec<u8>,
    /// Whether `head` already holds an item (the next one needs a comma).
    pub has_leading_items: bool,
    /// From the `]` that closes the items to the end of the body.
    pub tail: Vec<u8>,
}

impl BodyFrame {
    /// Replayed input items (Responses API items) as this body's array
    /// holds them: as they are, or as Chat Completions messages. A run of
    /// items that starts with a user message translates the same alone as
    /// within the whole input (`chat_messages` joins only assistant output
    /// that follows assistant output), so a turn's items can be written once.
    pub fn wire_items(&self, items: Vec<Value>) -> Vec<Value> {
        match self.provider {
            Provider::Responses => items,
            Provider::ChatCompletions => chat_messages("", &items),
        }
    }
}

pub(crate) fn encode_error(err: serde_json::Error) -> ModelError {
    ModelError::fatal(format!("Could not encode the request: {err}"))
}

/// What [`ModelClient::respond`] reports while it works.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ModelEvent<'a> {
    /// A piece of the assistant's text, as it arrives.
    TextDelta(&'a str),
    /// A retry is about to happen after `delay`; any text streamed in the failed attempt is void.
    /// `attempt` is the number of the retry (1 for the first retry, so request number `attempt + 1`).
    Retrying { attempt: u32, delay: Duration, reason: &'a str },
}

/// One finished model response.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// Finished output items exactly as received in `response.output_item.done`, in output_index order
    /// (messages, function_call, reasoning with encrypted_content...). Ids are kept here; the context builder strips them.
    pub items: Vec<Value>,
    /// Some(reason) when the response was cut short: `response.incomplete`'s reason
    /// (`max_output_tokens`, `content_filter`), or Chat Completions' `finish_reason` `length`
    /// (as `max_output_tokens`) or `content_filter`.
    pub incomplete: Option<String>,
    /// The tokens used, when the service reported them.
    pub usage: Option<Usage>,
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the model request was cancelled")]
    Cancelled,
    #[error("OPENAI_API_KEY is not set: export it, or point OPENAI_BASE_URL at a compatible server")]
    MissingApiKey,
    /// Not retried: 400 (context_length_exceeded and other bad requests), 401, 403, 404, insufficient_quota, response.failed/error with a non-retryable code.
    #[error("{reason}")]
    Fatal { reason: String, code: Option<String>, status: Option<u16> },
    /// Retryable failures that did not succeed within max_retries.
    #[error("{reason} (gave up after {attempts} attempts)")]
    RetriesExhausted { reason: String, attempts: u32 },
}

impl ModelError {
    fn fatal(reason: impl Into<String>) -> Self {
        ModelError::Fatal { reason: reason.into(), code: None, status: None }
    }
}

/// A built [`BodyFrame`] with the instructions and the tool list it was
/// built for (the MCP servers' tools can change between requests).
type CachedFrame = (String, Arc<Vec<Value>>, BodyFrame);

/// A client for the model, through one [`Provider`]. Cheap to clone (the HTTP connection pool
/// is shared).
#[derive(Clone)]
pub struct ModelClient {
    provider: Provider,
    config: ModelConfig,
    http: reqwest::Client,
    url: reqwest::Url,
    authorization: Option<HeaderValue>,
    /// The last [`BodyFrame`] built and the instructions it was built for:
    /// the frame depends only on them and on this client's provider and
    /// configuration, which never change for a client (a chosen model is a
    /// new client, [`ModelClient::with_model`]). Shared by clones, so each
    /// request of a turn does not rebuild the tool schemas.
    frame_cache: Arc<std::sync::Mutex<Option<CachedFrame>>>,
    /// The context window the service's `GET /models` reports for this
    /// client's model, asked once ([`ModelClient::reported_context_window`]);
    /// shared by clones, so the background fetch and a turn share one answer.
    reported_window: Arc<tokio::sync::OnceCell<Option<u64>>>,
    /// The window an error of the service stated ("maximum context length
    /// is 1024 tokens", llama.cpp's `n_ctx`), 0 until one did: it wins over
    /// the list's, being what the server enforces.
    learned_window: Arc<std::sync::atomic::AtomicU64>,
    /// Which of [`TOKENIZE_ENDPOINTS`] the service answers: unknown until
    /// the first count (`None`), then `Some(None)` for none.
    tokenizer: Arc<std::sync::Mutex<Option<Option<usize>>>>,
}

impl fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelClient")
            .field("provider", &self.provider)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ModelClient {
    /// Builds the client (one HTTP client, reused for every request). Fails with
    /// [`ModelError::Fatal`] when `base_url` is not a usable URL or the key cannot be sent as
    /// a header. A missing key is reported by [`ModelClient::respond`] (as
    /// [`ModelError::MissingApiKey`]), so a server can start and tell the user in the chat.
    pub fn new(config: ModelConfig) -> Result<Self, ModelError> {
        ModelClient::with_provider(Provider::Responses, config)
    }

    /// Like [`ModelClient::new`], through `provider`.
    pub fn with_provider(provider: Provider, config: ModelConfig) -> Result<Self, ModelError> {
        let endpoint = format!("{}/{}", config.base_url.trim_end_matches('/'), provider.endpoint());
        let url = reqwest::Url::parse(&endpoint).map_err(|err| {
            ModelError::fatal(format!("OPENAI_BASE_URL is not a usable URL ({:?}): {err}", config.base_url))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ModelError::fatal(format!(
                "OPENAI_BASE_URL must be an http or https URL, not {:?}",
                config.base_url
            )));
        }
        let authorization = match &config.api_key {
            None => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    ModelError::fatal(
                        "OPENAI_API_KEY contains characters that cannot be sent in an HTTP header; check its value",
                    )
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let mut builder = reqwest::Client::builder().connect_timeout(config.connect_timeout);
        if url.scheme() == "http" {
            // A plain-http endpoint is a local server, and some (model servers among them)
            // leave Nagle's algorithm on: each small SSE write waits for the ACK of the one
            // before. On a kept-alive connection Linux delays those ACKs (up to 40 ms) because
            // Mino sends its next request moments after reading the previous response, which
            // held the first ~40 deltas of a paced stream together for up to 43 ms. A fresh
            // connection starts in quick-ACK mode; without TLS it costs one local handshake.
            // (reqwest gives no access to the socket for TCP_QUICKACK.) docs/performance.md,
            // "Endpoints without TCP_NODELAY".
            builder = builder.pool_max_idle_per_host(0);
        }
        let http =
            builder.build().map_err(|err| ModelError::fatal(format!("Could not set up the HTTP client: {err}")))?;
        Ok(ModelClient {
            provider,
            config,
            http,
            url,
            authorization,
            frame_cache: Default::default(),
            reported_window: Default::default(),
            learned_window: Default::default(),
            tokenizer: Default::default(),
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The same service, naming `model` in its requests (a session's choice).
    pub fn with_model(&self, model: &str) -> ModelClient {
        let mut client = self.clone();
        client.config.model = model.to_string();
        client.frame_cache = Default::default();
        client.reported_window = Default::default();
        client.learned_window = Default::default();
        client
    }

    /// Remembers the window an error of the service stated.
    fn learn_window(&self, window: u64) {
        let previous = self.learned_window.swap(window, std::sync::atomic::Ordering::Relaxed);
        if previous != window {
            tracing::info!(model = %self.config.model, window, "the model service stated its context window in an error");
        }
    }

    /// The window known without asking: the one an error of the service
    /// stated, else what [`ModelClient::reported_context_window`] found if
    /// it has been asked.
    pub fn known_context_window(&self) -> Option<u64> {
        self.learned_context_window().or_else(|| self.reported_window.get().copied().flatten())
    }

    /// The window an error of the service stated, if one did.
    pub fn learned_context_window(&self) -> Option<u64> {
        Some(self.learned_window.load(std::sync::atomic::Ordering::Relaxed)).filter(|w| *w > 0)
    }

    /// The exact JSON body sent (public so tests and docs can show it).
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        match self.provider {
            Provider::Responses => request::body(&self.config.model, request),
            Provider::ChatCompletions => chat::body(&self.config.model, request),
        }
    }

    /// What surrounds the input items in [`ModelClient::request_body`]'s
    /// bytes, so a body can be written from items serialised earlier
    /// (`context::RequestCache`): the same bytes as serialising the whole
    /// body, written without rebuilding the history each time.
    pub fn body_frame(&self, instructions: &str) -> Result<BodyFrame, ModelError> {
        self.body_frame_with_tools(instructions, &Arc::new(Vec::new()))
    }

    /// [`ModelClient::body_frame`] offering `extra_tools` (the session's MCP
    /// tools, in the Responses API's flat form) after Mino's own.
    pub fn body_frame_with_tools(
        &self,
        instructions: &str,
        extra_tools: &Arc<Vec<Value>>,
    ) -> Result<BodyFrame, ModelError> {
        let mut cache = self.frame_cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cached_for, cached_tools, frame)) = cache.as_ref() {
            if cached_for == instructions && (Arc::ptr_eq(cached_tools, extra_tools) || cached_tools == extra_tools) {
                return Ok(frame.clone());
            }
        }
        let frame = self.build_body_frame(instructions, extra_tools)?;
        *cache = Some((instructions.to_string(), extra_tools.clone(), frame.clone()));
        Ok(frame)
    }

    fn build_body_frame(&self, instructions: &str, extra_tools: &[Value]) -> Result<BodyFrame, ModelError> {
        // The array's place is found in the body serialised with no input,
        // so the fields around it (and their order, whichever order
        // serde_json keeps) are exactly the whole body's.
        let (key, leading) = match self.provider {
            Provider::Responses => ("input", Vec::new()),
            Provider::ChatCompletions => ("messages", chat_messages(instructions, &[])),
        };
        let mut body = self.request_body(&ModelRequest { instructions, input: &[] });
        if let Some(fields) = body.as_object_mut() {
            fields.insert(key.to_string(), Value::Array(Vec::new()));
            if let Some(Value::Array(tools)) = fields.get_mut("tools") {
                for tool in extra_tools {
                    tools.push(match self.provider {
                        Provider::Responses => tool.clone(),
                        Provider::ChatCompletions => chat::chat_tool(tool),
                    });
                }
            }
        }
        let bytes = serde_json::to_vec(&body).map_err(encode_error)?;
        // A key followed by `:[]` cannot occur inside a JSON string (its
        // quotes would be escaped), and the body has one such member.
        let pattern = format!("\"{key}\":[]");
        let mut found = bytes.windows(pattern.len()).enumerate().filter(|(_, w)| *w == pattern.as_bytes());
        let (Some((at, _)), None) = (found.next(), found.next()) else {
            return Err(ModelError::fatal(format!(
                "Could not encode the request: no single `{key}` array in its body"
            )));
        };
        let open = at + pattern.len() - 1;
        let mut head = bytes[..open].to_vec();
        for (index, item) in leading.iter().enumerate() {
            if index > 0 {
                head.push(b',');
            }
            serde_json::to_writer(&mut head, item).map_err(encode_error)?;
        }
        Ok(BodyFrame {
            provider: self.provider,
            head,
            has_leading_items: !leading.is_empty(),
            tail: bytes[open..].to_vec(),
        })
    }

    /// [`ModelClient::request_body`] without tools (`tools`, `tool_choice`,
    /// `parallel_tool_calls` left out), for a request whose answer must be
    /// text: the summary of a compaction.
    pub fn request_body_without_tools(&self, request: &ModelRequest<'_>) -> Value {
        let mut body = self.request_body(request);
        if let Some(fields) = body.as_object_mut() {
            for key in ["tools", "tool_choice", "parallel_tool_calls"] {
                fields.remove(key);
            }
        }
        body
    }

    /// [`ModelClient::request_body`] as the bytes sent.
    fn request_bytes(&self, request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
        match self.provider {
            Provider::Responses => request::body_bytes(&self.config.model, request),
            Provider::ChatCompletions => serde_json::to_vec(&chat::body(&self.config.model, request)),
        }
    }

    /// One model response, with retries inside. `on_event` is called for every text delta as
    /// it arrives, and once before each retry.
    pub async fn respond(
        &self,
        request: &ModelRequest<'_>,
        on_event: &mut (dyn FnMut(ModelEvent<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        self.respond_to(self.request_bytes(request), on_event, cancel).await
    }

    /// [`ModelClient::respond`] offering the model no tools
    /// ([`ModelClient::request_body_without_tools`]), through either provider.
    pub async fn respond_without_tools(
        &self,
        request: &ModelRequest<'_>,
        on_event: &mut (dyn FnMut(ModelEvent<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        self.respond_to(serde_json::to_vec(&self.request_body_without_tools(request)), on_event, cancel).await
    }

    /// The summary request of a compaction: [`ModelClient::respond_without_tools`],
    /// and under Chat Completions with `max_tokens` set to `output_limit`
    /// when given, so a summary leaves room in a small window for the
    /// conversation it stands for (a `length` stop then ends a summary that
    /// is kept, cut short, by the caller).
    pub async fn respond_summary(
        &self,
        request: &ModelRequest<'_>,
        output_limit: Option<u64>,
        on_event: &mut (dyn FnMut(ModelEvent<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let mut body = self.request_body_without_tools(request);
        if let (Provider::ChatCompletions, Some(limit), Some(fields)) =
            (self.provider, output_limit, body.as_object_mut())
        {
            fields.insert("max_tokens".into(), Value::from(limit));
        }
        self.respond_to(serde_json::to_vec(&body), on_event, cancel).await
    }

    /// `body`: the request encoded (or why it could not be).
    async fn respond_to(
        &self,
        body: serde_json::Result<Vec<u8>>,
        on_event: &mut (dyn FnMut(ModelEvent<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let body = body.map_err(encode_error)?;
        self.respond_with_body(Bytes::from(body), on_event, cancel).await
    }

    /// [`ModelClient::respond`] sending `body`, the request's bytes as
    /// written by `context::RequestCache` (from [`ModelClient::body_frame`]).
    /// Retries send the same bytes without copying them.
    pub async fn respond_with_body(
        &self,
        body: Bytes,
        on_event: &mut (dyn FnMut(ModelEvent<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        if self.authorization.is_none() && self.config.uses_default_base_url() {
            return Err(ModelError::MissingApiKey);
        }
        let policy = &self.config.retry;
        let mut retries: u32 = 0;
        // The last failure that is retried only while it changes.
        let mut last_repeatable: Option<String> = None;
        loop {
            let outcome = self.attempt(&body, on_event, cancel).await;
            let (reason, hint) = match outcome {
                Ok(response) => return Ok(response),
                Err(AttemptError::Cancelled) => return Err(ModelError::Cancelled),
                Err(AttemptError::Fatal(err)) => {
                    let err = match err {
                        ModelError::Fatal { reason, code, status } => {
                            ModelError::Fatal { reason: self.scrub(reason), code, status }
                        }
                        other => other,
                    };
                    tracing::warn!(error = %err, "model request failed");
                    return Err(err);
                }
                Err(AttemptError::Retryable { reason, hint, once }) => {
                    let reason = self.scrub(reason);
                    if once && last_repeatable.as_deref() == Some(reason.as_str()) {
                        // The same answer twice: what the service does, not a
                        // passing fault; more attempts would only repeat it.
                        tracing::warn!(%reason, attempts = retries + 1, "the same model failure twice; not retried");
                        return Err(ModelError::Fatal {
                            reason: format!("{reason} (the same on {} attempts in a row)", retries + 1),
                            code: Some(EMPTY_STREAM.to_string()),
                            status: None,
                        });
                    }
                    last_repeatable = once.then(|| reason.clone());
                    (reason, hint)
                }
            };
            if retries >= policy.max_retries {
                tracing::warn!(%reason, attempts = retries + 1, "model request failed; giving up");
                return Err(ModelError::RetriesExhausted { reason, attempts: retries + 1 });
            }
            let delay = retry::backoff_delay(policy, retries, hint);
            retries += 1;
            tracing::info!(%reason, attempt = retries, ?delay, "model request failed; retrying");
            on_event(ModelEvent::Retrying { attempt: retries, delay, reason: &reason });
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// One HTTP request and its event stream.
    async fn attempt(
        &self,
        body: &Bytes,
        on_event: &mut (dyn FnMut(ModelEvent<'_>) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, AttemptError> {
        let stall = self.config.stall_timeout;
        let mut builder = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            // A retry sends the same bytes again without copying them.
            .body(body.clone());
        if let Some(authorization) = &self.authorization {
            builder = builder.header(AUTHORIZATION, authorization.clone());
        }

        let sent = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(AttemptError::Cancelled),
            sent = tokio::time::timeout(stall, builder.send()) => sent,
        };
        let response = match sent {
            Err(_) => {
                return Err(AttemptError::retryable(format!(
                    "The model service at {} did not answer within {}",
                    self.config.base_url,
                    seconds(stall)
                )))
            }
            Ok(Err(err)) => return Err(self.network_error(err)),
            Ok(Ok(response)) => response,
        };

        let status = response.status();
        if !status.is_success() {
            return Err(self.http_error(response, cancel).await);
        }
        if let Some(content_type) = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) {
            let content_type = content_type.to_ascii_lowercase();
            if content_type.starts_with("application/json") || content_type.starts_with("text/html") {
                return Err(AttemptError::Fatal(ModelError::fatal(format!(
                    "The model service at {} answered with {content_type} instead of an event stream; \
                     does OPENAI_BASE_URL point at a {} server?",
                    self.config.base_url,
                    self.provider.api_name()
                ))));
            }
        }

        let mut events = Box::pin(sse::sse_events(stall_guarded(response.bytes_stream(), stall), MAX_EVENT_BYTES));
        let mut reader = StreamReader::new(self.provider);
        let mut any_event = false;
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(AttemptError::Cancelled),
                next = events.next() => next,
            };
            match next {
                None if !any_event => return Err(self.empty_stream(body, cancel).await),
                None => {
                    return match reader.at_end() {
                        Some(response) => Ok(response),
                        None => {
                            Err(AttemptError::retryable("The model's stream ended before the response was finished"))
                        }
                    }
                }
                Some(Err(SseError::Transport(StreamFailure::Stalled))) => {
                    return Err(AttemptError::retryable(format!(
                        "The model's stream stalled (no data for {})",
                        seconds(stall)
                    )))
                }
                Some(Err(SseError::Transport(StreamFailure::Network(err)))) => {
                    return Err(AttemptError::retryable(format!(
                        "The model's stream broke off: {}",
                        error_chain(&err.without_url())
                    )))
                }
                Some(Err(SseError::TooLarge { limit })) => {
                    // Not retried: a stream that big is a broken server or proxy far more likely
                    // than a model's answer, and a retry would be billed and read all of it again.
                    tracing::warn!(limit, "model stream exceeded the event size bound");
                    return Err(AttemptError::Fatal(ModelError::fatal(format!(
                        "The model's stream failed: the model service at {} sent more than {} MiB without \
                         completing an event; Mino stops reading there to bound its memory",
                        self.config.base_url,
                        limit / (1024 * 1024)
                    ))));
                }
                Some(Err(SseError::Malformed(err))) => {
                    tracing::debug!(error = %err, "unreadable SSE stream from the model");
                    return Err(AttemptError::retryable(format!(
                        "The model service sent an unreadable event stream: {err}"
                    )));
                }
                Some(Ok(event)) => {
                    any_event = true;
                    match reader.handle(&event, &mut *on_event)? {
                        Step::Continue => {}
                        Step::Done(response) => return Ok(response),
                    }
                }
            }
        }
    }

    /// A 200 whose stream held no event at all. Under Chat Completions the
    /// same request is sent once more unstreamed, with one output token
    /// ([`servers::diagnostic_body`]): a server that raised its error inside
    /// the stream (llama-cpp-python, for a prompt longer than its window)
    /// answers that one with the error, which is then this attempt's
    /// (`context_length_exceeded`, say). Otherwise the empty stream is the
    /// failure, retried once ([`EMPTY_STREAM`]).
    async fn empty_stream(&self, body: &Bytes, cancel: &CancellationToken) -> AttemptError {
        let empty = AttemptError::Retryable {
            reason: format!(
                "The model service at {} answered with an empty stream; its log may say why",
                self.config.base_url
            ),
            hint: None,
            once: true,
        };
        if self.provider != Provider::ChatCompletions {
            return empty;
        }
        let Some(diagnostic) = servers::diagnostic_body(body) else { return empty };
        let mut builder = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(diagnostic);
        if let Some(authorization) = &self.authorization {
            builder = builder.header(AUTHORIZATION, authorization.clone());
        }
        let sent = tokio::select! {
            biased;
            _ = cancel.cancelled() => return AttemptError::Cancelled,
            sent = tokio::time::timeout(self.config.stall_timeout, builder.send()) => sent,
        };
        match sent {
            Ok(Ok(response)) if !response.status().is_success() => {
                let why = self.http_error(response, cancel).await;
                tracing::info!(?why, "an empty stream, explained by the same request unstreamed");
                match why {
                    // A transient failure of the second request says nothing of the first.
                    AttemptError::Retryable { .. } => empty,
                    explained => explained,
                }
            }
            _ => empty,
        }
    }

    fn network_error(&self, err: reqwest::Error) -> AttemptError {
        let err = err.without_url();
        let detail = error_chain(&err);
        if err.is_builder() {
            return AttemptError::Fatal(ModelError::fatal(format!(
                "Could not build the request to {}: {detail}",
                self.config.base_url
            )));
        }
        AttemptError::retryable(format!("Could not reach the model service at {}: {detail}", self.config.base_url))
    }

    /// A non-2xx answer: read `{"error":{"message","type","param","code"}}` and classify it.
    async fn http_error(&self, response: reqwest::Response, cancel: &CancellationToken) -> AttemptError {
        let status = response.status();
        let hint = retry::header_hint(response.headers());
        let text = tokio::select! {
            biased;
            _ = cancel.cancelled() => return AttemptError::Cancelled,
            text = tokio::time::timeout(self.config.stall_timeout, response.text()) => text,
        };
        let text = match text {
            Ok(Ok(text)) => text,
            _ => String::new(),
        };
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        let error = parsed.as_ref().and_then(|v| v.get("error"));
        let code =
            error.and_then(|e| e.get("code")).and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_string);
        let message = match error.and_then(|e| e.get("message")).and_then(Value::as_str) {
            Some(message) => message.to_string(),
            None => {
                let text = text.trim();
                if text.is_empty() {
                    status.canonical_reason().unwrap_or("no message").to_string()
                } else {
                    truncate(text, 300)
                }
            }
        };
        let message = self.scrub(message);
        // llama.cpp's `llama-server` states the window in its error (`n_ctx`);
        // others in the message ("maximum context length is 1024 tokens").
        let stated = error.and_then(|e| e.get("n_ctx")).and_then(Value::as_u64).filter(|w| *w > 0);
        if status.as_u16() == 400 || code.as_deref() == Some(CONTEXT_LENGTH_EXCEEDED) {
            if let Some(window) = stated.or_else(|| servers::window_in_message(&message)) {
                if code.as_deref() == Some(CONTEXT_LENGTH_EXCEEDED) || names_the_context(&message) {
                    self.learn_window(window);
                }
            }
        }
        retry::classify(Some(status.as_u16()), code, &message, hint)
    }

    /// Removes the API key from text that came from elsewhere (a server echoing it back).
    fn scrub(&self, text: String) -> String {
        match &self.config.api_key {
            Some(key) if key.len() >= 4 && text.contains(key.as_str()) => text.replace(key.as_str(), "<redacted>"),
            _ => text,
        }
    }
}

/// The code of a failure that came back the same twice in a row (an empty
/// stream), on [`ModelError::Fatal`].
pub const EMPTY_STREAM: &str = "empty_stream";

/// Why the byte stream under the SSE parser stopped.
#[derive(Debug)]
enum StreamFailure {
    Stalled,
    Network(reqwest::Error),
}

impl fmt::Display for StreamFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamFailure::Stalled => f.write_str("stalled"),
            StreamFailure::Network(err) => write!(f, "{err}"),
        }
    }
}

impl std::error::Error for StreamFailure {}

/// The response body's bytes, failing with `Stalled` when none arrive for `stall`; ends after
/// the first failure.
fn stall_guarded<S, B>(bytes: S, stall: Duration) -> impl Stream<Item = Result<B, StreamFailure>>
where
    S: Stream<Item = Result<B, reqwest::Error>>,
{
    futures::stream::unfold(Some(Box::pin(bytes)), move |state| async move {
        let mut bytes = state?;
        match tokio::time::timeout(stall, bytes.next()).await {
            Err(_) => Some((Err(StreamFailure::Stalled), None)),
            Ok(None) => None,
            Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(bytes))),
            Ok(Some(Err(err))) => Some((Err(StreamFailure::Network(err)), None)),
        }
    })
}

/// "60 s", "0.3 s".
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// An error and its sources, e.g. "client error (Connect): tcp connect error: Connection refused".
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    text
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_lookup_and_redacted_debug() {
        let vars = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1/".to_string()),
            "OPENAI_API_KEY" => Some("sk-secret-value\n".to_string()),
            "MINO_MODEL" => Some("  ".to_string()),
            _ => None,
        };
        let config = ModelConfig::from_lookup(vars);
        assert_eq!(config.base_url, "http://127.0.0.1:9/v1/");
        assert_eq!(config.api_key.as_deref(), Some("sk-secret-value"));
        assert_eq!(config.model, DEFAULT_MODEL);
        assert!(!config.uses_default_base_url());
        let debug = format!("{config:?}");
        assert!(!debug.contains("sk-secret"), "{debug}");
        assert!(debug.contains("<redacted>"));
        let client = ModelClient::new(config).unwrap();
        assert_eq!(client.url.as_str(), "http://127.0.0.1:9/v1/responses");
        assert!(!format!("{client:?}").contains("sk-secret"));

        let defaults = ModelConfig::from_lookup(|_| None);
        assert_eq!(defaults.base_url, DEFAULT_BASE_URL);
        assert_eq!(defaults.api_key, None);
        assert!(defaults.uses_default_base_url());
    }

    #[test]
    fn bad_urls_are_fatal_at_construction() {
        let config = ModelConfig { base_url: "not a url".into(), ..ModelConfig::default() };
        assert!(matches!(ModelClient::new(config), Err(ModelError::Fatal { .. })));
        let config = ModelConfig { base_url: "ftp://example.com".into(), ..ModelConfig::default() };
        assert!(matches!(ModelClient::new(config), Err(ModelError::Fatal { .. })));
    }

    #[test]
    fn scrub_removes_the_key() {
        let config = ModelConfig { api_key: Some("sk-abcdef".into()), ..ModelConfig::default() };
        let client = ModelClient::new(config).unwrap();
        assert_eq!(client.scrub("bad key sk-abcdef given".into()), "bad key <redacted> given");
    }
}
