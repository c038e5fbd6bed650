//! The interactive loop: startup gate, banner, history, prompts and turns.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use mino_protocol::{
    error_code, ApprovalMode, ApprovalParams, ApprovalRequest, Decision, InitializationOptions, ModelSource,
    RecoveryNotification, RuleKind, RuleScope, SandboxMode, ServerCapabilities, SessionInfo, SettingsUpdateParams,
    TurnNotification as Turn,
};
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::client::{CallError, Launch, Server};
use crate::demo::Demo;
use crate::editor::{self, LineEditor, Read};
use crate::input::Input;
use crate::markdown::Markdown;
use crate::menu::{self, Choice, Picked};
use crate::notifications::{Event, Events};
use crate::reads::ReadLog;
use crate::{term, ui};

/// How long to wait for `mino/recovery` after `initialized` before going on without it.
const RECOVERY_WAIT: Duration = Duration::from_secs(15);

/// Exit codes.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
/// Ctrl+C before the session was ready (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

pub use crate::term::{out, out_shown};

/// Whether this terminal gets coloured diffs (see [`ui::colour_wanted`]).
fn colour() -> bool {
    use std::io::IsTerminal;
    ui::colour_wanted(std::io::stdout().is_terminal(), std::env::var_os("NO_COLOR").as_deref())
}

/// How the acknowledgement prompt ended.
enum Ack {
    Acknowledged,
    /// Not a terminal: nothing may be acknowledged from piped input.
    NoTerminal,
    /// Anything but `y`/`yes`; `ended` when input ended or Ctrl+C was pressed.
    Declined {
        ended: bool,
    },
    NotSaved(CallError),
}

/// Chat commands that switch sessions or list them.
const SESSION_COMMANDS_HELP: &str =
    "/new starts a new session, /sessions lists this directory's sessions, /open ID opens one (a unique start of its id will do), /compact summarises the conversation so far, /env shows the last command's full environment, /expand N shows the output of read #N (the last read without N), /image PATH attaches an image to your next question, /rewind [N] undoes Mino's edits of the last N turns (it shows what and asks first), /fork [N] continues in a new session holding this one up to the Nth-last turn (the last without N), this one kept as it is.";

/// How often the running command's elapsed time is redrawn.
const STATUS_TICK: Duration = Duration::from_secs(1);

/// What waiting for a line produced.
enum Answer {
    Line(String),
    Eof,
    Interrupt,
}

pub struct App {
    server: Server,
    events: Events,
    input: Input,
    sigint: Signal,
    demo: Option<Demo>,
    log_hint: String,
    capabilities: Option<ServerCapabilities>,
    /// The question prompt's line editor, on a capable terminal.
    editor: Option<LineEditor>,
    /// A terminal that moves the cursor: menus, the status line, markdown.
    fancy: bool,
    /// Where `@path` is looked up: the session's directory.
    workspace: PathBuf,
    /// The environment of the last command asked about (`/env`).
    last_environment: Option<std::collections::BTreeMap<String, String>>,
    /// The reads shown (one line each) and their output, for `/expand`.
    reads: ReadLog,
    /// Images attached with `/image`, sent with the next question.
    images: Vec<PathBuf>,
}

pub struct Options {
    pub launch: Launch,
    pub init: InitializationOptions,
    pub demo: Option<Demo>,
    pub log_hint: String,
    /// The session's directory (`@path` is relative to it).
    pub workspace: PathBuf,
}

