use std::io::Read;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::*;

/// Start `argv` with its output into a pipe; the child and the pipe's reading end.
fn start_with(
    argv: &[&str],
    cwd: &Path,
    env: &[(&str, &str)],
    stdin: Option<OwnedFd>,
) -> std::io::Result<(Child, std::io::PipeReader)> {
    let (reader, writer) = std::io::pipe().unwrap();
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let child = start(Start {
        argv: &argv,
        cwd,
        env: &env,
        stdin,
        stdout: OwnedFd::from(writer.try_clone().unwrap()),
        stderr: OwnedFd::from(writer),
    })?;
    Ok((child, reader))
}

fn wait(child: &mut Child) -> ExitStatus {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(child.wait())
        .unwrap()
}

fn output(mut reader: std::io::PipeReader) -> String {
    let mut text = String::new();
    reader.read_to_string(&mut text).unwrap();
    text
}

#[test]
fn the_program_is_found_on_the_childs_path_with_its_arguments_folder_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, reader) = start_with(
        &[
            "sh",
            "-c",
            "echo \"$RUNNER_TEST_VALUE $(pwd) $0 $1\"; exit 3",
            "a b",
            "c",
        ],
        dir.path(),
        &[
            ("RUNNER_TEST_VALUE", "given"),
            ("PATH", "/nowhere:/usr/bin:/bin"),
        ],
        None,
    )
    .unwrap();
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(3));
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(output(reader), format!("given {} a b c\n", cwd.display()));
}

#[test]
fn a_missing_or_forbidden_program_is_an_error_of_its_own_kind() {
    let dir = tempfile::tempdir().unwrap();
    let missing = start_with(&["runner-no-such-program"], dir.path(), &[], None);
    assert_eq!(
        missing.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::NotFound)
    );
    let script = dir.path().join("not-executable");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let forbidden = start_with(&[script.to_str().unwrap()], dir.path(), &[], None);
    assert_eq!(
        forbidden.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::PermissionDenied)
    );
    let folder = start_with(&["."], dir.path(), &[], None);
    assert!(folder.is_err(), "a folder is not a program");
}

#[test]
fn a_script_without_a_hash_bang_line_runs_in_the_shell_as_with_execvp() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("plain-script");
    std::fs::write(&script, "echo \"from the shell: $1\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (mut child, reader) =
        start_with(&["./plain-script", "arg"], dir.path(), &[], None).unwrap();
    assert!(wait(&mut child).success());
    assert_eq!(output(reader), "from the shell: arg\n");
}

#[test]
fn stdin_is_what_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let (stdin_reader, mut stdin_writer) = std::io::pipe().unwrap();
    let (mut child, reader) =
        start_with(&["cat"], dir.path(), &[], Some(OwnedFd::from(stdin_reader))).unwrap();
    std::io::Write::write_all(&mut stdin_writer, b"the prompt\n").unwrap();
    drop(stdin_writer);
    assert!(wait(&mut child).success());
    assert_eq!(output(reader), "the prompt\n");
}

#[test]
fn the_child_leads_its_own_group_with_no_signal_ignored_or_blocked() {
    let dir = tempfile::tempdir().unwrap();
    // The program itself reads its own status (a shell would show its own wait's mask).
    let (mut child, reader) = start_with(
        &["grep", "-E", "^(SigIgn|SigBlk)", "/proc/self/status"],
        dir.path(),
        &[],
        None,
    )
    .unwrap();
    assert!(wait(&mut child).success());
    let text = output(reader);
    let mask = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.trim_start_matches(name).trim(), 16).unwrap()
    };
    // The test harness ignores SIGPIPE, as runner does: the child must not inherit that.
    assert_eq!(mask("SigIgn:") & (1 << (libc::SIGPIPE - 1)), 0, "{text}");
    assert_eq!(mask("SigBlk:"), 0, "{text}");
    let (mut child, reader) =
        start_with(&["cat", "/proc/self/stat"], dir.path(), &[], None).unwrap();
    assert!(wait(&mut child).success());
    let stat = output(reader);
    // pid (comm) state ppid pgrp …: the comm may hold spaces, so fields count from its end.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    assert_eq!(fields[2], child.id().to_string(), "{stat}");
}

/// Set in the process `a_stop_sent_while_the_child_starts_…` starts for its storm.
const STORM: &str = "RUNNER_TEST_STOP_STORM";

#[test]
fn a_stop_sent_while_the_child_starts_does_not_stop_it_before_execve() {
    if std::env::var_os(STORM).is_some() {
        return stop_storm();
    }
    // The storm signals a whole process group (as a Ctrl-Z does): this test runs it in a copy
    // of the test process in a group of its own, so that nothing else is stopped.
    use std::os::unix::process::CommandExt;
    let name =
        "agent::spawn::tests::a_stop_sent_while_the_child_starts_does_not_stop_it_before_execve";
    let mut storm = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads", "1"])
        .env(STORM, "1")
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = storm.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let group = Pid::from_raw(storm.id() as i32).unwrap();
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
            let _ = storm.wait();
            panic!("a child started during a storm of SIGTSTP hung (stopped before execve)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

/// SIGTSTP to this process's group, again and again, while children start. This process only
/// catches it (a caught signal is pending, blocked, in a child that is still in the group).
fn stop_storm() {
    let dir = tempfile::tempdir().unwrap();
    // A handler that only sets a flag nobody reads.
    let caught = Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(libc::SIGTSTP, caught).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopper = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Our own process group (a group of its own, see above).
                let _ = rustix::process::kill_current_process_group(Signal::TSTP);
                std::thread::sleep(Duration::from_micros(20));
            }
        })
    };
    for _ in 0..500 {
        let (mut child, _reader) = start_with(&["true"], dir.path(), &[], None).unwrap();
        assert!(wait(&mut child).success());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    stopper.join().unwrap();
}

#[test]
fn the_environment_takes_a_key_given_twice_once_with_its_last_value_and_refuses_nul() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, reader) = start_with(
        &[
            "sh",
            "-c",
            "env | grep -c '^RUNNER_TEST_TWICE='; echo \"$RUNNER_TEST_TWICE\"",
        ],
        dir.path(),
        &[
            ("RUNNER_TEST_TWICE", "first"),
            ("RUNNER_TEST_TWICE", "second"),
        ],
        None,
    )
    .unwrap();
    assert!(wait(&mut child).success());
    assert_eq!(output(reader), "1\nsecond\n");
    let nul = start_with(&["echo", "a\0b"], dir.path(), &[], None);
    assert_eq!(
        nul.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::InvalidInput)
    );
    let empty = start_with(&[""], dir.path(), &[], None);
    assert_eq!(
        empty.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::NotFound)
    );
}

#[test]
fn the_child_gets_sigterm_when_the_thread_that_started_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    // PR_SET_PDEATHSIG fires when the starting thread ends (as when runner dies).
    let (mut child, _reader) =
        std::thread::spawn(move || start_with(&["sleep", "30"], &path, &[], None).unwrap())
            .join()
            .unwrap();
    let started = Instant::now();
    let status = wait(&mut child);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_child_dropped_before_it_ended_is_killed_and_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let (child, _reader) = start_with(&["sleep", "30"], dir.path(), &[], None).unwrap();
    let pid = child.id();
    let state = Arc::clone(&child.state);
    drop(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !state.lock().unwrap().done {
        assert!(Instant::now() < deadline, "the child was not killed");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Reaped: the pid is no child of ours any more.
    let r = rustix::process::waitpid(Pid::from_raw(pid), WaitOptions::NOHANG);
    assert_eq!(r.err(), Some(rustix::io::Errno::CHILD));
}
