//! HTTP routes: the Responses and Chat Completions endpoints, the `/_mock` control endpoints, and OpenAI-style 404s.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::render::{error_response, render, RequestCtx};
use crate::render_chat::render_chat;
use crate::{RecordedRequest, Reply, Shared, NO_REPLY_LEFT};

type AppState = Arc<Shared>;

pub(crate) fn router(shared: AppState) -> Router {
    Router::new()
        .route("/v1/responses", post(responses).fallback(not_found))
        .route("/v1/chat/completions", post(chat_completions).fallback(not_found))
        .route("/v1/models", get(list_models).fallback(not_found))
        .route("/_mock/models", post(set_models).fallback(not_found))
        .route("/_mock/models/hold", post(hold_models).fallback(not_found))
        .route("/_mock/models/waiting", get(models_waiting).fallback(not_found))
        .route("/_mock/requests", get(list_requests).fallback(not_found))
        .route("/_mock/script", post(push_script).fallback(not_found))
        .route("/_mock/reset", post(reset).fallback(not_found))
        .fallback(not_found)
        // Replayed histories with big tool outputs can exceed axum's 2 MB default.
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

/// Which API a model request came in on.
#[derive(Clone, Copy)]
enum Api {
    Responses,
    ChatCompletions,
}

async fn responses(State(shared): State<AppState>, headers: HeaderMap, uri: Uri, body: Bytes) -> Response {
    answer(Api::Responses, &shared, &headers, &uri, &body)
}

async fn chat_completions(State(shared): State<AppState>, headers: HeaderMap, uri: Uri, body: Bytes) -> Response {
    answer(Api::ChatCompletions, &shared, &headers, &uri, &body)
}

/// Records the request and answers it with the next scripted reply, rendered for `api`.
fn answer(api: Api, shared: &Shared, headers: &HeaderMap, uri: &Uri, body: &Bytes) -> Response {
    let parsed = serde_json::from_slice::<Value>(body);
    let recorded_body = match &parsed {
        Ok(value) => value.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()),
    };
    // Recorded before answering so a test that sees the reply can already see the request.
    shared.record(RecordedRequest {
        body: recorded_body,
        authorization: headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned),
        path: uri.path().to_owned(),
    });
    let body_value = match parsed {
        Ok(value) => value,
        Err(e) => {
            // Like the real service; the script is left alone since no model call happened.
            tracing::warn!("mock model: request body is not JSON: {e}");
            return error_response(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                None,
                &format!("We could not parse the JSON body of your request. ({e})"),
            );
        }
    };
    let reply = shared.pop().unwrap_or_else(|| {
        tracing::warn!("mock model: script exhausted, answering {NO_REPLY_LEFT:?}");
        Reply::text(NO_REPLY_LEFT)
    });
    tracing::debug!("mock model: answering with {reply:?}");
    let ctx = RequestCtx::from_body(&body_value, body.len());
    match api {
        Api::Responses => render(reply, &ctx, &shared.ids),
        Api::ChatCompletions => render_chat(reply, &ctx, &shared.ids),
    }
}

/// The model list, as OpenAI and the local servers shape it; 404 when the mock has none.
async fn list_models(State(shared): State<AppState>, headers: HeaderMap, uri: Uri) -> Response {
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
    crate::lock(&shared.model_list_requests).push(authorization);
    if *shared.models_held.borrow() {
        // Counted while held; a client that hangs up drops this future, and the guard with it.
        struct Waiting<'a>(&'a std::sync::atomic::AtomicU64);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        shared.models_waiting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _waiting = Waiting(&shared.models_waiting);
        let mut held = shared.models_held.subscribe();
        // An error: the mock is shutting down; answer as released.
        let _ = held.wait_for(|held| !held).await;
    }
    let Some(models) = crate::lock(&shared.models).clone() else {
        return not_found(Method::GET, uri).await;
    };
    let data: Vec<Value> = models
        .into_iter()
        .map(|entry| {
            let mut model = json!({ "object": "model", "created": 1_700_000_000, "owned_by": "mock" });
            if let (Some(model), Some(fields)) = (model.as_object_mut(), entry.as_object()) {
                model.extend(fields.clone());
            }
            model
        })
        .collect();
    Json(json!({ "object": "list", "data": data })).into_response()
}

/// `POST /_mock/models/hold`: `true` holds `GET /v1/models`, `false` answers the held ones.
async fn hold_models(State(shared): State<AppState>, body: Bytes) -> Response {
    match serde_json::from_slice::<bool>(&body) {
        Ok(held) => {
            shared.models_held.send_replace(held);
            Json(json!({ "ok": true })).into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, Json(json!({ "error": format!("the body must be true or false: {e}") })))
            .into_response(),
    }
}

/// `GET /_mock/models/waiting`: how many `GET /v1/models` are held now.
async fn models_waiting(State(shared): State<AppState>) -> Response {
    Json(json!({ "waiting": shared.models_waiting.load(std::sync::atomic::Ordering::SeqCst) })).into_response()
}

/// One entry of `POST /_mock/models`: an id, or a whole entry with one.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum ListedEntry {
    Id(String),
    Entry {
        id: String,
        #[serde(flatten)]
        fields: serde_json::Map<String, Value>,
    },
}

async fn set_models(State(shared): State<AppState>, body: Bytes) -> Response {
    match serde_json::from_slice::<Option<Vec<ListedEntry>>>(&body) {
        Ok(models) => {
            let entries = models.map(|models| {
                models
                    .into_iter()
                    .map(|entry| match entry {
                        ListedEntry::Id(id) => json!({ "id": id }),
                        ListedEntry::Entry { id, mut fields } => {
                            fields.insert("id".into(), json!(id));
                            Value::Object(fields)
                        }
                    })
                    .collect()
            });
            *crate::lock(&shared.models) = entries;
            Json(json!({ "ok": true })).into_response()
        }
        Err(e) => error_response(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            None,
            &format!("mock model: expected a JSON array of model ids or of entries {{\"id\": …}}, or null: {e}"),
        ),
    }
}

async fn list_requests(State(shared): State<AppState>) -> Json<Vec<RecordedRequest>> {
    Json(shared.requests())
}

async fn push_script(State(shared): State<AppState>, body: Bytes) -> Response {
    // Accepting a lone reply as well saves non-Rust tests from wrapping single replies.
    let replies = match serde_json::from_slice::<Vec<Reply>>(&body) {
        Ok(replies) => replies,
        Err(list_err) => match serde_json::from_slice::<Reply>(&body) {
            Ok(reply) => vec![reply],
            Err(_) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    None,
                    &format!("mock model: expected a JSON array of replies: {list_err}"),
                )
            }
        },
    };
    let added = replies.len();
    let queued = shared.push(replies);
    Json(json!({ "added": added, "queued": queued })).into_response()
}

async fn reset(State(shared): State<AppState>) -> Json<Value> {
    shared.reset();
    Json(json!({ "ok": true }))
}

async fn not_found(method: Method, uri: Uri) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        None,
        &format!("Invalid URL ({method} {})", uri.path()),
    )
}
