//! Shell completion's candidates: the repository's spec names and run ids, from folder
//! listings only — no plan and no run record is read, so completing stays quick however long
//! the plans, and a broken file cannot make it fail.

use std::time::SystemTime;

use super::Ctx;
use crate::store;

/// A run id to offer, with the spec it belongs to (shells that show a description show it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCandidate {
    pub id: String,
    pub spec: String,
}

/// The spec folders whose names are spec names (`store::spec::check_name`: a name that is not
/// UTF-8 or holds a control character is no spec, and is not offered), sorted; of those, only
/// the names a shell reads as they are (see [`offered`]).
pub fn spec_names(ctx: &Ctx) -> Vec<String> {
    store::spec::list(&ctx.ws.specs_dir)
        .into_iter()
        .filter(|name| offered(name))
        .collect()
}

/// Whether a spec name may be offered to a shell: a candidate is put on the command line as
/// it is, unquoted (bash's COMPREPLY), so a folder named `001-$(cmd)` or ``001-`cmd` `` that a
/// repository ships would run `cmd` when the completed line is entered. Letters, digits and
/// `-_.+,%@` only; the other names can still be typed (quoted) by hand.
fn offered(name: &str) -> bool {
    name.chars()
        .all(|c| c.is_alphanumeric() || "-_.+,%@".contains(c))
}

/// The run ids of every spec, the most recently written record first (ids are not in time
/// order; one stat per record tells).
pub fn run_ids(ctx: &Ctx) -> Vec<RunCandidate> {
    let mut found: Vec<(Option<SystemTime>, RunCandidate)> = Vec::new();
    for spec in store::spec::list(&ctx.ws.specs_dir) {
        let Ok(paths) = ctx.ws.spec(&spec) else {
            continue;
        };
        for id in store::runs::list(&paths.dir) {
            let written = std::fs::symlink_metadata(store::runs::path(&paths.dir, &id))
                .and_then(|m| m.modified())
                .ok();
            let spec = spec.clone();
            found.push((written, RunCandidate { id, spec }));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    found.into_iter().map(|(_, c)| c).collect()
}
