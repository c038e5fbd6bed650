//! What the person's editor lends the agent: the text of open files and
//! its own terminals for approved commands.

use super::*;

impl Agent {
    /// Lets what Mino reads of a file come from the person's editor when it
    /// holds the file open ([`OpenBuffers`]); set by a front door whose
    /// client can say.
    pub fn set_open_buffers(&self, buffers: Arc<dyn OpenBuffers>) {
        *lock(&self.state.open_buffers) = Some(buffers);
    }

    /// Runs approved commands in the person's editor's own terminals
    /// ([`crate::terminal::CommandTerminals`]), under Mino's supervisor
    /// all the same; set by a front door whose client offers them.
    pub fn set_command_terminals(&self, terminals: Arc<dyn crate::terminal::CommandTerminals>) {
        *lock(&self.state.command_terminals) = Some(terminals);
    }

    /// The editor's text of open files, when a front door gave one.
    pub fn open_buffers(&self) -> Option<Arc<dyn OpenBuffers>> {
        lock(&self.state.open_buffers).clone()
    }

    /// The editor's text of the file an edit names, when a front door gave
    /// [`OpenBuffers`] and the path resolves inside the session's directory
    /// (a file outside is read from the disk, as before approval nothing of
    /// it may be told); `None` otherwise, or once `cancel` fires.
    pub(super) async fn editor_text(
        &self,
        directory: &Path,
        requested: &str,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let buffers = self.open_buffers()?;
        let (directory, requested) = (directory.to_path_buf(), requested.to_string());
        let path = blocking(move || {
            let resolved = Workspace::new(&directory).ok()?.resolve(&requested).ok()?;
            (!resolved.leaves_workspace).then_some(resolved.path)
        })
        .await?;
        tokio::select! {
            text = buffers.text(&path) => text,
            () = cancel.cancelled() => None,
        }
    }
}
