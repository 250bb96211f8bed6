//! Reconstruction (`runner::engine::resume::reconstruct`) against the truth: real runs of the
//! real binary with the fake agent make the state, the test saves the plan's chunk statuses at
//! the moment the run stopped, damages the sources, and compares what reconstruction rebuilds.

use chrono::Utc;
use runner::engine::resume::{Reconstruction, Source, reconstruct};
use runner::store::Workspace;

use crate::common::*;

fn rebuilt(repo: &TestRepo, spec: &str) -> Option<Reconstruction> {
    let ws = Workspace::open(&repo.root).unwrap();
    let paths = ws.spec(spec).unwrap();
    reconstruct(&ws, &paths, Utc::now()).unwrap()
}

fn statuses(r: &Reconstruction) -> Vec<(String, String)> {
    r.chunks
        .iter()
        .map(|c| (c.id.clone(), c.status.clone()))
        .collect()
}

#[test]
fn a_run_stopped_after_two_chunks_is_rebuilt_from_its_journal() {
    let repo = repo_with_fixture_plan("001-a");
    repo.write_config("[run]\nmax_sessions = 2\n");
    assert_exit(&repo.run_spec("001-a", &[]), 5);
    let truth = repo.statuses("001-a");
    let r = rebuilt(&repo, "001-a").expect("something to rebuild from");
    assert_eq!(statuses(&r), truth);
    assert!(
        matches!(r.source, Source::Checkpoint | Source::Events),
        "{r:?}"
    );
    assert!(r.confidence >= 90, "{r:?}");
    // The chunk last worked on.
    assert_eq!(r.current_chunk.as_deref(), Some("core-b"));
}

#[test]
fn nothing_to_rebuild_from_is_none() {
    let repo = repo_with_fixture_plan("001-a");
    assert!(rebuilt(&repo, "001-a").is_none());
}
