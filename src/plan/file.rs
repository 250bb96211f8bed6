//! The plan on disk: read, and read-modify-write under the short plan lock with a durable
//! atomic replace. A file that does not parse is never written over.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;

use super::layout::{self, Remembered};
use super::{Plan, PlanError, parse_plan, plan_to_bytes};
use crate::fs::{FileLock, write_atomic};

pub const PLAN_FILE: &str = "implementation_plan.json";
pub const LAST_GOOD_FILE: &str = "implementation_plan.json.last-good";
const PLAN_LOCK_FILE: &str = "plan.lock";

/// Where the planner writes its plan, relative to the worktree it runs in: inside the only
/// folder every agent CLI may write (claude's, gemini's and aider's file tools are confined to
/// it, codex's sandbox too), in `.auto-claude/`, which git ignores there as in the main
/// checkout (`/.auto-claude/` in the shared `info/exclude`), so no chunk commit takes it.
/// runner validates it and installs it as the spec's plan (`engine::run::planner`).
pub const PLAN_DRAFT: &str = ".auto-claude/plan-draft.json";

/// The planner's draft in `worktree`.
pub fn draft_path(worktree: &Path) -> PathBuf {
    worktree.join(PLAN_DRAFT)
}

/// The bytes of a regular file at `path` (a link to one is followed). Anything else — a FIFO,
/// a device, a folder — is refused with `InvalidInput` without blocking: the file is opened
/// non-blocking and checked with fstat before a byte is read (a FIFO opened for reading would
/// otherwise wait for a writer forever).
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, device or folder); runner will not read it",
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[derive(Debug, Clone)]
pub struct PlanFile {
    path: PathBuf,
    lock_path: PathBuf,
    last_good: PathBuf,
    /// The last plan read, when its file is exactly what runner writes for it: a run reads the
    /// plan several times a chunk, most often unchanged. Shared by the clones of this value.
    last_read: Arc<Mutex<Option<Remembered>>>,
}

/// Plans up to this size are remembered (a copy in memory); longer ones are read each time,
/// so that a long plan is not held twice.
const REMEMBER_MAX_BYTES: usize = 8 << 20;

impl PlanFile {
    pub fn in_spec_dir(spec_dir: &Path) -> PlanFile {
        PlanFile {
            path: spec_dir.join(PLAN_FILE),
            lock_path: spec_dir.join(PLAN_LOCK_FILE),
            last_good: spec_dir.join(LAST_GOOD_FILE),
            last_read: Arc::default(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The copy of the last plan runner wrote, for restoring a plan broken later.
    pub fn last_good_path(&self) -> &Path {
        &self.last_good
    }

    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    /// `Ok(None)` if there is no plan yet; a `PlanError` inside the error if it is invalid.
    pub fn load(&self) -> anyhow::Result<Option<Plan>> {
        let bytes = match crate::fs::safe::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                return Err(crate::error::RunnerError::bad_input(format!(
                    "{}: {e}; move it away and put the plan file back (runner keeps a copy at {})",
                    self.path.display(),
                    self.last_good.display()
                ))
                .into());
            }
            Err(e) => {
                return Err(e).with_context(|| format!("reading {}", self.path.display()));
            }
        };
        Ok(Some(self.parse(bytes)?))
    }

    /// Parse, and say each warning about the file on stderr (once per process: a run reads
    /// the plan many times).
    ///
    /// Bytes that are exactly what the last plan read writes are that plan: parsing them again
    /// would give the same plan (parsing is deterministic), so a copy of it is returned.
    fn parse(&self, mut bytes: Vec<u8>) -> Result<Plan, PlanError> {
        let mut last = self.last_read.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = last.as_ref() {
            if known.bytes == bytes {
                return Ok(known.plan.clone());
            }
            // Most often one chunk changed since (an agent's report): read only that one. Not
            // past the cut-off: the answer is remembered with its bytes.
            let quick = match bytes.len() <= REMEMBER_MAX_BYTES {
                true => super::reread::one_chunk_changed(known, bytes),
                false => Err(bytes),
            };
            match quick {
                Ok(now) => {
                    let plan = now.plan.clone();
                    *last = Some(now);
                    return Ok(plan);
                }
                Err(given_back) => bytes = given_back,
            }
        }
        let plan = parse_plan(&self.path, &bytes)?;
        warn_once(&self.path, &plan.warnings);
        // Only a plan whose bytes it writes back unchanged: then the bytes it is compared with
        // later are the very bytes it was parsed from.
        // The bytes are kept, not copied (a long plan's are dropped here).
        *last = (bytes.len() <= REMEMBER_MAX_BYTES && plan.warnings.is_empty())
            .then(|| Remembered::if_writes(plan.clone(), bytes))
            .flatten();
        Ok(plan)
    }

    /// Load, change, save, all under the plan lock. `f` sees the freshest plan (an agent may
    /// have changed it through `runner chunk …`). Nothing is written if `f` fails or the plan is
    /// missing or invalid.
    pub fn update<T>(&self, f: impl FnOnce(&mut Plan) -> anyhow::Result<T>) -> anyhow::Result<T> {
        self.update_if(|plan| Ok((f(plan)?, true)))
    }

    /// Like `update`, but `f` says whether it changed anything; an unchanged plan is not
    /// rewritten (a write costs fsyncs).
    pub fn update_if<T>(
        &self,
        f: impl FnOnce(&mut Plan) -> anyhow::Result<(T, bool)>,
    ) -> anyhow::Result<T> {
        let _lock = FileLock::acquire(&self.lock_path)
            .with_context(|| format!("locking {}", self.lock_path.display()))?;
        let no_plan = || {
            crate::error::RunnerError::bad_input(format!("no plan at {}", self.path.display()))
                .with_hint("run `runner run` to have the planner write one")
        };
        let mut file = match crate::fs::safe::open_read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(no_plan().into()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", self.path.display())),
        };
        let mut plan = {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut bytes)
                .with_context(|| format!("reading {}", self.path.display()))?;
            drop(file);
            // The bytes go before the plan is changed and written: a long plan is not held
            // three times (bytes, plan, new bytes).
            self.parse(bytes)?
        };
        let (out, changed) = f(&mut plan)?;
        if changed {
            let (written, spans) = self.write(&plan)?;
            // A valid plan changed by runner's own steps: what the next read would parse.
            self.remember_written(&plan, written, spans);
        }
        Ok(out)
    }

