//! `runner status`: every spec, its progress, its branch and worktree, who is running it.

use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::recovery::quiet::on_every_core;
use crate::error::RunnerError;
use crate::git::{Slot, SlotState, branch_for};
use crate::plan::summary::Digest;
use crate::plan::{Plan, Status, next_chunk_id};
use crate::store::status_cache::{Entry, StatusCache};
use crate::store::workspace::{SpecPaths, Workspace};
use crate::store::{LockState, lock};

#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusReport {
    pub specs: Vec<SpecStatus>,
    pub slots: Vec<SlotStatus>,
    /// How many merged or discarded specs were left out (`all` shows them).
    pub hidden: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SpecStatus {
    pub spec: String,
    /// not_planned, planning, invalid_plan, planned, running, in_progress, interrupted (the
    /// last run did not end: Ctrl-C, a closed terminal, kill -9, a crash), failed, blocked,
    /// budget_exhausted (the last run stopped: the spec's budget is spent), complete, merged,
    /// discarded (its build was thrown away, nothing ran since), refused (its folder links
    /// outside the repository), missing_work (the branch lost a completed chunk's commit),
    /// paused (a usage limit)
    pub status: String,
    /// The command that continues the spec (`runner run --spec S --auto-continue`) when a run
    /// would go on with it now or after its pause: not_planned, planned, in_progress,
    /// interrupted, paused; else null.
    pub continue_command: Option<String>,
    pub branch: Option<String>,
    pub worktree: Option<String>,
    pub chunks: Counts,
    /// The chunk being worked on (`status` running) or left interrupted: the first one in
    /// progress.
    pub current_chunk: Option<String>,
    /// The first pending chunk a run would take after it.
    pub next_chunk: Option<String>,
    pub running: Option<Running>,
    /// Until when a usage limit pauses the spec (RFC 3339, UTC); null when it is not paused.
    pub paused_until: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What runner read in the plan but Auto-Claude would not have written so (see
    /// `Plan::warnings`); empty for most plans.
    pub warnings: Vec<String>,
    /// What is wrong with the branch: completed work it no longer holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The cost ledger summed: the attempt records and the planner's (`store::ledger`).
    pub spent: SpentStatus,
    /// `[budget]` of the config (null: no limit).
    pub budget: BudgetStatus,
}

/// What a spec's sessions cost; `usd` counts the dollars the agents reported (notional for a
/// subscription login) or runner computed, 0 when none did.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct SpentStatus {
    pub usd: f64,
    pub tokens: u64,
    pub sessions: u64,
}

