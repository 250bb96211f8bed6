//! How a usage limit's pause reads on a screen (issue 27): the local time it ends and the time
//! left ("until 14:05 local, in 25 min", `TZ` honoured) on every screen that names it, while
//! JSON keeps RFC 3339 UTC; and `run --wait`'s bar shows the spec's own progress while it
//! waits.

use chrono::{DateTime, Duration, FixedOffset, SecondsFormat, Utc};
use serde_json::Value;

use crate::common::*;
use crate::fake_cli::FakeCli;

/// A zone of half hours (UTC+05:30) in POSIX form, read without a zoneinfo database.
const TZ: &str = "IST-5:30";

fn offset() -> FixedOffset {
    FixedOffset::east_opt(5 * 3600 + 30 * 60).unwrap()
}

/// The pause of `001-p` ending at `until`.
fn pause(cli: &FakeCli, until: DateTime<Utc>) {
    let path = cli.repo.path(".auto-claude/pauses/001-p.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let (until, now) = (until.to_rfc3339(), Utc::now().to_rfc3339());
    std::fs::write(
        &path,
        format!(r#"{{"until":"{until}","reason":"r","preset":"claude","set_at":"{now}"}}"#),
    )
    .unwrap();
}

/// `runner ARGS` (with the fake CLI's variables) in zone [`TZ`].
fn runner_in_tz(cli: &FakeCli, args: &[&str]) -> std::process::Output {
    cli.cmd(args).env("TZ", TZ).output().unwrap()
}

#[test]
fn a_pause_reads_in_local_time_with_the_time_left_and_json_keeps_utc() {
    let cli = FakeCli::new("claude", "");
    // 25½ minutes ahead: shown as 26 min (rounded up: a wait is never longer than said) for
    // the half minute this test has.
    let until = Utc::now() + Duration::seconds(25 * 60 + 30);
    pause(&cli, until);
    let local = until.with_timezone(&offset());
    let clock = local.format("%H:%M").to_string();
    let words = format!("{clock} local, in 26 min");
    let utc = until.to_rfc3339_opts(SecondsFormat::Secs, true);

    // `run`'s stop (exit 6), with its hint.
    let out = runner_in_tz(&cli, &["run", "--spec", "001-p"]);
    assert_exit(&out, 6);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("paused by a usage limit until {words}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("after {clock} local: runner run --spec 001-p")),
        "{err}"
    );
    // JSON: the UTC time, as written.
    let out = runner_in_tz(&cli, &["run", "--spec", "001-p", "--json"]);
    assert_exit(&out, 6);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains(&utc), "{v}");

    // `status`: the line in words; its JSON in UTC.
    let out = runner_in_tz(&cli, &["status"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains(&format!("by a usage limit until {words}")),
        "{}",
        stdout(&out)
    );
    let out = runner_in_tz(&cli, &["status", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["specs"][0]["paused_until"], utc.as_str(), "{v}");

    // `run --auto-continue` skips it, saying so.
    let out = runner_in_tz(&cli, &["run", "--auto-continue"]);
    assert_exit(&out, 6);
    assert!(
        stderr(&out).contains(&format!("paused by a usage limit until {words}")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_pause_on_another_day_carries_its_date_and_tz_is_honoured() {
    let cli = FakeCli::new("claude", "");
    // 30 hours ahead: another day wherever it is read.
    let until = Utc::now() + Duration::hours(30);
    pause(&cli, until);
    for (tz, offset) in [
        ("IST-5:30", offset()),
        ("UTC0", FixedOffset::east_opt(0).unwrap()),
    ] {
        let shown = until.with_timezone(&offset).format("%Y-%m-%d %H:%M");
        let out = cli.cmd(&["status"]).env("TZ", tz).output().unwrap();
        assert!(
            stdout(&out).contains(&format!("until {shown} local, in 30 h")),
            "{tz}: {}",
            stdout(&out)
        );
    }
}

#[test]
fn the_wait_bar_shows_the_specs_progress_and_the_local_time() {
    use expectrl::Expect;
    // core-a completes; core-b's first session hits the limit: exit 6, 1 of 3 chunks done.
    let cli = FakeCli::new("claude", "[run]\nmax_attempts = 1\n");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        cli.repo.plan_path("001-p"),
    )
    .unwrap();
    cli.preset_script("core-b 1 limit +3600\n");
    assert_exit(&cli.run(&[]), 6);
    // The pause ends in a few seconds; a run with --wait on a terminal waits it out.
    let until = Utc::now() + Duration::seconds(6);
    pause(&cli, until);
    let clock = until.with_timezone(&offset()).format("%H:%M").to_string();
    let mut cmd = cli.cmd(&["run", "--spec", "001-p", "--wait"]);
    cmd.env("TZ", TZ).env("TERM", "xterm").env("NO_COLOR", "1");
    let mut s = expectrl::session::OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(std::time::Duration::from_secs(60)));
    s.expect(format!("until {clock} local").as_str()).unwrap();
    // The bar, while it waits: the spec's chunks, not 0/0.
    s.expect("1/3 chunks  paused by a usage limit: ").unwrap();
    s.expect(format!("left (until {clock} local)").as_str())
        .unwrap();
    s.expect(expectrl::Eof).unwrap();
    assert!(
        cli.repo
            .statuses("001-p")
            .iter()
            .all(|(_, s)| s == "completed")
    );
}
