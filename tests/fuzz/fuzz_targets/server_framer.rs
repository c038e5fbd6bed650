//! The server's input path on arbitrary bytes: the `Content-Length` framer
//! (resynchronisation, the size cap, truncation), the JSON-RPC
//! classification of each body, and dispatch: the typed params of every
//! Mino method, and the real `tower-lsp-server` service (uninitialized, so
//! nothing touches a disk or the network). Nothing may panic, the reader
//! must make progress, every body is within the cap and every error it
//! writes is a JSON-RPC error response.
#![no_main]

use std::sync::OnceLock;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use mino_framing::{Frame, FrameCodec, MAX_BODY};
use mino_protocol as wire;
use mino_server::dispatch::Schedule;
use mino_server::transport::{classify, Incoming};
use serde_json::Value;
use tokio_util::codec::FramedRead;
use tower::Service;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime"))
}

fn check_error_response(text: &str) {
    let v: Value = serde_json::from_str(text).expect("an error response is JSON");
    assert_eq!(v["jsonrpc"], "2.0");
    assert!(v["error"]["code"].is_i64(), "{text}");
    assert!(v["error"]["message"].is_string(), "{text}");
    assert!(matches!(v["id"], Value::Null | Value::Number(_) | Value::String(_)));
}

/// Decodes params the way the handlers type them; errors are fine, panics not.
fn typed_params(method: &str, params: Value) {
    match method {
        wire::method::CHAT => drop(serde_json::from_value::<wire::ChatParams>(params)),
        wire::method::APPROVAL => drop(serde_json::from_value::<wire::ApprovalParams>(params)),
        wire::method::ACKNOWLEDGE => drop(serde_json::from_value::<wire::AcknowledgeParams>(params)),
        wire::method::CANCEL => drop(serde_json::from_value::<wire::CancelParams>(params)),
        wire::method::HISTORY => drop(serde_json::from_value::<wire::HistoryParams>(params)),
        "initialize" => {
            if let Some(options) = params.get("initializationOptions") {
                drop(serde_json::from_value::<wire::InitializationOptions>(options.clone()));
            }
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    runtime().block_on(async {
        let mino_server::dispatch::FrontDoor { mut service, routes, .. } = mino_server::handlers::service();
        // Read as the server reads its stdin.
        let mut reader = FramedRead::new(data, FrameCodec::new());
        let mut frames = 0usize;
        while let Some(frame) = reader.next().await {
            let frame = frame.expect("reading a slice cannot fail");
            frames += 1;
            assert!(frames <= data.len() + 1, "the reader stopped making progress");
            let body = match frame {
                Frame::Body(body) => body,
                Frame::Malformed(why) => {
                    assert!(!why.is_empty());
                    continue;
                }
            };
            assert!(body.len() <= MAX_BODY);
            let request = match classify(&body, &routes) {
                Incoming::Reject(text) => {
                    check_error_response(&text);
                    continue;
                }
                Incoming::Ignore => continue,
                Incoming::Request(request) => request,
            };
            let method = request.method().to_string();
            typed_params(&method, request.params().cloned().unwrap_or(Value::Null));
            // `initialize` would open a session on disk, `exit` ends the
            // service; every other method is answered by the real router
            // (uninitialized: -32002) or ignored as a notification.
            if matches!(routes.get(&method).schedule, Schedule::Alone | Schedule::Exit) {
                continue;
            }
            let has_id = request.id().is_some();
            if std::future::poll_fn(|cx| service.poll_ready(cx)).await.is_err() {
                break;
            }
            let response = service.call(request).await;
            if let Ok(Some(response)) = response {
                let text = serde_json::to_string(&response).expect("a response serializes");
                let v: Value = serde_json::from_str(&text).expect("a response is JSON");
                assert!(v.get("result").is_some() || v.get("error").is_some(), "{text}");
            } else if has_id && !method.starts_with("$/") {
                panic!("request {method:?} got no answer: {response:?}");
            }
        }
    });
});
