//! Run records: one small JSON file per run (and per recover, merge, discard, undo that changed
//! something), `.auto-claude/specs/<spec>/runs/<run-id>.json`, so that `runner runs`, `runner
//! show` and `runner resume` can say which runs exist, what each was doing and whether it is
//! still alive.
//!
//! Advisory, like the journal: the truth about "is this run alive?" is its lock (a lock dies
//! with its process), and the truth about the work is the plan and the branch. A record that is
//! missing, garbled or forged (the spec's folder is one the agent may write) only means runner
//! knows less: what is read is checked, and a file that does not pass is reported and left
//! aside, never a panic. Written atomically (temp file, fsync, rename, fsync the folder).
//!
//! A run's file is written when it starts, at every heartbeat and chunk change, and when it
//! ends; the file name is the run id, so listing a spec's runs reads one folder and resolving
//! a run id (or a prefix of one) reads no file at all.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The folder under a spec's folder.
pub const RUNS_DIR: &str = "runs";

/// A record is well under a kilobyte; anything much larger is not one of ours.
const MAX_BYTES: u64 = 64 * 1024;

/// The longest text kept in a record's free-text fields (outcome, chunk, agent, host).
const MAX_FIELD: usize = 200;

/// What kind of work a run id stood for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `runner run` (also `runner resume` that continues a run, with `resumed_from` set).
    Run,
    Recover,
    Merge,
    Discard,
    Undo,
}

/// One run's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always 1 for this format.
    pub schema: u32,
    pub run_id: String,
    pub spec: String,
    pub kind: RunKind,
    pub started: DateTime<Utc>,
    /// Set when the run ended (any way it ends that runner sees; a killed run never sets it).
    #[serde(default)]
    pub ended: Option<DateTime<Utc>>,
    /// How it ended, in the words `runner run` uses for a spec's outcome (`complete`,
    /// `failed`, `interrupted`, `usage_limited`, `budget_exhausted`, `planned`, `merged`,
    /// `discarded`, `undone`, `recovered`, `error`, `cancelled`, `cut_off`, …); `None` while it
    /// runs or if it was killed.
    #[serde(default)]
    pub outcome: Option<String>,
    pub host: String,
    pub pid: u32,
    /// The last time the run said it was alive.
    pub heartbeat: DateTime<Utc>,
    /// The chunk being worked on (the last one, once the run ended).
    #[serde(default)]
    pub chunk: Option<String>,
    /// The agent: the preset's name, or `command` for a command line.
    #[serde(default)]
    pub agent: Option<String>,
    /// The run this one continues (`runner resume`).
    #[serde(default)]
    pub resumed_from: Option<String>,
    /// The slot (worktree name) the run worked in.
    #[serde(default)]
    pub slot: Option<String>,
}

impl RunRecord {
    /// A record for a run starting now in this process.
    pub fn starting(run_id: &str, spec: &str, kind: RunKind) -> RunRecord {
        let now = Utc::now();
        RunRecord {
            schema: 1,
            run_id: run_id.to_string(),
            spec: spec.to_string(),
            kind,
            started: now,
            ended: None,
            outcome: None,
            host: super::guard::hostname(),
            pid: std::process::id(),
            heartbeat: now,
            chunk: None,
            agent: None,
            resumed_from: None,
            slot: None,
        }
    }
}

/// What reading a run's record found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Nothing,
    Record(Box<RunRecord>),
    /// The file is there but not usable (why, naming the file): it is left aside.
    Unusable(String),
}

/// The runs folder of the spec whose folder is `spec_dir`.
pub fn dir(spec_dir: &Path) -> PathBuf {
    spec_dir.join(RUNS_DIR)
}

/// The record file of `run_id` (which must have the form of a run id: see `ids::is_run_id`).
pub fn path(spec_dir: &Path, run_id: &str) -> PathBuf {
    dir(spec_dir).join(format!("{run_id}.json"))
}

/// The run ids that have a record in `spec_dir`, in no particular order. Only names of the
/// form `<run id>.json` count; anything else in the folder is ignored.
pub fn list(spec_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir(spec_dir)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let id = name.to_str()?.strip_suffix(".json")?;
            super::ids::is_run_id(id).then(|| id.to_string())
        })
        .collect()
}

/// A folder held open, to look at files below it without walking its path again each time.
pub struct Folder(std::fs::File);

impl Folder {
    /// The folder at `path` (a link to one followed); `None` if it cannot be opened as one.
    pub fn open(path: &Path) -> Option<Folder> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .ok()
            .map(Folder)
    }

    /// What `symlink_metadata` says of `rel` below it (a link at its end not followed).
    pub fn stat(&self, rel: &str) -> Option<rustix::fs::Stat> {
        rustix::fs::statat(&self.0, rel, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()
    }

    /// The identity of the folder `rel` below it (`None`: missing, a link, not a folder).
    pub fn dir_identity(&self, rel: &str) -> Option<super::status_cache::Identity> {
        let st = self.stat(rel)?;
        (file_type(&st) == rustix::fs::FileType::Directory)
            .then(|| super::status_cache::Identity::from_stat(&st))
    }
}

