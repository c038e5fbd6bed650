//! Renders docs/comparison.md from one run of `scripts/bench peers`: the
//! set-up that differs, the speed table, and the crash comparison, quoting
//! what was observed. The page is generated; rerun the command to refresh it.

use std::fmt::Write as _;

use serde_json::Value;

use crate::crash::{shorten, CrashReport, CRASH_COMMAND};
use crate::peers::{table, Agent, Measured, PEER_NAME, PEER_PACKAGE, PEER_VERSION};

pub struct Context {
    pub date: String,
    pub machine: String,
    pub mino_version: String,
    pub mino_commit: String,
    pub peer_version: String,
    pub peer_bin: String,
    pub elapsed_secs: f64,
}

/// The run's scratch directory as `$RUN` and the home directory as `~`, so the page names no
/// machine's paths.
fn redact(text: &str, run_dir: &str) -> String {
    let text = if run_dir.is_empty() { text.to_string() } else { text.replace(run_dir, "$RUN") };
    match std::env::var("HOME") {
        Ok(home) if home.len() > 1 => text.replace(&home, "~"),
        _ => text,
    }
}

fn json_block(out: &mut String, value: &Value, run_dir: &str) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    let _ = writeln!(out, "```json\n{}\n```", redact(&text, run_dir));
}

/// An approval question with its environment reduced to the variables' names (their values
/// are this machine's).
fn without_environment_values(asked: &Value) -> Value {
    let mut asked = asked.clone();
    if let Some(env) = asked.get_mut("environment") {
        if let Some(map) = env.as_object() {
            *env = Value::Array(map.keys().map(|k| Value::String(format!("{k}=…"))).collect());
        }
    }
    asked
}

/// What the first request of a plain text turn carried, in one line.
fn request_summary(body: &Value) -> String {
    let tools: Vec<String> = body["tools"]
        .as_array()
        .map(|tools| {
            tools.iter().map(|t| t["name"].as_str().or(t["type"].as_str()).unwrap_or("?").to_string()).collect()
        })
        .unwrap_or_default();
    let instructions = body["instructions"].as_str().map(str::len).unwrap_or(0);
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let before_user: Vec<&Value> = input.iter().take(input.len().saturating_sub(1)).collect();
    let before_bytes: usize = before_user.iter().map(|v| v.to_string().len()).sum();
    let kinds: Vec<String> = before_user
        .iter()
        .map(|v| {
            format!("{} {}", v["type"].as_str().unwrap_or("?"), v["role"].as_str().unwrap_or("")).trim().to_string()
        })
        .collect();
    format!(
        "{} tool(s) ({}); `instructions` {} bytes; {} input item(s) before the question ({}; {} bytes); whole body {} bytes",
        tools.len(),
        tools.join(", "),
        instructions,
        before_user.len(),
        if kinds.is_empty() { "none".into() } else { kinds.join(", ") },
        before_bytes,
        body.to_string().len()
    )
}

/// The last turn of a resumed thread, with its command items, for quoting.
fn peer_last_turn(resume_answer: &Value) -> Value {
    let turn = resume_answer["thread"]["turns"].as_array().and_then(|t| t.last()).cloned().unwrap_or(Value::Null);
    let items = turn["items"].as_array().cloned().unwrap_or_default();
    let commands: Vec<Value> = items.iter().filter(|i| i["type"] == "commandExecution").cloned().collect();
    let kinds: Vec<Value> = items.iter().map(|i| i["type"].clone()).collect();
    serde_json::json!({
        "status": turn["status"],
        "error": turn["error"],
        "item types": kinds,
        "commandExecution items": commands,
    })
}

fn told_summary(report: &CrashReport) -> String {
    match report.agent {
        Agent::Mino => {
            let recovery = report.told.iter().find(|(n, _)| n == "mino/recovery").map(|(_, v)| v);
            let call = recovery.and_then(|r| r["turns"][0]["calls"][0]["result"]["status"].as_str()).unwrap_or("?");
            let ack = recovery.map(|r| r["acknowledgementRequired"] == true).unwrap_or(false);
            let refused = report
                .chat_before_ack
                .as_ref()
                .and_then(|c| c["error"]["message"].as_str())
                .map(|m| format!("; a question before acknowledging was refused: \"{m}\""))
                .unwrap_or_default();
            format!("`mino/recovery`: the call's result is `{call}`, acknowledgement required: {ack}{refused}")
        }
        Agent::Peer => {
            let last = report.told.first().map(|(_, v)| peer_last_turn(v)).unwrap_or(Value::Null);
            let item = &last["commandExecution items"][0];
            let command = match item["status"].as_str() {
                Some(status) => format!(
                    "its command item `{status}`{}",
                    item["exitCode"].as_i64().map(|c| format!(", exit code {c}")).unwrap_or_default()
                ),
                None => "no command item in it".into(),
            };
            let errors = report.told.iter().filter(|(n, _)| n == "error").count();
            format!(
                "`thread/resume`: last turn `{}`, {command}{}",
                last["status"].as_str().unwrap_or("?"),
                if errors > 0 { format!("; {errors} `error` notification(s)") } else { String::new() }
            )
        }
    }
}

