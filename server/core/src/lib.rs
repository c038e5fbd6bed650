//! Mino's domain core: everything that must be correct, and nothing about how
//! clients talk to it.
//!
//! - [`journal`]: the session file on disk (records, checksums, save points, locking).
//! - [`transcript`]: the conversation as the records establish it.
//! - [`recovery`]: closing interrupted turns by Table 04-1, executing nothing.
//! - [`context`]: the model's `input`, rebuilt from the transcript.
//! - [`session`]: one open conversation: journal + transcript + the acknowledgement gate.
//! - [`sessions`]: the sessions of one home: which one a process opens (per
//!   workspace), listing without parsing whole journals, titles, trash, switching.
//! - [`model`]: the streamed Responses API client.
//! - [`bash`]: the approved `bash` tool: environment, limits, process groups.
//! - [`supervisor`]: the per-command process that runs it, enforces its limits
//!   and stops it when the server dies, leaving evidence of what it saw.
//! - [`agent`]: the turn loop tying them together, emitting [`agent::AgentEvent`]s.
//!
//! The JSON-RPC server and the clients live elsewhere; this crate is testable
//! without a network or a transport.

pub mod agent;
pub mod bash;
pub mod context;
pub mod home;
pub mod journal;
pub mod model;
pub mod recovery;
pub mod session;
pub mod sessions;
pub mod soul;
pub mod supervisor;
pub mod transcript;

pub use home::MinoHome;
pub use journal::record::{ApprovalDecision, ToolStatus, TurnStatus};
pub use session::{Session, SessionError};
pub use sessions::{ListScope, SessionEntry, SessionInfo, SessionPage, SessionStore, StoreError};
