//! Agent accounts: their names (`fleet.account`, a remote's `refs/runner/pauses/<account>`), a
//! pure check used by the config and by `fleet` alike; which account a run's usage limit
//! belongs to; and, a usage limit being an account's, not a run's, when specs several jobs build
//! at once (`run --jobs`) may start while one of that account's jobs hit its limit. Pure: the
//! jobs' source feeds it what its jobs report.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::agent_choice::AgentChoice;
use super::invocation::Preset;

/// Whether `name` may be an agent account's name (`fleet.account`, or read from a remote's
/// pause ref): 1 to 64 ASCII letters, digits, `.`, `_`, `-` or `@`, not starting with `.` or
/// `-`, no `..`, not ending in `.lock`. Such a name is safe as one ref component and as a file
/// name.
pub fn is_account_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b))
        && !name.starts_with(['.', '-'])
        && !name.contains("..")
        && !name.contains("@{")
        && !name.ends_with(".lock")
}

/// The account a run's usage limit belongs to: `fleet.account` when set; else the agent
/// preset's name (every `claude` run shares one), and for the `command` preset the file name
/// of its program (two different commands are not one account), when that is a usable name.
pub fn account_of(configured: Option<&str>, agent: &AgentChoice) -> String {
    if let Some(account) = configured {
        return account.to_string();
    }
    if agent.preset == Preset::Command
        && let Some(name) = agent
            .program
            .as_deref()
            .and_then(|p| std::path::Path::new(p).file_name())
            .and_then(|n| n.to_str())
            .filter(|n| is_account_name(n))
    {
        return name.to_string();
    }
    agent.preset.name().to_string()
}

/// A spec's usage-limit pause, as an earlier run recorded it, and the account it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseRecord {
    pub account: String,
    pub spec: String,
    /// When the pause was recorded.
    pub set_at: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

/// The accounts an earlier run's usage limit pauses at `now`: of each account's records, the
/// newest one says (a later run that met the limit again, or saw it over, knows better than an
/// older record of another spec), and it pauses the account while its `until` is ahead.
pub fn paused_accounts(records: Vec<PauseRecord>, now: DateTime<Utc>) -> Vec<PauseRecord> {
    let mut newest: std::collections::BTreeMap<String, PauseRecord> = Default::default();
    for record in records {
        match newest.get(&record.account) {
            Some(known) if known.set_at >= record.set_at => {}
            _ => {
                newest.insert(record.account.clone(), record);
            }
        }
    }
    newest.into_values().filter(|r| r.until > now).collect()
}

/// May a job of an account start now?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MayStart {
    Yes,
    /// Not yet: the pause is on and the jobs wait for it (`--wait`), or the one job that
    /// checks the account after its reset has not got through its first session.
    Later,
    /// The account is paused until then and the jobs do not wait: the spec is skipped.
    No(DateTime<Utc>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Paused(DateTime<Utc>),
    /// The pause is over: one job checks first. `probe`: its spec and how many sessions it
    /// started since; none yet: the next job of the account to start a session is it.
    Checking {
        probe: Option<(String, u32)>,
    },
}

/// Every account's pause, as this run of jobs saw its jobs hit limits. An account not here is
/// free.
#[derive(Debug, Default)]
pub struct Accounts {
    states: HashMap<String, State>,
}

impl Accounts {
    /// A job of `account` hit its limit: paused until `until` (a later pause wins). Returns
    /// true when the account was not paused before (to say so once).
    pub fn limited(&mut self, account: &str, until: DateTime<Utc>) -> bool {
        match self.states.get_mut(account) {
            Some(State::Paused(at)) => {
                *at = (*at).max(until);
                false
            }
            _ => {
                self.states
                    .insert(account.to_string(), State::Paused(until));
                true
            }
        }
    }

