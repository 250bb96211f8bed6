//! An agent choice made runnable: its program found (on PATH, or the path configured), ready
//! to give each session its command line (`policy::invocation`).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::RunnerError;
use crate::policy::agent_choice::AgentChoice;
use crate::policy::invocation::{Invocation, InvocationFacts, Preset, SessionMode, invocation};

/// Files of one session the command line may name.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionFiles<'a> {
    /// The planner's draft (planner sessions only).
    pub plan_draft: Option<&'a Path>,
    /// gemini's policy file (`policy::invocation::gemini_policy`).
    pub gemini_policy: Option<&'a Path>,
}

/// The agent of a run: what was chosen, and the program to run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSetup {
    pub choice: AgentChoice,
    /// What the command line starts with: the found path (a preset), or the command's first
    /// word as given (`command`: started as it always was, so a program that is missing is
    /// the session's "cannot start", recorded on its attempt).
    pub program: String,
}

impl AgentSetup {
    /// `choice` with its program found. `search` is the PATH the agent will see (runner's own
    /// folder first, then the PATH runner was given); a relative path is relative to `root`.
    /// An agent without a program, or a preset's program that is not there, is an error
    /// (exit 2) that says how to set it.
    pub fn resolve(
        choice: AgentChoice,
        root: &Path,
        search: Option<&OsStr>,
    ) -> Result<AgentSetup, RunnerError> {
        let Some(default) = choice.preset.default_program() else {
            let Some(program) = choice.program.clone() else {
                return Err(no_agent());
            };
            return Ok(AgentSetup { choice, program });
        };
        let name = choice
            .program
            .clone()
            .unwrap_or_else(|| default.to_string());
        let found = find_program(&name, root, search);
        match found {
            Some(path) => Ok(AgentSetup {
                program: path.display().to_string(),
                choice,
            }),
            None => Err(not_found(choice.preset, &name, choice.program.is_some())),
        }
    }

    /// `choice` for a recovery evaluator outside a run: found if it can be, else the program
    /// as configured (its failure to start is the evaluator's unusable answer, and the rules
    /// decide, as with any agent that cannot start). None without a program.
    pub fn resolve_or_as_given(choice: AgentChoice, root: &Path) -> Option<AgentSetup> {
        let fallback = choice
            .program
            .clone()
            .or_else(|| choice.preset.default_program().map(str::to_string))?;
        Some(
            AgentSetup::resolve(choice.clone(), root, agent_path().as_deref()).unwrap_or(
                AgentSetup {
                    choice,
                    program: fallback,
                },
            ),
        )
    }

    /// The command line of one session.
    #[allow(clippy::too_many_arguments)]
    pub fn invocation(
        &self,
        worktree: &Path,
        spec_dir: &Path,
        session_dir: &Path,
        mode: &SessionMode,
        budget_left_usd: Option<f64>,
        mcp_config: Option<&Path>,
        files: SessionFiles<'_>,
    ) -> Invocation {
        invocation(&InvocationFacts {
            preset: self.choice.preset,
            program: &self.program,
            args: &self.choice.args,
            permission: self.choice.permission,
            worktree,
            spec_dir,
            session_dir,
            prompt_file: &session_dir.join("prompt.md"),
            mode,
            budget_left_usd,
            mcp_config,
            runner: &crate::agent::prompt::runner_word(),
            plan_draft: files.plan_draft,
            gemini_policy: files.gemini_policy,
        })
    }

    /// The mode of a fresh session: claude gets a new UUID runner chose.
    pub fn fresh_mode(&self) -> SessionMode {
        SessionMode::Fresh {
            session_id: self
                .choice
                .preset
                .chooses_session_id()
                .then(crate::ids::uuid_v4),
        }
    }
}

/// The error of a run with no agent at all (also `preset = "command"` without a command).
pub fn no_agent() -> RunnerError {
    RunnerError::bad_input("no agent command").with_hint(
        "pass --agent claude|codex|gemini|aider or --agent-command \"my-agent -p\", or set [agent] preset (or command) in .auto-claude/config.toml",
    )
}

