//! Detection for `runner new` (issue 13): the unfinished specs a new description may repeat,
//! without an LLM or the network, within a time bound.
//!
//! Each spec's keywords are read first (`requirements.json`'s `runner_keywords`, else computed
//! from its `task_description`, else from `spec.md`: `store::spec_text`), on every core, and
//! compared as concepts (`policy::similar::concepts`: a synonym group counts once); a spec
//! whose concepts' Jaccard with the description's is below the threshold cannot score enough
//! (recency is at most 1), so only the others, and the specs with the same description, are
//! judged further: their last activity (file times), their score, and then, best first, their
//! status by `ops::status`'s own rule. The deadline is checked between specs: past it nothing
//! is returned, with `timed_out`.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::recovery::quiet::on_every_core;
use crate::ops::status::SpecStatus;
use crate::policy::similar::{self, Scored};
use crate::store::spec_text;
use crate::store::status_cache::StatusCache;
use crate::store::workspace::Workspace;

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CandidateChunks {
    pub completed: usize,
    pub total: usize,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Candidate {
    pub spec: String,
    /// The word `runner status` shows: not_planned, planned, in_progress, interrupted, failed,
    /// blocked, budget_exhausted, paused or missing_work (the unfinished ones).
    pub status: String,
    /// Jaccard of the keywords × the recency of the last activity, 0..=1, rounded to 2
    /// decimals.
    pub score: f64,
    pub chunks: CandidateChunks,
    /// The cost ledger's sum, as `runner status` shows it.
    pub spent_usd: f64,
    /// RFC 3339 UTC: the newest modification time of the spec's folder, its plan, checkpoint,
    /// journal, `runs/` folder (run records), `spec.md` and `requirements.json`.
    pub last_activity: String,
    /// The spec's task description (`requirements.json`'s, else `spec.md`'s): its first
    /// non-empty line, at most 200 characters.
    pub description: String,
    /// The command that continues it, ready to paste (without a terminal too): `runner run
    /// --spec <spec> --auto-continue`, the one continue command.
    pub continue_command: String,
    /// How `runner new --run` (or `--choice N --run`) continues it: `resume` (as `runner
    /// resume`, with its summary and `resumed_from`: there is a state to rebuild) or `run` (as
    /// `runner run --spec`: not planned yet, or planned and never run).
    pub continue_with: ContinueWith,
}

/// How a candidate is continued (see [`Candidate::continue_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContinueWith {
    /// `runner resume`: a checkpoint, journal or branch to rebuild the state from.
    Resume,
    /// `runner run --spec`: not planned yet, or planned and never run.
    Run,
}

#[derive(Debug, Clone, Default)]
pub struct Detection {
    /// Score ≥ 0.35, best first, at most 3.
    pub candidates: Vec<Candidate>,
    /// An unfinished spec with the same description (the most recently active of several),
    /// or one a live run holds ([`Candidate::is_busy`]).
    pub identical: Option<Candidate>,
    /// The bound passed: `candidates` and `identical` are empty.
    pub timed_out: bool,
    /// How many spec folders there were to look at (all of them were, unless `timed_out`).
    pub scanned: usize,
}

/// The bound the issue sets on detection.
pub const DETECTION_BOUND: Duration = Duration::from_millis(200);

/// The longest description shown.
const SHOWN_CHARS: usize = 200;

/// The status words of specs that are never reported: finished, thrown out, unreadable. (A
/// discarded spec is told by `discarded` too: resume's reading, for records of older runners.)
const NOT_CANDIDATES: &[&str] = &["complete", "merged", "discarded", "refused", "invalid_plan"];

/// The status words of a spec a live run holds: not a candidate (nothing to continue), but
/// reported as `identical` (a new spec would repeat the one being built).
pub const BUSY: &[&str] = &["running", "planning"];

impl Candidate {
    /// A live run holds it (its status is one of [`BUSY`]).
    pub fn is_busy(&self) -> bool {
        BUSY.contains(&self.status.as_str())
    }
}

/// What the first pass keeps of a spec that may be shown.
#[derive(Debug, Clone)]
struct Glance {
    spec: String,
    /// Its folder, where it really is.
    dir: std::path::PathBuf,
    jaccard: f64,
    identical: bool,
    description: String,
}

