//! The worktree slot: `.worktrees/auto-claude` (or `.worktrees/auto-claude-<name>`), holding
//! one spec's branch `auto-claude/<spec>` at a time.

use std::path::{Path, PathBuf};

use anyhow::Context;
use git2::build::CheckoutBuilder;
use git2::{Repository, WorktreePruneOptions};

use super::repo::{MainRepo, dirty_paths, head_branch, open_worktree_exactly};

pub const SLOT_DIR: &str = ".worktrees";
pub const DEFAULT_SLOT: &str = "auto-claude";
pub const BRANCH_PREFIX: &str = "auto-claude/";

pub fn branch_for(spec: &str) -> String {
    format!("{BRANCH_PREFIX}{spec}")
}

/// The spec a branch belongs to, if it is a runner branch.
pub fn spec_of_branch(branch: &str) -> Option<&str> {
    branch.strip_prefix(BRANCH_PREFIX).filter(|s| !s.is_empty())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The git worktree name, also the folder name: `auto-claude` or `auto-claude-<name>`.
    pub name: String,
    pub path: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotState {
    /// No worktree registered and no folder.
    Missing,
    /// A valid worktree; `branch` is `None` when its HEAD is detached.
    Ready { branch: Option<String> },
    /// Registered, but the folder is gone or is no longer a worktree.
    Broken { reason: String },
    /// A folder is there but git does not know it as a worktree.
    Unregistered,
}

impl SlotState {
    pub fn label(&self) -> &'static str {
        match self {
            SlotState::Missing => "missing",
            SlotState::Ready { .. } => "ready",
            SlotState::Broken { .. } => "broken",
            SlotState::Unregistered => "unregistered",
        }
    }
}

impl Slot {
    /// `None` → the default slot; `Some("x")` → `auto-claude-x`.
    pub fn new(root: &Path, suffix: Option<&str>) -> Slot {
        let name = match suffix {
            None => DEFAULT_SLOT.to_string(),
            Some(s) => format!("{DEFAULT_SLOT}-{s}"),
        };
        Slot {
            path: root.join(SLOT_DIR).join(&name),
            name,
        }
    }