impl App {
    /// Starts the server and opens the session; an `Err` carries the exit code
    /// after the reason has been printed.
    pub async fn start(options: Options) -> Result<App, i32> {
        let sigint = match signal(SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("mino: cannot handle Ctrl+C: {e}");
                return Err(EXIT_FAILURE);
            }
        };
        let program = options.launch.program.clone();
        let (server, events) = match Server::spawn(options.launch).await {
            Ok(pair) => pair,
            Err(e) => {
                eprintln!("mino: {e:#}");
                eprintln!("Build it with `cargo build -p mino-server`, put it beside `mino` or on PATH, or set MINO_SERVER to its path (tried {}).", program.display());
                return Err(EXIT_FAILURE);
            }
        };
        // Ctrl+C while the session opens quits at once (the server may be
        // slow to open a long session, or not answer at all).
        let mut sigint = sigint;
        let opened = tokio::select! {
            opened = server.initialize(&options.init) => opened,
            _ = sigint.recv() => {
                server.shutdown().await;
                return Err(EXIT_INTERRUPTED);
            }
        };
        let capabilities = match opened {
            Ok(c) => c,
            Err(e) => {
                match e {
                    e @ CallError::Server { .. } => eprintln!("mino: {e}"),
                    CallError::Connection(_) => {
                        eprintln!("mino: mino-server stopped before the session opened; {}", options.log_hint)
                    }
                }
                server.shutdown().await;
                return Err(EXIT_FAILURE);
            }
        };
        if let Err(e) = server.initialized().await {
            eprintln!("mino: {e}");
            server.shutdown().await;
            return Err(EXIT_FAILURE);
        }
        if let Some(warning) = capabilities.as_ref().and_then(|c| c.home_in_workspace.as_deref()) {
            eprintln!("mino: {warning}");
        }
        let fancy = term::capable();
        if fancy {
            term::guard_on_crash();
        }
        let editor = if fancy { LineEditor::new(options.workspace.clone()) } else { None };
        Ok(App {
            server,
            events,
            input: Input::start(),
            sigint,
            demo: options.demo,
            log_hint: options.log_hint,
            capabilities,
            editor,
            fancy,
            workspace: options.workspace,
            last_environment: None,
            reads: ReadLog::new(),
            images: Vec::new(),
        })
    }

    /// Runs until the user quits; returns the exit code.
    pub async fn run(mut self) -> i32 {
        let code = self.run_inner().await;
        self.server.shutdown().await;
        if self.fancy {
            term::restore();
        }
        code
    }

    async fn run_inner(&mut self) -> i32 {
        // The recovery notice, and the gate, come before the banner.
        let recovery = match self.wait_recovery(None).await {
            Ok(recovery) => recovery,
            Err(code) => return code,
        };
        if let Some(rec) = &recovery {
            out(&ui::recovery_notice(rec));
            if rec.acknowledgement_required {
                if let Err(code) = self.acknowledgement_gate().await {
                    return code;
                }
            }
        }
        if let Some(demo) = &self.demo {
            out(&demo.intro());
        }
        let title = match &self.capabilities {
            Some(c) => session_header(&c.session_id, c.title.as_deref()),
            None => format!("Mino {}", env!("CARGO_PKG_VERSION")),
        };
        let width = self.width();
        let settings = match &self.capabilities {
            Some(c) => format!(
                "{}\n{}\n",
                ui::wrap(&ui::mode_line(c.approval_mode, c.sandbox), width),
                ui::wrap(&ui::instructions_line(&c.instruction_files), width)
            ),
            None => String::new(),
        };
        out(&format!(
            "{}\n{settings}{}\n{}\n\n",
            ui::wrap(&title, width),
            ui::wrap(ui::BANNER, width),
            ui::wrap(SESSION_COMMANDS_HELP, width)
        ));
        match self.server.history().await {
            Ok(h) => self.show_history(&h),
            Err(e) => eprintln!("mino: could not load history: {e}"),
        }
        loop {
            for status in self.events.take_mcp_statuses() {
                if let Some(line) = ui::mcp_status_line(&status.status) {
                    out(&line);
                }
            }
            let text = match self.read_question().await {
                Answer::Line(l) => l,
                Answer::Eof => {
                    // A terminal shows nothing for Ctrl+D; piped input already ended its line.
                    if self.input.interactive {
                        out("\n");
                    }
                    return EXIT_OK;
                }
                Answer::Interrupt => {
                    out("\n");
                    return EXIT_OK;
                }
            };
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            if text == "/exit" {
                return EXIT_OK;
            }
            if text.starts_with('/') && self.rules_command(text).await {
                continue;
            }
            if text == "/image" || text.starts_with("/image ") {
                self.image_command(text["/image".len()..].trim());
                continue;
            }
            let switched = match text.split_whitespace().collect::<Vec<_>>()[..] {
                ["/sessions"] => Some(self.list_sessions().await),
                ["/new"] => {
                    let opened = self.server.new_session().await;
                    Some(self.switched(opened).await)
                }
                ["/open", id] => match self.resolve_session(id).await {
                    Ok(Some(id)) => {
                        let opened = self.server.open_session(&id).await;
                        Some(self.switched(opened).await)
                    }
                    Ok(None) => Some(Ok(())),
                    Err(code) => Some(Err(code)),
                },
                ["/fork"] => Some(self.fork_command("").await),
                ["/fork", n] => Some(self.fork_command(n).await),
                ["/env"] => {
                    match &self.last_environment {
                        Some(env) => out(&ui::environment_full(env)),
                        None => out("No command has been asked about yet in this run of mino.\n"),
                    }
                    out("\n");
                    Some(Ok(()))
                }
                ["/compact"] => {
                    out(&ui::compacted(self.server.compact().await));
                    Some(Ok(()))
                }
                ["/expand"] | ["/expand", _] => {
                    out(&self.reads.expand(text.split_whitespace().nth(1)));
                    out("\n");
                    Some(Ok(()))
                }
                ["/open", ..] | ["/new", ..] | ["/sessions", ..] | ["/compact", ..] | ["/fork", ..] => {
                    out(&format!("\n{SESSION_COMMANDS_HELP}\n\n"));
                    Some(Ok(()))
                }
                _ => None,
            };
            match switched {
                Some(Ok(())) => continue,
                Some(Err(code)) => return code,
                None => {}
            }
            let (question, notes) = editor::attach(text, &self.workspace);
            for note in &notes {
                out(&format!("{note}\n"));
            }
            if let Some(demo) = &mut self.demo {
                demo.before_chat(text);
            }
            let asked = if self.images.is_empty() {
                self.server.chat(&question).await
            } else {
                self.server.chat_with_images(&question, &self.images).await
            };
            let turn_id = match asked {
                Ok(r) => {
                    self.images.clear();
                    r.turn_id
                }
                Err(CallError::Connection(_)) => return self.server_gone(),
                Err(e) => {
                    out(&format!("\nError: {e}\n"));
                    if !self.images.is_empty() {
                        out(&format!(
                            "Your question was not sent; {} still attached (/image clear drops them; the question is in your history, press Up).\n",
                            attached_count(self.images.len())
                        ));
                    }
                    if e.code() == Some(error_code::ACKNOWLEDGEMENT_REQUIRED) {
                        out("Restart mino in a terminal to review and acknowledge them.\n");
                    }
                    out("\n");
                    continue;
                }
            };
            // `Assistant>` waits for the answer's first text: a turn that
            // starts with reads or a command shows them first, with no
            // empty `Assistant>` line above them.
            out("\n");
            match self.run_turn(&turn_id).await {
                TurnEnd::Ended => {}
                TurnEnd::Quit => return EXIT_OK,
                TurnEnd::ServerGone => return self.server_gone(),
            }
        }
    }

    /// `/image PATH` attaches an image to the next question (relative to
    /// the session's directory); `/image` lists what is attached; `/image
    /// clear` drops it. The server checks the bytes and the bounds when the
    /// question is sent; here only that the file is there and not too large.
    fn image_command(&mut self, arg: &str) {
        match arg {
            "" if self.images.is_empty() => {
                out("No image attached. /image PATH attaches one to your next question.\n\n")
            }
            "" => {
                for path in &self.images {
                    out(&format!("[image: {}]\n", path.display()));
                }
                out("\n");
            }
            "clear" => {
                self.images.clear();
                out("Attached images dropped.\n\n");
            }
            _ if self.images.len() >= mino_protocol::MAX_IMAGES => out(&format!(
                "Not attached: at most {} images go with one question (/image clear drops them).\n\n",
                mino_protocol::MAX_IMAGES
            )),
            path => {
                let path = self.workspace.join(path.strip_prefix('@').unwrap_or(path));
                match attachable(&path) {
                    Ok(size) => {
                        self.images.push(path.clone());
                        out(&format!(
                            "Attached {} ({}); {} go with your next question.\n\n",
                            path.display(),
                            ui::human_size(size),
                            attached_count(self.images.len())
                        ));
                    }
                    Err(why) => out(&format!("Not attached: {why}\n\n")),
                }
            }
        }
    }

    /// Restored history; its answers rendered as markdown where live ones are.
    fn show_history(&mut self, h: &mino_protocol::HistoryResult) {
        if !(self.fancy && colour()) {
            out(&ui::history(h, &mut self.reads));
            return;
        }
        let mut render = |text: &str| {
            let mut md = Markdown::new();
            let mut shown = md.push(&format!("{text}\n"), None);
            shown.push_str(&md.finish(None));
            shown
        };
        out_shown(&ui::history_with(h, &mut self.reads, Some(&mut render)));
    }

    /// The terminal's width, where lines are wrapped to fit it.
    fn width(&self) -> Option<usize> {
        if self.input.interactive {
            term::width()
        } else {
            None
        }
    }

    /// The question prompt: the line editor on a capable terminal (a paste
    /// is one question, Tab completes `@path`), else a plain line.
    async fn read_question(&mut self) -> Answer {
        if let Some(editor) = &mut self.editor {
            return match editor.read(ui::USER_PROMPT).await {
                Read::Line(l) => Answer::Line(l),
                Read::Eof => Answer::Eof,
                Read::Interrupt => Answer::Interrupt,
            };
        }
        out(ui::USER_PROMPT);
        self.read_answer().await
    }

    /// `/open PREFIX`: the one session of this directory whose id starts
    /// with `prefix` (the whole id also opens one of another directory).
    /// `Ok(None)` when none or several match (said, with the candidates).
    async fn resolve_session(&mut self, prefix: &str) -> Result<Option<String>, i32> {
        let page = match self.server.sessions().await {
            Ok(page) => page,
            Err(CallError::Connection(_)) => return Err(self.server_gone()),
            // Listing failed: let the server say what it makes of the id.
            Err(_) => return Ok(Some(prefix.to_owned())),
        };
        if page.sessions.iter().any(|s| s.session_id == prefix) {
            return Ok(Some(prefix.to_owned()));
        }
        let matching: Vec<_> = page.sessions.iter().filter(|s| s.session_id.starts_with(prefix)).cloned().collect();
        match matching.len() {
            1 => Ok(Some(matching[0].session_id.clone())),
            // Perhaps a whole id of another directory's session.
            0 => Ok(Some(prefix.to_owned())),
            n => {
                out(&format!(
                    "\n{n} sessions start with {}; type more of the id:\n{}\n",
                    crate::term::printable(prefix),
                    ui::sessions(&matching, "current")
                ));
                Ok(None)
            }
        }
    }

    fn server_gone(&self) -> i32 {
        out("\n");
        eprintln!("mino: mino-server stopped unexpectedly; {}", self.log_hint);
        EXIT_FAILURE
    }

    /// Waits for the `mino/recovery` notification sent after `initialized`,
    /// or after a switch to `session` (that session's).
    /// `Err(code)` when Ctrl+C asked to quit while waiting.
    async fn wait_recovery(&mut self, session: Option<&str>) -> Result<Option<RecoveryNotification>, i32> {
        let deadline = tokio::time::sleep(RECOVERY_WAIT);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                ev = self.events.next() => match ev {
                    Some(Event::Recovery(r)) if session.is_none_or(|id| r.session_id == id) => return Ok(Some(r)),
                    Some(other) => tracing::debug!("notification before recovery: {other:?}"),
                    None => return Ok(None),
                },
                _ = &mut deadline => {
                    tracing::warn!("no mino/recovery notification within {RECOVERY_WAIT:?}");
                    return Ok(None);
                }
                _ = self.sigint.recv() => return Err(EXIT_INTERRUPTED),
            }
        }
    }

    /// Asks before the banner; only `y`/`yes` acknowledges. `Err(code)` means exit.
    async fn acknowledgement_gate(&mut self) -> Result<(), i32> {
        match self.ask_acknowledgement().await {
            Ack::Acknowledged => Ok(()),
            Ack::NoTerminal => {
                eprintln!("{}", ui::ACK_NEEDS_TTY);
                Err(EXIT_FAILURE)
            }
            Ack::Declined { ended } => {
                let newline = if ended { "\n" } else { "" };
                out(&format!("{newline}Nothing was acknowledged. Mino will ask again on the next start.\n"));
                Err(EXIT_FAILURE)
            }
            Ack::NotSaved(e) => {
                eprintln!("mino: the acknowledgement was not saved: {e}");
                Err(EXIT_FAILURE)
            }
        }
    }

    /// The acknowledgement question (only in a terminal, never answered by
    /// input typed before it appeared), and `mino/acknowledge` on `y`/`yes`.
    async fn ask_acknowledgement(&mut self) -> Ack {
        if !self.input.interactive {
            return Ack::NoTerminal;
        }
        self.input.discard_typed_ahead();
        out(ui::ACK_QUESTION);
        match self.read_answer().await {
            Answer::Line(a) if ui::is_yes(&a) => {}
            Answer::Line(_) => return Ack::Declined { ended: false },
            Answer::Eof | Answer::Interrupt => return Ack::Declined { ended: true },
        }
        match self.server.acknowledge(None).await {
            Ok(_) => Ack::Acknowledged,
            Err(e) => Ack::NotSaved(e),
        }
    }

    /// After `/new` or `/open`: the new session's recovery (and its gate, as
    /// at startup, except that declining keeps mino running in the session,
    /// where chat stays refused), then its header and history. `Err(code)`
    /// means exit.
    async fn switched(&mut self, switched: Result<SessionInfo, CallError>) -> Result<(), i32> {
        let info = match switched {
            Ok(info) => info,
            Err(CallError::Connection(_)) => return Err(self.server_gone()),
            Err(e) => {
                out(&format!("\nError: {e}\n\n"));
                return Ok(());
            }
        };
        let recovery = self.wait_recovery(Some(&info.session_id)).await?;
        if let Some(rec) = &recovery {
            out(&ui::recovery_notice(rec));
            if rec.acknowledgement_required {
                let refused = "Chat in this session is refused until they are acknowledged";
                match self.ask_acknowledgement().await {
                    Ack::Acknowledged => {}
                    Ack::NoTerminal => {
                        eprintln!("{}", ui::ACK_NEEDS_TTY);
                        out(&format!("{refused}: /open {} in a terminal, or /new.\n", info.session_id));
                    }
                    Ack::Declined { ended } => {
                        let newline = if ended { "\n" } else { "" };
                        out(&format!(
                            "{newline}Nothing was acknowledged. {refused}: /open {} again to be asked, or /new.\n",
                            info.session_id
                        ));
                    }
                    Ack::NotSaved(CallError::Connection(_)) => return Err(self.server_gone()),
                    Ack::NotSaved(e) => eprintln!("mino: the acknowledgement was not saved: {e}"),
                }
            }
        }
        out(&format!("\n{}\n", session_header(&info.session_id, info.title.as_deref())));
        // Another session's reads: its history numbers them from 1.
        self.reads.clear();
        match self.server.history().await {
            Ok(h) => {
                out(&format!("{}\n\n", ui::wrap(&ui::instructions_line(&h.instruction_files), self.width())));
                self.show_history(&h)
            }
            Err(e) => eprintln!("mino: could not load history: {e}"),
        }
        Ok(())
    }

    /// `/sessions`: this directory's sessions.
    async fn list_sessions(&mut self) -> Result<(), i32> {
        match self.server.sessions().await {
            Ok(page) => out(&format!("\n{}\n", ui::sessions(&page.sessions, "current"))),
            Err(CallError::Connection(_)) => return Err(self.server_gone()),
            Err(e) => out(&format!("\nError: {e}\n\n")),
        }
        Ok(())
    }

    /// `mino --list`: prints this directory's sessions; the one the server
    /// opened to list them is the one `mino` would open next.
    pub async fn print_sessions(self) -> i32 {
        let code = match self.server.sessions().await {
            Ok(page) => {
                out("Sessions of this directory, most recently active first:\n");
                out(&ui::sessions(&page.sessions, "mino opens this one"));
                EXIT_OK
            }
            Err(e) => {
                eprintln!("mino: could not list the sessions: {e}");
                EXIT_FAILURE
            }
        };
        self.server.shutdown().await;
        code
    }

    async fn read_answer(&mut self) -> Answer {
        tokio::select! {
            line = self.input.recv() => match line {
                Some(l) => Answer::Line(l),
                None => Answer::Eof,
            },
            _ = self.sigint.recv() => Answer::Interrupt,
        }
    }

    async fn run_turn(&mut self, turn_id: &str) -> TurnEnd {
        let mut view = TurnView {
            at_line_start: true,
            needs_prefix: true,
            pending_space: false,
            streamed: HashSet::new(),
            announced: HashSet::new(),
            text_seen: false,
            markdown: (self.fancy && colour()).then(Markdown::new),
            width: self.width(),
            running: None,
            status_shown: false,
        };
        let mut ticker = tokio::time::interval(STATUS_TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut cancelling = false;
        // Approvals and cancels sent and not yet answered. They are awaited
        // here beside the notifications, never instead of them: the answer
        // may come after a command's whole output, which must be read (and
        // shown) for the server to get that far.
        let mut calls = FuturesUnordered::new();
        loop {
            // Biased: the calls are polled first on every pass, so each
            // request is written at once however fast notifications come.
            let ev = tokio::select! {
                biased;
                Some(answer) = calls.next(), if !calls.is_empty() => {
                    view.clear_status();
                    match answer {
                        (_, Ok(_)) => {}
                        (_, Err(CallError::Connection(_))) => return TurnEnd::ServerGone,
                        // The turn may have ended on its own before the cancel arrived.
                        (Sent::Cancel, Err(e)) if e.code() == Some(error_code::UNKNOWN_TURN) => {}
                        // A rule the server refused: the call still waits, so ask again.
                        (Sent::Approval(req), Err(e)) if e.code() == Some(INVALID_PARAMS) => {
                            view.newline();
                            out(&format!("Error: {e}\n"));
                            match self.ask_approval(&req, &mut view).await {
                                Some(params) => calls.push(sent(Sent::Approval(req), self.server.approval(params))),
                                None => {
                                    cancelling = true;
                                    calls.push(sent(Sent::Cancel, self.server.cancel(turn_id)));
                                }
                            }
                        }
                        (_, Err(e)) => {
                            view.newline();
                            out(&format!("Error: {e}\n"));
                        }
                    }
                    continue;
                }
                _ = ticker.tick(), if view.running.is_some() => {
                    view.draw_status();
                    continue;
                }
                _ = self.sigint.recv() => {
                    view.clear_status();
                    if cancelling {
                        out("\n");
                        return TurnEnd::Quit;
                    }
                    cancelling = true;
                    self.interrupted(&mut view);
                    calls.push(sent(Sent::Cancel, self.server.cancel(turn_id)));
                    continue;
                }
                ev = self.events.next() => ev,
            };
            view.clear_status();
            let Some(ev) = ev else {
                return TurnEnd::ServerGone;
            };
            let ev = match ev {
                Event::Turn(ev) if ev.turn_id() == turn_id => ev,
                // A compaction inside the turn (automatic, or after
                // `context_length_exceeded`): the wait is the summary request.
                Event::CompactionStarted(c) if c.turn_id.as_deref() == Some(turn_id) => {
                    view.newline();
                    out("Compacting the conversation…\n");
                    view.at_line_start = true;
                    continue;
                }
                Event::CompactionEnded(c) if c.turn_id.as_deref() == Some(turn_id) => {
                    view.newline();
                    out(&ui::compacted(Ok::<_, std::convert::Infallible>(c.result)));
                    view.at_line_start = true;
                    continue;
                }
                // An AGENTS.md edited (or added, removed) during the turn:
                // the next request is built from these.
                Event::InstructionsChanged(c) => {
                    view.newline();
                    out(&format!("[the project's instructions changed] {}\n", ui::instructions_line(&c.files)));
                    view.at_line_start = true;
                    continue;
                }
                Event::McpStatus(status) => {
                    if let Some(line) = ui::mcp_status_line(&status.status) {
                        view.newline();
                        out(&line);
                        view.at_line_start = true;
                    }
                    continue;
                }
                other => {
                    tracing::debug!("notification of another turn: {other:?}");
                    continue;
                }
            };
            match ev {
                Turn::TurnStarted(_) => {}
                Turn::ToolStarted(started) if started.read.is_some() => {
                    // A read is one line, at its result; the status line
                    // says meanwhile what it reads.
                    view.announced.insert(started.call_id.clone());
                    if let (true, Some(read)) = (self.fancy, &started.read) {
                        view.running = Some((ui::read_what(read), std::time::Instant::now()));
                        ticker.reset();
                        view.draw_status();
                    }
                }
                Turn::ToolStarted(started) => {
                    // A call nobody was asked about (a rule or the sandbox
                    // approved it) says here what runs.
                    if view.announced.insert(started.call_id.clone()) {
                        view.newline();
                        out(&format!("{}\n", ui::command_line(&started.command)));
                    }
                    if let Some(note) = ui::approval_note(Some(&started.approved_by), Some(started.sandbox)) {
                        view.newline();
                        out(&format!("{note}\n"));
                    }
                    if self.fancy {
                        view.running = Some((started.command.clone(), std::time::Instant::now()));
                        ticker.reset();
                        view.draw_status();
                    }
                }
                Turn::TextDelta(d) => {
                    if d.delta.is_empty() {
                        continue;
                    }
                    view.text(&d.delta);
                }
                Turn::Retrying(r) => {
                    // Printed text cannot be taken back; say that what
                    // follows replaces it.
                    view.newline();
                    out(&format!(
                        "[connection to the model failed ({}); retrying in {:.1}s; the answer starts again below]\n",
                        r.reason,
                        r.delay_ms as f64 / 1000.0
                    ));
                    view.at_line_start = true;
                }
                Turn::ApprovalRequest(req) => {
                    view.announced.insert(req.call_id.clone());
                    view.newline();
                    if req.edit.is_none() && req.read.is_none() {
                        self.last_environment = Some(req.environment.clone());
                    }
                    // The menu lists the choices itself.
                    let choices_line = |c: &str| if self.fancy { String::new() } else { format!("{c}\n") };
                    match (&req.edit, &req.read) {
                        (None, None) if req.mcp.is_some() => {
                            let screen = ui::mcp_approval_screen(&req);
                            let c = ui::APPROVE_CHOICES_MCP;
                            out_shown(&screen.replace(&format!("{c}\n"), &choices_line(c)));
                        }
                        (None, Some(read)) => {
                            let screen = ui::read_approval_screen(&req, read, colour());
                            let c = ui::APPROVE_CHOICES_OUTSIDE;
                            out_shown(&screen.replace(&format!("{c}\n"), &choices_line(c)));
                        }
                        (Some(edit), _) => {
                            let screen = ui::edit_approval_screen(&req, edit, colour());
                            let c =
                                if edit.leaves_workspace { ui::APPROVE_CHOICES_OUTSIDE } else { ui::APPROVE_CHOICES };
                            out_shown(&screen.replace(&format!("{c}\n"), &choices_line(c)));
                        }
                        (None, None) => {
                            let screen = ui::approval_screen(&req);
                            let c = ui::APPROVE_CHOICES;
                            out(&ui::wrap(&screen.replace(&format!("{c}\n"), &choices_line(c)), self.width()));
                        }
                    }
                    let Some(params) = self.ask_approval(&req, &mut view).await else {
                        cancelling = true;
                        calls.push(sent(Sent::Cancel, self.server.cancel(turn_id)));
                        continue;
                    };
                    if let Some(demo) = &mut self.demo {
                        demo.before_decision(params.decision);
                    }
                    calls.push(sent(Sent::Approval(Box::new(req)), self.server.approval(params)));
                }
                Turn::ToolOutput(o) => {
                    if o.chunk.is_empty() {
                        continue;
                    }
                    view.streamed.insert(o.call_id.clone());
                    out(&o.chunk);
                    view.at_line_start = o.chunk.ends_with('\n');
                }
                Turn::ToolResult(r) if r.read.is_some() => {
                    view.running = None;
                    view.announced.remove(&r.call_id);
                    view.streamed.remove(&r.call_id);
                    let Some(read) = &r.read else { continue };
                    let line = ui::read_line(self.reads.next_number(), read, Some((r.status, &r.output)));
                    self.reads.add(line.clone(), r.output.clone());
                    view.newline();
                    out_shown(&ui::read_shown(&line, self.fancy && colour()));
                    view.at_line_start = true;
                    view.needs_prefix = true;
                }
                Turn::ToolResult(r) => {
                    view.running = None;
                    if !view.announced.remove(&r.call_id) {
                        if let Some(command) = &r.command {
                            view.newline();
                            out(&format!("{}\n", ui::command_line(command)));
                        }
                    }
                    // Removed, not just read: a model may reuse the id for a
                    // later call of this turn, whose output is its own.
                    if !view.streamed.remove(&r.call_id) && !r.output.is_empty() {
                        view.newline();
                        let shown = ui::result_output(&r.output, r.diff.is_some(), colour());
                        out_shown(&shown);
                        view.at_line_start = shown.ends_with('\n');
                    }
                    view.newline();
                    out(&format!("{}\n", ui::result_line(r.status, r.exit_code)));
                    view.at_line_start = true;
                    view.needs_prefix = true;
                }
                Turn::TurnEnded(end) => {
                    view.running = None;
                    if !view.text_seen {
                        if let Some(text) = end.text.as_deref().filter(|t| !t.is_empty()) {
                            view.text(text);
                        }
                    }
                    view.finish_text();
                    view.newline();
                    if let Some(line) = ui::turn_end_line(end.status, end.reason.as_deref()) {
                        out(&format!("{line}\n"));
                    }
                    if let Some(line) = ui::usage_line(end.usage.as_ref(), end.session_usage.as_ref()) {
                        out(&format!("{line}\n"));
                    }
                    out("\n");
                    return TurnEnd::Ended;
                }
            }
        }
    }

    /// Asks the approval question (and, for `a`/`w`, the rule). Lines typed
    /// before each question are dropped; declining is the default. `None`
    /// when Ctrl+C cancelled the turn instead.
    async fn ask_approval(&mut self, req: &ApprovalRequest, view: &mut TurnView) -> Option<ApprovalParams> {
        let answer = loop {
            self.input.discard_typed_ahead();
            let answer = if self.fancy {
                view.at_line_start = true;
                match self.approval_menu(req).await {
                    Some(answer) => answer,
                    None => {
                        self.interrupted(view);
                        return None;
                    }
                }
            } else {
                out(ui::APPROVE_QUESTION);
                view.at_line_start = true;
                match self.read_answer().await {
                    Answer::Line(a) => ui::approval_answer(&a),
                    Answer::Eof => ui::ApprovalAnswer::Deny(None),
                    Answer::Interrupt => {
                        view.at_line_start = false;
                        self.interrupted(view);
                        return None;
                    }
                }
            };
            if answer == ui::ApprovalAnswer::ShowEnvironment {
                out(&ui::environment_full(&req.environment));
                continue;
            }
            break answer;
        };
        let mut params = ApprovalParams::new(req.turn_id.clone(), req.call_id.clone(), Decision::Deny);
        let (scope, decision) = match answer {
            ui::ApprovalAnswer::Approve => {
                params.decision = Decision::Approve;
                return Some(params);
            }
            ui::ApprovalAnswer::Deny(reason) => {
                params.reason = reason;
                return Some(params);
            }
            ui::ApprovalAnswer::AllowSession => (RuleScope::Session, Decision::AllowSession),
            ui::ApprovalAnswer::AllowWorkspace => (RuleScope::Workspace, Decision::AllowWorkspace),
            ui::ApprovalAnswer::DenySession => (RuleScope::Session, Decision::DenySession),
            ui::ApprovalAnswer::DenyWorkspace => (RuleScope::Workspace, Decision::DenyWorkspace),
            // Answered above by showing it and asking again.
            ui::ApprovalAnswer::ShowEnvironment => return Some(params),
        };
        let deny = matches!(decision, Decision::DenySession | Decision::DenyWorkspace);
        if req.mcp.is_some() {
            let Some(suggested) = req.suggested_rule.as_ref().filter(|r| r.kind == RuleKind::Mcp) else {
                out("[no rule can name this MCP tool: denied]\n");
                return Some(params);
            };
            // The rule question lets something act: nothing typed before it counts.
            self.input.discard_typed_ahead();
            out(&ui::mcp_rule_question(scope, deny, suggested));
            let rule = match self.read_answer().await {
                Answer::Line(a) => ui::mcp_rule_answer(&a, suggested),
                Answer::Eof => None,
                Answer::Interrupt => {
                    view.at_line_start = false;
                    self.interrupted(view);
                    return None;
                }
            };
            match rule {
                Some(rule) => {
                    if let Some(note) = ui::granted_note(req.approval_mode) {
                        out(&format!("{note}\n"));
                    }
                    params.decision = decision;
                    params.rule = Some(rule);
                }
                None => out("[no rule given: denied]\n"),
            }
            return Some(params);
        }
        if req.edit.as_ref().is_some_and(|e| e.leaves_workspace) || req.read.is_some() {
            out("[no rule covers a path outside the session's directory: denied]\n");
            return Some(params);
        }
        let edit = req.edit.is_some();
        self.input.discard_typed_ahead();
        out(&ui::rule_question(scope, deny, edit, req.suggested_rule.as_ref()));
        let rule = match self.read_answer().await {
            Answer::Line(a) => ui::rule_answer(&a, edit, req.suggested_rule.as_ref()),
            Answer::Eof => None,
            Answer::Interrupt => {
                view.at_line_start = false;
                self.interrupted(view);
                return None;
            }
        };
        match rule {
            Some(rule) => {
                if let Some(note) = ui::granted_note(req.approval_mode) {
                    out(&format!("{note}\n"));
                }
                params.decision = decision;
                params.rule = Some(rule);
            }
            None => out("[no rule given: denied]\n"),
        }
        Some(params)
    }

    /// The approval question as a menu (declining highlighted first);
    /// `None` for Ctrl+C.
    async fn approval_menu(&mut self, req: &ApprovalRequest) -> Option<ui::ApprovalAnswer> {
        let mut choices = vec![Choice { key: "n", label: "Deny" }, Choice { key: "y", label: "Approve once" }];
        // A read asks only when it leaves the session's directory, which no rule covers.
        if req.mcp.is_some() {
            // Each asks next: this tool (Enter) or every tool of its server (`*`).
            choices.extend([
                Choice { key: "a", label: "Always allow, this session: this tool or every tool of its server" },
                Choice { key: "w", label: "Always allow, this workspace: this tool or every tool of its server" },
                Choice { key: "d", label: "Always deny, this session (a rule)" },
                Choice { key: "D", label: "Always deny, this workspace (a rule)" },
            ]);
        } else if !req.edit.as_ref().is_some_and(|e| e.leaves_workspace) && req.read.is_none() {
            choices.extend([
                Choice { key: "a", label: "Allow for this session (a rule)" },
                Choice { key: "w", label: "Allow in this workspace (a rule)" },
                Choice { key: "d", label: "Deny for this session (a rule)" },
                Choice { key: "D", label: "Deny in this workspace (a rule)" },
            ]);
        }
        if req.edit.is_none() && req.read.is_none() && ui::environment_line(&req.environment).1 {
            choices.push(Choice { key: "e", label: "Show the full environment" });
        }
        let picked = pick_menu(ui::APPROVE_QUESTION.trim_end().trim_end_matches("[y/N]").trim_end(), choices).await;
        match picked.0 {
            Picked::Choice(i) => Some(ui::approval_answer(picked.1[i].key)),
            Picked::Typed(t) => Some(ui::approval_answer(&t)),
            Picked::Eof => Some(ui::ApprovalAnswer::Deny(None)),
            Picked::Interrupt => None,
        }
    }

    /// A yes/no question whose answer lets something happen: No unless the
    /// person says yes to the question on screen (type-ahead is dropped).
    async fn confirm(&mut self, question: &str) -> bool {
        self.input.discard_typed_ahead();
        if self.fancy {
            let choices = vec![Choice { key: "n", label: "No" }, Choice { key: "y", label: "Yes" }];
            let (picked, choices) = pick_menu(question, choices).await;
            return match picked {
                Picked::Choice(i) => choices[i].key == "y",
                Picked::Typed(t) => ui::is_yes(&t),
                Picked::Eof | Picked::Interrupt => false,
            };
        }
        out(&format!("{question} [y/N] "));
        match self.read_answer().await {
            Answer::Line(a) => ui::is_yes(&a),
            Answer::Eof | Answer::Interrupt => {
                out("\n");
                false
            }
        }
    }

    /// `/rewind [N]`: undoes what Mino's edits changed in the last N turns
    /// (1 without N) that are not rewound yet. The plan is shown first
    /// (files put back, conflicts left as they are, commands that cannot be
    /// undone) and nothing is written unless the person says yes to it;
    /// No is the default and typed-ahead input is dropped (`confirm`).
    async fn rewind_command(&mut self, arg: &str) {
        let back = match arg {
            "" => 1,
            n => match n.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => return out("Usage: /rewind [N]: undo Mino's edits of the last N turns (1 without N).\n"),
            },
        };
        let history = match self.server.history().await {
            Ok(history) => history,
            Err(e) => return out(&format!("Error: {e}\n")),
        };
        let live: Vec<&mino_protocol::HistoryTurn> = history.turns.iter().filter(|t| !t.rewound).collect();
        let Some(first) = live.len().checked_sub(back).map(|i| live[i]) else {
            return out(&format!("Nothing to rewind that far: this session has {} turn(s) not rewound.\n", live.len()));
        };
        let plan = match self.server.rewind_plan(&first.turn_id).await {
            Ok(plan) => plan,
            Err(e) => return out(&format!("Error: {e}\n")),
        };
        out(&ui::rewind_plan(&plan));
        if plan.files.is_empty() {
            return out("Nothing of Mino's to put back in those turns; nothing was changed.\n");
        }
        if !self.confirm("Rewind: put these files back?").await {
            return out("Nothing was changed.\n");
        }
        match self.server.rewind(&plan.turn_id, &plan.digest).await {
            Ok(done) => out(&ui::rewind_outcome(&done)),
            Err(e) if e.code() == Some(error_code::REWIND_PLAN_CHANGED) => out(&format!(
                "Nothing was changed: the files changed since the plan was shown ({e}). /rewind shows the new plan.\n"
            )),
            Err(e) => out(&format!("Error: {e}\n")),
        }
    }

    /// `/fork [N]`: a new session holding this one's history up to and
    /// including the Nth-last turn not rewound (the last without N), which
    /// becomes the current one; this session is kept as it is. It acts on no
    /// file, so it asks nothing (and so no typed-ahead line can answer
    /// anything). `Err(code)` means exit.
    async fn fork_command(&mut self, arg: &str) -> Result<(), i32> {
        let back = match arg {
            "" => 1,
            n => match n.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    out("Usage: /fork [N]: continue in a new session holding this one up to the Nth-last turn (1 without N).\n");
                    return Ok(());
                }
            },
        };
        let history = match self.server.history().await {
            Ok(history) => history,
            Err(CallError::Connection(_)) => return Err(self.server_gone()),
            Err(e) => {
                out(&format!("Error: {e}\n"));
                return Ok(());
            }
        };
        let live: Vec<&mino_protocol::HistoryTurn> = history.turns.iter().filter(|t| !t.rewound).collect();
        let Some(last) = live.len().checked_sub(back).map(|i| live[i]) else {
            out(&format!("Nothing to fork that far: this session has {} turn(s) not rewound.\n", live.len()));
            return Ok(());
        };
        let forked = match self.server.fork_session(&history.session_id, &last.turn_id).await {
            Ok(forked) => forked,
            Err(CallError::Connection(_)) => return Err(self.server_gone()),
            Err(e) => {
                out(&format!("Error: {e}\n"));
                return Ok(());
            }
        };
        out(&format!(
            "Forked {} turn(s) (through {}) of session {} into session {}; continuing there (/open {} goes back).\n",
            forked.turns, last.turn_id, history.session_id, forked.session_id, history.session_id
        ));
        let opened = self.server.open_session(&forked.session_id).await;
        self.switched(opened).await
    }

    /// `/rules`, `/revoke ID`, `/mode MODE`, `/sandbox MODE`, `/model [NAME]`: `true` when
    /// `text` was one of them (and has been handled).
    async fn rules_command(&mut self, text: &str) -> bool {
        let (command, arg) = text.split_once(' ').map_or((text, ""), |(c, a)| (c, a.trim()));
        match command {
            "/mcp" if arg.is_empty() => match self.server.mcp_list().await {
                Ok(list) => out(&ui::mcp_list(&list)),
                Err(e) => out(&format!("Error: {e}\n")),
            },
            "/mcp" => match arg.split_whitespace().collect::<Vec<_>>()[..] {
                ["restart", name] => {
                    out(&format!("Restarting MCP server `{}`…\n", crate::term::printable(name)));
                    match self.server.mcp_restart(name).await {
                        Ok(status) => out(&ui::mcp_status_line(&status).unwrap_or_else(|| ui::mcp_list_line(&status))),
                        Err(e) => out(&format!("Error: {e}\n")),
                    }
                }
                _ => out("Usage: /mcp (list the MCP servers) or /mcp restart NAME\n"),
            },
            "/rewind" => self.rewind_command(arg).await,
            "/rules" => match self.server.rules_list().await {
                Ok(list) => out(&ui::rules_list(&list)),
                Err(e) => out(&format!("Error: {e}\n")),
            },
            "/revoke" if !arg.is_empty() => match self.server.rules_revoke(arg).await {
                Ok(_) => out(&format!("Rule {arg} revoked.\n")),
                Err(e) => out(&format!("Error: {e}\n")),
            },
            "/model" if arg.is_empty() => match self.server.models_list().await {
                Ok(list) => out(&ui::models_list(&list)),
                Err(e) => out(&format!("Error: {e}\n")),
            },
            "/model" => {
                // A name the service does not list is most often a typo,
                // which every later question would then fail on.
                match self.server.models_list().await {
                    Ok(list) if list.source == ModelSource::Service && !list.models.iter().any(|m| m.id == arg) => {
                        let question = format!(
                            "The service does not list a model named {}; /model shows those it does. Use it anyway?",
                            crate::term::printable(arg)
                        );
                        if !self.confirm(&question).await {
                            out(&format!("This session keeps {}.\n\n", list.current));
                            return true;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => out(&format!("[the service's models could not be checked: {e}]\n")),
                }
                match self.server.models_select(arg).await {
                    Ok(chosen) => {
                        out(&format!("This session now uses {} (from the next question on).\n", chosen.model))
                    }
                    Err(e) => out(&format!("Error: {e}\n")),
                }
            }
            "/mode" | "/sandbox" => {
                let mut params = SettingsUpdateParams::default();
                if command == "/mode" {
                    params.approval_mode = ApprovalMode::ALL.iter().copied().find(|m| m.as_str() == arg);
                } else {
                    params.sandbox = SandboxMode::ALL.iter().copied().find(|m| m.as_str() == arg);
                }
                if params.approval_mode.is_none() && params.sandbox.is_none() {
                    let names = |all: &[&str]| all.join("|");
                    out(&format!(
                        "Use /mode {} or /sandbox {}.\n",
                        names(&ApprovalMode::ALL.iter().map(|m| m.as_str()).collect::<Vec<_>>()),
                        names(&SandboxMode::ALL.iter().map(|m| m.as_str()).collect::<Vec<_>>())
                    ));
                    return true;
                }
                match self.server.settings_update(params).await {
                    Ok(s) => out(&format!(
                        "Approval mode {}, sandbox {} ({}).{}\n",
                        s.approval_mode.as_str(),
                        s.sandbox.as_str(),
                        s.sandbox_support,
                        if s.approval_mode == ApprovalMode::Plan {
                            format!(" {}", ui::PLAN_NOTE)
                        } else {
                            String::new()
                        }
                    )),
                    Err(e) => out(&format!("Error: {e}\n")),
                }
            }
            _ => return false,
        }
        out("\n");
        true
    }

    /// After Ctrl+C in a turn. A terminal has echoed `^C` where the cursor
    /// was, so the line is ended whatever was printed before.
    fn interrupted(&self, view: &mut TurnView) {
        if self.input.interactive {
            view.at_line_start = false;
        }
        view.newline();
        out("[cancelling the turn; press Ctrl+C again to quit]\n");
    }
}

/// Runs a menu off the async threads; gives the choices back with the answer.
async fn pick_menu(question: &str, choices: Vec<Choice>) -> (Picked, Vec<Choice>) {
    let question = question.to_owned();
    let colour = colour();
    let done = tokio::task::spawn_blocking(move || {
        let picked = menu::pick(&question, &choices, 0, colour);
        (picked, choices)
    })
    .await;
    done.unwrap_or_else(|_| (Picked::Eof, Vec::new()))
}

/// Which call an answer in [`App::run_turn`] belongs to.
enum Sent {
    /// The request answered, to ask again when the server refuses a rule.
    Approval(Box<ApprovalRequest>),
    Cancel,
}

// JSON-RPC's "invalid params": a rule the server refused.
use mino_protocol::jsonrpc_code::INVALID_PARAMS;

/// A call's answer, tagged with what was sent.
fn sent<T>(
    what: Sent,
    call: impl std::future::Future<Output = Result<T, CallError>> + Send + 'static,
) -> futures::future::BoxFuture<'static, (Sent, Result<(), CallError>)> {
    Box::pin(async move { (what, call.await.map(drop)) })
}

