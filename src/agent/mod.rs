//! Mechanism layer: an agent session's process. Prompts, the child process in its own group
//! with a capped log, its descendants (`ancestry`), and the signals that stop a run
//! (`interrupt`; what a signal did is told through `output::urgent`, never printed here), and
//! what an agent CLI said about its session (`report`: one pure parser per preset).

pub mod ancestry;
pub mod capture;
pub mod interrupt;
pub mod mcp;
pub mod output;
pub mod preset;
pub mod process;
pub mod prompt;
pub mod spawn;

pub use interrupt::Interrupt;
pub use preset::AgentSetup;
pub use process::{ChildEnd, ChildSpec, Ended, run_child};
pub use prompt::Prompts;
