//! runner never destroys the user's files or writes outside its place: `.git/info/exclude` is
//! extended as bytes, nothing is written through a planted symbolic link, agent logs are capped.

use std::os::unix::fs::symlink;
use std::path::Path;

use crate::common::*;

/// Every path committed anywhere in the repository's history.
fn every_committed_path(repo: &TestRepo) -> String {
    repo.git(&["log", "--all", "--name-only", "--format="])
}

#[test]
fn exclude_with_non_utf8_bytes_keeps_every_byte_and_hides_the_secret() {
    let repo = TestRepo::new();
    repo.add_spec("001-keys");
    let original: &[u8] = b"# notes \xff\xfe caf\xe9\n*.key\n# no newline at the end";
    let exclude = repo.path(".git/info/exclude");
    std::fs::write(&exclude, original).unwrap();
    repo.script("core-a * files id.key\n");
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 0);

    let now = std::fs::read(&exclude).unwrap();
    assert!(
        now.starts_with(original),
        "the user's bytes changed: {now:?}"
    );
    let added = String::from_utf8_lossy(&now[original.len()..]).into_owned();
    assert!(added.starts_with('\n'), "{added:?}");
    assert!(added.contains("/.auto-claude/\n") && added.contains("/.worktrees/\n"));
    assert!(repo.worktree().join("id.key").exists());
    let committed = every_committed_path(&repo);
    assert!(
        !committed.contains("id.key"),
        "secret committed: {committed}"
    );
    assert!(committed.contains("work/core-a.txt"), "{committed}");

    // A second run adds nothing.
    assert_exit(&repo.run_spec("001", &[]), 0);
    assert_eq!(std::fs::read(&exclude).unwrap(), now);
}

#[test]
fn crlf_exclude_gets_crlf_lines() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let original: &[u8] = b"*.key\r\n";
    let exclude = repo.path(".git/info/exclude");
    std::fs::write(&exclude, original).unwrap();
    assert_exit(&repo.run_spec("001", &[]), 0);
    let now = std::fs::read(&exclude).unwrap();
    assert!(now.starts_with(original));
    assert!(
        now.ends_with(b"/.auto-claude/\r\n/.worktrees/\r\n"),
        "{now:?}"
    );
}

#[test]
fn exclude_that_is_a_link_is_not_written_through() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let shared = repo.tmp.path().join("shared-exclude");
    std::fs::write(&shared, b"*.key\n").unwrap();
    let exclude = repo.path(".git/info/exclude");
    std::fs::remove_file(&exclude).ok();
    symlink(&shared, &exclude).unwrap();
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(".git/info/exclude") && err.contains("/.auto-claude/"),
        "{err}"
    );
    assert_eq!(std::fs::read(&shared).unwrap(), b"*.key\n");
    // With the lines in the shared file, the link is fine: nothing needs writing.
    std::fs::write(&shared, b"*.key\n/.auto-claude/\n/.worktrees/\n").unwrap();
    assert_exit(&repo.run_spec("001", &[]), 0);
    assert_eq!(
        std::fs::read(&shared).unwrap(),
        b"*.key\n/.auto-claude/\n/.worktrees/\n"
    );
}

/// A file outside the repository, and its content, to check nothing was written to it.
fn outside_file(repo: &TestRepo, name: &str) -> std::path::PathBuf {
    let path = repo.tmp.path().join("outside").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "precious\n").unwrap();
    path
}

fn plant_link(target: &std::path::Path, at: &std::path::Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(target, at).unwrap();
}

