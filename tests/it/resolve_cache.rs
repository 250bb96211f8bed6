//! The resolution cache (`.auto-claude/resolve-cache`, issue 12's resolution speed) never
//! changes an answer: `runner resume HINT --no-run --json` with a cache written before the
//! repository changed equals the same command without any cache, for every kind of hint, after
//! every kind of change behind the cache's back (a run record added, removed, rewritten in
//! place with its time set back; a plan rewritten in place by a hostile agent with its time set
//! back, replaced by a link, made invalid; a runs folder replaced by a link; a spec removed or
//! added), and with a corrupt, linked or huge cache file.

use std::path::Path;
use std::time::{Duration, SystemTime};

use runner::store::resolve_cache::{self, ResolveCache};
use runner::store::runs::{RunKind, RunRecord};

use crate::common::*;

/// Longer than the cache's margin: files written before are settled (recorded).
fn settle() {
    std::thread::sleep(Duration::from_millis(3300));
}

fn cache_path(repo: &TestRepo) -> std::path::PathBuf {
    repo.path(".auto-claude").join(resolve_cache::CACHE_FILE)
}

fn remove_cache(repo: &TestRepo) {
    let path = cache_path(repo);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path).unwrap(),
        Ok(_) => std::fs::remove_file(&path).unwrap(),
        Err(_) => {}
    }
}

