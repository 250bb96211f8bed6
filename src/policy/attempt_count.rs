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
}
