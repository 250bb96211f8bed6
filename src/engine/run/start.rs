//! Starting a run, step by step: resolve what it works on (spec, agent) before anything is
//! written, take its locks, put right what an earlier run or command left interrupted, choose
//! the base; then (after the operation has settled any existing work) prepare the slot, drive
//! the plan and say how it ended.

use crate::policy::outcome::RunOutcome;
use std::rc::Rc;

use super::*;
use crate::agent::AgentSetup;
use crate::engine::progress::ProgressSink;
use crate::policy::agent_choice::{AgentChoice, Remembered};
use crate::store::agent_memory::{self, Recall};
use crate::store::event::{self as ev, Event};
use crate::store::{FileLock, Holder};

/// A run that has its locks, was recovered, and knows its base: what `ops::run` looks at
/// before the run goes ahead ([`Prepared::execute`]).
pub struct Prepared<'a> {
    ws: &'a Workspace,
    config: Config,
    paths: SpecPaths,
    agent: AgentSetup,
    /// What the spec will remember of its agent once the run goes ahead.
    memory: Remembered,
    opts: RunOptions,
    interrupt: Interrupt,
    reporter: Reporter,
    locks: Locks,
    journal: Journal,
    person: Option<person::Listener>,
    /// The plan as it was before the run (none: the planner writes one).
    existing: Option<Plan>,
    base: String,
    base_tip: crate::git::Oid,
    /// The pin a confirmed re-pin replaces: written once the run goes ahead
    /// ([`Prepared::write_repin`]), put back if it does not after all.
    repinned_from: Option<String>,
    /// Whether that re-pin is written to the plan yet.
    repin_written: std::cell::Cell<bool>,
    /// The run's record (written from the moment it holds its locks) and its checkpoints.
    keeper: keep::Keeper,
    notifier: notify::Notifier,
}

/// What the run will work on, resolved before anything is written.
struct Resolved<'a> {
    ws: &'a Workspace,
    config: Config,
    paths: SpecPaths,
    agent: AgentSetup,
    memory: Remembered,
}

/// The run's locks and who it says it is in them.
struct Locks {
    run_id: String,
    holder: Holder,
    spec: FileLock,
    slot: Slot,
    slot_lock: FileLock,
}

/// Everything up to the question about existing work: resolve, lock, recover, choose the base
/// (a re-pin is confirmed through `asker`).
pub async fn prepare<'a>(
    ws: &'a Workspace,
    cwd: &Path,
    opts: &RunOptions,
    progress: Rc<dyn ProgressSink>,
    asker: &dyn Asker,
) -> anyhow::Result<Prepared<'a>> {
    let interrupt = Interrupt::install()?;
    let Resolved {
        ws,
        config,
        paths,
        agent,
        memory,
    } = resolve(ws, cwd, opts)?;
    ws.main.ensure_excluded()?;
    let reporter = Reporter::new(progress);
    let locks = take_locks(ws, &paths, opts, &reporter)?;
    let journal = Journal::new(&paths.dir, &locks.run_id);
    // Before the run's own record is written: it would read as an interrupted run.
    let notifier = notify::Notifier::new(
        &config,
        &ws.root,
        &paths,
        &locks.run_id,
        opts,
        (&reporter, &interrupt),
    );
    let keeper = keep::Keeper::start(
        &paths,
        &locks.run_id,
        &locks.slot.name,
        agent.choice.preset.name(),
        opts.resumed_from.as_deref(),
    );
    let steps = async {
        let person = person::listen(&paths)?;
        // Every process the agents start stays our descendant, even after `setsid` (see
        // `agent::ancestry`).
        crate::agent::ancestry::become_subreaper();
        let recovered =
            recover_first(ws, &config, &paths, &agent, &journal, &interrupt, &reporter).await?;
        let existing = runnable_plan(&paths)?;
        if recovered && let Some(plan) = &existing {
            let tip = ws.main.branch_tip(&branch_for(&paths.name));
            keeper.checkpoint(
                crate::store::checkpoint::Trigger::Recovered,
                keep::PlanFacts::of(plan),
                None,
                tip.map(|t| t.to_string()),
                plan.str_field("base_branch"),
            );
        }
        let (base, repinned_from) = choose_base(ws, &config, &paths, &existing, opts, asker)?;
        let base_tip = base_tip(ws, &paths, &existing, &base)?;
        anyhow::Ok((person, existing, base, repinned_from, base_tip))
    };
    let (person, existing, base, repinned_from, base_tip) = match steps.await {
        Ok(steps) => steps,
        Err(e) => {
            keeper.track.end(&crate::engine::track::error_word(&e));
            let failed = Err(e);
            notifier.ended(&failed, RunOutcome::Error).await;
            return failed;
        }
    };
    Ok(Prepared {
        ws,
        config,
        paths,
        agent,
        memory,
        opts: opts.clone(),
        interrupt,
        reporter,
        locks,
        journal,
        person,
        existing,
        base,
        base_tip,
        repinned_from,
        repin_written: std::cell::Cell::new(false),
        keeper,
        notifier,
    })
}

