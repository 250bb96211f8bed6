//! The errors a user can meet, each tied to the documented exit code.
//!
//! Anything not listed here (an I/O failure, a git error we did not expect) surfaces as an
//! `anyhow::Error` and exits with code 1.
//!
//! The fact and the advice are kept apart: an error's message says what is wrong, its hints say
//! what to do about it, one line each. Attach them where the advice is known:
//!
//! ```
//! use runner::error::{ErrorReport, RunnerError};
//!
//! fn find(q: &str) -> anyhow::Result<()> {
//!     Err(RunnerError::bad_input(format!("unknown spec {q:?}"))
//!         .with_hint("`runner status` lists the specs")
//!         .into())
//! }
//! let report = ErrorReport::of(&find("042").unwrap_err());
//! assert_eq!(report.message, "unknown spec \"042\"");
//! assert_eq!(report.hints, ["`runner status` lists the specs"]);
//! ```
//!
//! `main` renders every error once: `runner: <message>`, then `  hint: <hint>` per hint (or, with
//! `--json`, the object of [`ErrorReport`]). Code that reacts to an error looks at
//! [`RunnerError::fact`] or [`RunnerError::kind`], never at the `Hinted` wrapper.

use std::path::PathBuf;

/// Exit codes, documented in the README and docs/commands.md ("Exit codes"). Scripts depend on them: never renumber.
pub mod exit {
    pub const OK: i32 = 0;
    pub const INTERNAL: i32 = 1;
    pub const BAD_INPUT: i32 = 2;
    pub const NEEDS_HUMAN: i32 = 3;
    pub const BUSY: i32 = 4;
    pub const BUDGET_SPENT: i32 = 5;
    pub const USAGE_LIMITED: i32 = 6;
    /// The git remote could not be reached, or refused what was pushed (a lease another worker
    /// holds, a ref that moved): issue 29's fleet commands.
    pub const REMOTE: i32 = 7;
    pub const INTERRUPTED: i32 = 130;
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// Bad input or usage: a wrong flag, an unknown spec, a corrupt plan, a dirty slot.
    #[error("{0}")]
    BadInput(String),
    /// A plan file that does not parse or validate. The file is never touched.
    /// (Not `#[from]`: that would also make the plan error this error's source, and it would
    /// be printed twice.)
    #[error("{0}")]
    InvalidPlan(PlanError),
    /// The run cannot go on without a person: a chunk failed for good, the planner gave up.
    #[error("{0}")]
    NeedsHuman(String),
    /// Another live runner holds the spec or the slot.
    #[error("{0}")]
    Busy(String),
    /// The run stopped because a budget was spent: its sessions (`max_sessions`), or the spec's
    /// dollars or tokens (`[budget]`: the spec is `budget_exhausted`); work remains.
    #[error("{0}")]
    BudgetSpent(String),
    /// The agent hit its usage limit: the spec is paused until a time; work remains.
    #[error("{0}")]
    UsageLimited(String),
    /// The git remote could not be reached or refused a push (a lease another worker holds, a
    /// ref that moved since it was read). Nothing was published; local work is kept.
    #[error("{0}")]
    Remote(String),
    /// SIGINT or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// Esc or Ctrl-C at a question: nothing was done yet.
    #[error("cancelled; nothing was changed")]
    Cancelled,
    #[error("{context}: {path}: {source}")]
    Io {
        context: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// Any of the above with advice for the user (built by [`RunnerError::with_hint`]); it
    /// prints as the error it wraps, the hints on lines of their own.
    #[error("{error}")]
    Hinted {
        error: Box<RunnerError>,
        hints: Vec<String>,
    },
}

impl From<PlanError> for RunnerError {
    fn from(e: PlanError) -> Self {
        RunnerError::InvalidPlan(e)
    }
}

impl RunnerError {
    pub fn exit_code(&self) -> i32 {
        match self.fact() {
            RunnerError::BadInput(_) | RunnerError::InvalidPlan(_) => exit::BAD_INPUT,
            RunnerError::NeedsHuman(_) => exit::NEEDS_HUMAN,
            RunnerError::Busy(_) => exit::BUSY,
            RunnerError::BudgetSpent(_) => exit::BUDGET_SPENT,
            RunnerError::UsageLimited(_) => exit::USAGE_LIMITED,
            RunnerError::Remote(_) => exit::REMOTE,
            RunnerError::Interrupted | RunnerError::Cancelled => exit::INTERRUPTED,
            // (`fact` never returns `Hinted`.)
            RunnerError::Io { .. } | RunnerError::Hinted { .. } => exit::INTERNAL,
        }
    }

