//! The request sent to `POST {base}/responses`: the JSON body and the tool definitions.

use serde_json::{json, Value};

use super::ModelRequest;

/// What the model reads about the `bash` tool.
pub(crate) const BASH_DESCRIPTION: &str =
    "Run a bash command in the project's working directory and return its status and output.";

/// The `bash` function tool definition, in the Responses API's flat form with `strict: true`
/// (every property listed in `required`, `additionalProperties: false`).
pub fn bash_tool() -> Value {
    json!({
        "type": "function",
        "name": "bash",
        "description": BASH_DESCRIPTION,
        "strict": true,
        "parameters": {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The bash command line to run."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }
    })
}

/// Every tool the model may call, in the Responses API's flat form: `bash`,
/// then the file-edit tools (`edit_file`, `write_file`).
pub fn tools() -> Vec<Value> {
    vec![bash_tool(), crate::edit::edit_file_tool(), crate::edit::write_file_tool()]
}

/// The exact JSON body for one request.
pub(crate) fn body(model: &str, request: &ModelRequest<'_>) -> Value {
    json!({
        "model": model,
        "instructions": request.instructions,
        "input": request.input,
        "tools": tools(),
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    })
}