    /// Whether a job of `account` for `spec` may start now (`others`: how many jobs of the
    /// account run; `wait_until`: the jobs wait out a pause that ends by then, `None`: they
    /// wait for none). A start allowed while the account is checked makes that job the one
    /// that checks.
    pub fn may_start(
        &mut self,
        account: &str,
        spec: &str,
        others: usize,
        wait_until: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> MayStart {
        self.settle(account, now);
        if let Some(State::Paused(until)) = self.states.get(account) {
            return match wait_until {
                Some(deadline) if *until <= deadline => MayStart::Later,
                _ => MayStart::No(*until),
            };
        }
        match self.states.get_mut(account) {
            None => MayStart::Yes,
            // A running job of the account checks it with its next session.
            Some(State::Checking { probe: None }) if others == 0 => {
                self.states.insert(
                    account.to_string(),
                    State::Checking {
                        probe: Some((spec.to_string(), 0)),
                    },
                );
                MayStart::Yes
            }
            Some(_) => MayStart::Later,
        }
    }

    /// A job of `account` started a session. Its second one means its first ended without
    /// the limit: the account is free again.
    pub fn session_started(&mut self, account: &str, spec: &str, now: DateTime<Utc>) {
        self.settle(account, now);
        let Some(State::Checking { probe }) = self.states.get_mut(account) else {
            return;
        };
        match probe {
            None => *probe = Some((spec.to_string(), 1)),
            Some((s, n)) if s == spec => {
                *n += 1;
                if *n >= 2 {
                    self.states.remove(account);
                }
            }
            Some(_) => {}
        }
    }

    /// A job of `account` ended, not by its limit (that is [`Accounts::limited`]): if it was
    /// the one checking, after a session the account is free; before any, another job checks.
    pub fn ended(&mut self, account: &str, spec: &str, now: DateTime<Utc>) {
        self.settle(account, now);
        let Some(State::Checking { probe }) = self.states.get_mut(account) else {
            return;
        };
        match probe {
            Some((s, n)) if s == spec && *n >= 1 => {
                self.states.remove(account);
            }
            Some((s, _)) if s == spec => *probe = None,
            _ => {}
        }
    }

    /// A pause over at `now` becomes a check: the next session of the account tells.
    fn settle(&mut self, account: &str, now: DateTime<Utc>) {
        if let Some(State::Paused(until)) = self.states.get(account)
            && now >= *until
        {
            self.states
                .insert(account.to_string(), State::Checking { probe: None });
        }
    }

    /// The pause of `account` not over at `now`.
    pub fn paused_until(&self, account: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self.states.get(account) {
            Some(State::Paused(until)) if *until > now => Some(*until),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::invocation::Permission;

    fn agent(preset: Preset, program: Option<&str>) -> AgentChoice {
        AgentChoice {
            preset,
            program: program.map(str::to_string),
            args: Vec::new(),
            permission: Permission::Safe,
        }
    }

    #[test]
    fn the_account_is_the_configured_one_else_the_preset_else_the_commands_program() {
        let claude = agent(Preset::Claude, Some("/opt/claude"));
        assert_eq!(account_of(Some("team@x"), &claude), "team@x");
        assert_eq!(account_of(None, &claude), "claude");
        let cmd = agent(Preset::Command, Some("/usr/bin/my-agent"));
        assert_eq!(account_of(None, &cmd), "my-agent");
        assert_eq!(
            account_of(None, &agent(Preset::Command, Some("/x/.hid"))),
            "command"
        );
        assert_eq!(
            account_of(None, &agent(Preset::Command, Some("/x/a b"))),
            "command"
        );
        assert_eq!(account_of(None, &agent(Preset::Command, None)), "command");
    }

    #[test]
    fn a_pause_skips_or_holds_the_accounts_jobs_until_one_got_through_a_session() {
        let t0 = Utc::now();
        let until = t0 + chrono::Duration::minutes(5);
        let after = until + chrono::Duration::seconds(1);
        let far = Some(t0 + chrono::Duration::days(1));
        let mut a = Accounts::default();
        assert_eq!(a.may_start("claude", "s1", 0, None, t0), MayStart::Yes);
        assert!(a.limited("claude", until));
        assert!(!a.limited("claude", t0), "said once; the later time stays");
        assert_eq!(a.paused_until("claude", t0), Some(until));
        assert_eq!(
            a.may_start("claude", "s2", 0, None, t0),
            MayStart::No(until)
        );
        assert_eq!(a.may_start("claude", "s2", 0, far, t0), MayStart::Later);
        assert_eq!(
            a.may_start("codex", "s3", 0, None, t0),
            MayStart::Yes,
            "another account"
        );
        // Over: one job checks first; the others wait for its first session to end well.
        assert_eq!(a.may_start("claude", "s2", 0, far, after), MayStart::Yes);
        assert_eq!(a.may_start("claude", "s4", 1, far, after), MayStart::Later);
        a.session_started("claude", "s2", after);
        assert_eq!(a.may_start("claude", "s4", 1, far, after), MayStart::Later);
        a.session_started("claude", "s2", after);
        assert_eq!(a.may_start("claude", "s4", 1, far, after), MayStart::Yes);
    }

    #[test]
    fn a_running_job_checks_the_account_and_a_check_that_hits_the_limit_pauses_again() {
        let t0 = Utc::now();
        let until = t0 + chrono::Duration::minutes(5);
        let after = until + chrono::Duration::seconds(1);
        let far = Some(t0 + chrono::Duration::days(1));
        let mut a = Accounts::default();
        a.limited("claude", until);
        // The job that waited out the pause itself runs on: it checks; no other starts.
        assert_eq!(a.may_start("claude", "s2", 1, far, after), MayStart::Later);
        a.session_started("claude", "s1", after);
        assert_eq!(a.may_start("claude", "s2", 1, far, after), MayStart::Later);
        // It hit the limit again.
        let later = after + chrono::Duration::minutes(5);
        assert!(a.limited("claude", later));
        assert_eq!(a.may_start("claude", "s2", 1, far, after), MayStart::Later);
        let over = later + chrono::Duration::seconds(1);
        // It ended before any session (it was not the limit): another one checks.
        assert_eq!(a.may_start("claude", "s2", 0, far, over), MayStart::Yes);
        a.ended("claude", "s2", over);
        assert_eq!(a.may_start("claude", "s3", 0, far, over), MayStart::Yes);
        a.session_started("claude", "s3", over);
        a.ended("claude", "s3", over);
        assert_eq!(a.may_start("claude", "s4", 0, far, over), MayStart::Yes);
        assert_eq!(a.may_start("claude", "s5", 1, far, over), MayStart::Yes);
    }

    #[test]
    fn a_pause_past_the_wait_leaves_the_accounts_specs_for_a_later_run() {
        let t0 = Utc::now();
        let until = t0 + chrono::Duration::hours(30);
        let mut a = Accounts::default();
        a.limited("claude", until);
        // `run.max_wait` from the start reaches 24 h: a 30 h pause is not waited out.
        let day = Some(t0 + chrono::Duration::hours(24));
        assert_eq!(a.may_start("claude", "s2", 0, day, t0), MayStart::No(until));
        let two_days = Some(t0 + chrono::Duration::hours(48));
        assert_eq!(
            a.may_start("claude", "s2", 0, two_days, t0),
            MayStart::Later
        );
    }

    #[test]
    fn an_accounts_newest_pause_record_says_whether_it_is_paused() {
        let t0 = Utc::now();
        let at = |m: i64| t0 + chrono::Duration::minutes(m);
        let record = |account: &str, spec: &str, set: i64, until: i64| PauseRecord {
            account: account.into(),
            spec: spec.into(),
            set_at: at(set),
            until: at(until),
        };
        let on = paused_accounts(
            vec![
                // claude: the newer record (b) is over: not paused.
                record("claude", "a", -30, 60),
                record("claude", "b", -10, -1),
                // codex: its newest record is ahead.
                record("codex", "c", -20, -5),
                record("codex", "d", -5, 30),
                // gemini: its only record is over.
                record("gemini", "e", -50, -40),
            ],
            t0,
        );
        assert_eq!(on, vec![record("codex", "d", -5, 30)]);
    }
}
