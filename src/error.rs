//! The errors a user can meet, each tied to the documented exit code.
//!
//! Anything not listed here (an I/O failure, a git error we did not expect) surfaces as an
//! `anyhow::Error` and exits with code 1.

use std::path::PathBuf;

/// Exit codes, documented in the README. Scripts depend on them: never renumber.
pub mod exit {
    pub const OK: i32 = 0;
    pub const INTERNAL: i32 = 1;
    pub const BAD_INPUT: i32 = 2;
    pub const NEEDS_HUMAN: i32 = 3;
    pub const BUSY: i32 = 4;
    pub const BUDGET_SPENT: i32 = 5;
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
    InvalidPlan(crate::plan::PlanError),
    /// The run cannot go on without a person: a chunk failed for good, the planner gave up.
    #[error("{0}")]
    NeedsHuman(String),
    /// Another live runner holds the spec or the slot.
    #[error("{0}")]
    Busy(String),
    /// The run stopped because its session budget (`max_sessions`) was spent; work remains.
    #[error("{0}")]
    BudgetSpent(String),
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
}

impl From<crate::plan::PlanError> for RunnerError {
    fn from(e: crate::plan::PlanError) -> Self {
        RunnerError::InvalidPlan(e)
    }
}

impl RunnerError {
    pub fn exit_code(&self) -> i32 {
        match self {
            RunnerError::BadInput(_) | RunnerError::InvalidPlan(_) => exit::BAD_INPUT,
            RunnerError::NeedsHuman(_) => exit::NEEDS_HUMAN,
            RunnerError::Busy(_) => exit::BUSY,
            RunnerError::BudgetSpent(_) => exit::BUDGET_SPENT,
            RunnerError::Interrupted | RunnerError::Cancelled => exit::INTERRUPTED,
            RunnerError::Io { .. } => exit::INTERNAL,
        }
    }

    pub fn bad_input(msg: impl Into<String>) -> Self {
        RunnerError::BadInput(msg.into())
    }
}

/// A signal stopped the work (not a cancelled question): nothing more was decided.
pub fn is_interrupted(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        matches!(
            c.downcast_ref::<RunnerError>(),
            Some(RunnerError::Interrupted)
        )
    })
}

/// The exit code for any error that reached `main`.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<RunnerError>() {
            return e.exit_code();
        }
        if let Some(_e) = cause.downcast_ref::<crate::plan::PlanError>() {
            return exit::BAD_INPUT;
        }
        // The store layer returns `io::Error`s; a refusal (a link where runner writes) carries
        // its `RunnerError` inside one.
        if let Some(e) = cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<RunnerError>())
        {
            return e.exit_code();
        }
    }
    exit::INTERNAL
}

pub type Result<T, E = anyhow::Error> = std::result::Result<T, E>;