    pub fn bad_input(msg: impl Into<String>) -> Self {
        RunnerError::BadInput(msg.into())
    }

    /// Add a line of advice: what the user can do about this error (a command to copy, a flag
    /// to pass). Shown after the message as `  hint: …`, and in `--json` as `hints`.
    pub fn with_hint(self, hint: impl Into<String>) -> Self {
        match self {
            RunnerError::Hinted { error, mut hints } => {
                hints.push(hint.into());
                RunnerError::Hinted { error, hints }
            }
            error => RunnerError::Hinted {
                error: Box::new(error),
                hints: vec![hint.into()],
            },
        }
    }

    /// The error without its hints: what to match on.
    pub fn fact(&self) -> &RunnerError {
        match self {
            RunnerError::Hinted { error, .. } => error.fact(),
            error => error,
        }
    }

    /// The advice attached with [`RunnerError::with_hint`], in order.
    pub fn hints(&self) -> &[String] {
        match self {
            RunnerError::Hinted { hints, .. } => hints,
            _ => &[],
        }
    }

    /// The stable name of the error's kind (`--json`'s `error.kind`, docs/json.md).
    pub fn kind(&self) -> &'static str {
        match self.fact() {
            RunnerError::BadInput(_) => "bad_input",
            RunnerError::InvalidPlan(_) => "invalid_plan",
            RunnerError::NeedsHuman(_) => "needs_human",
            RunnerError::Busy(_) => "busy",
            RunnerError::BudgetSpent(_) => "budget_spent",
            RunnerError::UsageLimited(_) => "usage_limited",
            RunnerError::Remote(_) => "remote",
            RunnerError::Interrupted => "interrupted",
            RunnerError::Cancelled => "cancelled",
            RunnerError::Io { .. } | RunnerError::Hinted { .. } => "internal",
        }
    }
}

/// A signal stopped the work (not a cancelled question): nothing more was decided.
pub fn is_interrupted(err: &anyhow::Error) -> bool {
    runner_errors(err).any(|e| matches!(e.fact(), RunnerError::Interrupted))
}

/// Every `RunnerError` in the chain of `err`, outermost first.
fn runner_errors(err: &anyhow::Error) -> impl Iterator<Item = &RunnerError> {
    err.chain().filter_map(runner_error_in)
}

/// The first `RunnerError` or `PlanError` in the chain decides: its exit code and kind.
fn classify(err: &anyhow::Error) -> (i32, &'static str) {
    for cause in err.chain() {
        if let Some(e) = runner_error_in(cause) {
            return (e.exit_code(), e.kind());
        }
        if cause.downcast_ref::<PlanError>().is_some() {
            return (exit::BAD_INPUT, "invalid_plan");
        }
        // A status change the transition table refuses: the plan says something runner did
        // not expect (a hand edit, another process), and only a person can say what is true.
        if cause.downcast_ref::<IllegalTransition>().is_some() {
            return (exit::NEEDS_HUMAN, "needs_human");
        }
    }
    (exit::INTERNAL, "internal")
}

/// The `RunnerError` that `cause` is, or carries inside an `io::Error`: the store layer returns
/// `io::Error`s, and a refusal (a link where runner writes) carries its `RunnerError` in one.
fn runner_error_in<'a>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a RunnerError> {
    cause.downcast_ref::<RunnerError>().or_else(|| {
        cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<RunnerError>())
    })
}

