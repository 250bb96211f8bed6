//! The agent a spec last ran with (`policy::agent_choice::Remembered`), so that `runner run
//! --spec X` continues with it. One small JSON file per spec, `.auto-claude/agents/<spec>.json`:
//! in runner's own folder rather than the spec's, which codex's sandbox may write (`--add-dir`)
//! and whose content would then choose the program the next run starts. Still, anything may
//! have edited it: what is read is checked, and a file that does not pass is reported and left
//! aside (the config decides), never a panic.

use std::path::{Path, PathBuf};

use crate::policy::agent_choice::Remembered;

/// The folder under `.auto-claude/`.
pub const AGENTS_DIR: &str = "agents";

/// A remembered agent is a few hundred bytes; anything much larger is not one of ours.
const MAX_BYTES: u64 = 64 * 1024;

/// What reading a spec's memory found.
#[derive(Debug, Clone, PartialEq)]
pub enum Recall {
    Nothing,
    Agent(Remembered),
    /// The file is there but not usable (why, naming the file): it is ignored.
    Unusable(String),
}

pub fn path(state_dir: &Path, spec: &str) -> PathBuf {
    state_dir.join(AGENTS_DIR).join(format!("{spec}.json"))
}

/// The remembered agent of `spec`.
pub fn recall(state_dir: &Path, spec: &str) -> Recall {
    let path = path(state_dir, spec);
    let unusable = |why: String| Recall::Unusable(format!("{}: {why}", path.display()));
    let bytes = match read_small(&path, MAX_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Recall::Nothing,
        Err(why) => return unusable(why),
    };
    let remembered: Remembered = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => return unusable(format!("not a remembered agent ({e})")),
    };
    match check(&remembered) {
        Ok(()) => Recall::Agent(remembered),
        Err(why) => unusable(why),
    }
}

/// The bytes of the small state file at `path` (`None`: there is none), or why it is not
/// usable: a link planted in its place (not followed: whoever planted it chose the content), not
/// a regular file, larger than `max` bytes, unreadable.
pub(crate) fn read_small(path: &Path, max: u64) -> Result<Option<Vec<u8>>, String> {
    // One lstat when there is no file (`runner status` asks for every spec).
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(crate::store::safe::link_refused(path).to_string());
        }
        Ok(_) => {}
    }
    let file = match crate::store::safe::open_read(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    match file.metadata() {
        Ok(m) if !m.is_file() => return Err("not a regular file".into()),
        Ok(m) if m.len() > max => return Err(format!("larger than {max} bytes")),
        Err(e) => return Err(e.to_string()),
        Ok(_) => {}
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, max + 1), &mut bytes)
        .map_err(|e| e.to_string())?;
    Ok(Some(bytes))
}

/// Remember `agent` for `spec` (atomic and durable).
pub fn remember(state_dir: &Path, spec: &str, remembered: &Remembered) -> std::io::Result<()> {
    crate::store::safe::create_real_dirs(state_dir, &[AGENTS_DIR])?;
    let mut bytes = serde_json::to_vec_pretty(remembered).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    crate::store::atomic::write_atomic(&path(state_dir, spec), &bytes)
}

/// Words a command line can carry: no NUL byte (exec refuses it), a program that is not empty.
fn check(r: &Remembered) -> Result<(), String> {
    for agent in std::iter::once(&r.agent).chain(r.config.as_ref()) {
        if agent.program.as_deref() == Some("") {
            return Err("an empty program".into());
        }
        let words = agent.program.iter().chain(agent.args.iter());
        if words.clone().any(|w| w.contains('\0')) {
            return Err("a NUL byte in the program or its arguments".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::agent_choice::AgentChoice;
    use crate::policy::invocation::{Permission, Preset};

    fn codex() -> Remembered {
        Remembered {
            agent: AgentChoice {
                preset: Preset::Codex,
                program: Some("/opt/codex".into()),
                args: vec!["-m".into(), "o3".into()],
                permission: Permission::Safe,
            },
            config: None,
        }
    }

    #[test]
    fn remembered_is_recalled_and_anything_else_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(recall(dir.path(), "001-a"), Recall::Nothing);
        remember(dir.path(), "001-a", &codex()).unwrap();
        assert_eq!(recall(dir.path(), "001-a"), Recall::Agent(codex()));
        let file = path(dir.path(), "001-a");
        for bad in [
            &b"{not json"[..],
            b"{\"agent\":{\"preset\":\"evil\"}}",
            b"{\"agent\":{\"preset\":\"claude\",\"program\":\"\"}}",
            b"{\"agent\":{\"preset\":\"claude\",\"args\":[\"a\\u0000b\"]}}",
            b"\xff\xfe",
            b"[]",
        ] {
            std::fs::write(&file, bad).unwrap();
            match recall(dir.path(), "001-a") {
                Recall::Unusable(why) => assert!(why.contains("001-a.json"), "{why}"),
                other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(bad)),
            }
        }
        std::fs::write(&file, vec![b' '; 70 * 1024]).unwrap();
        assert!(matches!(recall(dir.path(), "001-a"), Recall::Unusable(_)));
        // A link planted there is not followed.
        std::fs::remove_file(&file).unwrap();
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(&elsewhere, serde_json::to_vec(&codex()).unwrap()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        assert!(matches!(recall(dir.path(), "001-a"), Recall::Unusable(_)));
    }
}
