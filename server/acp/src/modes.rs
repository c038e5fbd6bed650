//! The session's approval mode and sandbox as ACP session config options
//! (both of category `mode`) and the approval mode as ACP's classic session
//! modes (`modes`, `session/set_mode`, `current_mode_update`), for clients
//! that show those instead. The choices are the protocol crate's lists
//! (`mino_protocol::ApprovalMode::ALL`, `SandboxMode::ALL`), so a mode added
//! there is offered here once the core knows it. No I/O: changing a mode is
//! `Agent::update_settings`, whose `SettingsChanged` event tells every side.

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, CurrentModeUpdate, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
    SessionMode, SessionModeState, SessionNotification, SessionUpdate,
};
use mino_core::policy::{ApprovalMode, Settings};
use mino_core::sandbox::SandboxMode;

/// The config option that chooses the approval mode.
pub const MODE_OPTION: &str = "mode";
/// The config option that chooses the sandbox.
pub const SANDBOX_OPTION: &str = "sandbox";

/// A core value of the wire name `name` (the protocol's and the core's
/// enums share their kebab-case names).
fn core_value<T: serde::de::DeserializeOwned>(name: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
}

/// The approval modes offered: the protocol's, in its order, each the core knows.
pub fn approval_modes() -> Vec<(&'static str, ApprovalMode)> {
    mino_protocol::ApprovalMode::ALL.iter().filter_map(|m| Some((m.as_str(), core_value(m.as_str())?))).collect()
}

/// The sandbox modes offered: the protocol's, each the core knows.
pub fn sandbox_modes() -> Vec<(&'static str, SandboxMode)> {
    mino_protocol::SandboxMode::ALL.iter().filter_map(|m| Some((m.as_str(), core_value(m.as_str())?))).collect()
}

/// A mode's name and what it does, as the person reads them in a selector.
fn approval_label(id: &str) -> (String, Option<&'static str>) {
    let (name, description) = match id {
        "ask" => ("Ask", "Every command and edit asks first; standing rules are not applied"),
        "rules" => (
            "Rules",
            "A command or edit an approval rule covers is decided by the rule (deny rules win); anything else asks",
        ),
        "sandboxed-auto" => (
            "Sandboxed auto",
            "As Rules, and a command that runs inside the sandbox runs without asking (never with the sandbox off)",
        ),
        "plan" => (
            "Plan",
            "Reads run; commands and edits are refused without running, and the model is told to plan; you decide when to leave it",
        ),
        other => return (other.to_string(), None),
    };
    (name.to_string(), Some(description))
}

fn sandbox_label(id: &str) -> (String, Option<&'static str>) {
    let (name, description) = match id {
        "off" => ("Sandbox off", "Commands run with your permissions"),
        "read-only" => ("Read-only sandbox", "Commands may read files but write nothing and reach no network"),
        "workspace-write" => {
            ("Workspace-write sandbox", "Commands may write only inside the session's directory and reach no network")
        }
        other => return (other.to_string(), None),
    };
    (name.to_string(), Some(description))
}

/// The approval mode option (category `mode`), its current value the session's.
pub fn mode_option(settings: Settings) -> SessionConfigOption {
    let options = approval_modes()
        .into_iter()
        .map(|(id, _)| {
            let (name, description) = approval_label(id);
            SessionConfigSelectOption::new(id, name).description(description.map(str::to_string))
        })
        .collect::<Vec<_>>();
    SessionConfigOption::select(MODE_OPTION, "Approval mode", settings.approval_mode.as_str(), options)
        .description("When a command or an edit runs without asking you".to_string())
        .category(SessionConfigOptionCategory::Mode)
}

/// The sandbox option (category `mode`).
pub fn sandbox_option(settings: Settings) -> SessionConfigOption {
    let options = sandbox_modes()
        .into_iter()
        .map(|(id, _)| {
            let (name, description) = sandbox_label(id);
            SessionConfigSelectOption::new(id, name).description(description.map(str::to_string))
        })
        .collect::<Vec<_>>();
    SessionConfigOption::select(SANDBOX_OPTION, "Sandbox", settings.sandbox.as_str(), options)
        .description(
            "What the commands Mino runs may touch (a mode this machine cannot enforce is refused)".to_string(),
        )
        .category(SessionConfigOptionCategory::Mode)
}

/// The approval modes as ACP's classic session modes.
pub fn session_modes(settings: Settings) -> SessionModeState {
    let modes = approval_modes()
        .into_iter()
        .map(|(id, _)| {
            let (name, description) = approval_label(id);
            SessionMode::new(id, name).description(description.map(str::to_string))
        })
        .collect();
    SessionModeState::new(settings.approval_mode.as_str(), modes)
}

/// The approval mode named `value`, or a message naming the choices.
pub fn approval_mode(value: &str) -> Result<ApprovalMode, String> {
    let modes = approval_modes();
    modes.iter().find(|(id, _)| *id == value).map(|(_, mode)| *mode).ok_or_else(|| {
        let ids: Vec<&str> = modes.iter().map(|(id, _)| *id).collect();
        format!("approval mode {:?} is not one of Mino's; choose one of: {}", cut(value), ids.join(", "))
    })
}

/// The sandbox mode named `value`, or a message naming the choices.
pub fn sandbox_mode(value: &str) -> Result<SandboxMode, String> {
    let modes = sandbox_modes();
    modes.iter().find(|(id, _)| *id == value).map(|(_, mode)| *mode).ok_or_else(|| {
        let ids: Vec<&str> = modes.iter().map(|(id, _)| *id).collect();
        format!("sandbox {:?} is not one of Mino's; choose one of: {}", cut(value), ids.join(", "))
    })
}

/// A value echoed in a refusal, at most 80 characters of it.
fn cut(value: &str) -> String {
    if value.chars().count() <= 80 {
        return value.to_string();
    }
    format!("{}… ({} bytes)", value.chars().take(80).collect::<String>(), value.len())
}

/// What a settings change sends: the full set of config options, then the
/// classic mode (for clients that show modes rather than config options).
pub fn changed(session_id: &str, options: Vec<SessionConfigOption>, settings: Settings) -> Vec<SessionNotification> {
    vec![
        SessionNotification::new(
            session_id.to_string(),
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options)),
        ),
        SessionNotification::new(
            session_id.to_string(),
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(settings.approval_mode.as_str())),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_mode_is_offered_with_the_current_one_chosen() {
        let settings = Settings { approval_mode: ApprovalMode::Rules, sandbox: SandboxMode::Off };
        let option = serde_json::to_value(mode_option(settings)).expect("json");
        assert_eq!(option["category"], "mode");
        assert_eq!(option["currentValue"], "rules");
        let values: Vec<&str> =
            option["options"].as_array().expect("options").iter().map(|o| o["value"].as_str().expect("id")).collect();
        let protocol: Vec<&str> = mino_protocol::ApprovalMode::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(values, protocol);
        let sandbox = serde_json::to_value(sandbox_option(settings)).expect("json");
        assert_eq!(sandbox["currentValue"], "off");
        assert_eq!(sandbox["options"].as_array().expect("options").len(), mino_protocol::SandboxMode::ALL.len());
        let modes = serde_json::to_value(session_modes(settings)).expect("json");
        assert_eq!(modes["currentModeId"], "rules");
        assert!(approval_mode("yolo")
            .expect_err("unknown")
            .ends_with("choose one of: ask, rules, sandboxed-auto, plan"));
        assert_eq!(sandbox_mode("read-only"), Ok(SandboxMode::ReadOnly));
    }
}
