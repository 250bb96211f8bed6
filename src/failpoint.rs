//! Failpoints for crash tests: in debug builds, `RUNNER_FAILPOINTS=name` (or `name@N` for the
//! N-th time it is reached; several separated by commas) makes the process SIGKILL itself at
//! that point, exactly as a crash or `kill -9` would. `name~MS` instead pauses there for MS
//! milliseconds, to widen a race window in a test. `RUNNER_FAILPOINT_LOG=FILE` appends a line
//! `<pid> <name>` to FILE at every point reached, for tests that count steps (how many durable
//! writes a chunk costs). Release builds compile this to nothing.

#[cfg(debug_assertions)]
pub fn hit(name: &str) {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static COUNTS: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

    if let Some(log) = std::env::var_os("RUNNER_FAILPOINT_LOG") {
        use std::io::Write;
        let line = format!("{} {name}\n", std::process::id());
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
    let Ok(spec) = std::env::var("RUNNER_FAILPOINTS") else {
        return;
    };
    let Ok(mut counts) = COUNTS.lock() else {
        return;
    };
    let count = {
        let map = counts.get_or_insert_with(HashMap::new);
        let c = map.entry(name.to_string()).or_insert(0);
        *c += 1;
        *c
    };
    // Not held while pausing: another thread's point is not held up by this one's pause.
    drop(counts);
    for point in spec.split(',').map(str::trim) {
        if let Some((point_name, ms)) = point.split_once('~') {
            if point_name == name {
                std::thread::sleep(std::time::Duration::from_millis(ms.parse().unwrap_or(0)));
            }
            continue;
        }
        let (point_name, nth) = match point.split_once('@') {
            Some((n, k)) => (n, k.parse().unwrap_or(1)),
            None => (point, 1),
        };
        if point_name == name && nth == count {
            // SIGKILL on ourselves: nothing runs after it.
            let me = rustix::process::getpid();
            let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
        }
    }
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn hit(_name: &str) {}

/// For a test of the jobs' stop at once (`engine::jobs::StopJob`): in debug builds,
/// `RUNNER_FAILPOINT_STOP_JOB=SPEC:FILE` makes `run --jobs` stop that spec's job at once as soon
/// as FILE exists (looked for every 100 ms), as a worker stops a spec whose lease it lost.
#[cfg(debug_assertions)]
pub fn stop_job() -> Option<(String, std::path::PathBuf)> {
    let value = std::env::var("RUNNER_FAILPOINT_STOP_JOB").ok()?;
    let (spec, file) = value.split_once(':')?;
    Some((spec.to_string(), file.into()))
}

#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn stop_job() -> Option<(String, std::path::PathBuf)> {
    None
}
