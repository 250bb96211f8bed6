//! The stream of `runner logs`: the chosen sessions one after another, each log read to its end
//! (`store::session_log`), and with `follow` the logs read as they are written.
//!
//! Following: the session shown is read every `poll` (one `fstat` when nothing changed). A
//! newer session folder (one `stat` of `sessions/` tells a new one) means the session ended:
//! the rest of its log is read and the next one starts. The run ends the stream: its record
//! says `ended`, or its lock is free (a run killed with SIGKILL leaves its record unended, but
//! the OS let go of its lock: the stream ends then too, saying so), or another run holds the
//! lock (this one ended and a new one began). That is looked at once a second, and only while
//! nothing new was written. Started before any session, the stream waits for the spec's first;
//! started while a run that has not started a session yet holds the lock, for that run's first.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{LogsOptions, Piece};
use crate::agent::output::activity::Reader;
use crate::store::lock::{self, LockState};
use crate::store::runs;
use crate::store::session_log::SessionLog;
use crate::store::sessions::{self, Started};
use crate::store::workspace::SpecPaths;

/// How often, at most, the followed run's record and lock are looked at.
const LIVENESS_EVERY: Duration = Duration::from_secs(1);

/// The session being shown.
struct Current {
    id: String,
    log: SessionLog,
    reader: Reader,
    refusal_said: bool,
}

/// `runner logs`' stream of [`Piece`]s (see the module doc).
pub struct Logs {
    spec: String,
    paths: SpecPaths,
    follow: bool,
    raw: bool,
    poll: Duration,
    /// Sessions to show before looking for newer ones.
    queue: VecDeque<String>,
    current: Option<Current>,
    /// The last session shown: newer ones are looked for after it.
    last: Option<String>,
    /// Every session shown, so that one whose folder is gone can be stepped past.
    seen: std::collections::HashSet<String>,
    /// The run followed, once known.
    run: Option<String>,
    /// The sessions folder's time when it was last listed.
    listed_at: Option<std::time::SystemTime>,
    next_liveness: Instant,
    /// A session of another run appeared: the followed one ended.
    other_run_began: bool,
    waiting_said: bool,
    /// How many sessions this stream began.
    shown: usize,
    pending: VecDeque<Piece>,
    ended: bool,
}

impl Logs {
    pub(super) fn new(
        spec: String,
        paths: SpecPaths,
        opts: LogsOptions,
        queue: VecDeque<String>,
        run: Option<String>,
        waiting_for_first: bool,
        after: Option<String>,
    ) -> Logs {
        let mut logs = Logs {
            spec,
            paths,
            follow: opts.follow,
            raw: opts.raw,
            poll: opts.poll,
            queue,
            current: None,
            last: after,
            seen: std::collections::HashSet::new(),
            run,
            listed_at: None,
            next_liveness: Instant::now(),
            other_run_began: false,
            waiting_said: false,
            shown: 0,
            pending: VecDeque::new(),
            ended: false,
        };
        if opts.follow && !waiting_for_first && opts.session.is_none() && opts.run.is_none() {
            logs.wait_for_a_newer_run();
        }
        logs
    }

    /// The spec whose sessions these are.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The next piece; following, it waits (looking every `poll`) until there is one, the run
    /// ends, or `stop` is set. `None`: the end.
    pub fn next(&mut self, stop: &AtomicBool) -> Option<Piece> {
        loop {
            if let Some(piece) = self.pending.pop_front() {
                return Some(piece);
            }
            if self.ended || stop.load(Ordering::SeqCst) {
                return None;
            }
            if self.current.is_some() {
                self.step_current();
            } else {
                self.step_between();
            }
        }
    }

    /// One look at the session shown: its new lines, or (nothing new) whether it ended.
    fn step_current(&mut self) {
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        let bytes = cur.log.read_lines();
        if !bytes.is_empty() {
            let piece = output(&cur.id, bytes, &mut cur.reader, self.raw, false);
            self.pending.push_back(piece);
            return;
        }
        if let Some(why) = cur.log.refused()
            && !cur.refusal_said
        {
            cur.refusal_said = true;
            self.pending.push_back(Piece::Unreadable {
                session_id: cur.id.clone(),
                why: why.to_string(),
            });
        }
        // Nothing more for now: gemini's text held back is shown.
        let held = cur.reader.flush();
        if !held.is_empty() {
            self.pending.push_back(Piece::Output {
                session_id: cur.id.clone(),
                bytes: Vec::new(),
                activities: held,
            });
        }
        if !self.follow || !self.queue.is_empty() {
            self.finish_current();
            return;
        }
        if let Some(next) = self.newer_session() {
            self.finish_current();
            self.start(next);
            return;
        }
        if self.run_over() {
            self.finish_current();
            self.ended = true;
            return;
        }
        std::thread::sleep(self.poll);
    }

    /// Between sessions: the next one to show, or (following) the one waited for.
    fn step_between(&mut self) {
        if let Some(id) = self.queue.pop_front() {
            self.start(id);
            return;
        }
        if !self.follow {
            self.ended = true;
            return;
        }
        if let Some(id) = self.newer_session() {
            self.start(id);
            return;
        }
        if self.run_over() {
            self.ended = true;
            return;
        }
        if !self.waiting_said {
            self.waiting_said = true;
            let what = match (&self.run, self.shown) {
                (Some(run), 0) => format!("waiting for the first session of run {run}"),
                (None, 0) => format!("waiting for the first session of spec {}", self.spec),
                _ => "waiting for the next session".to_string(),
            };
            self.pending.push_back(Piece::Waiting(what));
            return;
        }
        std::thread::sleep(self.poll);
    }

