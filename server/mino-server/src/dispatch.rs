//! The typed front door: each method is registered by its marker type
//! (`Dispatcher::on::<R>`, as rust-analyzer's `RequestDispatcher::on`), so
//! its name, params, result and whether its params may be left out come
//! from `mino_protocol::request::Request` and nowhere else. A handler whose
//! params or result are not the method's does not compile.
//!
//! The dispatcher stands on `tower-lsp-server`'s router (`LspService`): it
//! keeps the LSP lifecycle (`-32002` before `initialize`, `-32600` after
//! `shutdown`), the params errors (`-32602`), unknown methods (`-32601`) and
//! the cancellation of a running request (`$/cancelRequest`, `-32800`).
//! What the router cannot say, how a message is scheduled, it records beside
//! the router in [`Routes`], which the transport reads without knowing any
//! method.

use std::collections::HashMap;
use std::future::Future;

use mino_protocol::request::Request;
use tower_lsp_server::gen_lsp_types::{LspNotificationMethod, LspRequestMethod};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::{Client, ClientSocket, LanguageServer, LspService, LspServiceBuilder};

/// How the transport schedules one message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Schedule {
    /// Handled in a task of its own once the client has room (most requests).
    #[default]
    Concurrent,
    /// Answered before the next message is read: two `initialize`s at once
    /// would both run, and the loser's error would reset the router's
    /// lifecycle state under the winner.
    Alone,
    /// Acted on at once, even while other requests wait for the client to
    /// read (`mino/cancel`: a turn must be stoppable by a client that is
    /// behind).
    Urgent,
    /// Cancels the request its `params.id` names: one still waiting to be
    /// handled is answered `-32800` and never handled; a running one is the
    /// router's to cancel. Acted on at once.
    CancelsRequest,
    /// Ends the service: the session's running turn is stopped first (so its
    /// end still reaches the client) and nothing read after it is handled.
    Exit,
}

impl Schedule {
    /// Acted on even while requests wait for the client to read.
    pub fn acts_while_paused(self) -> bool {
        matches!(self, Schedule::Urgent | Schedule::CancelsRequest | Schedule::Exit)
    }
}

/// What the transport needs to know of one method.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Route {
    /// A request with no `params` member (or `"params": null`) means `{}`.
    pub params_optional: bool,
    pub schedule: Schedule,
}

/// Every registered method's [`Route`]; a method not registered gets the
/// default (concurrent, params required) and the router answers it `-32601`.
#[derive(Clone, Debug, Default)]
pub struct Routes(HashMap<&'static str, Route>);

impl Routes {
    pub fn get(&self, method: &str) -> Route {
        self.0.get(method).copied().unwrap_or_default()
    }

    fn insert(&mut self, method: &'static str, route: Route) {
        let previous = self.0.insert(method, route);
        // Registering a method twice would let the router keep one handler
        // and the routes another's schedule.
        assert!(previous.is_none(), "{method} is registered twice");
    }
}

/// The session behind the service, as the transport drives it: its
/// notifications, and a way to stop its running turn.
pub trait Session: Clone + Send + Sync + 'static {
    type Notifications: Outgoing;

    /// The server's notifications in send order; `None` after the first call.
    fn notifications(&self) -> Option<Self::Notifications>;

    /// Stops the running turn (the client is gone or said `exit`) and
    /// waits, a bounded time, for its end to be recorded.
    fn shutdown(&self) -> impl Future<Output = ()> + Send;
}

/// The server-to-client messages of a [`Session`], each one JSON-RPC
/// message, in the order they must reach the client.
pub trait Outgoing: Send + 'static {
    /// The next message; `None` once there will be no more.
    fn next(&mut self) -> impl Future<Output = Option<String>> + Send;

    /// The next message already waiting, without waiting for one.
    fn try_next(&mut self) -> Option<String>;
}

/// What the transport serves: the router, the routes it was built with, and
/// the session behind it.
pub struct FrontDoor<S: LanguageServer, H: Session> {
    pub service: LspService<S>,
    /// The router's own socket (server-to-client messages it sends itself).
    pub socket: ClientSocket,
    pub routes: Routes,
    pub session: H,
}

/// A method's handler: takes the server and the method's params, resolves
/// to its result or a JSON-RPC error. Any `async fn(S, P) -> Result<T>` is one.
pub trait Handler<S, P, T>: Clone + Send + Sync + 'static {
    type Future: Future<Output = Result<T>> + Send + 'static;

    fn call(&self, server: S, params: P) -> Self::Future;
}

impl<S, P, T, F, Fut> Handler<S, P, T> for F
where
    F: Fn(S, P) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<T>> + Send + 'static,
{
    type Future = Fut;

    fn call(&self, server: S, params: P) -> Fut {
        self(server, params)
    }
}

/// Builds a [`FrontDoor`] one method at a time.
pub struct Dispatcher<S: LanguageServer> {
    builder: LspServiceBuilder<S>,
    routes: Routes,
}

impl<S: LanguageServer + Clone> Dispatcher<S> {
    /// The router with the LSP lifecycle methods only (`initialize`,
    /// `initialized`, `shutdown`, `exit`, `$/cancelRequest`), scheduled as
    /// the base protocol needs them.
    pub fn new(init: impl FnOnce(Client) -> S) -> Self {
        let mut routes = Routes::default();
        let lifecycle = [
            (LspRequestMethod::Initialize.as_str(), Schedule::Alone),
            (LspNotificationMethod::Exit.as_str(), Schedule::Exit),
            (LspNotificationMethod::CancelRequest.as_str(), Schedule::CancelsRequest),
        ];
        for (method, schedule) in lifecycle {
            routes.insert(method, Route { params_optional: false, schedule });
        }
        Dispatcher { builder: LspService::build_with_lifecycle_methods(init), routes }
    }

    /// Registers `handler` for request `R`.
    pub fn on<R: Request>(self, handler: impl Handler<S, R::Params, R::Result>) -> Self {
        self.register::<R>(Schedule::Concurrent, handler)
    }

    /// Registers `handler` for request `R`, acted on at once even while
    /// other requests wait for the client to read ([`Schedule::Urgent`]).
    pub fn on_urgent<R: Request>(self, handler: impl Handler<S, R::Params, R::Result>) -> Self {
        self.register::<R>(Schedule::Urgent, handler)
    }

    fn register<R: Request>(mut self, schedule: Schedule, handler: impl Handler<S, R::Params, R::Result>) -> Self {
        self.routes.insert(R::METHOD, Route { params_optional: R::PARAMS_OPTIONAL, schedule });
        // The handler owns its server (a cheap clone), so its future borrows
        // nothing from the router.
        self.builder = self
            .builder
            .custom_method(R::METHOD, move |server: &S, params: R::Params| handler.call(server.clone(), params));
        self
    }

    /// The front door serving `session`.
    pub fn finish<H: Session>(self, session: H) -> FrontDoor<S, H> {
        let (service, socket) = self.builder.finish();
        FrontDoor { service, socket, routes: self.routes, session }
    }
}
