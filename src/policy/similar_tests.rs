use chrono::{Duration, TimeZone};

use super::*;

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| w.to_string()).collect()
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 23, 12, 0, 0).unwrap()
}

fn scored(spec: &str, score: f64, hours_ago: i64) -> Scored {
    Scored {
        spec: spec.into(),
        score,
        last_activity: now() - Duration::hours(hours_ago),
    }
}

#[test]
fn keywords_are_lowercase_alphanumeric_words_without_stop_words() {
    assert_eq!(
        keywords("Build the Payment-Service, with Stripe2 and a  retry!"),
        words(&["payment", "retry", "service", "stripe2"])
    );
    // Every issue stop word goes, and the usual English ones.
    assert_eq!(
        keywords("a an the with and or for to of in on build create implement add make"),
        Vec::<String>::new()
    );
    assert_eq!(
        keywords("it should be what we would use"),
        Vec::<String>::new()
    );
    // Sorted, once each.
    assert_eq!(keywords("zeta alpha Zeta ALPHA"), words(&["alpha", "zeta"]));
    assert_eq!(keywords(""), Vec::<String>::new());
    assert_eq!(keywords("  \n\t ,;! "), Vec::<String>::new());
}

#[test]
fn keywords_handle_any_text() {
    // Letters beyond ASCII are letters; a replacement character (from a non-UTF-8 byte read
    // lossily) separates words.
    assert_eq!(
        keywords("Überweisung prüfen"),
        words(&["prüfen", "überweisung"])
    );
    assert_eq!(keywords("bad\u{FFFD}byte"), words(&["bad", "byte"]));
    // Control characters and markdown are separators.
    assert_eq!(
        keywords("# Title\n\n- **export** `csv`\u{1b}[31m"),
        words(&["31m", "csv", "export", "title"])
    );
}

#[test]
fn a_member_of_a_synonym_group_adds_the_whole_group_with_its_name() {
    assert_eq!(
        keywords("JWT tokens"),
        words(&[
            "auth",
            "authentication",
            "jwt",
            "login",
            "oauth",
            "session",
            "tokens"
        ])
    );
    // The group's name alone adds its members too.
    assert_eq!(
        keywords("cache"),
        words(&["cache", "caching", "memcache", "redis", "ttl"])
    );
    // Two groups.
    let k = keywords("login page in react");
    for w in ["auth", "oauth", "frontend", "vue", "css", "page"] {
        assert!(k.contains(&w.to_string()), "{w} missing from {k:?}");
    }
    assert!(!k.contains(&"db".to_string()));
    // Every group, each from each of its words.
    for (name, members) in SYNONYM_GROUPS {
        for word in std::iter::once(name).chain(members.iter()) {
            let k = keywords(word);
            assert_eq!(k.len(), members.len() + 1, "{word}: {k:?}");
            assert!(k.contains(&name.to_string()));
            assert!(members.iter().all(|m| k.contains(&m.to_string())));
        }
    }
    // A word that only contains a member is not it.
    assert_eq!(keywords("sessions"), words(&["sessions"]));
}

#[test]
fn concepts_count_a_synonym_group_once() {
    assert_eq!(
        concepts(&keywords("Verbose output test")),
        words(&["output", "test", "verbose"])
    );
    // A group's whole expansion (as stored with a spec) and any one of its words are the same
    // concept.
    assert_eq!(concepts(&keywords("JWT login")), words(&["auth"]));
    assert_eq!(concepts(&keywords("oauth")), words(&["auth"]));
    assert_eq!(
        concepts(&keywords("pytest fixtures over the REST api")),
        words(&["api", "fixtures", "test"])
    );
    assert_eq!(concepts(&[]), Vec::<String>::new());
    // Every word of every group is its group.
    for (name, members) in SYNONYM_GROUPS {
        for word in std::iter::once(name).chain(members.iter()) {
            assert_eq!(concepts(&words(&[word])), words(&[name]), "{word}");
        }
    }
    let k = keywords("a Strange ÜBER text, with pytest and redis");
    assert_eq!(concepts(&k), concepts_plain(&k));
}

