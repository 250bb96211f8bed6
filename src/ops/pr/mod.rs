//! `runner pr`: hand a spec's work over as a pull request. The spec's branch
//! `auto-claude/<spec>` is pushed to the remote under the same name, only ever as a
//! fast-forward (one compare-and-swap push, `fleet::net::push_atomic`); then `gh` (GitHub) or
//! `glab` (GitLab), when installed and the remote is on their host, opens the pull request
//! into the spec's pinned base branch, with a title and body from the spec
//! (`policy::pr::text`). Without the tool the report carries the page that opens one by hand.
//! Nothing local changes but two files in the spec's folder: `pr.log` (the tool's last
//! output) and, while the tool runs, `pr-body.md` (the body it reads).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::error::RunnerError;
use crate::fleet::net::{Expect, PushOutcome, RefUpdate};
use crate::git::{Oid, branch_for};
use crate::plan::Plan;
use crate::policy::pr::text::{BodyFacts, ChunkLine};
use crate::policy::pr::{Against, Forge, PushPlan, Request, ToolOutcome};
use crate::store::workspace::SpecPaths;

mod tool;

/// How long one network step of git's (the look at the remote's branch, the fetch, the push)
/// may take before git is stopped.
pub const NETWORK_TIMEOUT: Duration = Duration::from_secs(120);

/// How long `gh` or `glab` may take to open the pull request before it is stopped.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// The tool's output, in the spec's folder.
pub const LOG_FILE: &str = "pr.log";

/// The body the tool reads (`gh --body-file`), in the spec's folder while it runs.
const BODY_FILE: &str = "pr-body.md";

#[derive(Debug, Clone, Default)]
pub struct PrOptions {
    pub spec: Option<String>,
    /// Open it as a draft: the only way for a spec that is not complete.
    pub draft: bool,
    /// The git remote (default `fleet.remote`).
    pub remote: Option<String>,
}

/// What became of the pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PullRequest {
    /// The tool opened it (`url`).
    Opened,
    /// One is open for the branch already (`url` when the tool said it).
    Exists,
    /// The tool is not installed: `url` is the page that opens one.
    OpenByHand,
    /// The remote is on no host runner knows a tool for: the branch was pushed, nothing more.
    NoToolKnown,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PrReport {
    pub spec: String,
    pub branch: String,
    pub base_branch: String,
    pub remote: String,
    /// The remote's URL as configured (before `insteadOf`).
    pub remote_url: String,
    /// The branch's tip, as pushed.
    pub commit: String,
    /// What the push did: `create`, `fast_forward` or `up_to_date`.
    pub push: PushPlan,
    pub title: String,
    pub draft: bool,
    /// Chunks completed, and in the plan.
    pub done: usize,
    pub total: usize,
    pub pull_request: PullRequest,
    /// The tool that was run (`gh`, `glab`), if one was.
    pub tool: Option<String>,
    /// The pull request's URL, or the page that opens one.
    pub url: Option<String>,
}

/// `runner pr`: push the spec's branch and open its pull request.
pub fn pr(
    ctx: &super::Ctx,
    opts: PrOptions,
    person: &dyn super::Person,
) -> anyhow::Result<PrReport> {
    let name = ctx.spec_name(opts.spec.as_deref(), person)?;
    let paths = ctx.ws.spec(&name)?;
    let config = ctx.ws.config()?;
    let remote = opts.remote.unwrap_or_else(|| config.fleet.remote.clone());
    let plan = paths.plan.load()?;
    let (done, total) = plan.as_ref().map_or((0, 0), |p| {
        (p.count(crate::plan::Status::Completed), p.total())
    });
    let shown = ctx.spec_command(&name);
    crate::policy::pr::may_open(done, total, opts.draft).map_err(|why| {
        RunnerError::bad_input(format!("{why}: its pull request may only be a draft"))
            .with_hint(format!("open a draft with `runner pr {shown} --draft`"))
            .with_hint(format!(
                "or finish it first: `runner run {shown} --auto-continue`"
            ))
    })?;
    let repo = &ctx.ws.main.repo;
    let branch = branch_for(&name);
    let tip = ctx.ws.main.branch_tip(&branch).ok_or_else(|| {
        RunnerError::bad_input(format!(
            "spec {name} has no branch {branch}: nothing to hand over"
        ))
    })?;
    let base = crate::engine::lifecycle::base_branch(&ctx.ws, plan.as_ref())?;
    let remote_url = crate::git::remote_url::configured_url(repo, &remote).ok_or_else(|| {
        RunnerError::bad_input(format!("this repository has no remote {remote:?}"))
            .with_hint("`git remote -v` lists its remotes; pass one with --remote NAME")
    })?;
    let push = push_branch(ctx, repo, &remote, &name, tip)?;
    let env = |k: &str| std::env::var(k).ok();
    let forge = crate::policy::pr::forge_of(
        &remote_url,
        env("GH_HOST").as_deref(),
        env("GITLAB_HOST").as_deref(),
    );
    let title = title_of(&paths, &name);
    let cost = crate::store::ledger::total(&crate::store::ledger::items(
        plan.as_ref(),
        crate::store::ledger::planner(&paths.dir),
    ));
    let body = crate::policy::pr::text::body(&BodyFacts {
        spec: &name,
        branch: &branch,
        base: &base,
        chunks: &chunk_lines(&paths, plan.as_ref()),
        cost,
    });
    let req = Request {
        base: &base,
        branch: &branch,
        title: &title,
        body: &body,
        draft: opts.draft,
    };
    let (pull_request, tool, url) = open(&ctx.ws.root, &paths, &forge, &req)?;
    if pull_request == PullRequest::Opened {
        let facts = crate::policy::notify::SpecFacts {
            spec: &name,
            run_id: "",
            done,
            total,
            usd: cost.usd,
            continue_command: String::new(),
            time: ctx.now(),
        };
        let payload = crate::policy::notify::pr_opened_payload(&facts, url.as_deref(), opts.draft);
        notify(ctx, &config, &paths, &payload);
    }
    Ok(PrReport {
        spec: name,
        branch,
        base_branch: base,
        remote,
        remote_url,
        commit: tip.to_string(),
        push,
        title,
        draft: opts.draft,
        done,
        total,
        pull_request,
        tool,
        url,
    })
}

