//! Retry practice: which failures are retried, how long to wait, and the server's hints.

use std::time::Duration;

use super::{ModelError, RetryPolicy};

/// How one attempt failed.
#[derive(Debug)]
pub(crate) enum AttemptError {
    Cancelled,
    /// Not worth retrying; returned to the caller as is.
    Fatal(ModelError),
    /// Worth another attempt. `hint` is the server's own suggested wait, if it gave one.
    /// `once`: a failure that says more about the service than about the moment (an
    /// empty stream); when the next attempt fails with the same reason, retrying stops.
    Retryable {
        reason: String,
        hint: Option<Duration>,
        once: bool,
    },
}

impl AttemptError {
    pub(crate) fn retryable(reason: impl Into<String>) -> Self {
        AttemptError::Retryable { reason: reason.into(), hint: None, once: false }
    }
}

/// The service's code for a request longer than the model's context window
/// (the Responses API's HTTP 400 body or `response.failed`, Chat
/// Completions' error object); also given to a refusal a server words
/// without it ([`names_the_context`]).
pub const CONTEXT_LENGTH_EXCEEDED: &str = "context_length_exceeded";

/// The wait before retry number `retry` (0 for the first retry): the server's hint when it
/// gave one, else `initial * 2^retry` with ±10 % jitter; either way at most `max_backoff`.
pub(crate) fn backoff_delay(policy: &RetryPolicy, retry: u32, hint: Option<Duration>) -> Duration {
    if let Some(hint) = hint {
        return hint.min(policy.max_backoff);
    }
    let factor = 2f64.powi(retry.min(60) as i32) * (0.9 + fastrand::f64() * 0.2);
    Duration::try_from_secs_f64(policy.initial_backoff.as_secs_f64() * factor)
        .unwrap_or(policy.max_backoff)
        .min(policy.max_backoff)
}

