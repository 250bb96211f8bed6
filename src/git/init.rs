//! A new repository with a first commit (the demo's throw-away project).

use std::path::Path;

use anyhow::Context;

/// Create a repository in `dir` with `branch` as its first branch and one commit of `files`
/// (path relative to `dir`, text).
pub fn init_with_commit(
    dir: &Path,
    branch: &str,
    files: &[(&str, &str)],
    message: &str,
) -> anyhow::Result<()> {
    let repo =
        git2::Repository::init_opts(dir, git2::RepositoryInitOptions::new().initial_head(branch))
            .with_context(|| format!("creating a git repository in {}", dir.display()))?;
    let mut index = repo.index()?;
    for (path, text) in files {
        crate::fs::write_atomic(&dir.join(path), text.as_bytes())?;
        index.add_path(Path::new(path))?;
    }
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = super::signature(&repo)?;
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[])?;
    Ok(())
}