#[derive(Debug, Default, Clone, Copy, Serialize, JsonSchema)]
pub struct BudgetStatus {
    pub max_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Counts {
    pub total: usize,
    pub completed: usize,
    pub pending: usize,
    pub in_progress: usize,
    pub failed: usize,
    pub blocked: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Running {
    pub pid: Option<u32>,
    pub run_id: Option<String>,
    pub since: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SlotStatus {
    pub name: String,
    pub path: String,
    /// missing, ready, broken, unregistered
    pub state: String,
    pub branch: Option<String>,
    pub spec: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Every spec's state (or only the spec `only`), and every slot's. The slots are inspected
/// once; each spec's lock probe and plan read (from the status cache when the plan is the one
/// it recorded, else the light read of `plan::summary`, the full parser for a plan it is not
/// sure of) run on every core, the git questions after, in order. The cache is written back
/// when an entry changed (best effort: see `store::status_cache`).
#[derive(Debug, Clone, Default)]
pub struct StatusOptions {
    /// Only this spec (never asked: several matches are an error listing each); none: the
    /// spec of the slot the command runs in (or the only one), else every spec.
    pub spec: Option<String>,
    /// Merged and discarded specs too (left out of the list of every spec by default).
    pub all: bool,
}

/// `runner status`.
pub fn status(ctx: &super::Ctx, opts: StatusOptions) -> anyhow::Result<StatusReport> {
    let only = match &opts.spec {
        Some(q) => Some(ctx.spec_named(q)?),
        None => match crate::store::spec::choose(&ctx.ws, &ctx.cwd, None)? {
            crate::policy::spec_choice::SpecChoice::One(name) => Some(name),
            _ => None,
        },
    };
    // Shown whatever its state: a spec named, or the one of the slot the command runs in (not
    // merely the only spec there is).
    let asked_for = match (&opts.spec, &only) {
        (Some(_), _) => true,
        (None, Some(_)) => crate::store::spec::slot_spec(&ctx.ws, &ctx.cwd).is_some(),
        (None, None) => false,
    };
    let mut report = status_of(&ctx.ws, only.as_deref())?;
    if !asked_for && !opts.all {
        hide_finished(&mut report);
    }
    Ok(report)
}

/// Leave merged and discarded specs out of the report, counting them in `hidden`: what a list
/// of every spec shows by default (`status`, `watch`).
pub fn hide_finished(report: &mut StatusReport) {
    let before = report.specs.len();
    report
        .specs
        .retain(|s| !crate::policy::last_run::is_finished(&s.status));
    report.hidden += before - report.specs.len();
}

/// Whether spec `name` is merged or discarded, read as `status` reads it (for a picker's list:
/// a plan that cannot be read is not finished).
pub fn is_finished(ws: &Workspace, name: &str) -> bool {
    let Ok(paths) = ws.spec(name) else {
        return false;
    };
    let merged = matches!(paths.plan.load(), Ok(Some(plan)) if plan.raw.contains_key("merged"));
    merged
        || crate::store::runs::last_run(&paths.dir) == crate::policy::last_run::LastRun::Discarded
}

/// The status of every spec (or only `only`), and of every slot.
pub fn status_of(ws: &Workspace, only: Option<&str>) -> anyhow::Result<StatusReport> {
    let names: Vec<String> = crate::store::spec::list(&ws.specs_dir)
        .into_iter()
        .filter(|name| only.is_none_or(|o| o == name))
        .collect();
    let slots: Vec<(Slot, SlotState)> = Slot::all(&ws.main)
        .into_iter()
        .map(|slot| {
            let state = slot.inspect(&ws.main);
            (slot, state)
        })
        .collect();
    let cache = StatusCache::load(&ws.state_dir);
    // Every branch tip at once (a lookup per spec costs a probe of the ref files each).
    let tips = ws.main.branch_tips("auto-claude/");
    let (specs, entries) = judge(ws, names, &slots, tips.as_ref(), &cache)?;
    let slots = slots.into_iter().map(slot_status).collect();
    cache.save(&ws.state_dir, entries, only.is_none());
    Ok(StatusReport {
        specs,
        slots,
        hidden: 0,
    })
}

/// The status lines of the specs `names`, exactly as `status` judges them (the one rule), for
/// callers that need only some specs (`ops::detect`): their `worktree` is not looked up (none),
/// the branch tips are asked one by one, and the status cache (`StatusCache::load`, loaded
/// once by the caller) is read, not written.
pub fn specs(
    ws: &Workspace,
    names: Vec<String>,
    cache: &StatusCache,
) -> anyhow::Result<Vec<SpecStatus>> {
    Ok(judge(ws, names, &[], None, cache)?.0)
}

/// Each spec of `names` judged: its lock probe and plan read on every core, the git questions
/// after, in order (`tips`: every branch tip read at once, else asked per spec); with the
/// status cache's entry found for each.
#[allow(clippy::type_complexity)]
fn judge(
    ws: &Workspace,
    names: Vec<String>,
    slots: &[(Slot, SlotState)],
    tips: Option<&std::collections::HashMap<String, crate::git::Oid>>,
    cache: &StatusCache,
) -> anyhow::Result<(Vec<SpecStatus>, Vec<(String, Option<Entry>)>)> {
    // Opened and looked at on every core (a `Workspace` is not shared between threads: its
    // folders are).
    let (root, specs_dir) = (ws.root.as_path(), ws.specs_dir.as_path());
    let opened = on_every_core(&names, |name| {
        let paths = crate::store::workspace::spec_paths(root, specs_dir, name);
        let looked = paths.as_ref().ok().map(|p| look(p, cache)).transpose();
        (paths, looked)
    });
    let budget = crate::config::load_quietly(&ws.config_files()).budget;
    let budget = BudgetStatus {
        max_usd: budget.max_usd,
        max_tokens: budget.max_tokens,
    };
    let mut specs = Vec::with_capacity(opened.len());
    let mut entries = Vec::with_capacity(opened.len());
    for (name, (paths, looked)) in names.into_iter().zip(opened) {
        let looked = match (&paths, looked) {
            (Ok(_), Ok(Some(looked))) => Ok(looked),
            // (Every opened spec was looked at.)
            (Ok(paths), Ok(None)) => look(paths, cache),
            (_, Err(e)) => Err(e),
            (Err(_), Ok(_)) => Ok(Looked::default()),
        };
        let (paths, mut looked) = match (paths, looked) {
            (Ok(paths), Ok(looked)) => (paths, looked),
            // A spec folder linked outside the repository: listed, never opened.
            (Err(e), _) => {
                entries.push((name.clone(), None));
                specs.push(refused(name, e));
                continue;
            }
            // Its lock file cannot be looked at (a folder or a FIFO in its place): that spec
            // is listed as refused, with what to do; the others are shown.
            (Ok(paths), Err(e)) => {
                entries.push((name.clone(), None));
                specs.push(refused(name, unreadable_lock(&paths, e)));
                continue;
            }
        };
        entries.push((name.clone(), looked.entry.take()));
        let branch = branch_for(&name);
        let tip = match tips {
            Some(tips) => tips.get(&branch).copied(),
            None => ws.main.branch_tip(&branch),
        };
        let mut spec = spec_status(ws, slots, name, &paths, looked, tip.is_some());
        spec.budget = budget;
        specs.push(spec);
    }
    Ok((specs, entries))
}

/// What `status` reads of a spec without git: who holds its run lock, and what it shows of
/// its plan as the light read saw it (`None`: the full parser is to read it, on the caller's
/// thread), and the status cache's entry for it.
#[derive(Default)]
struct Looked {
    running: Option<Running>,
    shown: Option<Shown>,
    /// The planner's sessions (`store::ledger`).
    planner: crate::policy::budget::Spent,
    /// Where the spec's newest run records leave it (interrupted, discarded).
    last_run: crate::policy::last_run::LastRun,
    entry: Option<Entry>,
}

/// What `status` shows of a plan, worked out on the thread that read it. The plan itself is
/// kept only when the branch's history is to be checked against it (it has recorded work).
struct Shown {
    counts: Counts,
    current_chunk: Option<String>,
    next_chunk: Option<String>,
    warnings: Vec<String>,
    merged: bool,
    /// A run stopped because the budget was spent (the plan's mark).
    exhausted: bool,
    /// The attempt records' sessions and costs.
    spent: crate::policy::budget::Spent,
    with_recorded_work: Option<Plan>,
}

impl Shown {
    fn of(plan: &Plan) -> Shown {
        let items = crate::store::ledger::items(Some(plan), Default::default());
        Shown {
            exhausted: plan.raw.contains_key(crate::engine::run::EXHAUSTED_KEY),
            spent: crate::store::ledger::total(&items),
            counts: counts(plan),
            current_chunk: current_chunk(plan),
            next_chunk: next_chunk_id(plan).map(str::to_string),
            warnings: plan.warnings.clone(),
            merged: plan.raw.contains_key("merged"),
            with_recorded_work: None,
        }
    }

    /// What the light read (or the status cache) gave. A completed chunk has attempt records
    /// in the light read's plan exactly when it has a recorded commit, so `has_recorded_work`
    /// is "a recorded commit", and the history check reads those in `history_plan`.
    fn of_digest(d: Digest) -> Shown {
        Shown {
            counts: Counts {
                total: d.total(),
                completed: d.count(Status::Completed),
                pending: d.count(Status::Pending),
                in_progress: d.count(Status::InProgress),
                failed: d.count(Status::Failed),
                blocked: d.count(Status::Blocked),
            },
            with_recorded_work: (!d.recorded.is_empty()).then(|| d.history_plan()),
            current_chunk: d.current_chunk,
            next_chunk: d.next_chunk,
            warnings: d.warnings,
            merged: d.merged,
            exhausted: d.exhausted,
            spent: d.spent,
        }
    }
}

fn look(paths: &SpecPaths, cache: &StatusCache) -> std::io::Result<Looked> {
    let running = match lock::probe(&paths.run_lock)? {
        LockState::Free => None,
        LockState::Held(holder) => Some(Running {
            pid: holder.as_ref().map(|h| h.pid),
            run_id: holder.as_ref().map(|h| h.run_id.clone()),
            since: holder.map(|h| h.since),
        }),
    };
    let found = cache.find(&paths.name, &paths.plan);
    Ok(Looked {
        running,
        shown: found.digest.map(Shown::of_digest),
        planner: crate::store::ledger::planner(&paths.dir),
        last_run: crate::store::runs::last_run(&paths.dir),
        entry: found.entry,
    })
}

/// The spec's run lock could not be looked at: what is wrong and what to do.
fn unreadable_lock(paths: &SpecPaths, e: std::io::Error) -> RunnerError {
    RunnerError::bad_input(format!("cannot look at the spec's run lock: {e}")).with_hint(format!(
        "{} must be the file runner keeps there; move away what is there and runner makes it again",
        paths.run_lock.display()
    ))
}

fn refused(name: String, e: RunnerError) -> SpecStatus {
    SpecStatus {
        status: "refused".into(),
        continue_command: None,
        branch: None,
        worktree: None,
        chunks: Counts::default(),
        next_chunk: None,
        current_chunk: None,
        running: None,
        paused_until: None,
        error: Some(crate::error::ErrorReport::inline(&e.into())),
        warnings: Vec::new(),
        problem: None,
        spent: SpentStatus::default(),
        budget: BudgetStatus::default(),
        spec: name,
    }
}

/// One spec's line, from what was looked at and what git says (`has_branch`: the spec's
/// branch exists).
fn spec_status(
    ws: &Workspace,
    slots: &[(Slot, SlotState)],
    name: String,
    paths: &SpecPaths,
    looked: Looked,
    has_branch: bool,
) -> SpecStatus {
    let running = looked.running;
    let branch = branch_for(&name);
    // The first slot with the spec's branch checked out (`git::slot_holding`).
    let worktree = slots
        .iter()
        .find(|(_, state)| matches!(state, SlotState::Ready { branch: Some(b) } if *b == branch))
        .map(|(slot, _)| slot.path.display().to_string());
    let (shown, error) = match looked.shown {
        Some(shown) => (Some(shown), None),
        None => match paths.plan.load() {
            Ok(plan) => (
                plan.map(|plan| Shown {
                    with_recorded_work: has_recorded_work(&plan).then(|| plan.clone()),
                    ..Shown::of(&plan)
                }),
                None,
            ),
            Err(e) => (None, Some(crate::error::ErrorReport::inline(&e))),
        },
    };
    // One walk of the branch's history, only when it exists and there is recorded work.
    let problem = shown
        .as_ref()
        .and_then(|s| s.with_recorded_work.as_ref())
        .filter(|_| has_branch)
        .and_then(|p| crate::engine::integrity::missing_work(&ws.main, &name, p))
        .map(|b| b.describe(&branch));
    let mut state = spec_state(shown.as_ref(), error.is_some(), running.is_some());
    state = crate::policy::last_run::status_word(state, looked.last_run);
    if problem.is_some() && running.is_none() {
        state = "missing_work";
    }
    let paused_until = paused_until(ws, &name);
    if paused_until.is_some()
        && matches!(
            state,
            "not_planned" | "planned" | "in_progress" | "interrupted"
        )
    {
        state = "paused";
    }
    let Shown {
        counts,
        current_chunk,
        next_chunk,
        warnings,
        spent: mut ledger,
        ..
    } = shown.unwrap_or_else(Shown::none);
    ledger.add(&looked.planner);
    let continuable = matches!(
        state,
        "not_planned" | "planned" | "in_progress" | "interrupted" | "paused"
    );
    SpecStatus {
        continue_command: continuable
            .then(|| crate::policy::next_command::continue_command(&name, None)),
        spent: SpentStatus {
            usd: ledger.usd,
            tokens: ledger.tokens,
            sessions: ledger.sessions,
        },
        budget: BudgetStatus::default(),
        problem,
        status: state.into(),
        chunks: counts,
        current_chunk,
        next_chunk,
        branch: has_branch.then_some(branch),
        worktree,
        running,
        paused_until,
        error,
        warnings,
        spec: name,
    }
}

/// Until when a usage limit pauses `name` (one open of its pause file; a pause that is over
/// or not usable is none).
fn paused_until(ws: &Workspace, name: &str) -> Option<String> {
    let now = chrono::Utc::now();
    match crate::store::pause::read(&ws.state_dir, name, now) {
        crate::store::pause::Found::Paused(p) if p.until > now => {
            Some(p.until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        }
        _ => None,
    }
}

/// A completed chunk with attempt records: without one, no commit is recorded and the branch
/// cannot have lost work (`integrity::history_facts` finds nothing to look for).
fn has_recorded_work(plan: &Plan) -> bool {
    plan.chunks()
        .any(|c| c.status == Status::Completed && c.raw().contains_key("attempts"))
}

fn slot_status((slot, state): (Slot, SlotState)) -> SlotStatus {
    let (branch, problem) = match &state {
        SlotState::Ready { branch } => (branch.clone(), None),
        SlotState::Broken { reason } => (
            None,
            Some(
                crate::engine::integrity::unreadable_folder(&slot.path)
                    .unwrap_or_else(|| reason.clone()),
            ),
        ),
        SlotState::Unregistered => (
            None,
            Some("the folder exists but git does not know it as a worktree".into()),
        ),
        SlotState::Missing => (None, None),
    };
    SlotStatus {
        spec: branch
            .as_deref()
            .and_then(crate::git::spec_of_branch)
            .map(str::to_string),
        state: state.label().into(),
        name: slot.name,
        path: slot.path.display().to_string(),
        branch,
        problem,
    }
}

/// The first chunk in progress, in file order.
fn current_chunk(plan: &Plan) -> Option<String> {
    plan.chunks()
        .find(|c| c.status == Status::InProgress)
        .map(|c| c.id.clone())
}

fn counts(plan: &Plan) -> Counts {
    Counts {
        total: plan.total(),
        completed: plan.count(Status::Completed),
        pending: plan.count(Status::Pending),
        in_progress: plan.count(Status::InProgress),
        failed: plan.count(Status::Failed),
        blocked: plan.count(Status::Blocked),
    }
}

impl Shown {
    /// No plan.
    fn none() -> Shown {
        Shown {
            counts: Counts::default(),
            current_chunk: None,
            next_chunk: None,
            warnings: Vec::new(),
            merged: false,
            exhausted: false,
            spent: Default::default(),
            with_recorded_work: None,
        }
    }
}

/// One word for a spec's state: a plain function over what was read of its plan.
/// `status`'s word and chunk counts for a plan read elsewhere (a published folder: no lock,
/// no branch to check), by the same rule as a local spec's; `last` from its run records.
pub fn plan_state(
    plan: Option<&Plan>,
    invalid: bool,
    running: bool,
    last: crate::policy::last_run::LastRun,
) -> (&'static str, Counts) {
    let shown = plan.map(Shown::of);
    let state = spec_state(shown.as_ref(), invalid, running);
    let state = crate::policy::last_run::status_word(state, last);
    (state, shown.map(|s| s.counts).unwrap_or_default())
}

fn spec_state(plan: Option<&Shown>, invalid: bool, running: bool) -> &'static str {
    if invalid {
        return "invalid_plan";
    }
    let Some(plan) = plan else {
        return if running { "planning" } else { "not_planned" };
    };
    let c = &plan.counts;
    if plan.merged {
        "merged"
    } else if c.total > 0 && c.completed == c.total {
        "complete"
    } else if running {
        "running"
    } else if plan.exhausted && c.in_progress == 0 {
        "budget_exhausted"
    } else if c.in_progress > 0 {
        // Nobody holds the lock, yet a chunk is in progress: its run died.
        "interrupted"
    } else if c.failed > 0 {
        "failed"
    } else if c.blocked > 0 {
        "blocked"
    } else if c.completed > 0 {
        "in_progress"
    } else {
        "planned"
    }
}
