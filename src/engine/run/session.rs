//! One agent session: its environment, journaled start and end, verification.

use super::*;
use crate::agent::output::SessionFacts;
use crate::policy::invocation::{Preset, SessionMode};
use crate::store::event::{self as ev, Event};

/// What the agent said, read from the plan: `runner chunk done|fail` records it on the attempt;
/// an agent that edited the plan itself and set `completed` counts as done.
pub(super) fn read_report(chunk: &Chunk) -> Report {
    let last = chunk.last_attempt();
    match last.as_ref().and_then(|a| a.reported.as_deref()) {
        Some("done") => Report::Done,
        Some("fail") => Report::Fail(
            last.and_then(|a| a.report_notes)
                .unwrap_or_else(|| "no reason given".into()),
        ),
        _ if chunk.status == Status::Completed => Report::Done,
        _ => Report::Silent,
    }
}

impl Run {
    pub(super) async fn verify(
        &self,
        chunk: &Chunk,
        session_id: &str,
    ) -> anyhow::Result<Option<CheckResult>> {
        let Some(check) = verification::command_check(chunk) else {
            return Ok(None);
        };
        // Through the safe session-folder helper, like every session file (`store::safe`).
        let log_path = self
            .paths
            .session_dir(session_id)
            .with_context(|| format!("creating the session folder of {session_id}"))?
            .join("verification.log");
        let place = crate::engine::verify::Place {
            worktree: self.worktree.clone(),
            env: self.agent_env("coder", Some(&chunk.id), 0, session_id),
            log_path,
            timeout: self.config.run.verification_timeout(),
            drain: self.drain,
            max_log_bytes: self.config.agent.max_log_bytes,
        };
        let checked = crate::engine::verify::run(&check, place, |spec| async move {
            self.run_journaled(&spec, session_id, "verification").await
        })
        .await?;
        if checked.cut_short(false) {
            // The agent's report stands; recovery re-runs the verification next time.
            return Err(RunnerError::Interrupted.into());
        }
        let result = checked.result;
        self.journal.write(&Event::Verification(ev::Verification {
            chunk: chunk.id.clone(),
            command: result.command.clone(),
            passed: result.passed,
            detail: result.detail_with_log(),
        }))?;
        self.keeper.verified(&chunk.id, &result);
        Ok(Some(result))
    }

    pub(super) fn agent_env(
        &self,
        role: &str,
        chunk: Option<&str>,
        attempt: u32,
        session_id: &str,
    ) -> Vec<(String, String)> {
        let exe = std::env::current_exe().ok();
        let mut env = vec![
            ("RUNNER_ROLE".to_string(), role.to_string()),
            ("RUNNER_SPEC".into(), self.paths.name.clone()),
            (
                "RUNNER_SPEC_DIR".into(),
                self.paths.dir.display().to_string(),
            ),
            (
                "RUNNER_PLAN_FILE".into(),
                // The planner writes its draft in the worktree (`plan::PLAN_DRAFT`).
                if role == "planner" {
                    crate::plan::draft_path(&self.worktree)
                } else {
                    self.paths.plan.path().to_path_buf()
                }
                .display()
                .to_string(),
            ),
            ("RUNNER_ATTEMPT".into(), attempt.to_string()),
            ("RUNNER_SESSION_ID".into(), session_id.to_string()),
            (
                "RUNNER_WORKTREE".into(),
                self.worktree.display().to_string(),
            ),
            ("RUNNER_REPO".into(), self.repo_root.display().to_string()),
            ("RUNNER_RUN_ID".into(), self.run_id.clone()),
        ];
        if let Some(chunk) = chunk {
            env.push(("RUNNER_CHUNK_ID".into(), chunk.to_string()));
        }
        if let Some(exe) = exe {
            env.push(("RUNNER_BIN".into(), exe.display().to_string()));
            // Let the agent call `runner chunk done` by name.
            if let Some(path) = crate::agent::preset::agent_path() {
                env.push(("PATH".into(), path.to_string_lossy().into_owned()));
            }
        }
        env
    }

