//! `runner pr`'s decisions, over plain data: which forge a remote's URL is on (and so which
//! tool, `gh` or `glab`, may open the pull request), the URL that opens one by hand, the tool's
//! command line, what its output means, and whether the branch may be pushed (fast-forward
//! only). The text of the pull request (its title and body) is in `text`.
//!
//! The rule for the forge, kept simple on purpose: a remote whose URL's host is `github.com`,
//! or the host `GH_HOST` names (what `gh` itself uses for another GitHub host), is GitHub; one
//! on `gitlab.com`, or `GITLAB_HOST`'s host, is GitLab; any other host is neither, and runner
//! only pushes.

pub mod text;

/// Where a remote's repository lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forge {
    GitHub(RepoAt),
    GitLab(RepoAt),
    /// Another host (or a local path): no pull request tool is known for it.
    Other {
        host: Option<String>,
    },
}

/// A repository on a forge: its host and its path there (`owner/repo`, or GitLab's
/// `group/subgroup/repo`), each component checked to be safe in a URL and an argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoAt {
    pub host: String,
    pub path: String,
}

impl RepoAt {
    /// The repository's web page.
    pub fn web(&self) -> String {
        format!("https://{}/{}", self.host, self.path)
    }
}

impl Forge {
    /// The tool that opens a pull request here, by its program's name.
    pub fn tool(&self) -> Option<&'static str> {
        match self {
            Forge::GitHub(_) => Some("gh"),
            Forge::GitLab(_) => Some("glab"),
            Forge::Other { .. } => None,
        }
    }
}