#[test]
fn a_link_planted_where_runner_writes_a_file_is_refused_not_followed() {
    // (path under the repository, does the run stop with exit 2)
    let cases: &[(&str, bool)] = &[
        (".auto-claude/specs/001-x/events.jsonl", true),
        (".auto-claude/specs/001-x/run.lock", true),
        (".auto-claude/specs/001-x/plan.lock", true),
        (".auto-claude/slots/auto-claude.lock", true),
        (".auto-claude/interrupted-sessions.lock", true),
        // The last-good copy is advisory: runner goes on without it.
        (
            ".auto-claude/specs/001-x/implementation_plan.json.last-good",
            false,
        ),
    ];
    for &(rel, refused) in cases {
        let repo = TestRepo::new();
        repo.add_spec("001-x");
        let existing = outside_file(&repo, "existing");
        plant_link(&existing, &repo.path(rel));
        let out = repo.run_spec("001", &[]);
        if refused {
            assert_exit(&out, 2);
            let err = stderr(&out);
            assert!(
                err.contains(rel) && err.contains("symbolic link"),
                "{rel}: {err}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(&existing).unwrap(),
            "precious\n",
            "runner wrote through the link at {rel}"
        );
        // The same with a link to a file that does not exist yet: runner must not create it.
        let repo = TestRepo::new();
        repo.add_spec("001-x");
        let missing = repo.tmp.path().join("outside-new");
        plant_link(&missing, &repo.path(rel));
        repo.run_spec("001", &[]);
        assert!(
            !missing.exists(),
            "runner created {} through {rel}",
            missing.display()
        );
    }
}

#[test]
fn a_linked_sessions_folder_is_refused_and_nothing_is_written_there() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let outside = repo.tmp.path().join("outside-sessions");
    std::fs::create_dir_all(&outside).unwrap();
    plant_link(&outside, &repo.path(".auto-claude/specs/001-x/sessions"));
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("sessions"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn recover_and_chunk_commands_do_not_write_through_links() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    std::fs::copy(fixture("plans/two-phases.json"), repo.plan_path("001-x")).unwrap();
    let journal = outside_file(&repo, "journal");
    plant_link(&journal, &repo.spec_dir("001-x").join("events.jsonl"));
    let plan_lock = outside_file(&repo, "plan-lock");
    plant_link(&plan_lock, &repo.spec_dir("001-x").join("plan.lock"));
    let run_lock = repo.tmp.path().join("outside-run-lock");
    plant_link(&run_lock, &repo.spec_dir("001-x").join("run.lock"));

    let out = repo.runner(&["recover", "--spec", "001"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("run.lock"), "{}", stderr(&out));
    let out = repo.runner(&["chunk", "done", "core-a", "--spec", "001"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("plan.lock"), "{}", stderr(&out));

    assert!(!run_lock.exists());
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), "precious\n");
    assert_eq!(std::fs::read_to_string(&plan_lock).unwrap(), "precious\n");
}

#[test]
fn state_folders_linked_outside_the_repository_are_refused() {
    for rel in [
        ".auto-claude",
        ".auto-claude/specs",
        ".auto-claude/specs/001-x",
    ] {
        let repo = TestRepo::new();
        // The real folder lives outside; the repository only has a link to it.
        let outside = repo.tmp.path().join("elsewhere");
        let spec_in_outside = Path::new(".auto-claude/specs/001-x")
            .strip_prefix(rel)
            .unwrap()
            .to_path_buf();
        std::fs::create_dir_all(outside.join(&spec_in_outside)).unwrap();
        std::fs::write(outside.join(&spec_in_outside).join("spec.md"), "# x\n").unwrap();
        plant_link(&outside, &repo.path(rel));
        let before = list_tree(&outside);
        // `status` only reads, except that it opens the workspace, which refuses the top two.
        let mut commands = vec![vec!["recover", "--spec", "001"]];
        if rel != ".auto-claude/specs/001-x" {
            commands.push(vec!["status"]);
        }
        for args in commands {
            let out = repo.runner(&args);
            assert_exit(&out, 2);
            let err = stderr(&out);
            assert!(
                err.contains(&repo.path(rel).display().to_string()) && err.contains("outside"),
                "{rel} {args:?}: {err}"
            );
        }
        let out = repo.run_spec("001", &[]);
        assert_exit(&out, 2);
        assert_eq!(list_tree(&outside), before, "runner wrote below {rel}");
    }
}

#[test]
fn a_worktrees_folder_linked_outside_the_repository_is_refused() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let outside = repo.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    plant_link(&outside, &repo.path(".worktrees"));
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains(".worktrees"), "{}", stderr(&out));
    assert!(list_tree(&outside).is_empty(), "{:?}", list_tree(&outside));
}

