//! The integration tests: one test binary (linked once), one module per area. Every test runs
//! the real `runner` binary against real git repositories in temporary folders, with the
//! scriptable fake agent from `fixtures/` standing in for the LLM.

mod common;

mod agent_report;
mod budget;
mod calibration;
mod chunk;
mod cli_conventions;
mod completion;
mod continue_command;
mod corpus;
mod crash;
mod demo;
mod detect;
mod discard_ask;
mod docs;
mod fake_cli;
mod fake_drift;
mod fast_path_equals_slow_git;
mod fast_path_equals_slow_plan;
mod fast_path_equals_slow_status;
mod file_safety;
mod fleet_proof;
mod fleet_support;
mod hostile;
mod house;
mod import_circles;
mod jobs;
mod jobs_many;
mod journal_segments;
mod json_shape;
mod launchers;
mod layers;
mod layers_engine;
mod lifecycle;
mod lifecycle_safety;
mod listing;
mod live_run;
mod logs;
mod mcp;
mod mcp_tools;
mod new;
mod notify;
mod output;
mod pause_screens;
mod plan_compat;
mod plan_draft;
mod plan_only;
mod plan_reference;
mod plan_view;
mod plurals;
mod pr;
mod preset_runs;
mod presets;
#[cfg(feature = "real-clis")]
mod real_clis;
mod reattach;
mod recover;
mod remote_lifecycle;
mod remote_submit;
mod resolve_cache;
mod resolver;
mod resume;
mod resume_truth;
mod review28;
mod review29;
mod review_cli;
mod run;
mod runs;
mod shutdown;
mod snapshots;
mod status_cache;
mod transitions;
mod usage_limits;
mod user_config;
mod watch;
mod worker;
mod worker_fencing;

/// A file in `tests/it/` (or in a module's folder) that no `mod` line names is never compiled,
/// and its tests silently never run: fail instead.
#[test]
fn every_test_file_is_a_module() {
    fn missing_in(dir: &std::path::Path, parent: &str, missing: &mut Vec<String>) {
        let declares = std::fs::read_to_string(dir.join(parent)).unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let module = if entry.path().is_dir() {
                if entry.path().join("mod.rs").is_file() {
                    missing_in(&entry.path(), "mod.rs", missing);
                }
                name.clone()
            } else {
                match name.strip_suffix(".rs") {
                    Some(module) if module != "main" && module != "mod" => module.to_string(),
                    _ => continue,
                }
            };
            if !declares.contains(&format!("\nmod {module};\n")) {
                missing.push(entry.path().display().to_string());
            }
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut missing = Vec::new();
    missing_in(&dir, "main.rs", &mut missing);
    assert!(
        missing.is_empty(),
        "not declared by a `mod` line: {missing:?}"
    );
}
