//! MCP: the tool servers a person already has. [`process`] starts a stdio
//! server under supervision, so that it never outlives Mino.

pub mod process;
