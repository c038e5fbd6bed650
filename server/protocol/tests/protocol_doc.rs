//! docs/protocol.md and this crate describe the same contract: every method,
//! notification, error code, status and decision of the crate is documented,
//! and every method, notification and error code the doc documents exists in
//! the crate. Adding a method without documenting it fails here.

use std::path::Path;

use mino_protocol::{method, Decision, ErrorCode, ToolStatus, TurnStatus};

/// The facts of the contract that the doc must state.
struct Contract {
    methods: Vec<&'static str>,
    error_codes: Vec<(i64, &'static str)>,
    statuses: Vec<&'static str>,
    decisions: Vec<&'static str>,
}

impl Contract {
    fn of_the_crate() -> Self {
        Contract {
            methods: method::REQUESTS.iter().chain(method::NOTIFICATIONS).copied().collect(),
            error_codes: ErrorCode::ALL.iter().map(|c| (c.code(), c.name())).collect(),
            statuses: TurnStatus::ALL
                .iter()
                .map(|s| s.as_str())
                .chain(ToolStatus::ALL.iter().map(|s| s.as_str()))
                .collect(),
            decisions: Decision::ALL.iter().map(|d| d.as_str()).collect(),
        }
    }
}

/// The lines of the section that starts with `heading` (up to the next
/// heading of the same or a higher level), or none.
fn section<'a>(doc: &'a str, heading: &str) -> Vec<&'a str> {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let mut lines = doc.lines().skip_while(|line| *line != heading);
    let Some(_) = lines.next() else { return Vec::new() };
    lines
        .take_while(|line| {
            let hashes = line.chars().take_while(|c| *c == '#').count();
            !(hashes > 0 && hashes <= level && line[hashes..].starts_with(' '))
        })
        .collect()
}

