//! `mino-server --acp`: Mino's agent speaking the Agent Client Protocol
//! (agentclientprotocol.com, protocol version 1): JSON-RPC 2.0 over stdio,
//! one message per line. See docs/acp.md for the mapping of every Mino
//! concept to its ACP message.
//!
//! This front door only translates: sessions are opened with
//! [`mino_core::open`], prompts go to [`Agent::chat`], permission answers to
//! [`Agent::decide`], `session/cancel` to [`Agent::cancel`], the
//! acknowledgement gate to [`Agent::acknowledge`], the model option to
//! [`Agent::models`] and [`Agent::select_model`], the slash commands to
//! [`Agent::compact`], [`Agent::rules`] and [`Agent::revoke_rule`], and the
//! agent's [`AgentEvent`]s come back out as `session/update` notifications.
//! The turn loop, the journal and recovery are the core's, as for `mino/*`
//! clients.

#![deny(clippy::print_stdout)]

mod commands;
mod decisions;
mod images;
mod lines;
mod modes;
mod rewind;
mod translate;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, CloseSessionResponse, ConfigOptionUpdate, CreateTerminalRequest,
    ElicitationAction, EnvVariable, ForkSessionRequest, ForkSessionResponse, InitializeRequest, KillTerminalRequest,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, ReadTextFileRequest, ReleaseTerminalRequest,
    RequestPermissionOutcome, RequestPermissionRequest, ResumeSessionRequest, ResumeSessionResponse,
    SessionConfigOption, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
    WaitForTerminalExitRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Responder, V1};
use mino_core::agent::{Agent, AgentError, Decision, Events, Numbered, TurnLimits};
use mino_core::model::{ListedModel, ModelList};
use mino_core::policy::{ApprovalMode, PolicyError, SuggestedRule};
use mino_core::rules::{Rule, RuleEffect, RuleScope};
use mino_core::{OpenOptions, SessionError, TurnStatus};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use commands::Command;
pub use lines::MAX_LINE_BYTES;
pub use translate::{
    ACKNOWLEDGE_NAME, ACKNOWLEDGE_OPTION, ALLOW_OPTION, CHECK_FIRST_OPTION, GATE_DECLINED, GATE_TITLE, NOT_NOW_NAME,
    NOT_NOW_OPTION, REJECT_OPTION,
};

/// The ACP protocol version this front door speaks.
pub const PROTOCOL_VERSION: u16 = 1;
/// How long the server waits, once the client is gone, for a cancelled
/// turn to record its end (as the `mino/*` front door does on exit).
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// Sessions per `session/list` page (ACP's request has no limit).
const LIST_PAGE: usize = 50;

/// One open Mino session behind an ACP session id (the same id).
struct AcpSession {
    agent: Agent,
    /// Serializes prompts and holds the ends of this session's turns, sent
    /// by the event forwarder after the turn's last update. One entry per
    /// turn, each taken by the prompt that started it.
    prompting: tokio::sync::Mutex<mpsc::UnboundedReceiver<TurnEnd>>,
    /// Cancels the prompt now running (its gate question included).
    cancel: Mutex<CancellationToken>,
    /// The configuration's models, offered when the service lists none.
    configured_models: Vec<ListedModel>,
    /// The model list last offered: a mode change sends the full set of
    /// config options again without asking the model service.
    offered_models: Mutex<Option<ModelList>>,
    /// The event forwarder, stopped by `session/close`.
    forwarder: Mutex<Option<tokio::task::AbortHandle>>,
    /// `session/close` closed it: a prompt whose turn end never came was
    /// cancelled with it.
    closed: AtomicBool,
}

/// How long `session/new` and `session/load` wait for the model service's
/// list before answering with the configured models (the service's
/// `GET /models` is itself bounded at 10 s; a session must open sooner).
const OPEN_MODEL_LIST_WAIT: Duration = Duration::from_millis(300);

/// The model list a session opened without: the one sent instead, and the
/// service's answer still to come.
struct PendingModels {
    sent: ModelList,
    asking: tokio::task::JoinHandle<ModelList>,
}

impl PendingModels {
    /// Once the service's list is in, sends it as a `config_option_update`
    /// when it differs from the one the session opened with (sent after
    /// the session's answer, so the client knows the session).
    fn refresh_later(
        self,
        session: Arc<AcpSession>,
        session_id: String,
        cx: ConnectionTo<Client>,
        outbound: Arc<lines::Outbound>,
    ) {
        tokio::spawn(async move {
            let list = match self.asking.await {
                Ok(list) => list,
                Err(e) => return tracing::warn!("asking the model service for its models stopped: {e}"),
            };
            if list == self.sent {
                return;
            }
            let update = SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(session.config_options(list)));
            log_send(outbound.send(&cx, SessionNotification::new(session_id, update)));
        });
    }
}

/// How a turn ended, as the prompt that started it answers with it.
struct TurnEnd {
    turn_id: String,
    status: TurnStatus,
    reason: Option<String>,
}

#[derive(Default)]
struct Server {
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// Every `session/update` goes out through it (see [`lines::Outbound`]).
    outbound: Arc<lines::Outbound>,
    /// The client's `initialize` advertised form elicitation: the
    /// acknowledgement gate is asked through `elicitation/create`.
    form_elicitation: AtomicBool,
    /// The client's `initialize` advertised `fs.readTextFile`: an edit's
    /// file is read through the editor, which holds unsaved changes.
    read_text_file: AtomicBool,
    /// The client's `initialize` advertised `terminal`: approved commands
    /// run in the editor's own terminals, under Mino's supervisor.
    terminal: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

type Error = agent_client_protocol::Error;

/// `-32602` with a message saying what is wrong and how to fix it.
fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(agent_client_protocol::ErrorCode::INVALID_PARAMS, message)
}

fn internal(message: impl Into<String>) -> Error {
    Error::new(agent_client_protocol::ErrorCode::INTERNAL_ERROR, message)
}

