//! A harness for end-to-end runs through the fake agent CLIs (`fixtures/fake-claude`,
//! `fake-codex`, `fake-gemini`, `fake-aider`): the spec's config names the preset and the fake
//! as its program, and the fake's own behaviour is scripted by `FAKE_PRESET_SCRIPT` (see
//! `fixtures/fake_cli.py`), the work by fake-agent's script as in every other test.

use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

pub const PRESETS: [&str; 4] = ["claude", "codex", "gemini", "aider"];

/// A repository with spec `001-p` whose agent is `preset`'s fake.
pub struct FakeCli {
    pub repo: TestRepo,
}

impl FakeCli {
    /// `extra_config` is appended to the config (other sections, `[run]`, `[budget]`, …).
    pub fn new(preset: &str, extra_config: &str) -> FakeCli {
        let repo = TestRepo::new();
        repo.add_spec("001-p");
        let program = fixture(&format!("fake-{preset}")).display().to_string();
        repo.write_config(&format!(
            "[agent]\npreset = \"{preset}\"\nprogram = \"{program}\"\n{extra_config}"
        ));
        std::fs::create_dir_all(repo.tmp.path().join("fake-sessions")).unwrap();
        let cli = FakeCli { repo };
        cli.preset_script("");
        cli
    }

    /// The fake CLI's rules (`<who> <attempt> <behaviour> [args]`, see fixtures/fake_cli.py).
    pub fn preset_script(&self, rules: &str) {
        std::fs::write(self.repo.tmp.path().join("preset-script"), rules).unwrap();
    }

    /// `runner ARGS` with the fake CLI's variables set.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let tmp = self.repo.tmp.path();
        let mut cmd = self.repo.cmd(args);
        cmd.env("FAKE_PRESET_SCRIPT", tmp.join("preset-script"))
            .env("FAKE_ARGV_LOG", tmp.join("argv.log"))
            .env("FAKE_ENV_LOG", tmp.join("env.log"))
            .env("FAKE_SESSIONS_DIR", tmp.join("fake-sessions"));
        cmd
    }

    pub fn runner(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// `runner run --spec 001-p` plus `extra`.
    pub fn run(&self, extra: &[&str]) -> Output {
        let mut args = vec!["run", "--spec", "001-p"];
        args.extend_from_slice(extra);
        self.runner(&args)
    }

    /// Every command line the fake was started with, its name first.
    pub fn argv_log(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.repo.tmp.path().join("argv.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The attempt records of chunk `id`.
    pub fn attempts(&self, id: &str) -> Vec<Value> {
        self.repo.chunk("001-p", id)["attempts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// A spec with the two-phase plan whose run was killed (SIGKILL) right after core-a's
    /// session left uncommitted work, the recovery evaluator (`evaluator = "agent"`) scripted to
    /// answer "restart": the start of every evaluator test.
    pub fn killed_after_a_session_with_partial_work(preset: &str) -> FakeCli {
        use std::os::unix::process::ExitStatusExt;
        let cli = FakeCli::new(preset, "[recovery]\nevaluator = \"agent\"\n");
        std::fs::copy(
            fixture("plans/two-phases.json"),
            cli.repo.plan_path("001-p"),
        )
        .unwrap();
        cli.repo
            .script("core-a * uncommitted\nrecovery * answer restart not worth it\n");
        let out = cli
            .cmd(&["run", "--spec", "001-p"])
            .env("RUNNER_FAILPOINTS", "after_coder_session")
            .output()
            .unwrap();
        assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", stderr(&out));
        cli
    }
}
