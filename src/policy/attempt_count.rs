//! How a chunk's attempts are counted for a person: only failed attempts count toward
//! `run.max_attempts`, so "attempt 2 of 3" numbers those; attempts that were interrupted or
//! stopped by a usage limit are said apart ("1 interrupted, not counted"), never folded into
//! the number (an attempt record's own `n` counts every try, for the journal and the sessions).

/// A chunk's attempts by how they ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counted {
    /// Ended `failed`: these count toward `run.max_attempts`.
    pub failed: u32,
    /// Ended `interrupted` (Ctrl-C, a closed terminal, a kill, a crash).
    pub interrupted: u32,
    /// Ended `usage_limited`.
    pub limited: u32,
}

impl Counted {
    /// The attempts whose outcomes are `outcomes` (one per attempt record; none: not ended).
    pub fn of<'a>(outcomes: impl IntoIterator<Item = Option<&'a str>>) -> Counted {
        let mut c = Counted::default();
        for outcome in outcomes {
            match outcome {
                Some("failed") => c.failed += 1,
                Some("interrupted") => c.interrupted += 1,
                Some("usage_limited") => c.limited += 1,
                _ => {}
            }
        }
        c
    }

    /// The attempts that do not count, in words ("2 interrupted, 1 stopped by a usage limit,
    /// not counted"); none: `None`.
    pub fn apart(&self) -> Option<String> {
        let mut apart = Vec::new();
        if self.interrupted > 0 {
            apart.push(format!("{} interrupted", self.interrupted));
        }
        if self.limited > 0 {
            apart.push(format!("{} stopped by a usage limit", self.limited));
        }
        (!apart.is_empty()).then(|| format!("{}, not counted", apart.join(", ")))
    }

    /// A chunk's attempt starting, numbered as `run.max_attempts` counts: "attempt 2 of 3",
    /// or "attempt 2 of 3; 1 interrupted, not counted".
    pub fn starting(&self, max: u32) -> String {
        let n = format!("attempt {} of {max}", self.failed + 1);
        match self.apart() {
            Some(apart) => format!("{n}; {apart}"),
            None => n,
        }
    }

    /// The attempt that just failed (counted in `failed`): "attempt 2 of 3 failed", or
    /// "attempt 2 of 3 failed (1 interrupted, not counted)".
    pub fn failed(&self, max: u32) -> String {
        let n = format!("attempt {} of {max} failed", self.failed);
        match self.apart() {
            Some(apart) => format!("{n} ({apart})"),
            None => n,
        }
    }

    /// A chunk's attempts as the plan's view says them beside its status (`status` as the plan
    /// spells it): in progress, the attempt under way ("attempt 2 of 3"); failed, or pending
    /// again after a failure, the last counted one ("attempt 1 of 3 failed"); completed after
    /// earlier tries, the one that did it ("done on attempt 2 of 3"); any attempt not counted
    /// said apart. Nothing for a chunk whose only story is its status (pending and never tried,
    /// completed at the first try).
    pub fn for_status(&self, status: &str, max: u32) -> Option<String> {
        match status {
            "in_progress" => Some(self.starting(max)),
            "completed" if self.failed > 0 || self.apart().is_some() => {
                Some(format!("done on {}", self.starting(max)))
            }
            _ if self.failed > 0 => Some(self.failed(max)),
            "completed" => None,
            _ => self.apart(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failed_attempts_are_numbered_and_the_others_are_said_apart() {
        let c = Counted::of([
            Some("interrupted"),
            Some("failed"),
            Some("usage_limited"),
            Some("interrupted"),
            None,
        ]);
        assert_eq!(
            c,
            Counted {
                failed: 1,
                interrupted: 2,
                limited: 1
            }
        );
        assert_eq!(
            c.starting(3),
            "attempt 2 of 3; 2 interrupted, 1 stopped by a usage limit, not counted"
        );
        assert_eq!(
            c.failed(3),
            "attempt 1 of 3 failed (2 interrupted, 1 stopped by a usage limit, not counted)"
        );
        assert_eq!(Counted::of([None]).starting(3), "attempt 1 of 3");
        assert_eq!(
            Counted::of([Some("failed")]).failed(3),
            "attempt 1 of 3 failed"
        );
    }

    #[test]
    fn each_status_says_its_attempts_as_the_run_numbers_them() {
        let none = Counted::default();
        assert_eq!(none.for_status("pending", 3), None);
        assert_eq!(none.for_status("completed", 3), None);
        assert_eq!(
            none.for_status("in_progress", 3).as_deref(),
            Some("attempt 1 of 3")
        );
        let once = Counted::of([Some("failed"), None]);
        assert_eq!(
            once.for_status("in_progress", 3).as_deref(),
            Some("attempt 2 of 3")
        );
        assert_eq!(
            once.for_status("pending", 3).as_deref(),
            Some("attempt 1 of 3 failed")
        );
        assert_eq!(
            once.for_status("completed", 3).as_deref(),
            Some("done on attempt 2 of 3")
        );
        let all = Counted::of([
            Some("failed"),
            Some("interrupted"),
            Some("failed"),
            Some("failed"),
        ]);
        assert_eq!(
            all.for_status("failed", 3).as_deref(),
            Some("attempt 3 of 3 failed (1 interrupted, not counted)")
        );
        let cut = Counted::of([Some("interrupted")]);
        assert_eq!(
            cut.for_status("pending", 3).as_deref(),
            Some("1 interrupted, not counted")
        );
        assert_eq!(
            cut.for_status("completed", 3).as_deref(),
            Some("done on attempt 1 of 3; 1 interrupted, not counted")
        );
        assert_eq!(
            cut.for_status("blocked", 3).as_deref(),
            Some("1 interrupted, not counted")
        );
    }
}
