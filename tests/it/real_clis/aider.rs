//! aider

use std::path::Path;

use super::harness::Server;

pub const CONFIG: &str = "";

pub fn setup(_home: &Path, _server: &Server) -> Vec<(String, String)> {
    Vec::new()
}