/// Why a session could not be opened: a session Mino does not have is
/// ACP's resource-not-found (`-32002`, with the id in `data`), one open in
/// another Mino process is the client's to fix (`-32602`); anything else
/// (a journal that cannot be read, the home) is Mino's (`-32603`).
fn open_error(e: mino_core::OpenError, session_id: &str) -> Error {
    use mino_core::journal::JournalError;
    match e {
        mino_core::OpenError::Session(SessionError::NotFound { .. }) => Error::new(
            agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
            format!(
                "session {session_id} does not exist in this Mino home; send session/list to see the sessions, \
                 or session/new to start one"
            ),
        )
        .data(serde_json::json!({ "sessionId": session_id })),
        mino_core::OpenError::Session(SessionError::Journal(JournalError::Locked { .. })) => invalid_params(format!(
            "session {session_id} is open in another Mino process; close it there first, or choose another session"
        )),
        e => internal(e.to_string()),
    }
}

fn agent_error(e: AgentError) -> Error {
    match e {
        AgentError::Session(SessionError::InvalidInput(why)) => invalid_params(why),
        e => internal(e.to_string()),
    }
}

/// Serves ACP on stdin/stdout until the client closes stdin; then cancels
/// the sessions' running turns and waits (a bounded time) for their ends to
/// be recorded. Incoming lines are bounded by [`MAX_LINE_BYTES`].
pub async fn serve_stdio() {
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let (transport, outbound, writing) = lines::transport(stdin, tokio::io::stdout(), MAX_LINE_BYTES);
    serve(transport, outbound).await;
    // What was queued before the connection ended still goes out.
    if tokio::time::timeout(EXIT_GRACE, writing).await.is_err() {
        tracing::warn!("the last ACP messages could not be written in time");
    }
}