#[test]
fn one_shared_common_word_cannot_reach_the_threshold() {
    // Issue 27: "Verbose output test" scored 0.60 against each of three unrelated specs that
    // shared only "test", its six-word group counted on both sides.
    let query = concepts(&keywords("Verbose output test"));
    for other in [
        "Fix the flaky test",
        "Pytest fixtures cleanup",
        "Serializer unittest rewrite",
        "Add a spec for the signer",
        "TDD the timestamp module",
    ] {
        let j = jaccard(&query, &concepts(&keywords(other)));
        assert!(j < THRESHOLD, "{other}: {j}");
        assert_eq!(similar_enough(&query, other), None, "{other}");
    }
    // Whatever the descriptions' other words, one shared word is one concept of the union: it
    // reaches the threshold only when both have at most two concepts in all.
    let one_shared = jaccard(
        &concepts(&keywords("verbose output test")),
        &concepts(&keywords("flaky jest")),
    );
    assert_eq!(one_shared, 0.25);
}

#[test]
fn the_same_feature_in_other_words_still_matches() {
    // The seed's FastAPI auth descriptions and runner's own examples: the same feature
    // described with other words of the same groups.
    let pairs = [
        (
            "Add JWT auth to the FastAPI app",
            "Implement authentication for the FastAPI app",
        ),
        (
            "Add JWT auth to the FastAPI app",
            "OAuth login on the REST endpoint of the app",
        ),
        (
            "Add JWT login to the REST API",
            "Implement authentication endpoint with oauth",
        ),
        ("Add JWT login to the REST API", "JWT login for the api"),
        (
            "Add JWT login to the REST API",
            "# OAuth login\n\nLogin with JWT sessions on the REST endpoint.\n",
        ),
        ("Add a login page with JWT", "JWT login page"),
        ("Add a login page with JWT", "login page with jwt tokens"),
        ("Cache sessions in Redis", "Redis caching for sessions"),
    ];
    for (new, old) in pairs {
        let query = concepts(&keywords(new));
        let j = jaccard(&query, &concepts(&keywords(old)));
        assert!(j >= THRESHOLD, "{new} / {old}: {j}");
        assert_eq!(similar_enough(&query, old), Some(j), "{new} / {old}");
    }
}

#[test]
fn stored_keywords_are_normalized_not_expanded() {
    assert_eq!(
        normalized(words(&[" Redis", "redis", "", "  ", "Zed"])),
        words(&["redis", "zed"])
    );
}

#[test]
fn jaccard_is_the_shared_part_of_the_union() {
    let a = words(&["a1", "b2", "c3"]);
    let b = words(&["b2", "c3", "d4"]);
    assert_eq!(jaccard(&a, &b), 0.5);
    assert_eq!(jaccard(&a, &a), 1.0);
    assert_eq!(jaccard(&a, &words(&["x"])), 0.0);
    assert_eq!(jaccard(&[], &[]), 0.0);
    assert_eq!(jaccard(&a, &[]), 0.0);
    assert_eq!(jaccard(&b, &a), jaccard(&a, &b));
}

#[test]
fn recency_per_bucket_with_its_edges() {
    let at = |d: Duration| recency(now() - d, now());
    assert_eq!(at(Duration::zero()), 1.0);
    assert_eq!(at(Duration::days(1)), 1.0);
    assert_eq!(at(Duration::days(1) + Duration::seconds(1)), 0.85);
    assert_eq!(at(Duration::days(3)), 0.85);
    assert_eq!(at(Duration::days(3) + Duration::seconds(1)), 0.65);
    assert_eq!(at(Duration::days(7)), 0.65);
    assert_eq!(at(Duration::days(7) + Duration::seconds(1)), 0.40);
    assert_eq!(at(Duration::days(14)), 0.40);
    assert_eq!(at(Duration::days(14) + Duration::seconds(1)), 0.20);
    assert_eq!(at(Duration::days(4000)), 0.20);
    // The future counts as now.
    assert_eq!(at(-Duration::days(30)), 1.0);
}

#[test]
fn score_is_jaccard_times_recency_and_rounds_to_two_decimals() {
    assert_eq!(score(0.5, 0.85), 0.425);
    assert_eq!(rounded(0.425), 0.43);
    assert_eq!(rounded(1.0 / 3.0), 0.33);
    assert_eq!(rounded(score(1.0, 1.0)), 1.0);
}

