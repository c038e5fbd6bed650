//! Writes the clients' generated copies of the protocol (the VS Code
//! extension's TypeScript, the Neovim plugin's Lua) from `mino-protocol`.
//! Run it after changing the crate: `cargo run -p mino-protocol --bin mino-protocol-gen`.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for file in mino_protocol::generate::files() {
        let path = root.join(file.path);
        let current = std::fs::read_to_string(&path).ok();
        if current.as_deref() == Some(file.contents.as_str()) {
            eprintln!("unchanged {}", file.path);
            continue;
        }
        let written =
            path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, &file.contents));
        if let Err(e) = written {
            eprintln!("could not write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        eprintln!("wrote {}", file.path);
    }
    ExitCode::SUCCESS
}
