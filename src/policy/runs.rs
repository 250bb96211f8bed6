//! What a run record means: whether the run is alive, and how its id is shown and matched.
//! Pure functions over the facts the mechanism gathers (the record, whether the spec's lock is
//! held and by which run, whether the recorded process still exists on this host).

use chrono::{DateTime, Duration, Utc};

/// `resume.stale_after`'s default: a run that has said nothing for this long, and whose lock
/// nobody holds, is stale.
pub const STALE_AFTER_DEFAULT: Duration = Duration::minutes(2);

/// The fewest characters a run id is shown with (`r` included).
pub const MIN_SHOWN: usize = 8;

/// The fewest characters of a run id accepted as input (`r` included).
pub const MIN_PREFIX: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Running, or perhaps running: its lock is held by it, or it said it was alive less than
    /// `stale_after` ago and runner cannot prove it dead.
    Active,
    /// Not ended, and nobody is running it: it was killed, or its machine went away.
    Stale,
    Ended,
}

/// The facts about one run that decide its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// The spec's run lock is held by a process whose holder record names this run (or names
    /// no run: a garbled record of a held lock is taken to be this run's, the careful reading).
    pub lock_held_by_it: bool,
    /// The record says the run ended.
    pub ended: bool,
    pub heartbeat: DateTime<Utc>,
    /// The recorded process is known to be gone: it ran on this host and no process has its
    /// pid, or its pid now holds the lock for another run.
    pub process_gone: bool,
}

/// A held lock is the exact answer ("a lock dies with its process"): the run is active,
/// whatever its heartbeat says. Without it, a run whose process is known to be gone is stale at
/// once; otherwise (another host, or a pid still in use) only once its heartbeat is older than
/// `stale_after`, since runner cannot prove it dead. A heartbeat further in the future than
/// clock skew explains (`policy::age::believed`: a forged record, a clock far off) is no sign of
/// life either: it would keep a run nobody runs active, and `runner resume` refusing it, for
/// ever.
pub fn state(facts: Liveness, now: DateTime<Utc>, stale_after: Duration) -> RunState {
    let silent = now - facts.heartbeat;
    let believed = super::age::believed(silent.num_seconds()).is_some();
    if facts.lock_held_by_it {
        RunState::Active
    } else if facts.ended {
        RunState::Ended
    } else if facts.process_gone || silent > stale_after || !believed {
        RunState::Stale
    } else {
        RunState::Active
    }
}

/// For each id, how many leading characters tell it apart from every other id, and at least
/// [`MIN_SHOWN`] (never more than the id). O(n log n): only neighbours in sorted order matter.
pub fn shortest_unique_lengths(ids: &[&str]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| ids[i]);
    let common = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let mut lengths = vec![0; ids.len()];
    for (k, &i) in order.iter().enumerate() {
        let id = ids[i];
        let before = k.checked_sub(1).map_or(0, |p| common(id, ids[order[p]]));
        let after = order.get(k + 1).map_or(0, |&n| common(id, ids[n]));
        lengths[i] = (before.max(after) + 1).max(MIN_SHOWN).min(id.len());
    }
    lengths
}

/// Does `input` read as a run id or a prefix of one ([`MIN_PREFIX`] characters or more)?
pub fn is_run_id_prefix(input: &str) -> bool {
    input.len() >= MIN_PREFIX
        && input.len() <= 13
        && input.starts_with('r')
        && input[1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The ids that `input` names: the one equal to it if there is one, else those it is a prefix
/// of (none when `input` is not a run id prefix).
pub fn matching<'a>(ids: &[&'a str], input: &str) -> Vec<&'a str> {
    if !is_run_id_prefix(input) {
        return Vec::new();
    }
    if let Some(exact) = ids.iter().find(|id| **id == input) {
        return vec![exact];
    }
    ids.iter()
        .copied()
        .filter(|id| id.starts_with(input))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    fn facts(lock: bool, ended: bool, heartbeat: i64, gone: bool) -> Liveness {
        Liveness {
            lock_held_by_it: lock,
            ended,
            heartbeat: at(heartbeat),
            process_gone: gone,
        }
    }

    #[test]
    fn a_held_lock_is_active_whatever_the_heartbeat_and_a_free_one_goes_by_age_or_proof() {
        let now = at(10_000);
        let after = STALE_AFTER_DEFAULT;
        assert_eq!(
            state(facts(true, false, 0, false), now, after),
            RunState::Active
        );
        assert_eq!(
            state(facts(true, true, 0, true), now, after),
            RunState::Active
        );
        assert_eq!(
            state(facts(false, true, 0, true), now, after),
            RunState::Ended
        );
        assert_eq!(
            state(facts(false, false, 0, false), now, after),
            RunState::Stale
        );
        assert_eq!(
            state(facts(false, false, 9_990, false), now, after),
            RunState::Active
        );
        assert_eq!(
            state(facts(false, false, 9_990, true), now, after),
            RunState::Stale
        );
        // The boundary: exactly stale_after old is not yet stale.
        assert_eq!(
            state(facts(false, false, 9_880, false), now, after),
            RunState::Active
        );
        assert_eq!(
            state(facts(false, false, 9_879, false), now, after),
            RunState::Stale
        );
        // A heartbeat from the future: a little (clock skew) is alive, far is no sign of life.
        assert_eq!(
            state(facts(false, false, 10_120, false), now, after),
            RunState::Active
        );
        assert_eq!(
            state(facts(false, false, 10_121, false), now, after),
            RunState::Stale
        );
        assert_eq!(
            state(facts(true, false, 10_121, false), now, after),
            RunState::Active
        );
    }

    #[test]
    fn ids_are_shown_at_their_shortest_unique_prefix_but_never_under_eight() {
        let ids = ["r3f9a0c41b2d7", "r3f9a0c4ffff0", "r0000000000aa", "r1"];
        assert_eq!(shortest_unique_lengths(&ids), vec![9, 9, 8, 2]);
        assert_eq!(shortest_unique_lengths(&["r3f9a0c41b2d7"]), vec![8]);
        assert!(shortest_unique_lengths(&[]).is_empty());
        // Two equal ids (a copied record) are shown whole.
        assert_eq!(
            shortest_unique_lengths(&["r3f9a0c41b2d7", "r3f9a0c41b2d7"]),
            vec![13, 13]
        );
    }

    #[test]
    fn input_matches_an_exact_id_first_then_prefixes_of_four_or_more() {
        let ids = ["r3f9a0c41b2d7", "r3f9a0c4ffff0", "rabcdef012345"];
        assert_eq!(
            matching(&ids, "r3f9"),
            vec!["r3f9a0c41b2d7", "r3f9a0c4ffff0"]
        );
        assert_eq!(matching(&ids, "r3f9a0c41"), vec!["r3f9a0c41b2d7"]);
        assert_eq!(matching(&ids, "rabcdef012345"), vec!["rabcdef012345"]);
        assert!(
            matching(&ids, "r3f").is_empty(),
            "three characters are too few"
        );
        assert!(
            matching(&ids, "003-auth").is_empty(),
            "a spec name is never a run id"
        );
        assert!(matching(&ids, "rABC").is_empty());
        assert!(
            matching(&ids, "r3f9a0c41b2d70").is_empty(),
            "longer than any id"
        );
    }
}