fn not_found(preset: Preset, name: &str, configured: bool) -> RunnerError {
    let fact = if configured || name.contains('/') {
        format!("the {preset} agent's program {name:?} ([agent] program) is not an executable file")
    } else {
        format!("the {preset} agent's program {name:?} was not found on PATH")
    };
    RunnerError::bad_input(fact)
        .with_hint(format!(
            "install {preset}, or set its path in .auto-claude/config.toml: [agent] program = \"/path/to/{preset}\""
        ))
        .with_hint("or choose another agent: --agent NAME (claude, codex, gemini, aider) or --agent-command \"...\"")
}

/// `name` as a program: a path (with a `/`) as given, relative to `root`; a bare name in the
/// first folder of `search` that has it as an executable file.
fn find_program(name: &str, root: &Path, search: Option<&OsStr>) -> Option<PathBuf> {
    if name.is_empty() || name.contains('\0') {
        return None;
    }
    if name.contains('/') {
        let path = root.join(name);
        return is_executable(&path).then_some(path);
    }
    std::env::split_paths(search?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The PATH an agent sees: runner's own folder first (so it can call `runner chunk`), then
/// runner's PATH.
pub fn agent_path() -> Option<std::ffi::OsString> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .into_iter()
        .collect();
    dirs.extend(std::env::split_paths(&path));
    std::env::join_paths(dirs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::invocation::Permission;

    fn choice(preset: Preset, program: Option<&str>) -> AgentChoice {
        AgentChoice {
            preset,
            program: program.map(str::to_string),
            args: vec![],
            permission: Permission::Safe,
        }
    }

    fn exe(path: &Path) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn programs_are_found_on_the_path_or_taken_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        exe(&b.join("codex"));
        std::fs::write(a.join("codex"), "not executable").unwrap();
        let search = std::env::join_paths([&a, &b, &PathBuf::from("rel")]).unwrap();
        let found =
            AgentSetup::resolve(choice(Preset::Codex, None), dir.path(), Some(&search)).unwrap();
        assert_eq!(found.program, b.join("codex").display().to_string());

        let err = AgentSetup::resolve(choice(Preset::Claude, None), dir.path(), Some(&search))
            .unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
        let text = format!("{err} {:?}", err.hints());
        assert!(
            text.contains("claude") && text.contains("[agent] program"),
            "{text}"
        );

        // A relative path is the repository's; a bare name never is.
        exe(&dir.path().join("my-gemini"));
        let found = AgentSetup::resolve(
            choice(Preset::Gemini, Some("./my-gemini")),
            dir.path(),
            Some(&search),
        )
        .unwrap();
        assert_eq!(
            found.program,
            dir.path().join("./my-gemini").display().to_string()
        );
        assert!(
            AgentSetup::resolve(
                choice(Preset::Gemini, Some("my-gemini")),
                dir.path(),
                Some(&search)
            )
            .is_err()
        );
        assert!(
            AgentSetup::resolve(choice(Preset::Aider, Some("/no/such")), dir.path(), None).is_err()
        );

        // `command` is started as given (its failure to start is the session's); none is an
        // error.
        let c = AgentSetup::resolve(choice(Preset::Command, Some("nope")), dir.path(), None);
        assert_eq!(c.unwrap().program, "nope");
        let none = AgentSetup::resolve(choice(Preset::Command, None), dir.path(), None);
        assert!(none.unwrap_err().to_string().contains("no agent command"));
    }

    #[test]
    fn only_claude_gets_a_session_id_chosen_by_runner() {
        let setup = |p| AgentSetup {
            choice: choice(p, None),
            program: "x".into(),
        };
        assert!(matches!(
            setup(Preset::Claude).fresh_mode(),
            SessionMode::Fresh {
                session_id: Some(_)
            }
        ));
        assert_eq!(
            setup(Preset::Codex).fresh_mode(),
            SessionMode::Fresh { session_id: None }
        );
    }
}
