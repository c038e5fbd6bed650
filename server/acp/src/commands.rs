//! The slash commands an ACP session offers (`available_commands_update`)
//! and the model choice it offers as a session config option: how a
//! prompt's text is read as a command, and how the core's answers read as
//! the agent's message. No I/O and no domain logic: the commands are
//! `Agent::compact`, `Agent::rules` and `Agent::revoke_rule`, the option is
//! `Agent::models` and `Agent::select_model` (docs/acp.md).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionNotification, SessionUpdate, UnstructuredCommandInput,
};
use mino_core::agent::{AgentError, RulesInForce};
use mino_core::model::{ModelList, ModelSource};
use mino_core::rules::{Rule, RuleEffect, RuleScope};
use mino_core::SessionError;

/// The session config option that chooses the model.
pub const MODEL_OPTION: &str = "model";

/// A prompt that is one of the session's commands.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Compact,
    Rules,
    /// `/revoke <rule-id>`; the id is empty when none was given.
    Revoke(String),
    /// `/mode <approval-mode>`; empty when none was given.
    Mode(String),
    /// `/sandbox <sandbox-mode>`; empty when none was given.
    Sandbox(String),
    /// `/rewind [N]`: what follows the name (empty: the last turn); see `crate::rewind`.
    Rewind(String),
    /// A command that takes nothing, given something after it.
    ExtraText(&'static str),
}

const COMPACT: &str = "compact";
const RULES: &str = "rules";
const REVOKE: &str = "revoke";
const MODE: &str = "mode";
const SANDBOX: &str = "sandbox";
const REWIND: &str = "rewind";

/// The command a prompt's text is, if it starts with one (leading blank
/// space aside): `/compact`, `/rules`, `/revoke <rule-id>`. Any other text,
/// an unknown `/word` included, is the model's.
pub fn parse(text: &str) -> Option<Command> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, argument) = match rest.find(char::is_whitespace) {
        Some(at) => (&rest[..at], rest[at..].trim()),
        None => (rest, ""),
    };
    match name {
        COMPACT if argument.is_empty() => Some(Command::Compact),
        COMPACT => Some(Command::ExtraText(COMPACT)),
        RULES if argument.is_empty() => Some(Command::Rules),
        RULES => Some(Command::ExtraText(RULES)),
        REVOKE => Some(Command::Revoke(argument.to_string())),
        MODE => Some(Command::Mode(argument.to_string())),
        SANDBOX => Some(Command::Sandbox(argument.to_string())),
        REWIND => Some(Command::Rewind(argument.to_string())),
        _ => None,
    }
}

/// The `available_commands_update` sent once a session is created or loaded.
pub fn available(session_id: &str) -> SessionNotification {
    let commands = vec![
        AvailableCommand::new(
            COMPACT,
            "Summarise the conversation so far; the model then reads the summary instead of the turns it covers",
        ),
        AvailableCommand::new(RULES, "List the approval rules in force in this session, with their ids"),
        AvailableCommand::new(REVOKE, "Revoke an approval rule: the commands it covered ask again")
            .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("rule id, as /rules lists it"))),
        AvailableCommand::new(MODE, "Show or change the approval mode: when commands and edits run without asking")
            .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(mode_hint(
                &crate::modes::approval_modes().iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            )))),
        AvailableCommand::new(SANDBOX, "Show or change the sandbox: what the commands Mino runs may touch").input(
            AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(mode_hint(
                &crate::modes::sandbox_modes().iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            ))),
        ),
        AvailableCommand::new(
            REWIND,
            "Undo Mino's edits of the last N turns (1 without N): shows what is put back and what cannot be, and asks first",
        )
        .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("number of turns, default 1"))),
    ];
    SessionNotification::new(
        session_id.to_string(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    )
}

fn mode_hint(ids: &[&str]) -> String {
    ids.join(" | ")
}

/// `/mode` or `/sandbox` with no value: the current one and the choices.
pub fn settings_shown(settings: mino_core::policy::Settings) -> String {
    let ids = |modes: Vec<&str>| modes.join(", ");
    format!(
        "Approval mode: {} (choose with /mode: {}). Sandbox: {} (choose with /sandbox: {}).",
        settings.approval_mode,
        ids(crate::modes::approval_modes().into_iter().map(|(id, _)| id).collect()),
        settings.sandbox,
        ids(crate::modes::sandbox_modes().into_iter().map(|(id, _)| id).collect()),
    )
}

