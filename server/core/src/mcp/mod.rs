//! MCP: the tool servers a person already has. [`process`] starts a stdio
//! server under supervision (its stderr goes to the log), so that it never
//! outlives Mino.

pub mod process;
