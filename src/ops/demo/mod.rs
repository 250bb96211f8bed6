//! `runner demo`: a throw-away repository, an example spec, and the whole product at work on it
//! with a built-in scripted agent (`runner demo-agent`): no LLM, no network, nothing to install.
//!
//! Every step is the real `runner` binary run as a child process in the demo's folder (see
//! `steps`), so what the demo shows is what a person gets: planning, the chunks and their
//! commits, a failed verification and its retry, a run killed (SIGKILL) in the middle of a
//! chunk, `recover` keeping that chunk's partial work, the run that continues from it, then
//! `review`, `merge` and `undo`. This operation prints nothing: each step goes to the sink as it
//! ends, and the report comes back as data.

pub mod agent;
pub mod steps;

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use self::agent::{DEMO_READY_ENV, INTERRUPTED_CHUNK, PARTIAL_TEXT};
use self::steps::{Runner, Stage, Step};
use crate::engine::lifecycle::CommitLine;
use crate::error::RunnerError;
use crate::git::branch_for;
use crate::store::Workspace;

pub use self::agent::demo_agent;

pub const DEMO_SPEC: &str = "001-greeting-tool";

const SPEC_TEXT: &str = "# A greeting tool\n\nAdd `greet.sh NAME`, which prints `Hello, NAME!`, with a test script and a\nsection in the README.\n";

const DIR: &str = "the demo's folder";
const EXE: &str = "the runner binary's path";

pub struct DemoOptions {
    /// Where to create the repository; it must not exist or be empty (default: a new folder in
    /// the temp dir).
    pub dir: Option<PathBuf>,
    /// The runner binary the steps run (the front end passes its own).
    pub exe: PathBuf,
}

/// What the demo reports as it goes.
pub enum DemoEvent<'a> {
    /// The repository is ready; the steps are about to run.
    Ready { dir: &'a Path, spec: &'a str },
    /// A step ended (or was killed).
    Step(&'a Step),
}

#[derive(Debug, Serialize)]
pub struct DemoReport {
    /// The demo's folder, left in place.
    pub dir: PathBuf,
    pub spec: String,
    pub branch: String,
    pub steps: Vec<Step>,
    /// The spec's commits at the end, newest first.
    pub commits: Vec<CommitLine>,
    pub partial_work: PartialWork,
    /// Commands to look around and to remove the folder, each working as written from any
    /// folder.
    pub commands: Vec<Suggestion>,
}

/// The interrupted chunk's partial work, followed from the kill to the branch.
#[derive(Debug, Serialize)]
pub struct PartialWork {
    pub chunk: String,
    /// The file and the text the killed attempt had written.
    pub file: String,
    pub text: String,
    /// Where `recover` saved it.
    pub saved_ref: Option<String>,
    /// The commit of the attempt that continued from it.
    pub commit: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Suggestion {
    pub purpose: String,
    pub command: String,
}

/// Create the repository and run the demo's steps in it.
pub fn demo(opts: DemoOptions, sink: &mut dyn FnMut(DemoEvent)) -> anyhow::Result<DemoReport> {
    printable(&opts.exe, EXE)?;
    let dir = prepare_dir(opts.dir)?;
    make_repo(&dir, &opts.exe)?;
    sink(DemoEvent::Ready {
        dir: &dir,
        spec: DEMO_SPEC,
    });
    let runner = Runner {
        exe: opts.exe,
        dir: dir.clone(),
    };
    let steps = run_steps(&runner, &mut |step| sink(DemoEvent::Step(step)))?;
    let ws = Workspace::open(&dir)?;
    let paths = ws.spec(DEMO_SPEC)?;
    let partial_work = follow_partial_work(&ws, &paths)?;
    let commits = crate::ops::review::review_of(&ws, &paths)?.commits;
    let commands = suggestions(&runner, partial_work.saved_ref.as_deref());
    Ok(DemoReport {
        dir,
        spec: DEMO_SPEC.into(),
        branch: branch_for(DEMO_SPEC),
        steps,
        commits,
        partial_work,
        commands,
    })
}

/// What to do about a `--dir` the demo cannot use.
const NEW_DIR_HINT: &str = "give --dir a path that does not exist yet, or leave --dir out";

/// `dir`, or a new folder in the temp dir; created, empty, absolute.
fn prepare_dir(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!(
            "runner-demo-{}-{}",
            crate::clock::stamp(),
            std::process::id()
        )),
    };
    printable(&dir, DIR)?;
    let at = crate::store::at(&dir);
    if std::fs::symlink_metadata(&dir).is_ok() && !dir.is_dir() {
        return Err(RunnerError::bad_input(format!(
            "{} is not a folder; the demo needs a new or empty folder",
            dir.display()
        ))
        .with_hint(NEW_DIR_HINT)
        .into());
    }
    if dir.exists() && std::fs::read_dir(&dir).map_err(at)?.next().is_some() {
        return Err(RunnerError::bad_input(format!(
            "{} is not empty; the demo needs a new folder",
            dir.display()
        ))
        .with_hint(NEW_DIR_HINT)
        .into());
    }
    std::fs::create_dir_all(&dir).map_err(crate::store::at(&dir))?;
    let dir = dir.canonicalize().map_err(crate::store::at(&dir))?;
    printable(&dir, DIR)?;
    Ok(dir)
}