    /// Run a child and journal its process group as soon as it exists, so that recovery can
    /// find it if runner dies, and its end.
    pub(super) async fn run_journaled(
        &self,
        spec: &ChildSpec,
        session_id: &str,
        role: &str,
    ) -> anyhow::Result<crate::agent::ChildEnd> {
        let journal = &self.journal;
        let mut on_spawn = |pgid: i32| {
            let _ = journal.write(&Event::ProcessStarted(ev::Process {
                pgid: Some(pgid),
                session_id: session_id.to_string(),
                role: Some(role.to_string()),
                why: None,
            }));
            crate::failpoint::hit("after_spawn");
        };
        let end = run_child(spec, &self.interrupt, &mut on_spawn).await?;
        // Whatever the agent left running — in its group or not (`setsid`, a double fork: the
        // subreaper keeps them our descendants) — goes now, before the plan is settled.
        let killed = crate::agent::ancestry::kill_descendants();
        if killed > 0 {
            self.journal
                .write(&Event::LeftoversKilled(ev::LeftoversKilled {
                    session_id: session_id.to_string(),
                    processes: killed as u64,
                }))?;
        }
        if let Some(pgid) = end.pgid {
            self.journal.write(&Event::ProcessEnded(ev::Process {
                pgid: Some(pgid),
                session_id: session_id.to_string(),
                role: Some(role.to_string()),
                why: None,
            }))?;
        }
        Ok(end)
    }

    /// The agent of session `who` run to its end, shown live to a sink that shows sessions
    /// (`engine::live`).
    async fn run_watched(
        &self,
        who: crate::policy::live::Session<'_>,
        spec: &ChildSpec,
        session_id: &str,
    ) -> anyhow::Result<crate::agent::ChildEnd> {
        let label = crate::policy::live::session_label(who);
        let run = self.run_journaled(spec, session_id, who.role());
        crate::engine::live::watched(Some(&self.reporter), &label, &spec.log_path, run).await
    }

