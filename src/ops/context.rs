//! The context every operation works in, opened once per command by the front end: the
//! workspace (the repository, found from the folder the command started in), the clock, where
//! progress goes, and how the front end names a spec in a message. Every operation has the
//! shape `ops::<command>(&Ctx, <Command>Options[, asker]) -> Result<<Command>Report>`.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use chrono::{DateTime, Utc};

use crate::engine::progress::{ProgressSink, Silent};
use crate::error::RunnerError;
use crate::policy::spec_choice::{Matching, SpecChoice};
use crate::store::workspace::{SpecPaths, Workspace};
use crate::store::{FileLock, Journal, guard};

use super::person::Person;

/// How a front end names spec `name` to a person: the command that does the same on it
/// (`runner review --spec 001-x` on the command line, `review_spec {"spec": …}` over MCP).
pub type SpecCommand = Box<dyn Fn(&str) -> String>;

/// One command's view of the repository. Not `Send`: an MCP tool opens its own on the thread
/// that runs the operation.
pub struct Ctx {
    pub ws: Workspace,
    /// The folder the command started in: the slot it is in names a spec.
    pub cwd: PathBuf,
    now: Option<DateTime<Utc>>,
    progress: Rc<dyn ProgressSink>,
    spec_command: SpecCommand,
}

impl Ctx {
    /// Open the repository that `cwd` is in: silent progress, the system's clock, specs named
    /// as `--spec NAME`.
    pub fn open(cwd: &Path) -> anyhow::Result<Ctx> {
        Ok(Ctx {
            ws: Workspace::open(cwd)?,
            cwd: cwd.to_path_buf(),
            now: None,
            progress: Rc::new(Silent),
            spec_command: Box::new(|spec| format!("--spec {}", crate::sh(spec))),
        })
    }

    /// Progress goes to `sink`.
    pub fn with_progress(mut self, sink: Rc<dyn ProgressSink>) -> Ctx {
        self.progress = sink;
        self
    }

    /// Messages name a spec as `command` does.
    pub fn with_spec_command(mut self, command: SpecCommand) -> Ctx {
        self.spec_command = command;
        self
    }

    /// The clock stands at `now` (tests of what depends on the time).
    pub fn at(mut self, now: DateTime<Utc>) -> Ctx {
        self.now = Some(now);
        self
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.now.unwrap_or_else(Utc::now)
    }

    pub fn progress(&self) -> &Rc<dyn ProgressSink> {
        &self.progress
    }

    /// The command that does the same on spec `name`, as the front end spells it.
    pub fn spec_command(&self, name: &str) -> String {
        (self.spec_command)(name)
    }

    /// The spec `query` names (fuzzy, as everywhere), the slot the command runs in, or the
    /// only one; an open choice is asked of `person` where it can ask, else an error that
    /// lists the command for each candidate (exit 2).
    pub fn spec_name(&self, query: Option<&str>, person: &dyn Person) -> anyhow::Result<String> {
        self.spec_name_with(query, person, Matching::Loose)
    }

    /// The spec `query` names, for a command that reports rather than acts (status, runs,
    /// recover, chunk, undo --list): nobody is asked; several matches are an error listing
    /// the command for each.
    pub fn spec_named(&self, query: &str) -> anyhow::Result<String> {
        self.spec_name(Some(query), &super::Nobody)
    }

    /// The spec a command that changes it (merge, discard, undo) acts on: as
    /// [`Ctx::spec_name`], but `query` must name it clearly (exact name, number or a part of
    /// its name as written), never a loose reading of it.
    pub fn spec_to_change(
        &self,
        query: Option<&str>,
        person: &dyn Person,
    ) -> anyhow::Result<String> {
        self.spec_name_with(query, person, Matching::Strict)
    }

    fn spec_name_with(
        &self,
        query: Option<&str>,
        person: &dyn Person,
        matching: Matching,
    ) -> anyhow::Result<String> {
        let mut choice = crate::store::spec::choose_with(&self.ws, &self.cwd, query, matching)?;
        // A list of every spec to choose from leaves out the merged and discarded ones (as
        // `status` does), while any other is left; named, they are found as always.
        if let SpecChoice::NotSaid { candidates } = &mut choice {
            let open: Vec<String> = candidates
                .iter()
                .filter(|n| !super::status::is_finished(&self.ws, n))
                .cloned()
                .collect();
            if !open.is_empty() {
                *candidates = open;
            }
        }
        let (title, candidates) = match &choice {
            SpecChoice::One(name) => return Ok(name.clone()),
            SpecChoice::SeveralMatch { query, candidates } => {
                (format!("{query:?} matches several specs:"), candidates)
            }
            SpecChoice::NotSaid { candidates } => {
                ("Which spec? (--spec names one)".to_string(), candidates)
            }
            _ => return Err(self.explain(&choice).into()),
        };
        match person.pick_spec(&title, candidates)? {
            Some(i) if i < candidates.len() => Ok(candidates[i].clone()),
            _ => Err(self.explain(&choice).into()),
        }
    }

    /// The error for a choice that is not one spec, naming the command for each candidate.
    fn explain(&self, choice: &SpecChoice) -> RunnerError {
        crate::store::spec::explain(&self.ws.specs_dir, choice, &|s| self.spec_command(s))
    }

    /// The spec guard of a command that changes a spec (merge, discard, undo): the spec
    /// resolved strictly ([`Ctx::spec_to_change`]), its run lock taken (exit 4 if a runner holds it: `what` did not start), and
    /// a journal under a run id of its own.
    pub fn spec_guard(
        &self,
        query: Option<&str>,
        person: &dyn Person,
        what: &str,
    ) -> anyhow::Result<SpecGuard> {
        let name = self.spec_to_change(query, person)?;
        let paths = self.ws.spec(&name)?;
        let run_id = crate::store::ids::run_id();
        let holder = guard::new_holder(&run_id, Some(&name));
        // A moment, not one try: `status` and other probes hold this lock for an instant, and a
        // merge started then must not be refused naming a run that ended long ago.
        let lock = guard::take(&paths.run_lock, &holder, guard::Patience::Moment, || {
            format!("spec {name} is being run, so {what} did not start (nothing was changed)")
        })?;
        let journal = Journal::new(&paths.dir, &run_id);
        Ok(SpecGuard {
            paths,
            journal,
            _lock: lock,
        })
    }
}

/// A spec held for a command that changes it; the lock is let go when this is dropped.
pub struct SpecGuard {
    pub paths: SpecPaths,
    pub journal: Journal,
    _lock: FileLock,
}
