//! `runner merge`: the operation; its machinery is `engine::lifecycle::merge`.

pub use crate::engine::lifecycle::merge::*;
