//! Where everything lives for one repository: `.auto-claude/`, its specs, its config.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::{CONFIG_FILE, Config, ConfigFiles};
use crate::git::MainRepo;
use crate::plan::PlanFile;

/// Where a folder that is a link (already checked to stay inside the repository) really is;
/// any other path as it is.
fn real_location(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

pub const STATE_DIR: &str = ".auto-claude";

/// A spec's folder of session folders (logs, prompts, failure records).
pub const SESSIONS_DIR: &str = "sessions";

pub struct Workspace {
    pub main: MainRepo,
    pub root: PathBuf,
    pub state_dir: PathBuf,
    pub specs_dir: PathBuf,
}

/// The files of one spec.
#[derive(Debug, Clone)]
pub struct SpecPaths {
    pub name: String,
    pub dir: PathBuf,
    pub plan: PlanFile,
    pub spec_md: PathBuf,
    pub run_lock: PathBuf,
    pub sessions_dir: PathBuf,
}

impl SpecPaths {
    /// The folder of session `id`, created (with `sessions/`) as real folders: a link planted
    /// there is refused rather than written through.
    pub fn session_dir(&self, id: &str) -> std::io::Result<PathBuf> {
        crate::store::safe::create_real_dirs(&self.dir, &[SESSIONS_DIR, id])
    }
}

impl Workspace {
    pub fn open(cwd: &Path) -> anyhow::Result<Workspace> {
        // Counted by a test: every command opens its workspace once (`ops::Ctx`).
        tracing::debug!("opening the workspace of {}", cwd.display());
        let main = MainRepo::discover(cwd)?;
        let root = main.root.clone();
        let state_dir = root.join(STATE_DIR);
        let mut ws = Workspace {
            specs_dir: state_dir.join("specs"),
            state_dir,
            root,
            main,
        };
        ws.check_links()?;
        // From here on every write below the root is resolved from a handle on it, refusing
        // any link on the way (`store::safe`); so the folders the user may link inside the
        // repository are replaced by where they really are, once, now.
        crate::store::safe::anchor(&ws.root)
            .with_context(|| format!("opening {}", ws.root.display()))?;
        ws.state_dir = real_location(&ws.state_dir);
        ws.specs_dir = real_location(&ws.state_dir.join("specs"));
        Ok(ws)
    }

    /// The config: the user's file under the repository's (defaults without either); unknown
    /// keys are warned of (`output::warn`).
    pub fn config(&self) -> anyhow::Result<Config> {
        Ok(crate::config::load(&self.config_files())?.config)
    }

    /// The files the config is read from: the user's and the repository's.
    pub fn config_files(&self) -> ConfigFiles {
        ConfigFiles::of_repository(self.config_path())
    }

    /// `.auto-claude/config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.state_dir.join(CONFIG_FILE)
    }

    /// The files of spec `name`. The one way a spec is opened: its folder may be a link only
    /// to a place inside the repository (see `store::safe`), and is then used where it really
    /// is, so no command can skip that check.
    pub fn spec(&self, name: &str) -> Result<SpecPaths, crate::error::RunnerError> {
        spec_paths(&self.root, &self.specs_dir, name)
    }

    /// Held by whoever changes the main worktree's files, index or checked-out branch (a merge
    /// into the checked-out target, an undo of one, recovery of either): two at once would
    /// write over each other's index.
    pub fn main_worktree_lock(&self) -> PathBuf {
        self.state_dir.join("main-worktree.lock")
    }

    pub fn slot_lock(&self, slot_name: &str) -> PathBuf {
        self.state_dir
            .join("slots")
            .join(format!("{slot_name}.lock"))
    }

    /// Present while a slot switches branches (see `Slot::switch_to`).
    pub fn slot_switch_marker(&self, slot_name: &str) -> PathBuf {
        self.state_dir
            .join("slots")
            .join(format!("{slot_name}.switching"))
    }

    /// Marks a slot's creation under way (see `Slot::create`).
    pub fn slot_create_marker(&self, slot_name: &str) -> PathBuf {
        self.state_dir
            .join("slots")
            .join(format!("{slot_name}.creating"))
    }

    /// Refuse `.auto-claude/`, its `specs/` or `.worktrees/` as a link leading outside the
    /// repository, and `slots/` (runner's own) as any link: runner writes below them.
    fn check_links(&self) -> Result<(), crate::error::RunnerError> {
        crate::store::safe::check_link_inside(&self.root, &self.state_dir)?;
        crate::store::safe::check_link_inside(&self.root, &self.specs_dir)?;
        let slots = self.root.join(crate::git::slot::SLOT_DIR);
        crate::store::safe::check_link_inside(&self.root, &slots)?;
        crate::store::safe::refuse_link(&self.state_dir.join("slots"))
            .map_err(|e| crate::error::RunnerError::bad_input(e.to_string()))
    }

    pub fn templates_dir(&self) -> PathBuf {
        self.state_dir.join("templates")
    }
}

/// The files of spec `name` in the workspace at `root` (its specs in `specs_dir`), as
/// `Workspace::spec` gives them; on any thread (a `Workspace` holds a repository, which is not
/// shared between threads).
pub fn spec_paths(
    root: &Path,
    specs_dir: &Path,
    name: &str,
) -> Result<SpecPaths, crate::error::RunnerError> {
    let dir = specs_dir.join(name);
    // One look at the folder in the usual case (not a link); a link is checked and resolved.
    let dir = if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        crate::store::safe::check_link_inside(root, &dir)?;
        real_location(&dir)
    } else {
        dir
    };
    Ok(SpecPaths {
        name: name.to_string(),
        plan: PlanFile::in_spec_dir(&dir),
        spec_md: dir.join("spec.md"),
        run_lock: dir.join("run.lock"),
        sessions_dir: dir.join(SESSIONS_DIR),
        dir,
    })
}