/// Push `tip` to the remote's `auto-claude/<spec>`: created when absent, fast-forwarded when
/// the remote's is an ancestor (fetched first when runner has not got it), never forced. The
/// push expects the remote's branch to be what was read, so one that moved meanwhile is
/// refused too. While a worker holds the spec's lease the branch is the worker's to write
/// (its publications expect the branch where it left it): refused, exit 4.
fn push_branch(
    ctx: &super::Ctx,
    repo: &crate::git::Repository,
    remote: &str,
    spec: &str,
    tip: Oid,
) -> anyhow::Result<PushPlan> {
    use crate::fleet::names::{branch_ref, fetched_ref, lease_ref};
    let root = ctx.ws.root.as_path();
    let (dst, lease) = (branch_ref(spec), lease_ref(spec));
    let listed =
        crate::fleet::net::ls_remote(root, remote, &[dst.clone(), lease.clone()], NETWORK_TIMEOUT)?;
    let at = |name: &str| listed.iter().find(|(r, _)| r == name).map(|(_, oid)| *oid);
    let (theirs, held) = (at(&dst), at(&lease));
    let mut wanted = Vec::new();
    for (oid, src, kind) in [(theirs, &dst, "branches"), (held, &lease, "leases")] {
        if let Some(oid) = oid
            && !crate::git::history::commit_exists(repo, oid)
        {
            wanted.push(format!("+{src}:{}", fetched_ref(remote, kind, spec)));
        }
    }
    if !wanted.is_empty() {
        crate::fleet::net::fetch(root, remote, &wanted, NETWORK_TIMEOUT)?;
    }
    if let Some(oid) = held {
        refuse_if_held(repo, oid, remote, spec, ctx.now())?;
    }
    let against = theirs.map(|oid| Against {
        same: oid == tip,
        ancestor: crate::git::history::contains_or_false(repo, tip, oid),
    });
    let plan = crate::policy::pr::push_plan(against);
    let expect = match theirs {
        None => Expect::Absent,
        Some(oid) => Expect::At(oid),
    };
    match plan {
        PushPlan::UpToDate => return Ok(plan),
        PushPlan::Diverged => {
            return Err(RunnerError::Remote(format!(
                "{remote}'s branch auto-claude/{spec} has commits the local one has not: runner never forces a push"
            ))
            .with_hint(format!(
                "look at them: `git fetch {remote} auto-claude/{spec}` then `git log auto-claude/{spec}..FETCH_HEAD`",
            ))
            .with_hint("bring them into the local branch (or move the remote's aside) and run `runner pr` again")
            .into());
        }
        PushPlan::Create | PushPlan::FastForward => {}
    }
    let update = RefUpdate {
        dst,
        new: Some(tip),
        expect,
    };
    match crate::fleet::net::push_atomic(root, remote, &[update], NETWORK_TIMEOUT)? {
        PushOutcome::Pushed => Ok(plan),
        PushOutcome::Refused { reason } => Err(RunnerError::Remote(format!(
            "{remote} refused the push of auto-claude/{spec}: {reason}"
        ))
        .with_hint("its branch may have moved meanwhile: run `runner pr` again to look anew")
        .into()),
    }
}

