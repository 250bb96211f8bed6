//! Where everything lives for one repository: `.auto-claude/`, its specs, its config.

use std::path::{Path, PathBuf};

use crate::config::{CONFIG_FILE, Config};
use crate::git::MainRepo;
use crate::plan::PlanFile;

pub const STATE_DIR: &str = ".auto-claude";

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
        crate::store::safe::create_real_dirs(&self.dir, &["sessions", id])
    }
}

impl Workspace {
    pub fn open(cwd: &Path) -> anyhow::Result<Workspace> {
        let main = MainRepo::discover(cwd)?;
        let root = main.root.clone();
        let state_dir = root.join(STATE_DIR);
        let ws = Workspace {
            specs_dir: state_dir.join("specs"),
            state_dir,
            root,
            main,
        };
        ws.check_links()?;
        Ok(ws)
    }

    pub fn config(&self) -> anyhow::Result<Config> {
        Ok(Config::load(&self.state_dir.join(CONFIG_FILE))?)
    }

    pub fn spec(&self, name: &str) -> SpecPaths {
        let dir = self.specs_dir.join(name);
        SpecPaths {
            name: name.to_string(),
            plan: PlanFile::in_spec_dir(&dir),
            spec_md: dir.join("spec.md"),
            run_lock: dir.join("run.lock"),
            sessions_dir: dir.join("sessions"),
            dir,
        }
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

    /// The spec folder may be a link only into the repository (see `store::safe`).
    pub fn check_spec_folder(&self, name: &str) -> Result<(), crate::error::RunnerError> {
        crate::store::safe::check_link_inside(&self.root, &self.specs_dir.join(name))
    }

    pub fn templates_dir(&self) -> PathBuf {
        self.state_dir.join("templates")
    }
}
