//! The core's tests on real files, processes and loopback HTTP, linked into
//! one test binary: each file here is a module, so a test's name starts with
//! its file's (`cargo test -p mino-core --test core sandbox::`), and the
//! core, tokio and the HTTP stack are linked once rather than once per file.
//! Two files stay binaries of their own (Cargo.toml): `turn_loop` sets the
//! process's environment, which no other test may share, and `edit_tool`,
//! whose crash tests need the failpoints compiled in (`scripts/test`'s one
//! build of the workspace has them).

mod support;

mod chat_completions;
mod compaction;
mod fuzz_seeds;
mod journal_faults;
mod journal_file;
mod mcp_process;
mod model_client;
mod recovery;
mod request_body;
mod rules;
mod sandbox;
mod sessions;
mod supervisor;