/// `runner resume ARGS --no-run --json`: exit code, stdout, stderr.
fn resume(repo: &TestRepo, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["resume"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-run", "--json"]);
    let out = repo.runner(&all);
    (out.status.code(), stdout(&out), stderr(&out))
}

/// A spec with the two-phase plan (core-a, core-b, polish) at `statuses`, and `extra` merged
/// into the plan's top level.
fn add_spec(repo: &TestRepo, spec: &str, statuses: [&str; 3], extra: serde_json::Value) {
    repo.add_spec(spec);
    let text = std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap();
    let mut plan: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut n = 0;
    for phase in plan["phases"].as_array_mut().unwrap() {
        for chunk in phase["subtasks"].as_array_mut().unwrap() {
            chunk["status"] = statuses[n].into();
            n += 1;
        }
    }
    for (k, v) in extra.as_object().unwrap() {
        plan[k] = v.clone();
    }
    repo.write_plan(spec, &serde_json::to_string_pretty(&plan).unwrap());
}

/// A run record of `spec` (ended unless `open`), its run id.
fn add_record(repo: &TestRepo, spec: &str, kind: RunKind, chunk: &str, open: bool) -> String {
    let id = runner::store::ids::run_id();
    let mut record = RunRecord::starting(&id, spec, kind);
    record.chunk = Some(chunk.into());
    record.pid = 999_999;
    if !open {
        record.ended = Some(record.started);
        record.outcome = Some("interrupted".into());
    }
    runner::store::runs::write(&repo.spec_dir(spec), &record).unwrap();
    id
}

fn record_path(repo: &TestRepo, spec: &str, id: &str) -> std::path::PathBuf {
    repo.spec_dir(spec).join(format!("runs/{id}.json"))
}

/// Replace the first `from` in `path` by `to` (the same length) in place, its modification
/// time set back as it was: only the change time tells.
fn edit_in_place(path: &Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let before = std::fs::symlink_metadata(path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{}: {from}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(before).unwrap();
}

/// Every kind of hint for the repository as it is now.
fn hints(repo: &TestRepo) -> Vec<Vec<String>> {
    let mut hints: Vec<Vec<String>> = vec![vec![]];
    for entry in std::fs::read_dir(repo.path(".auto-claude/specs")).unwrap() {
        let spec = entry.unwrap().file_name().into_string().unwrap();
        hints.push(vec![spec.clone()]);
        hints.push(vec![spec[..3].to_string()]);
        hints.push(vec!["--spec".into(), spec[4..].to_string()]);
        let Ok(runs) = std::fs::read_dir(repo.spec_dir(&spec).join("runs")) else {
            continue;
        };
        for run in runs {
            let name = run.unwrap().file_name().into_string().unwrap();
            if let Some(id) = name.strip_suffix(".json") {
                hints.push(vec![id.to_string()]);
                hints.push(vec![id[..6].to_string()]);
            }
        }
    }
    for h in ["core-a", "core-b", "polish", "feature", "fix", "r0", "zzz"] {
        hints.push(vec![h.to_string()]);
    }
    hints.push(vec!["--chunk".into(), "core-b".into()]);
    hints.push(vec!["--chunk".into(), "polish".into()]);
    hints.push(vec!["--choice".into(), "2".into(), "core-b".into()]);
    hints
}

/// Each hint answered with `cache` (the bytes put back before each) equals it answered
/// without a cache. Returns how many hints were compared.
fn compare(repo: &TestRepo, cache: Option<&[u8]>, what: &str) -> usize {
    let hints = hints(repo);
    for hint in &hints {
        let args: Vec<&str> = hint.iter().map(String::as_str).collect();
        remove_cache(repo);
        if let Some(bytes) = cache {
            std::fs::write(cache_path(repo), bytes).unwrap();
        }
        let fast = resume(repo, &args);
        remove_cache(repo);
        let slow = resume(repo, &args);
        assert_eq!(
            fast, slow,
            "{what}: resume {args:?} with the cache and without"
        );
    }
    hints.len()
}

/// The cache after one resolution of each kind that reads every spec.
fn warm(repo: &TestRepo) -> Vec<u8> {
    remove_cache(repo);
    for args in [
        &["--chunk", "zzz"][..],
        &["r0000"][..],
        &["feature"][..],
        &[][..],
    ] {
        resume(repo, args);
    }
    std::fs::read(cache_path(repo)).expect("the resolution wrote its cache")
}

fn repository() -> TestRepo {
    let repo = TestRepo::new();
    let none = serde_json::json!({});
    let done = ["completed", "completed", "completed"];
    let half = ["completed", "in_progress", "pending"];
    add_spec(&repo, "001-feature-login", half, none.clone());
    add_spec(&repo, "002-feature-logout", half, none.clone());
    add_spec(&repo, "003-fix-crash", done, none.clone());
    add_spec(
        &repo,
        "004-feature-merged",
        half,
        serde_json::json!({"merged": true}),
    );
    add_spec(&repo, "005-fix-discarded", half, none.clone());
    add_spec(&repo, "006-feature-linked-runs", half, none.clone());
    add_spec(&repo, "007-fix-plan-link", half, none.clone());
    add_spec(&repo, "008-feature-gone", half, none.clone());
    add_spec(&repo, "009-fix-pending", ["pending"; 3], none);
    repo.add_spec("010-feature-unplanned");
    for spec in ["001-feature-login", "002-feature-logout", "003-fix-crash"] {
        for chunk in ["core-a", "core-b", "polish"] {
            add_record(&repo, spec, RunKind::Run, chunk, false);
        }
    }
    for spec in [
        "004-feature-merged",
        "006-feature-linked-runs",
        "007-fix-plan-link",
        "008-feature-gone",
    ] {
        add_record(
            &repo,
            spec,
            RunKind::Run,
            "core-b",
            spec == "008-feature-gone",
        );
    }
    add_record(&repo, "005-fix-discarded", RunKind::Run, "core-a", false);
    std::thread::sleep(Duration::from_millis(20));
    add_record(
        &repo,
        "005-fix-discarded",
        RunKind::Discard,
        "core-a",
        false,
    );
    repo
}

#[test]
fn resume_with_a_stale_cache_equals_resume_without_one_after_every_change() {
    let repo = repository();
    settle();
    let before = warm(&repo);
    // The cache holds every part for a settled spec with runs and a plan.
    let cache = ResolveCache::load(&repo.path(".auto-claude"));
    for spec in [
        "001-feature-login",
        "005-fix-discarded",
        "006-feature-linked-runs",
    ] {
        let e = cache.get(spec).unwrap_or_else(|| panic!("{spec} cached"));
        assert!(
            e.runs.is_some() && e.plan.is_some() && e.record.is_some(),
            "{spec}: {e:?}"
        );
    }
    let n = compare(&repo, Some(&before), "a warm cache, nothing changed");
    assert!(n > 40, "{n} hints");

    // Behind the cache's back:
    // a record added to one spec, one removed from another;
    let added = add_record(&repo, "003-fix-crash", RunKind::Run, "core-b", false);
    let logout = repo.spec_dir("002-feature-logout").join("runs");
    let first = std::fs::read_dir(&logout).unwrap().next().unwrap().unwrap();
    std::fs::remove_file(first.path()).unwrap();
    // the newest record rewritten in place (a run turned into a discard), its time set back;
    let newest = newest_record(&repo, "001-feature-login");
    edit_in_place(
        &record_path(&repo, "001-feature-login", &newest),
        "\"run\"",
        "\"dis\"",
    );
    // (an unusable record now: the warning must still be said, as without the cache)
    // a plan rewritten by a hostile agent, same size, its time set back;
    edit_in_place(&repo.plan_path("002-feature-logout"), "core-b", "core-x");
    edit_in_place(
        &repo.plan_path("009-fix-pending"),
        "\"pending\"",
        "\"blocked\"",
    );
    // a runs folder replaced by a link to another spec's;
    let linked = repo.spec_dir("006-feature-linked-runs").join("runs");
    std::fs::remove_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(repo.spec_dir("003-fix-crash").join("runs"), &linked).unwrap();
    // a plan replaced by a link to another spec's plan;
    let plan = repo.plan_path("007-fix-plan-link");
    std::fs::remove_file(&plan).unwrap();
    std::os::unix::fs::symlink(repo.plan_path("003-fix-crash"), &plan).unwrap();
    // a spec removed, another added.
    std::fs::remove_dir_all(repo.spec_dir("008-feature-gone")).unwrap();
    let done = ["completed", "completed", "completed"];
    add_spec(&repo, "011-feature-new", done, serde_json::json!({}));
    add_record(&repo, "011-feature-new", RunKind::Run, "polish", false);
    assert!(
        hints(&repo)
            .iter()
            .any(|h| h == std::slice::from_ref(&added))
    );

    // Within the racy window: nothing just changed may be trusted.
    compare(&repo, Some(&before), "changes within the racy window");
    let racy = warm(&repo);
    compare(&repo, Some(&racy), "a cache written within the racy window");
    // Settled: the same changes, recorded.
    settle();
    compare(&repo, Some(&before), "changes behind a stale cache");
    let after = warm(&repo);
    compare(&repo, Some(&after), "a warm cache after the changes");
    // A plan rewritten in place again behind the now-warm cache.
    edit_in_place(
        &repo.plan_path("001-feature-login"),
        "in_progress",
        "in_pr0gress",
    );
    compare(&repo, Some(&after), "a plan made invalid behind the cache");
}

fn newest_record(repo: &TestRepo, spec: &str) -> String {
    let runs = repo.spec_dir(spec).join("runs");
    std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap())
        .max_by_key(|e| (e.metadata().unwrap().modified().unwrap(), e.file_name()))
        .map(|e| e.file_name().into_string().unwrap())
        .and_then(|n| n.strip_suffix(".json").map(str::to_string))
        .unwrap()
}

#[test]
fn a_corrupt_linked_or_huge_cache_is_ignored_and_never_written_through() {
    let repo = repository();
    settle();
    let good = warm(&repo);
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    compare(&repo, Some(&flipped), "a corrupt cache");
    compare(&repo, Some(&good[..good.len() - 9]), "a truncated cache");
    compare(&repo, Some(b""), "an empty cache");

    // A link: read as no cache, and replaced, never written through.
    let target = repo.path("elsewhere");
    std::fs::write(&target, &good).unwrap();
    remove_cache(&repo);
    std::os::unix::fs::symlink(&target, cache_path(&repo)).unwrap();
    let through_link = resume(&repo, &["core-b"]);
    remove_cache(&repo);
    assert_eq!(through_link, resume(&repo, &["core-b"]));
    assert_eq!(
        std::fs::read(&target).unwrap(),
        good,
        "the link's target is untouched"
    );

    // Huge: not read (a sparse file past the bound).
    remove_cache(&repo);
    let f = std::fs::File::create(cache_path(&repo)).unwrap();
    f.set_len(resolve_cache::MAX_BYTES + 1).unwrap();
    drop(f);
    let huge = resume(&repo, &["feature"]);
    remove_cache(&repo);
    assert_eq!(huge, resume(&repo, &["feature"]));

    // Nothing changed: the cache is not written again.
    let every = [
        &["feature"][..],
        &["--chunk", "core-b"][..],
        &["r0000"][..],
        &[][..],
    ];
    for args in every {
        resume(&repo, args);
    }
    let written = std::fs::symlink_metadata(cache_path(&repo)).unwrap();
    let at: SystemTime = written.modified().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    for args in every {
        resume(&repo, args);
    }
    let now = std::fs::symlink_metadata(cache_path(&repo)).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((now.ino(), now.modified().unwrap()), (written.ino(), at));
}

#[test]
fn spec_folders_swapped_renamed_linked_or_moved_out_change_no_answer() {
    let repo = repository();
    settle();
    let before = warm(&repo);
    let specs = repo.path(".auto-claude/specs");
    // Two spec folders swapped (their runs folders and plans keep their identities);
    let (a, b) = (specs.join("001-feature-login"), specs.join("003-fix-crash"));
    std::fs::rename(&a, specs.join("swap")).unwrap();
    std::fs::rename(&b, &a).unwrap();
    std::fs::rename(specs.join("swap"), &b).unwrap();
    // a spec renamed;
    std::fs::rename(
        specs.join("002-feature-logout"),
        specs.join("012-feature-logout"),
    )
    .unwrap();
    // a spec folder replaced by a link to another spec's folder;
    std::fs::remove_dir_all(specs.join("005-fix-discarded")).unwrap();
    std::os::unix::fs::symlink(
        specs.join("004-feature-merged"),
        specs.join("005-fix-discarded"),
    )
    .unwrap();
    // a spec folder moved out of the repository and linked back (never opened);
    let outside = tempfile::tempdir().unwrap();
    let moved = outside.path().join("006");
    std::fs::rename(specs.join("006-feature-linked-runs"), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, specs.join("006-feature-linked-runs")).unwrap();
    // a runs folder made unreadable.
    let runs = repo.spec_dir("007-fix-plan-link").join("runs");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o311)).unwrap();
    compare(
        &repo,
        Some(&before),
        "spec folders changed within the racy window",
    );
    settle();
    compare(
        &repo,
        Some(&before),
        "spec folders changed behind a stale cache",
    );
    let after = warm(&repo);
    compare(
        &repo,
        Some(&after),
        "a warm cache after the spec folders changed",
    );
    std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_spec_folder_copied_with_its_records_is_judged_by_its_own_records() {
    let repo = repository();
    // A spec copied to start a similar one: the same run ids (and times) in both.
    let specs = repo.path(".auto-claude/specs");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(specs.join("001-feature-login"))
        .arg(specs.join("013-feature-login-copy"))
        .status()
        .unwrap();
    assert!(status.success());
    settle();
    let before = warm(&repo);
    // The copy's newest record rewritten in place: its run turned into a discard.
    let newest = newest_record(&repo, "013-feature-login-copy");
    assert_eq!(newest, newest_record(&repo, "001-feature-login"));
    let path = record_path(&repo, "013-feature-login-copy", &newest);
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record["kind"] = "discard".into();
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    compare(&repo, Some(&before), "a copied spec's record changed");
    settle();
    compare(
        &repo,
        Some(&before),
        "a copied spec's record changed, settled",
    );
    let after = warm(&repo);
    compare(
        &repo,
        Some(&after),
        "a warm cache after a copied spec's record changed",
    );
}
