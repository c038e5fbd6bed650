//! MCP's streamable HTTP transport over Mino's own HTTP client (reqwest
//! 0.12 on rustls, the one the model client uses): rmcp's transport is
//! generic over [`StreamableHttpClient`], and its built-in implementation
//! would bring a second reqwest and another TLS stack. What the trait asks
//! of a client: a POST of each message (`Accept: application/json,
//! text/event-stream`, the `Mcp-Session-Id` once there is one) answered by
//! nothing (202), one JSON message or an SSE stream; the GET stream the
//! server may push on; a DELETE that ends the session.
//!
//! Bounded: a JSON body and one SSE event at most [`MAX_MESSAGE_BYTES`], an
//! error body's diagnostic at most [`MAX_ERROR_BYTES`], the connection's
//! set-up by [`CONNECT_TIMEOUT`]; the start-up and call limits of the
//! server's table bound the rest, as for stdio; rmcp's transport holds at
//! most 16 messages in its channel and 16 POSTs in flight (its defaults). The configured headers may
//! hold secrets: they are sent and never put into an error, the log or
//! the journal.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use rmcp_sse::{Sse, SseStream};

/// The most one JSON response or one SSE event may hold. A tool's output
/// is cut to Mino's output limit afterwards; this bounds what is read.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// The most of an error response's body kept to say what went wrong.
pub const MAX_ERROR_BYTES: usize = 1024;
/// How long the TCP and TLS set-up of one request may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

/// What went wrong with one request, in words that hold no header value.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{0}")]
    Send(String),
    #[error("the server answered HTTP {status}{detail}")]
    Status { status: StatusCode, detail: String },
    #[error("the server's response was over {0} bytes")]
    TooLarge(usize),
    #[error("a configured header is not valid: {0}")]
    Header(String),
}

impl From<HttpError> for StreamableHttpError<HttpError> {
    fn from(e: HttpError) -> Self {
        StreamableHttpError::Client(e)
    }
}

/// One server's HTTP client: Mino's reqwest with the server's headers.
#[derive(Clone)]
pub struct MinoHttpClient {
    client: reqwest::Client,
    headers: Arc<HeaderMap>,
}

impl MinoHttpClient {
    /// A client sending `headers` with every request. An error names the
    /// header, never its value.
    pub fn new(headers: &std::collections::BTreeMap<String, String>) -> Result<Self, HttpError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HttpError::Header(format!("`{name}` is not a header name")))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| HttpError::Header(format!("the value of `{name}` is not a valid header value")))?;
            value.set_sensitive(true);
            map.insert(header, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // A redirect would carry the configured headers (tokens) to
            // wherever it points: none is followed, the status is reported.
            .redirect(reqwest::redirect::Policy::none())
            // rmcp measured ~40 ms stalls (delayed ACK) when an idle pooled
            // connection whose last body was not read to its end is reused.
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| HttpError::Send(describe(&e)))?;
        Ok(MinoHttpClient { client, headers: Arc::new(map) })
    }

    fn request(
        &self,
        method: reqwest::Method,
        uri: &str,
        session_id: Option<&str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut request = self.client.request(method, uri).headers((*self.headers).clone());
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        // rmcp's own headers (`MCP-Protocol-Version` after `initialize`).
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session_id) = session_id {
            request = request.header(SESSION_ID, session_id);
        }
        request
    }
}

/// A reqwest error in words: what failed and the underlying cause, without
/// the URL (a query may hold a key) and never with a header.
fn describe(e: &reqwest::Error) -> String {
    let what = if e.is_connect() {
        "could not connect to the server"
    } else if e.is_timeout() {
        "the request timed out"
    } else if e.is_body() || e.is_decode() {
        "the response broke off"
    } else {
        "the request failed"
    };
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    match causes.last() {
        Some(cause) => format!("{what}: {cause}"),
        None => what.to_string(),
    }
}

fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
}

