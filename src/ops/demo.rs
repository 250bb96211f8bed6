//! `runner demo`: a throw-away repository, an example spec, and the whole loop with a built-in
//! scripted agent (`runner demo-agent`): no LLM, no network, nothing to install.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use super::chunk::{Mark, locate_spec, mark};
use crate::git::{branch_for, log_between, signature};
use crate::ops::run::{NeverAsk, ProgressSink, RunOptions, RunSummary, run};
use crate::store::workspace::Workspace;

pub const DEMO_SPEC: &str = "001-greeting-tool";

const SPEC_TEXT: &str = "# A greeting tool\n\nAdd `greet.sh NAME`, which prints `Hello, NAME!`, with a test script and a\nsection in the README.\n";

pub struct DemoResult {
    pub dir: PathBuf,
    pub summary: RunSummary,
    pub commits: Vec<String>,
}

/// Create the repository in `dir` (which must not exist or be empty) and run the spec in it.
pub fn demo(
    dir: Option<PathBuf>,
    progress: std::rc::Rc<dyn ProgressSink>,
) -> anyhow::Result<DemoResult> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!(
            "runner-demo-{}-{}",
            crate::clock::stamp(),
            std::process::id()
        )),
    };
    let at = crate::store::at(&dir);
    if dir.exists() && std::fs::read_dir(&dir).map_err(at)?.next().is_some() {
        return Err(crate::error::RunnerError::bad_input(format!(
            "{} is not empty; the demo needs a new folder",
            dir.display()
        ))
        .into());
    }
    std::fs::create_dir_all(&dir).map_err(crate::store::at(&dir))?;
    let dir = dir.canonicalize().map_err(crate::store::at(&dir))?;
    eprintln!(
        "runner demo: a throw-away repository at {}\n",
        dir.display()
    );
    make_repo(&dir)?;
    eprintln!(
        "Spec {DEMO_SPEC}: {}",
        SPEC_TEXT.lines().next().unwrap_or("")
    );
    eprintln!(
        "Agent: runner's built-in scripted agent (it fails its first try at one chunk, to show a retry)\n"
    );
    let exe = std::env::current_exe().context("finding the runner binary")?;
    let summary = run(
        &dir,
        RunOptions {
            spec: Some(DEMO_SPEC.into()),
            auto_continue: true,
            agent_command: Some(shell_words::join([
                exe.display().to_string(),
                "demo-agent".into(),
            ])),
            ..RunOptions::default()
        },
        progress,
        &NeverAsk,
    )?;
    let ws = Workspace::open(&dir)?;
    let base = ws.main.branch_tip("main").context("finding main")?;
    let tip = ws
        .main
        .branch_tip(&branch_for(DEMO_SPEC))
        .context("finding the spec branch")?;
    let commits = log_between(&ws.main.repo, base, tip)?
        .into_iter()
        .map(|(oid, summary)| format!("{} {summary}", &oid.to_string()[..10]))
        .collect();
    Ok(DemoResult {
        dir,
        summary,
        commits,
    })
}

fn make_repo(dir: &Path) -> anyhow::Result<()> {
    let repo =
        git2::Repository::init_opts(dir, git2::RepositoryInitOptions::new().initial_head("main"))?;
    std::fs::write(dir.join("README.md"), "# demo project\n")?;
    let mut index = repo.index()?;
    index.add_path(Path::new("README.md"))?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = signature(&repo)?;
    repo.commit(Some("HEAD"), &sig, &sig, "initial commit", &tree, &[])?;
    let spec_dir = dir.join(".auto-claude/specs").join(DEMO_SPEC);
    std::fs::create_dir_all(&spec_dir)?;
    std::fs::write(spec_dir.join("spec.md"), SPEC_TEXT)?;
    Ok(())
}

/// The scripted agent behind the demo. It reads the contract from the environment like any
/// agent would, and reports through the same `runner chunk` operations.
pub fn demo_agent() -> anyhow::Result<i32> {
    let role = std::env::var("RUNNER_ROLE").unwrap_or_default();
    let cwd = std::env::current_dir()?;
    // Look busy for a moment, as an agent would.
    std::thread::sleep(Duration::from_millis(400));
    if role == "planner" {
        let plan_file = std::env::var("RUNNER_PLAN_FILE").context("RUNNER_PLAN_FILE is not set")?;
        let plan = demo_plan();
        crate::store::write_atomic(
            Path::new(&plan_file),
            serde_json::to_string_pretty(&plan)?.as_bytes(),
        )?;
        println!("planner: wrote {plan_file}");
        return Ok(0);
    }
    let chunk = std::env::var("RUNNER_CHUNK_ID").context("RUNNER_CHUNK_ID is not set")?;
    let attempt: u32 = std::env::var("RUNNER_ATTEMPT")
        .ok()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let (_, paths) = locate_spec(&cwd, None)?;
    match chunk.as_str() {
        "add-greet-script" => {
            std::fs::write(
                cwd.join("greet.sh"),
                "#!/bin/sh\necho \"Hello, ${1:-world}!\"\n",
            )?;
        }
        "add-greet-test" => {
            if attempt == 1 {
                println!("coder: simulated usage limit, giving up this session");
                return Ok(1);
            }
            std::fs::write(
                cwd.join("test_greet.sh"),
                "#!/bin/sh\n[ \"$(sh greet.sh Ada)\" = \"Hello, Ada!\" ]\n",
            )?;
        }
        "document-greet" => {
            let readme = cwd.join("README.md");
            let mut text = std::fs::read_to_string(&readme).unwrap_or_default();
            text.push_str("\n## greet\n\n`sh greet.sh NAME` prints a greeting.\n");
            std::fs::write(readme, text)?;
        }
        other => println!("coder: nothing scripted for {other}"),
    }
    let msg = mark(&paths, &chunk, Mark::Done, Some("done by the demo agent"))?;
    println!("coder: {msg}");
    Ok(0)
}

fn demo_plan() -> serde_json::Value {
    json!({
        "feature": "A greeting tool",
        "workflow_type": "feature",
        "phases": [
            {
                "id": "phase-1-script",
                "name": "The script",
                "depends_on": [],
                "subtasks": [
                    {
                        "id": "add-greet-script",
                        "description": "Add greet.sh that prints a greeting",
                        "status": "pending",
                        "files_to_create": ["greet.sh"],
                        "verification": {"type": "command", "command": "sh greet.sh Ada | grep -q 'Hello, Ada!'", "expected": "prints Hello, Ada!"}
                    },
                    {
                        "id": "add-greet-test",
                        "description": "Add a test script for greet.sh",
                        "status": "pending",
                        "files_to_create": ["test_greet.sh"],
                        "verification": {"type": "command", "command": "sh test_greet.sh"}
                    }
                ]
            },
            {
                "id": "phase-2-docs",
                "name": "Documentation",
                "depends_on": ["phase-1-script"],
                "subtasks": [
                    {
                        "id": "document-greet",
                        "description": "Document greet.sh in the README",
                        "status": "pending",
                        "files_to_modify": ["README.md"],
                        "verification": {"type": "command", "command": "grep -q greet.sh README.md"}
                    }
                ]
            }
        ]
    })
}
