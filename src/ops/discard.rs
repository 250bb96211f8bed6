//! `runner discard`: the operation; its machinery is `engine::lifecycle::discard`.

pub use crate::engine::lifecycle::discard::*;