fn file_type(st: &rustix::fs::Stat) -> rustix::fs::FileType {
    rustix::fs::FileType::from_raw_mode(st.st_mode as _)
}

/// What `symlink_metadata` of each record of `ids` in `spec_dir` says (`None`: it cannot be
/// stat'ed): its modification time, and its identity when it is a regular file. The runs
/// folder is opened once and each record stat'ed within it (a path walk per folder, not per
/// record).
pub fn stat_records(
    spec_dir: &Path,
    ids: &[String],
) -> Vec<Option<(std::time::SystemTime, Option<super::status_cache::Identity>)>> {
    let Some(folder) = Folder::open(&dir(spec_dir)) else {
        return vec![None; ids.len()];
    };
    ids.iter()
        .map(|id| {
            let st = folder.stat(&format!("{id}.json"))?;
            let identity = super::status_cache::Identity::from_stat(&st);
            let regular = file_type(&st) == rustix::fs::FileType::RegularFile;
            Some((identity.modified()?, regular.then_some(identity)))
        })
        .collect()
}

/// Where the spec's newest run records leave it (`policy::last_run`): its records read newest
/// first by when each was last written (a run rewrites its record at every heartbeat and at its
/// end), one at a time until one decides (usually the first). A record that cannot be read is
/// passed over: the records are advisory.
pub fn last_run(spec_dir: &Path) -> crate::policy::last_run::LastRun {
    deciding(spec_dir).map_or(crate::policy::last_run::LastRun::Unknown, |(last, _)| last)
}

/// The record of the agent run that left the spec interrupted (killed, stopped by a signal or
/// cut off), when the newest records say it is: what a run that takes it up resumes.
pub fn interrupted_run(spec_dir: &Path) -> Option<RunRecord> {
    match deciding(spec_dir)? {
        (crate::policy::last_run::LastRun::Interrupted, r) => Some(r),
        _ => None,
    }
}

/// The newest record that says where the spec stands, and what it says.
fn deciding(spec_dir: &Path) -> Option<(crate::policy::last_run::LastRun, RunRecord)> {
    use crate::policy::last_run::{Record, Work, decided_by};
    let ids = list(spec_dir);
    if ids.is_empty() {
        return None;
    }
    let times = stat_records(spec_dir, &ids);
    let mut by_time: Vec<(std::time::SystemTime, &String)> = ids
        .iter()
        .zip(times)
        .filter_map(|(id, t)| Some((t?.0, id)))
        .collect();
    by_time.sort_by(|a, b| b.cmp(a));
    // A record that names another spec is not this spec's (a copy, a forgery).
    let spec = spec_dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    by_time
        .into_iter()
        .find_map(|(_, id)| match read(spec_dir, id) {
            Found::Record(r) if r.spec == spec => {
                let record = Record {
                    work: match r.kind {
                        RunKind::Run => Work::Agent,
                        RunKind::Recover => Work::Recover,
                        RunKind::Merge | RunKind::Discard | RunKind::Undo => Work::Lifecycle,
                    },
                    ended: r.ended.is_some(),
                    outcome: r.outcome.clone(),
                };
                decided_by(&record).map(|last| (last, *r))
            }
            Found::Record(_) | Found::Nothing | Found::Unusable(_) => None,
        })
}

/// The record of `run_id` in `spec_dir`.
pub fn read(spec_dir: &Path, run_id: &str) -> Found {
    if !super::ids::is_run_id(run_id) {
        return Found::Nothing;
    }
    let path = path(spec_dir, run_id);
    let unusable = |why: String| Found::Unusable(format!("{}: {why}", path.display()));
    let bytes = match super::agent_memory::read_small(&path, MAX_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Found::Nothing,
        Err(why) => return unusable(why),
    };
    match serde_json::from_slice::<RunRecord>(&bytes) {
        Ok(r) => match check(&r, run_id) {
            Ok(()) => Found::Record(Box::new(r)),
            Err(why) => unusable(why),
        },
        Err(e) => unusable(format!("not a run record ({e})")),
    }
}

/// The record of run `run_id` of spec `spec`, whose folder is `spec_dir`: the one reader of run
/// records that `runner runs`, `runner show` and `runner resume` share, so that all three know
/// the same runs. A record that does not read, is not this run's, or names another spec than
/// the folder it is in is `Unusable`, saying why and that it is left aside (a file named like
/// a run id is no run until its record reads).
pub fn read_of(spec_dir: &Path, spec: &str, run_id: &str) -> Found {
    match read(spec_dir, run_id) {
        Found::Record(r) if r.spec != spec => Found::Unusable(format!(
            "{}: names spec {:?}, not {spec}; left aside",
            path(spec_dir, run_id).display(),
            r.spec
        )),
        Found::Unusable(why) => Found::Unusable(format!("{why}; left aside")),
        found => found,
    }
}