/// The exit code for any error that reached `main`.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    classify(err).0
}

/// An error as the user meets it: rendered as text on stderr, or as `{"schema":1,"error":…}`
/// with `--json` (docs/json.md).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorReport {
    /// The exit code (docs/commands.md, "Exit codes").
    pub code: i32,
    /// `bad_input`, `invalid_plan`, `needs_human`, `busy`, `budget_spent`, `usage_limited`,
    /// `interrupted`, `cancelled` or `internal`.
    pub kind: &'static str,
    /// What is wrong, with the context it was met in (`reading X: …`).
    pub message: String,
    /// What to do about it, one line each; empty when there is no advice.
    pub hints: Vec<String>,
}

/// Said with an error that a full disk (or a spent quota) caused. runner's state files are
/// replaced whole or not at all, so a write that failed for want of space left the old file.
pub const DISK_FULL_ADVICE: &str =
    "the disk (or your quota) is full: free some space, then run the command again";

impl ErrorReport {
    /// The report of any error that reached `main`: kind and code from the first
    /// `RunnerError` (or `PlanError`) in its chain, the whole chain as the message, and the
    /// hints of every `RunnerError` in it, outermost first.
    pub fn of(err: &anyhow::Error) -> ErrorReport {
        let (code, kind) = classify(err);
        let mut hints: Vec<String> = runner_errors(err)
            .flat_map(|e| e.hints().iter().cloned())
            .collect();
        if kind == "invalid_plan" {
            hints.push(PlanError::ADVICE.to_string());
        }
        if err
            .chain()
            .any(|c| c.downcast_ref::<IllegalTransition>().is_some())
        {
            hints.push(IllegalTransition::ADVICE.to_string());
        }
        // By kind: an error given its path (`store::at`) keeps the kind, not the OS number.
        if err.chain().any(|c| {
            c.downcast_ref::<std::io::Error>().is_some_and(|e| {
                matches!(
                    e.kind(),
                    std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
                )
            })
        }) {
            hints.push(DISK_FULL_ADVICE.to_string());
        }
        ErrorReport {
            code,
            kind,
            message: format!("{err:#}"),
            hints,
        }
    }

    /// The message and its hints in one string, for a report that holds an error as a field
    /// (`status`'s `error`, a recovery action's `detail`).
    pub fn inline(err: &anyhow::Error) -> String {
        ErrorReport::of(err).message_and_hints()
    }

    /// `runner: <message>`, then one `  hint: <hint>` line per hint (not yet made safe for a
    /// terminal: the caller does that).
    pub fn to_text(&self) -> String {
        format!("runner: {}\n", self.message_and_hints())
    }

    fn message_and_hints(&self) -> String {
        let mut text = self.message.clone();
        for hint in &self.hints {
            text.push_str(&format!("\n  hint: {hint}"));
        }
        text
    }
}

pub type Result<T, E = anyhow::Error> = std::result::Result<T, E>;

/// Why a plan cannot be used. Carries everything the user needs to find the problem.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanError {
    pub path: std::path::PathBuf,
    /// Set for JSON syntax errors.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// Each problem, prefixed with its place in the plan (`phases[1].subtasks[0].status: …`).
    pub problems: Vec<String>,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid plan {}", self.path.display())?;
        if let (Some(line), Some(col)) = (self.line, self.column) {
            write!(f, ":{line}:{col}")?;
        }
        for problem in &self.problems {
            write!(f, "\n  - {problem}")?;
        }
        write!(f, "\nThe file was left untouched.")
    }
}

impl PlanError {
    /// What to do about an invalid plan: the hint of every error that carries one.
    pub const ADVICE: &str = "fix it by hand, or move it away to have the planner write a new one";
}

impl std::error::Error for PlanError {}

