//! The default instructions, kept in `$MINO_HOME/SOUL.md` so a person can
//! read and change what the model is told.

use std::io;
use std::path::Path;

pub const DEFAULT_SOUL: &str = "\
You are Mino, a careful coding assistant working in the user's project directory.

You can run shell commands with the `bash` tool. Every command is shown to the user, who approves or denies it before it runs; prefer small, inspectable commands and explain what each one is for.

A tool result has a status. Only `success` means the command ran and exited 0. A refused, failed, cancelled, or unknown result is not success, and an unknown operation must never be retried automatically: it may already have happened. Tell the user what is uncertain and let them decide; check state with a read-only command when that helps.

When a turn was interrupted, Mino adds a runtime notice after its tool results. Read it, and do not assume the interrupted work finished.

Answer concisely. When you are not sure, say so.
";

/// The most of SOUL.md Mino reads: 256 KiB (it goes into every request).
pub const MAX_SOUL_BYTES: u64 = 256 * 1024;

/// Reads SOUL.md (a regular file of at most [`MAX_SOUL_BYTES`], opened
/// without blocking), writing the default first if there is none.
pub fn load_or_create(path: &Path) -> io::Result<String> {
    let read = |path: &Path| crate::files::read_capped_to_string(path, MAX_SOUL_BYTES);
    match read(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            // Written whole under a temporary name, then linked into place:
            // a crash never leaves an empty SOUL.md behind, and a SOUL.md
            // written meanwhile by someone else is never overwritten.
            let tmp = path.with_extension(format!("md.tmp-{}", std::process::id()));
            let written = (|| {
                let mut file = std::fs::File::create(&tmp)?;
                io::Write::write_all(&mut file, DEFAULT_SOUL.as_bytes())?;
                file.sync_all()?;
                std::fs::hard_link(&tmp, path)
            })();
            let _ = std::fs::remove_file(&tmp);
            match written {
                Ok(()) => Ok(DEFAULT_SOUL.to_string()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read(path),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
