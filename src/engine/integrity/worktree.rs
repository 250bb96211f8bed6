//! A worktree runner cannot open (its .git deleted, emptied or pointed elsewhere): find it, save its files, send it to review.

use super::*;

/// The slot of the spec whose folder is there but cannot be opened as that worktree (its `.git`
/// file deleted or replaced, the folder emptied): the one registered for the spec's branch, or
/// `last_slot` — the slot the spec's last run worked in, when a chunk was left in progress —
/// unless that one is registered for another spec's branch (an agent that checked out another
/// branch and then broke the folder must not make runner skip saving its files).
pub fn unopenable_slot(
    main: &MainRepo,
    spec: &str,
    last_slot: Option<&str>,
) -> Option<(Slot, String)> {
    let branch = branch_for(spec);
    Slot::all(main).into_iter().find_map(|slot| {
        let registered = slot.registered_branch(main);
        let ours = registered.as_deref() == Some(branch.as_str())
            || (last_slot == Some(slot.name.as_str())
                && registered
                    .as_deref()
                    .and_then(crate::git::spec_of_branch)
                    .is_none_or(|other| other == spec));
        if !slot.path.exists() || !ours {
            return None;
        }
        match slot.inspect(main) {
            SlotState::Broken { reason } => {
                let reason = unreadable_folder(&slot.path).unwrap_or(reason);
                Some((slot, reason))
            }
            _ => None,
        }
    })
}

/// `folder cannot be read (permission denied)` when its entries cannot be listed: git then
/// calls it missing or broken, which sends a person looking for the wrong thing.
pub fn unreadable_folder(folder: &Path) -> Option<String> {
    match std::fs::read_dir(folder) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(format!(
            "{} cannot be read (permission denied)",
            folder.display()
        )),
        _ => None,
    }
}

/// Save whatever files an unopenable slot still holds as a commit on top of the spec's branch
/// tip, under a recovery ref (an existing ref with the same content is reused). `None` if
/// nothing could be read.
pub fn save_unopenable_slot(
    main: &MainRepo,
    spec: &str,
    slot: &Slot,
    label: &str,
) -> anyhow::Result<Option<String>> {
    let tree = match slot.open_registered(main) {
        // Through git's registration, the folder's files are read with the user's ignore
        // rules, as `git add -A` would.
        Ok(wt) => crate::git::tree::stage_all_in_memory(&wt, &main.repo)?,
        Err(_) => crate::git::tree::tree_of_folder(&main.repo, &slot.path)?,
    };
    let parent = main
        .branch_tip(&branch_for(spec))
        .filter(|t| history::commit_exists(&main.repo, *t));
    if let Some((name, _)) = crate::git::refs::recovery_refs(&main.repo, spec)
        .into_iter()
        .find(|(_, o)| history::tree_of(&main.repo, *o) == Some(tree))
    {
        return Ok(Some(name));
    }
    let message = format!(
        "auto-claude: files of the worktree {} that git could not open",
        slot.path.display()
    );
    let parents: Vec<Oid> = parent.into_iter().collect();
    let oid = history::write_commit(&main.repo, tree, &parents, &message)?;
    let refname = crate::git::refs::next_recovery_ref(&main.repo, spec, label)?;
    crate::git::refs::create(&main.repo, &refname, oid, &message)?;
    Ok(Some(refname))
}

/// A worktree runner cannot open exactly: save what its folder holds, block `chunk` (the one in
/// progress there, if any), journal it, and return what a person should do. Its work is never
/// judged by another repository (the main one, found by searching upwards).
pub fn unopenable_worktree(
    main: &MainRepo,
    paths: &SpecPaths,
    journal: &Journal,
    folder: &Path,
    why: &str,
    chunk: Option<&str>,
    dry_run: bool,
) -> anyhow::Result<String> {
    let slot = Slot {
        name: folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: folder.to_path_buf(),
    };
    let branch = branch_for(&paths.name);
    let shown = folder.display();
    let quoted = crate::sh(folder.to_string_lossy());
    let quoted_aside = crate::sh(format!("{}.broken", folder.to_string_lossy()));
    let mut message = format!("{why}; runner will not judge its work by any other repository.");
    // Files that cannot be read cannot be saved; the dry run says what the real one will do.
    let readable = unreadable_folder(folder).is_none();
    if dry_run {
        message.push_str(if readable {
            " (dry run: its files would be saved to a recovery ref)"
        } else {
            " (dry run: its files cannot be read, so none would be saved)"
        });
        return Ok(message);
    }
    let saved = if readable {
        save_unopenable_slot(main, &paths.name, &slot, chunk.unwrap_or("worktree"))?
    } else {
        message.push_str(" Its files cannot be read, so none were saved.");
        None
    };
    crate::failpoint::hit("after_unopenable_saved");
    if let Some(r) = &saved {
        message.push_str(&format!(
            " The files it still holds are saved at {r} (a commit on top of {branch}; see `git show --stat {}`).",
            quote(r)
        ));
    }
    let blocked = match chunk {
        Some(id) => {
            message.push_str(&format!(" Chunk {id} is blocked."));
            block_chunk(
                paths,
                id,
                &format!("its worktree {shown} cannot be opened"),
                "worktree cannot be opened",
            )?
        }
        None => None,
    };
    if !readable {
        message.push_str(&format!(
            " If the folder is yours, make it readable again (chmod -R u+rwX {quoted}) and run `runner recover` again; otherwise:"
        ));
    }
    let take = if saved.is_some() {
        "take what you need from the saved ref, "
    } else {
        ""
    };
    message.push_str(&format!(
        " To go on: move the folder away (mv {quoted} {quoted_aside}), run `git worktree prune`, {take}set the chunk back to \"pending\" in {}, and run again; the worktree is recreated from {branch}.",
        paths.plan.path().display()
    ));
    journal.write(&Event::WorktreeUnopenable(ev::WorktreeUnopenable {
        chunk: chunk.map(str::to_string),
        worktree: folder.to_path_buf(),
        why: why.to_string(),
        saved_ref: saved,
    }))?;
    if let (Some(id), Some(change)) = (chunk, blocked) {
        journal.status(id, change)?;
    }
    Ok(message)
}