/// A mode changed by `/mode` or `/sandbox` (or refused: `why`).
pub fn settings_changed(settings: mino_core::policy::Settings) -> String {
    format!(
        "Approval mode is now {}, sandbox {}: calls asked about from now on follow them.",
        settings.approval_mode, settings.sandbox
    )
}

/// What a command given text it does not take answers.
pub fn extra_text(name: &str) -> String {
    format!("[Mino: /{name} takes nothing after it, so nothing was done; send /{name} alone.]")
}

/// Longest part of a rule id echoed back (the id may be any text the
/// person typed, up to the prompt's bound).
const ECHOED_ID_CHARS: usize = 80;

fn echoed(id: &str) -> String {
    if id.chars().count() <= ECHOED_ID_CHARS {
        return id.to_string();
    }
    let cut: String = id.chars().take(ECHOED_ID_CHARS).collect();
    format!("{cut}… ({} bytes)", id.len())
}

/// One rule as a line of `/rules`: its id, what it does, where it comes from.
fn rule_line(rule: &Rule) -> String {
    let effect = match rule.effect() {
        RuleEffect::Allow => "allow",
        RuleEffect::Deny => "deny",
    };
    let scope = match rule.scope() {
        RuleScope::Session => "this session",
        RuleScope::Workspace => "workspace rules file",
    };
    format!("- `{}`: {effect} {} ({scope})", rule.id(), rule.describe())
}

/// `/rules`: the rules in force, one a line, and the workspace rules file.
pub fn rules_list(rules: &RulesInForce) -> String {
    let mut text = if rules.rules.is_empty() {
        "No approval rules are in force in this session: every command and edit asks. \
         Choosing an \"Always …\" option when Mino asks grants one."
            .to_string()
    } else {
        let lines: Vec<String> = rules.rules.iter().map(rule_line).collect();
        format!("Approval rules in force in this session (revoke one with /revoke <id>):\n{}", lines.join("\n"))
    };
    if let Some(file) = &rules.workspace_file {
        text.push_str(&format!("\n\nWorkspace rules file: {}", file.display()));
    }
    if let Some(error) = &rules.workspace_file_error {
        text.push_str(&format!("\n\nThe workspace rules file is not used: {error}"));
    }
    text
}

/// `/revoke` with no id.
pub fn revoke_without_id(rules: &RulesInForce) -> String {
    format!("[Mino: say which rule to revoke: /revoke <rule-id>. Nothing was revoked.]\n\n{}", rules_list(rules))
}

/// `/revoke <id>` done; `rule` is the rule as it was in force.
pub fn revoked(rule: &Rule) -> String {
    let from = match rule.scope() {
        RuleScope::Session => "",
        RuleScope::Workspace => " and removed from the workspace rules file",
    };
    format!("Revoked rule `{}` ({}){from}: the calls it covered ask again.", rule.id(), rule.describe())
}

/// `/revoke <id>` for an id no rule in force has.
pub fn unknown_rule(id: &str, rules: &RulesInForce) -> String {
    format!(
        "[Mino: no rule with id `{}` is in force in this session, so nothing was revoked.]\n\n{}",
        echoed(id),
        rules_list(rules)
    )
}

/// Why the core refused a command or a model choice for now, if it did
/// (a turn, a compaction or a switch runs; an unknown result waits):
/// nothing was written, and the person can do it later.
pub fn refusal(error: &AgentError) -> Option<String> {
    Some(match error {
        AgentError::Session(SessionError::TurnInProgress(turn_id)) => {
            format!("turn {turn_id} is still running; wait for it to end or cancel it")
        }
        AgentError::Session(SessionError::AcknowledgementRequired) => {
            "a command's result is unknown and waits for your acknowledgement: send your next prompt \
             and answer Mino's question about it first"
                .to_string()
        }
        AgentError::Compacting => "the conversation is being compacted; wait for it to finish".to_string(),
        AgentError::Switching => "a model choice is being saved; wait for it to finish".to_string(),
        _ => return None,
    })
}