    /// The slot with worktree name `name`, if that is a slot's name (`auto-claude` or
    /// `auto-claude-<x>`, one path component): names read from files are checked here, so that
    /// none can point a removal outside `.worktrees/`.
    pub fn named(root: &Path, name: &str) -> Option<Slot> {
        let is_slot = name == DEFAULT_SLOT
            || name
                .strip_prefix(DEFAULT_SLOT)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|s| !s.is_empty());
        let one_component = !name.contains(['/', '\\', '\0']) && !name.contains("..");
        (is_slot && one_component).then(|| Slot {
            path: root.join(SLOT_DIR).join(name),
            name: name.to_string(),
        })
    }

    /// Every slot that is registered or has a folder.
    pub fn all(main: &MainRepo) -> Vec<Slot> {
        let mut names: Vec<String> = Vec::new();
        if let Ok(list) = main.repo.worktrees() {
            names.extend(list.iter().flatten().map(str::to_string));
        }
        if let Ok(entries) = std::fs::read_dir(main.root.join(SLOT_DIR)) {
            names.extend(
                entries
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .filter_map(|e| e.file_name().to_str().map(str::to_string)),
            );
        }
        names.retain(|n| n == DEFAULT_SLOT || n.starts_with(&format!("{DEFAULT_SLOT}-")));
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| Slot {
                path: main.root.join(SLOT_DIR).join(&name),
                name,
            })
            .collect()
    }

    pub fn inspect(&self, main: &MainRepo) -> SlotState {
        match main.repo.find_worktree(&self.name) {
            Ok(wt) => match wt.validate() {
                // Ready only if the folder itself opens as this worktree: a slot whose `.git`
                // file is gone would otherwise be judged by whatever repository git finds.
                Ok(()) => match open_worktree_exactly(&self.path, main.repo.commondir()) {
                    Ok(repo) => SlotState::Ready {
                        branch: head_branch(&repo),
                    },
                    Err(reason) => SlotState::Broken { reason },
                },
                Err(_) if !wt.path().exists() => SlotState::Broken {
                    reason: format!("its folder {} is gone", wt.path().display()),
                },
                Err(e) => SlotState::Broken {
                    reason: e.message().to_string(),
                },
            },
            Err(_) if self.path.exists() => SlotState::Unregistered,
            Err(_) => SlotState::Missing,
        }
    }

    /// Open the slot's folder as exactly this worktree (see `open_worktree_exactly`).
    pub fn open(&self, main: &MainRepo) -> anyhow::Result<Repository> {
        main.repo.find_worktree(&self.name)?;
        open_worktree_exactly(&self.path, main.repo.commondir()).map_err(anyhow::Error::msg)
    }

    /// The branch the worktree's registration says it has checked out, read from git's own
    /// record (`.git/worktrees/<name>/HEAD`), which stays readable when the folder is broken.
    pub fn registered_branch(&self, main: &MainRepo) -> Option<String> {
        let head = main
            .repo
            .commondir()
            .join("worktrees")
            .join(&self.name)
            .join("HEAD");
        let text = crate::fs::safe::read_to_string(head).ok()?;
        text.trim()
            .strip_prefix("ref: refs/heads/")
            .map(str::to_string)
    }

    /// The worktree through its registration, with the slot's folder as working directory even
    /// when the folder's `.git` file is gone: only for saving what the folder holds.
    pub fn open_registered(&self, main: &MainRepo) -> anyhow::Result<Repository> {
        let wt = main.repo.find_worktree(&self.name)?;
        let repo = Repository::open_from_worktree(&wt)?;
        let same = repo
            .workdir()
            .and_then(|w| w.canonicalize().ok())
            .zip(self.path.canonicalize().ok())
            .is_some_and(|(a, b)| a == b);
        if !same {
            anyhow::bail!(
                "the registration of {} names another folder",
                self.path.display()
            );
        }
        Ok(repo)
    }

    /// Create the worktree on an existing branch, step by step, so that a crash at any point
    /// leaves a state `finish_interrupted_create` recognises and undoes: `marker` (written
    /// durably first, removed last) says a creation is under way. (libgit2's one-shot
    /// `worktree add` leaves, when killed, a registration with no `gitdir` file that blocks
    /// every later creation, or a registered worktree with part of its files and no index,
    /// from which a commit would delete the files not yet written.)
    ///
    /// The steps are git's own layout of a linked worktree: `.git/worktrees/<name>/` with
    /// `commondir` and `HEAD`, the folder with its `.git` file, then `gitdir` (from which on git
    /// knows the worktree), then a checkout of HEAD, which writes the index last.
    pub fn create(&self, main: &MainRepo, branch: &str, marker: &Path) -> anyhow::Result<()> {
        let refname = format!("refs/heads/{branch}");
        main.repo
            .find_reference(&refname)
            .with_context(|| format!("finding branch {branch}"))?;
        let admin = admin_dir(main, self);
        for taken in [&self.path, &admin] {
            if taken.symlink_metadata().is_ok() {
                anyhow::bail!(
                    "cannot create the worktree {}: {} already exists",
                    self.path.display(),
                    taken.display()
                );
            }
        }
        if let Some(dir) = marker.parent() {
            std::fs::create_dir_all(dir).map_err(crate::fs::at(dir))?;
        }
        crate::fs::write_atomic(marker, branch.as_bytes())?;
        crate::failpoint::hit("slot_create_marked");

        let slots = main.root.join(SLOT_DIR);
        std::fs::create_dir_all(&slots).map_err(crate::fs::at(&slots))?;
        // create_dir_all: two runs may make the first worktrees at the same moment.
        let worktrees = main.repo.commondir().join("worktrees");
        std::fs::create_dir_all(&worktrees).map_err(crate::fs::at(&worktrees))?;
        std::fs::create_dir(&admin).map_err(crate::fs::at(&admin))?;
        let admin = admin.canonicalize().map_err(crate::fs::at(&admin))?;
        let common = main.repo.commondir();
        let common = common.canonicalize().map_err(crate::fs::at(common))?;
        let line = |p: &Path| {
            let mut bytes = p.as_os_str().as_encoded_bytes().to_vec();
            bytes.push(b'\n');
            bytes
        };
        crate::fs::write_atomic(&admin.join("commondir"), &line(&common))?;
        crate::fs::write_atomic(&admin.join("HEAD"), format!("ref: {refname}\n").as_bytes())?;
        std::fs::create_dir(&self.path).map_err(crate::fs::at(&self.path))?;
        let folder = self
            .path
            .canonicalize()
            .map_err(crate::fs::at(&self.path))?;
        let mut gitlink = b"gitdir: ".to_vec();
        gitlink.extend(line(&admin));
        crate::fs::write_atomic(&folder.join(".git"), &gitlink)?;
        crate::fs::write_atomic(&admin.join("gitdir"), &line(&folder.join(".git")))?;
        crate::failpoint::hit("slot_registered");

        let repo = self.open(main)?;
        super::tree::checkout_new_worktree(&repo, &|| crate::failpoint::hit("slot_checkout_file"))
            .with_context(|| format!("checking out {branch} in {}", self.path.display()))?;
        crate::failpoint::hit("slot_checked_out");
        std::fs::remove_file(marker).map_err(crate::fs::at(marker))?;
        Ok(())
    }

    /// Undo a creation a crash interrupted (see `create`), so that the slot can be created
    /// afresh: no agent has worked in it yet, so nothing in it is work. Returns whether there
    /// was one.
    pub fn finish_interrupted_create(
        &self,
        main: &MainRepo,
        marker: &Path,
    ) -> anyhow::Result<bool> {
        if marker.symlink_metadata().is_err() {
            return Ok(false);
        }
        self.remove_half_created(main, true)?;
        std::fs::remove_file(marker).map_err(crate::fs::at(marker))?;
        Ok(true)
    }

    /// A registration git cannot read (`.git/worktrees/<name>` without its `gitdir`,
    /// `commondir` or `HEAD`): what a creation cut off before its end leaves, with or without
    /// runner's marker (an older runner, `git worktree add` killed). It blocks every later
    /// creation of the slot. Removed, with the folder if it holds nothing but what creation
    /// wrote; a folder holding anything else is moved aside, never deleted. Returns whether
    /// there was one.
    pub fn clear_unreadable_registration(&self, main: &MainRepo) -> anyhow::Result<bool> {
        let admin = admin_dir(main, self);
        if !admin.is_dir() || main.repo.find_worktree(&self.name).is_ok() {
            return Ok(false);
        }
        self.remove_half_created(main, false)?;
        Ok(true)
    }

    /// Remove the slot's folder and registration. The folder is deleted only if it holds
    /// nothing but what `create` wrote (see `holds_only_creation`); otherwise it is moved to
    /// `<name>.unregistered-<stamp>` first.
    fn remove_half_created(&self, main: &MainRepo, created_by_us: bool) -> anyhow::Result<()> {
        if self.path.symlink_metadata().is_ok() && !self.holds_only_creation(main, created_by_us) {
            let to = self.path.with_file_name(format!(
                "{}.unregistered-{}",
                self.name,
                crate::clock::stamp()
            ));
            std::fs::rename(&self.path, &to)
                .with_context(|| format!("moving {} aside", self.path.display()))?;
        }
        remove_worktree(main, self)
    }

    /// Does the slot's folder hold nothing but what `create` writes: a `.git` file naming this
    /// slot's registration and (`created_by_us`: the marker proves no agent ran there) files
    /// of the checkout?
    fn holds_only_creation(&self, main: &MainRepo, created_by_us: bool) -> bool {
        if !self.path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            return false;
        }
        let Ok(entries) = std::fs::read_dir(&self.path) else {
            return false;
        };
        // Temp files of `create`'s atomic writes cut off by the crash are its own too.
        let names: Vec<_> = entries
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| !n.to_str().is_some_and(crate::fs::is_temp_file))
            .collect();
        let gitlink = self.path.join(".git");
        let ours = || {
            let admin = admin_dir(main, self);
            std::fs::read(&gitlink).is_ok_and(|text| {
                let text = String::from_utf8_lossy(&text);
                text.trim()
                    .strip_prefix("gitdir: ")
                    .map(Path::new)
                    .and_then(|p| p.canonicalize().ok())
                    .zip(admin.canonicalize().ok())
                    .is_some_and(|(a, b)| a == b)
            })
        };
        match names.as_slice() {
            [] => true,
            [one] if one == ".git" => ours(),
            _ => created_by_us && ours(),
        }
    }

    /// Forget a registered worktree whose folder is gone. The branch and its commits stay.
    pub fn prune_missing(&self, main: &MainRepo) -> anyhow::Result<()> {
        let wt = main.repo.find_worktree(&self.name)?;
        let mut opts = WorktreePruneOptions::new();
        opts.valid(true).locked(false).working_tree(false);
        wt.prune(Some(&mut opts))
            .with_context(|| format!("pruning worktree {}", self.name))?;
        Ok(())
    }

    /// Point a clean slot at another branch: check out the new tree first, then move HEAD,
    /// as `git switch` does, so files of the old branch are removed and none are lost.
    ///
    /// A crash between the two would leave the new branch's files under the old branch's HEAD,
    /// where the old spec's next commit would take them in. So `marker` (written durably
    /// before, removed after) records the switch, and `finish_interrupted_switch` completes it.
    pub fn switch_to(&self, main: &MainRepo, branch: &str, marker: &Path) -> anyhow::Result<()> {
        let repo = self.open(main)?;
        let refname = format!("refs/heads/{branch}");
        let target = repo
            .find_reference(&refname)?
            .peel(git2::ObjectType::Commit)?;
        if let Some(dir) = marker.parent() {
            crate::fs::safe::create_dirs(dir).map_err(crate::fs::at(dir))?;
        }
        crate::fs::write_atomic(marker, branch.as_bytes())?;
        crate::failpoint::hit("slot_switch_marked");
        repo.checkout_tree(&target, Some(CheckoutBuilder::new().safe()))
            .with_context(|| format!("checking out {branch} in {}", self.path.display()))?;
        crate::failpoint::hit("slot_switch_checked_out");
        repo.set_head(&refname)?;
        let _ = crate::fs::safe::remove(marker);
        Ok(())
    }

    /// Complete a switch a crash interrupted (see `switch_to`): force the slot onto the branch
    /// the marker names. The old branch's changes were saved before any switch started.
    /// Returns the branch, if there was a switch to finish.
    pub fn finish_interrupted_switch(
        &self,
        main: &MainRepo,
        marker: &Path,
    ) -> anyhow::Result<Option<String>> {
        let Ok(branch) = crate::fs::safe::read_to_string(marker) else {
            return Ok(None);
        };
        let branch = branch.trim().to_string();
        let repo = self.open(main)?;
        let refname = format!("refs/heads/{branch}");
        if repo.find_reference(&refname).is_ok() {
            repo.set_head(&refname)?;
            let mut checkout = CheckoutBuilder::new();
            checkout.force().remove_untracked(true);
            repo.checkout_head(Some(&mut checkout)).with_context(|| {
                format!(
                    "finishing the switch of {} to {branch}",
                    self.path.display()
                )
            })?;
        }
        crate::fs::safe::remove(marker).map_err(crate::fs::at(marker))?;
        Ok(Some(branch))
    }

    pub fn dirty_paths(&self, main: &MainRepo) -> anyhow::Result<Vec<String>> {
        dirty_paths(&self.open(main)?)
    }
}

