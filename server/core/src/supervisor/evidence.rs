//! Evidence: what a supervisor saw of a command whose result the server
//! never confirmed saved, left beside the journal (docs/journal.md) and read
//! back by recovery. It never changes a result; it is shown beside it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Which call the evidence is about, and where it goes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct EvidenceTarget {
    pub path: PathBuf,
    pub turn_id: String,
    pub call_id: String,
    pub call_index: usize,
}

/// How a supervised command ended, as the evidence record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceOutcome {
    Exited,
    Signalled,
    StoppedWhenMinoStopped,
    TimedOut,
}

/// The format version of evidence records this build writes and reads.
pub const EVIDENCE_VERSION: u32 = 1;
/// An evidence file larger than this is not read (it holds at most the output limit).
const MAX_EVIDENCE_BYTES: u64 = 8 * 1024 * 1024;

/// What a supervisor saw of a command whose result the server never
/// confirmed saved. It never changes a result: a start without a result
/// stays `unknown`; this is shown beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub v: u32,
    pub turn_id: String,
    pub call_id: String,
    pub call_index: usize,
    pub pid: u32,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub outcome: EvidenceOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Whether the server was already gone when the command ended.
    pub after_mino_stopped: bool,
    /// Whether the server had asked to cancel the command.
    #[serde(default)]
    pub cancelled: bool,
    /// The last bytes of the command's output, at most the output limit
    /// (empty for an MCP call: its server's stderr goes to Mino's log).
    pub output_tail: String,
    /// For an MCP call: its server and tool (the supervisor watched the
    /// server's process, which `pid` names, not the call itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpEvidence>,
}

/// Which MCP call an evidence record is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpEvidence {
    pub server: String,
    pub tool: String,
}

impl Evidence {
    /// One sentence for people, e.g. "the command exited 0 after Mino
    /// stopped; last output: done".
    pub fn summary(&self) -> String {
        if let Some(mcp) = &self.mcp {
            return self.mcp_summary(mcp);
        }
        let what = match self.outcome {
            EvidenceOutcome::Exited => format!("the command exited {}", self.exit_code.unwrap_or(-1)),
            EvidenceOutcome::Signalled => {
                format!("the command was terminated by signal {}", self.signal.unwrap_or(0))
            }
            EvidenceOutcome::TimedOut => "the command was stopped by its time limit".to_string(),
            EvidenceOutcome::StoppedWhenMinoStopped => "the command was stopped when Mino stopped".to_string(),
        };
        let when = match self.outcome {
            EvidenceOutcome::StoppedWhenMinoStopped => "",
            _ if self.after_mino_stopped => " after Mino stopped",
            _ if self.cancelled => " after it was cancelled; Mino stopped before saving its result",
            _ => "; Mino stopped before saving its result",
        };
        match last_line(&self.output_tail) {
            Some(line) => format!("{what}{when}; last output: {line}"),
            None => format!("{what}{when}; it printed nothing"),
        }
    }
}

impl Evidence {
    /// E.g. "the MCP server `py` (called for `slow`) was stopped when Mino
    /// stopped, at 2026-01-01T00:00:01Z; its answer was never received".
    fn mcp_summary(&self, mcp: &McpEvidence) -> String {
        let server = format!("the MCP server `{}` (called for `{}`)", mcp.server, mcp.tool);
        let at = self.ended_at.as_deref().map(|t| format!(", at {t}")).unwrap_or_default();
        let status = match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "status unknown".to_string(),
        };
        match self.outcome {
            EvidenceOutcome::StoppedWhenMinoStopped => {
                format!("{server} was stopped when Mino stopped{at} ({status}); the call's answer was never received")
            }
            EvidenceOutcome::TimedOut => format!("{server} was stopped by its time limit{at} ({status})"),
            EvidenceOutcome::Exited | EvidenceOutcome::Signalled => format!(
                "{server} ended by itself during the call{at} ({status}), before Mino stopped; Mino stopped before saving the call's result"
            ),
        }
    }
}

