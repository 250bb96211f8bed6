//! `runner logs`: a spec's sessions rendered for a person (for each fake CLI), one session, a
//! run's sessions, the exact bytes, JSON lines, agent escapes kept off the terminal, and
//! `--follow` before, during and after a run, through a kill and a Ctrl-C.

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;
use crate::fake_cli::{FakeCli, PRESETS};

const SPEC: &str = "001-feature";

/// The spec's session ids in the order they started (the journal's `session_start` lines:
/// their names sort by start time only to the second).
fn sessions(repo: &TestRepo, spec: &str) -> Vec<String> {
    let ids: Vec<String> = repo
        .events(spec)
        .iter()
        .filter(|e| e["event"] == "session_start")
        .map(|e| e["session_id"].as_str().unwrap().to_string())
        .collect();
    let folders = std::fs::read_dir(repo.spec_dir(spec).join("sessions"))
        .unwrap()
        .count();
    assert_eq!(
        ids.len(),
        folders,
        "a folder for each session start: {ids:?}"
    );
    ids
}

fn log_path(repo: &TestRepo, spec: &str, id: &str) -> PathBuf {
    repo.spec_dir(spec)
        .join("sessions")
        .join(id)
        .join("output.log")
}

/// The session headers of a text rendering, in order.
fn headers(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("── "))
        .map(str::to_string)
        .collect()
}

fn built(spec: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec(spec);
    assert_exit(&repo.run_spec(spec, &[]), 0);
    repo
}

#[test]
fn the_latest_session_of_each_fake_cli_reads_as_a_transcript() {
    for preset in PRESETS {
        let cli = FakeCli::new(preset, "");
        assert_exit(&cli.run(&[]), 0);
        let out = cli.runner(&["logs", "001-p"]);
        assert_exit(&out, 0);
        let text = stdout(&out);
        let shown = headers(&text);
        assert_eq!(shown.len(), 1, "{preset}: {text}");
        let latest = sessions(&cli.repo, "001-p").pop().unwrap();
        assert!(
            shown[0].starts_with("── coder polish · attempt 1 · started "),
            "{preset}: {text}"
        );
        assert!(shown[0].ends_with(&latest), "{preset}: {text}");
        assert!(!text.contains("{\"type\""), "{preset}: a raw event: {text}");
        assert!(text.lines().count() > 1, "{preset}: {text}");
        let log =
            String::from_utf8_lossy(&std::fs::read(log_path(&cli.repo, "001-p", &latest)).unwrap())
                .into_owned();
        match preset {
            "claude" | "gemini" => {
                assert!(
                    text.contains("  · session started (model "),
                    "{preset}: {text}"
                );
                assert!(text.contains("  · finished ("), "{preset}: {text}");
            }
            "codex" => assert!(text.contains("  · session started\n"), "{text}"),
            // aider prints text: its lines, as written.
            _ => {
                let first = log.lines().find(|l| !l.trim().is_empty()).unwrap();
                assert!(text.contains(first.trim()), "{text}\n---\n{log}");
            }
        }
    }
}

#[test]
fn one_session_or_every_session_of_a_run_in_order() {
    let repo = built(SPEC);
    let ids = sessions(&repo, SPEC);
    assert_eq!(ids.len(), 4, "a planner and three coders: {ids:?}");
    let planner = repo.runner(&["logs", SPEC, "--session", &ids[0]]);
    assert_exit(&planner, 0);
    let shown = headers(&stdout(&planner));
    assert_eq!(shown.len(), 1);
    assert!(
        shown[0].starts_with("── planner · attempt 1 · started "),
        "{shown:?}"
    );

    let runs = run_ids(&repo, SPEC);
    assert_eq!(runs.len(), 1);
    let out = repo.runner(&["logs", "--spec", SPEC, "--run", &runs[0][..6]]);
    assert_exit(&out, 0);
    let shown = headers(&stdout(&out));
    let words: Vec<&str> = shown
        .iter()
        .map(|h| h.split(" · ").next().unwrap())
        .collect();
    assert_eq!(
        words,
        [
            "── planner",
            "── coder core-a",
            "── coder core-b",
            "── coder polish"
        ]
    );
    for (h, id) in shown.iter().zip(&ids) {
        assert!(h.ends_with(id.as_str()), "{h} {id}");
    }
    // The spec is found as everywhere: by its number, and as the only one.
    let by_number = repo.runner(&["logs", "001"]);
    assert_eq!(stdout(&by_number), stdout(&repo.runner(&["logs"])));
    assert!(headers(&stdout(&by_number))[0].contains("coder polish"));
}