#[test]
fn ranking_keeps_the_threshold_orders_best_first_and_shows_three() {
    let ranked = rank(vec![
        scored("001-low", 0.34, 0),
        scored("002-edge", THRESHOLD, 0),
        scored("003-best", 0.9, 100),
        scored("004-mid", 0.6, 0),
        scored("005-fourth", 0.36, 0),
    ]);
    let names: Vec<&str> = ranked.iter().map(|s| s.spec.as_str()).collect();
    assert_eq!(names, ["003-best", "004-mid", "005-fourth"]);

    // Below the threshold: nothing.
    assert!(rank(vec![scored("001-a", 0.3499, 0), scored("002-b", 0.0, 0)]).is_empty());
    assert!(rank(Vec::new()).is_empty());
    // Exactly the threshold is kept.
    assert_eq!(rank(vec![scored("002-edge", THRESHOLD, 0)]).len(), 1);
}

#[test]
fn ties_go_to_the_most_recent_then_the_name() {
    let ranked = rank(vec![
        scored("003-c", 0.5, 5),
        scored("002-b", 0.5, 1),
        scored("001-a", 0.5, 5),
    ]);
    let names: Vec<&str> = ranked.iter().map(|s| s.spec.as_str()).collect();
    assert_eq!(names, ["002-b", "001-a", "003-c"]);
}

#[test]
fn scoring_a_description_against_specs_end_to_end() {
    // What `ops::detect` does with the pure parts: the same feature worded differently
    // matches through its synonyms, an old spec's score falls below the threshold, an
    // unrelated one never reaches it.
    let query = concepts(&keywords("Add JWT login to the REST API"));
    let specs = [
        (
            "001-auth",
            "Implement authentication endpoint with oauth",
            2,
        ),
        (
            "002-old-auth",
            "Implement authentication endpoint with oauth",
            24 * 30,
        ),
        ("003-css", "Restyle the dashboard CSS", 1),
    ];
    let scored_specs: Vec<Scored> = specs
        .iter()
        .map(|(spec, text, hours)| {
            let last = now() - Duration::hours(*hours);
            Scored {
                spec: spec.to_string(),
                score: score(
                    jaccard(&query, &concepts(&keywords(text))),
                    recency(last, now()),
                ),
                last_activity: last,
            }
        })
        .collect();
    assert!(scored_specs[0].score >= THRESHOLD, "{scored_specs:?}");
    assert!(scored_specs[1].score < THRESHOLD);
    assert!(scored_specs[2].score < THRESHOLD);
    let ranked = rank(scored_specs);
    assert_eq!(ranked.len(), 1);
    assert_eq!(ranked[0].spec, "001-auth");
}

#[test]
fn same_description_is_trimmed_and_case_insensitive() {
    assert!(same_description("Add Login", "  add login \n"));
    assert!(same_description("ÜBER", "über"));
    assert!(!same_description("add login", "add  login"));
    assert!(!same_description("add login", "add logout"));
    assert!(same_description("", "   "));
}

#[test]
fn of_several_identical_specs_the_most_recently_active_is_reported() {
    let picked = pick_identical(vec![
        scored("001-a", 0.0, 50),
        scored("003-c", 0.0, 2),
        scored("002-b", 0.0, 2),
    ]);
    assert_eq!(picked.map(|s| s.spec), Some("002-b".into()));
    assert_eq!(pick_identical(Vec::new()), None);
}

/// The plain definition of [`keywords`]: the fast one must give exactly its answer.
fn keywords_plain(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    let hits: Vec<(&str, &[&str])> = SYNONYM_GROUPS
        .iter()
        .copied()
        .filter(|(name, members)| {
            words
                .iter()
                .any(|w| w == name || members.contains(&w.as_str()))
        })
        .collect();
    for (name, members) in hits {
        words.push(name.to_string());
        words.extend(members.iter().map(|m| m.to_string()));
    }
    words.sort_unstable();
    words.dedup();
    words
}

