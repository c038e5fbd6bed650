//! Compaction: the model summarises the conversation up to a point, the
//! summary is saved as a synced `compaction` record, and from then on the
//! model's input starts with the summary instead of the turns it covers
//! (docs/journal.md, "Compaction").
//!
//! What is never summarised away: a turn with a result that is `unknown` or
//! `not_executed`, or that recovery wrote, is replayed verbatim after the
//! summary, with its runtime notice, for as long as the session lasts
//! ([`kept_verbatim`]). The model must keep seeing that a command may have
//! run, in the words the records hold, not in a summary's paraphrase.
//!
//! Only the model's input changes: the records of every turn stay in the
//! file, and history and recovery read them as before.
//!
//! This module decides what a compaction covers ([`plan`]), builds the
//! summary request's input ([`summary_input`]) and reads the summary from
//! the response ([`summary_text`]); the agent sends the request and writes
//! the record (`Agent::compact`).

use serde_json::Value;

use crate::config::CompactionSettings;
use crate::context;
use crate::model::ModelError;
use crate::transcript::{message_text, Transcript};

/// Where the summary is replayed, and which turns stay verbatim beside it:
/// the model's input is `context`'s, which this module only feeds.
pub use crate::context::{kept_verbatim, summary_message, SUMMARY_PREFIX};

/// The user message that ends the summary request's input.
pub const SUMMARY_INSTRUCTION: &str = "Mino runtime request: the conversation above is about to be replaced by \
your summary of it, to make room in the context window. Write that summary now, for yourself to continue from: \
the user's goals and requests, what was decided, the facts learned, the files and commands involved with their \
outcomes (name any command whose result is unknown, failed or was not executed as exactly that), and what is \
left to do. Write plain text only; do not call tools.";

/// Why a compaction changed nothing when no turn could be summarised.
pub const NOTHING_TO_COMPACT: &str = "nothing to compact: no turn has ended since the last compaction, \
apart from turns kept verbatim";

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `mino/compact`.
    Manual,
    /// The last request's input tokens passed the threshold of the context
    /// window: run before the next turn's first request.
    Auto,
    /// The service answered `context_length_exceeded`: run once, then the
    /// request is sent once more.
    ContextLengthExceeded,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::Auto => "auto",
            Trigger::ContextLengthExceeded => "context_length_exceeded",
        }
    }
}

/// What a compaction would cover, read from the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The index of the last turn covered: the last ended turn.
    pub through: usize,
    pub through_turn_id: String,
    /// Turns newly summarised (ended since the last compaction, not kept verbatim).
    pub summarized_turns: usize,
    /// Turns up to `through` replayed verbatim after the summary.
    pub kept_turns: usize,
}

/// What compacting now would cover: every ended turn (an open turn is left
/// out, whole). `None` when there is nothing to summarise: no turn that
/// enters the context has ended since the last compaction, apart from
/// turns kept verbatim anyway.
pub fn plan(transcript: &Transcript) -> Option<Plan> {
    let through = transcript.turns.iter().rposition(|t| !t.is_open())?;
    let first_new = transcript.compaction.as_ref().map_or(0, |c| c.through + 1);
    if first_new > through {
        return None;
    }
    let new = &transcript.turns[first_new..=through];
    let summarized_turns = new.iter().filter(|t| t.is_replayed() && !kept_verbatim(t)).count();
    if summarized_turns == 0 {
        return None;
    }
    let kept_turns = transcript.turns[..=through].iter().filter(|t| kept_verbatim(t)).count();
    Some(Plan { through, through_turn_id: transcript.turns[through].id.clone(), summarized_turns, kept_turns })
}

/// The summary request's input: the conversation through `plan.through` as
/// the model would see it now (an earlier summary included), then the
/// summarising instruction.
pub fn summary_input(transcript: &Transcript, plan: &Plan) -> Vec<Value> {
    let mut input = context::build_through(transcript, plan.through + 1);
    input.push(context::user_message(SUMMARY_INSTRUCTION));
    input
}

/// The share of the context window a summary request shortened after
/// `context_length_exceeded` aims at: the rest is room for the summary.
pub const SHORTENED_SHARE: f64 = 0.5;

/// Texts at most this long (in bytes) are never shortened.
const SHORT_TEXT: usize = 200;