/// The spec, its feature text and the agent: a spec.md that cannot be read, or no agent,
/// stops the run here, before anything is changed.
fn resolve<'a>(ws: &'a Workspace, cwd: &Path, opts: &RunOptions) -> anyhow::Result<Resolved<'a>> {
    let mut config = ws.config()?;
    if opts.max_usd.is_some() {
        config.budget.max_usd = opts.max_usd;
    }
    // The front end asked already where it could; here an open choice is an error (exit 2).
    let spec_name = crate::store::spec::choose_or_explain(ws, cwd, opts.spec.as_deref(), &|n| {
        crate::policy::next_command::continue_command(n, opts.agent_flag().as_ref())
    })?;
    let paths = ws.spec(&spec_name)?;
    // Every session is given the feature.
    crate::store::spec::read_text(&paths.spec_md)?;
    let config_agent = config.agent.choice();
    let flag = agent_flag(opts, &config)?;
    let remembered = match agent_memory::recall(&ws.state_dir, &spec_name) {
        Recall::Nothing => None,
        Recall::Agent(r) => Some(r),
        Recall::Unusable(why) => {
            crate::output::warn(&format!(
                "the agent spec {spec_name} last ran with is not used ({why}); the config or the flags decide"
            ));
            None
        }
    };
    // What `main` prints if this run is interrupted: the exact command that resumes it.
    hints::set_resume_command(crate::policy::next_command::continue_command(
        &spec_name,
        opts.agent_flag().as_ref(),
    ));
    let chosen = policy::agent_choice::choose_agent(flag, config_agent.clone(), remembered)
        .ok_or_else(crate::agent::preset::no_agent)?;
    let agent = AgentSetup::resolve(
        chosen,
        &ws.root,
        crate::agent::preset::agent_path().as_deref(),
    )?;
    let memory = Remembered {
        agent: agent.choice.clone(),
        config: config_agent,
    };
    Ok(Resolved {
        ws,
        config,
        paths,
        agent,
        memory,
    })
}

/// The agent the flags name: `--agent-command` is the `command` preset; `--agent NAME` that
/// preset as the config would run it.
fn agent_flag(opts: &RunOptions, config: &Config) -> anyhow::Result<Option<AgentChoice>> {
    if let Some(text) = &opts.agent_command {
        let argv = parse_agent_command(text)?;
        return Ok(Some(AgentChoice::command(&argv, config.agent.permission)));
    }
    let Some(name) = &opts.agent else {
        return Ok(None);
    };
    let preset = crate::config::parse_preset(name).map_err(|_| {
        RunnerError::bad_input(format!(
            "--agent {name:?} is not known; it is one of {}",
            crate::policy::invocation::Preset::names()
        ))
    })?;
    Ok(Some(config.agent.choice_of(preset)))
}

