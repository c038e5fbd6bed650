//! The plan and the outcomes of a rewind as its `rewind` and `rewind_end`
//! records hold them, and a finished rewind as the transcript keeps it:
//! plain data, so the record format names them without
//! importing the rewind room (which reads the transcript and the files).
//! What they mean and how they are worked out: `crate::rewind`.

use serde::{Deserialize, Serialize};

/// What a rewind will do, as the `rewind` record holds it and the person
/// confirms it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindPlan {
    /// The turns rewound: the one asked for and every later one, oldest first.
    pub turns: Vec<String>,
    /// The files put back, newest change first.
    #[serde(default)]
    pub files: Vec<PlannedFile>,
    /// The files Mino changed in those turns that it will not touch, and why.
    #[serde(default)]
    pub conflicts: Vec<Conflict>,
    /// The commands that ran in those turns: their effects cannot be undone.
    #[serde(default)]
    pub commands: Vec<PlannedCommand>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    /// Put the content from before the rewound turns back.
    Restore,
    /// Mino created the file in those turns: remove it.
    Remove,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedFile {
    /// Absolute, as the edit records name it.
    pub path: String,
    pub action: FileAction,
    /// What the file holds now: what Mino last wrote to it.
    pub from_sha256: String,
    /// The content put back (`restore` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    pub path: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedCommand {
    pub turn_id: String,
    pub call_id: String,
    pub command: String,
}

/// What became of one planned file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It holds the content from before (verified by its hash).
    Restored,
    /// Mino had created it; it is gone.
    Removed,
    /// It still holds what Mino wrote: not put back (a write failed, or
    /// Mino stopped before reaching it).
    NotRestored,
    /// It changed between the plan and the write: left as it was.
    Conflict,
    /// Recovery only: it holds neither what Mino wrote nor the content
    /// from before: something else changed it.
    Changed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Restored => "restored",
            Outcome::Removed => "removed",
            Outcome::NotRestored => "not_restored",
            Outcome::Conflict => "conflict",
            Outcome::Changed => "changed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileOutcome {
    pub path: String,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A finished rewind, as the records establish it: what the conversation,
/// history and the model's next request say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindDone {
    pub plan: RewindPlan,
    pub outcomes: Vec<FileOutcome>,
    /// Written by recovery (Mino stopped during the rewind).
    pub recovered: bool,
    /// How many turns the transcript held when it ended: the model's
    /// context carries its notice before the turn with this index.
    pub before_turn: usize,
}
