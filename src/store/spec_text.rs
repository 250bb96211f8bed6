//! What a spec says it is about, read cheaply for `runner new`'s detection (`ops::detect`):
//! its description and stored keywords (`requirements.json`, else `spec.md`), and when it was
//! last active (file times only).
//!
//! Every read is bounded and defensive: a file is opened with `O_NOFOLLOW | O_NONBLOCK` (a
//! symbolic link is not followed, wherever it leads; a FIFO never blocks), must be a regular
//! file, and at most a fixed number of bytes is read; bytes that are not UTF-8 are replaced.
//! Anything unreadable counts as absent: detection never fails because of one spec.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::SystemTime;

/// The file `runner new` (and Auto-Claude) writes beside `spec.md`.
pub const REQUIREMENTS_FILE: &str = "requirements.json";

/// The key of `requirements.json` under which runner stores a spec's keywords (an array of
/// strings).
pub const KEYWORDS_KEY: &str = "runner_keywords";

/// The key of `requirements.json` holding the spec's description.
pub const DESCRIPTION_KEY: &str = "task_description";

/// The most read of `requirements.json`: a larger file is not used (its JSON would be cut).
pub const MAX_REQUIREMENTS_BYTES: u64 = 64 * 1024;

/// The most read of `spec.md` (its beginning: the title and overview say what it is about).
pub const MAX_SPEC_MD_BYTES: u64 = 16 * 1024;

/// The most keywords taken from `runner_keywords`, and the longest one.
const MAX_STORED_KEYWORDS: usize = 512;
const MAX_KEYWORD_CHARS: usize = 64;

/// What a spec says of itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Said {
    /// `requirements.json`'s `task_description`, else `spec.md`'s text (its first
    /// `MAX_SPEC_MD_BYTES`); empty when neither is there.
    pub description: String,
    /// The description was cut at the read bound (it cannot be compared whole).
    pub cut: bool,
    /// `requirements.json`'s `runner_keywords`, when it holds an array of strings.
    pub keywords: Option<Vec<String>>,
}

/// The two fields detection reads of `requirements.json` (any others are skipped unread; a
/// field of another type is ignored, not an error).
#[derive(serde::Deserialize)]
struct Requirements {
    task_description: Option<serde_json::Value>,
    runner_keywords: Option<serde_json::Value>,
}

/// The first `max` bytes of the regular file at `path` (not through a link), and whether
/// there was more. `None` when it is absent, a link, not a regular file, or unreadable.
pub fn read_prefix(path: &Path, max: u64) -> Option<(Vec<u8>, bool)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    // One read for the bytes `fstat` promised (most files), then reads until the end or the
    // bound: a file that grew or shrank meanwhile is read as it is.
    let mut bytes = Vec::with_capacity(meta.len().min(max) as usize + 1);
    file.take(max + 1).read_to_end(&mut bytes).ok()?;
    let cut = bytes.len() as u64 > max;
    bytes.truncate(max as usize);
    Some((bytes, cut))
}

/// What the spec in `spec_dir` says of itself (see [`Said`]).
pub fn said(spec_dir: &Path) -> Said {
    let mut said = Said::default();
    let requirements = read_prefix(&spec_dir.join(REQUIREMENTS_FILE), MAX_REQUIREMENTS_BYTES)
        .filter(|(_, cut)| !cut)
        .and_then(|(bytes, _)| serde_json::from_slice::<Requirements>(&bytes).ok());
    if let Some(r) = requirements {
        if let Some(serde_json::Value::String(d)) = r.task_description {
            said.description = d;
        }
        if let Some(serde_json::Value::Array(words)) = r.runner_keywords {
            said.keywords = Some(
                words
                    .iter()
                    .filter_map(|w| w.as_str())
                    .filter(|w| w.chars().count() <= MAX_KEYWORD_CHARS)
                    .take(MAX_STORED_KEYWORDS)
                    .map(str::to_string)
                    .collect(),
            );
        }
    }
    if said.description.trim().is_empty()
        && let Some((bytes, cut)) = read_prefix(&spec_dir.join("spec.md"), MAX_SPEC_MD_BYTES)
    {
        said.description = String::from_utf8_lossy(&bytes).into_owned();
        said.cut = cut;
    }
    said
}

/// `t` in UTC; `None` when it is outside the times chrono can hold (a file time set millions
/// of years away: tmpfs and other file systems keep one as it is given).
pub fn utc(t: SystemTime) -> Option<chrono::DateTime<chrono::Utc>> {
    let epoch = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => epoch.checked_add_signed(chrono::TimeDelta::from_std(after).ok()?),
        Err(before) => {
            epoch.checked_sub_signed(chrono::TimeDelta::from_std(before.duration()).ok()?)
        }
    }
}

/// `t` in UTC, a time beyond what chrono can hold taken as its latest (or earliest) time.
pub fn utc_clamped(t: SystemTime) -> chrono::DateTime<chrono::Utc> {
    utc(t).unwrap_or(if t > SystemTime::UNIX_EPOCH {
        chrono::DateTime::<chrono::Utc>::MAX_UTC
    } else {
        chrono::DateTime::<chrono::Utc>::MIN_UTC
    })
}

