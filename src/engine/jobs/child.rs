//! One job: a spec's own `runner run` process, its stderr read line by line into events for
//! the parent, its stdout (the `--json` summary) kept for the end.

use std::ffi::OsString;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc::UnboundedSender;

/// A line of a job's stderr longer than this is cut (the rest up to its newline is dropped).
const MAX_LINE: u64 = 64 * 1024;
/// What a job's stdout may hold: a summary is a few hundred bytes.
const MAX_STDOUT: u64 = 1024 * 1024;
/// How long the parent still reads a job's stderr once it exited (a process it left behind
/// may hold the pipe open).
const AFTER_EXIT: Duration = Duration::from_secs(2);

/// What a job tells the parent, tagged with its index.
#[derive(Debug)]
pub enum Message {
    Line(usize, String),
    Exit(usize, std::io::Result<ExitStatus>, String),
}

/// Start `program args` in `cwd` as job `index`, in a process group of its own (a Ctrl-C on
/// the terminal reaches the parent only, which forwards each signal once), dying with a
/// SIGTERM — a drain, never a kill — if the parent dies. Returns its pid.
pub fn spawn(
    index: usize,
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    tx: UnboundedSender<Message>,
) -> std::io::Result<u32> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    crate::agent::process::term_with_runner(&mut cmd);
    let mut child = cmd.spawn()?;
    let pid = child.id().unwrap_or(0);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(std::io::Error::other("the job's output pipes are missing"));
    };
    tokio::spawn(async move {
        let lines_tx = tx.clone();
        let stderr_task = tokio::spawn(read_lines(stderr, move |line| {
            let _ = lines_tx.send(Message::Line(index, line));
        }));
        let stdout_task = tokio::spawn(async move {
            let mut out = Vec::new();
            let _ = stdout.take(MAX_STDOUT).read_to_end(&mut out).await;
            String::from_utf8_lossy(&out).into_owned()
        });
        let status = child.wait().await;
        let _ = tokio::time::timeout(AFTER_EXIT, stderr_task).await;
        let out = tokio::time::timeout(AFTER_EXIT, stdout_task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let _ = tx.send(Message::Exit(index, status, out));
    });
    Ok(pid)
}

/// Every line of `reader`, each cut at [`MAX_LINE`] bytes (the rest of a longer line is
/// dropped), a byte that is not UTF-8 replaced.
async fn read_lines(reader: impl AsyncRead + Unpin, mut each: impl FnMut(String)) {
    let mut reader = BufReader::new(reader);
    let (mut line, mut rest) = (Vec::new(), Vec::new());
    loop {
        line.clear();
        if !read_capped(&mut reader, &mut line).await {
            return;
        }
        // An over-long line: skip to its end.
        while line.last() != Some(&b'\n') && line.len() as u64 == MAX_LINE {
            rest.clear();
            if !read_capped(&mut reader, &mut rest).await || rest.last() == Some(&b'\n') {
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        each(text.trim_end_matches(['\n', '\r']).to_string());
    }
}

/// Up to a newline or [`MAX_LINE`] bytes into `buf`; false at the end (or on an error).
async fn read_capped(reader: &mut (impl AsyncBufReadExt + Unpin), buf: &mut Vec<u8>) -> bool {
    matches!(reader.take(MAX_LINE).read_until(b'\n', buf).await, Ok(n) if n > 0)
}

/// Send `sig` to the job's process (not its group: the job drains its own agents).
pub fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid)
        && pid > 0
    {
        // A child this process started and has not reaped.
        if let (Some(pid), Some(sig)) = (
            rustix::process::Pid::from_raw(pid),
            rustix::process::Signal::from_named_raw(sig),
        ) {
            let _ = rustix::process::kill_process(pid, sig);
        }
    }
}

/// SIGKILL to the job's process group (its own, from `spawn`): a run that did not end when it
/// was stopped, with whatever of it shares its group.
pub fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid)
        && let Some(pid) = rustix::process::Pid::from_raw(pid)
    {
        // The group of a child this process started and has not reaped.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_at_the_cap_and_made_text() {
        let long = "x".repeat(MAX_LINE as usize * 2 + 10);
        let input = format!("one\r\n{long}\nt\u{e9}\n")
            .into_bytes()
            .into_iter()
            .chain(b"\xffend".iter().copied())
            .collect::<Vec<u8>>();
        let lines = crate::engine::block_on(async {
            let mut lines = Vec::new();
            read_lines(&input[..], |l| lines.push(l)).await;
            Ok(lines)
        })
        .unwrap();
        assert_eq!(
            lines.len(),
            4,
            "{:?}",
            lines.iter().map(String::len).collect::<Vec<_>>()
        );
        assert_eq!(lines[0], "one");
        assert_eq!(lines[1], "x".repeat(MAX_LINE as usize));
        assert_eq!(lines[2], "t\u{e9}");
        assert_eq!(lines[3], "\u{fffd}end");
    }
}