/// The plain definition of [`concepts`]: a group's word is its name.
fn concepts_plain(keywords: &[String]) -> Vec<String> {
    let mut out: Vec<String> = keywords
        .iter()
        .map(|w| {
            SYNONYM_GROUPS
                .iter()
                .find(|(name, members)| w == name || members.contains(&w.as_str()))
                .map_or(w.clone(), |(name, _)| name.to_string())
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The plain definition of [`normalized`].
fn normalized_plain(stored: Vec<String>) -> Vec<String> {
    let mut words: Vec<String> = stored
        .into_iter()
        .map(|w| w.trim().to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

#[test]
fn the_fast_keywords_and_normalization_give_the_plain_definitions_answers() {
    // Random texts over a vocabulary of stop words, synonym words, mixed case, non-ASCII
    // (titlecase, final sigma, dotted I), digits and separators.
    let mut vocab: Vec<String> = STOP_WORDS.iter().map(|w| w.to_string()).collect();
    for (name, members) in SYNONYM_GROUPS {
        vocab.push(name.to_string());
        vocab.extend(members.iter().map(|m| m.to_string()));
    }
    for w in [
        "JWT",
        "Login",
        "REDIS",
        "The",
        "ǅemal",
        "ΟΔΟΣ",
        "İstanbul",
        "Straße",
        "x2",
        "42",
        "café",
        "ÜBER",
        "a",
        "I",
        "Spec",
    ] {
        vocab.push(w.to_string());
    }
    let seps = [" ", "-", ", ", "\n", "_", "/", "\u{FFFD}", ".", "  "];
    let mut seed = 0x1234_5678_u64;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    for _ in 0..3000 {
        let mut text = String::new();
        for _ in 0..next(30) {
            text.push_str(&vocab[next(vocab.len())]);
            text.push_str(seps[next(seps.len())]);
        }
        assert_eq!(keywords(&text), keywords_plain(&text), "{text:?}");
        // The early stop gives the full computation's answer, for queries of every size.
        let third: String = text.chars().take(text.chars().count() / 3).collect();
        for query in [third.as_str(), "jwt login api", "", &text] {
            let q = concepts_plain(&keywords_plain(query));
            let full = jaccard(&q, &concepts_plain(&keywords_plain(&text)));
            let expected = (full >= THRESHOLD).then_some(full);
            assert_eq!(similar_enough(&q, &text), expected, "{query:?} / {text:?}");
        }
        let k = keywords(&text);
        assert_eq!(normalized(k.clone()), normalized_plain(k.clone()));
        let stored: Vec<String> = (0..next(6))
            .map(|_| {
                let w = &vocab[next(vocab.len())];
                if next(3) == 0 {
                    format!(" {w}")
                } else {
                    w.clone()
                }
            })
            .collect();
        assert_eq!(
            normalized(stored.clone()),
            normalized_plain(stored),
            "{text:?}"
        );
    }
    assert_eq!(normalized(words(&["ǅ"])), words(&["ǆ"]));
}

#[test]
fn the_early_stop_bound_is_exact_at_its_edge() {
    // A query of 7 keywords: 20 distinct keywords can still reach 0.35 (7/20), 21 cannot.
    let q = words(&["k1", "k2", "k3", "k4", "k5", "k6", "k7"]);
    let text = |n: usize| {
        (1..=n)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(similar_enough(&q, &text(20)), Some(0.35));
    assert_eq!(similar_enough(&q, &text(21)), None);
    assert_eq!(
        similar_enough(&q, &format!("{} k1 k1 k2", text(20))),
        Some(0.35)
    );
    assert_eq!(similar_enough(&[], "anything"), None);
    assert_eq!(similar_enough(&q, ""), None);
}

#[test]
fn stop_words_and_synonym_words_are_apart() {
    for (name, members) in SYNONYM_GROUPS {
        for w in std::iter::once(name).chain(members.iter()) {
            assert!(!STOP_WORDS.contains(w), "{w}");
        }
    }
}

#[test]
fn the_synonym_groups_and_stop_words_are_the_issues_word_for_word() {
    // Issue 13, as written: a word dropped from or added to a group changes every score.
    let issue = [
        ("auth", "authentication login jwt oauth session"),
        ("api", "rest endpoint fastapi flask routes http"),
        ("db", "database postgres sqlite mysql sql orm"),
        ("frontend", "ui react nextjs vue svelte html css"),
        ("queue", "worker celery task async job broker"),
        ("cache", "redis memcache caching ttl"),
        ("test", "pytest jest unittest spec tdd"),
    ];
    let ours: Vec<(&str, Vec<&str>)> = SYNONYM_GROUPS
        .iter()
        .map(|(name, members)| (*name, members.to_vec()))
        .collect();
    let theirs: Vec<(&str, Vec<&str>)> = issue
        .iter()
        .map(|(name, members)| (*name, members.split(' ').collect()))
        .collect();
    assert_eq!(ours, theirs);
    let listed = "a an the with and or for to of in on build create implement add make";
    for w in listed.split(' ') {
        assert!(STOP_WORDS.contains(&w), "{w}");
    }
}
