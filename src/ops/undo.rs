//! `runner undo`: the operation; its machinery is `engine::lifecycle::undo`.

pub use crate::engine::lifecycle::undo::*;