/// `read` of every name, on every core, checking `deadline` before each; `None` when it
/// passed before all were read. The scanning loop of detection, with the reader as a parameter.
fn scan<N: Sync, T: Send>(
    names: &[N],
    deadline: Instant,
    read: impl Fn(&N) -> Option<T> + Sync,
) -> Option<Vec<T>> {
    let late = std::sync::atomic::AtomicBool::new(false);
    let read = on_every_core(names, |name| {
        if late.load(std::sync::atomic::Ordering::Relaxed) || Instant::now() >= deadline {
            late.store(true, std::sync::atomic::Ordering::Relaxed);
            return None;
        }
        // A test's `detect_read~MS` makes each read slow, to pass the bound.
        crate::failpoint::hit("detect_read");
        read(name)
    });
    if late.into_inner() {
        return None;
    }
    Some(read.into_iter().flatten().collect())
}

/// The first pass over one spec: its keywords against the description's; kept when it may
/// score enough or says the same.
fn glance(
    (root, specs_dir): (&Path, &Path),
    (name, link): &(String, bool),
    query: &[String],
    description: &str,
) -> Option<Glance> {
    // A real folder is the one `spec_paths` gives; a link is checked (inside the repository)
    // and resolved by it.
    let dir = if *link {
        crate::store::workspace::spec_paths(root, specs_dir, name)
            .ok()?
            .dir
    } else {
        specs_dir.join(name)
    };
    let said = spec_text::said(&dir);
    let identical = !said.cut
        && !said.description.trim().is_empty()
        && similar::same_description(&said.description, description);
    let stored = said
        .keywords
        .map(|k| similar::concepts(&similar::normalized(k)));
    let jaccard = match &stored {
        Some(k) => Some(similar::jaccard(query, k)).filter(|j| *j >= similar::THRESHOLD),
        // Read only as far as it could still reach the threshold.
        None => similar::similar_enough(query, &said.description),
    };
    if !identical && jaccard.is_none() {
        return None;
    }
    // An identical description below the threshold is scored as it is.
    let jaccard = jaccard.unwrap_or_else(|| {
        let k = stored.unwrap_or_else(|| similar::concepts(&similar::keywords(&said.description)));
        similar::jaccard(query, &k)
    });
    Some(Glance {
        spec: name.clone(),
        dir,
        jaccard,
        identical,
        description: said.description,
    })
}

/// The unfinished specs like `description` (see the module comment), judged at `now`; past
/// `bound` nothing, with `timed_out`. The bound is held whatever the files: detection runs on
/// a thread of its own, which is left behind (it only reads) if it has not answered by then — a
/// read the deadline checks cannot interrupt (a huge plan parsed by the status rule, a slow
/// disk) cannot make `runner new` wait.
pub fn detect(ws: &Workspace, description: &str, now: DateTime<Utc>, bound: Duration) -> Detection {
    let deadline = Instant::now() + bound;
    let listed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let (root, state_dir, specs_dir) =
        (ws.root.clone(), ws.state_dir.clone(), ws.specs_dir.clone());
    let (text, seen) = (description.to_string(), listed.clone());
    let spawned = std::thread::Builder::new()
        .name("detect".into())
        .spawn(move || {
            // Its own handle on the repository (a `Workspace` is not shared between threads).
            let Ok(main) = crate::git::MainRepo::discover(&root) else {
                return;
            };
            let ws = Workspace {
                main,
                root,
                state_dir,
                specs_dir,
            };
            let _ = tx.send(detect_until(&ws, &text, now, deadline, &seen));
        });
    let left = deadline.saturating_duration_since(Instant::now());
    match spawned.map(|_| rx.recv_timeout(left)) {
        Ok(Ok(found)) => found,
        Ok(Err(std::sync::mpsc::RecvTimeoutError::Timeout)) => Detection {
            timed_out: true,
            scanned: listed.load(std::sync::atomic::Ordering::Relaxed),
            ..Detection::default()
        },
        // No thread, or it could not open the repository: here, checked between specs.
        _ => detect_until(ws, description, now, deadline, &listed),
    }
}

