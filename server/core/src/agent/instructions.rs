//! The project's instruction files (`AGENTS.md`), read again for each
//! request and announced when they change.

use super::*;

impl Agent {
    /// The project's `AGENTS.md` files for the current session's directory,
    /// read now (the next request is built from them).
    /// Emits [`AgentEvent::InstructionsChanged`] when they differ from the
    /// files read last.
    pub fn project_instructions(&self) -> ProjectInstructions {
        let cwd = lock(&self.state.bash).cwd().to_path_buf();
        let project = project_instructions::load(&cwd);
        let changed = {
            let mut last = lock(&self.state.project);
            let changed = last.files != project.files;
            *last = project.clone();
            changed
        };
        if changed {
            self.emit(AgentEvent::InstructionsChanged { files: project.files.clone() });
        }
        project
    }
}
