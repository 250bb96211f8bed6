//! Durable replacement of a file: temp file in the same folder, fsync, rename, fsync the folder.
//! A reader sees the old bytes or the new ones, never a mix, even after a power cut.

use std::io::Write;
use std::path::Path;

use atomicwrites::{AtomicFile, OverwriteBehavior};

pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // atomicwrites creates its temp file in a `.atomicwrite*` folder beside `path`, fsyncs it,
    // renames it over `path` and fsyncs both folders.
    AtomicFile::new(path, OverwriteBehavior::AllowOverwrite)
        .write(|f| f.write_all(bytes))
        .map_err(|e| match e {
            atomicwrites::Error::Internal(e) | atomicwrites::Error::User(e) => e,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.json")]);
    }
}
