//! The scripted agent behind the demo (`runner demo-agent`, hidden). It reads the contract from
//! the environment like any agent would and reports through the same `runner chunk` operation;
//! what it says goes to a sink (the agent's log, once `cli` prints it).
//!
//! Its script, chunk by chunk: `add-greet-script` succeeds; `add-greet-test` reports its first
//! attempt done with a test that fails the chunk's verification, and fixes it on the retry;
//! `document-greet` writes the first half of a README section, and then, when the demo asked
//! for an interruption (`DEMO_READY_ENV`), says so through a file and waits to be killed; the
//! next attempt finds that half in the worktree and finishes it.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use crate::engine::mark::Mark;
use crate::ops::chunk::{locate_spec, mark};

/// Set by the demo on the run it interrupts: the file the agent creates once the partial work
/// of `INTERRUPTED_CHUNK` is on disk, the moment to kill runner.
pub const DEMO_READY_ENV: &str = "RUNNER_DEMO_READY";

/// The chunk the demo interrupts.
pub const INTERRUPTED_CHUNK: &str = "document-greet";

/// What the interrupted attempt writes before it is killed: the part that must survive. Only a
/// first attempt writes it; a later one that does not find it writes its own wording
/// (`REDONE_SECTION`), so this text on the branch proves the killed attempt's work was kept.
pub const PARTIAL_TEXT: &str = "`sh greet.sh NAME` prints a greeting.";
const PARTIAL_SECTION: &str = "\n## greet\n\n`sh greet.sh NAME` prints a greeting.\n";
const REDONE_SECTION: &str = "\n## greet\n\n`sh greet.sh NAME` says hello to NAME.\n";
const REST_OF_SECTION: &str = "\nExample:\n\n    $ sh greet.sh Ada\n    Hello, Ada!\n";

/// How long the interrupted attempt waits for the kill before giving up (a safety net: the demo
/// kills it within milliseconds).
const WAIT_FOR_KILL: Duration = Duration::from_secs(60);

/// Play the agent's part for the session the environment describes; returns its exit code.
pub fn demo_agent(say: &mut dyn FnMut(&str)) -> anyhow::Result<i32> {
    let role = std::env::var("RUNNER_ROLE").unwrap_or_default();
    let cwd = std::env::current_dir()?;
    if role == "planner" {
        let plan_file = std::env::var("RUNNER_PLAN_FILE").context("RUNNER_PLAN_FILE is not set")?;
        crate::store::write_atomic(
            Path::new(&plan_file),
            serde_json::to_string_pretty(&demo_plan())?.as_bytes(),
        )
        .with_context(|| format!("writing {plan_file}"))?;
        say(&format!("planner: wrote {plan_file}"));
        return Ok(0);
    }
    let chunk = std::env::var("RUNNER_CHUNK_ID").context("RUNNER_CHUNK_ID is not set")?;
    let attempt: u32 = std::env::var("RUNNER_ATTEMPT")
        .ok()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let paths = locate_spec(&crate::ops::Ctx::open(&cwd)?, None)?;
    match chunk.as_str() {
        "add-greet-script" => write(
            &cwd,
            "greet.sh",
            "#!/bin/sh\necho \"Hello, ${1:-world}!\"\n",
        )?,
        "add-greet-test" if attempt == 1 => {
            // A slip a real agent makes: the comma is missing. The verification catches it.
            write(
                &cwd,
                "test_greet.sh",
                "#!/bin/sh\n[ \"$(sh greet.sh Ada)\" = \"Hello Ada!\" ]\n",
            )?;
            say("coder: wrote test_greet.sh (with a mistake the verification will catch)");
        }
        "add-greet-test" => {
            write(
                &cwd,
                "test_greet.sh",
                "#!/bin/sh\n[ \"$(sh greet.sh Ada)\" = \"Hello, Ada!\" ]\n",
            )?;
            say("coder: fixed test_greet.sh after the failed verification");
        }
        INTERRUPTED_CHUNK => {
            if let Some(code) = document(&cwd, attempt, say)? {
                return Ok(code);
            }
        }
        other => say(&format!("coder: nothing scripted for {other}")),
    }
    let msg = mark(&paths, &chunk, Mark::Done, Some("done by the demo agent"))?;
    say(&format!("coder: {msg}"));
    Ok(0)
}

/// The README section, in two halves; the first half is the first attempt's, and the one the
/// demo interrupts it after. `Some(code)`: the session ends here (it was to be interrupted and
/// was not).
fn document(cwd: &Path, attempt: u32, say: &mut dyn FnMut(&str)) -> anyhow::Result<Option<i32>> {
    let readme = cwd.join("README.md");
    let mut text = std::fs::read_to_string(&readme).unwrap_or_default();
    if text.contains(PARTIAL_TEXT) {
        say(
            "coder: README.md already has the first half of the section (an earlier attempt's work); finishing it",
        );
    } else if attempt > 1 {
        text.push_str(REDONE_SECTION);
        say("coder: no earlier work in README.md; writing the whole section");
    } else {
        text.push_str(PARTIAL_SECTION);
        std::fs::write(&readme, &text)?;
        say("coder: wrote the first half of the README section");
        if let Some(ready) = std::env::var_os(DEMO_READY_ENV).filter(|_| attempt == 1) {
            crate::store::write_atomic(Path::new(&ready), b"ready\n")?;
            say("coder: waiting to be interrupted");
            wait_for_kill();
            say("coder: runner went away, or nobody interrupted this session; stopping");
            return Ok(Some(1));
        }
    }
    text.push_str(REST_OF_SECTION);
    std::fs::write(&readme, &text)?;
    Ok(None)
}

/// Wait until killed: runner's death sends SIGTERM on Linux (the parent-death signal); elsewhere
/// the parent's change is noticed here.
fn wait_for_kill() {
    let parent = std::os::unix::process::parent_id();
    let started = Instant::now();
    while std::os::unix::process::parent_id() == parent && started.elapsed() < WAIT_FOR_KILL {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn write(dir: &Path, name: &str, text: &str) -> anyhow::Result<()> {
    std::fs::write(dir.join(name), text).with_context(|| format!("writing {name}"))
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
                        "id": INTERRUPTED_CHUNK,
                        "description": "Document greet.sh in the README, with an example",
                        "status": "pending",
                        "files_to_modify": ["README.md"],
                        "verification": {"type": "command", "command": "grep -q 'sh greet.sh NAME' README.md && grep -q 'Hello, Ada!' README.md"}
                    }
                ]
            }
        ]
    })
}
