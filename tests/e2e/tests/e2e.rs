//! Every end-to-end test of the real binaries, linked into one test binary.
//!
//! Each file here was once its own test binary; one binary compiles the
//! shared client, tokio and serde code once and links once, where 43 did it
//! 43 times (docs/performance.md, "The test run"). A file is a module, so a
//! test's name starts with its file's: `cargo test -p mino-e2e --test e2e
//! acp::` runs what `tests/acp.rs` holds. Three files stay binaries of their
//! own (Cargo.toml): `tidy` (the tidy suite runs it alone), `local_model`
//! (one test at a time, against a real model server) and this one.

mod acp;
mod approval_binding;
mod backpressure;
mod command_line;
mod compaction;
mod crash_matrix;
mod disk_full;
mod edit_edges;
mod edits;
mod exit;
mod failpoints;
mod fork;
mod framing;
mod history_items;
mod history_paging;
mod home;
mod hostile;
mod images;
mod import_cycles;
mod instructions;
mod lock;
mod long_lines;
mod malformed;
mod mcp;
mod mcp_http;
mod mcp_rules;
mod mcp_servers;
mod models;
mod plan_mode;
mod protocol_doc;
mod providers;
mod reads;
mod recovery;
mod replaced_journal;
mod rewind;
mod rules;
mod security;
mod sessions;
mod special_files;
mod supervisor;
mod text_limit;
mod turns;
mod usage;