/// Shortens the summary request's texts (message text, tool call
/// arguments and outputs; never its last item, the instruction) to about
/// `keep` of their length (clamped to 5–90 %): each text longer than
/// [`SHORT_TEXT`] keeps its beginning and its end around a marker saying
/// how much was left out.
pub fn shorten_texts(input: &mut [Value], keep: f64) {
    let keep = if keep.is_finite() { keep.clamp(0.05, 0.9) } else { 0.5 };
    let Some((_, summarised)) = input.split_last_mut() else { return };
    fn shorten(text: &mut String, keep: f64) {
        if text.len() <= SHORT_TEXT {
            return;
        }
        let half = ((text.len() as f64 * keep) / 2.0) as usize;
        let head_end = floor_char_boundary(text, half);
        let tail_start = ceil_char_boundary(text, text.len() - half);
        if tail_start <= head_end {
            return;
        }
        let left_out = tail_start - head_end;
        *text = format!("{}[… {left_out} bytes left out …]{}", &text[..head_end], &text[tail_start..]);
    }
    for item in summarised {
        if let Some(parts) = item.get_mut("content").and_then(Value::as_array_mut) {
            for part in parts {
                if let Some(Value::String(text)) = part.get_mut("text") {
                    shorten(text, keep);
                }
            }
        }
        for field in ["output", "arguments"] {
            if let Some(Value::String(text)) = item.get_mut(field) {
                shorten(text, keep);
            }
        }
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The summary a response holds: its messages' text, joined; `None` when
/// it has none (a response of only tool calls or reasoning).
pub fn summary_text(items: &[Value]) -> Option<String> {
    let parts: Vec<String> = items.iter().filter_map(message_text).filter(|t| !t.trim().is_empty()).collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

pub use crate::model::CONTEXT_LENGTH_EXCEEDED;

/// Whether the model refused the request as too long for its context window.
pub fn is_context_length_exceeded(error: &ModelError) -> bool {
    matches!(error, ModelError::Fatal { code: Some(code), .. } if code == CONTEXT_LENGTH_EXCEEDED)
}

/// Whether the last request's input passed the threshold.
pub fn due(transcript: &Transcript, settings: &CompactionSettings) -> bool {
    transcript.last_input_tokens.is_some_and(|tokens| passes_threshold(tokens, settings))
}

/// Whether a request of `tokens` input tokens passes the threshold.
pub fn passes_threshold(tokens: u64, settings: &CompactionSettings) -> bool {
    tokens as f64 >= settings.threshold_tokens()
}

/// The reason of the `mino/retrying` sent when a Chat Completions answer
/// stopped at the end of the context window (`finish_reason: "length"`
/// with no output limit sent) and the conversation was compacted: the
/// text it streamed is void, and the request is sent again.
pub const WINDOW_FULL_RETRY: &str = "The model's context window filled up while it answered \
(finish_reason \"length\"; Mino sends no output limit); Mino compacted the earlier conversation and asks again";

/// A turn's end reason when the model's answer stopped at the end of the
/// context window and compacting did not make room (`tried`) or could not
/// be tried again in this turn.
pub fn window_full_reason(tried: bool) -> String {
    let what = if tried {
        "and compacting the earlier conversation did not make room"
    } else {
        "and Mino had already compacted the conversation in this turn"
    };
    format!(
        "The model's context window is full: its answer stopped at the window's end (finish_reason \"length\"; \
         Mino sends no output limit, so this is not max_output_tokens), {what}. Start a new session (/new in the \
         terminal, \"New Chat\" in VS Code, :MinoNew in Neovim), or ask again with less text; nothing was run again."
    )
}

/// A turn's end reason when the service refused its request as too long
/// and compacting did not make it fit (or there was nothing to compact).
pub fn too_long_reason(error: &ModelError, compacted: bool) -> String {
    let what = if compacted {
        "even after Mino compacted the earlier conversation"
    } else {
        "and Mino found nothing earlier in the conversation to compact"
    };
    format!(
        "The conversation is too long for the model's context window ({CONTEXT_LENGTH_EXCEEDED}) {what}: {error}. \
         Start a new session (/new in the terminal, \"New Chat\" in VS Code, :MinoNew in Neovim), \
         or ask again with less text; nothing was run again."
    )
}

/// A turn's end reason when the compaction that `context_length_exceeded`
/// asked for itself failed.
pub fn compaction_failed_reason(error: &str) -> String {
    format!(
        "The conversation is too long for the model's context window ({CONTEXT_LENGTH_EXCEEDED}), and compacting \
         it failed: {error}. Try /compact again, or start a new session (/new in the terminal, \"New Chat\" in \
         VS Code, :MinoNew in Neovim); nothing was run again."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::record::{RecordBody, ToolStatus, TurnStatus};
    use crate::transcript::SessionHeader;

    fn transcript() -> Transcript {
        Transcript::new(SessionHeader { session_id: "s".into(), created_at: String::new(), cwd: "/".into() })
    }

    fn apply(t: &mut Transcript, body: RecordBody) {
        t.apply_owned(body).expect("consistent");
    }

    fn text_turn(t: &mut Transcript, id: &str, question: &str, answer: &str) {
        apply(t, RecordBody::User { turn_id: id.into(), text: question.into(), images: Vec::new() });
        let item = serde_json::value::to_raw_value(&context::assistant_message(answer)).expect("item");
        apply(t, RecordBody::Response { turn_id: id.into(), items: vec![item], usage: None, instructions: None });
        apply(
            t,
            RecordBody::TurnEnd {
                turn_id: id.into(),
                status: TurnStatus::Completed,
                reason: None,
                partial_text: None,
                session_usage: None,
            },
        );
    }

    fn unknown_turn(t: &mut Transcript, id: &str) {
        apply(t, RecordBody::User { turn_id: id.into(), text: "Add milk".into(), images: Vec::new() });
        let call = serde_json::json!({"type":"function_call","call_id":"call_1","name":"bash","arguments":"{\"command\":\"echo milk >> list\"}"});
        let item = serde_json::value::to_raw_value(&call).expect("item");
        apply(t, RecordBody::Response { turn_id: id.into(), items: vec![item], usage: None, instructions: None });
        apply(
            t,
            RecordBody::Approval {
                turn_id: id.into(),
                call_id: "call_1".into(),
                decision: crate::journal::record::ApprovalDecision::Approved,
                approved_by: None,
                decided_by: None,
                rules: Vec::new(),
                facts: Default::default(),
            },
        );
        apply(
            t,
            RecordBody::ToolStart {
                turn_id: id.into(),
                call_id: "call_1".into(),
                command: Some("echo milk >> list".into()),
                edit: None,
                cwd: "/".into(),
                sandbox: None,
                mcp: None,
            },
        );
        apply(
            t,
            RecordBody::ToolResult {
                turn_id: id.into(),
                call_id: "call_1".into(),
                status: ToolStatus::Unknown,
                output: "unknown".into(),
                exit_code: None,
                recovered: true,
            },
        );
        apply(
            t,
            RecordBody::TurnEnd {
                turn_id: id.into(),
                status: TurnStatus::Interrupted,
                reason: None,
                partial_text: None,
                session_usage: None,
            },
        );
    }

    fn texts(input: &[Value]) -> Vec<String> {
        input
            .iter()
            .map(|item| match item.get("type").and_then(Value::as_str) {
                Some("message") => item["content"][0]["text"].as_str().unwrap_or_default().to_string(),
                Some(kind) => kind.to_string(),
                None => String::new(),
            })
            .collect()
    }

    #[test]
    fn the_summary_replaces_the_turns_it_covers_and_keeps_an_unknown_turn_verbatim_after_it() {
        let mut t = transcript();
        text_turn(&mut t, "turn-1", "First question", "First answer");
        unknown_turn(&mut t, "turn-2");
        text_turn(&mut t, "turn-3", "Third question", "Third answer");
        let plan = plan(&t).expect("something to compact");
        assert_eq!((plan.through_turn_id.as_str(), plan.summarized_turns, plan.kept_turns), ("turn-3", 2, 1));
        let request = texts(&summary_input(&t, &plan));
        assert_eq!(request.first().map(String::as_str), Some("First question"));
        assert_eq!(request.last().map(String::as_str), Some(SUMMARY_INSTRUCTION));

        apply(
            &mut t,
            RecordBody::Compaction {
                through_turn_id: "turn-3".into(),
                summary: "They asked twice.".into(),
                usage: None,
            },
        );
        text_turn(&mut t, "turn-4", "Fourth question", "Fourth answer");
        let input = texts(&context::build(&t));
        assert_eq!(input[0], format!("{SUMMARY_PREFIX}They asked twice."));
        // The unknown turn, whole, with its notice; then the turn after the summary.
        assert_eq!(input[1], "Add milk");
        assert_eq!(input[2..4], ["function_call", "function_call_output"]);
        assert!(input[4].starts_with("Mino runtime notice: the previous turn ended with status interrupted"));
        assert_eq!(input[5..], ["Fourth question", "Fourth answer"]);
        assert!(!input.iter().any(|i| i.contains("First") || i.contains("Third")), "{input:?}");
        // Every original turn is still there for history.
        assert_eq!(t.turns.len(), 4);
    }

    #[test]
    fn shortening_keeps_each_long_texts_ends_and_never_the_instruction() {
        let long = format!("Start{}End", "é".repeat(500));
        let mut input = vec![
            context::user_message(&long),
            serde_json::json!({"type": "function_call_output", "call_id": "c", "output": long.clone()}),
            context::user_message("short"),
            context::user_message(&long),
        ];
        shorten_texts(&mut input, 0.2);
        let first = input[0]["content"][0]["text"].as_str().expect("text");
        assert!(first.starts_with("Start") && first.ends_with("End") && first.contains("bytes left out"), "{first}");
        assert!(first.len() < long.len() / 3, "{}", first.len());
        assert!(input[1]["output"].as_str().expect("output").contains("bytes left out"));
        assert_eq!(input[2]["content"][0]["text"], "short");
        assert_eq!(input[3]["content"][0]["text"].as_str(), Some(long.as_str()), "the instruction stays whole");
    }

    #[test]
    fn nothing_to_compact_without_a_new_ended_turn_beyond_the_kept_ones() {
        let mut t = transcript();
        assert_eq!(plan(&t), None, "no turn");
        unknown_turn(&mut t, "turn-1");
        assert_eq!(plan(&t), None, "only a turn kept verbatim anyway");
        text_turn(&mut t, "turn-2", "Q", "A");
        apply(&mut t, RecordBody::Compaction { through_turn_id: "turn-2".into(), summary: "S".into(), usage: None });
        assert_eq!(plan(&t), None, "everything is covered already");
        let refused =
            t.check(&RecordBody::Compaction { through_turn_id: "turn-1".into(), summary: "S".into(), usage: None });
        assert!(refused.expect_err("covered").contains("earlier one covers"));
        apply(&mut t, RecordBody::User { turn_id: "turn-3".into(), text: "open".into(), images: Vec::new() });
        assert_eq!(plan(&t), None, "an open turn is never covered");
        let refused =
            t.check(&RecordBody::Compaction { through_turn_id: "turn-3".into(), summary: "S".into(), usage: None });
        assert!(refused.expect_err("open").contains("has not ended"));
    }

    #[test]
    fn a_later_compaction_summarises_the_earlier_summary_and_the_turns_since() {
        let mut t = transcript();
        text_turn(&mut t, "turn-1", "Q1", "A1");
        apply(&mut t, RecordBody::Compaction { through_turn_id: "turn-1".into(), summary: "S1".into(), usage: None });
        text_turn(&mut t, "turn-2", "Q2", "A2");
        let plan = plan(&t).expect("turn-2 is new");
        assert_eq!(plan.summarized_turns, 1);
        let request = texts(&summary_input(&t, &plan));
        assert_eq!(request, [format!("{SUMMARY_PREFIX}S1"), "Q2".into(), "A2".into(), SUMMARY_INSTRUCTION.into()]);
    }

    #[test]
    fn due_when_the_last_request_passed_the_threshold_and_not_after_a_compaction() {
        let settings = CompactionSettings { context_window: 1000, threshold: 0.8 };
        let mut t = transcript();
        let usage = |input_tokens| {
            Some(crate::usage::Usage {
                input_tokens,
                output_tokens: 1,
                total_tokens: input_tokens + 1,
                ..Default::default()
            })
        };
        apply(&mut t, RecordBody::User { turn_id: "turn-1".into(), text: "Q".into(), images: Vec::new() });
        let item = serde_json::value::to_raw_value(&context::assistant_message("A")).expect("item");
        apply(
            &mut t,
            RecordBody::Response {
                turn_id: "turn-1".into(),
                items: vec![item.clone()],
                usage: usage(799),
                instructions: None,
            },
        );
        assert!(!due(&t, &settings));
        apply(
            &mut t,
            RecordBody::TurnEnd {
                turn_id: "turn-1".into(),
                status: TurnStatus::Completed,
                reason: None,
                partial_text: None,
                session_usage: None,
            },
        );
        apply(&mut t, RecordBody::User { turn_id: "turn-2".into(), text: "Q".into(), images: Vec::new() });
        apply(
            &mut t,
            RecordBody::Response { turn_id: "turn-2".into(), items: vec![item], usage: usage(800), instructions: None },
        );
        assert!(due(&t, &settings));
        apply(
            &mut t,
            RecordBody::TurnEnd {
                turn_id: "turn-2".into(),
                status: TurnStatus::Completed,
                reason: None,
                partial_text: None,
                session_usage: None,
            },
        );
        apply(
            &mut t,
            RecordBody::Compaction { through_turn_id: "turn-2".into(), summary: "S".into(), usage: usage(900) },
        );
        assert!(!due(&t, &settings), "the summary request's own input does not count");
        assert_eq!(t.usage.map(|u| u.input_tokens), Some(799 + 800 + 900), "the session pays for the summary");
    }
}
