//! The status cache (`.auto-claude/status-cache`, issue 10) never changes an answer: `status`
//! (text and `--json`) with the cache equals `status` without it, across every kind of plan
//! change (a same-size edit with its modification time set back, a rename over the plan, a
//! plan made invalid, deleted, replaced by a link, a new or removed spec, completed work lost
//! from the branch), and with a corrupt, truncated or hostile cache file; `recover --all`
//! still recovers a spec whose cached digest went stale.

use std::path::Path;
use std::time::{Duration, SystemTime};

use runner::store::status_cache::StatusCache;

use crate::common::*;

/// Longer than the cache's margin: plans written before are settled (cached by `status`).
fn settle() {
    std::thread::sleep(Duration::from_millis(3300));
}

/// `status` and `status --json`: exit code, stdout, stderr of each.
fn status_pair(repo: &TestRepo) -> Vec<(Option<i32>, String, String)> {
    [&["status"][..], &["status", "--json"][..]]
        .iter()
        .map(|args| {
            let out = repo.runner(args);
            (out.status.code(), stdout(&out), stderr(&out))
        })
        .collect()
}

fn cache_path(repo: &TestRepo) -> std::path::PathBuf {
    repo.path(".auto-claude/status-cache")
}

/// `status` as it is without a cache (the file removed first; the run writes it again).
fn status_without_cache(repo: &TestRepo) -> Vec<(Option<i32>, String, String)> {
    let path = cache_path(repo);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir_all(&path).unwrap();
    } else {
        let _ = std::fs::remove_file(&path);
    }
    status_pair(repo)
}

/// The specs the cache file holds a digest for, sorted.
fn cached(repo: &TestRepo) -> Vec<String> {
    let cache = StatusCache::load(&repo.path(".auto-claude"));
    let mut names: Vec<String> = cache.digests().map(|(n, _)| n.to_string()).collect();
    names.sort();
    names
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::symlink_metadata(path).unwrap().modified().unwrap()
}