    fn start(&mut self, id: String) {
        let mut started: Started = sessions::started(&self.paths.dir, &id);
        if self.run.is_none() {
            self.run = started.run_id.clone();
        }
        started.run_id = started.run_id.or_else(|| self.run.clone());
        self.pending.push_back(Piece::Session(started));
        self.shown += 1;
        self.seen.insert(id.clone());
        self.current = Some(Current {
            log: SessionLog::new(&sessions::log_of(&self.paths.sessions_dir, &id)),
            id,
            reader: Reader::new(),
            refusal_said: false,
        });
    }

    /// The session shown has ended: the rest of its log, to its last line.
    fn finish_current(&mut self) {
        let Some(mut cur) = self.current.take() else {
            return;
        };
        loop {
            let bytes = cur.log.read_lines();
            if bytes.is_empty() {
                break;
            }
            let piece = output(&cur.id, bytes, &mut cur.reader, self.raw, false);
            self.pending.push_back(piece);
        }
        let rest = cur.log.rest();
        let piece = output(&cur.id, rest, &mut cur.reader, self.raw, true);
        if let Piece::Output {
            bytes, activities, ..
        } = &piece
            && !(bytes.is_empty() && activities.is_empty())
        {
            self.pending.push_back(piece);
        }
        self.last = Some(cur.id);
    }

    /// The session that started after the one shown (or the last shown), if the sessions
    /// folder changed since it was last listed and holds one (`sessions::list` gives them in
    /// the order they started). A session of another run than the followed one is not given:
    /// it means the followed run ended.
    fn newer_session(&mut self) -> Option<String> {
        let changed = std::fs::metadata(&self.paths.sessions_dir)
            .and_then(|m| m.modified())
            .ok();
        if changed.is_none() || changed == self.listed_at {
            return None;
        }
        let after = match &self.current {
            Some(cur) => Some(cur.id.clone()),
            None => self.last.clone(),
        };
        let ids = sessions::list(&self.paths.sessions_dir);
        let next = match after {
            Some(a) => match ids.iter().position(|id| *id == a) {
                Some(at) => ids.get(at + 1).cloned(),
                // The shown session's folder is gone (an agent may remove it): the first not
                // shown that started in its second or later (ids begin with their start time,
                // to the second; the list orders one second's sessions as they started).
                None => ids
                    .iter()
                    .find(|id| id.get(..16) >= a.get(..16) && !self.seen.contains(id.as_str()))
                    .cloned(),
            },
            // Nothing shown yet (waiting for the first session): the oldest.
            None => ids.first().cloned(),
        };
        let Some(next) = next else {
            self.listed_at = changed;
            return None;
        };
        // Its run, if the journal says already (it is written just after the folder).
        let run = sessions::started(&self.paths.dir, &next).run_id;
        if let (Some(theirs), Some(ours)) = (&run, &self.run)
            && theirs != ours
        {
            self.other_run_began = true;
            return None;
        }
        Some(next)
    }

    /// Whether the followed run has ended (looked at once a [`LIVENESS_EVERY`]); a run that
    /// stopped without ending is said (`RunGone`).
    fn run_over(&mut self) -> bool {
        if self.other_run_began {
            return true;
        }
        let now = Instant::now();
        if now < self.next_liveness {
            return false;
        }
        self.next_liveness = now + LIVENESS_EVERY;
        let record = self
            .run
            .as_deref()
            .and_then(|id| match runs::read(&self.paths.dir, id) {
                runs::Found::Record(r) => Some(r),
                _ => None,
            });
        if record.as_ref().is_some_and(|r| r.ended.is_some()) {
            return true;
        }
        match lock::probe(&self.paths.run_lock) {
            // Nobody runs the spec: the run is over, unless none was ever seen (waiting for
            // the first session of a run not started yet).
            Ok(LockState::Free) => {
                if self.run.is_none() && self.last.is_none() && self.current.is_none() {
                    return false;
                }
                if let Some(r) = record {
                    self.pending.push_back(Piece::RunGone(format!(
                        "run {} stopped without ending (killed or crashed: its lock is free); \
                         `{}` continues it",
                        r.run_id,
                        crate::policy::next_command::continue_command(&self.spec, None)
                    )));
                }
                true
            }
            Ok(LockState::Held(Some(holder))) => match &self.run {
                Some(ours) => holder.run_id != *ours,
                None => {
                    self.run = Some(holder.run_id);
                    false
                }
            },
            Ok(LockState::Held(None)) | Err(_) => false,
        }
    }

    /// Following the latest session while another run holds the spec's lock and has not
    /// started a session yet: that run's sessions are the live ones, waited for instead.
    fn wait_for_a_newer_run(&mut self) {
        let Ok(LockState::Held(Some(holder))) = lock::probe(&self.paths.run_lock) else {
            return;
        };
        let latest_run = self
            .queue
            .back()
            .and_then(|id| sessions::started(&self.paths.dir, id).run_id);
        if latest_run.is_some_and(|r| r != holder.run_id) {
            self.last = self.queue.pop_back();
            self.queue.clear();
            self.run = Some(holder.run_id);
        }
    }
}

/// The piece for `bytes` of session `id`'s log: whole lines, or (`last`) its last line.
fn output(id: &str, bytes: Vec<u8>, reader: &mut Reader, raw: bool, last: bool) -> Piece {
    let mut activities = Vec::new();
    if !raw {
        let whole = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        if !whole.is_empty() {
            for line in whole.split(|b| *b == b'\n') {
                activities.extend(reader.line(line));
            }
        }
        if last {
            activities.extend(reader.flush());
        }
    }
    Piece::Output {
        session_id: id.to_string(),
        bytes,
        activities,
    }
}
