//! Mino's domain core: everything that must be correct, and nothing about how
//! clients talk to it.
//!
//! - [`journal`]: the session file on disk (records, checksums, save points, locking).
//! - [`transcript`]: the conversation as the records establish it.
//! - [`calls`]: which output items are tool calls, and what a bash call asks to run.
//! - [`recovery`]: closing interrupted turns by Table 04-1, executing nothing.
//! - [`context`]: the model's `input`, rebuilt from the transcript.
//! - [`compaction`]: the model's summary standing in for earlier turns in that input.
//! - [`session`]: one open conversation: journal + transcript + the acknowledgement gate.
//! - [`session_store`]: the sessions of one home: which one a process opens (per
//!   workspace), listing without parsing whole journals, titles, trash, switching.
//! - [`model`]: the streamed model client, through the Responses API or Chat Completions.
//! - [`bash`]: the approved `bash` tool: environment, limits, process groups.
//! - [`edit`]: the `edit_file` and `write_file` tools: proposals (diff and hashes),
//!   atomic writes onto the approved content, and recovery proven from the file.
//! - [`supervisor`]: the per-command process that runs it, enforces its limits
//!   and stops it when the server dies, leaving evidence of what it saw.
//! - [`rules`]: approval rules (matching parsed commands) and the workspace rules file.
//! - [`sandbox`]: the kernel-enforced command sandbox (Landlock, network and mount namespaces).
//! - [`protect`]: the protected paths (`.git`, Mino's home, editor settings that run commands).
//! - [`hardening`]: keeping the API key out of reach of approved commands.
//! - [`policy`]: a session's approval mode, sandbox mode and workspace rules.
//! - [`agent`]: the turn loop tying them together, emitting [`agent::AgentEvent`]s
//!   on [`agent::Events`] (bounded: deltas merge while the reader is behind).
//! - [`config`]: the configuration, read from the environment in one place.
//! - [`settings`]: the one table of environment variables and `config.toml` keys.
//! - [`app`]: [`open`] builds all of the above for a transport.
//!
//! The JSON-RPC server and the clients live elsewhere; this crate is testable
//! without a network or a transport.

pub mod agent;
pub mod app;
pub mod bash;
/// Files' content before Mino edited them, kept by hash beside the session for rewinds.
pub mod blobs;
pub mod buffers;
pub mod calls;
pub mod compaction;
pub mod config;
pub mod context;
pub mod durable;
pub mod edit;
/// The agent's event stream, coalescing deltas while its reader is behind.
pub mod files;
pub mod hardening;
pub mod home;
/// The images a question carries: bounds, kept by content hash beside the session.
pub mod images;
pub mod journal;
pub mod mcp;
/// What can name an MCP server (a leaf the rules and the MCP room share).
pub mod mcp_name;
pub mod model;
pub mod policy;
pub mod project_instructions;
pub mod protect;
pub mod read;
pub mod recovery;
pub mod rewind;
pub mod rules;
pub mod sandbox;
pub mod session;
pub mod session_store;
pub mod settings;
pub mod soul;
pub mod supervisor;
pub mod terminal;
pub mod tool_facts;
pub mod transcript;
/// Tokens the model service reported, per response, turn and session.
pub mod usage;

pub use app::{open, App, OpenError, OpenOptions};
pub use config::Config;
pub use home::MinoHome;
pub use journal::record::{ApprovalDecision, ToolStatus, TurnStatus};
pub use session::{Session, SessionError};
pub use session_store::{
    ForkError, ForkPoint, Forked, ListScope, SessionEntry, SessionInfo, SessionPage, SessionStore, StoreError,
};
