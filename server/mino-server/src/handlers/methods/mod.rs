//! Mino's methods, one file per subject; each is an `impl Backend` block
//! whose functions take the backend and their method's params and return
//! its result (registered in `super::service`).

mod rewind;
mod sessions;
mod settings;
mod turns;
