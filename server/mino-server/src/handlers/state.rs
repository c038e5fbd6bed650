//! What `initialize` opened and the handles onto it: the [`Backend`] every
//! method receives, and the [`Handle`] the transport keeps.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mino_core::agent::Agent;
use mino_core::model::ListedModel;
use mino_core::{SessionStore, StoreError};
use tokio::sync::oneshot;
use tower_lsp_server::jsonrpc::Result;

use super::errors::{internal, store_error};
use super::notifications::{Notifications, Stream};

/// How long an exiting server waits for a cancelled turn to write its end.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// What `initialize` opened.
pub(crate) struct Opened {
    pub(crate) agent: Agent,
    /// Locked after the agent's session when both are needed (a switch).
    pub(crate) store: Arc<Mutex<SessionStore>>,
    /// The models the configuration names, offered when the service lists none.
    pub(crate) configured_models: Vec<ListedModel>,
    /// Taken by the task that streams notifications, once.
    pub(crate) stream: Option<Stream>,
}

pub(crate) struct Shared {
    pub(crate) opened: Mutex<Option<Opened>>,
    /// Hands the stream to [`Notifications`] once streaming starts.
    start: Mutex<Option<oneshot::Sender<Stream>>>,
    /// Taken by the transport, once.
    notifications: Mutex<Option<Notifications>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Nothing opened yet: the backend the router holds, and the handle the
/// transport keeps onto the same state.
pub(crate) fn open() -> (Backend, Handle) {
    let (start, started) = oneshot::channel();
    let shared = Arc::new(Shared {
        opened: Mutex::new(None),
        start: Mutex::new(Some(start)),
        notifications: Mutex::new(Some(Notifications::new(started))),
    });
    (Backend { shared: shared.clone() }, Handle { shared })
}

/// A handle the transport keeps to stop the agent when the client is gone.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl crate::dispatch::Session for Handle {
    type Notifications = Notifications;

    /// The notification stream, for the transport to send; `None` after the
    /// first call.
    fn notifications(&self) -> Option<Notifications> {
        lock(&self.shared.notifications).take()
    }

    /// Cancels the running turn (the client is gone) and waits, a bounded
    /// time, for it to record its end.
    async fn shutdown(&self) {
        let agent = lock(&self.shared.opened).as_ref().map(|o| o.agent.clone());
        let Some(agent) = agent else { return };
        if agent.running_turn().is_some() {
            tracing::info!("client gone: cancelling the running turn");
        }
        // Closing refuses any chat still in flight, so no turn can start
        // after this and outlive the server without an end on file.
        if tokio::time::timeout(EXIT_GRACE, agent.close()).await.is_err() {
            tracing::warn!("the cancelled turn did not record its end in time");
        }
    }
}

/// What every method receives: a cheap handle onto the opened state, owned
/// by the method's future so that nothing borrows from the router.
#[derive(Clone)]
pub struct Backend {
    pub(crate) shared: Arc<Shared>,
}

impl Backend {
    pub(crate) fn handle(&self) -> Handle {
        Handle { shared: self.shared.clone() }
    }

    pub(crate) fn agent(&self) -> Result<Agent> {
        self.start_streaming();
        lock(&self.shared.opened)
            .as_ref()
            .map(|o| o.agent.clone())
            .ok_or_else(|| internal("no session is open; initialize failed"))
    }

    pub(crate) fn store(&self) -> Result<Arc<Mutex<SessionStore>>> {
        lock(&self.shared.opened)
            .as_ref()
            .map(|o| o.store.clone())
            .ok_or_else(|| internal("no session is open; initialize failed"))
    }

    /// Runs `f` with the store locked on a blocking thread (it reads and
    /// writes files).
    pub(crate) async fn with_store<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut SessionStore) -> std::result::Result<R, StoreError> + Send + 'static,
    ) -> Result<R> {
        let store = self.store()?;
        match tokio::task::spawn_blocking(move || f(&mut lock(&store))).await {
            Ok(result) => result.map_err(store_error),
            Err(e) => Err(internal(format!("a session operation was abandoned: {e}"))),
        }
    }

    /// Hands `mino/recovery` and the agent's events to [`Notifications`].
    /// Runs once: on `initialized`, or on the first Mino request if a client
    /// skips it.
    pub(crate) fn start_streaming(&self) {
        let Some(stream) = lock(&self.shared.opened).as_mut().and_then(|o| o.stream.take()) else {
            return;
        };
        if let Some(start) = lock(&self.shared.start).take() {
            // Unheard when the transport dropped its stream (the fuzzer).
            let _ = start.send(stream);
        }
    }
}
