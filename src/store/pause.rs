//! A spec paused by its agent's usage limit: one small JSON file per spec,
//! `.auto-claude/pauses/<spec>.json` (`until`, `reason`, `preset`, `session_id`, `set_at`),
//! written atomically and durably, removed once a run goes past it.
//!
//! Kept in runner's own folder rather than in the plan or the spec's folder: a pause must be
//! stored when the planner hits the limit before any plan exists; `runner status` reads it
//! with one open per spec without parsing a plan; and the spec's folder is one the agent may
//! write (codex's sandbox is given it with `--add-dir`), where a forged pause could stop the
//! spec. Still, anything may have edited it: what is read is checked (a link in its place, a
//! file that is not one of ours, a time beyond `policy::pause::MAX_BELIEVED`), and a file that
//! does not pass is reported and ignored (the run goes on; if the agent is still limited, it
//! pauses again), never a panic.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The folder under `.auto-claude/`.
pub const PAUSES_DIR: &str = "pauses";

/// A pause is a few hundred bytes.
const MAX_BYTES: u64 = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pause {
    /// The spec is paused until then (RFC 3339, UTC).
    pub until: DateTime<Utc>,
    /// Why, in words (the CLI's, and where the time came from).
    pub reason: String,
    /// The agent preset that hit the limit.
    pub preset: String,
    /// runner's session that hit it.
    #[serde(default)]
    pub session_id: Option<String>,
    /// When runner wrote the pause.
    pub set_at: DateTime<Utc>,
}

/// What reading a spec's pause found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Nothing,
    Paused(Pause),
    /// A file is there but not usable (why, naming the file): it is ignored.
    Unusable(String),
}

pub fn path(state_dir: &Path, spec: &str) -> PathBuf {
    state_dir.join(PAUSES_DIR).join(format!("{spec}.json"))
}

/// The pause of `spec`, as of `now` (a time too far ahead is not believed).
pub fn read(state_dir: &Path, spec: &str, now: DateTime<Utc>) -> Found {
    let path = path(state_dir, spec);
    let unusable = |why: String| Found::Unusable(format!("{}: {why}", path.display()));
    let bytes = match super::agent_memory::read_small(&path, MAX_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Found::Nothing,
        Err(why) => return unusable(why),
    };
    match serde_json::from_slice::<Pause>(&bytes) {
        Ok(p) if !crate::policy::pause::believable(p.until, now) => unusable(format!(
            "a pause until {} is further ahead than runner ever pauses",
            p.until.to_rfc3339()
        )),
        Ok(p) => Found::Paused(p),
        Err(e) => unusable(format!("not a pause ({e})")),
    }
}

/// Pause `spec` (atomic and durable; a link in its place is replaced, never written through).
pub fn write(state_dir: &Path, spec: &str, pause: &Pause) -> std::io::Result<()> {
    crate::store::safe::create_real_dirs(state_dir, &[PAUSES_DIR])?;
    let mut bytes = serde_json::to_vec_pretty(pause).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    crate::store::atomic::write_atomic(&path(state_dir, spec), &bytes)
}

/// The pause of `spec` is over (or not usable): remove its file, or the link in its place.
/// Nothing there is not an error.
pub fn clear(state_dir: &Path, spec: &str) -> std::io::Result<()> {
    match crate::store::safe::remove(&path(state_dir, spec)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause(until: i64) -> Pause {
        Pause {
            until: DateTime::from_timestamp(until, 0).unwrap(),
            reason: "the agent hit its usage limit".into(),
            preset: "claude".into(),
            session_id: Some("s1".into()),
            set_at: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
        }
    }

    #[test]
    fn a_pause_is_read_back_and_anything_else_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        assert_eq!(read(dir.path(), "001-a", now), Found::Nothing);
        clear(dir.path(), "001-a").unwrap();
        write(dir.path(), "001-a", &pause(1_800_000_100)).unwrap();
        assert_eq!(
            read(dir.path(), "001-a", now),
            Found::Paused(pause(1_800_000_100))
        );
        let file = path(dir.path(), "001-a");
        for bad in [
            &b"{not json"[..],
            b"[]",
            b"\xff\xfe",
            br#"{"until":"yesterday","reason":"","preset":"x","set_at":"2026-01-01T00:00:00Z"}"#,
            br#"{"until":"2026-01-01T00:00:00Z","reason":"","preset":"x","set_at":"2026-01-01T00:00:00Z","evil":1}"#,
        ] {
            std::fs::write(&file, bad).unwrap();
            match read(dir.path(), "001-a", now) {
                Found::Unusable(why) => assert!(why.contains("001-a.json"), "{why}"),
                other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(bad)),
            }
        }
        // Absurdly far ahead: not believed.
        write(dir.path(), "001-a", &pause(1_800_000_000 + 9 * 86_400)).unwrap();
        assert!(matches!(read(dir.path(), "001-a", now), Found::Unusable(_)));
        std::fs::write(&file, vec![b' '; 20 * 1024]).unwrap();
        assert!(matches!(read(dir.path(), "001-a", now), Found::Unusable(_)));
        // A link planted there is not followed; clearing removes the link, not its target;
        // writing replaces the link, never writes through it.
        std::fs::remove_file(&file).unwrap();
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(
            &elsewhere,
            serde_json::to_vec(&pause(1_800_000_100)).unwrap(),
        )
        .unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        assert!(matches!(read(dir.path(), "001-a", now), Found::Unusable(_)));
        write(dir.path(), "001-a", &pause(1_800_000_200)).unwrap();
        assert!(!std::fs::symlink_metadata(&file).unwrap().is_symlink());
        assert_eq!(
            serde_json::from_slice::<Pause>(&std::fs::read(&elsewhere).unwrap()).unwrap(),
            pause(1_800_000_100)
        );
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        clear(dir.path(), "001-a").unwrap();
        assert!(elsewhere.exists());
        assert_eq!(read(dir.path(), "001-a", now), Found::Nothing);
    }
}
