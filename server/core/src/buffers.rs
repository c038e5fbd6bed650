//! What the person's editor holds of a file: a front door whose client can
//! say (an ACP client offering `fs/read_text_file`) gives the agent an
//! [`OpenBuffers`], so that what Mino reads of a file open in the editor
//! with unsaved changes is what the person sees. The core knows nothing of
//! how the front door asks.

use std::path::Path;

use futures::future::BoxFuture;

/// The editor's text of open files.
pub trait OpenBuffers: Send + Sync {
    /// The text of `path` (absolute, every symbolic link resolved) as the
    /// editor holds it now: its buffer when the file is open there, else
    /// what the editor reads from the disk. `None` when the editor could
    /// not say (an error, no answer in time): the caller reads the disk.
    /// The implementation bounds its own wait.
    fn text(&self, path: &Path) -> BoxFuture<'static, Option<String>>;
}
