//! The spec's money and token budget during a run: what is left before each session (claude
//! gets it as `--max-budget-usd`), the stop when it is spent (the plan's `budget_exhausted`
//! mark, exit 5, what was spent on what), and the in-run floor of the ledger (see
//! `policy::budget`).

use super::*;
use crate::agent::output::SessionFacts;
use crate::policy::budget::{self, Allowance, Spent};
use crate::store::ledger;

/// The plan's top-level key runner sets when a run stops because the spec's budget is spent
/// (`status` shows `budget_exhausted`), and removes when a run goes on with budget left.
pub const EXHAUSTED_KEY: &str = "budget_exhausted";

/// What the spec's ledger says now: the planner's and each chunk's spending (a plan that
/// cannot be read counts as no chunk spending; the run's floor still holds).
pub(super) fn ledger_now(paths: &SpecPaths) -> Vec<budget::Item> {
    let plan = paths.plan.load().ok().flatten();
    ledger::items(plan.as_ref(), ledger::planner(&paths.dir))
}

impl Run {
    /// What was spent, by item and in all: never less than this run's floor.
    fn spent_now(&self) -> (Vec<budget::Item>, Spent) {
        let items = ledger_now(&self.paths);
        let total = ledger::total(&items).at_least(&self.ledger_floor);
        (items, total)
    }

    /// May another session start, and with how many dollars (no budget: yes, unlimited,
    /// without reading anything).
    pub(super) fn money_allowance(&self) -> Allowance {
        let limits = self.config.budget.budget();
        if !limits.is_set() {
            return Allowance::Go { usd_left: None };
        }
        budget::allowance(&limits, &self.spent_now().1)
    }

    /// A session's report is in: the run's floor grows by it, and a planner session's figures
    /// go to the planner ledger (a coder session's go on its attempt record).
    pub(super) fn note_session_cost(
        &mut self,
        role: &str,
        report: &SessionFacts,
    ) -> anyhow::Result<()> {
        let spent = Spent::session(report.cost_usd, report.tokens.total());
        self.ledger_floor.add(&spent);
        if role == "planner" {
            ledger::add_planner(&self.paths.dir, &spent).with_context(|| {
                format!(
                    "recording the planner's cost in {}",
                    self.paths.dir.display()
                )
            })?;
            self.keeper.planner_spent();
        }
        Ok(())
    }

    /// A run goes on with budget left: a mark of an earlier stop goes (the budget was raised).
    pub(super) fn clear_exhausted_mark(&self) -> anyhow::Result<()> {
        if !matches!(self.paths.plan.load(), Ok(Some(p)) if p.raw.contains_key(EXHAUSTED_KEY)) {
            return Ok(());
        }
        self.paths
            .plan
            .update_if(|plan| Ok(((), plan.raw.remove(EXHAUSTED_KEY).is_some())))
    }

    /// The budget is spent (`why`): mark the plan, and say what was spent on what and how to
    /// go on.
    pub(super) fn budget_exhausted(&self, why: &str) -> RunnerError {
        let (items, total) = self.spent_now();
        if matches!(self.paths.plan.load(), Ok(Some(_))) {
            let mark = serde_json::json!({"at": crate::clock::now(), "why": why});
            if let Err(e) = self.paths.plan.update(|plan| {
                plan.set_field(EXHAUSTED_KEY, mark);
                Ok(())
            }) {
                crate::output::warn(&format!("could not mark the plan budget_exhausted: {e:#}"));
            }
        }
        let lines = budget::spending_lines(&items, 5);
        let limits = self.config.budget.budget();
        let mut raise = Vec::new();
        if limits.max_usd.is_some() {
            raise.push(format!(
                "raise [budget] max_usd in {} or run `{} --max-usd N` with N above ${}",
                crate::config::CONFIG_FILE,
                crate::policy::next_command::continue_command(
                    &self.paths.name,
                    self.agent_flag.as_ref()
                ),
                budget::dollars(total.usd)
            ));
        }
        if limits.max_tokens.is_some() {
            raise.push(format!(
                "raise [budget] max_tokens in {} above {}",
                crate::config::CONFIG_FILE,
                total.tokens
            ));
        }
        let mut err = RunnerError::BudgetSpent(format!(
            "the budget of spec {} is spent: {why}; the spec is budget_exhausted.\nSpent: ${}, {}, {}; on:\n{}",
            self.paths.name,
            budget::dollars(total.usd),
            crate::text::count(total.tokens, "token"),
            crate::text::count(total.sessions, "session"),
            lines
                .iter()
                .map(|l| format!("  - {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
        ));
        for hint in raise {
            err = err.with_hint(hint);
        }
        err.with_hint(
            "a session that starts with a little budget left may end over it (the agents stop \
             between their own calls); the next session is not started",
        )
    }

    /// claude stopped at its `--max-budget-usd` without the chunk done: not a failed attempt
    /// (it does not count toward run.max_attempts). The chunk goes back to pending, its
    /// attempt closed as `budget_exhausted` with the session's report.
    pub(super) fn release_for_budget(&self, id: &str, report: &SessionFacts) -> anyhow::Result<()> {
        self.release_chunk_with(
            id,
            EXHAUSTED_KEY,
            "the agent stopped at the budget runner gave it (--max-budget-usd)",
            Some(report),
        )
    }

    /// A session cut off by a shutdown: its report (what it cost so far) goes on its attempt
    /// now, before recovery closes the attempt (nothing for an empty report).
    pub(super) fn record_session_cost(
        &self,
        taken: &Taken,
        report: &SessionFacts,
    ) -> anyhow::Result<()> {
        if *report == SessionFacts::default() {
            return Ok(());
        }
        let id = &taken.chunk.id;
        self.paths.plan.update_if(|plan| {
            let Some(pos) = plan.find_chunk(id) else {
                return Ok(((), false));
            };
            let chunk = plan.chunk_mut(pos);
            let ours = chunk
                .last_attempt()
                .is_some_and(|a| a.session_id.as_deref() == Some(taken.session_id.as_str()));
            if ours {
                chunk.update_last_attempt(|a| a.record_report(report));
            }
            Ok(((), ours))
        })
    }
}