enum TurnEnd {
    Ended,
    Quit,
    ServerGone,
}

struct TurnView {
    at_line_start: bool,
    /// The next text starts a new `Assistant>` line: the turn's first text,
    /// and text after a tool block.
    needs_prefix: bool,
    /// `Assistant>` was printed; its space comes with the first text, so a
    /// line with no text has no trailing blank.
    pending_space: bool,
    streamed: HashSet<String>,
    /// Calls shown by their approval request or start, until their result:
    /// a result without either (a call a deny rule refused, one that failed
    /// before anyone was asked) names its command itself.
    announced: HashSet<String>,
    text_seen: bool,
    /// The renderer of the answer's markdown (a colour terminal only).
    markdown: Option<Markdown>,
    width: Option<usize>,
    /// The command running, and since when, for the status line.
    running: Option<(String, std::time::Instant)>,
    /// The status line is on screen (below everything else, on its own line).
    status_shown: bool,
}

impl TurnView {
    fn newline(&mut self) {
        self.finish_text();
        self.pending_space = false;
        if !self.at_line_start {
            out("\n");
            self.at_line_start = true;
        }
    }

    /// The answer's unfinished line, rendered as it stands.
    fn finish_text(&mut self) {
        if let Some(md) = &mut self.markdown {
            let rest = md.finish(self.width);
            out_shown(&rest);
        }
    }

