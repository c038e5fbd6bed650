//! Output for results the turn itself decides.

pub const REFUSED: &str = "The user denied this command; it was not run.";
pub const PLAN_MODE: &str = "Not run: the session is in plan mode, where Mino runs no command and makes no edit. Propose the plan instead; the person decides when to leave plan mode.";
pub const CANCELLED_BEFORE_START: &str = "The turn was cancelled before this command was approved; it was not run.";
pub const NOT_RUN_AFTER_CANCEL: &str = "The turn was cancelled before this call; it was not run.";
pub const CANCELLED_BEFORE_SPAWN: &str =
    "The turn was cancelled after this command was approved and before it was started; it was not run.";
pub const EDIT_REFUSED: &str = "The user denied this edit; the file was not changed.";

/// What the approval of an edit outside the workspace that could not be
/// proposed shows in place of a diff: the path and why, which the model
/// is told only if the person approves.
pub fn unproposable_outside(path: &str, why: &str) -> String {
    format!(
        "# Mino could not propose this edit of {path}, outside the workspace: {why}\n\
         # Nothing will be written. Approving tells the model this reason; declining tells it only that the edit \
         was declined.\n"
    )
}
pub const EDIT_CANCELLED_BEFORE_START: &str =
    "The turn was cancelled before this edit was approved; nothing was written.";
pub const EDIT_CANCELLED_BEFORE_WRITE: &str =
    "The turn was cancelled after this edit was approved and before it was written; nothing was written.";

/// The result of a call the person denied with a reason: the model
/// reads the reason as they wrote it.
/// What a command's call shows when the editor's terminal could not be
/// had (`why`): Mino ran it itself, under the same supervisor.
pub fn terminal_fallback(why: &str) -> String {
    format!(
        "[Mino: the editor's terminal could not be used ({why}); Mino ran the command itself, as it runs any command.]"
    )
}

pub fn denied_with_reason(reason: &str) -> String {
    format!("Denied by the user: {reason}")
}

/// The result of a call deny rules refused without asking.
pub fn denied_by_rule(rules: &[crate::rules::Rule]) -> String {
    let named: Vec<String> = rules.iter().map(|rule| rule.describe()).collect();
    format!("Denied by a rule the user set: {}", named.join(", "))
}
