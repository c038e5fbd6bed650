//! The checked-in generated files (the VS Code extension's TypeScript, the
//! Neovim plugin's Lua) are exactly what `mino_protocol::generate` makes from
//! the crate today: a change to the protocol without regenerating fails here.

use std::path::Path;

use mino_protocol::generate;

#[test]
fn generated_files_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut stale = Vec::new();
    for file in generate::files() {
        match std::fs::read_to_string(root.join(file.path)) {
            Ok(text) if text == file.contents => {}
            Ok(_) => stale.push(format!("{} differs from what the crate generates", file.path)),
            Err(e) => stale.push(format!("{}: {e}", file.path)),
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nRegenerate them from the workspace root with `{}` and commit the result.",
        stale.join("\n"),
        generate::REGENERATE
    );
}
