use super::*;

#[test]
fn the_title_is_the_task_then_the_first_heading_then_the_name() {
    assert_eq!(
        title(
            Some("\n  Add a login page\nwith details"),
            Some("# Other"),
            "001-a"
        ),
        "Add a login page"
    );
    assert_eq!(
        title(Some("  "), Some("intro\n## Login page ##\n# x"), "001-a"),
        "Login page"
    );
    assert_eq!(
        title(None, Some("#hashtag\n#######\nno heading"), "001-a"),
        "001-a"
    );
    assert_eq!(title(None, None, "001-a"), "001-a");
    // One line, nothing that acts on a screen, cut.
    assert_eq!(title(Some("a\u{1b}[2J\u{202e}b\tc"), None, "s"), "a[2Jb c");
    let long = title(Some(&"x".repeat(500)), None, "s");
    assert_eq!(long.chars().count(), MAX_TITLE_CHARS);
    assert!(long.ends_with('…'));
}

fn chunk(id: &str, status: &str, command: Option<&str>, passed: Option<bool>) -> ChunkLine {
    ChunkLine {
        id: id.into(),
        description: format!("Build {id}"),
        status: status.into(),
        command: command.map(str::to_string),
        passed,
    }
}

fn facts(chunks: &[ChunkLine], cost: Spent) -> BodyFacts<'_> {
    BodyFacts {
        spec: "001-a",
        branch: "auto-claude/001-a",
        base: "main",
        chunks,
        cost,
    }
}

#[test]
fn the_body_lists_each_chunk_its_verification_and_the_cost() {
    let chunks = [
        chunk("core-a", "completed", None, None),
        chunk("core-b", "completed", Some("test -f b"), Some(true)),
        chunk("polish", "in_progress", Some("make lint"), None),
        chunk("x", "failed", Some("false"), Some(false)),
    ];
    let cost = Spent {
        usd: 0.4213,
        tokens: 12_345,
        sessions: 4,
    };
    assert_eq!(
        body(&facts(&chunks, cost)),
        "Built by runner from spec `001-a` on branch `auto-claude/001-a` (base `main`): 2/4 chunks completed.\n\n\
         | chunk | description | status | verification |\n| --- | --- | --- | --- |\n\
         | `core-a` | Build core-a | completed | none |\n\
         | `core-b` | Build core-b | completed | `test -f b`: passed |\n\
         | `polish` | Build polish | in progress | `make lint`: not run |\n\
         | `x` | Build x | failed | `false`: **failed** |\n\
         \n**Cost:** $0.4213 and 12345 tokens over 4 sessions (dollars as the agents reported them; notional for a subscription login).\n"
    );
    let no_dollars = Spent {
        usd: 0.0,
        tokens: 10,
        sessions: 1,
    };
    assert!(
        body(&facts(&chunks, no_dollars))
            .ends_with("**Cost:** 10 tokens over 1 session (the agents reported no dollars).\n")
    );
    assert!(
        body(&facts(&[], Spent::default()))
            .contains("0/0 chunks completed.\n\n**Cost:** no sessions recorded.")
    );
}

#[test]
fn plan_text_cannot_break_the_table_or_the_code() {
    let mut c = chunk(
        "a|b",
        "completed",
        Some("echo `x` | grep ``y``"),
        Some(true),
    );
    c.description = "one\ntwo | three\r\n<b>\u{202e}".into();
    let text = body(&facts(&[c], Spent::default()));
    let row = text.lines().find(|l| l.starts_with("| `a")).unwrap();
    assert_eq!(
        row,
        "| `a\\|b` | one two \\| three <b> | completed | ``` echo `x` \\| grep ``y`` ```: passed |"
    );
    assert_eq!(code("`x`"), "`` `x` ``");
}

#[test]
fn a_huge_plan_is_cut_to_the_cap_and_says_how_many_are_left_out() {
    let chunks: Vec<ChunkLine> = (0..2000)
        .map(|i| {
            let mut c = chunk(
                &format!("c{i}"),
                "completed",
                Some("cargo test"),
                Some(true),
            );
            c.description = "d".repeat(1000);
            c
        })
        .collect();
    let text = body(&facts(&chunks, Spent::default()));
    assert!(text.len() <= MAX_BODY_BYTES, "{}", text.len());
    assert!(
        text.contains("more (`runner plan` shows them all)"),
        "{}",
        &text[text.len() - 300..]
    );
    assert!(text.ends_with("**Cost:** no sessions recorded.\n"));
}