    /// `f` of the bytes `plan` writes: those of the plan remembered when it is the same plan
    /// (neither serialised nor copied), else serialised.
    pub fn with_bytes_of<T>(&self, plan: &Plan, f: impl FnOnce(&[u8]) -> T) -> T {
        let last = self.last_read.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_ref() {
            Some(known) if known.plan.same_json(plan) && plan.warnings.is_empty() => {
                f(&known.bytes)
            }
            _ => {
                drop(last);
                f(&plan_to_bytes(plan))
            }
        }
    }

    /// Replace the whole plan (a restore, an undo) under the plan lock, whatever is there now —
    /// even a file that does not parse, which is why this does not go through `update`.
    pub fn replace(&self, plan: &Plan) -> anyhow::Result<()> {
        let _lock = FileLock::acquire(&self.lock_path)
            .with_context(|| format!("locking {}", self.lock_path.display()))?;
        self.write(plan).map(drop)
    }

    /// Under the plan lock: read the plan as it is (missing, invalid or valid) and let `f`
    /// decide what to write instead (`None`: leave the file alone). For putting right a plan
    /// someone changed behind runner's back, without racing `runner chunk …`.
    pub fn settle<T>(
        &self,
        f: impl FnOnce(anyhow::Result<Option<Plan>>) -> anyhow::Result<(Option<Plan>, T)>,
    ) -> anyhow::Result<T> {
        let _lock = FileLock::acquire(&self.lock_path)
            .with_context(|| format!("locking {}", self.lock_path.display()))?;
        let (plan, out) = f(self.load())?;
        if let Some(plan) = plan {
            self.write(&plan)?;
        }
        Ok(out)
    }

