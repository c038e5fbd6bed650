//! The protocol binding: every `mino/*` method and notification, mapped
//! between `mino-protocol`'s wire types and `mino-core`'s calls.
//!
//! These rooms are the only code that knows both vocabularies: `methods`
//! (one file per subject), `lifecycle` (`initialize`, `initialized`,
//! `shutdown`), `convert` (core to wire and back), `errors` (core errors as
//! JSON-RPC errors), `notifications` (the agent's events as messages) and
//! `state` (what `initialize` opened). Handlers return quickly: a turn runs
//! in the task the agent spawns, and its events reach the client through
//! [`Notifications`], which the transport reads straight into its outbox, so
//! they keep their `seq` order with no task in between.

mod convert;
mod errors;
mod lifecycle;
mod methods;
mod notifications;
mod state;

use mino_protocol::request as req;

use crate::dispatch::{Dispatcher, FrontDoor};

pub use lifecycle::{SERVER_NAME, VERSION};
pub use notifications::Notifications;
pub use state::{Backend, Handle};

/// The front door: the lifecycle methods plus Mino's, each registered by
/// its marker type, so a handler whose params or result are not its
/// method's does not compile.
pub fn service() -> FrontDoor<Backend, Handle> {
    let (backend, handle) = state::open();
    Dispatcher::new(move |_client| backend)
        .on::<req::Chat>(Backend::chat)
        .on::<req::Approval>(Backend::approval)
        .on::<req::Acknowledge>(Backend::acknowledge)
        // A turn must be stoppable while the client is behind on reading.
        .on_urgent::<req::Cancel>(Backend::cancel)
        .on::<req::History>(Backend::history)
        .on::<req::Image>(Backend::image)
        .on::<req::SessionsList>(Backend::sessions_list)
        .on::<req::SessionsNew>(Backend::sessions_new)
        .on::<req::SessionsOpen>(Backend::sessions_open)
        .on::<req::SessionsRename>(Backend::sessions_rename)
        .on::<req::SessionsDelete>(Backend::sessions_delete)
        .on::<req::RulesList>(Backend::rules_list)
        .on::<req::RulesRevoke>(Backend::rules_revoke)
        .on::<req::SettingsUpdate>(Backend::settings_update)
        .on::<req::Compact>(Backend::compact)
        .on::<req::ModelsList>(Backend::models_list)
        .on::<req::ModelsSelect>(Backend::models_select)
        .on::<req::McpList>(Backend::mcp_list)
        .on::<req::McpRestart>(Backend::mcp_restart)
        .on::<req::RewindPlan>(Backend::rewind_plan)
        .on::<req::Rewind>(Backend::rewind)
        .finish(handle)
}