/// [`detect`]'s work, with the deadline checked between specs; `listed` is set to the number
/// of specs once they are listed.
fn detect_until(
    ws: &Workspace,
    description: &str,
    now: DateTime<Utc>,
    deadline: Instant,
    listed: &std::sync::atomic::AtomicUsize,
) -> Detection {
    let names = crate::store::spec::list_kinds(&ws.specs_dir);
    listed.store(names.len(), std::sync::atomic::Ordering::Relaxed);
    let query = similar::concepts(&similar::keywords(description));
    let timed_out = || Detection {
        timed_out: true,
        scanned: names.len(),
        ..Detection::default()
    };
    // (A `Workspace` is not shared between threads: its folders are.)
    let folders = (ws.root.as_path(), ws.specs_dir.as_path());
    let Some(glances) = scan(&names, deadline, |entry| {
        glance(folders, entry, &query, description)
    }) else {
        return timed_out();
    };
    match judge(ws, glances, now, deadline) {
        Some((candidates, identical)) => Detection {
            candidates,
            identical,
            timed_out: false,
            scanned: names.len(),
        },
        None => timed_out(),
    }
}

/// How many specs are judged at a time (one status read for them all): enough for three
/// candidates when a few of the best are finished.
const BATCH: usize = 8;

/// The kept specs scored and, best first, judged by their status until three unfinished are
/// found, and the identical ones, most recent first, until one is unfinished; `None` past
/// `deadline` (checked between batches).
fn judge(
    ws: &Workspace,
    glances: Vec<Glance>,
    now: DateTime<Utc>,
    deadline: Instant,
) -> Option<(Vec<Candidate>, Option<Candidate>)> {
    let scored: Vec<Scored> = glances
        .iter()
        .map(|g| {
            let last = spec_text::last_activity(&g.dir)
                .and_then(spec_text::utc)
                .unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
            Scored {
                spec: g.spec.clone(),
                score: similar::score(g.jaccard, similar::recency(last, now)),
                last_activity: last,
            }
        })
        .collect();
    let by_name: HashMap<&str, (&Scored, &Glance)> = scored
        .iter()
        .zip(&glances)
        .map(|(s, g)| (s.spec.as_str(), (s, g)))
        .collect();
    let mut judged = Judged {
        ws,
        by_name,
        found: HashMap::new(),
        deadline,
        now,
        cache: None,
        facts: crate::ops::resume::facts::DiskFacts::new(ws, now, chrono::Duration::zero()),
    };
    let ordered = similar::best_first(scored.clone());
    let candidates = judged.first_unfinished(&ordered, similar::MAX_SHOWN, false)?;
    let same = similar::most_recent_first(
        scored
            .iter()
            .filter(|s| judged.by_name[s.spec.as_str()].1.identical)
            .cloned()
            .collect(),
    );
    // One a person can continue, else one being built.
    let identical = match judged.first_unfinished(&same, 1, false)?.pop() {
        Some(c) => Some(c),
        None => judged.first_unfinished(&same, 1, true)?.pop(),
    };
    (Instant::now() < deadline).then_some((candidates, identical))
}

/// The specs judged so far (`None`: not a candidate).
struct Judged<'a> {
    ws: &'a Workspace,
    by_name: HashMap<&'a str, (&'a Scored, &'a Glance)>,
    found: HashMap<String, Option<Candidate>>,
    deadline: Instant,
    now: DateTime<Utc>,
    /// Loaded at the first judgement.
    cache: Option<StatusCache>,
    /// Resume's reading of the specs (`discarded`), one for the whole detection: it loads the
    /// resolution cache and lists the specs once, not once per candidate.
    facts: crate::ops::resume::facts::DiskFacts<'a>,
}

