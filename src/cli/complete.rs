//! Dynamic shell completion (clap_complete's `CompleteEnv`): a shell's completion script runs
//! `COMPLETE=<shell> runner -- <the words typed>` and runner answers with the candidates —
//! flags and commands from the clap definitions, and for the arguments that name them, the
//! repository's spec names and run ids (`ops::complete`, folder listings only). The command
//! line's `-C DIR` picks the repository, as it does for the command itself.
//!
//! A completion never asks, never fails and prints nothing on stderr: whatever cannot be read
//! (no repository, a folder refused) simply offers nothing.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::{CompleteEnv, Shells};

use runner::ops::Ctx;

/// The variable a completion script sets.
const VAR: &str = "COMPLETE";

/// When runner was started by a completion script (`COMPLETE` set), answer it and exit;
/// otherwise return at once. First thing in `main`: nothing may be printed before.
///
/// Only a shell name clap knows (`bash`, `zsh`, `fish`, …) counts: `COMPLETE` is a common word,
/// and a `COMPLETE=1` left in the environment by another tool would otherwise make every
/// runner command fail with "unknown shell".
pub fn answer_if_asked() {
    let asked =
        std::env::var(VAR).is_ok_and(|shell| Shells::builtins().completer(&shell).is_some());
    if !asked {
        return;
    }
    CompleteEnv::with_factory(super::Cli::command)
        .var(VAR)
        .complete();
}

/// The script `shell` sources to complete runner: the same as `COMPLETE=<shell> runner`
/// prints. It calls runner as it was called now (a bare name through `PATH`, a path made
/// absolute), as `CompleteEnv` does.
pub fn registration(shell: Shell) -> std::io::Result<Vec<u8>> {
    let name = shell.to_string();
    let shells = Shells::builtins();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| std::io::Error::other(format!("no completion for {name}")))?;
    let argv0 = PathBuf::from(
        std::env::args_os()
            .next()
            .unwrap_or_else(|| "runner".into()),
    );
    let called: PathBuf = match std::env::current_dir() {
        // (Its components again: `./target/debug/runner` joined leaves no `/./`.)
        Ok(cwd) if argv0.components().count() > 1 => cwd.join(argv0).components().collect(),
        _ => argv0,
    };
    let mut out = Vec::new();
    completer.write_registration(VAR, "runner", "runner", &called.to_string_lossy(), &mut out)?;
    Ok(out)
}

/// The candidates of `--spec` and the other arguments that name a spec.
pub fn spec_names() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        let Some(ctx) = context() else {
            return Vec::new();
        };
        runner::ops::complete::spec_names(&ctx)
            .into_iter()
            .map(CompletionCandidate::new)
            .collect()
    })
}

/// The candidates of the arguments that name a run (`show RUN`, `resume --run`).
pub fn run_ids() -> ArgValueCandidates {
    ArgValueCandidates::new(|| context().map(|ctx| runs_of(&ctx)).unwrap_or_default())
}

/// `resume`'s hint: a run id or a spec (the run ids first, as the newest work is there).
pub fn resume_hints() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        let Some(ctx) = context() else {
            return Vec::new();
        };
        let mut out = runs_of(&ctx);
        out.extend(
            runner::ops::complete::spec_names(&ctx)
                .into_iter()
                .map(CompletionCandidate::new),
        );
        out
    })
}

fn runs_of(ctx: &Ctx) -> Vec<CompletionCandidate> {
    runner::ops::complete::run_ids(ctx)
        .into_iter()
        .map(|run| CompletionCandidate::new(run.id).help(Some(run.spec.into())))
        .collect()
}

/// The repository the command line being completed is about; `None` when there is none.
fn context() -> Option<Ctx> {
    let words: Vec<OsString> = std::env::args_os()
        .skip_while(|a| a != "--")
        .skip(1)
        .collect();
    Ctx::open(&directory(&words)?).ok()
}

/// The folder the words run in: their last `-C DIR` (`-C DIR`, `-CDIR` or `-C=DIR`; relative
/// to the current folder; a leading `~/` is the home folder, as the shell will expand it),
/// else the current folder. Options end at `--`.
fn directory(words: &[OsString]) -> Option<PathBuf> {
    let mut dir: Option<&OsStr> = None;
    let mut words = words.iter().skip(1);
    while let Some(word) = words.next() {
        let bytes = word.as_bytes();
        if bytes == b"--" {
            break;
        }
        if bytes == b"-C" {
            dir = words.next().map(OsString::as_os_str);
        } else if let Some(rest) = bytes.strip_prefix(b"-C") {
            dir = Some(OsStr::from_bytes(rest.strip_prefix(b"=").unwrap_or(rest)));
        }
    }
    let cwd = std::env::current_dir().ok();
    let Some(dir) = dir else {
        return cwd;
    };
    let dir = match (dir.as_bytes().strip_prefix(b"~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(OsStr::from_bytes(rest)),
        _ => PathBuf::from(dir),
    };
    Some(match cwd {
        Some(cwd) => cwd.join(dir),
        None => dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &[&str]) -> Vec<OsString> {
        text.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_directory_is_the_last_dash_c() {
        let cwd = std::env::current_dir().unwrap();
        let of = |w: &[&str]| directory(&words(w)).unwrap();
        assert_eq!(of(&["runner", "run", "--spec", "x"]), cwd);
        assert_eq!(of(&["runner", "-C", "/a", "run"]), Path::new("/a"));
        assert_eq!(of(&["runner", "-C/a", "run", "-C", "/b"]), Path::new("/b"));
        assert_eq!(of(&["runner", "-C=/a", "run"]), Path::new("/a"));
        assert_eq!(of(&["runner", "-C", "rel", "run"]), cwd.join("rel"));
        assert_eq!(of(&["runner", "run", "--", "-C", "/a"]), cwd);
        // `-C` as the last word: its folder is still being typed.
        assert_eq!(of(&["runner", "run", "-C"]), cwd);
    }
}