/// The spec's run lock, then its slot's. A merge, discard or undo of this spec cut off by a
/// crash is finished or rolled back in between: its slot and branch are in its hands until
/// then.
fn take_locks(
    ws: &Workspace,
    paths: &SpecPaths,
    opts: &RunOptions,
    reporter: &Reporter,
) -> anyhow::Result<Locks> {
    let spec_name = &paths.name;
    let run_id = match &opts.run_id {
        Some(id) => given_run_id(paths, id)?,
        None => crate::store::ids::run_id(),
    };
    let holder = new_holder(&run_id, Some(spec_name));
    let spec = guard::take(&paths.run_lock, &holder, Patience::Moment, || {
        format!("spec {spec_name} is being run by another runner")
    })?;
    if opts.run_id.is_some() && crate::store::runs::path(&paths.dir, &run_id).exists() {
        return Err(RunnerError::bad_input(format!(
            "--run-id {run_id}: spec {spec_name} already has a run of that id"
        ))
        .into());
    }
    if let Some(done) = crate::engine::lifecycle::intent::finish_interrupted(
        ws,
        paths,
        &Journal::new(&paths.dir, &run_id),
        false,
    )? {
        reporter.notice(format!("runner: {spec_name}: {done}"));
    }
    // Without --slot, a spec already checked out in a slot builds there.
    let slot = match opts.slot.as_deref() {
        Some(name) => Slot::new(&ws.root, Some(name)),
        None => slot_holding(&ws.main, &branch_for(spec_name))
            .unwrap_or_else(|| Slot::new(&ws.root, None)),
    };
    let slot_lock = guard::take(&ws.slot_lock(&slot.name), &holder, Patience::Moment, || {
        format!(
            "the worktree slot {} is in use by another runner",
            slot.path.display()
        )
    })?;
    Ok(Locks {
        run_id,
        holder,
        spec,
        slot,
        slot_lock,
    })
}

/// `--run-id`: a run id (`r` and 12 lowercase hex digits), else bad input.
fn given_run_id(paths: &SpecPaths, id: &str) -> anyhow::Result<String> {
    if !crate::store::ids::is_run_id(id) {
        return Err(RunnerError::bad_input(format!(
            "--run-id {id:?} is not a run id (r and 12 lowercase hex digits); spec {} was not run",
            paths.name
        ))
        .into());
    }
    Ok(id.to_string())
}

/// May the recovery evaluator (an agent session) start: budget left, and no usage limit's
/// pause in force.
fn evaluator_may_run(ws: &Workspace, config: &Config, paths: &SpecPaths) -> bool {
    let limits = config.budget.budget();
    if limits.is_set() {
        let spent = crate::store::ledger::total(&super::budget::ledger_now(paths));
        if let crate::policy::budget::Allowance::Spent(_) =
            crate::policy::budget::allowance(&limits, &spent)
        {
            return false;
        }
    }
    let now = chrono::Utc::now();
    !matches!(
        crate::store::pause::read(&ws.state_dir, &paths.name, now),
        crate::store::pause::Found::Paused(p) if p.until > now
    )
}

/// Put right whatever an earlier run left interrupted, before anything else. Says whether
/// recovery changed anything.
async fn recover_first(
    ws: &Workspace,
    config: &Config,
    paths: &SpecPaths,
    agent: &AgentSetup,
    journal: &Journal,
    interrupt: &Interrupt,
    reporter: &Reporter,
) -> anyhow::Result<bool> {
    let mut recover_opts = recover_options(ws, config, Some(agent), false, false);
    recover_opts.interrupt = interrupt.clone();
    // The evaluator is an agent session too: none once the spec's budget is spent (the
    // ledger has no place for it and claude would get no dollar limit), nor while a usage
    // limit pauses the spec (the agent would only say so). The rules decide then.
    if recover_opts.evaluator.is_some() && !evaluator_may_run(ws, config, paths) {
        recover_opts.evaluator = None;
    }
    if let Some(evaluator) = recover_opts.evaluator.as_mut() {
        // The evaluator's session shows live as the run's own sessions do.
        evaluator.live = Some(reporter.clone());
    }
    let recovery = crate::engine::recovery::recover_spec(ws, paths, journal, &recover_opts).await?;
    if interrupt.is_set() {
        return Err(RunnerError::Interrupted.into());
    }
    for action in &recovery.actions {
        reporter.notice(format!("Recovered {}: {}", paths.name, action.line()));
    }
    if recovery.needs_human() {
        return Err(RunnerError::NeedsHuman(format!(
            "recovery of {} found state that needs a person:\n{}",
            paths.name,
            recovery
                .actions
                .iter()
                .filter(|a| a.decision == Some(crate::engine::recovery::Decision::HumanReview))
                .map(|a| format!("  - {}", a.line()))
                .collect::<Vec<_>>()
                .join("\n"),
        ))
        .with_hint(format!(
            "look at the worktree and the journal {}; when it is sorted out, set the chunk back to \"pending\" in {} (or run `runner recover --spec {}` again)",
            journal.path().display(),
            paths.plan.path().display(),
            crate::sh(&paths.name)
        ))
        .into());
    }
    Ok(!recovery.actions.is_empty())
}

