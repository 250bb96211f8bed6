//! Counts in words on the screens people read: one of a thing is singular, any other number
//! plural (issue 27: "1 attempts", "1 phases", "(1 sessions)", "commit(s)").

use crate::common::*;

/// A plan of one phase with one chunk.
const ONE: &str = r#"{"feature": "One", "workflow_type": "feature", "phases": [{"id": "phase-1",
    "name": "Only", "depends_on": [], "subtasks": [{"id": "only", "description": "Do it",
    "status": "pending"}]}]}"#;

#[test]
fn one_thing_is_singular_and_more_are_plural_on_every_screen() {
    let repo = TestRepo::new();
    repo.add_spec("001-one");
    repo.add_spec("002-three");
    let one = repo.tmp.path().join("one.json");
    std::fs::write(&one, ONE).unwrap();
    let agent = fixture("fake-agent").display().to_string();

    // The planner writes one phase of one chunk: planner and coder, two sessions.
    let out = repo
        .cmd(&["run", "--spec", "001-one", "--agent-command", &agent])
        .env("FAKE_AGENT_PLAN", &one)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("Plan ready: 1 phase, 1 chunk.\n"), "{err}");
    assert!(
        err.contains("The only chunk of 001-one is completed on branch auto-claude/001-one.\n"),
        "{err}"
    );
    assert_eq!(
        stdout(&out),
        "001-one: complete — 1/1 chunk on auto-claude/001-one (2 sessions)\n"
    );
    // The fixture's two phases of three chunks.
    let out = repo.run_spec("002-three", &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("Plan ready: 2 phases, 3 chunks.\n"), "{err}");
    assert!(
        err.contains("All 3 chunks of 002-three are completed"),
        "{err}"
    );
    assert_eq!(
        stdout(&out),
        "002-three: complete — 3/3 chunks on auto-claude/002-three (4 sessions)\n"
    );

    let status = stdout(&repo.runner(&["status"]));
    assert!(status.contains(" 1/1 chunk\n"), "{status}");
    assert!(status.contains(" 3/3 chunks\n"), "{status}");

    let review = repo.runner(&["review", "--spec", "001-one"]);
    assert_exit(&review, 0);
    crate::assert_screen!(repo, stdout(&review), @"
    Spec 001-one on auto-claude/001-one (base main)

    1 commit ahead of main:
      [commit] auto-claude: only - Do it

    1 file changed, +1 -0:
      added     work/only.txt (+1 -0)

    Plan progress:
      phase-1 (Only): 1/1

    It merges cleanly into main.
    ");
    let merged = repo.runner(&["merge", "--spec", "001-one", "--yes"]);
    assert_exit(&merged, 0);
    crate::assert_screen!(repo, stdout(&merged), @"
    Merged 001-one into main (merge): [commit] — 1 commit, 1 file.
      [commit] auto-claude: only - Do it
    Branch auto-claude/001-one was deleted (its tip is kept in the backup).
    Backup: refs/auto-claude/backup/001-one/[stamp]. Undo with: runner undo --spec 001-one
    ");
    // One backup now, a moment old.
    let out = repo.runner(&["gc", "--older-than", "1"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "Removed 0 backups older than 1 day; 1 kept.\n"
    );
    let out = repo.runner(&["gc", "--older-than", "0"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).starts_with("Removed 1 backup older than 0 days; 0 kept.\n"),
        "{}",
        stdout(&out)
    );
    let merged = repo.runner(&["merge", "--spec", "002-three", "--yes"]);
    assert_exit(&merged, 0);
    assert!(
        stdout(&merged).contains(" — 3 commits, 3 files.\n"),
        "{}",
        stdout(&merged)
    );

    // Without a run of its own: a session, the one that ran.
    repo.add_spec("003-pre");
    repo.write_plan("003-pre", ONE);
    let out = repo.run_spec("003-pre", &[]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "003-pre: complete — 1/1 chunk on auto-claude/003-pre (1 session)\n"
    );
}
