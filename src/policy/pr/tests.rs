use super::*;

fn at(host: &str, path: &str) -> RepoAt {
    RepoAt {
        host: host.into(),
        path: path.into(),
    }
}

#[test]
fn the_forge_is_read_from_every_form_of_a_remote_url() {
    for url in [
        "https://github.com/o/r",
        "https://github.com/o/r.git",
        "https://user:token@GitHub.com/o/r/",
        "ssh://git@github.com:22/o/r.git",
        "git@github.com:o/r.git",
        "github.com:o/r",
    ] {
        assert_eq!(
            forge_of(url, None, None),
            Forge::GitHub(at("github.com", "o/r")),
            "{url}"
        );
    }
    assert_eq!(
        forge_of("git@gitlab.com:group/sub/r.git", None, None),
        Forge::GitLab(at("gitlab.com", "group/sub/r"))
    );
    // Another host is GitHub or GitLab only when gh's or glab's own variable names it.
    let ghe = "https://ghe.example.com/o/r.git";
    assert_eq!(
        forge_of(ghe, None, None),
        Forge::Other {
            host: Some("ghe.example.com".into())
        }
    );
    assert_eq!(
        forge_of(ghe, Some("ghe.example.com"), None),
        Forge::GitHub(at("ghe.example.com", "o/r"))
    );
    assert_eq!(
        forge_of("git@gl.corp:a/b.git", None, Some("https://gl.corp/")),
        Forge::GitLab(at("gl.corp", "a/b"))
    );
    for local in ["/srv/git/r.git", "file:///srv/r.git", "../r", "./a:b", ""] {
        assert_eq!(
            forge_of(local, None, None),
            Forge::Other { host: None },
            "{local}"
        );
    }
}

#[test]
fn a_path_that_is_not_plain_is_no_forge_repository() {
    for url in [
        "https://github.com/o",
        "https://github.com/o/r/extra",
        "https://github.com/o/../r",
        "https://github.com/o/r%20x",
        "https://github.com/-o/r",
        "https://github.com/o/r?x=1",
        "https://git hub.com/o/r",
    ] {
        assert!(
            !matches!(forge_of(url, None, None), Forge::GitHub(_)),
            "{url}"
        );
    }
}

#[test]
fn the_page_that_opens_one_by_hand() {
    let gh = Forge::GitHub(at("github.com", "o/r"));
    assert_eq!(
        open_url(&gh, "main", "auto-claude/001-a").as_deref(),
        Some("https://github.com/o/r/compare/main...auto-claude/001-a?expand=1")
    );
    assert_eq!(
        open_url(&gh, "rel #1&x", "auto-claude/a").as_deref(),
        Some("https://github.com/o/r/compare/rel%20%231%26x...auto-claude/a?expand=1")
    );
    let gl = Forge::GitLab(at("gitlab.com", "g/s/r"));
    assert_eq!(
        open_url(&gl, "main", "auto-claude/001-a").as_deref(),
        Some(
            "https://gitlab.com/g/s/r/-/merge_requests/new?merge_request[source_branch]=auto-claude/001-a&merge_request[target_branch]=main"
        )
    );
    assert_eq!(open_url(&Forge::Other { host: None }, "main", "b"), None);
}

