//! `mino --demo`: the whole product offline. A scripted model (the same mock
//! the tests use) answers on loopback; the server works in a temporary
//! directory with a home of its own, so none of the user's files is touched.
//!
//! The script is chosen per question just before it is sent, and the reply
//! after a command just before the approval decision is sent, so the story
//! stays consistent with what the user typed and decided.
//!
//! Only with the `demo` feature (`scripts/run` turns it on): a plain build
//! links no model server, and its `--demo` says how to get one.

#[cfg(not(feature = "demo"))]
pub use absent::Demo;
#[cfg(feature = "demo")]
pub use scripted::Demo;

#[cfg(feature = "demo")]
mod scripted {
    use std::path::{Path, PathBuf};

    use mino_mock_model::{split_words, MockModel, Reply, ScriptedCall};
    use mino_protocol::Decision;

    /// Milliseconds between streamed deltas, so streaming is visible.
    const DELAY_MS: u64 = 35;

    #[derive(Clone, Copy)]
    enum Pending {
        AddMilk,
        AddButter,
        ShowList,
    }

    pub struct Demo {
        mock: MockModel,
        root: PathBuf,
        calls: u32,
        pending: Option<Pending>,
    }

    impl Demo {
        /// Starts the mock model and creates `<tmp>/home` and `<tmp>/work`.
        pub async fn start() -> anyhow::Result<Demo> {
            let mock = MockModel::start(Vec::new()).await?;
            let root = tempfile::Builder::new().prefix("mino-demo-").tempdir()?.keep();
            std::fs::create_dir_all(root.join("home"))?;
            std::fs::create_dir_all(root.join("work"))?;
            std::fs::write(root.join("work").join("shopping.txt"), "bread\neggs\n")?;
            Ok(Demo { mock, root, calls: 0, pending: None })
        }

        pub fn root(&self) -> &Path {
            &self.root
        }

        pub fn home(&self) -> PathBuf {
            self.root.join("home")
        }

        pub fn work(&self) -> PathBuf {
            self.root.join("work")
        }

        pub fn base_url(&self) -> String {
            self.mock.base_url()
        }

        /// Printed before the banner.
        pub fn intro(&self) -> String {
            format!(
                "Mino demo: a scripted model on {} stands in for OpenAI; no network, no API key.\n\
                 Demo workspace: {} (commands run in {}; it is kept after exit)\n\
                 Try: Add milk to shopping.txt.   Then: Add butter after bread (a file edit you approve as a diff).\n\
                 And: What is on my shopping list?\n\n",
                self.mock.addr(),
                self.root.display(),
                self.work().display(),
            )
        }

        /// Scripts the model's answer to `text`.
        pub fn before_chat(&mut self, text: &str) {
            if self.mock.remaining() > 0 {
                // Left over from a turn that stopped early.
                self.mock.reset();
            }
            self.pending = None;
            let lower = text.to_lowercase();
            let reply = if lower.contains("milk") {
                self.pending = Some(Pending::AddMilk);
                self.call(
                    "I'll append milk to shopping.txt. That runs a command, so Mino asks you first.",
                    "echo milk >> shopping.txt",
                )
            } else if lower.contains("butter") {
                self.pending = Some(Pending::AddButter);
                self.calls += 1;
                // An edit, not a command: Mino shows its diff for approval.
                Reply::edit_file(
                    &format!("call_demo_{}", self.calls),
                    "shopping.txt",
                    "bread\n",
                    "bread\nbutter\n",
                    false,
                )
            } else if ["list", "shopping", "show", "read", "cat", "check"].iter().any(|w| lower.contains(w)) {
                self.pending = Some(Pending::ShowList);
                self.call("Let me read shopping.txt.", "cat shopping.txt")
            } else {
                text_reply(
                    "This is Mino's offline demo, so my answers are scripted. Try \"Add milk to shopping.txt.\" \
                     or \"What is on my shopping list?\": each command waits for your approval. \
                     Use /exit to quit, and `mino` with OPENAI_API_KEY set for a real model.",
                )
            };
            self.mock.push(reply);
        }

        /// Scripts the answer the model gives after the command's result.
        pub fn before_decision(&mut self, decision: Decision) {
            let Some(pending) = self.pending.take() else {
                return;
            };
            let text = match (pending, decision) {
                (Pending::AddMilk, Decision::Deny) => "Okay, I did not run it; shopping.txt is unchanged.",
                (Pending::AddMilk, _) => {
                    "Done: milk is now the last line of shopping.txt. Ask \"What is on my shopping list?\" to check."
                }
                (Pending::AddButter, Decision::Deny) => "Okay, I did not edit shopping.txt.",
                (Pending::AddButter, _) => "Done: butter now follows bread in shopping.txt.",
                (Pending::ShowList, Decision::Deny) => "Okay, I won't read shopping.txt.",
                (Pending::ShowList, _) => "That is everything on shopping.txt right now.",
            };
            self.mock.push(text_reply(text));
        }

        fn call(&mut self, text: &str, command: &str) -> Reply {
            self.calls += 1;
            Reply::Calls {
                text: split_words(text),
                calls: vec![ScriptedCall::new(format!("call_demo_{}", self.calls), command)],
                delay_ms: DELAY_MS,
            }
        }
    }

    fn text_reply(text: &str) -> Reply {
        Reply::text(text).with_delay_ms(DELAY_MS)
    }
}

/// A build without the demo: `--demo` fails at start with what to do.
#[cfg(not(feature = "demo"))]
mod absent {
    use std::path::{Path, PathBuf};

    use mino_protocol::Decision;

    /// Never built: without the feature [`Demo::start`] always fails.
    pub enum Demo {}

    impl Demo {
        pub async fn start() -> anyhow::Result<Demo> {
            anyhow::bail!(
                "this build of mino has no demo; build it with `cargo build --release -p mino --features demo` (scripts/run does)"
            )
        }
        pub fn root(&self) -> &Path {
            match *self {}
        }
        pub fn home(&self) -> PathBuf {
            match *self {}
        }
        pub fn work(&self) -> PathBuf {
            match *self {}
        }
        pub fn base_url(&self) -> String {
            match *self {}
        }
        pub fn intro(&self) -> String {
            match *self {}
        }
        pub fn before_chat(&mut self, _: &str) {
            match *self {}
        }
        pub fn before_decision(&mut self, _: Decision) {
            match *self {}
        }
    }
}