/// The plan as it is, if there is one. A plan with nothing to do is not "complete 0/0": it is
/// what the planner is sent back for.
fn runnable_plan(paths: &SpecPaths) -> anyhow::Result<Option<Plan>> {
    let existing = paths.plan.load()?;
    if let Some(problems) = existing.as_ref().map(check_planner_output)
        && !problems.is_empty()
    {
        return Err(RunnerError::bad_input(format!(
            "the plan {} cannot be run ({})",
            paths.plan.path().display(),
            problems.join("; ")
        ))
        .with_hint(crate::plan::PlanError::ADVICE)
        .into());
    }
    Ok(existing)
}

impl Prepared<'_> {
    pub fn workspace(&self) -> &Workspace {
        self.ws
    }

    pub fn paths(&self) -> &SpecPaths {
        &self.paths
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    pub fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// The run does not go ahead (a question was cancelled or refused): "nothing was changed"
    /// must hold, so a re-pin made for it is undone.
    pub fn undo_repin(&self) -> anyhow::Result<()> {
        match &self.repinned_from {
            Some(from) if self.repin_written.get() => {
                undo_repin(&self.paths, &self.journal, from, &self.base)?;
                self.repin_written.set(false);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The run goes ahead (every question is answered): pin the confirmed new base, once.
    pub fn write_repin(&self) -> anyhow::Result<()> {
        match &self.repinned_from {
            Some(from) if !self.repin_written.get() => {
                write_repin(&self.paths, &self.journal, from, &self.base)?;
                self.repin_written.set(true);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The run does not go ahead after all (a question was cancelled or refused, `e`): its
    /// record says so.
    pub fn abandon(&self, e: &anyhow::Error) {
        self.keeper.track.end(&crate::engine::track::error_word(e));
    }

    /// The person chose to throw the existing work away and start afresh: it resumes nothing.
    pub fn started_afresh(&mut self) {
        self.notifier.forget_interrupted();
    }

    /// The existing work was merged instead of built on: the run ends here.
    pub async fn merged(self) -> anyhow::Result<RunReport> {
        self.keeper.track.end("merged");
        (self.notifier)
            .ended_as(RunOutcome::Merged, crate::error::exit::OK, None)
            .await;
        let plan = self.paths.plan.load()?.unwrap_or_else(empty_plan);
        Ok(RunReport {
            spec: self.paths.name.clone(),
            outcome: RunOutcome::Merged,
            branch: branch_for(&self.paths.name),
            worktree: self.locks.slot.path.clone(),
            base_branch: self.base,
            completed: plan.count(Status::Completed),
            total: plan.total(),
            sessions: 0,
            run_id: self.locks.run_id,
        })
    }

    /// Prepare the slot, drive the plan to its end, and say how it ended.
    pub async fn execute(self) -> anyhow::Result<RunReport> {
        if let Err(e) = prepare_slot(
            self.ws,
            &self.locks.slot,
            &self.paths.name,
            self.base_tip,
            &self.journal,
            &self.reporter,
            self.opts.agent_flag().as_ref(),
        )
        .await
        {
            self.keeper.track.end(&crate::engine::track::error_word(&e));
            let failed = Err(e);
            self.notifier.ended(&failed, RunOutcome::Error).await;
            return failed;
        }
        crate::failpoint::hit("after_prepare_slot");
        self.notifier.resuming().await;
        // The run goes ahead: the spec remembers its agent for the next `runner run`.
        if let Err(e) = agent_memory::remember(&self.ws.state_dir, &self.paths.name, &self.memory) {
            self.reporter.notice(format!(
                "runner: the agent of {} could not be remembered ({e}); the next run uses the config",
                self.paths.name
            ));
        }
        let Locks {
            run_id,
            holder,
            spec: spec_lock,
            slot,
            slot_lock,
        } = self.locks;
        let locks = Arc::new(vec![spec_lock, slot_lock]);
        let track = self.keeper.track.clone();
        let heartbeat = tokio::spawn(guard::heartbeat_then(locks.clone(), holder, move || {
            track.beat()
        }));
        // Sessions the last shutdown cut off run again first. The entries are removed now,
        // before they run, so that a crash during the re-run never loops.
        let ws = self.ws;
        let resume = crate::engine::recovery::interrupted::take(&ws.state_dir, &self.paths.name)?;
        let drain = self
            .opts
            .drain_timeout
            .map(Duration::from_secs)
            .unwrap_or_else(|| self.config.run.drain_timeout());
        self.interrupt.set_drain(drain);
        let ledger_floor = crate::store::ledger::total(&budget::ledger_now(&self.paths));
        let wait = self.opts.wait || self.config.run.wait_for_limits;
        let prompts =
            Prompts::new(&ws.templates_dir()).with_reports(self.agent.choice.preset.can_report());
        let mut run = Run {
            ledger_floor,
            prompts,
            repo_root: ws.root.clone(),
            common_dir: ws.main.common_dir().to_path_buf(),
            worktree: slot.path.clone(),
            state_dir: ws.state_dir.clone(),
            paths: self.paths,
            config: self.config,
            agent: self.agent,
            agent_flag: self.opts.agent_flag(),
            run_id,
            journal: self.journal,
            base: self.base,
            reporter: self.reporter,
            interrupt: self.interrupt,
            sessions: 0,
            drain,
            resume,
            next_session: None,
            person: self.person,
            history: Default::default(),
            progress: Default::default(),
            wait,
            waited: Duration::ZERO,
            limited: None,
            keeper: self.keeper,
            stager: std::sync::Mutex::new(crate::git::Stager::new(&slot.path)),
            plan_only: self.opts.plan_only,
        };
        run.checkpoint(
            crate::store::checkpoint::Trigger::RunStart,
            self.existing.as_ref().map(keep::PlanFacts::of),
            None,
        );
        run.journal_start(&slot, &self.existing, self.opts.auto_continue)?;
        let result = run.drive(ws).await;
        heartbeat.abort();
        run.end(result, locks, self.notifier).await
    }
}

impl Run {
    fn journal_start(
        &self,
        slot: &Slot,
        existing: &Option<Plan>,
        auto_continue: bool,
    ) -> anyhow::Result<()> {
        self.journal.write(&Event::RunStart(ev::RunStart {
            spec: self.paths.name.clone(),
            pid: std::process::id(),
            slot: slot.name.clone(),
            base_branch: self.base.clone(),
            auto_continue,
        }))?;
        if let Some(plan) = existing {
            self.journal.write(&Event::PlanSnapshot(ev::PlanSnapshot {
                plan: plan.to_value(),
            }))?;
        }
        Ok(())
    }
}

/// The agent a run of `spec` with `opts` would use, chosen as `resolve` chooses it (none: no
/// agent, or a flag or config the run would refuse). For `run --jobs`, which tells the specs
/// of one agent account apart before their runs start.
pub fn agent_for(ws: &Workspace, spec: &str, opts: &RunOptions) -> Option<AgentChoice> {
    let config = ws.config().ok()?;
    let flag = agent_flag(opts, &config).ok()?;
    let remembered = match agent_memory::recall(&ws.state_dir, spec) {
        Recall::Agent(r) => Some(r),
        _ => None,
    };
    policy::agent_choice::choose_agent(flag, config.agent.choice(), remembered)
}