/// Reads a wait hint out of an error message: "Please try again in 11.054s",
/// "try again in 250ms", "Try again in 1m30s". None when there is no readable hint.
pub fn parse_retry_hint(message: &str) -> Option<Duration> {
    const NEEDLE: &str = "try again in ";
    let lower = message.to_ascii_lowercase();
    let start = lower.find(NEEDLE)? + NEEDLE.len();
    let mut rest = &lower[start..];
    let mut total = 0f64;
    let mut found = false;
    loop {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if number_len == 0 {
            break;
        }
        let Ok(value) = rest[..number_len].parse::<f64>() else {
            break;
        };
        let after = &rest[number_len..];
        let (unit_seconds, unit_len) = if after.starts_with("ms") {
            (0.001, 2)
        } else if after.starts_with('s') {
            (1.0, 1)
        } else if after.starts_with('m') {
            (60.0, 1)
        } else if after.starts_with('h') {
            (3600.0, 1)
        } else {
            break;
        };
        total += value * unit_seconds;
        found = true;
        rest = &after[unit_len..];
    }
    if !found {
        return None;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// The wait a response's headers ask for: `retry-after-ms` (OpenAI) or `Retry-After` in
/// seconds. An HTTP-date `Retry-After` is not read (exponential backoff applies instead).
pub(crate) fn header_hint(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let read = |name: &str| -> Option<f64> {
        let value = headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = read("retry-after-ms") {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    read("retry-after").and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// Whether a `response.failed` / `error` event code is worth retrying.
pub(crate) fn is_retryable_code(code: Option<&str>) -> bool {
    match code {
        None => true,
        Some(code) => {
            matches!(code, "rate_limit_exceeded" | "server_error" | "overloaded" | "server_overloaded" | "slow_down")
        }
    }
}

/// Classifies an error the service reported, either as an HTTP status (`status` is Some)
/// or inside the event stream (`status` is None).
pub(crate) fn classify(
    status: Option<u16>,
    code: Option<String>,
    message: &str,
    hint: Option<Duration>,
) -> AttemptError {
    // A server that words a too-long prompt without OpenAI's code (llama.cpp,
    // vLLM, Ollama, LM Studio) is refusing it all the same.
    let code = match (status, code) {
        (Some(400 | 413) | None, code)
            if code.as_deref() != Some(CONTEXT_LENGTH_EXCEEDED) && names_the_context(message) =>
        {
            Some(CONTEXT_LENGTH_EXCEEDED.to_string())
        }
        (_, code) => code,
    };
    let code_ref = code.as_deref();
    let message = if message.is_empty() { "(no message)" } else { message };
    // For reasons that go on with a sentence of advice: "<message>. Check ...".
    let sentence = message.trim_end_matches('.');
    let label = match (status, code_ref) {
        (Some(status), Some(code)) => format!("{status}, {code}"),
        (Some(status), None) => status.to_string(),
        (None, Some(code)) => code.to_string(),
        (None, None) => "no code".to_string(),
    };

    // Codes that need a person, whatever the status.
    let fatal_reason = match code_ref {
        Some("insufficient_quota") => Some(format!(
            "The API account has no quota left (insufficient_quota): {sentence}. Check your plan and billing."
        )),
        Some(CONTEXT_LENGTH_EXCEEDED) => {
            Some(format!("The conversation is too long for the model (context_length_exceeded): {message}"))
        }
        _ => None,
    };
    if let Some(reason) = fatal_reason {
        return AttemptError::Fatal(ModelError::Fatal { reason, code, status });
    }

    let retryable = match status {
        Some(s) => matches!(s, 408 | 409 | 429) || s >= 500,
        None => is_retryable_code(code_ref),
    };
    if retryable {
        let hint = hint.or_else(|| parse_retry_hint(message));
        let reason = match status {
            Some(429) => {
                format!("The model service is rate limiting requests ({label}): {message}")
            }
            Some(_) => format!("The model service had a temporary failure ({label}): {message}"),
            None => format!("The model failed mid-response ({label}): {message}"),
        };
        return AttemptError::Retryable { reason, hint, once: false };
    }

    let reason = match status {
        Some(401) => format!("The model service rejected the API key (401): {sentence}. Check OPENAI_API_KEY."),
        Some(403) => format!(
            "The model service refused access ({label}): {sentence}. Check the API key's permissions and MINO_MODEL."
        ),
        Some(404) => {
            format!("The model service answered not found ({label}): {sentence}. Check OPENAI_BASE_URL and MINO_MODEL.")
        }
        Some(400) => format!("The model service rejected the request ({label}): {message}"),
        Some(_) => format!("The model service returned an error ({label}): {message}"),
        None => format!("The model failed to respond ({label}): {message}"),
    };
    AttemptError::Fatal(ModelError::Fatal { reason, code, status })
}

/// Whether an error message says the prompt is too long for the context
/// window, as the servers word it when they send no
/// `context_length_exceeded` code: llama.cpp's `llama-server` ("the request
/// exceeds the available context size", `exceed_context_size_error`),
/// vLLM ("This model's maximum context length is N tokens"), Ollama
/// ("input length exceeds the context length"), LM Studio ("context
/// length"/"context overflow").
pub fn names_the_context(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "context length",
        "context size",
        "context window",
        "context_length",
        "exceed_context_size",
        "maximum context",
        "context overflow",
        "n_ctx",
        "prompt is too long",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(initial_ms: u64, max_ms: u64) -> RetryPolicy {
        RetryPolicy {
            max_retries: 4,
            initial_backoff: Duration::from_millis(initial_ms),
            max_backoff: Duration::from_millis(max_ms),
        }
    }

    #[test]
    fn hint_parser_reads_seconds_and_milliseconds() {
        assert_eq!(
            parse_retry_hint("Rate limit reached for gpt-5.1. Please try again in 11.054s. Visit ..."),
            Some(Duration::from_millis(11_054))
        );
        assert_eq!(parse_retry_hint("Please try again in 250ms."), Some(Duration::from_millis(250)));
        assert_eq!(parse_retry_hint("Try again in 1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_retry_hint("try again in 2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_hint("Please try again later."), None);
        assert_eq!(parse_retry_hint("no hint here"), None);
        assert_eq!(parse_retry_hint("try again in 5 minutes"), None);
    }

    #[test]
    fn hints_are_capped() {
        let p = policy(200, 30_000);
        assert_eq!(backoff_delay(&p, 0, Some(Duration::from_secs(3600))), Duration::from_secs(30));
        assert_eq!(backoff_delay(&p, 3, Some(Duration::from_millis(250))), Duration::from_millis(250));
    }

    #[test]
    fn retry_after_header_is_read_and_capped() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", reqwest::header::HeaderValue::from_static("120"));
        let hint = header_hint(&headers);
        assert_eq!(hint, Some(Duration::from_secs(120)));
        assert_eq!(backoff_delay(&policy(200, 30_000), 0, hint), Duration::from_secs(30));
        headers.insert("retry-after-ms", reqwest::header::HeaderValue::from_static("1500"));
        assert_eq!(header_hint(&headers), Some(Duration::from_millis(1500)));
        let mut dated = reqwest::header::HeaderMap::new();
        dated.insert("retry-after", reqwest::header::HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(header_hint(&dated), None);
    }

    #[test]
    fn exponential_backoff_with_jitter_and_cap() {
        let p = policy(200, 30_000);
        for retry in 0..4u32 {
            let base = 200.0 * 2f64.powi(retry as i32);
            for _ in 0..50 {
                let d = backoff_delay(&p, retry, None).as_secs_f64() * 1000.0;
                assert!(d >= base * 0.9 - 0.001 && d <= base * 1.1 + 0.001, "retry {retry}: {d}ms");
            }
        }
        assert_eq!(backoff_delay(&p, 20, None), Duration::from_secs(30));
        assert_eq!(backoff_delay(&p, u32::MAX, None), Duration::from_secs(30));
    }

    #[test]
    fn classification() {
        let fatal = |e: AttemptError| matches!(e, AttemptError::Fatal(_));
        assert!(fatal(classify(Some(400), Some("context_length_exceeded".into()), "too long", None)));
        assert!(fatal(classify(Some(401), None, "bad key", None)));
        assert!(fatal(classify(Some(429), Some("insufficient_quota".into()), "quota", None)));
        assert!(fatal(classify(None, Some("invalid_prompt".into()), "nope", None)));
        assert!(!fatal(classify(Some(429), Some("rate_limit_exceeded".into()), "slow", None)));
        assert!(!fatal(classify(Some(503), None, "busy", None)));
        assert!(!fatal(classify(None, None, "oops", None)));
        assert!(!fatal(classify(None, Some("server_error".into()), "oops", None)));
        match classify(None, Some("rate_limit_exceeded".into()), "Please try again in 250ms.", None) {
            AttemptError::Retryable { hint, .. } => {
                assert_eq!(hint, Some(Duration::from_millis(250)))
            }
            other => panic!("{other:?}"),
        }
        match classify(Some(401), None, "Incorrect API key provided", None) {
            AttemptError::Fatal(ModelError::Fatal { reason, status, .. }) => {
                assert_eq!(status, Some(401));
                assert_eq!(
                    reason,
                    "The model service rejected the API key (401): Incorrect API key provided. Check OPENAI_API_KEY."
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