/// Every path below `dir`, sorted.
fn list_tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The session logs of a spec, by file name (`output.log`, `verification.log`).
fn session_logs(repo: &TestRepo, spec: &str, name: &str) -> Vec<std::path::PathBuf> {
    let dir = repo.spec_dir(spec).join("sessions");
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().join(name))
        .filter(|p| p.exists())
        .collect();
    logs.sort();
    logs
}

const CAP: usize = 64 * 1024;
/// The marker line is short; allow for it.
const MARKER_ROOM: usize = 300;

#[test]
fn a_runaway_agents_log_is_capped_to_head_and_tail() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    repo.write_config(&format!("[agent]\nmax_log_bytes = {CAP}\n"));
    // 8 MB of output from one chunk's agent.
    repo.script("core-a * loud 8000000\n");
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 0);
    let loud: Vec<Vec<u8>> = session_logs(&repo, "001-x", "output.log")
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .filter(|b| b.starts_with(b"HEAD-MARK"))
        .collect();
    assert_eq!(loud.len(), 1, "one session printed the flood");
    let log = &loud[0];
    assert!(log.len() <= CAP + MARKER_ROOM, "log is {} bytes", log.len());
    let text = String::from_utf8_lossy(log);
    // (The agent's `runner chunk done` prints a line after it.)
    let end = &text[text.len().saturating_sub(1000)..];
    assert!(end.contains("TAIL-MARK"), "tail lost: {end}");
    let marker = text
        .lines()
        .find(|l| l.contains("bytes of output cut here"))
        .expect("a marker line says what was cut");
    assert!(marker.contains("agent.max_log_bytes"), "{marker}");
    assert_eq!(
        repo.statuses("001-x")
            .iter()
            .filter(|(_, s)| s == "completed")
            .count(),
        3
    );
}

/// Run spec 001 with the two-phases plan, core-b's check replaced by `check` (a JSON fragment).
fn run_with_core_b_check(repo: &TestRepo, check: &str) -> std::process::Output {
    let plan = std::fs::read_to_string(fixture("plans/two-phases.json"))
        .unwrap()
        .replace(
            "\"command\": \"test -f work/core-b.txt\", \"expected\": \"file exists\"",
            check,
        );
    assert!(plan.contains(check));
    let plan_file = repo.tmp.path().join("plan.json");
    std::fs::write(&plan_file, plan).unwrap();
    let agent = fixture("fake-agent").display().to_string();
    repo.cmd(&["run", "--spec", "001", "--agent-command", &agent])
        .env("FAKE_AGENT_PLAN", &plan_file)
        .output()
        .unwrap()
}

#[test]
fn a_non_utf8_byte_in_a_checks_output_does_not_fail_it() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let out = run_with_core_b_check(
        &repo,
        "\"command\": \"printf 'caf\\\\351 OK'\", \"expect_output\": \"OK\"",
    );
    assert_exit(&out, 0);
    assert_eq!(repo.chunk("001-x", "core-b")["status"], "completed");
}

#[test]
fn a_verification_that_prints_a_flood_is_capped_and_still_judged_on_every_byte() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    repo.write_config(&format!("[agent]\nmax_log_bytes = {CAP}\n"));
    // The check prints 4 MB with a non-UTF-8 byte, and its expected word in the middle (cut
    // from the log).
    let out = run_with_core_b_check(
        &repo,
        "\"command\": \"head -c 2000000 /dev/zero; printf '\\\\377 ALL-GOOD '; head -c 2000000 /dev/zero; test -f work/core-b.txt\", \"expect_output\": \"ALL-GOOD\"",
    );
    assert_exit(&out, 0);
    let logs = session_logs(&repo, "001-x", "verification.log");
    assert_eq!(logs.len(), 1);
    let log = std::fs::read(&logs[0]).unwrap();
    assert!(log.len() <= CAP + MARKER_ROOM, "log is {} bytes", log.len());
    assert!(!String::from_utf8_lossy(&log).contains("ALL-GOOD"));
    assert!(String::from_utf8_lossy(&log).contains("bytes of output cut here"));
    assert_eq!(repo.chunk("001-x", "core-b")["status"], "completed");
}