/// A record must be about the run its file names, in this format, with short fields.
fn check(r: &RunRecord, run_id: &str) -> Result<(), String> {
    if r.schema != 1 {
        return Err(format!("schema {} is not one this runner reads", r.schema));
    }
    if r.run_id != run_id {
        return Err(format!("names run {:?}, not {run_id}", r.run_id));
    }
    let fields = [
        Some(&r.spec),
        Some(&r.host),
        r.outcome.as_ref(),
        r.chunk.as_ref(),
        r.agent.as_ref(),
        r.resumed_from.as_ref(),
        r.slot.as_ref(),
    ];
    if fields.into_iter().flatten().any(|f| f.len() > MAX_FIELD) {
        return Err(format!("a field is longer than {MAX_FIELD} bytes"));
    }
    Ok(())
}

/// Write (or replace) a run's record, atomically and durably. A link in its place is
/// replaced, never written through.
pub fn write(spec_dir: &Path, record: &RunRecord) -> std::io::Result<()> {
    write_as(spec_dir, record, true)
}

/// [`write`] without an fsync: a heartbeat's or a chunk change's rewrite, whose loss after a
/// power cut only leaves the record a little older (a reader sees the old bytes or the new).
pub fn write_unsynced(spec_dir: &Path, record: &RunRecord) -> std::io::Result<()> {
    write_as(spec_dir, record, false)
}

fn write_as(spec_dir: &Path, record: &RunRecord, durable: bool) -> std::io::Result<()> {
    crate::store::safe::create_real_dirs(spec_dir, &[RUNS_DIR])?;
    let mut bytes = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let path = path(spec_dir, &record.run_id);
    match durable {
        true => crate::store::atomic::write_atomic_advisory(&path, &bytes),
        false => crate::store::atomic::write_unsynced(&path, &bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_read_back_listed_and_anything_else_is_left_aside() {
        let dir = tempfile::tempdir().unwrap();
        let id = crate::store::ids::run_id();
        assert_eq!(read(dir.path(), &id), Found::Nothing);
        assert!(list(dir.path()).is_empty());
        let mut record = RunRecord::starting(&id, "001-a", RunKind::Run);
        record.chunk = Some("subtask-1-1".into());
        write(dir.path(), &record).unwrap();
        assert_eq!(
            read(dir.path(), &id),
            Found::Record(Box::new(record.clone()))
        );
        std::fs::write(dir.path().join("runs/notes.json"), "{}").unwrap();
        std::fs::write(dir.path().join("runs/r0123.json"), "{}").unwrap();
        assert_eq!(list(dir.path()), vec![id.clone()]);

        // A record copied under another run's name is not that run's.
        let other = crate::store::ids::run_id();
        std::fs::copy(path(dir.path(), &id), path(dir.path(), &other)).unwrap();
        assert!(matches!(read(dir.path(), &other), Found::Unusable(w) if w.contains("names run")));
        // Garbage, a folder, a link.
        std::fs::write(path(dir.path(), &other), b"\xff{").unwrap();
        assert!(matches!(read(dir.path(), &other), Found::Unusable(_)));
        std::fs::remove_file(path(dir.path(), &other)).unwrap();
        std::fs::create_dir(path(dir.path(), &other)).unwrap();
        assert!(matches!(read(dir.path(), &other), Found::Unusable(_)));
        // An over-long field.
        record.chunk = Some("x".repeat(MAX_FIELD + 1));
        write(dir.path(), &record).unwrap();
        assert!(matches!(read(dir.path(), &id), Found::Unusable(w) if w.contains("longer")));
        // Not a run id: never a path outside the folder.
        assert_eq!(read(dir.path(), "../../etc/passwd"), Found::Nothing);
        // The shared reader: a record of another spec's, or one that does not read, is left
        // aside, saying so.
        record.chunk = None;
        write(dir.path(), &record).unwrap();
        assert!(matches!(
            read_of(dir.path(), "001-a", &id),
            Found::Record(_)
        ));
        assert!(
            matches!(read_of(dir.path(), "002-b", &id), Found::Unusable(w) if w.contains("names spec \"001-a\", not 002-b; left aside"))
        );
        std::fs::write(path(dir.path(), &id), b"garbage").unwrap();
        assert!(
            matches!(read_of(dir.path(), "001-a", &id), Found::Unusable(w) if w.ends_with("; left aside"))
        );
    }
}
