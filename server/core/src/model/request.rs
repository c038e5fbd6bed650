//! The request sent to `POST {base}/responses`: the JSON body and the tool definitions.

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::value::RawValue;
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
/// the file-edit tools (`edit_file`, `write_file`), then the read-only tools
/// (`read_file`, `list_files`, `search`).
pub fn tools() -> Vec<Value> {
    let mut tools = vec![bash_tool(), crate::edit::edit_file_tool(), crate::edit::write_file_tool()];
    tools.extend(crate::read::tools());
    tools
}

/// [`tools`] as JSON text, built once: the same definitions go into every
/// request.
fn tools_json() -> &'static RawValue {
    static TOOLS: OnceLock<Box<RawValue>> = OnceLock::new();
    // Our own definitions: plain JSON with string keys, which always serialises.
    TOOLS.get_or_init(|| serde_json::value::to_raw_value(&tools()).expect("the tool definitions serialise"))
}

/// The body, serialised straight from the input it borrows (no copy of the
/// whole context into a new `Value` first), the tools from [`tools_json`].
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    instructions: &'a str,
    input: &'a [Value],
    tools: &'static RawValue,
    parallel_tool_calls: bool,
    stream: bool,
    store: bool,
    include: [&'static str; 1],
}

impl<'a> Body<'a> {
    fn new(model: &'a str, request: &ModelRequest<'a>) -> Self {
        Body {
            model,
            instructions: request.instructions,
            input: request.input,
            tools: tools_json(),
            parallel_tool_calls: true,
            stream: true,
            store: false,
            include: ["reasoning.encrypted_content"],
        }
    }
}

/// The exact JSON body for one request, as sent.
pub(crate) fn body_bytes(model: &str, request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Body::new(model, request))
}

/// [`body_bytes`] as a `Value` (for tests and docs).
pub(crate) fn body(model: &str, request: &ModelRequest<'_>) -> Value {
    // String keys only, so this cannot fail.
    serde_json::to_value(Body::new(model, request)).unwrap_or_default()
}
