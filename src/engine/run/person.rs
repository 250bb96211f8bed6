//! A person's `runner chunk done|fail` while a run holds the spec goes through the run itself,
//! so that the run knows — in its own memory, not from a file an agent can write — which plan
//! changes a person made during a session (those stand when the session's plan is settled).
//!
//! The run listens on `<spec folder>/run.sock`. A request comes with its sender's pid from the
//! kernel (`SO_PEERCRED`): a sender of another user, or one descending from the run (its agent,
//! however it detached: the run is a subreaper, see `agent::ancestry`), is refused. The run
//! applies an accepted change under the plan lock and remembers the chunk. The sender checks
//! the other way round that it talks to the run: the process answering holds the spec's run
//! lock open and does not descend from a process that does.
//!
//! Linux only (`SO_PEERCRED`, `/proc`); elsewhere `runner chunk` edits the plan directly and the
//! settle trusts the journal's record of it (see docs/recovery.md).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::agent::ancestry;
use crate::engine::mark::{Mark, mark_as};
use crate::error::RunnerError;
use crate::store::workspace::SpecPaths;

/// The socket a live run of the spec listens on.
pub fn socket_path(paths: &SpecPaths) -> PathBuf {
    paths.dir.join("run.sock")
}

/// The run's end of the channel; stops listening and removes its socket when dropped.
pub struct Listener {
    path: PathBuf,
    changed: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    /// Chunks a person changed through the run since the last call.
    pub fn take_changes(&self) -> Vec<String> {
        std::mem::take(&mut *self.changed.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| is_socket(&m)) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn is_socket(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_socket()
}

/// Start listening (the caller holds the spec's run lock). A socket or link left at the path
/// by a dead run is removed first (a link itself, never what it points to); anything else
/// there is refused.
pub fn listen(paths: &SpecPaths) -> anyhow::Result<Option<Listener>> {
    if !cfg!(target_os = "linux") {
        return Ok(None);
    }
    let path = socket_path(paths);
    if let Ok(meta) = std::fs::symlink_metadata(&path) {
        if is_socket(&meta) || meta.file_type().is_symlink() {
            std::fs::remove_file(&path)?;
        } else {
            return Err(RunnerError::bad_input(format!(
                "{} is in the way of the run's socket; move it away",
                path.display()
            ))
            .into());
        }
    }
    let listener = UnixListener::bind(&path)
        .map_err(|e| anyhow::anyhow!("listening on {}: {e}", path.display()))?;
    listener.set_nonblocking(true)?;
    let changed = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (changed, stop, paths) = (changed.clone(), stop.clone(), paths.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => serve(&paths, stream, &changed),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        })
    };
    Ok(Some(Listener {
        path,
        changed,
        stop,
        thread: Some(thread),
    }))
}

/// The pid and uid of the process at the other end, from the kernel.
fn peer(stream: &UnixStream) -> Option<(i32, u32)> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let mut cred = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // Not rustix's `socket_peercred`: its `UCred` holds a non-zero `Pid`, and the kernel
        // gives pid 0 for a peer in a PID namespace that cannot see it.
        // SAFETY: getsockopt writes at most `len` bytes into `cred`, which is that large.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&mut cred as *mut libc::ucred).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some((cred.pid, cred.uid))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = stream;
        None
    }
}

/// Pure: may a request from `sender` (its parent chain `sender_ancestors`) change the plan as a
/// person, in the run `run_pid` of user `run_uid`?
pub fn judge_sender(
    sender: Option<(i32, u32)>,
    sender_ancestors: &[i32],
    run_pid: i32,
    run_uid: u32,
) -> Result<(), &'static str> {
    let Some((pid, uid)) = sender else {
        return Err("the sender cannot be identified");
    };
    if uid != run_uid {
        return Err("the sender is another user");
    }
    if pid == run_pid || sender_ancestors.contains(&run_pid) {
        return Err("the sender runs inside the run (an agent), not a person");
    }
    Ok(())
}