#[test]
fn the_tools_get_every_value_as_one_flag_argument() {
    let req = Request {
        base: "main",
        branch: "auto-claude/001-a",
        title: "--web; rm -rf /",
        body: "body `x`",
        draft: true,
    };
    let gh = tool_argv(
        &Forge::GitHub(at("github.com", "o/r")),
        "gh",
        &req,
        "/t/body.md",
    );
    assert_eq!(
        gh.unwrap(),
        [
            "gh",
            "pr",
            "create",
            "--repo=o/r",
            "--base=main",
            "--head=auto-claude/001-a",
            "--title=--web; rm -rf /",
            "--body-file=/t/body.md",
            "--draft"
        ]
    );
    let ghe = tool_argv(&Forge::GitHub(at("ghe.x", "o/r")), "gh", &req, "/b").unwrap();
    assert_eq!(ghe[3], "--repo=ghe.x/o/r");
    let plain = Request {
        draft: false,
        ..req.clone()
    };
    let gl = tool_argv(
        &Forge::GitLab(at("gitlab.com", "g/r")),
        "glab",
        &plain,
        "/b",
    );
    assert_eq!(
        gl.unwrap(),
        [
            "glab",
            "mr",
            "create",
            "--repo=g/r",
            "--source-branch=auto-claude/001-a",
            "--target-branch=main",
            "--title=--web; rm -rf /",
            "--description=body `x`",
            "--yes"
        ]
    );
    let self_hosted = tool_argv(&Forge::GitLab(at("gl.corp", "g/r")), "glab", &plain, "/b");
    assert_eq!(self_hosted.unwrap()[3], "--repo=https://gl.corp/g/r");
    assert_eq!(
        tool_argv(&Forge::Other { host: None }, "gh", &plain, "/b"),
        None
    );
}

#[test]
fn what_the_tools_print_is_read_as_they_print_it() {
    // gh 2.60, off a terminal: the URL alone on stdout.
    assert_eq!(
        tool_outcome(Some(0), "https://github.com/o/r/pull/7\n"),
        ToolOutcome::Opened {
            url: Some("https://github.com/o/r/pull/7".into())
        }
    );
    // gh's error for an open one (its exit status 1).
    let exists = "a pull request for branch \"auto-claude/001-a\" into branch \"main\" already exists:\nhttps://github.com/o/r/pull/3\n";
    assert_eq!(
        tool_outcome(Some(1), exists),
        ToolOutcome::Exists {
            url: Some("https://github.com/o/r/pull/3".into())
        }
    );
    // glab on a terminal: `!4 Title (branch)` and the URL indented below.
    assert_eq!(
        tool_outcome(
            Some(0),
            "\nCreating merge request for b into main in g/r\n\n!4 T (b)\n https://gitlab.com/g/r/-/merge_requests/4\n"
        ),
        ToolOutcome::Opened {
            url: Some("https://gitlab.com/g/r/-/merge_requests/4".into())
        }
    );
    assert_eq!(
        tool_outcome(
            Some(1),
            "POST https://gitlab.com/api/v4/projects/1/merge_requests: 409 {message: [Another open merge request already exists for this source branch: !4]}"
        ),
        ToolOutcome::Exists { url: None }
    );
    let failed = tool_outcome(
        Some(4),
        "a\nb\nc\nd\ne\nf\nTo get started with GitHub CLI, please run:  gh auth login\n",
    );
    assert_eq!(
        failed,
        ToolOutcome::Failed {
            said: "c\nd\ne\nf\nTo get started with GitHub CLI, please run:  gh auth login".into()
        }
    );
    assert!(matches!(
        tool_outcome(None, "https://x/y\n"),
        ToolOutcome::Failed { .. }
    ));
}

#[test]
fn the_branch_is_only_ever_fast_forwarded() {
    let against = |same, ancestor| Some(Against { same, ancestor });
    assert_eq!(push_plan(None), PushPlan::Create);
    assert_eq!(push_plan(against(true, true)), PushPlan::UpToDate);
    assert_eq!(push_plan(against(false, true)), PushPlan::FastForward);
    assert_eq!(push_plan(against(false, false)), PushPlan::Diverged);
}

#[test]
fn only_a_complete_spec_opens_a_ready_pull_request() {
    assert_eq!(may_open(3, 3, false), Ok(()));
    assert_eq!(may_open(1, 3, true), Ok(()));
    assert_eq!(
        may_open(2, 3, false),
        Err("the spec is not complete (2/3 chunks done)".into())
    );
    assert_eq!(
        may_open(0, 1, false),
        Err("the spec is not complete (0/1 chunk done)".into())
    );
    assert!(may_open(0, 0, false).unwrap_err().contains("no plan"));
}
