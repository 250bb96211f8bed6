//! The integration tests: one test binary (linked once), one module per area. Every test runs
//! the real `runner` binary against real git repositories in temporary folders, with the
//! scriptable fake agent from `fixtures/` standing in for the LLM.

mod common;

mod agent_report;
mod budget;
mod calibration;
mod chunk;
mod cli_conventions;
mod corpus;
mod crash;
mod demo;
mod detect;
mod docs;
mod fake_cli;
mod fake_drift;
mod file_safety;
mod git_speed;
mod hostile;
mod import_circles;
mod jobs;
mod journal_segments;
mod json_shape;
mod layers;
mod layers_engine;
mod lifecycle;
mod lifecycle_safety;
mod mcp;
mod mcp_tools;
mod new;
mod output;
mod plan_compat;
mod plan_draft;
mod plan_reference;
mod plan_speed;
mod preset_runs;
mod presets;
#[cfg(feature = "real-clis")]
mod real_clis;
mod recover;
mod resolve_cache;
mod resolver;
mod resume;
mod review_cli;
mod review_layers;
mod review_regress;
mod run;
mod runs;
mod session_resume;
mod shutdown;
mod slotfix;
mod snapshots;
mod status_cache;
mod status_speed;
mod transitions;
mod usage_limits;

/// A file in `tests/it/` that no `mod` line names is never compiled, and its tests silently
/// never run: fail instead.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        if module != "main" && !main.contains(&format!("\nmod {module};\n")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "not declared in tests/it/main.rs: {missing:?}"
    );
}
