//! Adversarial review of issue 28 (`runner logs`, `runner watch`, the live run, `[notify]`):
//! each test holds a defect found by attacking it fixed (each failed on the code before its fix).

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::logs::Follower;

const SPEC: &str = "001-feature";

/// An agent script that runs `before`, waits until the file `go` exists (30 s at most), runs
/// `after`, then works as fake-agent does.
fn waiting_agent(repo: &TestRepo, before: &str, after: &str) -> (String, PathBuf) {
    let go = repo.tmp.path().join("go");
    let agent = repo.tmp.path().join("waiting-agent");
    std::fs::write(
        &agent,
        format!(
            "#!/usr/bin/env bash\n{before}\nfor _ in $(seq 600); do [ -e '{}' ] && break; sleep 0.05; done\n{after}\nexec {}\n",
            go.display(),
            fixture("fake-agent").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    (agent.display().to_string(), go)
}

fn sessions_dir(repo: &TestRepo) -> PathBuf {
    repo.spec_dir(SPEC).join("sessions")
}

/// `logs -f` follows a run's sessions one after another. When the session it is showing loses
/// its folder (an agent `rm -rf`s its own session folder, or a person tidies up), the follower
/// never moves on: `newer_session` looks for the shown id in the listing, does not find it, and
/// gives nothing, so every later session of the same run is silently never shown.
#[test]
fn logs_follow_goes_on_to_the_next_sessions_when_the_shown_sessions_folder_is_gone() {
    let repo = repo_with_fixture_plan(SPEC);
    let (agent, go) = waiting_agent(&repo, "echo \"SAYS-$RUNNER_CHUNK_ID\"", "");
    let mut run = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut follow = Follower::start(&repo, &["logs", SPEC, "-f"]);
    wait_for("the first session's line", || {
        follow.stdout().contains("SAYS-core-a")
    });
    // The session shown loses its folder while its agent still runs.
    let first: Vec<_> = std::fs::read_dir(sessions_dir(&repo))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(first.len(), 1, "{first:?}");
    std::fs::remove_dir_all(&first[0]).unwrap();
    std::fs::write(&go, "").unwrap();
    let status = run.wait().unwrap();
    assert_eq!(follow.ended(), 0, "{}", follow.stderr());
    let later = std::fs::read_dir(sessions_dir(&repo)).unwrap().count();
    assert!(
        later >= 1,
        "the run started more sessions (run: {status:?})"
    );
    let text = follow.stdout();
    assert!(
        text.contains("SAYS-core-b"),
        "the run's next session (core-b) was never shown by logs -f ({later} later sessions):\n{text}\nstderr:\n{}",
        follow.stderr()
    );
}

static SOCKETS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A tmux server of the test's own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(dir: &Path, shell: &str) -> Option<Tmux> {
        if !isolated("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            eprintln!("NOT RUN: tmux is not installed");
            return None;
        }
        let tmux = Tmux {
            socket: format!(
                "runner-review28-{}-{}",
                std::process::id(),
                SOCKETS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
        };
        let out = tmux
            .cmd()
            .args(["new-session", "-d", "-x", "160", "-y", "30", "-c"])
            .arg(dir)
            .arg(shell)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux: {}", stderr(&out));
        Some(tmux)
    }

    fn cmd(&self) -> Command {
        let mut cmd = isolated("tmux");
        cmd.args(["-L", &self.socket, "-f", "/dev/null"]);
        cmd
    }

    fn screen(&self) -> String {
        let out = self.cmd().args(["capture-pane", "-p"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_text(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {text}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// `runner watch` shows each active run's latest agent line, read by `latest_in_log` through
/// `fs::safe::open_read`, which follows links (the log pane and `runner logs` refuse them, the
/// live run checks `symlink_metadata` first, but watch's row checks nothing). An agent that
/// replaces its `output.log` with a link to a file outside the repository gets that file's
/// last line drawn on the watcher's screen.
#[test]
fn watch_row_never_reads_an_output_log_replaced_by_a_link_to_a_file_outside_the_repository() {
    let repo = repo_with_fixture_plan(SPEC);
    let secret = repo.tmp.path().join("secret.txt");
    std::fs::write(&secret, "root:x:0:0\nTOP-SECRET-TOKEN-XYZ\n").unwrap();
    let (agent, go) = waiting_agent(
        &repo,
        &format!(
            "echo AGENT-FIRST-LINE; sleep 1; log=\"$RUNNER_SPEC_DIR/sessions/$RUNNER_SESSION_ID/output.log\"; rm -f \"$log\"; ln -s '{}' \"$log\"; echo AGENT-AFTER-LINK",
            secret.display()
        ),
        "",
    );
    let line = format!("{} watch; sleep 120", shell_words::quote(RUNNER));
    let Some(tmux) = Tmux::start(&repo.root, &line) else {
        return;
    };
    tmux.wait_text(SPEC);
    let mut run = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    tmux.wait_text("AGENT-FIRST-LINE");
    // The link is planted a second later; watch looks every 250 ms.
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut leaked = None;
    while Instant::now() < deadline {
        let screen = tmux.screen();
        if screen.contains("TOP-SECRET-TOKEN-XYZ") {
            leaked = Some(screen);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&go, "").unwrap();
    let _ = run.wait();
    assert!(
        leaked.is_none(),
        "watch drew a line of a file outside the repository, read through the agent's link:\n{}",
        leaked.unwrap_or_default()
    );
}

/// `logs -f` reading through the log's cut finds runner's marker by its words alone
/// (`find_marker`): the first `\n[runner: N bytes of output cut here … keeps the first H` line
/// whose newline sits at offset H. The head before the real marker is the agent's own output,
/// so an agent can print a forged marker that ends where the real one starts; its `N` is then
/// added to `H` unchecked (`marker.head + marker.cut`): with N = u64::MAX that overflows (a
/// panic in a debug build, a wrapped position in a release one) and the real tail is lost.
#[test]
fn logs_follow_is_not_misled_by_a_cut_marker_forged_by_the_agent_nor_overflowed_by_its_numbers() {
    use runner::store::session_log::SessionLog;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    const HEAD: usize = 2048;
    // The agent's head: lines of x, then the forged marker line, its newline at offset h and
    // its own end where the real marker's newline will be (offset HEAD).
    let forged_len = |h: usize| {
        format!(
            "\n[runner: 18446744073709551615 bytes of output cut here; the log keeps the first {h}]"
        )
        .len()
    };
    let mut h = HEAD - 90;
    while h + forged_len(h) != HEAD {
        h = HEAD - forged_len(h);
    }
    let forged = format!(
        "\n[runner: 18446744073709551615 bytes of output cut here; the log keeps the first {h}]"
    );
    let mut head = Vec::new();
    while head.len() + 50 < h {
        head.extend_from_slice(&[b'x'; 49]);
        head.push(b'\n');
    }
    head.resize(h, b'x');
    head.extend_from_slice(forged.as_bytes());
    assert_eq!(head.len(), HEAD);
    // Live: the follower reads the head and some more.
    let mut live = head.clone();
    while live.len() < 3000 {
        live.extend_from_slice(b"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n");
    }
    std::fs::write(&path, &live).unwrap();
    let mut log = SessionLog::new(&path);
    let mut shown = Vec::new();
    loop {
        let got = log.read_lines();
        if got.is_empty() {
            break;
        }
        shown.extend(got);
    }
    // The session ends: its output went on for 200 kB, and runner cuts the log as
    // `agent::capture` does (head, marker, tail), in place.
    let mut tail = Vec::new();
    while tail.len() < HEAD - 9 {
        tail.extend_from_slice(b"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\n");
    }
    tail.truncate(HEAD - 9);
    tail.extend_from_slice(b"TAIL-END\n");
    let marker = format!(
        "\n[runner: 200000 bytes of output cut here; the log keeps the first {HEAD} and the last {} bytes (agent.max_log_bytes = 4096)]\n",
        tail.len()
    );
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(HEAD as u64).unwrap();
    f.write_all_at(marker.as_bytes(), HEAD as u64).unwrap();
    f.write_all_at(&tail, (HEAD + marker.len()) as u64).unwrap();
    drop(f);
    std::thread::sleep(Duration::from_millis(20));
    let after = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut after = Vec::new();
        for _ in 0..10 {
            after.extend(log.read_lines());
        }
        after.extend(log.rest());
        after
    }));
    let after = after.unwrap_or_else(|_| {
        panic!("reading the cut log panicked on the agent's forged marker (see above)")
    });
    let text = String::from_utf8_lossy(&after);
    assert!(
        text.contains("TAIL-END"),
        "the real tail after the cut was never shown:\n{text}"
    );
}

/// CPU time (user + system) of process `pid` so far, in clock ticks.
fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// watch's log pane asks for the spec's newest session every 250 ms (`follow_pane` →
/// `newest_session` → `sessions::list`), and `sessions::list` orders session folders that
/// share a second by reading the journal newest first until it finds each one's start line.
/// Two folders of the same second that the journal does not know (an agent can make them)
/// make every look read the whole journal: an idle pane burns CPU in proportion to it.
#[test]
fn watch_pane_does_not_reread_the_journal_every_poll_when_session_folders_share_a_second() {
    let repo = repo_with_fixture_plan(SPEC);
    // A long-lived spec's journal: 20 MB of events (no session_start among them).
    let mut journal = String::new();
    let line = format!(
        "{{\"event\":\"note\",\"run_id\":\"r\",\"text\":\"{}\"}}\n",
        "n".repeat(200)
    );
    while journal.len() < 20 << 20 {
        journal.push_str(&line);
    }
    std::fs::write(repo.spec_dir(SPEC).join("events.jsonl"), journal).unwrap();
    for id in ["20260101T000000Z-coder-x-1", "20260101T000000Z-coder-y-1"] {
        let dir = repo.spec_dir(SPEC).join("sessions").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("output.log"), "hello\n").unwrap();
    }
    let line = format!("exec {} watch", shell_words::quote(RUNNER));
    let Some(tmux) = Tmux::start(&repo.root, &line) else {
        return;
    };
    tmux.wait_text(SPEC);
    let pid = {
        let out = tmux
            .cmd()
            .args(["display-message", "-p", "#{pane_pid}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    tmux.cmd().args(["send-keys", "Enter"]).output().unwrap();
    tmux.wait_text("log of");
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(&pid);
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    let used = cpu_ticks(&pid) - before;
    let ticks_per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let share = used as f64 / ticks_per_sec / start.elapsed().as_secs_f64();
    assert!(
        share < 0.05,
        "an idle watch with a log pane open used {:.0}% of a CPU",
        share * 100.0
    );
}