/// The text between backticks, for every backticked span of `text`.
fn backticked(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// Every `mino/…` method name the doc mentions in backticks, with a
/// field path (`mino/approvalRequest.limits`) cut off.
fn documented_methods(doc: &str) -> Vec<&str> {
    let mut names: Vec<&str> = backticked(doc)
        .filter_map(|span| span.strip_prefix("mino/").map(|_| span))
        .map(|span| span.split(['.', ' ']).next().unwrap_or(span))
        .filter(|name| !name.contains('*'))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The rows of the Errors table: `| `-32010` | `ACKNOWLEDGEMENT_REQUIRED` | …`.
fn documented_error_codes(doc: &str) -> Vec<(String, String)> {
    section(doc, "## Errors")
        .into_iter()
        .filter_map(|line| {
            let mut cells = line.strip_prefix('|')?.split('|').map(str::trim);
            let code = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
            let name = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
            Some((code.to_string(), name.to_string()))
        })
        .collect()
}

/// What the doc gets wrong about `contract`, one sentence each; empty when
/// they agree.
fn disagreements(doc: &str, contract: &Contract) -> Vec<String> {
    let mut problems = Vec::new();
    let toc: String =
        doc.lines().take_while(|line| !line.starts_with("## ")).filter(|line| line.starts_with("- [")).collect();
    for name in &contract.methods {
        if !toc.contains(&format!("`{name}`")) {
            problems.push(format!("{name} is missing from the table of contents"));
        }
        let heading = format!("### `{name}`");
        if !doc.lines().any(|line| line == heading) {
            problems.push(format!("{name} has no section {heading:?}"));
        }
    }
    for name in documented_methods(doc) {
        if !contract.methods.contains(&name) {
            problems.push(format!("{name} is documented but mino-protocol has no such method or notification"));
        }
    }

    let documented_codes = documented_error_codes(doc);
    for (code, name) in &contract.error_codes {
        if !documented_codes.iter().any(|(c, n)| *c == code.to_string() && n == name) {
            problems.push(format!("error code {code} {name} has no row in the Errors table"));
        }
    }
    for (code, name) in &documented_codes {
        if !contract.error_codes.iter().any(|(c, n)| c.to_string() == *code && n == name) {
            problems.push(format!("the Errors table documents {code} {name}, which mino-protocol does not define"));
        }
    }

    let vocabulary = section(doc, "## Shared vocabulary").join("\n");
    for status in &contract.statuses {
        if !backticked(&vocabulary).any(|span| span == *status) {
            problems.push(format!("status {status} is not in the Shared vocabulary section"));
        }
    }
    let approval = section(doc, "### `mino/approval`").join("\n");
    for decision in &contract.decisions {
        if !approval.contains(&format!("\"{decision}\"")) {
            problems.push(format!("decision {decision:?} is not in the mino/approval section"));
        }
    }
    problems
}

#[test]
fn docs_protocol_md_documents_exactly_the_crate() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let problems = disagreements(&doc, &Contract::of_the_crate());
    assert!(
        problems.is_empty(),
        "docs/protocol.md and server/protocol (mino-protocol) disagree:\n- {}",
        problems.join("\n- ")
    );
}

/// The methods whose params may be left out, as the doc's "Requests"
/// section lists them (the parenthesis after "Methods whose params are all
/// optional") and as the crate marks them (`Request::PARAMS_OPTIONAL`).
#[test]
fn docs_protocol_md_lists_the_methods_whose_params_may_be_left_out() {
    struct Optional(Vec<&'static str>);
    impl mino_protocol::Visitor for Optional {
        fn request<R: mino_protocol::request::Request>(&mut self) {
            if R::PARAMS_OPTIONAL {
                self.0.push(R::METHOD);
            }
        }
        fn notification<N: mino_protocol::notification::Notification>(&mut self) {}
    }
    let mut crate_list = Optional(Vec::new());
    mino_protocol::visit(&mut crate_list);
    let mut crate_list = crate_list.0;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let requests = section(&doc, "## Requests").join("\n");
    let marker = "Methods whose params are all optional (";
    let start = requests.find(marker).map(|i| i + marker.len()).expect("the sentence naming them in ## Requests");
    let end = requests[start..].find(')').map(|i| start + i).expect("its closing parenthesis");
    let mut documented: Vec<&str> = backticked(&requests[start..end]).collect();
    crate_list.sort_unstable();
    documented.sort_unstable();
    assert_eq!(documented, crate_list, "docs/protocol.md's list and the crate's `optional` marks disagree");
}

// ---------------------------------------------------------------- the checker itself

const SMALL_DOC: &str = "# Protocol

- [Requests](#requests): `mino/chat`
- [Notifications](#notifications): `mino/turnEnded`

## Requests

### `mino/chat`

### `mino/approval`

`{decision: \"approve\" | \"deny\"}`

## Notifications

### `mino/turnEnded`

Sent last; see `mino/turnEnded.status`.

## Errors

| code | name | when |
|---|---|---|
| `-32011` | `TURN_IN_PROGRESS` | a turn runs |

## Shared vocabulary

Turn statuses: `completed`, `failed`.
";

fn small_contract() -> Contract {
    Contract {
        methods: vec!["mino/chat", "mino/turnEnded"],
        error_codes: vec![(-32011, "TURN_IN_PROGRESS")],
        statuses: vec!["completed", "failed"],
        decisions: vec!["approve", "deny"],
    }
}

#[test]
fn the_checker_accepts_a_doc_that_agrees() {
    let mut contract = small_contract();
    contract.methods.push("mino/approval");
    let doc = SMALL_DOC.replacen("`mino/chat`\n", "`mino/chat`, `mino/approval`\n", 1);
    assert_eq!(disagreements(&doc, &contract), Vec::<String>::new());
}

#[test]
fn a_method_added_without_documentation_fails() {
    let mut contract = small_contract();
    contract.methods.extend(["mino/approval", "mino/sessions/list"]);
    let doc = SMALL_DOC.replacen("`mino/chat`\n", "`mino/chat`, `mino/approval`\n", 1);
    let problems = disagreements(&doc, &contract);
    assert_eq!(
        problems,
        [
            "mino/sessions/list is missing from the table of contents",
            "mino/sessions/list has no section \"### `mino/sessions/list`\"",
        ]
    );
}

#[test]
fn a_documented_method_the_crate_lacks_fails() {
    // The doc has `mino/approval`; this contract does not.
    let problems = disagreements(SMALL_DOC, &small_contract());
    assert_eq!(problems, ["mino/approval is documented but mino-protocol has no such method or notification"]);
}

#[test]
fn error_codes_statuses_and_decisions_must_agree() {
    let mut contract = small_contract();
    contract.methods.push("mino/approval");
    contract.error_codes = vec![(-32011, "TURN_IN_PROGRESS"), (-32016, "RULE_REFUSED")];
    contract.statuses.push("interrupted");
    contract.decisions.push("allowSession");
    let doc = SMALL_DOC.replacen("`mino/chat`\n", "`mino/chat`, `mino/approval`\n", 1).replace(
        "| `-32011` | `TURN_IN_PROGRESS` | a turn runs |",
        "| `-32011` | `TURN_IN_PROGRESS` | a turn runs |\n| `-32019` | `GONE` | never |",
    );
    let problems = disagreements(&doc, &contract);
    assert_eq!(
        problems,
        [
            "error code -32016 RULE_REFUSED has no row in the Errors table",
            "the Errors table documents -32019 GONE, which mino-protocol does not define",
            "status interrupted is not in the Shared vocabulary section",
            "decision \"allowSession\" is not in the mino/approval section",
        ]
    );
}