/// `/compact` refused for now.
pub fn compact_refused(why: &str) -> String {
    format!("[Mino: the conversation was not compacted: {why}.]")
}

/// The model choice offered as a session config option: the models to
/// choose from ([`mino_core::agent::Agent::models`]), the current one chosen.
pub fn model_option(list: &ModelList) -> SessionConfigOption {
    let options: Vec<SessionConfigSelectOption> = list
        .models
        .iter()
        .map(|m| {
            SessionConfigSelectOption::new(m.id.clone(), m.id.clone())
                .description(m.context_window.map(|w| format!("context window {w} tokens")))
        })
        .collect();
    let description = match list.source {
        ModelSource::Service => "The model Mino's next turns use (the model service's list)",
        ModelSource::Config => "The model Mino's next turns use (the configured models: the service gave no list)",
    };
    SessionConfigOption::select(MODEL_OPTION, "Model", list.current.clone(), options)
        .description(description.to_string())
        .category(SessionConfigOptionCategory::Model)
}

/// A value that is none of the offered models.
pub fn unknown_model(value: &str, list: &ModelList) -> String {
    let choices: Vec<&str> = list.models.iter().map(|m| m.id.as_str()).collect();
    format!("model {:?} is not among this session's choices; choose one of: {}", echoed(value), choices.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_five_commands_are_commands() {
        assert_eq!(parse("/compact"), Some(Command::Compact));
        assert_eq!(parse("  /compact \n"), Some(Command::Compact));
        assert_eq!(parse("/rules"), Some(Command::Rules));
        assert_eq!(parse("/revoke rule-1a2b"), Some(Command::Revoke("rule-1a2b".into())));
        assert_eq!(parse("/revoke"), Some(Command::Revoke(String::new())));
        assert_eq!(parse("/revoke   "), Some(Command::Revoke(String::new())));
        assert_eq!(parse("/compact now please"), Some(Command::ExtraText("compact")));
        assert_eq!(parse("/rules all"), Some(Command::ExtraText("rules")));
        assert_eq!(parse("/mode ask"), Some(Command::Mode("ask".into())));
        assert_eq!(parse("/sandbox"), Some(Command::Sandbox(String::new())));
        for model_text in ["/foo", "/compacting", "/Compact", "compact", "please /compact", "/", "/ compact", ""] {
            assert_eq!(parse(model_text), None, "{model_text:?}");
        }
    }

    #[test]
    fn a_huge_id_is_echoed_cut() {
        let id = "x".repeat(10_000);
        let rules = RulesInForce { rules: vec![], workspace_file: None, workspace_file_error: None };
        let text = unknown_rule(&id, &rules);
        assert!(text.len() < 1000, "{}", text.len());
        assert!(text.contains("(10000 bytes)"), "{text}");
        assert!(text.contains("No approval rules are in force"), "{text}");
    }

    #[test]
    fn the_commands_and_the_model_option_fit_the_schema() {
        let update = serde_json::to_value(available("s")).expect("json");
        let names: Vec<&str> = update["update"]["availableCommands"]
            .as_array()
            .expect("commands")
            .iter()
            .map(|c| c["name"].as_str().expect("name"))
            .collect();
        assert_eq!(names, ["compact", "rules", "revoke", "mode", "sandbox", "rewind"]);
        assert_eq!(update["update"]["sessionUpdate"], "available_commands_update");
        assert_eq!(update["update"]["availableCommands"][2]["input"]["hint"], "rule id, as /rules lists it");
        let list = ModelList {
            models: vec![
                mino_core::model::ListedModel { id: "a".into(), context_window: None },
                mino_core::model::ListedModel { id: "b".into(), context_window: Some(8192) },
            ],
            current: "b".into(),
            source: ModelSource::Service,
        };
        let option = serde_json::to_value(model_option(&list)).expect("json");
        assert_eq!(option["id"], "model");
        assert_eq!(option["type"], "select");
        assert_eq!(option["category"], "model");
        assert_eq!(option["currentValue"], "b");
        assert_eq!(option["options"][1]["value"], "b");
        assert_eq!(option["options"][1]["description"], "context window 8192 tokens");
        assert!(unknown_model("", &list).ends_with("choose one of: a, b"));
    }
}
