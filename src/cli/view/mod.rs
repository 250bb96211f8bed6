//! Reports as a person reads them on a terminal, for the commands that print them and the
//! questions that show them (pure text over a report and a style).

pub mod chunk;
pub mod plan;
pub mod resume;
pub mod review;