/// The host and path of a git remote's URL: `scheme://[user@]host[:port]/path` or scp-like
/// `[user@]host:path`. `None` for a local path, a `file://` URL or anything else.
pub fn host_and_path(url: &str) -> Option<(String, String)> {
    let url = url.trim();
    let (authority, path) = match url.split_once("://") {
        Some((scheme, rest)) => {
            if !["https", "http", "ssh", "git", "git+ssh", "ssh+git"]
                .contains(&scheme.to_ascii_lowercase().as_str())
            {
                return None;
            }
            rest.split_once('/')?
        }
        None => {
            // scp-like: a colon before any slash (else it is a local path).
            let (authority, path) = url.split_once(':')?;
            if authority.contains('/') || authority.is_empty() {
                return None;
            }
            (authority, path)
        }
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.split(':').next()?.to_ascii_lowercase();
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
    {
        return None;
    }
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    Some((host, path.to_string()))
}

/// A host as `GH_HOST` / `GITLAB_HOST` give it (a name, or a URL as glab also takes).
fn configured_host(value: Option<&str>) -> Option<String> {
    let v = value?.trim();
    let v = v.split_once("://").map_or(v, |(_, rest)| rest);
    let host = v.split(['/', ':']).next()?.to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// Whether every `/`-separated component of `path` is a plain name (letters, digits, `.`, `_`,
/// `-`; not `.` or `..`): such a path is safe in a URL and as one argument.
fn plain_path(path: &str, components: std::ops::RangeInclusive<usize>) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    components.contains(&parts.len())
        && parts.iter().all(|p| {
            !p.is_empty()
                && *p != "."
                && *p != ".."
                && !p.starts_with('-')
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
}

/// The forge of a remote whose URL is `url` (as configured, before git's `insteadOf`
/// rewrites it), given the values of `GH_HOST` and `GITLAB_HOST`.
pub fn forge_of(url: &str, gh_host: Option<&str>, gitlab_host: Option<&str>) -> Forge {
    let Some((host, path)) = host_and_path(url) else {
        return Forge::Other { host: None };
    };
    let is = |default: &str, configured: Option<&str>| {
        host == default || configured_host(configured).is_some_and(|c| c == host)
    };
    if is("github.com", gh_host) && plain_path(&path, 2..=2) {
        return Forge::GitHub(RepoAt { host, path });
    }
    if is("gitlab.com", gitlab_host) && plain_path(&path, 2..=20) {
        return Forge::GitLab(RepoAt { host, path });
    }
    Forge::Other { host: Some(host) }
}

/// `text` for a URL: every byte but the unreserved ones and `/` percent-encoded.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The page that opens a pull request of `branch` into `base` by hand; `None` on a host
/// runner knows no page of.
pub fn open_url(forge: &Forge, base: &str, branch: &str) -> Option<String> {
    match forge {
        Forge::GitHub(at) => Some(format!(
            "{}/compare/{}...{}?expand=1",
            at.web(),
            encode(base),
            encode(branch)
        )),
        Forge::GitLab(at) => Some(format!(
            "{}/-/merge_requests/new?merge_request[source_branch]={}&merge_request[target_branch]={}",
            at.web(),
            encode(branch),
            encode(base)
        )),
        Forge::Other { .. } => None,
    }
}

/// What the pull request is made of.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub base: &'a str,
    pub branch: &'a str,
    pub title: &'a str,
    pub body: &'a str,
    pub draft: bool,
}

/// The tool's argv (no shell): `gh pr create` with the body read from `body_file` (a spec's
/// text may hold anything; a file is never an option or a shell word), or `glab mr create`
/// with the body as one argument (glab has no body file; the body is capped well under
/// Linux's 128 KiB for one argument, see `text::MAX_BODY_BYTES`). Every value is given as
/// `--flag=value`, so a title starting with `-` is never read as a flag.
pub fn tool_argv(
    forge: &Forge,
    program: &str,
    req: &Request<'_>,
    body_file: &str,
) -> Option<Vec<String>> {
    let mut argv: Vec<String> = match forge {
        Forge::GitHub(at) => {
            // gh's --repo is `[HOST/]OWNER/REPO`.
            let repo = if at.host == "github.com" {
                at.path.clone()
            } else {
                format!("{}/{}", at.host, at.path)
            };
            vec![
                program.into(),
                "pr".into(),
                "create".into(),
                format!("--repo={repo}"),
                format!("--base={}", req.base),
                format!("--head={}", req.branch),
                format!("--title={}", req.title),
                format!("--body-file={body_file}"),
            ]
        }
        Forge::GitLab(at) => {
            // glab's --repo takes a path on gitlab.com, else the full URL.
            let repo = if at.host == "gitlab.com" {
                at.path.clone()
            } else {
                at.web()
            };
            vec![
                program.into(),
                "mr".into(),
                "create".into(),
                format!("--repo={repo}"),
                format!("--source-branch={}", req.branch),
                format!("--target-branch={}", req.base),
                format!("--title={}", req.title),
                format!("--description={}", req.body),
                "--yes".into(),
            ]
        }
        Forge::Other { .. } => return None,
    };
    if req.draft {
        argv.push("--draft".into());
    }
    Some(argv)
}

/// What the tool's run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutcome {
    /// It opened the pull request (its URL, as the tool printed it).
    Opened { url: Option<String> },
    /// One is open already for the branch (its URL when the tool said it).
    Exists { url: Option<String> },
    /// It failed: the last lines it printed.
    Failed { said: String },
}

/// The lines of `output` that are a web address.
fn urls(output: &str) -> impl Iterator<Item = &str> {
    output
        .lines()
        .map(str::trim)
        .filter(|l| (l.starts_with("https://") || l.starts_with("http://")) && !l.contains(' '))
}

/// What the tool's run means: `exit_code` its exit (`None`: it did not exit by itself), and
/// `output` what it printed (stdout and stderr together). gh 2.60 prints the new pull
/// request's URL alone on stdout when it is not on a terminal, and for an open one of the
/// same branch fails with `a pull request for branch "B" into branch "M" already exists:`
/// and the URL on the next line (cli/cli `pkg/cmd/pr/create/create.go`); glab prints the
/// merge request's URL (`mrutils.DisplayMR` off a terminal), and GitLab refuses a second one
/// with "Another open merge request already exists for this source branch".
pub fn tool_outcome(exit_code: Option<i32>, output: &str) -> ToolOutcome {
    if exit_code == Some(0) {
        return ToolOutcome::Opened {
            url: urls(output).last().map(str::to_string),
        };
    }
    if let Some(at) = output.find("already exists") {
        return ToolOutcome::Exists {
            url: urls(&output[at..]).next().map(str::to_string),
        };
    }
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(5)..];
    ToolOutcome::Failed {
        said: tail.join("\n"),
    }
}

/// How the spec's branch stands against the remote's branch of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PushPlan {
    /// The remote has no such branch: it is created.
    Create,
    /// The remote's branch is an ancestor of the local tip: a fast-forward.
    FastForward,
    /// The remote holds the same commit: nothing to push.
    UpToDate,
    /// The remote's branch has commits the local one has not: never forced.
    Diverged,
}

/// The remote's branch against the local tip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Against {
    /// It is the local tip.
    pub same: bool,
    /// It is an ancestor of the local tip (a commit runner has not got locally is not).
    pub ancestor: bool,
}

/// The push to make, given the remote's branch (`None`: absent).
pub fn push_plan(remote: Option<Against>) -> PushPlan {
    match remote {
        None => PushPlan::Create,
        Some(a) if a.same => PushPlan::UpToDate,
        Some(a) if a.ancestor => PushPlan::FastForward,
        Some(_) => PushPlan::Diverged,
    }
}

/// Whether a spec with `done` of `total` chunks completed may be handed over: complete, or as
/// a draft. The refusal says why.
pub fn may_open(done: usize, total: usize, draft: bool) -> Result<(), String> {
    if (total > 0 && done == total) || draft {
        return Ok(());
    }
    Err(if total == 0 {
        "the spec has no plan yet: nothing to hand over".to_string()
    } else {
        format!(
            "the spec is not complete ({done}/{total} {} done)",
            crate::text::noun(total, "chunk")
        )
    })
}

#[cfg(test)]
mod tests;