    /// `[running: make test · 12s]` on the line below the output so far,
    /// redrawn in place; only where a line has ended (output mid-line is not
    /// broken into).
    fn draw_status(&mut self) {
        let Some((command, started)) = &self.running else { return };
        if !self.at_line_start {
            return;
        }
        let line = ui::running_status(command, started.elapsed().as_secs(), self.width);
        let styled = if colour() { format!("\x1b[2m{line}\x1b[0m") } else { line };
        out_shown(&format!("{}{styled}", term::CLEAR_LINE));
        self.status_shown = true;
    }

    /// Takes the status line away before anything else is written.
    fn clear_status(&mut self) {
        if self.status_shown {
            out_shown(term::CLEAR_LINE);
            self.status_shown = false;
        }
    }

    /// Streamed assistant text.
    fn text(&mut self, text: &str) {
        if self.needs_prefix {
            self.newline();
            out(ui::ASSISTANT.trim_end());
            self.needs_prefix = false;
            self.pending_space = true;
        }
        if self.pending_space {
            out(" ");
            self.pending_space = false;
            if let Some(md) = &mut self.markdown {
                md.line_starts_at(ui::ASSISTANT.len());
            }
        }
        match &mut self.markdown {
            Some(md) => out_shown(&md.push(text, self.width)),
            None => out(text),
        }
        self.text_seen = true;
        self.at_line_start = text.ends_with('\n');
    }
}

/// The line naming the session, above its history.
const MAX_IMAGE_BYTES: u64 = mino_protocol::MAX_IMAGE_BYTES as u64;

fn attached_count(n: usize) -> String {
    if n == 1 {
        "1 image".into()
    } else {
        format!("{n} images")
    }
}

/// Whether `path` can be attached: a regular file within the size bound.
fn attachable(path: &std::path::Path) -> Result<u64, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "{} is {}; an image may be at most 20 MiB: scale it down or crop it",
            path.display(),
            ui::human_size(meta.len())
        ));
    }
    Ok(meta.len())
}

fn session_header(session_id: &str, title: Option<&str>) -> String {
    let version = env!("CARGO_PKG_VERSION");
    match title {
        Some(title) => format!("Mino {version} - session {session_id} ({title})"),
        None => format!("Mino {version} - session {session_id}"),
    }
}

/// `$MINO_HOME`, else `~/.mino`, as the server resolves it.
pub fn mino_home() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MINO_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".mino"))
}