    /// One agent session of `who` (its attempt record's number `attempt`), shown live where
    /// the progress sink is (`engine::live`).
    pub(super) async fn session(
        &mut self,
        who: crate::policy::live::Session<'_>,
        attempt: u32,
        session_id: &str,
        prompt: &str,
        start_commit: Option<String>,
    ) -> anyhow::Result<(crate::agent::ChildEnd, SessionFacts)> {
        let (role, chunk) = (who.role(), who.chunk());
        // Chosen as the chunk was taken (`resume`); taken now, so none is left for another.
        let next = self.session_mode();
        // After Ctrl-C no new session starts.
        if self.interrupt.is_set() {
            return Err(RunnerError::Interrupted.into());
        }
        let dir = self
            .paths
            .session_dir(session_id)
            .with_context(|| format!("creating the folder of session {session_id}"))?;
        let prompt_path = dir.join("prompt.md");
        crate::store::safe::write(&prompt_path, prompt.as_bytes())
            .map_err(crate::store::at(&prompt_path))?;
        // A chunk's attempt recorded its start commit as it was taken (only runner ran since):
        // the worktree is not opened again for it.
        let start_commit = match start_commit {
            Some(commit) => commit,
            None => head_commit(&self.open_worktree()?)?.to_string(),
        };
        self.sessions += 1;
        let mode = next.mode;
        // What is left of the spec's budget (checked before the chunk was taken: spent here
        // only if it changed since, then claude gets nothing to spend).
        let usd_left = match self.money_allowance() {
            crate::policy::budget::Allowance::Go { usd_left } => usd_left,
            crate::policy::budget::Allowance::Spent(_) => Some(0.0),
        };
        let mut env = self.agent_env(role, chunk, attempt, session_id);
        // `agent.mcp`: the session gets runner's MCP server, which knows it by its variables.
        let mcp_config = if self.config.agent.mcp && self.agent.choice.preset == Preset::Claude {
            Some(crate::agent::mcp::write_config(&dir, &env)?)
        } else {
            None
        };
        let draft = crate::plan::draft_path(&self.worktree);
        let gemini_policy = self.gemini_policy(&dir, chunk)?;
        let invocation = self.agent.invocation(
            &self.worktree,
            &self.paths.dir,
            &dir,
            &mode,
            usd_left,
            mcp_config.as_deref(),
            crate::agent::preset::SessionFiles {
                plan_draft: (role == "planner").then_some(draft.as_path()),
                gemini_policy: gemini_policy.as_deref(),
            },
        );
        env.extend(invocation.env.iter().cloned());
        let agent_tmp = self.agent_tmp()?;
        if let Some(tmp) = &agent_tmp {
            env.push(("TMPDIR".into(), tmp.path.display().to_string()));
        }
        let spec = ChildSpec {
            argv: invocation.argv.clone(),
            cwd: self.worktree.clone(),
            env,
            stdin: invocation.prompt_on_stdin.then(|| prompt.to_string()),
            log_path: dir.join("output.log"),
            timeout: self.config.run.session_timeout(),
            drain: self.drain,
            max_log_bytes: self.config.agent.max_log_bytes,
            watch_for: None,
        };
        let started = ev::Session {
            chunk: chunk.map(str::to_string),
            role: role.to_string(),
            attempt,
            session_id: session_id.to_string(),
            start_commit: Some(start_commit),
            command: Some(invocation.argv),
            preset: Some(self.agent.choice.preset.name().to_string()),
            resumed: matches!(mode, SessionMode::Reattach { .. }).then_some(true),
            agent_session_id: match mode {
                SessionMode::Fresh { session_id } => session_id,
                SessionMode::Reattach { agent_session_id } => Some(agent_session_id),
            },
        };
        self.journal.write(&Event::SessionStart(started.clone()))?;
        let end = self.run_watched(who, &spec, session_id).await;
        if let Some(tmp) = &agent_tmp {
            // The session's temporary files go with it (the folder is git-ignored either way).
            self.remove_agent_tmp(tmp);
        }
        let end = end?;
        let report = self.session_report(&dir, &end.ended, next.thread_total);
        let (exit_code, signal) = match end.ended {
            Ended::Exited(c) => (Some(c), None),
            Ended::Signaled(s) => (None, Some(s)),
            _ => (None, None),
        };
        self.journal.write(&Event::SessionEnd(ev::SessionEnd {
            start: ev::Session {
                command: None,
                ..started
            },
            exit_status: exit_code,
            signal,
            ended: self.describe_end(&end.ended),
            duration_ms: end.duration.as_millis() as u64,
            pgid: end.pgid,
            report: (report != SessionFacts::default()).then(|| Box::new(report.clone())),
        }))?;
        self.note_session_cost(role, &report)?;
        Ok((end, report))
    }

    /// What the agent said about its session, read from the files it left in `dir` (bounded:
    /// the log is capped to `agent.max_log_bytes`, plus the marker of a cut).
    fn session_report(
        &self,
        dir: &Path,
        ended: &Ended,
        thread_total: Option<crate::agent::output::Tokens>,
    ) -> SessionFacts {
        let mut report = crate::agent::output::read::read_session(
            self.agent.choice.preset,
            dir,
            thread_total,
            self.config.agent.max_log_bytes.saturating_add(4096),
        );
        // A CLI that failed without a word its parser reads still said something: keep its
        // last lines for the user (the planner's "did not write", a failed attempt's reason).
        if matches!(ended, Ended::Exited(c) if *c != 0) && report.failure().is_none() {
            report.last_words = crate::agent::output::read::last_words_of(dir);
        }
        report
    }

