//! What a published spec folder may hold (docs/fleet.md's table): the names, the one `runs/`
//! folder and the caps. `snapshot` writes and reads by these, `tree_check` and `materialize`
//! check by them.

use crate::store::journal::segments::segment_number;

/// The largest published file. runner's own files stay far below it (a journal segment
/// rotates at 4 MiB, a checkpoint is capped at 16 MiB, an 800-chunk plan is a few MiB); a
/// blob a remote claims is bigger is refused before it is read, so a hostile remote cannot
/// make runner inflate gigabytes into memory.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The most all published files of a spec may hold together.
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;

/// The most files a published folder may hold (run records and journal segments add up over
/// a spec's life; a remote's tree of millions of entries is not one of runner's).
pub const MAX_FILES: usize = 20_000;

/// The published folder's one subfolder: the run records.
pub const RUNS: &str = crate::store::runs::RUNS_DIR;

/// The published files at the top of the folder, but the journal's segments.
const TOP_FILES: [&str; 7] = [
    "spec.md",
    crate::store::spec_text::REQUIREMENTS_FILE,
    crate::plan::PLAN_FILE,
    crate::store::journal::JOURNAL_FILE,
    crate::store::checkpoint::FILE_NAME,
    crate::store::ledger::PLANNER_LEDGER,
    crate::store::journal::failures::RECORD_FILE,
];

/// Whether `name` is a published file at the top of a spec folder.
pub fn is_published_name(name: &str) -> bool {
    TOP_FILES.contains(&name) || segment_number(name).is_some()
}

/// Whether `name` is a published run record's name in `runs/`.
pub fn is_run_record_name(name: &str) -> bool {
    name.strip_suffix(".json")
        .is_some_and(crate::store::ids::is_run_id)
}