/// The demo prints commands naming `path`; a path that is not UTF-8 could not be printed as
/// it is, and a command naming it would not work as printed: refused before anything is made.
fn printable<'a>(path: &'a Path, what: &str) -> anyhow::Result<&'a str> {
    path.to_str().ok_or_else(|| {
        let fix = if what == DIR {
            "give --dir a folder whose path is UTF-8"
        } else {
            "run runner from a path that is UTF-8"
        };
        RunnerError::bad_input(format!(
            "{what}, {}, is not UTF-8: the commands the demo prints could not name it; {fix}",
            path.display()
        ))
        .into()
    })
}

/// The project, its spec, and a configuration naming the scripted agent (so that every runner
/// command in the folder, the demo's and the person's after it, finds its agent).
fn make_repo(dir: &Path, exe: &Path) -> anyhow::Result<()> {
    crate::git::init::init_with_commit(
        dir,
        "main",
        &[("README.md", "# demo project\n")],
        "initial commit",
    )?;
    let spec_dir = dir.join(".auto-claude/specs").join(DEMO_SPEC);
    std::fs::create_dir_all(&spec_dir).map_err(crate::store::at(&spec_dir))?;
    crate::store::write_atomic(&spec_dir.join("spec.md"), SPEC_TEXT.as_bytes())
        .context("writing the demo's spec")?;
    let exe = printable(exe, EXE)?;
    let command = toml::Value::Array(vec![exe.into(), "demo-agent".into()]);
    let config = format!(
        "# The demo's agent: runner's built-in scripted agent (no LLM, no network).\n[agent]\ncommand = {command}\n"
    );
    crate::store::write_atomic(&dir.join(".auto-claude/config.toml"), config.as_bytes())
        .context("writing the demo's config.toml")?;
    Ok(())
}

fn run_steps(runner: &Runner, report: &mut dyn FnMut(&Step)) -> anyhow::Result<Vec<Step>> {
    let run: &[&str] = &["run", "--spec", DEMO_SPEC, "--auto-continue"];
    let spec: &[&str] = &["--spec", DEMO_SPEC];
    let with_spec = |command: &'static str| [&[command], spec].concat();
    Ok(vec![
        runner.run_until_killed(Stage::Build, run, DEMO_READY_ENV, report)?,
        runner.run(Stage::Status, &["status"], 0, report)?,
        runner.run(Stage::Recover, &with_spec("recover"), 0, report)?,
        runner.run(Stage::Resume, run, 0, report)?,
        runner.run(
            Stage::Review,
            &[&with_spec("review")[..], &["--diff"]].concat(),
            0,
            report,
        )?,
        runner.run(
            Stage::Merge,
            &[&with_spec("merge")[..], &["--yes"]].concat(),
            0,
            report,
        )?,
        runner.run(Stage::Undo, &with_spec("undo"), 0, report)?,
    ])
}

