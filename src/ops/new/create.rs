//! `runner new`, the creation: make a spec from a description, as Auto-Claude lays one out.
//! Detection and the decision come first (`super`); this only checks
//! the input and creates the folder (`store::new_spec`: numbered under a lock, built hidden and
//! renamed into place).

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::RunnerError;
use crate::store::Workspace;

/// What to create.
#[derive(Debug, Clone, Default)]
pub struct NewSpec {
    /// The feature in a sentence or more: `requirements.json`'s `task_description`, the slug,
    /// the keywords, and `spec.md` unless `spec_text` is given.
    pub description: String,
    /// `--spec-file`'s text, for `spec.md`.
    pub spec_text: Option<String>,
    /// `--name`: the slug to use instead of the description's.
    pub name: Option<String>,
    /// The spec folders listed before detection ran (`None` when it did not: `--new-spec`):
    /// one made since with the same description is refused under the lock
    /// (`store::new_spec::create`).
    pub seen_specs: Option<Vec<String>>,
}

/// The spec made.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    pub spec: String,
    pub dir: PathBuf,
    /// `requirements.json`'s `runner_keywords`.
    pub keywords: Vec<String>,
}

/// A description with nothing visible in it is refused (exit 2).
pub fn check_description(description: &str) -> Result<(), RunnerError> {
    if crate::store::spec::is_blank(description) {
        return Err(RunnerError::bad_input(
            "the description is empty (nothing visible in it); nothing was created",
        )
        .with_hint("describe the feature: runner new \"Add a login page with JWT\""));
    }
    Ok(())
}

/// `--name` must be a slug (lowercase ASCII letters, digits, single dashes, at most 50
/// characters) and make a valid spec name.
pub fn check_name(name: &str) -> Result<(), RunnerError> {
    let hint = "for example --name add-login (the folder becomes NNN-add-login)";
    if let Some(why) = crate::policy::new_spec::slug_problem(name) {
        return Err(RunnerError::bad_input(format!("--name {name:?}: {why}")).with_hint(hint));
    }
    crate::store::spec::check_name(&format!("001-{name}"))
        .map_err(|_| RunnerError::bad_input(format!("--name {name:?} is not a valid spec name")))
        .map_err(|e| e.with_hint(hint))
}

/// `requirements.json`, in the shape Auto-Claude writes for a task given on its command line
/// (`create_requirements_from_task` in Auto-Claude's `apps/backend/spec/requirements.py`:
/// `task_description`, `workflow_type` "feature" (its default), `services_involved` [] (its
/// agents fill it in), `created_at`), plus runner's `runner_keywords` for detection. The
/// time is RFC 3339 in UTC (Auto-Claude writes a local time without a zone).
pub fn requirements(description: &str, keywords: &[String], now: DateTime<Utc>) -> String {
    let value = serde_json::json!({
        "task_description": description,
        "workflow_type": "feature",
        "services_involved": [],
        "created_at": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "runner_keywords": keywords,
    });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// Create the spec (see the module comment); nothing is written on a refusal.
pub fn create(ws: &Workspace, req: &NewSpec, now: DateTime<Utc>) -> anyhow::Result<Created> {
    check_description(&req.description)?;
    let slug = match &req.name {
        Some(name) => {
            check_name(name)?;
            name.clone()
        }
        None => crate::policy::new_spec::slug(&req.description),
    };
    let keywords = crate::policy::similar::keywords(&req.description);
    let requirements = requirements(&req.description, &keywords, now);
    // spec.md: the file's text as it is, or the description with a final newline.
    let spec_md = match &req.spec_text {
        Some(text) => text.clone(),
        None if req.description.ends_with('\n') => req.description.clone(),
        None => format!("{}\n", req.description),
    };
    ws.main.ensure_excluded()?;
    let files = crate::store::new_spec::SpecFiles {
        spec_md: spec_md.as_bytes(),
        requirements: requirements.as_bytes(),
    };
    let seen = req
        .seen_specs
        .as_deref()
        .map(|specs| crate::store::new_spec::Seen {
            specs,
            description: &req.description,
        });
    let spec =
        crate::store::new_spec::create(ws, &slug, req.name.is_some(), &files, seen.as_ref())?;
    Ok(Created {
        dir: ws.specs_dir.join(&spec),
        spec,
        keywords,
    })
}