impl Judged<'_> {
    /// The first `wanted` candidates of `ordered`, in its order (with `busy`, specs a live run
    /// holds too), judging `BATCH` specs at a time; `None` past the deadline.
    fn first_unfinished(
        &mut self,
        ordered: &[Scored],
        wanted: usize,
        busy: bool,
    ) -> Option<Vec<Candidate>> {
        let mut out = Vec::new();
        for (i, s) in ordered.iter().enumerate() {
            if out.len() == wanted {
                break;
            }
            if !self.found.contains_key(&s.spec) {
                if Instant::now() >= self.deadline {
                    return None;
                }
                let batch: Vec<String> = ordered[i..]
                    .iter()
                    .filter(|s| !self.found.contains_key(&s.spec))
                    .take(BATCH)
                    .map(|s| s.spec.clone())
                    .collect();
                self.judge(batch);
            }
            if let Some(Some(c)) = self.found.get(&s.spec)
                && (busy || !c.is_busy())
            {
                out.push(c.clone());
            }
        }
        Some(out)
    }

    /// Read the status of `names` (`ops::status`'s rule) and keep each one's candidate.
    fn judge(&mut self, names: Vec<String>) {
        // A test's `detect_judge~MS` makes the judgement slow, past the bound.
        crate::failpoint::hit("detect_judge");
        let ws = self.ws;
        let cache = self
            .cache
            .get_or_insert_with(|| StatusCache::load(&ws.state_dir));
        // One spec whose status cannot be read (its run lock a folder) must not hide the others
        // of its batch: then each is judged alone.
        let statuses = crate::ops::status::specs(ws, names.clone(), cache).unwrap_or_else(|_| {
            names
                .iter()
                .filter_map(|n| crate::ops::status::specs(ws, vec![n.clone()], cache).ok())
                .flatten()
                .collect()
        });
        let mut statuses: HashMap<String, SpecStatus> =
            statuses.into_iter().map(|s| (s.spec.clone(), s)).collect();
        for name in names {
            let c = statuses.remove(&name).and_then(|status| {
                let (s, g) = self.by_name.get(name.as_str())?;
                candidate(self.ws, &self.facts, self.now, (s, g), status)
            });
            self.found.insert(name, c);
        }
    }
}

/// The candidate a spec makes, if its status is unfinished or held by a live run
/// (`ops::status`'s rule).
fn candidate(
    ws: &Workspace,
    facts: &crate::ops::resume::facts::DiskFacts,
    now: DateTime<Utc>,
    (s, g): (&Scored, &Glance),
    status: SpecStatus,
) -> Option<Candidate> {
    if NOT_CANDIDATES.contains(&status.status.as_str()) || discarded(facts, &s.spec) {
        return None;
    }
    Some(Candidate {
        continue_command: crate::policy::next_command::continue_command(&s.spec, None),
        continue_with: continue_with(ws, &s.spec, now),
        status: status.status,
        score: similar::rounded(s.score),
        chunks: CandidateChunks {
            completed: status.chunks.completed,
            total: status.chunks.total,
        },
        spent_usd: status.spent.usd,
        last_activity: s
            .last_activity
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        description: shown(&g.description),
        spec: s.spec.clone(),
    })
}

/// Whether the spec's work was thrown away (`runner discard`) and nothing ran since, by
/// `runner resume`'s own reading (its plan is then all pending: `status` says planned).
fn discarded(facts: &crate::ops::resume::facts::DiskFacts, spec: &str) -> bool {
    use crate::policy::resolve::{Facts, SpecState};
    facts.spec(spec).state == SpecState::Discarded
}

/// `Resume` when resume has a state to rebuild and continue (its own rule:
/// `engine::resume::reconstruct` finds a checkpoint, journal or branch to rebuild from), else
/// `Run` (a spec not planned or planned and never run: resume would say "No data found to
/// resume from").
fn continue_with(ws: &Workspace, spec: &str, now: DateTime<Utc>) -> ContinueWith {
    let resumable = ws.spec(spec).ok().is_some_and(|paths| {
        crate::engine::resume::reconstruct(ws, &paths, now).is_ok_and(|r| r.is_some())
    });
    if resumable {
        ContinueWith::Resume
    } else {
        ContinueWith::Run
    }
}

/// A description as shown: its first non-empty line, trimmed, at most `SHOWN_CHARS`
/// characters (cut with `…`), control characters replaced.
fn shown(description: &str) -> String {
    let line = description
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut out: String = line
        .chars()
        .take(SHOWN_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.chars().count() > SHOWN_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
