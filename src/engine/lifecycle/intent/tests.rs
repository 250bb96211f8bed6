//! Unit tests of the lifecycle intent rules.

use super::*;

fn intent(op: Op, mode: Option<&str>) -> Intent {
    Intent {
        mode: mode.map(str::to_string),
        target: Some("main".into()),
        main_files: true,
        ..Intent::new(
            op,
            "001-x",
            "refs/auto-claude/backup/001-x/20261123T040000Z".into(),
            "auto-claude/001-x".into(),
        )
    }
}

fn facts(backup_whole: bool, target: TargetNow, index_is_merged: bool) -> Facts {
    Facts {
        backup_whole,
        target,
        index_is_merged,
    }
}

#[test]
fn discard_goes_forward_only_with_a_whole_backup() {
    let d = intent(Op::Discard, None);
    assert_eq!(
        direction(&d, facts(true, TargetNow::Elsewhere, false)),
        Direction::Forward
    );
    assert_eq!(
        direction(&d, facts(false, TargetNow::Elsewhere, false)),
        Direction::Back
    );
}

#[test]
fn a_merge_goes_forward_once_the_target_moved_to_the_result() {
    for mode in ["merge", "squash"] {
        let m = intent(Op::Merge, Some(mode));
        assert_eq!(
            direction(&m, facts(true, TargetNow::After, false)),
            Direction::Forward
        );
        assert_eq!(
            direction(&m, facts(true, TargetNow::PastAfter, false)),
            Direction::Forward
        );
        assert_eq!(
            direction(&m, facts(true, TargetNow::Before, true)),
            Direction::Back
        );
        assert_eq!(
            direction(&m, facts(false, TargetNow::Before, false)),
            Direction::Back
        );
        assert!(matches!(
            direction(&m, facts(true, TargetNow::Elsewhere, false)),
            Direction::Human(_)
        ));
    }
}

#[test]
fn a_no_commit_merge_goes_forward_once_the_index_is_the_merge() {
    let m = intent(Op::Merge, Some("no-commit"));
    assert_eq!(
        direction(&m, facts(true, TargetNow::Before, true)),
        Direction::Forward
    );
    assert_eq!(
        direction(&m, facts(true, TargetNow::Before, false)),
        Direction::Back
    );
    assert!(matches!(
        direction(&m, facts(true, TargetNow::Elsewhere, true)),
        Direction::Human(_)
    ));
}

#[test]
fn an_intent_naming_another_specs_refs_is_refused() {
    let own = intent(Op::Discard, None);
    assert_eq!(foreign_names(&own, "001-x"), None);
    assert!(foreign_names(&own, "001-y").is_some());
    for backup in [
        "refs/heads",
        "refs/auto-claude/backup/001-x",
        "refs/auto-claude/backup/001-x/a/b",
        "refs/auto-claude/backup/001-xy/s",
        "refs/auto-claude/backup/001-x/*",
        "refs/auto-claude/backup/001-x/20261123T040000Z-*",
        "refs/auto-claude/backup/001-x/s",
    ] {
        let bad = Intent {
            backup: backup.into(),
            ..own.clone()
        };
        assert!(foreign_names(&bad, "001-x").is_some(), "{backup}");
    }
    let bad = Intent {
        branch: "main".into(),
        ..own
    };
    assert!(foreign_names(&bad, "001-x").is_some());
}

#[test]
fn undo_always_goes_forward() {
    let u = intent(Op::Undo, None);
    assert_eq!(
        direction(&u, facts(false, TargetNow::Elsewhere, false)),
        Direction::Forward
    );
}