/// Every path below `dir` with its length and first bytes (folders and links as markers), for
/// "nothing here changed".
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    list_tree(dir)
        .into_iter()
        .map(|rel| {
            let p = dir.join(&rel);
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let bytes = if meta.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                format!("<{:?}>", meta.file_type()).into_bytes()
            };
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into_owned();
            (rel, format!("{} bytes: {head}", bytes.len()))
        })
        .collect()
}

/// A folder outside the repository shaped like the ones runner writes in, so that a write
/// through a link to it would land on an existing name.
fn outside_folder(repo: &TestRepo) -> std::path::PathBuf {
    let outside = repo.tmp.path().join("outside-folder");
    for sub in ["", "sessions", "specs/001-x/sessions"] {
        let d = outside.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        for name in [
            "events.jsonl",
            "output.log",
            "verification.log",
            "prompt.md",
        ] {
            std::fs::write(d.join(name), "precious\n").unwrap();
        }
    }
    let plan = std::fs::read(fixture("plans/two-phases.json")).unwrap();
    for sub in ["", "specs/001-x"] {
        std::fs::write(outside.join(sub).join("implementation_plan.json"), &plan).unwrap();
        std::fs::write(outside.join(sub).join("spec.md"), "# x\n").unwrap();
    }
    outside
}

#[test]
fn a_folder_swapped_for_a_link_mid_run_stops_the_run_and_nothing_outside_changes() {
    for what in ["spec", "state", "session"] {
        let repo = TestRepo::new();
        repo.add_spec("001-x");
        let outside = outside_folder(&repo);
        let before = snapshot(&outside);
        repo.script(&format!("core-b * swap-link {what}\n"));
        // core-b has a check: after its session runner writes verification.log in the session
        // folder, the journal and the plan in the spec folder.
        let plan = std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap();
        assert!(plan.contains("test -f work/core-b.txt"));
        let agent = fixture("fake-agent").display().to_string();
        let out = repo
            .cmd(&["run", "--spec", "001", "--agent-command", &agent])
            .env("FAKE_AGENT_OUTSIDE", &outside)
            .output()
            .unwrap();
        assert_eq!(snapshot(&outside), before, "{what}: runner wrote outside");
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains("symbolic link"), "{what}: {err}");
    }
}

/// Move spec `name`'s folder outside the repository and leave a link to it in its place.
fn move_spec_outside(repo: &TestRepo, name: &str) -> std::path::PathBuf {
    let outside = repo.tmp.path().join(format!("outside-{name}"));
    std::fs::rename(repo.spec_dir(name), &outside).unwrap();
    plant_link(&outside, &repo.spec_dir(name));
    outside
}

#[test]
fn every_command_checks_the_spec_folder_however_the_spec_was_picked() {
    // The only spec, picked without --spec.
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    assert_exit(&repo.run_spec("001", &[]), 0);
    let outside = move_spec_outside(&repo, "001-x");
    let before = snapshot(&outside);
    for args in [
        vec!["review"],
        vec!["merge", "--yes"],
        vec!["discard", "--yes"],
        vec!["undo"],
    ] {
        let out = repo.runner(&args);
        assert_eq!(snapshot(&outside), before, "{args:?} wrote outside");
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains("outside"),
            "{args:?}: {}",
            stderr(&out)
        );
    }

    // The other spec a slot holds, recovered when the slot switches to this one.
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    repo.add_spec("002-y");
    assert_exit(&repo.run_spec("001", &[]), 0);
    let outside = move_spec_outside(&repo, "001-x");
    let before = snapshot(&outside);
    let out = repo.run_spec("002", &[]);
    assert_eq!(snapshot(&outside), before, "the slot switch wrote outside");
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("outside"), "{}", stderr(&out));
}

