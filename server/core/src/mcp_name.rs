//! What can name an MCP server: a leaf, so the rules can check a rule's
//! server name without importing the MCP room (which imports what imports the rules).

/// The longest name a server may have: its tools are offered as
/// `mcp__<server>__<tool>` within 64 characters.
pub const MAX_SERVER_NAME: usize = 32;

/// Whether `name` can name a server: letters, digits, `_` and `-`.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