/// The last non-empty line of `text`, at most 200 characters.
fn last_line(text: &str) -> Option<String> {
    const MAX: usize = 200;
    let line = text.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    if line.chars().count() > MAX {
        let kept: String = line.chars().rev().take(MAX).collect::<Vec<_>>().into_iter().rev().collect();
        Some(format!("…{kept}"))
    } else {
        Some(line.to_string())
    }
}

/// The directory beside the journal that holds its calls' evidence:
/// `sessions/<id>.jsonl` → `sessions/<id>.evidence/`.
pub fn evidence_dir(journal: &Path) -> PathBuf {
    journal.with_extension("evidence")
}

/// Where the evidence of the `call_index`-th call (0-based, in the order the
/// turn's responses asked for them) of `turn_id` goes. `None` for a turn id
/// that could name anything outside the directory (ids Mino writes are
/// `turn-N`). The turn and the index, not the model's call id, make the
/// name, so a call id repeated in a later turn or the same one cannot collide.
pub fn evidence_path(journal: &Path, turn_id: &str, call_index: usize) -> Option<PathBuf> {
    let safe = !turn_id.is_empty()
        && !turn_id.starts_with('.')
        && turn_id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    safe.then(|| evidence_dir(journal).join(format!("{turn_id}.call-{call_index}.json")))
}

/// Reads the evidence left for one call, if any. A record that is unreadable,
/// of another version or about another call is ignored (logged): evidence
/// only ever adds to what the journal says.
pub fn load_evidence(journal: &Path, turn_id: &str, call_index: usize, call_id: &str) -> Option<Evidence> {
    let path = evidence_path(journal, turn_id, call_index)?;
    let read = (|| -> Result<Option<Evidence>, String> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        // Only the session's own directory: a symlink there could lead
        // anywhere (checked by what it is, not what it points to).
        match std::fs::symlink_metadata(evidence_dir(journal)) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err("the evidence directory is not a directory (a symlink or a file)".into()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        }
        // Opened without following a symlink and without waiting on a FIFO;
        // what is open is then checked, so nothing swapped in between the
        // check and the read is read, and no more than the bound is read.
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let meta = file.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() || meta.len() > MAX_EVIDENCE_BYTES {
            return Err(format!("not a regular file of at most {MAX_EVIDENCE_BYTES} bytes"));
        }
        let mut bytes = Vec::new();
        (&mut file).take(MAX_EVIDENCE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        if bytes.len() as u64 > MAX_EVIDENCE_BYTES {
            return Err(format!("it grew past {MAX_EVIDENCE_BYTES} bytes while being read"));
        }
        let evidence: Evidence = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        if evidence.v != EVIDENCE_VERSION {
            return Err(format!("version {} (this Mino reads {EVIDENCE_VERSION})", evidence.v));
        }
        if evidence.turn_id != turn_id || evidence.call_index != call_index || evidence.call_id != call_id {
            return Err("it is about another call".into());
        }
        Ok(Some(evidence))
    })();
    read.unwrap_or_else(|why| {
        tracing::warn!(path = %path.display(), "ignoring a command's evidence record: {why}");
        None
    })
}

