//! `fetch_view` against a real bare remote holding good and hostile refs.

use std::time::Duration;

use super::*;
use crate::fleet::lease::write_lease;
use crate::fleet::net::{Expect, PushOutcome, RefUpdate, push_atomic};
use crate::fleet::pause::write_pause;
use crate::fleet::test_util::{bare_remote, commit, local_repo};

const T: Duration = Duration::from_secs(30);

fn lease() -> Lease {
    let t: chrono::DateTime<chrono::Utc> = "2026-05-01T10:00:00Z".parse().unwrap();
    Lease {
        worker: "w1".into(),
        host: "h".into(),
        pid: 7,
        taken_at: t,
        renewed_at: t,
        expires_at: t + chrono::TimeDelta::seconds(60),
        lease_secs: 60,
    }
}

fn pause(account: &str) -> AccountPause {
    let t: chrono::DateTime<chrono::Utc> = "2026-05-01T10:00:00Z".parse().unwrap();
    AccountPause {
        account: account.into(),
        until: t,
        reason: "limit".into(),
        set_by: "w1".into(),
        set_at: t,
    }
}

#[test]
fn one_fetch_shows_every_spec_lease_branch_and_pause_and_ignores_bad_names() {
    let (_remote_dir, url) = bare_remote();
    let (_w_dir, writer) = local_repo();
    let folder = commit(&writer, "folder");
    let branch = commit(&writer, "branch");
    let lease_id = write_lease(&writer, &lease()).unwrap();
    let pause_id = write_pause(&writer, &pause("claude")).unwrap();
    let other_pause = write_pause(&writer, &pause("codex")).unwrap();
    let junk = commit(&writer, "not a lease");
    let refs = [
        ("refs/runner/specs/001-a", folder),
        ("refs/heads/auto-claude/001-a", branch),
        ("refs/runner/leases/001-a", lease_id),
        ("refs/runner/leases/002-b", junk),
        ("refs/runner/pauses/claude", pause_id),
        ("refs/runner/pauses/gemini", other_pause),
        ("refs/runner/pauses/-bad", pause_id),
        ("refs/runner/specs/a/b", folder),
        ("refs/runner/specs/-x", folder),
        ("refs/heads/auto-claude/has space?", branch),
        ("refs/heads/main", branch),
    ];
    let updates: Vec<RefUpdate> = refs
        .iter()
        .filter(|(name, _)| crate::git::refs::is_valid_name(name))
        .map(|(name, id)| RefUpdate {
            dst: name.to_string(),
            new: Some(*id),
            expect: Expect::Absent,
        })
        .collect();
    let root = writer.workdir().unwrap();
    assert_eq!(
        push_atomic(root, &url, &updates, T).unwrap(),
        PushOutcome::Pushed
    );

    let (_r_dir, reader) = local_repo();
    reader.remote("origin", &url).unwrap();
    let root = reader.workdir().unwrap().to_path_buf();
    let view = fetch_view(&root, &reader, "origin", T).unwrap();
    assert_eq!(view.specs.keys().collect::<Vec<_>>(), ["001-a", "002-b"]);
    let a = &view.specs["001-a"];
    assert_eq!((a.folder, a.branch), (Some(folder), Some(branch)));
    assert_eq!(a.lease, Some((lease_id, Ok(lease()))));
    let b = &view.specs["002-b"];
    assert!(
        matches!(&b.lease, Some((id, Err(_))) if *id == junk),
        "{b:?}"
    );
    assert_eq!(view.pauses["claude"], Ok(pause("claude")));
    assert!(
        view.pauses["gemini"].is_err(),
        "a pause naming another account"
    );
    assert_eq!(view.pauses.len(), 2);
    assert_eq!(view.warnings.len(), 3, "{:?}", view.warnings);
    assert!(view.warnings.iter().any(|w| w.contains("specs/a/b")));
    // Nothing of the user's moved: no refs/remotes/, no branch.
    assert!(reader.find_reference("refs/remotes/origin/main").is_err());
    assert!(reader.find_reference("refs/heads/main").is_err());

    // A spec removed on the remote goes from the view at the next fetch (pruned copies).
    let gone = RefUpdate {
        dst: "refs/runner/leases/002-b".into(),
        new: None,
        expect: Expect::At(junk),
    };
    assert_eq!(
        push_atomic(writer.workdir().unwrap(), &url, &[gone], T).unwrap(),
        PushOutcome::Pushed
    );
    let view = fetch_view(&root, &reader, "origin", T).unwrap();
    assert_eq!(view.specs.keys().collect::<Vec<_>>(), ["001-a"]);
}

#[test]
fn a_remote_name_that_cannot_name_a_folder_of_refs_is_refused() {
    for bad in ["", "-x", "a/b", "file:///tmp/x", "..", "a b", ".x"] {
        assert!(check_remote_name(bad).is_err(), "{bad:?}");
    }
    for good in ["origin", "up-stream", "team_1"] {
        check_remote_name(good).unwrap();
    }
}
