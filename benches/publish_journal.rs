//! What the worker's heartbeat costs with a long journal: `plan_to_publish` (the plan a
//! heartbeat publishes mid-session, settled against the copy kept as the session started)
//! reads the spec's whole journal at every heartbeat. A spec folder gets a journal of N events
//! (200 000 with `--bench`, 20 000 in the smoke run of `cargo test --bench publish_journal`),
//! a run unfinished and a session of its chunk under way with the agent's edit in the plan
//! file; the bench prints the median time of `plan_to_publish` and of the journal read alone.
//! Reported, no target: compare with the heartbeat's budget (a third of `fleet.lease_secs`).

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    let events = if full { 200_000 } else { 20_000 };
    match measure(events) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("publish_journal: {e}");
            ExitCode::from(2)
        }
    }
}

fn measure(events: usize) -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = tmp.path();
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()
        .map_err(|e| e.to_string())?;
    if !ok.success() {
        return Err("git init failed".into());
    }
    let dir = root.join(".auto-claude/specs/001-a");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let plan = |own: &str| {
        format!(
            r#"{{"feature":"f","phases":[{{"id":"p1","name":"p","subtasks":[
{{"id":"a","description":"A","status":"in_progress","attempts":[{{"n":1,"session_id":"s1","started_at":"2026-01-01T00:00:00Z"}}]}},
{{"id":"b","description":"B","status":"{own}"}}]}}]}}"#
        )
    };
    std::fs::write(
        dir.join("implementation_plan.json.before-session"),
        plan("pending"),
    )
    .map_err(|e| e.to_string())?;
    // The agent's edit: b marked completed.
    std::fs::write(dir.join("implementation_plan.json"), plan("completed"))
        .map_err(|e| e.to_string())?;
    let mut journal = String::new();
    journal.push_str(r#"{"time":"2026-01-01T00:00:00Z","run_id":"r1","event":"run_start","spec":"001-a","pid":1,"slot":"auto-claude-1","base_branch":"main","auto_continue":true}"#);
    journal.push('\n');
    for i in 0..events {
        journal.push_str(&format!(
            r#"{{"time":"2026-01-01T00:00:00Z","run_id":"r1","event":"chunk_report","chunk":"c{i}","report":"done","text":"the work of chunk c{i} is done and its files are written","session_id":"s0-{i}"}}"#
        ));
        journal.push('\n');
    }
    journal.push_str(r#"{"time":"2026-01-01T00:00:00Z","run_id":"r1","event":"session_start","chunk":"a","role":"coder","attempt":1,"session_id":"s1","start_commit":null}"#);
    journal.push('\n');
    std::fs::write(dir.join("events.jsonl"), &journal).map_err(|e| e.to_string())?;
    let ws = runner::store::workspace::Workspace::open(root).map_err(|e| e.to_string())?;
    let paths = ws.spec("001-a").map_err(|e| e.to_string())?;
    let time = |f: &dyn Fn() -> usize| {
        let mut samples: Vec<f64> = (0..5)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    };
    let publish = time(
        &|| match runner::engine::recovery::plan_to_publish(&paths) {
            runner::engine::recovery::PlanToPublish::Settled(p) => p.chunks().count(),
            _ => 0,
        },
    );
    let read = time(&|| runner::store::read_typed(&paths.dir).len());
    println!(
        "journal of {events} events ({} MB): plan_to_publish median {publish:.0} ms, the journal read alone {read:.0} ms",
        journal.len() / 1_000_000
    );
    Ok(())
}