/// Exit 4 when the lease `oid` is a worker's that has not expired (or is not one runner can
/// read: it is not taken as expired).
fn refuse_if_held(
    repo: &crate::git::Repository,
    oid: Oid,
    remote: &str,
    spec: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    let holder = match crate::fleet::lease::read_lease(repo, oid) {
        Ok(lease) if lease.expired_at(now) => return Ok(()),
        Ok(lease) => format!(
            "worker {} on {} holds it until {}",
            lease.worker,
            lease.host,
            lease
                .expires_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
        Err(why) => format!("its lease on {remote} cannot be read ({why})"),
    };
    Err(RunnerError::Busy(format!(
        "spec {spec} is being built through {remote}: {holder}; its branch is the worker's to push"
    ))
    .with_hint(format!(
        "run `runner pr` once it is done (`runner status --remote {remote}` shows it)"
    ))
    .into())
}

/// The title from `requirements.json`'s task description or `spec.md`'s first heading.
fn title_of(paths: &SpecPaths, name: &str) -> String {
    use crate::store::spec_text::{
        DESCRIPTION_KEY, MAX_REQUIREMENTS_BYTES, MAX_SPEC_MD_BYTES, REQUIREMENTS_FILE, read_prefix,
    };
    let description = read_prefix(&paths.dir.join(REQUIREMENTS_FILE), MAX_REQUIREMENTS_BYTES)
        .filter(|(_, cut)| !cut)
        .and_then(|(bytes, _)| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|v| v.get(DESCRIPTION_KEY)?.as_str().map(str::to_string));
    let spec_md =
        read_prefix(&paths.spec_md, MAX_SPEC_MD_BYTES).map(|(bytes, _)| crate::fs::lossy(bytes));
    crate::policy::pr::text::title(description.as_deref(), spec_md.as_deref(), name)
}

/// Each chunk with its verification command and last result (as `runner review` reads them).
fn chunk_lines(paths: &SpecPaths, plan: Option<&Plan>) -> Vec<ChunkLine> {
    let results = super::review::last_verifications(paths);
    plan.into_iter()
        .flat_map(Plan::chunks)
        .map(|c| ChunkLine {
            id: c.id.clone(),
            description: c.description().to_string(),
            status: c.status.as_str().to_string(),
            command: crate::plan::verification::brief(c)
                .filter(|b| b.runs)
                .and_then(|b| b.command),
            passed: results.get(c.id.as_str()).copied(),
        })
        .collect()
}

/// Open the pull request with the forge's tool, when there is one: what became of it, the
/// tool run, and its URL (or the page to open one by hand).
fn open(
    root: &Path,
    paths: &SpecPaths,
    forge: &Forge,
    req: &Request<'_>,
) -> anyhow::Result<(PullRequest, Option<String>, Option<String>)> {
    let by_hand = crate::policy::pr::open_url(forge, req.base, req.branch);
    let Some(program) = forge.tool() else {
        return Ok((PullRequest::NoToolKnown, None, None));
    };
    let Some(exe) = crate::fs::on_path(program) else {
        return Ok((PullRequest::OpenByHand, None, by_hand));
    };
    let body_file = paths.dir.join(BODY_FILE);
    crate::fs::atomic::write_atomic(&body_file, req.body.as_bytes())?;
    let argv = crate::policy::pr::tool_argv(
        forge,
        &exe.to_string_lossy(),
        req,
        &body_file.to_string_lossy(),
    )
    .unwrap_or_default();
    let log = paths.dir.join(LOG_FILE);
    let ran = crate::engine::block_on(tool::run(&argv, root, &log, TOOL_TIMEOUT));
    let _ = crate::fs::safe::remove(&body_file);
    let ran = ran?;
    let failed = |said: String| {
        let mut e = RunnerError::Remote(format!(
            "the branch was pushed, but {program} did not open the pull request: {said}"
        ))
        .with_hint(format!("its whole output: {}", log.display()));
        if let Some(url) = &by_hand {
            e = e.with_hint(format!("open it by hand: {url}"));
        }
        anyhow::Error::from(e)
    };
    if let Some(stopped) = ran.stopped {
        return Err(failed(format!("it {stopped}")));
    }
    Ok(
        match crate::policy::pr::tool_outcome(ran.exit_code, &ran.output) {
            ToolOutcome::Opened { url } => (PullRequest::Opened, Some(program.into()), url),
            ToolOutcome::Exists { url } => (PullRequest::Exists, Some(program.into()), url),
            ToolOutcome::Failed { said } => return Err(failed(said)),
        },
    )
}

/// The `pr_opened` notification (`[notify]`): the command and the desktop's; a problem is a
/// warning, never the command's outcome.
fn notify(
    ctx: &super::Ctx,
    config: &crate::config::Config,
    paths: &SpecPaths,
    payload: &crate::policy::notify::Payload,
) {
    let _ = crate::engine::block_on(async {
        crate::notify::send(
            &config.notify,
            payload,
            &ctx.ws.root,
            &paths.dir,
            &crate::agent::Interrupt::default(),
        )
        .await;
        Ok(())
    });
}
