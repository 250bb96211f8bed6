//! The planner session: write a plan where there is none, retry an invalid one.

use super::*;
use crate::agent::output::SessionFacts;
use crate::store::event::{self as ev, Event};

/// The largest plan draft runner reads (a plan of tens of thousands of chunks is a few tens of
/// MB): a larger file is a rejected draft, not a run out of memory.
const MAX_DRAFT_BYTES: u64 = 64 << 20;

/// The draft's bytes, `None` when it is larger than [`MAX_DRAFT_BYTES`] (read no further).
fn read_draft(draft: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = crate::store::safe::open_read(draft)
        .with_context(|| format!("reading {}", draft.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_DRAFT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", draft.display()))?;
    Ok((bytes.len() as u64 <= MAX_DRAFT_BYTES).then_some(bytes))
}

/// What a planner session left: the problems with its plan (none once it is installed), and
/// whether it wrote no plan at all (no draft, nothing in the spec folder).
struct PlannerOutput {
    problems: Vec<String>,
    wrote_nothing: bool,
}

pub(super) fn plan_error_lines(e: &PlanError) -> Vec<String> {
    let at = match (e.line, e.column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        _ => String::new(),
    };
    e.problems.iter().map(|p| format!("{p}{at}")).collect()
}

impl Run {
    pub(super) async fn plan_feature(
        &mut self,
        mut resumed_prompt: Option<String>,
    ) -> anyhow::Result<()> {
        let spec_text = crate::store::spec::read_text(&self.paths.spec_md)?;
        // A new plan starts: the copies of an old one (last-good, journal snapshots) must never
        // be "restored" over it. The old copy is kept aside; the journal gets a barrier.
        let last_good = self.paths.plan.last_good_path().to_path_buf();
        if last_good.exists() {
            let aside = crate::store::unused_path(&last_good.with_file_name(format!(
                "{}.replaced-{}",
                crate::plan::LAST_GOOD_FILE,
                crate::clock::stamp()
            )));
            crate::store::safe::rename(&last_good, &aside)
                .with_context(|| format!("moving {} aside", last_good.display()))?;
        }
        self.journal.write(&Event::PlanReset(ev::Empty {}))?;
        // The planner writes its plan in the worktree (`plan::PLAN_DRAFT`); one left there by
        // an earlier run is not this planner's.
        let draft = crate::plan::draft_path(&self.worktree);
        self.prepare_draft(&draft)?;
        let mut errors: Vec<String> = Vec::new();
        // Whether the last attempt wrote nothing at all, and whether any wrote a plan.
        let mut wrote_nothing = false;
        let mut wrote_any = false;
        let mut last_session = String::new();
        let mut cli_failure = None;
        let max = self.config.run.max_attempts;
        let mut attempt = 0;
        while attempt < max {
            attempt += 1;
            if !self.budget_left()? {
                return Err(self.budget_spent().into());
            }
            self.reporter.line(format!(
                "Planning {} (attempt {attempt} of {max})…",
                self.paths.name
            ));
            let prompt = match resumed_prompt.take() {
                Some(p) => {
                    self.reporter.line(format!(
                        "Resuming interrupted work for planner on {}: \"{}…\"",
                        self.paths.name,
                        crate::engine::recovery::interrupted::preview(&p, 80)
                    ));
                    p
                }
                None => self.prompts.render(
                    crate::agent::prompt::PLANNER,
                    json!({
                        "spec_name": self.paths.name,
                        "spec_text": spec_text,
                        "plan_file": draft,
                        "attempt": attempt,
                        "errors": errors,
                    }),
                )?,
            };
            let session_id = crate::store::ids::session_id("planner", None, attempt);
            // The planner's report is journaled with its session end (no attempt record).
            let (end, report) = self
                .session(
                    crate::policy::live::Session::Planner { attempt },
                    attempt,
                    &session_id,
                    &prompt,
                    None,
                )
                .await?;
            if let Ended::Interrupted { drained } = end.ended {
                self.set_aside_partial_plan()?;
                self.set_aside_draft(&draft, "interrupted")?;
                return self
                    .interrupted(None, "planner", None, &session_id, &prompt, drained)
                    .await;
            }
            if report.usage_limit.is_some() {
                self.limit_hit(&report, &session_id)?;
            }
            let output = self.read_planner_output(&draft, &report)?;
            (errors, wrote_nothing) = (output.problems, output.wrote_nothing);
            // What its CLI reported (an error, a usage limit): the text it printed is shown
            // as it is.
            cli_failure = report.failure();
            wrote_any |= !wrote_nothing;
            if errors.is_empty() {
                return self.accept_plan(&session_id);
            }
            if self.limited.is_some() {
                // Cut short by the usage limit: not an attempt of its own. The next one
                // starts after the pause (or the run stops, exit 6).
                self.reporter.line(format!(
                    "The planner stopped: {}",
                    report.failure().unwrap_or_default()
                ));
                attempt -= 1;
                self.honour_pause().await?;
                continue;
            }
            self.journal.write(&Event::PlanRejected(ev::PlanRejected {
                session_id: session_id.clone(),
                attempt,
                errors: errors.clone(),
            }))?;
            self.say_rejected(&errors, wrote_nothing, attempt < max, &session_id);
            last_session = session_id;
        }
        Err(match wrote_nothing {
            true => self.planner_wrote_nothing(max, wrote_any, cli_failure, &last_session),
            false => self.planner_gave_up(max, &errors),
        })
    }

    /// The progress line of a planner attempt whose plan was not taken: its problems, or that
    /// it wrote none, with what it printed (shown once: here when it is tried `again`, else in
    /// the error that stops the run).
    fn say_rejected(&self, errors: &[String], wrote_nothing: bool, again: bool, session_id: &str) {
        self.reporter.line(match (wrote_nothing, again) {
            (true, true) => format!(
                "The planner wrote no plan.\n{}",
                self.planner_output(session_id, "  ")
            ),
            (true, false) => "The planner wrote no plan.".to_string(),
            (false, _) => format!(
                "The planner's output was not a valid plan:\n{}",
                errors
                    .iter()
                    .map(|e| format!("  - {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        });
    }

    /// The end of what the planner of session `session_id` printed, and where all of it is.
    fn planner_output(&self, session_id: &str, indent: &str) -> String {
        let log = self.paths.sessions_dir.join(session_id).join("output.log");
        let lines = crate::agent::output::read::last_lines(&log, 20, 200, true);
        if lines.is_empty() {
            return format!("{indent}It printed nothing (log: {}).", log.display());
        }
        let mut out = format!(
            "{indent}The end of what it printed (all of it in {}):",
            log.display()
        );
        for line in lines {
            out.push_str(&format!("\n{indent}    {line}"));
        }
        out
    }

    /// The error of a planner whose last attempt wrote no plan at all: what it printed (and
    /// the error its CLI reported, if it did), its log, and the agent to look at (there is no
    /// plan to fix by hand).
    fn planner_wrote_nothing(
        &self,
        max: u32,
        wrote_any: bool,
        cli_failure: Option<String>,
        session_id: &str,
    ) -> anyhow::Error {
        let when = match (wrote_any, max) {
            (false, 1) => String::new(),
            (false, _) => format!(" in {max} attempts"),
            (true, _) => format!(" in its last attempt ({max} of {max})"),
        };
        let earlier = if wrote_any {
            format!(
                "\nThe plans it wrote before were not valid; they are kept in {} (plan-draft.json.rejected-*).",
                self.paths.dir.display()
            )
        } else {
            String::new()
        };
        let choice = &self.agent.choice;
        let hint = match choice.preset {
            crate::policy::invocation::Preset::Command => format!(
                "the agent command `{}` ran and wrote no plan: it must start an agent that writes the plan as JSON to the file $RUNNER_PLAN_FILE names (docs/agents.md); try it by hand, or give another with --agent-command",
                std::iter::once(&self.agent.program)
                    .chain(&choice.args)
                    .map(crate::sh)
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            preset => format!(
                "the {} agent ran and wrote no plan: what it printed says why (a login, a usage limit, a refusal); check that `{}` works on its own, or choose another agent with --agent or --agent-command",
                preset.name(),
                self.agent.program
            ),
        };
        let said = cli_failure
            .map(|f| format!("\nThe agent's CLI said: {f}"))
            .unwrap_or_default();
        RunnerError::NeedsHuman(format!(
            "the planner wrote no plan{when} (it was to write {}).{said}\n{}{earlier}",
            crate::plan::draft_path(&self.worktree).display(),
            self.planner_output(session_id, "")
        ))
        .with_hint(hint)
        .into()
    }

    /// The error of a planner that produced no valid plan in `max` attempts: its last
    /// `errors`, where its output is, and what the user can do.
    fn planner_gave_up(&self, max: u32, errors: &[String]) -> anyhow::Error {
        // Where the planner's last output is: an invalid plan it wrote straight into the spec
        // folder stays there (and stops the next run until it is fixed or removed); drafts
        // were set aside.
        let plan_path = self.paths.plan.path();
        let (kept, hint) = if plan_path.exists() {
            (
                format!("Its last plan is {} (left as it is)", plan_path.display()),
                "fix that plan by hand, or delete it to plan again".to_string(),
            )
        } else {
            (
                format!(
                    "Plans it wrote are kept in {} (plan-draft.json.rejected-*)",
                    self.paths.dir.display()
                ),
                format!(
                    "fix a plan by hand and save it as {}, or run again to plan again",
                    plan_path.display()
                ),
            )
        };
        RunnerError::NeedsHuman(format!(
            "the planner did not produce a valid plan in {}. Last problems:\n{}\n{kept}; logs are in {}",
            crate::text::count(max, "attempt"),
            errors.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"),
            self.paths.sessions_dir.display()
        ))
        .with_hint(hint)
        .into()
    }

    /// What is wrong with the plan the planner left (nothing once it is installed as the
    /// spec's plan): its draft in the worktree, else a plan written straight into the spec
    /// folder; when there is a problem, what its CLI said last is added to it.
    fn read_planner_output(
        &self,
        draft: &Path,
        report: &SessionFacts,
    ) -> anyhow::Result<PlannerOutput> {
        let mut wrote_nothing = false;
        let mut errors = match self.install_draft(draft)? {
            Some(problems) => problems,
            // No draft: a plan written straight into the spec folder (an agent of
            // `--agent-command` that knows the Auto-Claude layout) is taken as before.
            None => match self.paths.plan.load() {
                Ok(Some(plan)) => check_planner_output(&plan),
                Ok(None) => {
                    wrote_nothing = true;
                    vec![format!("the planner did not write {}", draft.display())]
                }
                Err(e) => match e.downcast::<PlanError>() {
                    Ok(pe) => plan_error_lines(&pe),
                    Err(other) => return Err(other),
                },
            },
        };
        if !errors.is_empty()
            && let Some(said) = report.said()
        {
            errors.push(format!("the agent's CLI said: {said}"));
        }
        Ok(PlannerOutput {
            problems: errors,
            wrote_nothing,
        })
    }

    /// Make the draft's folder in the worktree (a real folder: a link there, from the base
    /// branch or an agent, is refused) and set aside a draft left by an earlier run.
    fn prepare_draft(&self, draft: &Path) -> anyhow::Result<()> {
        let dir = draft.parent().unwrap_or(&self.worktree);
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(RunnerError::NeedsHuman(format!(
                    "{} is not a folder (a link or a file, perhaps from the base branch); the planner writes its plan there",
                    dir.display()
                ))
                .with_hint("remove it from the worktree (and the base branch), then run again")
                .into());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
        }
        self.set_aside_draft(draft, "left").map(drop)
    }

    /// Move a draft (if any) out of the worktree into the spec folder, under a name that says
    /// why and when: nothing the planner wrote is lost, and nothing stale is read as its plan.
    fn set_aside_draft(&self, draft: &Path, why: &str) -> anyhow::Result<Option<PathBuf>> {
        if std::fs::symlink_metadata(draft).is_err() {
            return Ok(None);
        }
        let aside = crate::store::unused_path(
            &self
                .paths
                .dir
                .join(format!("plan-draft.json.{why}-{}", crate::clock::stamp())),
        );
        crate::store::safe::rename(draft, &aside)
            .with_context(|| format!("moving {} to {}", draft.display(), aside.display()))?;
        Ok(Some(aside))
    }

    /// The planner's draft, if it wrote one: `Some([])` once a valid plan is installed as the
    /// spec's plan (durably, under the plan lock) and the draft removed; `Some(problems)` for a
    /// draft that is not a usable plan (set aside into the spec folder, named in the
    /// problems); `None` when there is no draft. A link at the draft's name is not followed.
    fn install_draft(&self, draft: &Path) -> anyhow::Result<Option<Vec<String>>> {
        let meta = match std::fs::symlink_metadata(draft) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", draft.display())),
        };
        // The planner's tools are gone (its session ended, its leftovers were killed): what
        // is checked here stays so until it is read.
        let folder = draft.parent().unwrap_or(&self.worktree);
        if !std::fs::symlink_metadata(folder).is_ok_and(|m| m.is_dir()) {
            return Ok(Some(vec![format!(
                "{} is no longer a folder (a link, perhaps): runner does not read a plan through it",
                folder.display()
            )]));
        }
        let parsed = if meta.is_file() {
            let bytes = match read_draft(draft)? {
                Some(bytes) => bytes,
                None => {
                    let problem = format!(
                        "{} is larger than {} MiB: not a plan runner reads",
                        draft.display(),
                        MAX_DRAFT_BYTES >> 20
                    );
                    return self.reject_draft(draft, vec![problem]).map(Some);
                }
            };
            crate::plan::parse_plan(draft, &bytes)
                .map_err(|e| plan_error_lines(&e))
                .and_then(|plan| {
                    let problems = check_planner_output(&plan);
                    if problems.is_empty() {
                        Ok(plan)
                    } else {
                        Err(problems)
                    }
                })
        } else {
            Err(vec![format!(
                "{} is not a regular file (a link, a folder or a special file)",
                draft.display()
            )])
        };
        match parsed {
            Ok(plan) => {
                self.paths.plan.replace(&plan)?;
                crate::store::safe::remove(draft)
                    .with_context(|| format!("removing {}", draft.display()))?;
                Ok(Some(Vec::new()))
            }
            Err(problems) => self.reject_draft(draft, problems).map(Some),
        }
    }

    /// A draft that is not a usable plan, set aside into the spec folder (named in the
    /// problems).
    fn reject_draft(&self, draft: &Path, mut problems: Vec<String>) -> anyhow::Result<Vec<String>> {
        if let Some(aside) = self.set_aside_draft(draft, "rejected")? {
            problems.push(format!("the rejected plan is kept as {}", aside.display()));
        }
        Ok(problems)
    }

    /// The planner wrote a valid plan: pin the base in it and journal it.
    fn accept_plan(&self, session_id: &str) -> anyhow::Result<()> {
        let base = self.base.clone();
        let plan = self.paths.plan.update(|plan| {
            if plan.str_field("base_branch").is_none() {
                plan.set_field("base_branch", Value::String(base));
            }
            Ok(plan.clone())
        })?;
        crate::failpoint::hit("after_plan_accepted");
        self.journal.write(&Event::PlanAccepted(ev::PlanAccepted {
            session_id: session_id.to_string(),
            phases: plan.phases.len(),
            chunks: plan.total(),
        }))?;
        self.journal.write(&Event::PlanSnapshot(ev::PlanSnapshot {
            plan: plan.to_value(),
        }))?;
        self.reporter.line(format!(
            "Plan ready: {}, {}.",
            crate::text::count(plan.phases.len(), "phase"),
            crate::text::count(plan.total(), "chunk")
        ));
        Ok(())
    }

    /// A planner cut off mid-write may leave half a plan. Keep it (renamed, never overwritten)
    /// so that the next run plans again instead of stopping on an invalid file.
    pub(super) fn set_aside_partial_plan(&self) -> anyhow::Result<()> {
        let path = self.paths.plan.path();
        if !path.exists() || self.paths.plan.load().is_ok() {
            return Ok(());
        }
        let aside = crate::store::unused_path(&path.with_file_name(format!(
            "{}.interrupted-{}",
            crate::plan::PLAN_FILE,
            crate::clock::stamp()
        )));
        crate::store::safe::rename(path, &aside)
            .with_context(|| format!("moving {} aside", path.display()))?;
        self.reporter.line(format!(
            "The interrupted planner left an incomplete plan; it is kept as {}.",
            aside.display()
        ));
        self.journal.write(&Event::PlanSetAside(ev::PlanSetAside {
            path: aside,
            why: "planner interrupted".into(),
        }))?;
        Ok(())
    }
}