#[test]
fn a_session_or_run_that_is_not_the_specs_is_refused_with_nothing_written() {
    let repo = built(SPEC);
    repo.add_spec("002-other");
    for bad in [
        vec!["--session", "20990101T000000Z-ffff-coder-x-a1"],
        vec!["--session", "../../../etc/passwd"],
        vec!["--run", "r0000"],
        vec!["--run", "nonsense"],
    ] {
        let mut args = vec!["logs", SPEC];
        args.extend(&bad);
        let out = repo.runner(&args);
        assert_exit(&out, 2);
        assert_eq!(stdout(&out), "", "{bad:?}");
        assert!(stderr(&out).contains("has no"), "{bad:?}: {}", stderr(&out));
    }
    // Another spec's session is not this one's.
    let theirs = sessions(&repo, SPEC).pop().unwrap();
    let out = repo.runner(&["logs", "002-other", "--session", &theirs]);
    assert_exit(&out, 2);
    assert!(stdout(&out).is_empty());
}

#[test]
fn a_spec_with_no_sessions_says_so_with_exit_2() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let out = repo.runner(&["logs", SPEC]);
    assert_exit(&out, 2);
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert!(err.contains("has no sessions yet"), "{err}");
    assert!(err.contains("--follow"), "the hint: {err}");
    let json = repo.runner(&["logs", SPEC, "--json"]);
    assert_exit(&json, 2);
    let v: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(v["error"]["code"], 2);
}

#[test]
fn raw_is_the_exact_bytes_and_json_is_one_object_a_line() {
    let cli = FakeCli::new("claude", "");
    assert_exit(&cli.run(&[]), 0);
    let latest = sessions(&cli.repo, "001-p").pop().unwrap();
    let raw = cli.runner(&["logs", "001-p", "--raw"]);
    assert_exit(&raw, 0);
    assert_eq!(
        raw.stdout,
        std::fs::read(log_path(&cli.repo, "001-p", &latest)).unwrap()
    );

    let json = cli.runner(&["logs", "001-p", "--json"]);
    assert_exit(&json, 0);
    let lines: Vec<Value> = stdout(&json)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines[0]["kind"], "session");
    assert_eq!(lines[0]["role"], "coder");
    assert_eq!(lines[0]["chunk"], "polish");
    assert!(lines[0]["run_id"].is_string(), "{}", lines[0]);
    for l in &lines {
        assert_eq!(l["schema"], 1);
        assert_eq!(l["spec"], "001-p");
        assert_eq!(l["session_id"], latest.as_str());
        assert!(
            ["session", "said", "tool", "result", "note"].contains(&l["kind"].as_str().unwrap()),
            "{l}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l["kind"] == "note" && l["text"].as_str().unwrap().starts_with("finished")),
        "{lines:?}"
    );
}