/// `runner run --spec 001` with the fake agent and `FAKE_AGENT_OUTSIDE`, killed (and the test
/// failed) if it has not ended within 60 s: a FIFO must never make runner wait forever.
fn run_bounded(repo: &TestRepo, outside: &Path) -> std::process::Output {
    let agent = fixture("fake-agent").display().to_string();
    let mut child = repo
        .cmd(&["run", "--spec", "001", "--agent-command", &agent])
        .env("FAKE_AGENT_OUTSIDE", outside)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("runner hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// (where, relative to the spec folder; planted before the run or by the agent)
const PLANTED: &[(&str, bool)] = &[
    ("events.jsonl", true),
    ("run.lock", true),
    ("plan.lock", true),
    ("sessions/SESSION/verification.log", false),
];

#[test]
fn a_hard_link_where_runner_writes_in_place_is_refused() {
    for &(rel, before_run) in PLANTED {
        let repo = TestRepo::new();
        let spec = repo.add_spec("001-x");
        let outside = outside_file(&repo, "hard-linked");
        if before_run {
            std::fs::hard_link(&outside, spec.join(rel)).unwrap();
        } else {
            repo.script(&format!("core-b * plant hard {rel}\n"));
        }
        let out = run_bounded(&repo, &outside);
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "precious\n",
            "runner wrote into the file hard-linked at {rel}"
        );
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains("hard link"), "{rel}: {err}");
    }
    // The last-good copy is advisory: runner goes on without it, and leaves it alone.
    let repo = TestRepo::new();
    let spec = repo.add_spec("001-x");
    let outside = outside_file(&repo, "hard-linked");
    std::fs::hard_link(&outside, spec.join("implementation_plan.json.last-good")).unwrap();
    repo.script("core-a * plant hard implementation_plan.json.last-good\n");
    run_bounded(&repo, &outside);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious\n");
}

#[test]
fn a_fifo_where_runner_writes_is_refused_and_never_blocks() {
    for &(rel, before_run) in PLANTED {
        let repo = TestRepo::new();
        let spec = repo.add_spec("001-x");
        if before_run {
            let made = std::process::Command::new("mkfifo")
                .arg(spec.join(rel))
                .status()
                .unwrap();
            assert!(made.success());
        } else {
            repo.script(&format!("core-b * plant fifo {rel}\n"));
        }
        let out = run_bounded(&repo, Path::new("/nonexistent"));
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains("not a regular file"), "{rel}: {err}");
    }
}

/// A tmpfs mounted for a test, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A 1 MiB tmpfs mounted on `dir` (which must exist), or `None` when not root (mounting needs
/// root; the test then says so and stops).
fn small_tmpfs(dir: &Path) -> Option<Tmpfs> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: no tmpfs to fill");
        return None;
    }
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(mounted.success());
    Some(Tmpfs(dir.to_path_buf()))
}

#[test]
fn a_full_disk_under_the_logs_does_not_fail_a_passing_check() {
    // Without root, capture::tests::a_failed_log_write_changes_no_verdict covers the rule.
    let repo = TestRepo::new();
    let spec = repo.add_spec("001-x");
    let sessions = spec.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let Some(_tmpfs) = small_tmpfs(&sessions) else {
        return;
    };
    // core-b's agent fills the session folder's disk; its check prints the expected word.
    repo.script("core-b * fill-disk\n");
    run_with_core_b_check(
        &repo,
        "\"command\": \"head -c 5000 /dev/zero; echo ALL-GOOD; test -f work/core-b.txt\", \"expect_output\": \"ALL-GOOD\"",
    );
    let check = repo
        .events("001-x")
        .into_iter()
        .find(|e| e["event"] == "verification")
        .expect("the check ran");
    assert_eq!(check["passed"], true, "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("log is incomplete"),
        "{check}"
    );
    assert_eq!(repo.chunk("001-x", "core-b")["status"], "completed");
}

