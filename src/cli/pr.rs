//! `runner pr`: push a spec's branch and open its pull request (`ops::pr`), then say where it
//! is, or where to open one.

use std::path::Path;

use clap::Args;

use runner::ops::pr::{PrOptions, PrReport, PullRequest};
use runner::policy::pr::PushPlan;
use runner::text::for_terminal as t;

#[derive(Debug, Args)]
pub struct PrArgs {
    #[arg(long, add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// Open it as a draft (the only way for a spec that is not complete).
    #[arg(long)]
    pub draft: bool,
    /// The git remote to push to (default: fleet.remote, "origin").
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: PrArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let opts = PrOptions {
        spec: args.spec,
        draft: args.draft,
        remote: args.remote,
    };
    let report = runner::ops::pr::pr(&ctx, opts, &super::ask::TerminalAsker)?;
    if args.json {
        super::print_json(&report)?;
    } else {
        print!("{}", render(&report));
    }
    Ok(0)
}

/// The report as lines for a person (every text from the spec or a tool made safe first).
fn render(r: &PrReport) -> String {
    let short = &r.commit[..r.commit.len().min(12)];
    let pushed = match r.push {
        PushPlan::Create => format!(
            "Pushed {} to {} (a new branch, at {short}).",
            t(&r.branch),
            t(&r.remote)
        ),
        PushPlan::FastForward => format!(
            "Pushed {} to {} (fast-forward to {short}).",
            t(&r.branch),
            t(&r.remote)
        ),
        _ => format!(
            "{} on {} is up to date (at {short}).",
            t(&r.branch),
            t(&r.remote)
        ),
    };
    let what = if r.draft {
        "draft pull request"
    } else {
        "pull request"
    };
    let url = r.url.as_deref().map(|u| t(u).into_owned());
    let next = match (r.pull_request, url) {
        (PullRequest::Opened, Some(url)) => {
            format!("Opened a {what} into {}: {url}", t(&r.base_branch))
        }
        (PullRequest::Opened, None) => format!(
            "Opened a {what} into {} ({} printed no URL).",
            t(&r.base_branch),
            r.tool.as_deref().unwrap_or("the tool")
        ),
        (PullRequest::Exists, Some(url)) => {
            format!("A pull request for {} is open already: {url}", t(&r.branch))
        }
        (PullRequest::Exists, None) => {
            format!("A pull request for {} is open already.", t(&r.branch))
        }
        (PullRequest::OpenByHand, Some(url)) => format!(
            "Open the pull request into {} here (install gh or glab to have runner open it): {url}",
            t(&r.base_branch)
        ),
        _ => format!(
            "The branch is pushed; runner knows no pull request tool for {} ({}): open one into {} on its site.",
            t(&r.remote),
            t(&r.remote_url),
            t(&r.base_branch)
        ),
    };
    format!("{pushed}\n{next}\n")
}