/// The body, refused past `limit` (counted as it arrives, whatever the
/// `Content-Length` says).
async fn read_bounded(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, HttpError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(HttpError::TooLarge(limit));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| HttpError::Send(describe(&e)))?;
        if chunk.len() > limit - body.len() {
            return Err(HttpError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A failed response as an error: its status and the start of its body
/// (what a server says about a 404 or a 500 is often the useful part).
async fn status_error(response: reqwest::Response) -> HttpError {
    let status = response.status();
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < MAX_ERROR_BYTES {
        match stream.next().await {
            Some(Ok(chunk)) => body.extend_from_slice(&chunk[..chunk.len().min(MAX_ERROR_BYTES - body.len())]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let detail = if text.is_empty() { String::new() } else { format!(" ({text})") };
    HttpError::Status { status, detail }
}

/// The SSE parse of `bytes`, one event at most `limit` bytes: the size of
/// the event being read is counted as bytes arrive (an event ends at an
/// empty line), so an endless event fails at the limit instead of growing.
fn bounded_sse<S>(bytes: S, limit: usize) -> BoxStream<'static, Result<Sse, SseError>>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
{
    let mut event = 0usize;
    let mut line = 0usize;
    let mut after_cr = false;
    let mut failed = false;
    let counted = bytes
        .map(move |chunk| {
            let chunk = chunk.map_err(|e| HttpError::Send(describe(&e)))?;
            for &b in chunk.iter() {
                match b {
                    b'\n' if after_cr => after_cr = false,
                    b'\r' | b'\n' => {
                        after_cr = b == b'\r';
                        if line == 0 {
                            event = 0;
                        }
                        line = 0;
                    }
                    _ => {
                        after_cr = false;
                        line += 1;
                        event += 1;
                    }
                }
                if event > limit {
                    return Err(HttpError::TooLarge(limit));
                }
            }
            Ok(chunk)
        })
        .take_while(move |item| {
            let go_on = !failed;
            failed |= item.is_err();
            std::future::ready(go_on)
        });
    SseStream::from_bytes_stream(counted).boxed()
}

fn check_auth(status: StatusCode) -> bool {
    matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
}

impl StreamableHttpClient for MinoHttpClient {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<HttpError>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<HttpError>> {
        self.post_message(uri, message, session_id, auth_header, custom_headers).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<HttpError>> {
        let body = serde_json::to_vec(&message)?;
        let had_session = session_id.is_some();
        let response = self
            .request(reqwest::Method::POST, &uri, session_id.as_deref(), auth_header, custom_headers)
            .header(ACCEPT, format!("{JSON}, {EVENT_STREAM}"))
            .header(CONTENT_TYPE, JSON)
            .body(body)
            .send()
            .await
            .map_err(|e| HttpError::Send(describe(&e)))?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        let kind = media_type(response.headers());
        let new_session = response.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
        if !status.is_success() {
            // A JSON-RPC error in a failed response is the server's answer;
            // anything else (an auth failure included) is the status.
            if kind.as_deref() == Some(JSON) && !check_auth(status) {
                let body = read_bounded(response, limits.max_json_response_size.min(MAX_MESSAGE_BYTES)).await?;
                if let Ok(message @ ServerJsonRpcMessage::Error(_)) = serde_json::from_slice(&body) {
                    return Ok(StreamableHttpPostResponse::Json(message, new_session));
                }
                let text = String::from_utf8_lossy(&body[..body.len().min(MAX_ERROR_BYTES)]).into_owned();
                return Err(HttpError::Status { status, detail: format!(" ({})", text.trim()) }.into());
            }
            return Err(status_error(response).await.into());
        }
        match kind.as_deref() {
            Some(EVENT_STREAM) => Ok(StreamableHttpPostResponse::Sse(
                bounded_sse(response.bytes_stream(), limits.max_sse_event_size.min(MAX_MESSAGE_BYTES)),
                new_session,
            )),
            Some(JSON) => {
                let body = read_bounded(response, limits.max_json_response_size.min(MAX_MESSAGE_BYTES)).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(message) => Ok(StreamableHttpPostResponse::Json(message, new_session)),
                    Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                    Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(
                        format!("its JSON answer is not a JSON-RPC message ({e})").into(),
                    )),
                }
            }
            // A notification or a response needs nothing back: some servers
            // answer them 200 with no body or any type.
            _ if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
            other => Err(StreamableHttpError::UnexpectedContentType(other.map(str::to_string))),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<HttpError>> {
        let response = self
            .request(reqwest::Method::DELETE, &uri, Some(&session_id), auth_header, custom_headers)
            .send()
            .await
            .map_err(|e| HttpError::Send(describe(&e)))?;
        // 405: the server keeps no sessions to end.
        if response.status().is_success() || response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        Err(status_error(response).await.into())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<HttpError>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MAX_MESSAGE_BYTES,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<HttpError>> {
        let mut request = self
            .request(reqwest::Method::GET, &uri, session_id.as_deref(), auth_header, custom_headers)
            .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
        if let Some(id) = last_event_id {
            request = request.header(LAST_EVENT_ID, id);
        }
        let response = request.send().await.map_err(|e| HttpError::Send(describe(&e)))?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            return Err(status_error(response).await.into());
        }
        match media_type(response.headers()).as_deref() {
            Some(EVENT_STREAM | JSON) => {
                Ok(bounded_sse(response.bytes_stream(), max_sse_event_size.min(MAX_MESSAGE_BYTES)))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(other.map(str::to_string))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn events(chunks: Vec<&'static str>, limit: usize) -> Vec<Result<Option<String>, String>> {
        let bytes = futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, reqwest::Error>(Bytes::from(c))));
        bounded_sse(bytes, limit).map(|e| e.map(|e| e.data).map_err(|e| e.to_string())).collect().await
    }

    #[tokio::test]
    async fn events_split_across_chunks_are_parsed() {
        let got = events(vec!["data: {\"a\"", ":1}\r\n\r\ndata: two\n", "\n"], 64).await;
        assert_eq!(got, vec![Ok(Some("{\"a\":1}".into())), Ok(Some("two".into()))]);
    }

    #[tokio::test]
    async fn an_event_over_the_limit_ends_the_stream_with_an_error() {
        let got =
            events(vec!["data: small\n\n", "data: ", "xxxxxxxxxxxxxxxxxxxx", "xxxxxxxxxxxxxxxxxxxxxx\n\n"], 32).await;
        assert_eq!(got[0], Ok(Some("small".into())));
        assert_eq!(got.len(), 2, "{got:?}");
        let error = got[1].clone().unwrap_err();
        assert!(error.contains("over 32 bytes"), "{error}");
    }

    #[test]
    fn a_bad_header_is_named_without_its_value() {
        let headers = [("X-Key".to_string(), "s3cret\nvalue".to_string())].into_iter().collect();
        let error = MinoHttpClient::new(&headers).err().expect("refused").to_string();
        assert!(error.contains("X-Key") && !error.contains("s3cret"), "{error}");
    }
}