/// Where the interrupted chunk's partial work went: the ref `recover` saved it at (on the
/// killed attempt) and the commit of the attempt that continued; checked against the files,
/// so the demo never claims what did not happen.
fn follow_partial_work(
    ws: &Workspace,
    paths: &crate::store::SpecPaths,
) -> anyhow::Result<PartialWork> {
    let plan = paths
        .plan
        .load()?
        .context("the demo's plan is missing after the run")?;
    let chunk = plan
        .find_chunk(INTERRUPTED_CHUNK)
        .map(|pos| plan.chunk(pos))
        .context("the demo's plan lost its interrupted chunk")?;
    let attempts = chunk.attempts();
    let saved_ref = attempts.first().and_then(|a| {
        a.extra
            .get("recovery")
            .and_then(|r| r.get("saved_ref"))
            .and_then(|r| r.as_str())
            .map(str::to_string)
    });
    let committed =
        crate::git::slot_holding(&ws.main, &branch_for(DEMO_SPEC)).is_some_and(|slot| {
            crate::store::read_lossy(&slot.path.join("README.md")).contains(PARTIAL_TEXT)
                && slot.dirty_paths(&ws.main).is_ok_and(|d| d.is_empty())
        });
    if !committed {
        anyhow::bail!(
            "the partial work of {INTERRUPTED_CHUNK} is not committed on the spec's branch; the demo found a bug"
        );
    }
    Ok(PartialWork {
        chunk: INTERRUPTED_CHUNK.into(),
        file: "README.md".into(),
        text: PARTIAL_TEXT.into(),
        saved_ref,
        commit: attempts.last().and_then(|a| a.commit.clone()),
    })
}

/// Commands to look around and to clean up, each starting with `cd '<dir>' &&` where it needs
/// the folder, with the real path of the runner binary (which may be a `cargo run` build).
fn suggestions(runner: &Runner, saved_ref: Option<&str>) -> Vec<Suggestion> {
    let cd = format!("cd {} &&", crate::sh(runner.dir.to_string_lossy()));
    let mut out = vec![
        (
            "what runner knows",
            format!("{cd} {}", runner.command_line(&["status"])),
        ),
        (
            "the spec's work, ready to merge",
            format!(
                "{cd} {}",
                runner.command_line(&["review", "--spec", DEMO_SPEC])
            ),
        ),
        (
            "the commits, one per chunk",
            format!(
                "{cd} git log --oneline --stat {}",
                crate::sh(format!("main..{}", branch_for(DEMO_SPEC)))
            ),
        ),
    ];
    if let Some(r) = saved_ref {
        out.push((
            "the partial work recover saved",
            format!("{cd} git show {}", crate::sh(r)),
        ));
    }
    out.push((
        "the journal of everything that happened",
        format!(
            "{cd} cat {}",
            crate::sh(format!(".auto-claude/specs/{DEMO_SPEC}/events.jsonl"))
        ),
    ));
    out.push((
        "remove the demo",
        format!("rm -rf {}", crate::sh(runner.dir.to_string_lossy())),
    ));
    out.into_iter()
        .map(|(purpose, command)| Suggestion {
            purpose: purpose.into(),
            command,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn odd_runner() -> Runner {
        Runner {
            exe: PathBuf::from("/build dir/it's/runner"),
            dir: PathBuf::from("/tmp/demo $(x)"),
        }
    }

    #[test]
    fn every_suggestion_names_the_binary_and_the_folder_quoted() {
        let commands = suggestions(&odd_runner(), Some("refs/auto-claude/recovery/s/c/1"));
        let cd = "cd '/tmp/demo $(x)' &&";
        let exe = r"'/build dir/it'\''s/runner'";
        assert_eq!(commands[0].command, format!("{cd} {exe} status"));
        assert!(
            commands[..commands.len() - 1]
                .iter()
                .all(|c| c.command.starts_with(cd))
        );
        assert!(commands.iter().any(|c| {
            c.command
                .ends_with("git show refs/auto-claude/recovery/s/c/1")
        }));
        assert_eq!(commands.last().unwrap().command, "rm -rf '/tmp/demo $(x)'");
    }

    #[test]
    fn without_a_saved_ref_no_command_names_one() {
        let commands = suggestions(&odd_runner(), None);
        assert!(commands.iter().all(|c| !c.command.contains("git show")));
    }

    #[test]
    fn a_path_that_is_not_utf8_is_refused_as_bad_input() {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(b"/tmp/demo-\xff"));
        let err = printable(path, DIR).unwrap_err();
        assert_eq!(
            crate::error::exit_code_of(&err),
            crate::error::exit::BAD_INPUT
        );
        assert!(err.to_string().contains("--dir"), "{err}");
        assert!(printable(Path::new("/tmp/ok"), DIR).is_ok());
    }
}