#[test]
fn escape_sequences_in_agent_text_never_reach_stdout() {
    let repo = repo_with_fixture_plan(SPEC);
    let agent = repo.tmp.path().join("escaping-agent");
    std::fs::write(
        &agent,
        format!(
            "#!/usr/bin/env bash\nprintf 'agent says \\033]0;pwned\\007 hi \\033c reset \\033[2J\\r\\n'\nexec {}\n",
            fixture("fake-agent").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = repo.runner(&[
        "run",
        "--spec",
        SPEC,
        "--agent-command",
        agent.to_str().unwrap(),
    ]);
    assert_exit(&run, 0);
    for color in ["never", "always"] {
        let out = repo.runner(&["logs", SPEC, "--color", color]);
        assert_exit(&out, 0);
        let text = stdout(&out);
        assert!(text.contains("agent says  hi \\u{1b}c reset"), "{text:?}");
        let agent_escapes = text
            .replace("\x1b[0m", "")
            .replace("\x1b[1m", "")
            .replace("\x1b[2m", "");
        assert!(!agent_escapes.contains('\x1b'), "{text:?}");
        assert!(!text.contains('\r'), "{text:?}");
    }
    // --raw gives the bytes, as asked.
    let raw = repo.runner(&["logs", SPEC, "--raw"]);
    assert!(raw.stdout.windows(2).any(|w| w == b"\x1b]"));
}

#[test]
fn a_log_replaced_by_a_link_is_never_read() {
    let repo = built(SPEC);
    let secret = repo.tmp.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET\n").unwrap();
    let latest = sessions(&repo, SPEC).pop().unwrap();
    let log = log_path(&repo, SPEC, &latest);
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(&secret, &log).unwrap();
    for args in [
        vec!["logs", SPEC],
        vec!["logs", SPEC, "--raw"],
        vec!["logs", SPEC, "--json"],
        vec!["logs", SPEC, "-f"],
    ] {
        let out = repo.runner(&args);
        assert_exit(&out, 0);
        assert!(!stdout(&out).contains("SECRET"), "{args:?}");
        assert!(
            stderr(&out).contains("symbolic link"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// `runner ARGS` started in the background, its stdout and stderr going to files; killed if
/// still running when dropped (a failing test leaves no follower behind). `review28` uses it too.
pub struct Follower {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Follower {
    pub fn start(repo: &TestRepo, args: &[&str]) -> Follower {
        let out = repo.tmp.path().join("follow.out");
        let err = repo.tmp.path().join("follow.err");
        let child = repo
            .cmd(args)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        Follower { child, out, err }
    }

    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap()
    }

    /// Its exit code once it ended by itself (within 20 s).
    pub fn ended(&mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "logs -f did not end\nstdout:\n{}\nstderr:\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn follow_started_before_the_run_waits_then_streams_every_session_and_ends_with_it() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let mut follow = Follower::start(&repo, &["logs", SPEC, "-f"]);
    wait_for("the follower to wait", || {
        follow
            .stderr()
            .contains("waiting for the first session of spec")
    });
    let run = repo.run_spec(SPEC, &[]);
    assert_exit(&run, 0);
    assert_eq!(follow.ended(), 0, "{}", follow.stderr());
    let text = follow.stdout();
    let shown = headers(&text);
    let ids = sessions(&repo, SPEC);
    assert_eq!(shown.len(), ids.len(), "{text}");
    for (h, id) in shown.iter().zip(&ids) {
        assert!(h.ends_with(id.as_str()), "{h} {id}");
    }
    assert!(shown[0].starts_with("── planner"), "{text}");
    // What each coder printed (its report) is there, in order.
    let reported: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("reported done"))
        .collect();
    assert_eq!(reported.len(), 3, "{text}");
}

#[test]
fn follow_after_the_run_ended_prints_the_latest_session_and_exits_0() {
    let repo = built(SPEC);
    let started = Instant::now();
    let out = repo.runner(&["logs", SPEC, "--follow"]);
    assert_exit(&out, 0);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(stdout(&out), stdout(&repo.runner(&["logs", SPEC])));
}

#[test]
fn follow_ends_when_the_run_it_follows_is_killed() {
    // The run is SIGKILLed after its first coder session: its record never says it ended, but
    // its lock is free. The follower ends then, saying so, instead of waiting for ever.
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let mut follow = Follower::start(&repo, &["logs", SPEC, "-f"]);
    wait_for("the follower to wait", || {
        follow.stderr().contains("waiting")
    });
    run_killed_at(&repo, SPEC, "after_coder_session@1");
    assert_eq!(follow.ended(), 0, "{}", follow.stderr());
    assert!(
        follow.stderr().contains("stopped without ending"),
        "{}",
        follow.stderr()
    );
    let shown = headers(&follow.stdout());
    assert_eq!(
        shown.len(),
        2,
        "the planner and the killed coder: {shown:?}"
    );
    // Started after the kill: the same, at once.
    let out = repo.runner(&["logs", SPEC, "-f"]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("stopped without ending"));
    // The one continue command, as every other screen gives it.
    let command = format!("runner run --spec {SPEC} --auto-continue");
    assert!(stderr(&out).contains(&command), "{}", stderr(&out));
}

#[test]
fn ctrl_c_ends_follow_with_exit_130() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let mut follow = Follower::start(&repo, &["logs", SPEC, "-f"]);
    wait_for("the follower to wait", || {
        follow.stderr().contains("waiting")
    });
    unsafe { libc::kill(follow.child.id() as i32, libc::SIGINT) };
    assert_eq!(follow.ended(), 130);
    assert_eq!(follow.stdout(), "");
}

/// An agent script (a plain `--agent-command`) that runs the shell code `before`, waits until
/// the file `go` exists, runs `after`, then works as fake-agent does.
fn waiting_agent(repo: &TestRepo, before: &str, after: &str) -> (String, PathBuf) {
    let go = repo.tmp.path().join("go");
    let agent = repo.tmp.path().join("waiting-agent");
    std::fs::write(
        &agent,
        format!(
            "#!/usr/bin/env bash\n{before}\nwhile [ ! -e '{}' ]; do sleep 0.05; done\n{after}\nexec {}\n",
            go.display(),
            fixture("fake-agent").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    (agent.display().to_string(), go)
}

#[test]
fn follow_shows_each_line_of_a_live_session_as_it_is_written_and_a_partial_line_once_whole() {
    let repo = repo_with_fixture_plan(SPEC);
    let (agent, go) = waiting_agent(&repo, "printf 'step one\\npart'", "printf 'ial done\\n'");
    let mut run = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut follow = Follower::start(&repo, &["logs", SPEC, "-f"]);
    // The session is alive (waiting for `go`): its first line is shown, its partial one not.
    wait_for("the live line", || follow.stdout().contains("step one\n"));
    std::thread::sleep(Duration::from_millis(600));
    assert!(!follow.stdout().contains("part"), "{}", follow.stdout());
    assert!(
        run.try_wait().unwrap().is_none(),
        "the session is still running"
    );
    std::fs::write(&go, "").unwrap();
    wait_for("the rest of the line", || {
        follow.stdout().contains("partial done\n")
    });
    assert_eq!(run.wait().unwrap().code(), Some(0));
    assert_eq!(follow.ended(), 0, "{}", follow.stderr());
    // Every coder session of the run, in order, each line once.
    let text = follow.stdout();
    assert_eq!(headers(&text).len(), 3, "{text}");
    assert_eq!(text.matches("step one\n").count(), 3, "{text}");
}

#[test]
fn follow_through_a_log_cut_by_its_cap_shows_no_garbage_and_nothing_twice() {
    // The session prints past the head of its log (cap 4096: head 2048) and waits until the
    // follower has shown that, then prints 200 kB more: at its end the log is cut back to the
    // head, runner's marker and the tail, under the follower's feet.
    let repo = repo_with_fixture_plan(SPEC);
    repo.write_config("[agent]\nmax_log_bytes = 4096\n");
    let (agent, go) = waiting_agent(
        &repo,
        "echo HEAD-MARK; head -c 2970 /dev/zero | tr '\\0' x | fold -w 99; echo; echo LIVE-END",
        "head -c 200000 /dev/zero | tr '\\0' x | fold -w 99; echo; echo TAIL-MARK",
    );
    let mut run = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut follow = Follower::start(&repo, &["logs", SPEC, "-f"]);
    wait_for("the follower to read past the head", || {
        follow.stdout().contains("LIVE-END\n")
    });
    std::fs::write(&go, "").unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(0));
    assert_eq!(follow.ended(), 0, "{}", follow.stderr());
    let text = follow.stdout();
    let section: Vec<&str> = text
        .split("── ")
        .find(|s| s.starts_with("coder core-a"))
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .collect();
    let cut_note =
        |l: &str| l.starts_with("  · runner: ") && l.contains("bytes of output cut here");
    for line in &section {
        let xs = !line.is_empty() && line.len() <= 99 && line.bytes().all(|b| b == b'x');
        assert!(
            xs || cut_note(line)
                || ["HEAD-MARK", "LIVE-END", "TAIL-MARK"].contains(line)
                || line.contains("reported done"),
            "garbage: {line:?}"
        );
    }
    let at = |what: &dyn Fn(&str) -> bool| -> Vec<usize> {
        section
            .iter()
            .enumerate()
            .filter(|(_, l)| what(l))
            .map(|(i, _)| i)
            .collect()
    };
    let (head, live, cut, tail) = (
        at(&|l| l == "HEAD-MARK"),
        at(&|l| l == "LIVE-END"),
        at(&cut_note),
        at(&|l| l == "TAIL-MARK"),
    );
    assert_eq!(
        (head.len(), live.len(), cut.len(), tail.len()),
        (1, 1, 1, 1),
        "{section:?}"
    );
    assert!(head[0] < live[0] && live[0] < cut[0] && cut[0] < tail[0]);
    // Bounded: about the cap, not the 200 kB the agent printed.
    assert!(section.len() < 120, "{}", section.len());
}

#[test]
fn follow_while_a_new_run_holds_the_spec_waits_for_that_runs_sessions() {
    // An earlier run was killed after a session; a new run holds the spec but has not started
    // a session yet (paused after preparing its slot). `-f` and `--run <new> -f` show the new
    // run's sessions only, not the killed run's latest, and end with the new run.
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    run_killed_at(&repo, SPEC, "after_coder_session@1");
    let before = sessions(&repo, SPEC);
    let old_run = run_ids(&repo, SPEC).pop().unwrap();
    let agent = fixture("fake-agent").display().to_string();
    let mut run = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .env("RUNNER_FAILPOINTS", "after_prepare_slot~4000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the new run's record", || run_ids(&repo, SPEC).len() == 2);
    let new_run = run_ids(&repo, SPEC)
        .into_iter()
        .find(|r| *r != old_run)
        .unwrap();
    let mut follow = Follower::start(&repo, &["logs", SPEC, "-f"]);
    let out = repo.tmp.path().join("by-run.out");
    let mut by_run = repo
        .cmd(&["logs", SPEC, "--run", &new_run, "-f"])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the follower to wait for the new run", || {
        follow
            .stderr()
            .contains(&format!("waiting for the first session of run {new_run}"))
    });
    assert_eq!(run.wait().unwrap().code(), Some(0));
    assert_eq!(follow.ended(), 0, "{}", follow.stderr());
    assert_eq!(by_run.wait().unwrap().code(), Some(0));
    let after: Vec<String> = sessions(&repo, SPEC)
        .into_iter()
        .filter(|id| !before.contains(id))
        .collect();
    assert!(!after.is_empty());
    for text in [follow.stdout(), std::fs::read_to_string(&out).unwrap()] {
        let shown = headers(&text);
        assert_eq!(shown.len(), after.len(), "{text}");
        for (h, id) in shown.iter().zip(&after) {
            assert!(h.ends_with(id.as_str()), "{h} {id}");
        }
    }
}
