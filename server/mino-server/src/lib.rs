//! The library behind the `mino-server` binary: the protocol binding
//! ([`handlers`]), the typed front door it is registered through
//! ([`dispatch`]) and the stdio transport ([`transport`]). The binary
//! (`src/main.rs`) only parses arguments, sets up logging and the runtime,
//! and calls [`transport::serve`]. The library exists so the fuzz targets
//! (`tests/fuzz`) can drive the `Content-Length` framer and the JSON-RPC
//! classification directly.

#![deny(clippy::print_stdout)]

pub mod dispatch;
pub mod handlers;
pub mod transport;