#[test]
fn an_exclude_line_git_reads_differently_is_not_taken_for_runners() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    // git keeps the leading space: this pattern does not hide .auto-claude/.
    let original: &[u8] = b" /.auto-claude/\n/.worktrees/  \n";
    let exclude = repo.path(".git/info/exclude");
    std::fs::write(&exclude, original).unwrap();
    assert_exit(&repo.run_spec("001", &[]), 0);
    let now = std::fs::read(&exclude).unwrap();
    assert!(now.starts_with(original), "{now:?}");
    assert_eq!(
        &now[original.len()..],
        b"# runner: state and build worktrees\n/.auto-claude/\n",
        "{now:?}"
    );
    let status = repo.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(!status.contains(".auto-claude"), "{status}");
}

#[test]
fn runs_starting_at_once_add_runners_exclude_block_once() {
    for round in 0..2 {
        let repo = TestRepo::new();
        repo.add_spec("001-x");
        let exclude = repo.path(".git/info/exclude");
        std::fs::write(&exclude, "*.key\n").unwrap();
        let agent = fixture("fake-agent").display().to_string();
        // Each pauses between reading the file and appending to it (debug builds).
        let children: Vec<_> = (0..3)
            .map(|_| {
                repo.cmd(&["run", "--spec", "001", "--agent-command", &agent])
                    .env("RUNNER_FAILPOINTS", "exclude_before_append~300")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            c.wait().unwrap();
        }
        let text = String::from_utf8_lossy(&std::fs::read(&exclude).unwrap()).into_owned();
        assert_eq!(
            text.matches("/.auto-claude/").count(),
            1,
            "round {round}: {text}"
        );
    }
}

#[test]
fn a_full_disk_leaves_the_exclude_file_as_it_was() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let info = repo.path(".git/info");
    let saved = std::fs::read(info.join("exclude")).unwrap_or_default();
    let Some(_tmpfs) = small_tmpfs(&info) else {
        return;
    };
    // The file fills the disk but for 20 bytes: runner's block (about 60) fits only in part.
    let mut original = saved;
    let line = b"# a comment line that fills the disk\n";
    while original.len() + line.len() < 1024 * 1024 - 20 {
        original.extend_from_slice(line);
    }
    original.resize(1024 * 1024 - 20, b'#');
    original.push(b'\n');
    std::fs::write(info.join("exclude"), &original).unwrap();
    let out = repo.run_spec("001", &[]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("exclude"), "{}", stderr(&out));
    let now = std::fs::read(info.join("exclude")).unwrap();
    assert!(
        now == original,
        "a partial line was left: {:?}",
        &now[original.len()..]
    );
}

#[test]
fn a_log_cap_beyond_one_gib_is_refused_before_anything_runs() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    repo.write_config("[agent]\nmax_log_bytes = 1000000000000\n");
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("agent.max_log_bytes"),
        "{}",
        stderr(&out)
    );
    assert!(repo.agent_log().is_empty());
}

#[test]
fn recover_of_every_spec_refuses_one_linked_outside_and_goes_on() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    repo.add_spec("002-y");
    assert_exit(&repo.run_spec("001", &[]), 0);
    let outside = move_spec_outside(&repo, "001-x");
    let before = snapshot(&outside);
    let out = repo.runner(&["status", "--json"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("refused"), "{}", stdout(&out));
    let out = repo.runner(&["recover", "--json"]);
    assert_eq!(snapshot(&outside), before, "recover wrote outside");
    // The other specs are recovered; the refusal still sets the exit code (bad input).
    assert_exit(&out, 2);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let text = report.to_string();
    assert!(
        text.contains("refused") && text.contains("outside"),
        "{text}"
    );
    assert!(text.contains("002-y"), "{text}");
}