/// Writes `evidence` to `path` so that it is either there whole and durable
/// or not at all: a temporary file, fsync, rename, fsync of the directory
/// (created, and its parent synced, if it does not exist yet).
pub fn write_evidence(path: &Path, evidence: &Evidence) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("the evidence path has no directory"))?;
    // A symlink (or file) in place of the directory is not followed out of
    // the session's directory: the record is then not written.
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(std::io::Error::other(format!("{} is not a directory", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::create_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            if let Some(parent) = dir.parent() {
                std::fs::File::open(parent)?.sync_all()?;
            }
        }
        Err(e) => return Err(e),
    }
    let bytes = serde_json::to_vec(evidence).map_err(std::io::Error::other)?;
    crate::durable::replace(path, &bytes, 0o600)
        .map_err(|(step, e)| std::io::Error::new(e.kind(), format!("{}: {e}", step.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(outcome: EvidenceOutcome, after: bool, tail: &str) -> Evidence {
        Evidence {
            v: EVIDENCE_VERSION,
            turn_id: "turn-1".into(),
            call_id: "call_1".into(),
            call_index: 0,
            pid: 42,
            started_at: "2026-01-01T00:00:00Z".into(),
            ended_at: Some("2026-01-01T00:00:01Z".into()),
            outcome,
            exit_code: (outcome == EvidenceOutcome::Exited).then_some(0),
            signal: None,
            after_mino_stopped: after,
            cancelled: false,
            output_tail: tail.into(),
            mcp: None,
        }
    }

    #[test]
    fn an_mcp_calls_summary_names_its_server_and_when_it_was_stopped() {
        let mut stopped = evidence(EvidenceOutcome::StoppedWhenMinoStopped, true, "");
        stopped.exit_code = Some(143);
        stopped.mcp = Some(McpEvidence { server: "py".into(), tool: "slow".into() });
        assert_eq!(
            stopped.summary(),
            "the MCP server `py` (called for `slow`) was stopped when Mino stopped, at 2026-01-01T00:00:01Z \
             (exit status 143); the call's answer was never received"
        );
        let json = serde_json::to_value(&stopped).unwrap();
        assert_eq!(json["mcp"]["server"], "py");
        assert!(serde_json::to_value(evidence(EvidenceOutcome::Exited, true, "")).unwrap().get("mcp").is_none());
    }

    #[test]
    fn summaries_say_what_happened_and_when() {
        assert_eq!(
            evidence(EvidenceOutcome::Exited, true, "start\ndone\n\n").summary(),
            "the command exited 0 after Mino stopped; last output: done"
        );
        assert_eq!(
            evidence(EvidenceOutcome::StoppedWhenMinoStopped, true, "").summary(),
            "the command was stopped when Mino stopped; it printed nothing"
        );
        assert_eq!(
            evidence(EvidenceOutcome::Exited, false, "x").summary(),
            "the command exited 0; Mino stopped before saving its result; last output: x"
        );
    }

    #[test]
    fn evidence_names_use_the_turn_and_index_and_refuse_odd_turn_ids() {
        let journal = Path::new("/h/sessions/s1.jsonl");
        assert_eq!(
            evidence_path(journal, "turn-3", 1),
            Some(PathBuf::from("/h/sessions/s1.evidence/turn-3.call-1.json"))
        );
        for bad in ["", "../x", "a/b", ".hidden", "x\0y"] {
            assert_eq!(evidence_path(journal, bad, 0), None, "{bad:?}");
        }
    }

    #[test]
    fn evidence_is_not_written_through_a_symlinked_directory() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let journal = dir.path().join("s1.jsonl");
        std::os::unix::fs::symlink(outside.path(), evidence_dir(&journal)).unwrap();
        let path = evidence_path(&journal, "turn-1", 0).unwrap();
        assert!(write_evidence(&path, &evidence(EvidenceOutcome::Exited, true, "ok\n")).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written outside");
    }

    #[test]
    fn evidence_round_trips_atomically_and_only_for_its_own_call() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("s1.jsonl");
        let path = evidence_path(&journal, "turn-1", 0).unwrap();
        let written = evidence(EvidenceOutcome::Exited, true, "ok\n");
        write_evidence(&path, &written).unwrap();
        assert_eq!(load_evidence(&journal, "turn-1", 0, "call_1"), Some(written));
        assert_eq!(load_evidence(&journal, "turn-1", 0, "call_2"), None, "another call's record");
        assert_eq!(load_evidence(&journal, "turn-2", 0, "call_1"), None, "no record");
        let leftovers: Vec<_> = std::fs::read_dir(evidence_dir(&journal)).unwrap().flatten().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left");
    }
}