fn set_mtime(path: &Path, t: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// Replace the first `from` in the plan by `to` (the same length), in place, and set its
/// modification time back as it was (`touch -d`): only the change time tells.
fn edit_in_place(repo: &TestRepo, spec: &str, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let path = repo.plan_path(spec);
    let before = mtime(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{spec}: {from}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    set_mtime(&path, before);
    assert_eq!(mtime(&path), before);
}

fn spec_json(repo: &TestRepo, spec: &str) -> serde_json::Value {
    let out = repo.runner(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["spec"] == spec)
        .cloned()
        .unwrap_or(serde_json::Value::Null)
}

/// Puts a cache file in some state at the path given.
type MakeCache<'a> = Box<dyn Fn(&Path) + 'a>;

const TWO_PHASES: &str = "plans/two-phases.json";

fn add_planned(repo: &TestRepo, spec: &str) {
    repo.add_spec(spec);
    std::fs::copy(fixture(TWO_PHASES), repo.plan_path(spec)).unwrap();
}

#[test]
fn status_with_the_cache_equals_status_without_it_across_every_kind_of_change() {
    let run = "001-run";
    let repo = repo_with_fixture_plan(run);
    assert_exit(&repo.run_spec(run, &[]), 0);
    for spec in [
        "010-edit",
        "011-rename",
        "012-broken",
        "013-delete",
        "014-link",
        "018-gone",
    ] {
        add_planned(&repo, spec);
    }
    repo.add_spec("015-invalid");
    repo.write_plan(
        "015-invalid",
        r#"{"phases": [{"id": "p", "subtasks": [{"id": "a"}]}]}"#,
    );
    repo.add_spec("017-unplanned");
    settle();

    let first = status_without_cache(&repo);
    assert_eq!(
        cached(&repo),
        [
            run,
            "010-edit",
            "011-rename",
            "012-broken",
            "013-delete",
            "014-link",
            "018-gone"
        ],
        "every settled plan the light read answered for, and only those"
    );
    let bytes = std::fs::read(cache_path(&repo)).unwrap();
    let written = mtime(&cache_path(&repo));
    assert_eq!(status_pair(&repo), first, "with the cache");
    assert_eq!(
        (
            std::fs::read(cache_path(&repo)).unwrap(),
            mtime(&cache_path(&repo))
        ),
        (bytes, written),
        "nothing changed, nothing written"
    );
    assert!(first[1].1.contains("\"complete\""), "{}", first[1].1);
    assert!(first[1].1.contains("invalid_plan"), "{}", first[1].1);

    // Every kind of change at once, each on a spec the cache holds.
    git_in(&repo.worktree(), &["reset", "-q", "--hard", "main"]);
    edit_in_place(&repo, "010-edit", "\"pending\"", "\"blocked\"");
    edit_in_place(&repo, "012-broken", "\"pending\"", "\"pendin_\"");
    let renamed = repo.plan_path("011-rename");
    let old_mtime = mtime(&renamed);
    let text = std::fs::read_to_string(&renamed).unwrap();
    let temp = repo.spec_dir("011-rename").join("new.json");
    std::fs::write(&temp, text.replacen("\"pending\"", "\"blocked\"", 1)).unwrap();
    set_mtime(&temp, old_mtime);
    std::fs::rename(&temp, &renamed).unwrap();
    std::fs::remove_file(repo.plan_path("013-delete")).unwrap();
    let link = repo.plan_path("014-link");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(repo.plan_path("010-edit"), &link).unwrap();
    std::fs::remove_dir_all(repo.spec_dir("018-gone")).unwrap();
    add_planned(&repo, "019-new");

    let with_cache = status_pair(&repo);
    let without = status_without_cache(&repo);
    assert_eq!(with_cache, without);
    let json = &with_cache[1].1;
    let spec = |name: &str| spec_json(&repo, name);
    assert_eq!(spec(run)["status"], "missing_work", "{json}");
    assert_eq!(spec("010-edit")["chunks"]["blocked"], 1, "{json}");
    assert_eq!(spec("011-rename")["chunks"]["blocked"], 1, "{json}");
    assert_eq!(spec("012-broken")["status"], "invalid_plan", "{json}");
    assert_eq!(spec("013-delete")["status"], "not_planned", "{json}");
    assert_eq!(spec("014-link")["chunks"]["blocked"], 1, "{json}");
    assert_eq!(spec("018-gone"), serde_json::Value::Null, "{json}");
    assert_eq!(spec("019-new")["status"], "planned", "{json}");

    // A cache file in every bad state: ignored (and replaced), the answer the same, no word.
    let good = std::fs::read(cache_path(&repo)).unwrap();
    let hostile: Vec<(&str, MakeCache)> = vec![
        (
            "garbage",
            Box::new(|p| std::fs::write(p, b"not a cache").unwrap()),
        ),
        ("empty", Box::new(|p| std::fs::write(p, b"").unwrap())),
        (
            "truncated",
            Box::new(|p| std::fs::write(p, &good[..good.len() / 2]).unwrap()),
        ),
        (
            "one byte changed",
            Box::new(|p| {
                let mut bad = good.clone();
                bad[good.len() / 3] ^= 0x20;
                std::fs::write(p, bad).unwrap()
            }),
        ),
        ("a folder", Box::new(|p| std::fs::create_dir(p).unwrap())),
        (
            "a link",
            Box::new(|p| {
                let elsewhere = p.with_file_name("elsewhere");
                std::fs::write(&elsewhere, &good).unwrap();
                std::os::unix::fs::symlink(&elsewhere, p).unwrap()
            }),
        ),
        (
            "a FIFO",
            Box::new(|p| {
                let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
                // SAFETY: a valid path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
            }),
        ),
    ];
    for (what, make) in hostile {
        let path = cache_path(&repo);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            let _ = std::fs::remove_file(&path);
        }
        make(&path);
        assert_eq!(status_pair(&repo), without, "a cache that is {what}");
        if what == "a link" {
            assert_eq!(
                std::fs::read(path.with_file_name("elsewhere")).unwrap(),
                good,
                "nothing written through the link"
            );
        }
    }
}

/// A plan changed in the clock tick it was read in keeps its size and, set back, its
/// modification time: it is never recorded while that could happen (git's racy rule).
#[test]
fn a_plan_read_just_after_a_change_is_not_recorded() {
    let repo = TestRepo::new();
    add_planned(&repo, "001-old");
    settle();
    add_planned(&repo, "002-new");
    let first = status_pair(&repo);
    assert_eq!(cached(&repo), ["001-old"], "only the settled plan");
    for spec in ["001-old", "002-new"] {
        edit_in_place(&repo, spec, "\"pending\"", "\"blocked\"");
    }
    let after = status_pair(&repo);
    assert_ne!(after, first);
    for spec in ["001-old", "002-new"] {
        assert_eq!(spec_json(&repo, spec)["chunks"]["blocked"], 1, "{spec}");
    }
    assert_eq!(after, status_without_cache(&repo));
}

/// `recover --all` reads the cache (never writes it): a spec cached as quiet whose plan now
/// has a chunk in progress is recovered, not reported clean.
#[test]
fn recover_all_sees_a_plan_changed_since_status_cached_it() {
    let repo = TestRepo::new();
    for spec in ["001-quiet", "002-changed"] {
        add_planned(&repo, spec);
    }
    settle();
    status_pair(&repo);
    assert_eq!(cached(&repo), ["001-quiet", "002-changed"]);
    let cache = std::fs::read(cache_path(&repo)).unwrap();
    let before = std::fs::read_to_string(repo.plan_path("002-changed")).unwrap();
    let path = repo.plan_path("002-changed");
    let old = mtime(&path);
    std::fs::write(&path, before.replacen("\"pending\"", "\"in_progress\"", 1)).unwrap();
    set_mtime(&path, old);

    let out = repo.runner(&["recover", "--all", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let outcome = |spec: &str| {
        report["specs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["spec"] == spec)
            .map(|s| s["outcome"].clone())
    };
    assert_eq!(outcome("001-quiet"), Some("clean".into()), "{report}");
    assert_ne!(outcome("002-changed"), Some("clean".into()), "{report}");
    assert_eq!(repo.chunk("002-changed", "core-a")["status"], "pending");
    assert_eq!(
        std::fs::read(cache_path(&repo)).unwrap(),
        cache,
        "recover wrote the cache"
    );
}

/// A spec whose attempts recorded costs, and one stopped by its budget: the cached digest
/// shows the same `spent` and the same `budget_exhausted` state as the plan itself.
#[test]
fn spent_and_budget_exhausted_come_back_from_the_cache_as_from_the_plan() {
    let cli = crate::fake_cli::FakeCli::new("claude", "[budget]\nmax_usd = 0.12\n");
    assert_exit(&cli.run(&[]), 5);
    let repo = &cli.repo;
    settle();
    let first = status_without_cache(repo);
    assert_eq!(cached(repo), ["001-p"], "the spec's digest was recorded");
    let spec = spec_json(repo, "001-p");
    assert_eq!(spec["status"], "budget_exhausted", "{spec}");
    assert!(spec["spent"]["usd"].as_f64().unwrap() > 0.0, "{spec}");
    assert!(spec["spent"]["sessions"].as_u64().unwrap() >= 2, "{spec}");
    // From the cache now: the very same answer.
    assert_eq!(status_pair(repo), first);
    assert_eq!(status_pair(repo), first);
}