/// The tool output the next request gave the model for the interrupted call.
fn output_sent(report: &CrashReport) -> String {
    let output = report.next_items.iter().find(|i| i["type"] == "function_call_output").map(|i| &i["output"]);
    match output {
        // Mino's output is itself JSON (status and text): shown as JSON, not as a quoted string.
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(json @ Value::Object(_)) => json.to_string(),
            _ => format!("\"{}\"", s.replace('\n', "\\n")),
        },
        Some(other) => other.to_string(),
        None => "no output item for the call".into(),
    }
}

pub fn render(ctx: &Context, measured: Option<&Measured>, crashes: &[CrashReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Mino beside {PEER_NAME}");
    let took =
        if ctx.elapsed_secs > 0.0 { format!(" (the whole run took {:.0} s)", ctx.elapsed_secs) } else { String::new() };
    let _ = writeln!(
        out,
        "\n*Generated by `scripts/bench peers` on {}{took}. Do not edit by hand: rerun the command.*\n",
        ctx.date
    );
    let _ = writeln!(
        out,
        "People choosing an agent server compare it with what they know. The closest peer to Mino is \
         OpenAI's Codex app-server: JSON-RPC over stdio, approvals, a journal of each thread (its rollout). \
         Both ran here against the same scripted Responses API endpoint (Mino's mock model, \
         `tests/mock-model`, on loopback), on the same machine, in the same run, alternating \
         repetition by repetition.\n"
    );
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(out, "| Mino | `{}` (commit {}) |", ctx.mino_version, ctx.mino_commit);
    let _ = writeln!(
        out,
        "| peer | `{PEER_PACKAGE}@{PEER_VERSION}` from npm, its native binary (`{}`), run as `codex app-server` |",
        ctx.peer_version
    );
    let _ = writeln!(out, "| peer binary | `{}` |", redact(&ctx.peer_bin, ""));
    let _ = writeln!(out, "| machine | {} |", ctx.machine);

    let _ = writeln!(out, "\n## What sets the two apart\n");
    let _ = writeln!(
        out,
        "- **Configuration.** Mino: `MINO_HOME` a fresh directory, `OPENAI_BASE_URL` the mock. The peer: \
         `CODEX_HOME` a fresh directory, `-c model_provider=\"mock\" -c model_providers.mock={{name=\"mock\", \
         base_url=…, wire_api=\"responses\"}} -c model=\"bench-model\" -c approval_policy=\"on-request\"`; \
         everything else its defaults."
    );
    let peer_crash = crashes.iter().find(|c| c.agent == Agent::Peer);
    let sandbox = crashes
        .iter()
        .find(|c| c.agent == Agent::Peer)
        .and_then(|c| c.told.first())
        .map(|(_, v)| format!("`{}`", v["sandbox"]))
        .unwrap_or_else(|| "not reported".into());
    let _ = writeln!(
        out,
        "- **Approvals and sandbox.** Mino asks before every command and has no sandbox: an approved command \
         runs with the user's rights. The peer ran with `approval_policy=\"on-request\"` and its default \
         sandbox (its resumed thread reports {sandbox}); under that policy it asks when the model requests a \
         command outside the sandbox, so the scripted calls for the peer carry `\"sandbox_permissions\": \
         \"require_escalated\"` (and a justification, shown as the approval's `reason`). Both therefore asked \
         once per command here, and the approved commands ran with write access in both (each wrote `side`)."
    );
    let executed = peer_crash.and_then(|c| c.executed_as.clone());
    let _ = writeln!(
        out,
        "- **Shell wrapper.** Mino runs `bash -c COMMAND` (no login shell, no profile read), its environment \
         shown in the approval question. The peer's tool `exec_command` defaults to a login shell (`login`: \
         true in its tool schema); the command it reported running for `{CRASH_COMMAND}` was {}.",
        executed.map(|c| format!("`{c}`")).unwrap_or_else(|| "not reported in its notifications".into())
    );
    if let Some(measured) = measured {
        let _ = writeln!(
            out,
            "- **Tools and instructions sent per request** (the first request of a one-line question, as the mock \
             recorded it):\n  - Mino: {}\n  - {PEER_NAME}: {}",
            request_summary(&measured.first_request[0]),
            request_summary(&measured.first_request[1])
        );
    }
    let _ = writeln!(
        out,
        "- **Ready** means: Mino answered `initialize` (the session file is created and synced then); the \
         peer answered `initialize` and `thread/start` (the thread is created then)."
    );

    if let Some(measured) = measured {
        let _ = writeln!(out, "\n## Speed\n");
        let _ = writeln!(
            out,
            "Medians of the repetitions; \"Mino ahead by\" is the peer's figure over Mino's (for throughput, \
             Mino's over the peer's). The bench exits non-zero when a goal is missed.\n"
        );
        out.push_str(&table(&measured.rows));
        let _ = writeln!(out, "\n```");
        for line in &measured.notes {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "```");
    }

    let _ = writeln!(out, "\n## Crash: the server is killed while an approved command runs\n");
    let _ = writeln!(
        out,
        "Each agent is asked to run `{CRASH_COMMAND}` in an empty directory; the bench approves it, waits \
         for `ran` to appear in `side`, and one second later sends SIGKILL to the server process (only to it). \
         It then starts the server again on the same home, resumes the same session (Mino: `initialize` with \
         `session`) or thread (the peer: `thread/resume`), asks \"What happened to the command?\", and reads \
         `side` 7 s after `ran` appeared, when `late` would have been written.\n"
    );
    let _ = writeln!(out, "| | {} |", crashes.iter().map(|c| c.agent.name()).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(crashes.len()));
    let row = |out: &mut String, name: &str, f: &dyn Fn(&CrashReport) -> String| {
        let cells: Vec<String> = crashes.iter().map(f).collect();
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    };
    row(&mut out, "told the client on reopening", &told_summary);
    row(&mut out, "sent the model for the killed call", &|c| format!("`{}`", output_sent(c).replace('|', "\\|")));
    row(&mut out, "ran again after the restart", &|c| {
        format!(
            "{} (`ran` written {} time(s); {} approval question(s) after the restart)",
            if c.ran_count() > 1 { "yes" } else { "no" },
            c.ran_count(),
            c.approvals_after_restart
        )
    });
    row(&mut out, "the command went on after the server died", &|c| {
        if c.late() {
            "yes: `late` was written after the kill".into()
        } else {
            format!("no: no `late` {:.1} s after the kill", c.checked_after_kill)
        }
    });
    row(&mut out, "the next turn ended", &|c| {
        let status = match c.agent {
            Agent::Mino => c.next_turn["status"].as_str(),
            Agent::Peer => c.next_turn["turn"]["status"].as_str(),
        };
        format!("`{}`", status.unwrap_or("?"))
    });

    for report in crashes {
        let _ = writeln!(out, "\n### {}\n", report.agent.name());
        let _ = writeln!(
            out,
            "Approval question (its `params`); `ran` appeared {} ms after the approval was sent:\n",
            report.ran_after_ms
        );
        json_block(&mut out, &shorten(&without_environment_values(&report.asked), 300), &report.run_dir);
        for (name, value) in &report.told {
            let value = if report.agent == Agent::Peer && name.starts_with("thread/resume") {
                let _ = writeln!(out, "\nAfter the restart, `{name}`, its last turn and command items:\n");
                peer_last_turn(value)
            } else {
                let _ = writeln!(out, "\nAfter the restart, `{name}`:\n");
                value.clone()
            };
            json_block(&mut out, &shorten(&value, 400), &report.run_dir);
        }
        if let Some(answer) = &report.chat_before_ack {
            let _ = writeln!(out, "\nA question sent before acknowledging was answered:\n");
            json_block(&mut out, answer, &report.run_dir);
        }
        let _ = writeln!(out, "\nThe next model request's input, from the killed call on (as the mock recorded it):\n");
        json_block(&mut out, &shorten(&Value::Array(report.next_items.clone()), 600), &report.run_dir);
        let _ = writeln!(out, "\n`side` afterwards: `{}`", report.side.replace('\n', "\\n"));
    }

    let _ = writeln!(out, "\n## Verdict\n");
    let _ = writeln!(out, "Only what this run observed:\n");
    for report in crashes {
        let name = report.agent.name();
        let _ = writeln!(
            out,
            "- {name}: on reopening, {}. For the killed call the model was sent {}{}. {} {}",
            told_summary(report),
            output_sent(report),
            if report.ran_count() > 0 { " (the command had written `ran` before the kill)" } else { "" },
            if report.ran_count() > 1 { "The command ran again after the restart." } else { "Nothing ran again." },
            if report.late() {
                "The command kept acting after the server was killed (`late` was written)."
            } else {
                "The command did not act after the server was killed (no `late`)."
            }
        );
    }
    if let Some(measured) = measured {
        let speed: Vec<String> = measured
            .rows
            .iter()
            .filter(|r| r.goal.is_some())
            .map(|r| format!("{} {:.1}x", r.measurement, r.ratio))
            .collect();
        let _ = writeln!(out, "- Speed, Mino ahead by: {}.", speed.join("; "));
    }
    out
}