/// Serves ACP over `transport` (stdio in `mino-server --acp`), whose
/// `session/update` notifications `outbound` counts as they are written.
pub async fn serve(
    transport: impl agent_client_protocol::ConnectTo<agent_client_protocol::Agent> + 'static,
    outbound: Arc<lines::Outbound>,
) {
    let server = Arc::new(Server { outbound, ..Server::default() });
    let (s1, s2, s3, s4) = (server.clone(), server.clone(), server.clone(), server.clone());
    let (s5, s6, s7) = (server.clone(), server.clone(), server.clone());
    let (s8, s9, s10, s11) = (server.clone(), server.clone(), server.clone(), server.clone());
    let served = agent_client_protocol::Agent
        .v1()
        .name(concat!("mino-server ", env!("CARGO_PKG_VERSION")))
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                tracing::info!(client = ?request.client_info, "ACP initialize");
                let form = request.client_capabilities.elicitation.as_ref().is_some_and(|e| e.supports_form());
                s6.form_elicitation.store(form, Ordering::Relaxed);
                s6.read_text_file.store(request.client_capabilities.fs.read_text_file, Ordering::Relaxed);
                s6.terminal.store(request.client_capabilities.terminal, Ordering::Relaxed);
                responder.respond(translate::initialize_response(request.protocol_version))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse, V1>,
                        cx: ConnectionTo<Client>| {
                let server = s1.clone();
                tokio::spawn(async move {
                    match server.open(request.cwd, None, cx.clone()).await {
                        Err(e) => log_send(responder.respond_with_error(e)),
                        Ok((id, session)) => {
                            let (options, pending) = session.opening_config_options().await;
                            log_send(
                                responder.respond(
                                    NewSessionResponse::new(id.clone())
                                        .config_options(options)
                                        .modes(modes::session_modes(session.agent.settings().0)),
                                ),
                            );
                            log_send(server.outbound.send(&cx, commands::available(&id)));
                            if let Some(pending) = pending {
                                pending.refresh_later(session.clone(), id.clone(), cx.clone(), server.outbound.clone());
                            }
                            server.show_instructions(&session, &id, &cx);
                            let (configs, refused) = translate::mcp_configs(&request.mcp_servers);
                            for text in refused {
                                log_send(server.outbound.send(&cx, translate::agent_message(&id, &text)));
                            }
                            session.agent.start_mcp(configs);
                        }
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse, V1>,
                        cx: ConnectionTo<Client>| {
                let server = s2.clone();
                tokio::spawn(async move {
                    let id = request.session_id.0.to_string();
                    let opened = match server.session(&id) {
                        Some(session) => Ok(session),
                        None => {
                            server.open(request.cwd, Some(id.clone()), cx.clone()).await.map(|(_, session)| session)
                        }
                    };
                    let session = match opened {
                        Ok(session) => session,
                        Err(e) => return log_send(responder.respond_with_error(e)),
                    };
                    // The whole conversation, before the answer (ACP's rule for session/load).
                    let updates = session.agent.with_session(|s| {
                        translate::replay(&id, s.transcript(), std::path::Path::new(s.cwd()), &|turn, n| {
                            s.evidence(turn, n)
                        })
                    });
                    // A long conversation to a client that does not read
                    // waits for it rather than filling the crate's queues.
                    for update in updates {
                        server.outbound.room().await;
                        log_send(server.outbound.send(&cx, update));
                    }
                    let (configs, refused) = translate::mcp_configs(&request.mcp_servers);
                    for text in refused {
                        log_send(server.outbound.send(&cx, translate::agent_message(&id, &text)));
                    }
                    session.agent.start_mcp(configs);
                    let (options, pending) = session.opening_config_options().await;
                    log_send(
                        responder.respond(
                            LoadSessionResponse::new()
                                .config_options(options)
                                .modes(modes::session_modes(session.agent.settings().0)),
                        ),
                    );
                    log_send(server.outbound.send(&cx, commands::available(&id)));
                    server.show_instructions(&session, &id, &cx);
                    if let Some(pending) = pending {
                        pending.refresh_later(session.clone(), id, cx, server.outbound.clone());
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest,
                        responder: Responder<ResumeSessionResponse, V1>,
                        cx: ConnectionTo<Client>| {
                let server = s8.clone();
                tokio::spawn(async move {
                    let id = request.session_id.0.to_string();
                    // As `session/load`, without the replay: the client
                    // already shows the conversation.
                    let opened = match server.session(&id) {
                        Some(session) => Ok(session),
                        None => {
                            server.open(request.cwd, Some(id.clone()), cx.clone()).await.map(|(_, session)| session)
                        }
                    };
                    let session = match opened {
                        Ok(session) => session,
                        Err(e) => return log_send(responder.respond_with_error(e)),
                    };
                    let (options, pending) = session.opening_config_options().await;
                    log_send(
                        responder.respond(
                            ResumeSessionResponse::new()
                                .config_options(options)
                                .modes(modes::session_modes(session.agent.settings().0)),
                        ),
                    );
                    log_send(server.outbound.send(&cx, commands::available(&id)));
                    let (configs, refused) = translate::mcp_configs(&request.mcp_servers);
                    for text in refused {
                        log_send(server.outbound.send(&cx, translate::agent_message(&id, &text)));
                    }
                    session.agent.start_mcp(configs);
                    if let Some(pending) = pending {
                        pending.refresh_later(session.clone(), id, cx, server.outbound.clone());
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ForkSessionRequest,
                        responder: Responder<ForkSessionResponse, V1>,
                        cx: ConnectionTo<Client>| {
                let server = s11.clone();
                tokio::spawn(async move {
                    let (id, session) = match server.fork(&request.session_id.0, request.cwd, cx.clone()).await {
                        Ok(opened) => opened,
                        Err(e) => return log_send(responder.respond_with_error(e)),
                    };
                    let (options, pending) = session.opening_config_options().await;
                    log_send(
                        responder.respond(
                            ForkSessionResponse::new(id.clone())
                                .config_options(options)
                                .modes(modes::session_modes(session.agent.settings().0)),
                        ),
                    );
                    log_send(server.outbound.send(&cx, commands::available(&id)));
                    if let Some(pending) = pending {
                        pending.refresh_later(session.clone(), id.clone(), cx.clone(), server.outbound.clone());
                    }
                    server.show_instructions(&session, &id, &cx);
                    let (configs, refused) = translate::mcp_configs(&request.mcp_servers);
                    for text in refused {
                        log_send(server.outbound.send(&cx, translate::agent_message(&id, &text)));
                    }
                    session.agent.start_mcp(configs);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder: Responder<CloseSessionResponse, V1>, _cx| {
                let server = s9.clone();
                tokio::spawn(async move {
                    match server.close_session(&request.session_id.0).await {
                        Ok(()) => log_send(responder.respond(CloseSessionResponse::new())),
                        Err(e) => log_send(responder.respond_with_error(e)),
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder: Responder<SetSessionModeResponse, V1>, _cx| {
                let answer = s10.set_mode(request);
                match answer {
                    Ok(()) => responder.respond(SetSessionModeResponse::new()),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder: Responder<PromptResponse, V1>, cx: ConnectionTo<Client>| {
                let server = s3.clone();
                // Outside the dispatch loop: a prompt waits on permission
                // answers and on `session/cancel`, which the loop delivers.
                tokio::spawn(async move {
                    match server.prompt(request, cx).await {
                        Ok(stop) => log_send(responder.respond(PromptResponse::new(stop))),
                        Err(e) => log_send(responder.respond_with_error(e)),
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder: Responder<ListSessionsResponse, V1>, _cx| {
                let server = s5.clone();
                // Reading the sessions' files is blocking work, off the dispatch loop.
                tokio::spawn(async move {
                    let listed = tokio::task::spawn_blocking(move || server.list(request))
                        .await
                        .map_err(|e| internal(format!("listing the sessions stopped: {e}")))
                        .and_then(|listed| listed);
                    match listed {
                        Ok(list) => log_send(responder.respond(list)),
                        Err(e) => log_send(responder.respond_with_error(e)),
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse, V1>,
                        _cx| {
                let server = s7.clone();
                // Listing the models asks the model service: off the dispatch loop.
                tokio::spawn(async move {
                    match server.set_config_option(request).await {
                        Ok(answer) => log_send(responder.respond(answer)),
                        Err(e) => log_send(responder.respond_with_error(e)),
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                s4.cancel(&notification.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    if let Err(e) = served {
        tracing::warn!("the ACP connection ended with an error: {e}");
    }
    server.close().await;
}

/// A failed send means the client is gone; the journal still holds everything.
fn log_send(result: Result<(), Error>) {
    if let Err(e) = result {
        tracing::debug!("could not send to the ACP client: {e}");
    }
}

impl Server {
    /// The project's instruction files the model follows, told once a
    /// session is open (when there are any); a change is told by its event.
    fn show_instructions(&self, session: &AcpSession, id: &str, cx: &ConnectionTo<Client>) {
        let files = session.agent.project_instructions().files;
        if !files.is_empty() {
            log_send(self.outbound.send(cx, translate::agent_message(id, &translate::instructions_notice(&files))));
        }
    }

    fn session(&self, id: &str) -> Option<Arc<AcpSession>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// The session `id`, open in this process, or an error saying how to open it.
    fn open_session(&self, id: &str) -> Result<Arc<AcpSession>, Error> {
        self.session(id).ok_or_else(|| {
            invalid_params(format!("session {id} is not open here; send session/new or session/load first"))
        })
    }

    /// Opens a Mino session (a new one for `cwd`, or `id`), starts
    /// forwarding its events to `cx`, and returns its id and itself.
    async fn open(
        &self,
        cwd: PathBuf,
        id: Option<String>,
        cx: ConnectionTo<Client>,
    ) -> Result<(String, Arc<AcpSession>), Error> {
        if !cwd.is_absolute() {
            return Err(invalid_params(format!("cwd {} must be an absolute path", cwd.display())));
        }
        // Each command runs under this very binary in supervise mode.
        let supervisor = std::env::current_exe()
            .map_err(|e| internal(format!("cannot find the server's own executable to supervise commands: {e}")))?;
        let new_session = id.is_none();
        let requested = id.clone().unwrap_or_default();
        let options =
            // The approval and sandbox modes of the environment (`MINO_SANDBOX`); every call asks.
            OpenOptions {
                cwd: Some(cwd),
                session: id,
                new_session,
                supervisor,
                limits: TurnLimits::default(),
                // `rules`: a call asks unless a rule the person granted
                // (`allow_always` / `reject_always`, or the workspace rules
                // file) decides it; with no rules, every call asks.
                approval_mode: Some(ApprovalMode::Rules),
                sandbox: None,
            };
        let app = tokio::task::spawn_blocking(move || mino_core::open(options))
            .await
            .map_err(|e| internal(format!("opening the session stopped: {e}")))?
            .map_err(|e| match e {
                e @ (mino_core::OpenError::Workspace { .. } | mino_core::OpenError::WorkspaceNotADirectory { .. }) => {
                    invalid_params(e.to_string())
                }
                e => open_error(e, &requested),
            })?;
        let (ends, ended) = mpsc::unbounded_channel();
        let session = Arc::new(AcpSession {
            agent: app.agent.clone(),
            prompting: tokio::sync::Mutex::new(ended),
            cancel: Mutex::new(CancellationToken::new()),
            configured_models: app.configured_models.clone(),
            offered_models: Mutex::new(None),
            forwarder: Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        let id = app.session_id.clone();
        if self.read_text_file.load(Ordering::Relaxed) {
            app.agent.set_open_buffers(Arc::new(ClientBuffers { session_id: id.clone(), cx: cx.clone() }));
        }
        if self.terminal.load(Ordering::Relaxed) {
            app.agent.set_command_terminals(Arc::new(ClientTerminals { session_id: id.clone(), cx: cx.clone() }));
        }
        lock(&self.sessions).insert(id.clone(), session.clone());
        let forwarding =
            tokio::spawn(forward_events(id.clone(), session.clone(), app.events, ends, cx, self.outbound.clone()));
        *lock(&session.forwarder) = Some(forwarding.abort_handle());
        Ok((id, session))
    }

    /// `session/fork`: forks session `id` (open here) as it stands, every
    /// record of it (`mino_core::ForkPoint::Whole`: ACP names no turn),
    /// then opens the fork as `session/load` would, without the replay (the
    /// client shows the conversation it forked). The forked session stays
    /// open and unchanged.
    async fn fork(&self, id: &str, cwd: PathBuf, cx: ConnectionTo<Client>) -> Result<(String, Arc<AcpSession>), Error> {
        let source = self.open_session(id)?;
        let config = mino_core::Config::from_env().map_err(|e| internal(e.to_string()))?;
        let forked = source
            .agent
            .with_session_io(move |session| -> Result<mino_core::Forked, mino_core::StoreError> {
                let mut store = mino_core::SessionStore::new(config.home, std::path::Path::new(session.cwd()))?;
                store.set_blob_limits(config.rewind_limits);
                let last = session.transcript().turns.last().map(|t| t.id.clone());
                store.fork(session, session.id(), &mino_core::ForkPoint::Whole(last))
            })
            .await
            .map_err(|e| match e {
                e @ mino_core::StoreError::Fork(_) => invalid_params(e.to_string()),
                e => internal(format!("the session could not be forked: {e}")),
            })?;
        tracing::info!(session_id = forked.info.session_id, from = id, "session forked");
        self.open(cwd, Some(forked.info.session_id), cx).await
    }

    /// `session/list`: the sessions of `$MINO_HOME`, newest (last active)
    /// first, [`LIST_PAGE`] a page; with `cwd`, only that workspace's (as
    /// `mino/sessions/list` with `scope: "workspace"`).
    fn list(&self, request: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let home = mino_core::Config::from_env().map_err(|e| internal(e.to_string()))?.home;
        let (workspace, scope) = match &request.cwd {
            Some(cwd) if !cwd.is_absolute() => {
                return Err(invalid_params(format!("cwd {} must be an absolute path", cwd.display())))
            }
            Some(cwd) => (cwd.clone(), mino_core::ListScope::Workspace),
            // Any directory: a list of all sessions does not look at it.
            None => (PathBuf::from("/"), mino_core::ListScope::All),
        };
        let store = mino_core::SessionStore::new(home, &workspace)
            .map_err(|e| invalid_params(format!("cwd {}: {e}", workspace.display())))?;
        let page = store.list(scope, LIST_PAGE, request.cursor.as_deref()).map_err(|e| match e {
            mino_core::StoreError::InvalidInput(why) => invalid_params(why),
            e => internal(e.to_string()),
        })?;
        Ok(translate::session_list(page))
    }

    fn cancel(&self, id: &str) {
        let Some(session) = self.session(id) else {
            tracing::debug!(session_id = id, "session/cancel for a session that is not open");
            return;
        };
        lock(&session.cancel).cancel();
        if let Some(turn_id) = session.agent.running_turn() {
            if let Err(e) = session.agent.cancel(&turn_id) {
                tracing::debug!("session/cancel: {e}");
            }
        }
    }

    async fn prompt(&self, request: PromptRequest, cx: ConnectionTo<Client>) -> Result<StopReason, Error> {
        let id = request.session_id.0.to_string();
        let session = self.open_session(&id)?;
        let (blocks, images) = images::split_images(&request.prompt)?;
        // A prompt of images alone has no text to read.
        let text =
            if blocks.is_empty() && !images.is_empty() { String::new() } else { translate::prompt_text(&blocks)? };
        let mut ended = session.prompting.try_lock().map_err(|_| {
            invalid_params(format!("session {id} is still answering a prompt; wait for it or send session/cancel"))
        })?;
        // A slash command is Mino's, never the model's: no gate (it acts
        // on nothing the unknown result touched; `/compact` is refused
        // while one waits) and no user turn.
        let cancel = CancellationToken::new();
        *lock(&session.cancel) = cancel.clone();
        if let Some(command) = commands::parse(&text) {
            if let Command::Rewind(arg) = &command {
                return rewind::run(&session.agent, &id, arg, &cx, &self.outbound, &cancel).await;
            }
            let reply = session.command(command, &cancel).await?;
            log_send(self.outbound.send(&cx, translate::agent_message(&id, &reply)));
            // ACP's rule: a cancelled prompt answers `cancelled`; the
            // message above says what the command did all the same.
            return Ok(if cancel.is_cancelled() { StopReason::Cancelled } else { StopReason::EndTurn });
        }

        // The acknowledgement gate: each turn whose `unknown` result waits
        // is asked about before the prompt reaches the model.
        let waiting = session
            .agent
            .with_session(|s| translate::gate_questions(&id, s.transcript(), &|turn, n| s.evidence(turn, n)));
        let form = self.form_elicitation.load(Ordering::Relaxed);
        for question in waiting {
            log_send(cx.send_notification(question.announce.clone()));
            // A cancel (`session/cancel`, or the client's own `cancelled`)
            // closes the gate's call too, so no client shows it pending.
            let cancelled = || {
                log_send(cx.send_notification(question.cancelled(&id)));
                Ok(StopReason::Cancelled)
            };
            let opened = if form {
                let Some(answer) =
                    unless_cancelled(&cancel, cx.send_request(question.form.clone()).block_task()).await?
                else {
                    return cancelled();
                };
                match answer.action {
                    ElicitationAction::Cancel => return cancelled(),
                    ElicitationAction::Accept(accepted) => translate::gate_form_acknowledged(&accepted),
                    _ => false,
                }
            } else {
                let Some(answer) =
                    unless_cancelled(&cancel, cx.send_request(question.permission.clone()).block_task()).await?
                else {
                    return cancelled();
                };
                match answer.outcome {
                    RequestPermissionOutcome::Cancelled => return cancelled(),
                    RequestPermissionOutcome::Selected(selected) => selected.option_id.0.as_ref() == ACKNOWLEDGE_OPTION,
                    _ => false,
                }
            };
            log_send(cx.send_notification(question.answered(&id, opened)));
            if !opened {
                // "Not now", a declined form (or anything else): the
                // question is not recorded and never reaches the model. The
                // person declined, not the agent: `end_turn`, with a message
                // saying the conversation waits (never `refusal`).
                log_send(cx.send_notification(translate::agent_message(&id, translate::GATE_DECLINED)));
                return Ok(StopReason::EndTurn);
            }
            session.agent.acknowledge(Some(vec![question.turn_id.clone()])).await.map_err(agent_error)?;
        }
        if cancel.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }

        let turn_id = session.agent.chat_with_images(&text, images).await.map_err(agent_error)?;
        // Ends of turns whose prompt failed before it could wait are older
        // than this one; they are passed over.
        while let Some(end) = ended.recv().await {
            if end.turn_id == turn_id {
                return translate::stop_reason(end.status, end.reason, &end.turn_id);
            }
        }
        if session.closed.load(Ordering::SeqCst) {
            // `session/close` cancelled the turn and waited for its end to
            // be on file before it stopped the forwarder.
            return Ok(StopReason::Cancelled);
        }
        Err(internal("the session's agent stopped before the turn ended"))
    }

    /// `session/set_config_option`: the model option chooses the session's
    /// model among those offered (`Agent::select_model`, journaled).
    async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let id = request.session_id.0.to_string();
        let session = self.open_session(&id)?;
        let config_id = request.config_id.0.to_string();
        let Some(value) = request.value.as_value_id() else {
            return Err(invalid_params(format!(
                "the {config_id:?} option is a select: send one of its values, not a boolean"
            )));
        };
        let value = value.0.to_string();
        match config_id.as_str() {
            commands::MODEL_OPTION => {}
            modes::MODE_OPTION => {
                let mode = modes::approval_mode(&value).map_err(invalid_params)?;
                session.update_settings(Some(mode), None)?;
                return Ok(SetSessionConfigOptionResponse::new(session.offered_config_options()));
            }
            modes::SANDBOX_OPTION => {
                let sandbox = modes::sandbox_mode(&value).map_err(invalid_params)?;
                session.update_settings(None, Some(sandbox))?;
                return Ok(SetSessionConfigOptionResponse::new(session.offered_config_options()));
            }
            other => {
                return Err(invalid_params(format!(
                    "session {id} has no config option {other:?}; its options are {:?} (the model), {:?} (the \
                     approval mode) and {:?} (the sandbox)",
                    commands::MODEL_OPTION,
                    modes::MODE_OPTION,
                    modes::SANDBOX_OPTION
                )))
            }
        }
        let mut list = session.agent.models(&session.configured_models).await;
        if !list.models.iter().any(|m| m.id == value) {
            return Err(invalid_params(commands::unknown_model(&value, &list)));
        }
        let chosen = session.agent.select_model(&value).await.map_err(|e| match commands::refusal(&e) {
            Some(why) => invalid_params(format!("the model was not changed: {why}")),
            None => agent_error(e),
        })?;
        list.current = chosen;
        Ok(SetSessionConfigOptionResponse::new(session.config_options(list)))
    }

    /// `session/set_mode`: the classic session modes are the approval modes.
    fn set_mode(&self, request: SetSessionModeRequest) -> Result<(), Error> {
        let session = self.open_session(&request.session_id.0)?;
        let mode = modes::approval_mode(&request.mode_id.0).map_err(invalid_params)?;
        session.update_settings(Some(mode), None).map(|_| ())
    }

    /// `session/close`: cancels the session's running turn (and a question
    /// being asked), waits (bounded) for its end to be on file, stops
    /// forwarding its events and lets it go, so that another Mino may open
    /// it. Closing a session that is not open here is refused.
    async fn close_session(&self, id: &str) -> Result<(), Error> {
        let session = self.open_session(id)?;
        session.closed.store(true, Ordering::SeqCst);
        lock(&session.cancel).cancel();
        if tokio::time::timeout(EXIT_GRACE, session.agent.close()).await.is_err() {
            tracing::warn!(session_id = id, "a cancelled turn did not record its end in time");
        }
        lock(&self.sessions).remove(id);
        // The forwarder holds the agent (and with it the journal's lock).
        if let Some(forwarder) = lock(&session.forwarder).take() {
            forwarder.abort();
        }
        Ok(())
    }

    /// The client is gone: cancel every running turn and wait (bounded) for
    /// their ends to be on file.
    async fn close(&self) {
        let agents: Vec<Agent> = lock(&self.sessions).values().map(|s| s.agent.clone()).collect();
        for agent in agents {
            if tokio::time::timeout(EXIT_GRACE, agent.close()).await.is_err() {
                tracing::warn!("a cancelled turn did not record its end in time");
            }
        }
    }
}

impl AcpSession {
    /// The session's config options as the session opens (the model
    /// choice, the approval mode, the sandbox), never waiting on the model
    /// service longer than [`OPEN_MODEL_LIST_WAIT`]: the service's models
    /// when its list came in time, else the configured ones, and then the
    /// list still to come.
    async fn opening_config_options(&self) -> (Vec<SessionConfigOption>, Option<PendingModels>) {
        let agent = self.agent.clone();
        let configured = self.configured_models.clone();
        let mut asking = tokio::spawn(async move { agent.models(&configured).await });
        match tokio::time::timeout(OPEN_MODEL_LIST_WAIT, &mut asking).await {
            Ok(Ok(list)) => (self.config_options(list), None),
            Ok(Err(e)) => {
                tracing::warn!("asking the model service for its models stopped: {e}");
                (self.config_options(self.agent.configured_models(&self.configured_models)), None)
            }
            Err(_) => {
                let sent = self.agent.configured_models(&self.configured_models);
                (self.config_options(sent.clone()), Some(PendingModels { sent, asking }))
            }
        }
    }

    /// The full set of config options (ACP sends them whole), with `models`
    /// as the model choice; remembered for later changes of a mode.
    fn config_options(&self, models: ModelList) -> Vec<SessionConfigOption> {
        let settings = self.agent.settings().0;
        let options =
            vec![commands::model_option(&models), modes::mode_option(settings), modes::sandbox_option(settings)];
        *lock(&self.offered_models) = Some(models);
        options
    }

    /// The full set again, the model choice as last offered (its current
    /// value the session's model now).
    fn offered_config_options(&self) -> Vec<SessionConfigOption> {
        let mut models =
            lock(&self.offered_models).clone().unwrap_or_else(|| self.agent.configured_models(&self.configured_models));
        models.current = self.agent.model_client().config().model.clone();
        self.config_options(models)
    }

    /// Changes the approval or sandbox mode (`Agent::update_settings`,
    /// whose event sends the `config_option_update` and
    /// `current_mode_update`); a sandbox this machine cannot enforce is
    /// refused with `-32602` saying why.
    fn update_settings(
        &self,
        approval_mode: Option<ApprovalMode>,
        sandbox: Option<mino_core::sandbox::SandboxMode>,
    ) -> Result<mino_core::policy::Settings, Error> {
        self.agent
            .update_settings(approval_mode, sandbox)
            .map_err(|e| invalid_params(format!("the setting was not changed: {e}")))
    }

    /// Runs a slash command; its answer is the agent's message. A refusal
    /// for now (a turn or an unknown result waits) is an answer too; a
    /// failed save is an error, so nothing claims what the disk does not hold.
    /// `cancel` (the prompt's `session/cancel`) stops a `/compact`.
    async fn command(&self, command: Command, cancel: &CancellationToken) -> Result<String, Error> {
        let agent = &self.agent;
        match command {
            Command::ExtraText(name) => Ok(commands::extra_text(name)),
            // Asks the client, so `prompt` runs it (`rewind::run`).
            Command::Rewind(_) => Err(internal("/rewind is run by the prompt, not as a plain command")),
            Command::Rules => Ok(commands::rules_list(&agent.rules())),
            Command::Compact => match compact_until_cancelled(agent, cancel).await {
                Ok(outcome) => Ok(translate::compaction_notice(&outcome).trim().to_string()),
                Err(e) => match commands::refusal(&e) {
                    Some(why) => Ok(commands::compact_refused(&why)),
                    None => Err(agent_error(e)),
                },
            },
            Command::Mode(value) if value.is_empty() => Ok(commands::settings_shown(agent.settings().0)),
            Command::Sandbox(value) if value.is_empty() => Ok(commands::settings_shown(agent.settings().0)),
            Command::Mode(value) => Ok(match modes::approval_mode(&value) {
                Err(why) => format!("[Mino: {why}. Nothing was changed.]"),
                Ok(mode) => match self.update_settings(Some(mode), None) {
                    Ok(settings) => commands::settings_changed(settings),
                    Err(e) => format!("[Mino: {}]", e.message),
                },
            }),
            Command::Sandbox(value) => Ok(match modes::sandbox_mode(&value) {
                Err(why) => format!("[Mino: {why}. Nothing was changed.]"),
                Ok(sandbox) => match self.update_settings(None, Some(sandbox)) {
                    Ok(settings) => commands::settings_changed(settings),
                    Err(e) => format!("[Mino: {}]", e.message),
                },
            }),
            Command::Revoke(id) if id.is_empty() => Ok(commands::revoke_without_id(&agent.rules())),
            Command::Revoke(id) => {
                let rule = agent.rules().rules.into_iter().find(|r| r.id() == id);
                match (agent.revoke_rule(&id).await, rule) {
                    (Ok(()), Some(rule)) => Ok(commands::revoked(&rule)),
                    (Ok(()), None) => Ok(format!("Revoked rule `{id}`: the calls it covered ask again.")),
                    (Err(AgentError::Policy(PolicyError::UnknownRule(_))), _) => {
                        Ok(commands::unknown_rule(&id, &agent.rules()))
                    }
                    (Err(e), _) => Err(agent_error(e)),
                }
            }
        }
    }
}

/// The client's answer to a question, or `None` once `cancel` fires (a
/// cancel wins over an answer arriving at the same moment).
async fn unless_cancelled<T, E>(
    cancel: &CancellationToken,
    asked: impl std::future::Future<Output = Result<T, E>>,
) -> Result<Option<T>, E> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Ok(None),
        answer = asked => answer.map(Some),
    }
}

/// `Agent::compact`, cancelled (`Agent::cancel_compaction`) when `cancel`
/// fires: its answer then says what the disk holds (nothing changed, or the
/// compaction whose record's sync had begun).
async fn compact_until_cancelled(
    agent: &Agent,
    cancel: &CancellationToken,
) -> Result<mino_core::agent::CompactionOutcome, AgentError> {
    let compacting = agent.compact();
    tokio::pin!(compacting);
    // Biased: the compaction is polled first, so it holds the session
    // before a cancel that came early is passed on to it.
    tokio::select! {
        biased;
        outcome = &mut compacting => return outcome,
        () = cancel.cancelled() => {}
    }
    agent.cancel_compaction();
    compacting.await
}

/// Forwards one session's agent events as `session/update` notifications,
/// asks `session/request_permission` for each approval, and hands each
/// turn's end to the prompt waiting for it, after the turn's last update.
/// It takes the next event only once the client has read all but a few
/// updates ([`lines::Outbound::room`]): while it does not read, the events
/// wait in the agent's stream, where deltas merge.
async fn forward_events(
    session_id: String,
    session: Arc<AcpSession>,
    mut events: Events,
    ends: mpsc::UnboundedSender<TurnEnd>,
    cx: ConnectionTo<Client>,
    outbound: Arc<lines::Outbound>,
) {
    let agent = session.agent.clone();
    let mut calls = translate::LiveCalls::default();
    loop {
        outbound.room().await;
        // Live output waiting for its interval goes out when due.
        let due = calls.next_due(Instant::now());
        let next = tokio::select! {
            next = events.recv() => next,
            _ = sleep_until(due), if due.is_some() => {
                for update in calls.flush(&session_id, Instant::now()) {
                    log_send(outbound.send(&cx, update));
                }
                continue;
            }
        };
        let Some(Numbered { event, .. }) = next else { break };
        let event = match event {
            // Whoever changed it (this client, `/mode`, `mino/*`, Mino itself).
            mino_core::agent::AgentEvent::SettingsChanged { settings } => {
                for update in modes::changed(&session_id, session.offered_config_options(), settings) {
                    log_send(outbound.send(&cx, update));
                }
                continue;
            }
            mino_core::agent::AgentEvent::ResponseUsage { turn_id, usage, context_window } => {
                log_send(outbound.send(&cx, translate::usage_update(&session_id, &turn_id, usage, context_window)));
                continue;
            }
            event => event,
        };
        let view_of = |turn_id: &str, call_id: &str| {
            agent
                .with_session(|s| {
                    let turn = s.transcript().turn(turn_id);
                    // The call's result was just recorded: the last call with this id.
                    turn.and_then(|t| t.calls.iter().rev().find(|c| c.call_id == call_id))
                        .map(|c| translate::CallView::recorded(c, std::path::Path::new(s.cwd())))
                })
                .unwrap_or_else(|| translate::CallView::command(call_id))
        };
        let out = calls.translate(&session_id, event, view_of, Instant::now());
        for update in out.updates {
            log_send(outbound.send(&cx, update));
        }
        if let Some((turn_id, call_id, question)) = out.permission {
            tokio::spawn(ask_permission(agent.clone(), cx.clone(), (turn_id, call_id), question, out.always));
        }
        if let Some((turn_id, status, reason)) = out.ended {
            if let Some(notice) =
                agent.with_session(|s| s.transcript().turn(&turn_id).and_then(mino_core::transcript::Turn::notice))
            {
                log_send(outbound.send(&cx, translate::agent_message(&session_id, &notice)));
            }
            // Nobody waits when the prompt was dropped; the end is on file.
            let _ = ends.send(TurnEnd { turn_id, status, reason });
        }
    }
}

/// How long an edit waits for the editor's text of its file
/// (`fs/read_text_file`) before it reads the disk instead.
const READ_TEXT_FILE_WAIT: Duration = Duration::from_secs(5);

/// The editor's text of open files, asked with `fs/read_text_file` (the
/// client offered `fs.readTextFile`): a file open with unsaved changes
/// reads as the person sees it.
struct ClientBuffers {
    session_id: String,
    cx: ConnectionTo<Client>,
}

impl mino_core::buffers::OpenBuffers for ClientBuffers {
    fn text(&self, path: &std::path::Path) -> futures::future::BoxFuture<'static, Option<String>> {
        let request = ReadTextFileRequest::new(self.session_id.clone(), path.to_path_buf());
        let cx = self.cx.clone();
        let shown = path.display().to_string();
        Box::pin(async move {
            match tokio::time::timeout(READ_TEXT_FILE_WAIT, cx.send_request(request).block_task()).await {
                Ok(Ok(answer)) => Some(answer.content),
                Ok(Err(e)) => {
                    tracing::debug!(path = shown, "fs/read_text_file failed ({e}); reading the disk");
                    None
                }
                Err(_) => {
                    tracing::warn!(path = shown, "fs/read_text_file was not answered in time; reading the disk");
                    None
                }
            }
        })
    }
}

/// How long `terminal/create` may take before the command runs without
/// the editor's terminal.
const TERMINAL_CREATE_WAIT: Duration = Duration::from_secs(10);
/// How long a finished command's terminal may take to exit (its supervisor
/// exits once Mino saved the result) before it is killed.
const TERMINAL_EXIT_WAIT: Duration = Duration::from_secs(5);
/// How long `terminal/kill` and `terminal/release` may take.
const TERMINAL_TIDY_WAIT: Duration = Duration::from_secs(5);

/// The editor's terminals (`terminal/*`; the client offered `terminal`):
/// each approved command's supervisor, Mino's own, runs in one, so the
/// person sees its output where they work. The result is Mino's, from
/// that supervisor: `terminal/output` is never needed for it.
struct ClientTerminals {
    session_id: String,
    cx: ConnectionTo<Client>,
}

impl mino_core::terminal::CommandTerminals for ClientTerminals {
    fn create(
        &self,
        launch: mino_core::terminal::TerminalLaunch,
    ) -> futures::future::BoxFuture<'static, Result<String, String>> {
        let env = launch.env.into_iter().map(|(name, value)| EnvVariable::new(name, value)).collect();
        let request = CreateTerminalRequest::new(self.session_id.clone(), launch.program.display().to_string())
            .args(launch.args)
            .env(env)
            .cwd(launch.cwd)
            .output_byte_limit(launch.output_limit as u64);
        let cx = self.cx.clone();
        let session_id = self.session_id.clone();
        Box::pin(async move {
            // Answered after the wait, the terminal is never used (its
            // supervisor finds the socket gone and exits): it is released.
            let (answered, answer) = tokio::sync::oneshot::channel();
            let (late, late_session) = (cx.clone(), session_id.clone());
            tokio::spawn(async move {
                if let Err(Ok(created)) = answered.send(cx.send_request(request).block_task().await) {
                    let release = ReleaseTerminalRequest::new(late_session, created.terminal_id);
                    log_send(late.send_request(release).block_task().await.map(|_| ()));
                }
            });
            match tokio::time::timeout(TERMINAL_CREATE_WAIT, answer).await {
                Ok(Ok(Ok(created))) => Ok(created.terminal_id.0.to_string()),
                Ok(Ok(Err(e))) => Err(format!("terminal/create failed: {}", e.message)),
                Ok(Err(_)) => Err("terminal/create was not answered: the connection ended".to_string()),
                Err(_) => {
                    tracing::warn!(
                        session_id,
                        "terminal/create was not answered in time; Mino runs the command itself"
                    );
                    Err(format!("terminal/create was not answered within {} s", TERMINAL_CREATE_WAIT.as_secs()))
                }
            }
        })
    }

    fn finish(&self, terminal_id: String, kill: bool) -> futures::future::BoxFuture<'static, ()> {
        let cx = self.cx.clone();
        let session_id = self.session_id.clone();
        Box::pin(async move {
            let exited = !kill
                && matches!(
                    tokio::time::timeout(
                        TERMINAL_EXIT_WAIT,
                        cx.send_request(WaitForTerminalExitRequest::new(session_id.clone(), terminal_id.clone()))
                            .block_task()
                    )
                    .await,
                    Ok(Ok(_))
                );
            if !exited {
                let kill =
                    cx.send_request(KillTerminalRequest::new(session_id.clone(), terminal_id.clone())).block_task();
                if let Ok(Err(e)) = tokio::time::timeout(TERMINAL_TIDY_WAIT, kill).await {
                    tracing::debug!(terminal_id, "terminal/kill failed: {e}");
                }
            }
            let release = cx.send_request(ReleaseTerminalRequest::new(session_id, terminal_id.clone())).block_task();
            if let Ok(Err(e)) = tokio::time::timeout(TERMINAL_TIDY_WAIT, release).await {
                tracing::debug!(terminal_id, "terminal/release failed: {e}");
            }
        })
    }
}

/// Sleeps until `at` (never, for `None`; the select guard keeps it unpolled).
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// One approval: the client's answer becomes the core's decision. A
/// `cancelled` outcome records no decision: it cancels the turn, so the
/// call is recorded `not_executed`. `allow_always` / `reject_always` grant
/// `always` as a session rule (allow / deny), journaled before it applies.
async fn ask_permission(
    agent: Agent,
    cx: ConnectionTo<Client>,
    (turn_id, call_id): (String, String),
    question: RequestPermissionRequest,
    always: Option<SuggestedRule>,
) {
    // Only an option the question offered can decide it: an `allow-always`
    // not offered (an edit outside the workspace offers none) approves nothing.
    let offered: Vec<String> = question.options.iter().map(|o| o.option_id.0.to_string()).collect();
    let answer = match cx.send_request(question).block_task().await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(turn_id, call_id, "session/request_permission failed ({e}); cancelling the turn");
            let _ = agent.cancel(&turn_id);
            return;
        }
    };
    let rule_of = |always: Option<&SuggestedRule>, effect: RuleEffect| {
        let always = always?;
        Rule::new(Rule::new_id(), always.kind, &always.text, RuleScope::Session).ok().map(|r| r.with_effect(effect))
    };
    let rule = |effect: RuleEffect| rule_of(always.as_ref(), effect);
    // An MCP call's `-server` options: every tool of the call's server.
    let server_rule =
        |effect: RuleEffect| rule_of(always.as_ref().and_then(SuggestedRule::mcp_server_of).as_ref(), effect);
    let decision = match answer.outcome {
        RequestPermissionOutcome::Selected(selected) if !offered.iter().any(|o| **o == *selected.option_id.0) => {
            let why = translate::not_offered(&selected.option_id.0, &offered);
            tracing::warn!(turn_id, call_id, "{why}");
            Decision::Deny { reason: Some(why) }
        }
        RequestPermissionOutcome::Selected(selected) => match selected.option_id.0.as_ref() {
            translate::ALLOW_OPTION => Decision::Approve,
            translate::ALLOW_ALWAYS_OPTION => rule(RuleEffect::Allow).map_or(Decision::Approve, Decision::Allow),
            translate::REJECT_ALWAYS_OPTION => {
                rule(RuleEffect::Deny).map_or(Decision::Deny { reason: None }, Decision::DenyWithRule)
            }
            translate::ALLOW_ALWAYS_SERVER_OPTION => {
                server_rule(RuleEffect::Allow).map_or(Decision::Approve, Decision::Allow)
            }
            translate::REJECT_ALWAYS_SERVER_OPTION => {
                server_rule(RuleEffect::Deny).map_or(Decision::Deny { reason: None }, Decision::DenyWithRule)
            }
            _ => Decision::Deny { reason: None },
        },
        RequestPermissionOutcome::Cancelled => {
            if let Err(e) = agent.cancel(&turn_id) {
                tracing::debug!("permission cancelled: {e}");
            }
            return;
        }
        _ => Decision::Deny { reason: None },
    };
    // Refused when the turn was cancelled meanwhile: the cancel won.
    if let Err(e) = agent.decide(&turn_id, &call_id, decision) {
        tracing::debug!("permission answer not applied: {e}");
    }
}