/// When the spec in `spec_dir` was last active: the newest modification time of its folder,
/// `implementation_plan.json`, `checkpoint.json`, the journal (the live `events.jsonl`, else
/// its newest segment), the `runs/` folder (a run record written is a file renamed there),
/// `spec.md` and `requirements.json`. File times only (a `stat` each, no read); links are not
/// followed; a time [`utc`] cannot hold is left out. `None` when none of them is there.
pub fn last_activity(spec_dir: &Path) -> Option<SystemTime> {
    let stat = |p: &Path| {
        std::fs::symlink_metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .filter(|t| utc(*t).is_some())
    };
    [
        stat(spec_dir),
        stat(&spec_dir.join(crate::plan::PLAN_FILE)),
        stat(&crate::store::checkpoint::path(spec_dir)),
        crate::store::segments::modified(spec_dir).filter(|t| utc(*t).is_some()),
        stat(&crate::store::runs::dir(spec_dir)),
        stat(&spec_dir.join("spec.md")),
        stat(&spec_dir.join(REQUIREMENTS_FILE)),
    ]
    .into_iter()
    .flatten()
    .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_give_the_description_and_keywords() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(REQUIREMENTS_FILE),
            r#"{"task_description":"Add login","runner_keywords":["auth","login",7]}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("spec.md"), "something else").unwrap();
        let s = said(dir.path());
        assert_eq!(s.description, "Add login");
        assert_eq!(s.keywords, Some(vec!["auth".into(), "login".into()]));
        assert!(!s.cut);
        // A field of another type is ignored, the other still read; so is a top level that
        // is not an object.
        std::fs::write(
            dir.path().join(REQUIREMENTS_FILE),
            r#"{"task_description":7,"runner_keywords":["auth"],"services":[1,{"a":null}]}"#,
        )
        .unwrap();
        let s = said(dir.path());
        assert_eq!(s.description, "something else");
        assert_eq!(s.keywords, Some(vec!["auth".into()]));
        std::fs::write(dir.path().join(REQUIREMENTS_FILE), "[1]").unwrap();
        assert_eq!(said(dir.path()).keywords, None);
    }

    #[test]
    fn without_a_description_spec_md_is_read_bounded_and_lossily() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(REQUIREMENTS_FILE), r#"{"other":1}"#).unwrap();
        let mut text = b"Export \xff csv ".to_vec();
        text.extend(std::iter::repeat_n(b'x', 100_000));
        std::fs::write(dir.path().join("spec.md"), &text).unwrap();
        let s = said(dir.path());
        assert!(s.cut);
        assert_eq!(s.keywords, None);
        assert_eq!(s.description.len(), MAX_SPEC_MD_BYTES as usize + 2);
        assert!(s.description.starts_with("Export \u{FFFD} csv "));
    }

    #[test]
    fn broken_huge_or_linked_files_count_as_absent() {
        let dir = tempfile::tempdir().unwrap();
        // Not JSON, then JSON too large to read whole.
        std::fs::write(dir.path().join(REQUIREMENTS_FILE), "{not json").unwrap();
        assert_eq!(said(dir.path()), Said::default());
        let big = format!(
            r#"{{"task_description":"x","pad":"{}"}}"#,
            "p".repeat(MAX_REQUIREMENTS_BYTES as usize)
        );
        std::fs::write(dir.path().join(REQUIREMENTS_FILE), big).unwrap();
        assert_eq!(said(dir.path()), Said::default());
        // A link is not followed, wherever it leads.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "secret words").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.path().join("spec.md"))
            .unwrap();
        assert_eq!(said(dir.path()), Said::default());
        // A FIFO does not block.
        std::fs::remove_file(dir.path().join(REQUIREMENTS_FILE)).unwrap();
        let fifo = std::ffi::CString::new(
            dir.path()
                .join(REQUIREMENTS_FILE)
                .to_str()
                .unwrap()
                .as_bytes(),
        )
        .unwrap();
        let fifo_mode = rustix::fs::Mode::from_raw_mode(0o600);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            fifo.as_c_str(),
            rustix::fs::FileType::Fifo,
            fifo_mode,
            0,
        )
        .unwrap();
        assert_eq!(said(dir.path()), Said::default());
    }

    #[test]
    fn file_times_out_of_chronos_range_are_none_not_a_panic() {
        let far = std::time::Duration::from_secs(100_000_000_000_000);
        assert_eq!(utc(SystemTime::UNIX_EPOCH + far), None);
        assert_eq!(utc(SystemTime::UNIX_EPOCH - far), None);
        assert_eq!(
            utc_clamped(SystemTime::UNIX_EPOCH + far),
            chrono::DateTime::<chrono::Utc>::MAX_UTC
        );
        assert_eq!(
            utc_clamped(SystemTime::UNIX_EPOCH - far),
            chrono::DateTime::<chrono::Utc>::MIN_UTC
        );
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_500);
        assert_eq!(utc(t), Some(chrono::DateTime::<chrono::Utc>::from(t)));
        let t = SystemTime::UNIX_EPOCH - std::time::Duration::from_millis(1_500);
        assert_eq!(utc(t), Some(chrono::DateTime::<chrono::Utc>::from(t)));
    }

    #[test]
    fn last_activity_is_the_newest_time_of_the_spec_files() {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("001-a");
        std::fs::create_dir(&spec).unwrap();
        std::fs::write(spec.join("spec.md"), "x").unwrap();
        let old = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let newer = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(2_000_000);
        let set = |p: &Path, t: SystemTime| {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(t)
                .unwrap()
        };
        set(&spec.join("spec.md"), old);
        std::fs::File::open(&spec)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(last_activity(&spec), Some(old));
        std::fs::write(crate::store::checkpoint::path(&spec), "{}").unwrap();
        set(&crate::store::checkpoint::path(&spec), newer);
        std::fs::File::open(&spec)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(last_activity(&spec), Some(newer));
        assert_eq!(last_activity(&dir.path().join("none")), None);
    }
}
