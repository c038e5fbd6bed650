//! `#[derive(TS)]` that expands to nothing and accepts `#[ts(...)]` field
//! and type attributes. mino-protocol uses it in place of `ts_rs::TS` when
//! its `ts` feature (the TypeScript generator) is off, so the protocol types
//! keep one plain `derive(..., TS)` each instead of a `cfg_attr` per type
//! and per attribute: a new type written the usual way builds either way.

use proc_macro::TokenStream;

/// Generates nothing; declares `ts` as the derive's helper attribute so
/// `#[ts(optional)]`, `#[ts(type = "...")]` and the like are accepted.
#[proc_macro_derive(TS, attributes(ts))]
pub fn derive_ts(_item: TokenStream) -> TokenStream {
    TokenStream::new()
}
