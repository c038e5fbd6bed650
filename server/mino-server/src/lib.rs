//! The library behind the `mino-server` binary: the protocol binding
//! ([`handlers`]) and the stdio transport ([`transport`]). The binary
//! (`src/main.rs`) only parses arguments, sets up logging and the runtime,
//! and calls [`transport::serve`]. The library exists so the fuzz targets
//! (`tests/fuzz`) can drive the `Content-Length` framer and the JSON-RPC
//! classification directly.

#![deny(clippy::print_stdout)]

pub mod handlers;
pub mod transport;