    /// Replace the file durably (temp file, fsync, rename, fsync of the folder); the bytes
    /// written and their chunks' spans. Callers hold the plan lock.
    fn write(&self, plan: &Plan) -> anyhow::Result<(Vec<u8>, Vec<layout::Span>)> {
        tracing::debug!(path = %self.path.display(), chunks = plan.total(), "writing plan");
        let (bytes, spans) = self.bytes_to_write(plan);
        write_atomic(&self.path, &bytes)
            .with_context(|| format!("writing {}", self.path.display()))?;
        // The last-good copy is overwritten in place, without a rename or an fsync: replacing
        // a file frees its blocks, which doubled the cost of a plan write on our CI disk. A
        // torn copy (a crash in the middle of this) only matters if the plan itself is also
        // broken before the next write, and recovery checks that the copy parses before use.
        if let Err(e) = crate::fs::safe::overwrite(&self.last_good, &bytes) {
            tracing::warn!(path = %self.last_good.display(), error = %e, "could not update the last-good copy of the plan");
        }
        Ok((bytes, spans))
    }

    /// `plan_to_bytes(plan)` and its chunks' spans: the remembered plan's bytes with the
    /// changed chunks' texts replaced when only chunks changed (`layout::splice`), else the
    /// plan serialised whole.
    fn bytes_to_write(&self, plan: &Plan) -> (Vec<u8>, Vec<layout::Span>) {
        let last = self.last_read.lock().unwrap_or_else(|e| e.into_inner());
        let spliced = last.as_ref().and_then(|known| layout::splice(known, plan));
        drop(last);
        let out = spliced.unwrap_or_else(|| layout::bytes_and_spans(plan));
        debug_assert!(
            out.0 == plan_to_bytes(plan),
            "the plan's bytes differ from plan_to_bytes"
        );
        out
    }
}

impl PlanFile {
    /// Is a plan remembered (for tests of the cut-off)?
    #[cfg(test)]
    pub(super) fn remembers_a_plan(&self) -> bool {
        self.last_read.lock().is_ok_and(|last| last.is_some())
    }

    /// Remember the plan just written: reading its bytes back would give it again. Parsing
    /// those bytes gives the same ids, statuses, fields and lists (with no warning: both lists
    /// of a phase are written equal), except which of a phase's two lists counts as read when
    /// the plan read `chunks` over an empty `subtasks`: such a plan is read anew.
    /// `written` is the file's bytes (`size_hint` guesses chunks held as fields, which may be
    /// far longer).
    fn remember_written(&self, plan: &Plan, written: Vec<u8>, spans: Vec<layout::Span>) {
        let orientation_kept = plan.phases.iter().all(|p| p.mirror_key != Some("subtasks"));
        let mut last = self.last_read.lock().unwrap_or_else(|e| e.into_inner());
        let remembered = (written.len() <= REMEMBER_MAX_BYTES && orientation_kept).then(|| {
            let mut plan = Plan {
                warnings: Vec::new(),
                ..plan.clone()
            };
            // Each chunk runner changed is made text again: its text at its place, the very
            // bytes of its span, so the spans stay as they are.
            super::reread::keep_as_text(&mut plan);
            debug_assert!(layout::spans_if_writes(&plan, &written).as_ref() == Some(&spans));
            let valid = valid_after_write(last.as_ref(), &plan);
            Remembered {
                plan,
                bytes: written,
                spans,
                valid,
            }
        });
        *last = remembered;
    }
}

/// Does `plan` (just written) keep the plan's rules? When the plan remembered before kept them
/// and `plan` has the same phases (keys, dependencies) and the same chunk ids in the same
/// places, it does (`validate::check` reads no more of a plan); else it is checked whole.
fn valid_after_write(before: Option<&Remembered>, plan: &Plan) -> bool {
    let same_rules = |known: &Remembered| {
        let old = &known.plan;
        known.valid
            && old.phases.len() == plan.phases.len()
            && old.phases.iter().zip(&plan.phases).all(|(a, b)| {
                a.key == b.key
                    && a.depends_on == b.depends_on
                    && (std::sync::Arc::ptr_eq(&a.chunks, &b.chunks)
                        || a.chunks.len() == b.chunks.len()
                            && a.chunks
                                .iter()
                                .zip(b.chunks.iter())
                                .all(|(x, y)| x.shares_text_with(y) || x.id == y.id))
            })
    };
    before.is_some_and(same_rules) || {
        let mut problems = Vec::new();
        super::validate::check(plan, &mut problems);
        problems.is_empty()
    }
}

fn warn_once(path: &Path, warnings: &[String]) {
    // `output::warn` says each line once per process and hands it to the front end.
    for warning in warnings {
        crate::output::warn(&format!("plan {}: {warning}", path.display()));
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