/// An event the chunk status table has no edge for, from the chunk's status
/// (`policy::transition`): the status and the event, named as the table names them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a chunk that is {from} cannot take the event {on} (no such transition)")]
pub struct IllegalTransition {
    pub from: String,
    pub on: String,
}

impl IllegalTransition {
    /// What a person can do when a change is refused (the error's hint).
    pub const ADVICE: &'static str = "the chunk's status was left as it is; `runner status` shows each chunk's: set its \"status\" in the plan to what is true (\"pending\" to run it again), then run again";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_anywhere_in_the_chain_gets_the_advice_and_other_io_errors_do_not() {
        let of = |errno| {
            let io = std::io::Error::from_raw_os_error(errno);
            ErrorReport::of(&anyhow::Error::from(io).context("writing the plan"))
        };
        for errno in [libc::ENOSPC, libc::EDQUOT] {
            let report = of(errno);
            assert_eq!(report.hints, [DISK_FULL_ADVICE], "{report:?}");
            assert_eq!(report.code, exit::INTERNAL);
        }
        assert!(of(libc::EIO).hints.is_empty());
        // Given its path, as runner's file functions do.
        let io = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let at = crate::fs::at(std::path::Path::new("/x/plan.json"))(io);
        let report = ErrorReport::of(&anyhow::Error::from(at));
        assert_eq!(report.hints, [DISK_FULL_ADVICE], "{report:?}");
    }

    #[test]
    fn a_hint_is_kept_apart_from_the_message_and_keeps_the_exit_code() {
        let err = RunnerError::Busy("spec 001 is being run".into())
            .with_hint("wait for it to finish")
            .with_hint("or stop it");
        assert_eq!(err.to_string(), "spec 001 is being run");
        assert_eq!(err.exit_code(), exit::BUSY);
        assert_eq!(err.kind(), "busy");
        assert!(matches!(err.fact(), RunnerError::Busy(_)));
        let report = ErrorReport::of(&anyhow::Error::from(err).context("merging 001"));
        assert_eq!(report.code, exit::BUSY);
        assert_eq!(report.message, "merging 001: spec 001 is being run");
        assert_eq!(report.hints, ["wait for it to finish", "or stop it"]);
        assert_eq!(
            report.to_text(),
            "runner: merging 001: spec 001 is being run\n  hint: wait for it to finish\n  hint: or stop it\n"
        );
    }

    #[test]
    fn an_error_runner_did_not_expect_is_internal_with_no_hints() {
        let report = ErrorReport::of(&anyhow::anyhow!("disk on fire"));
        assert_eq!((report.code, report.kind), (exit::INTERNAL, "internal"));
        assert!(report.hints.is_empty());
        assert_eq!(report.to_text(), "runner: disk on fire\n");
    }

    #[test]
    fn a_refusal_inside_an_io_error_keeps_its_kind_and_hints() {
        let refusal = RunnerError::bad_input("x is a link").with_hint("remove the link");
        let io = std::io::Error::other(refusal);
        let report = ErrorReport::of(&anyhow::Error::from(io));
        assert_eq!((report.code, report.kind), (exit::BAD_INPUT, "bad_input"));
        assert_eq!(report.hints, ["remove the link"]);
    }

    #[test]
    fn a_refused_status_change_needs_a_person_and_says_what_to_do() {
        let refused = IllegalTransition {
            from: "failed".into(),
            on: "Complete".into(),
        };
        let err = anyhow::Error::from(refused).context("judging chunk c1");
        let report = ErrorReport::of(&err);
        assert_eq!(
            (report.code, report.kind),
            (exit::NEEDS_HUMAN, "needs_human")
        );
        assert_eq!(exit_code_of(&err), exit::NEEDS_HUMAN);
        assert!(
            report.message.contains("a chunk that is failed"),
            "{report:?}"
        );
        assert_eq!(report.hints.len(), 1, "{report:?}");
        assert!(report.hints[0].contains("runner status"), "{report:?}");
    }
}