    /// The temp folder of a codex `safe` session: `.auto-claude/tmp` in the worktree (ignored
    /// by git), as its `TMPDIR`. codex's sandbox keeps the temp folders out of its writable
    /// roots under `safe` (nothing outside the worktree), and the project's tests still need
    /// somewhere to put their temporary files. None where that place is not a plain folder of
    /// the worktree (a link, a file: the agent's or the base branch's) — the session then runs
    /// without it, as it would elsewhere.
    fn agent_tmp(&self) -> anyhow::Result<Option<AgentTmp>> {
        use crate::policy::invocation::Permission;
        if self.agent.choice.preset != Preset::Codex
            || self.agent.choice.permission != Permission::Safe
        {
            return Ok(None);
        }
        let parent = self.worktree.join(".auto-claude");
        let path = parent.join("tmp");
        let is_dir = |p: &Path| std::fs::symlink_metadata(p).ok().filter(|m| m.is_dir());
        let Some(parent_meta) = is_dir(&parent) else {
            return Ok(None);
        };
        if std::fs::symlink_metadata(&path).is_err() && std::fs::create_dir(&path).is_err() {
            return Ok(None);
        }
        Ok(is_dir(&path).map(|meta| AgentTmp {
            path,
            ids: [identity(&parent_meta), identity(&meta)],
        }))
    }

    /// Remove a session's temp folder — only if it and its parent are still the very folders
    /// made for it (same device and inode, not links): the agent could have put a link to
    /// anywhere in their place, and runner must never delete through it. The agent's
    /// processes are gone by now (`run_journaled` ends its leftovers), so nothing moves them
    /// between the check and the removal.
    fn remove_agent_tmp(&self, tmp: &AgentTmp) {
        let parent = tmp.path.parent().unwrap_or(&self.worktree);
        let same = |p: &Path, id: (u64, u64)| {
            std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir() && identity(&m) == id)
        };
        if same(parent, tmp.ids[0]) && same(&tmp.path, tmp.ids[1]) {
            let _ = std::fs::remove_dir_all(&tmp.path);
        }
    }

    /// gemini's `safe` policy for a session, written into its folder: runner's report command
    /// and the chunk's verification command may run (`policy::invocation::gemini_policy`).
    fn gemini_policy(&self, dir: &Path, chunk: Option<&str>) -> anyhow::Result<Option<PathBuf>> {
        use crate::policy::invocation::Permission;
        if self.agent.choice.preset != Preset::Gemini
            || self.agent.choice.permission != Permission::Safe
        {
            return Ok(None);
        }
        let check = match chunk {
            Some(id) => {
                let plan = self.load_plan()?;
                plan.find_chunk(id)
                    .and_then(|pos| verification::command_check(plan.chunk(pos)))
                    .map(|c| c.command)
            }
            None => None,
        };
        let text = crate::policy::invocation::gemini_policy(
            &crate::agent::prompt::runner_word(),
            check.as_deref(),
        );
        let path = dir.join("gemini-policy.toml");
        crate::store::safe::write(&path, text.as_bytes()).map_err(crate::store::at(&path))?;
        Ok(Some(path))
    }

    /// How a session ended, in words; a second Ctrl-C is the user's stop, not a drain timeout.
    pub(super) fn describe_end(&self, ended: &Ended) -> String {
        match ended {
            Ended::Interrupted { drained: false } if self.interrupt.by_parent() => {
                "was killed: the runner that started this run stopped it".to_string()
            }
            Ended::Interrupted { drained: false } if self.interrupt.forced() => {
                "was killed: you stopped runner with a second Ctrl-C".to_string()
            }
            other => other.describe(),
        }
    }
}

/// A codex session's temp folder, and the identities (device, inode) of it and of its parent
/// as runner made them.
struct AgentTmp {
    path: PathBuf,
    ids: [(u64, u64); 2],
}

fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}
