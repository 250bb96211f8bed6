//! Agent sessions: prompts, the child process, interrupts.

pub mod ancestry;
pub mod capture;
pub mod interrupt;
pub mod process;
pub mod prompt;

pub use interrupt::Interrupt;
pub use process::{ChildEnd, ChildSpec, Ended, run_child};
pub use prompt::Prompts;
