//! The fake CLIs (`fixtures/fake-*`) against what the real CLIs printed
//! (`fixtures/agent-output/<cli>/recorded/`: `suite-*`, recorded by the real-CLI suite itself
//! — `scripts/record-agent-outputs` records them again — and the cases it does not play, kept
//! from sessions against the same scripted model server): each fake, run by runner as in every other test, for a coder session that
//! succeeds and one that hits the usage limit, must print only events the real CLI printed in
//! the same case, each with no key the real event lacks (nor in the nested objects runner's
//! parsers read), and its usage-limit words as the real CLI words them. A fake that drifts from
//! its CLI would let the tests that use it pass on shapes no real CLI prints.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chrono::Utc;
use serde_json::Value;

use crate::common::*;
use crate::fake_cli::FakeCli;

fn recorded(preset: &str, file: &str) -> Vec<u8> {
    let path = fixture(&format!("agent-output/{preset}/recorded/{file}"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The JSON objects of `output`, one a line; anything else (the CLI's text, stderr) skipped.
fn events(output: &[u8]) -> Vec<Value> {
    output
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(Value::is_object)
        .collect()
}

/// What an event is, as the parsers tell events apart.
fn kind(preset: &str, ev: &Value) -> String {
    let field = if preset == "aider" { "event" } else { "type" };
    let mut kind = ev[field].as_str().unwrap_or("?").to_string();
    let sub = match preset {
        "claude" => ev["subtype"].as_str(),
        "codex" => ev["item"]["type"].as_str(),
        _ => None,
    };
    if let Some(sub) = sub {
        kind = format!("{kind}/{sub}");
    }
    kind
}

/// The nested objects of an event a parser reads, whose keys are checked too.
fn nested(preset: &str) -> &'static [&'static str] {
    match preset {
        "claude" => &["usage", "rate_limit_info", "message"],
        "codex" => &["usage", "error", "item"],
        "gemini" => &["stats", "error"],
        _ => &["properties"],
    }
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// What `fake` has that `real` lacks: its keys, and those of the nested objects checked.
fn extra_keys(preset: &str, fake: &Value, real: &Value) -> Vec<String> {
    let mut extra: Vec<String> = keys(fake).difference(&keys(real)).cloned().collect();
    for field in nested(preset) {
        if fake[field].is_object() {
            extra.extend(
                keys(&fake[field])
                    .difference(&keys(&real[field]))
                    .map(|k| format!("{field}.{k}")),
            );
        }
    }
    extra
}

/// Every event of the fake is of a kind the real CLI printed in the same case, and one of the
/// real events of that kind has every key the fake's has.
fn assert_same_events(preset: &str, case: &str, fake: &[Value], real: &[Value]) {
    assert!(
        !fake.is_empty(),
        "{preset} {case}: the fake printed no event"
    );
    for ev in fake {
        let k = kind(preset, ev);
        let same: Vec<&Value> = real.iter().filter(|r| kind(preset, r) == k).collect();
        assert!(
            !same.is_empty(),
            "{preset} {case}: the fake prints a `{k}` the real CLI did not: {ev}"
        );
        let closest = same
            .iter()
            .map(|r| extra_keys(preset, ev, r))
            .min_by_key(Vec::len)
            .unwrap();
        assert!(
            closest.is_empty(),
            "{preset} {case}: the fake's `{k}` has keys the real one lacks: {closest:?}\n{ev}"
        );
    }
}

/// A usage-limit message with its figures and times blanked: the words of the two must match.
fn shape(text: &str) -> String {
    let mut text = text.to_string();
    for marker in ["try again at ", "try again in ", "resets "] {
        // ASCII lower-casing keeps byte offsets.
        if let Some(at) = text.to_ascii_lowercase().find(marker) {
            let rest = &text[at + marker.len()..];
            // The time, up to a parenthesis (claude's zone) or the end.
            let end = rest.find(" (").unwrap_or(rest.len());
            text = format!("{}{marker}<time>{}", &text[..at], &rest[end..]);
            break;
        }
    }
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('0') {
                out.push('0');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The words each CLI says a failure or a usage limit in, as its parser reads them.
fn said_words(preset: &str, output: &[u8]) -> Vec<String> {
    let evs = events(output);
    let words: Vec<String> = match preset {
        "claude" => evs
            .iter()
            .filter(|e| e["type"] == "result")
            .filter_map(|e| e["result"].as_str())
            .map(str::to_string)
            .collect(),
        "codex" => evs
            .iter()
            .filter_map(|e| e["error"]["message"].as_str().or(e["message"].as_str()))
            .map(str::to_string)
            .collect(),
        "gemini" => evs
            .iter()
            .filter_map(|e| e["error"]["message"].as_str())
            .map(str::to_string)
            .collect(),
        // aider: the litellm exception (its name and provider) and aider's explanation.
        _ => String::from_utf8_lossy(output)
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                if l.starts_with("litellm.") {
                    Some(l.split(" - ").next().unwrap().to_string())
                } else if l.starts_with("The API provider") || l.starts_with("Retrying in ") {
                    Some(l.to_string())
                } else {
                    None
                }
            })
            .collect(),
    };
    words.iter().map(|w| shape(w)).collect()
}

/// The session folder of core-a's first attempt.
fn first_session(cli: &FakeCli) -> PathBuf {
    let a = &cli.attempts("core-a")[0];
    let id = a["session_id"].as_str().unwrap_or_else(|| panic!("{a}"));
    cli.repo.spec_dir("001-p").join("sessions").join(id)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fake's scripted session (core-a's first, run by runner) and the real CLI's recording of
/// the same case.
struct Case {
    preset: &'static str,
    /// Config lines after `[agent]`.
    config: &'static str,
    /// The fake's rule for core-a (`{at}`: an hour or so ahead, on a whole minute).
    rule: &'static str,
    /// runner's exit.
    exit: i32,
    recorded: &'static str,
    /// Whether the session's failure or limit words are compared too.
    words: bool,
}

fn check(case: &Case) {
    let preset = case.preset;
    let name = case.recorded;
    // An hour or so ahead, on a whole minute (codex prints minutes only).
    let at = (Utc::now().timestamp() / 60 + 61) * 60;
    let cli = FakeCli::new(preset, &format!("[run]\nmax_attempts = 1\n{}", case.config));
    cli.preset_script(&case.rule.replace("{at}", &at.to_string()));
    let out = cli.run(&[]);
    assert_exit(&out, case.exit);
    let dir = first_session(&cli);
    let output = read(&dir.join("output.log"));
    let real_stdout = recorded(preset, &format!("{name}.stdout"));
    if preset == "aider" {
        // aider prints text; its events are its analytics log's.
        let fake = events(&read(&dir.join("aider.jsonl")));
        let real = events(&recorded(preset, &format!("{name}.analytics.jsonl")));
        assert_same_events(preset, name, &fake, &real);
    } else {
        assert_same_events(preset, name, &events(&output), &events(&real_stdout));
    }
    if case.words {
        let mut real_output = real_stdout;
        real_output.extend(recorded(preset, &format!("{name}.stderr")));
        let real = said_words(preset, &real_output);
        let fake = said_words(preset, &output);
        assert!(!fake.is_empty(), "{preset} {name}: the fake says nothing");
        for words in &fake {
            assert!(
                real.contains(words),
                "{preset} {name}: the fake says {words:?}; the real CLI: {real:?}"
            );
        }
    }
}

const fn case(preset: &'static str, rule: &'static str, exit: i32, recorded: &'static str) -> Case {
    Case {
        preset,
        config: "",
        rule,
        exit,
        recorded,
        words: exit != 0,
    }
}

#[test]
fn every_fake_succeeds_with_the_events_its_real_cli_prints() {
    for c in [
        case("claude", "", 0, "suite-build-coder"),
        case("codex", "", 0, "suite-build-coder"),
        case("gemini", "", 0, "suite-build-coder"),
        case("aider", "", 0, "suite-build-coder"),
    ] {
        check(&c);
    }
}

#[test]
fn every_fake_hits_the_usage_limit_with_the_events_and_words_its_real_cli_prints() {
    for c in [
        case("claude", "core-a 1 limit {at}\n", 6, "suite-limit-coder"),
        case("codex", "core-a 1 limit {at}\n", 6, "suite-limit-coder"),
        case("gemini", "core-a 1 limit {at}\n", 6, "suite-limit-coder"),
        case("gemini", "core-a 1 quota 34.780\n", 6, "usage-limit-minute"),
        case("aider", "core-a 1 limit {at}\n", 6, "suite-limit-coder"),
        case("aider", "core-a 1 quota\n", 6, "usage_limit_quota"),
    ] {
        check(&c);
    }
}

#[test]
fn the_fakes_failures_are_printed_as_their_real_clis_print_them() {
    for c in [
        // The planner spends $0.05 of $0.07: claude gets the rest as --max-budget-usd and
        // stops at it. (Its words are in `errors`, not compared.)
        Case {
            config: "[budget]\nmax_usd = 0.07\n",
            words: false,
            ..case("claude", "", 5, "budget")
        },
        case("codex", "core-a 1 fail\n", 3, "server_error_retried"),
    ] {
        check(&c);
    }
}

#[test]
fn the_limit_shape_blanks_times_and_figures_only() {
    assert_eq!(
        shape("You've hit your session limit \u{b7} resets 9:18am (UTC)"),
        shape("You've hit your session limit \u{b7} resets 3pm (UTC)")
    );
    assert_ne!(
        shape("You've hit your session limit \u{b7} resets 3pm (UTC)"),
        shape("You've hit your limit \u{b7} resets 3pm (UTC)")
    );
    assert_eq!(
        shape("You\u{2019}ve hit your usage limit. Try again at Aug 8th, 2026 12:30 PM."),
        shape("You\u{2019}ve hit your usage limit. Try again at 7:20 AM.")
    );
    assert_ne!(
        shape("You've hit your usage limit. Try again at 7:20 AM."),
        shape("You\u{2019}ve hit your usage limit. Try again at 7:20 AM.")
    );
}
