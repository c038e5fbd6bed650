//! A call's result: synced, then announced with what names the call.

use super::*;

/// The command of the open turn's call that a result for `call_id` is about
/// (its pending call, so a duplicate id names the right one), as history
/// shows it; read before the result is recorded, which closes the call.
pub(super) fn pending_call_command(session: &Session, call_id: &str) -> CallShown {
    let call = session.transcript().open_turn().and_then(|t| t.pending_call(call_id));
    CallShown {
        command: call.map(crate::transcript::Call::command),
        tool: call.and_then(|c| CallTool::of_name(&c.name)),
        read: call.and_then(crate::transcript::Call::read_info),
    }
}

/// How a call's result names it: its command, its tool and (a read) what it read.
#[derive(Debug, Default)]
pub(super) struct CallShown {
    pub(super) command: Option<String>,
    pub(super) tool: Option<CallTool>,
    pub(super) read: Option<ReadInfo>,
}

impl Agent {
    pub(super) async fn save_result(
        &self,
        turn_id: &str,
        call_id: &str,
        status: ToolStatus,
        output: &str,
        exit_code: Option<i32>,
    ) -> Result<(), SessionError> {
        self.save_result_with_diff(turn_id, call_id, status, output, exit_code, None).await
    }

    /// [`Agent::save_result`], the event carrying the diff an edit wrote.
    pub(super) async fn save_result_with_diff(
        &self,
        turn_id: &str,
        call_id: &str,
        status: ToolStatus,
        output: &str,
        exit_code: Option<i32>,
        diff: Option<String>,
    ) -> Result<(), SessionError> {
        let (t, c, o) = (turn_id.to_string(), call_id.to_string(), output.to_string());
        let command = self
            .with_session_io(move |s| {
                let command = pending_call_command(s, &c);
                s.record_tool_result(&t, &c, status, &o, exit_code)?;
                Ok::<_, SessionError>(command)
            })
            .await?;
        self.emit_result(turn_id, call_id, command, status, output.to_string(), exit_code, diff);
        Ok(())
    }

    /// Announces a result that is on disk.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit_result(
        &self,
        turn_id: &str,
        call_id: &str,
        shown: CallShown,
        status: ToolStatus,
        output: String,
        exit_code: Option<i32>,
        diff: Option<String>,
    ) {
        let read = shown.read.map(|r| r.with_result(status, &output));
        self.emit(AgentEvent::ToolResult {
            turn_id: turn_id.to_string(),
            call_id: call_id.to_string(),
            command: shown.command,
            status,
            output,
            exit_code,
            diff,
            tool: shown.tool,
            read,
        });
    }
}
