//! What a tool call's own code says about it and the journal records: its
//! status, the limits and the facts its approval showed. A leaf, so the
//! command runner and its supervisor name these without importing the
//! journal's file format, and the file format (`journal::record`, which
//! re-exports them) embeds the tools' types (an edit's start) without a
//! tool importing it back.

use serde::{Deserialize, Serialize};

/// Defines one of the journal's string enums once: each variant's serde
/// name is its literal, listed in `ALL`, returned by `as_str` and read back
/// by `parse`, so the file format's words are written in one place.
macro_rules! journal_words {
    ($(#[$meta:meta])* pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $word)] $variant, )+
        }

        impl $name {
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The word the journal writes.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $word),+ }
            }

            /// The value a journal word names, if it names one.
            pub fn parse(word: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == word)
            }
        }
    };
}
pub(crate) use journal_words;

journal_words! {
    /// How a tool call ended, as its `tool_result` record says.
    pub enum ToolStatus {
        Success = "success",
        Failed = "failed",
        Refused = "refused",
        TimedOut = "timed_out",
        Cancelled = "cancelled",
        NotExecuted = "not_executed",
        Unknown = "unknown",
        /// Recovery only (`v` 3): the file proves an edit was written.
        Applied = "applied",
        /// Recovery only (`v` 3): the file proves an edit was not written.
        NotApplied = "not_applied",
        /// Recovery only (`v` 3): a read-only call started and its result was
        /// not saved. What it read is not on record; it cannot have had effects.
        Unavailable = "unavailable",
    }
}

impl ToolStatus {
    /// Written only with `v` 3 (and only by recovery).
    pub fn is_edit_recovery(self) -> bool {
        matches!(self, Self::Applied | Self::NotApplied | Self::Unavailable)
    }
}

/// The limits a command was approved with, as the approval showed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedLimits {
    pub timeout_seconds: u64,
    pub output_limit_bytes: u64,
}

/// What an `approval` record says the decision was about. Every field is
/// optional: edits have none, and files written before they were journaled
/// lack them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalFacts {
    /// The directory the command runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The environment the command gets (already scrubbed of Mino's own
    /// secrets: exactly what the approval showed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<RecordedLimits>,
    /// An edit approved in part: the 0-based indices (ascending) of the
    /// hunks of the proposed diff the person accepted. What was written is
    /// those hunks alone, applied to the content the proposal was made from
    /// (the `tool_start`'s `after_sha256`/`after_size` are of that content).
    /// Absent: the whole proposal (or a command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_hunks: Option<Vec<u32>>,
}
