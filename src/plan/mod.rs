//! The plan model: parse every Auto-Claude variant, validate, pick the next chunk, write back.

mod attempt;
mod canonical;
mod checks;
mod fields;
mod file;
mod layout;
mod model;
mod next;
mod parse;
mod parse_chunk;
mod reread;
pub mod session_facts;
mod status;
pub mod summary;
mod validate;
pub mod verification;

pub use attempt::Attempt;
pub use checks::MAX_ID_BYTES;
pub use file::{LAST_GOOD_FILE, PLAN_DRAFT, PLAN_FILE, PlanFile, draft_path, read_regular};
pub use model::{Chunk, ChunkPos, Phase, PhaseKey, PhaseRef, Plan, PlanShape, chunk_id_of_commit};
pub use next::{NextStep, next_chunk_id, next_step};
pub use parse::{PlanError, parse_plan, plan_to_bytes};
pub use status::Status;
pub use validate::check_planner_output;

#[cfg(test)]
mod tests;
