//! `runner review | merge | discard | undo | gc`: thin wrappers over the operations.

use std::io::IsTerminal;
use std::path::Path;

use clap::Args;

use super::interact::{can_ask, confirm, confirm_by_name, needs_flag};
use crate::engine::run::pick_spec;
use crate::ops::merge::{MergeMode, merge};
use crate::store::{FileLock, Journal, guard};
use crate::store::{SpecPaths, Workspace};

/// The workspace, the spec, and its run lock (exit 4 if a runner holds it).
fn locked_spec(
    cwd: &Path,
    spec: Option<&str>,
    what: &str,
) -> anyhow::Result<(Workspace, SpecPaths, FileLock, Journal)> {
    let ws = Workspace::open(cwd)?;
    let name = pick_spec(&ws, spec)?;
    let paths = ws.spec(&name)?;
    let run_id = crate::store::ids::run_id();
    let holder = guard::new_holder(&run_id, Some(&name));
    let lock = guard::take(&paths.run_lock, &holder, guard::Patience::Once, || {
        format!("spec {name} is being run, so {what} did not start (nothing was changed)")
    })?;
    let journal = Journal::new(&paths.dir, &run_id);
    Ok((ws, paths, lock, journal))
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[arg(long)]
    pub spec: Option<String>,
    /// Show the full patch (through $PAGER on a terminal).
    #[arg(long)]
    pub diff: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn review(cwd: &Path, args: ReviewArgs) -> anyhow::Result<i32> {
    let ws = Workspace::open(cwd)?;
    let name = pick_spec(&ws, args.spec.as_deref())?;
    let paths = ws.spec(&name)?;
    let r = crate::ops::review::review(&ws, &paths)?;
    if args.json {
        let mut v = serde_json::to_value(&r)?;
        if args.diff {
            v["diff"] = patch(&ws, &r)?.into();
        }
        super::print_json(&v)?;
        return Ok(0);
    }
    print!(
        "{}",
        crate::text::for_terminal(&crate::ops::review::render(&r))
    );
    if args.diff {
        show_patch(&patch(&ws, &r)?)?;
    }
    Ok(0)
}

fn patch(ws: &Workspace, r: &crate::ops::review::Review) -> anyhow::Result<String> {
    let from = r.merge_base.unwrap_or(r.tip);
    crate::git::merge::patch_text(&ws.main.repo, from, r.tip)
}

/// Through $PAGER on a terminal (default `less -R`), else straight to stdout.
fn show_patch(text: &str) -> anyhow::Result<()> {
    if std::io::stdout().is_terminal() {
        let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -R".into());
        if let Ok(argv) = shell_words::split(&pager)
            && let Some((program, rest)) = argv.split_first()
            && let Ok(mut child) = std::process::Command::new(program)
                .args(rest)
                .stdin(std::process::Stdio::piped())
                .spawn()
        {
            if let Some(mut stdin) = child.stdin.take() {
                use std::io::Write;
                let _ = stdin.write_all(text.as_bytes());
            }
            let _ = child.wait();
            return Ok(());
        }
    }
    print!("\n{}", crate::text::for_terminal(text));
    Ok(())
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    #[arg(long)]
    pub spec: Option<String>,
    /// One commit on the base branch listing the chunks, instead of a merge commit.
    #[arg(long, conflicts_with = "no_commit")]
    pub squash: bool,
    /// Stage the merged changes on the checked-out base branch for you to commit.
    #[arg(long)]
    pub no_commit: bool,
    /// Keep the spec's branch and worktree after merging.
    #[arg(long)]
    pub keep_worktree: bool,
    /// Do not ask for confirmation (needed without a terminal).
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn merge_cmd(cwd: &Path, args: MergeArgs) -> anyhow::Result<i32> {
    let (ws, paths, _lock, journal) = locked_spec(cwd, args.spec.as_deref(), "merge")?;
    let mode = if args.squash {
        MergeMode::Squash
    } else if args.no_commit {
        MergeMode::NoCommit
    } else {
        MergeMode::Merge
    };
    if !args.yes {
        if !can_ask() {
            return Err(needs_flag("merge", "--yes"));
        }
        let plan = paths.plan.load().ok().flatten();
        let base = crate::ops::review::base_branch(&ws, plan.as_ref())?;
        if !confirm(&format!(
            "Merge {} into {base} ({})?",
            paths.name,
            mode.as_str()
        ))? {
            eprintln!("Not merged.");
            return Ok(crate::error::exit::OK);
        }
    }
    let outcome = merge(&ws, &paths, mode, args.keep_worktree, &journal)?;
    if args.json {
        super::print_json(&outcome)?;
        return Ok(0);
    }
    if outcome.already_merged {
        println!(
            "{} is already merged into {}: nothing to do.",
            paths.name, outcome.target
        );
        return Ok(0);
    }
    match &outcome.commit {
        Some(c) => println!(
            "Merged {} into {} ({}): {} — {} commit(s), {} file(s).",
            outcome.spec,
            outcome.target,
            outcome.mode.as_str(),
            crate::git::short_id(c),
            outcome.landed.len(),
            outcome.files
        ),
        None => println!(
            "The changes of {} are staged on {}: review them and commit (`git commit`).",
            outcome.spec, outcome.target
        ),
    }
    for l in &outcome.landed {
        println!("  {l}");
    }
    if outcome.cleaned_up {
        match &outcome.freed_worktree {
            Some(path) => println!(
                "The worktree {path} was freed and branch auto-claude/{} deleted (its tip is kept in the backup).",
                outcome.spec
            ),
            None => println!(
                "Branch auto-claude/{} was deleted (its tip is kept in the backup).",
                outcome.spec
            ),
        }
    }
    if let Some(b) = &outcome.backup {
        println!(
            "Backup: {b}. Undo with: runner undo --spec {}",
            crate::sh(&outcome.spec)
        );
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct DiscardArgs {
    #[arg(long)]
    pub spec: Option<String>,
    /// Do not ask for confirmation (needed without a terminal).
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn discard_cmd(cwd: &Path, args: DiscardArgs) -> anyhow::Result<i32> {
    let (ws, paths, _lock, journal) = locked_spec(cwd, args.spec.as_deref(), "discard")?;
    if !args.yes {
        if !can_ask() {
            return Err(needs_flag("discard", "--yes"));
        }
        if !confirm_by_name(
            &format!("Discard the build of {}? (it can be undone)", paths.name),
            &paths.name,
        )? {
            eprintln!("Not discarded.");
            return Ok(0);
        }
    }
    let outcome = crate::ops::discard::discard(&ws, &paths, &journal)?;
    if args.json {
        super::print_json(&outcome)?;
    } else {
        println!(
            "Discarded the build of {}; the plan is reset to pending. Backup: {}. Undo with: runner undo --spec {}",
            outcome.spec,
            outcome.backup,
            crate::sh(&outcome.spec)
        );
        if let Some(r) = &outcome.late_changes {
            println!(
                "Changes made in its worktree after the backup were saved to {r} (git checkout {r} -- . brings them back)."
            );
        }
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    #[arg(long)]
    pub spec: Option<String>,
    /// List the backups instead of undoing.
    #[arg(long)]
    pub list: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn undo_cmd(cwd: &Path, args: UndoArgs) -> anyhow::Result<i32> {
    if args.list {
        let ws = Workspace::open(cwd)?;
        let spec = match &args.spec {
            Some(q) => Some(crate::store::spec::resolve(&ws.specs_dir, q)?),
            None => None,
        };
        let backups = crate::git::backup::list(&ws.main.repo, spec.as_deref());
        if args.json {
            super::print_json(&backups)?;
        } else if backups.is_empty() {
            println!("No backups.");
        } else {
            for b in &backups {
                println!(
                    "{} {} {} ({})",
                    b.meta.time, b.meta.kind, b.meta.spec, b.refs_prefix
                );
            }
        }
        return Ok(0);
    }
    let (ws, paths, _lock, journal) = locked_spec(cwd, args.spec.as_deref(), "undo")?;
    let outcome = crate::ops::undo::undo(&ws, &paths, &journal)?;
    if args.json {
        super::print_json(&outcome)?;
    } else {
        println!("Undid the {} of {}.", outcome.kind, outcome.spec);
        if let Some(t) = &outcome.reset_target {
            println!("  {t} is back on its pre-merge tip.");
        }
        if let Some(b) = &outcome.restored_branch {
            println!("  branch {b} restored.");
        }
        if let Some(w) = &outcome.restored_worktree {
            println!("  worktree {w} restored.");
        }
        for n in &outcome.notes {
            println!("  note: {n}");
        }
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Remove backups older than this many days (default: [backup] keep_days, 30).
    #[arg(long, value_name = "DAYS")]
    pub older_than: Option<u64>,
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn gc_cmd(cwd: &Path, args: GcArgs) -> anyhow::Result<i32> {
    let ws = Workspace::open(cwd)?;
    let days = match args.older_than {
        Some(d) => d,
        None => ws.config()?.backup.keep_days,
    };
    let outcome = crate::ops::undo::gc(&ws, days, args.dry_run)?;
    if args.json {
        super::print_json(&outcome)?;
    } else {
        let verb = if args.dry_run {
            "Would remove"
        } else {
            "Removed"
        };
        println!(
            "{verb} {} backup(s) older than {days} days; {} kept.",
            outcome.removed.len(),
            outcome.kept
        );
        for r in &outcome.removed {
            println!("  {r}");
        }
    }
    Ok(0)
}