/// The slot (if any) that has `branch` checked out.
pub fn slot_holding(main: &MainRepo, branch: &str) -> Option<Slot> {
    Slot::all(main).into_iter().find(
        |slot| matches!(slot.inspect(main), SlotState::Ready { branch: Some(b) } if b == branch),
    )
}

/// Remove a slot's worktree entirely, untracked and ignored files included, and forget its
/// registration. Callers back up anything worth keeping first. Idempotent, and it finishes a
/// removal cut off at any point: a half-deleted folder, a registration whose folder is gone, or
/// an admin folder (`.git/worktrees/<name>`) half pruned, which git itself no longer reads.
pub fn remove_worktree(main: &MainRepo, slot: &Slot) -> anyhow::Result<()> {
    if slot.path.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(&slot.path)
            .with_context(|| format!("removing {}", slot.path.display()))?;
    }
    crate::failpoint::hit("worktree_folder_removed");
    if let Ok(wt) = main.repo.find_worktree(&slot.name) {
        let mut opts = WorktreePruneOptions::new();
        opts.valid(true).locked(true).working_tree(false);
        wt.prune(Some(&mut opts))
            .with_context(|| format!("pruning worktree {}", slot.name))?;
    }
    let admin = admin_dir(main, slot);
    if admin.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(&admin).with_context(|| format!("removing {}", admin.display()))?;
    }
    Ok(())
}

/// `.git/worktrees/<name>`: git's record of the slot.
pub fn admin_dir(main: &MainRepo, slot: &Slot) -> PathBuf {
    main.repo.commondir().join("worktrees").join(&slot.name)
}