fn serve(paths: &SpecPaths, stream: UnixStream, changed: &Mutex<Vec<String>>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let sender = peer(&stream);
    let me = (
        std::process::id() as i32,
        rustix::process::getuid().as_raw(),
    );
    let chain = sender
        .map(|(p, _)| ancestry::ancestors(p))
        .unwrap_or_default();
    let mut line = String::new();
    let _ = BufReader::new(&stream).read_line(&mut line);
    let reply = match judge_sender(sender, &chain, me.0, me.1) {
        Err(why) => json!({"ok": false, "error": format!("refused by the run: {why}")}),
        Ok(()) => apply(paths, &line, changed),
    };
    let mut stream = stream;
    let _ = writeln!(stream, "{reply}");
}

fn apply(paths: &SpecPaths, line: &str, changed: &Mutex<Vec<String>>) -> Value {
    let Ok(req) = serde_json::from_str::<Value>(line) else {
        return json!({"ok": false, "error": "not a request"});
    };
    let (Some(id), Some(how)) = (req["chunk"].as_str(), req["mark"].as_str()) else {
        return json!({"ok": false, "error": "not a request"});
    };
    let mark = match how {
        "done" => Mark::Done,
        "fail" => Mark::Fail,
        _ => return json!({"ok": false, "error": "not a request"}),
    };
    // Remembered before it is applied: a change that lands must never be undone by a settle
    // that runs between the two.
    changed
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(id.to_string());
    match mark_as(paths, id, mark, req["text"].as_str(), None) {
        Ok(message) => json!({"ok": true, "message": message}),
        Err(e) => json!({"ok": false, "error": format!("{e:#}")}),
    }
}

/// A person's request, sent to the live run of the spec. `None` if no run holds the spec (the
/// caller edits the plan itself).
pub fn send(
    paths: &SpecPaths,
    id: &str,
    mark: Mark,
    text: Option<&str>,
) -> anyhow::Result<Option<String>> {
    if !cfg!(target_os = "linux") {
        return Ok(None);
    }
    let holder = match crate::store::lock::probe(&paths.run_lock)? {
        crate::store::LockState::Free => return Ok(None),
        crate::store::LockState::Held(h) => h,
    };
    let path = socket_path(paths);
    let busy = |why: String| -> anyhow::Error {
        RunnerError::Busy(format!(
            "spec {} is being run{}; {why}",
            paths.name,
            holder
                .as_ref()
                .map(|h| format!(" (pid {})", h.pid))
                .unwrap_or_default()
        ))
        .with_hint("wait for the run to end (or stop it), then try again")
        .into()
    };
    let stream = UnixStream::connect(&path).map_err(|e| {
        busy(format!(
            "its run does not answer on {}: {e}",
            path.display()
        ))
    })?;
    if !is_the_run(paths, peer(&stream)) {
        return Err(busy(format!(
            "the process answering on {} is not the run",
            path.display()
        )));
    }
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut writer = &stream;
    writeln!(
        writer,
        "{}",
        json!({"chunk": id, "mark": match mark { Mark::Done => "done", Mark::Fail => "fail" }, "text": text})
    )?;
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply)?;
    let reply: Value =
        serde_json::from_str(&reply).map_err(|_| busy("its run gave no answer".to_string()))?;
    if reply["ok"] == true {
        Ok(Some(reply["message"].as_str().unwrap_or("").to_string()))
    } else {
        Err(RunnerError::bad_input(reply["error"].as_str().unwrap_or("refused").to_string()).into())
    }
}

/// Is the process at the other end the run: it holds the spec's run lock open and no process
/// holding it is among its ancestors (an agent could open the lock file too)?
fn is_the_run(paths: &SpecPaths, server: Option<(i32, u32)>) -> bool {
    let Some((pid, _)) = server else {
        return false;
    };
    let Ok(lock) = std::fs::canonicalize(&paths.run_lock) else {
        return false;
    };
    ancestry::has_open(pid, &lock)
        && !ancestry::ancestors(pid)
            .into_iter()
            .any(|a| ancestry::has_open(a, &lock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_process_outside_the_run_of_the_same_user_is_a_person() {
        assert!(judge_sender(Some((50, 7)), &[40, 1], 10, 7).is_ok());
        assert!(judge_sender(Some((50, 7)), &[20, 10, 1], 10, 7).is_err());
        assert!(judge_sender(Some((10, 7)), &[1], 10, 7).is_err());
        assert!(judge_sender(Some((50, 8)), &[1], 10, 7).is_err());
        assert!(judge_sender(None, &[], 10, 7).is_err());
    }
}
