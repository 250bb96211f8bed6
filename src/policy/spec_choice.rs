//! Which spec a command is about, decided over plain data: the spec folder names, what the user
//! typed after `--spec`, and the spec whose slot the command was started in. The one rule every
//! command follows (the mechanism that gathers the data is `store::spec::choose`).

/// How a `--spec` query matched the folder names.
#[derive(Debug, PartialEq, Eq)]
pub enum Resolution {
    One(String),
    None,
    Many(Vec<String>),
}

/// How loosely a query may name a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    /// Every reading, the loose ones too (commands that only read or build).
    Loose,
    /// Exact name, `X-` prefix, substring, or the substring as loosely written (any case,
    /// `_` `.` or space for `-`), never words gathered from anywhere in the name (a stale
    /// name whose words reappear in another spec's): a command that changes a spec (merge,
    /// discard, undo) must not act on one the user did not clearly name.
    Strict,
}

/// Exact name, else the unique folder starting with `X-`, else a unique substring; else, as a
/// person or a model writes a name loosely (`sign_many`, `Sign Many` for
/// `007-add-a-sign-many-helper`), the query in lower case with `_`, spaces and dots read as
/// `-`, as a substring, else all its words in the name.
pub fn resolve_among(names: &[String], query: &str) -> Resolution {
    resolve_with(names, query, Matching::Loose)
}

/// [`resolve_among`], with the loose readings only when `matching` allows them.
pub fn resolve_with(names: &[String], query: &str, matching: Matching) -> Resolution {
    if names.iter().any(|n| n == query) {
        return Resolution::One(query.to_string());
    }
    let prefix = format!("{query}-");
    let loose: String = query
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if matches!(c, '_' | ' ' | '.') { '-' } else { c })
        .collect();
    let words: Vec<&str> = loose.split('-').filter(|w| !w.is_empty()).collect();
    let steps: [&dyn Fn(&str) -> bool; 4] = [
        &|n| n.starts_with(&prefix),
        &|n| n.contains(query),
        &|n| !loose.is_empty() && n.to_lowercase().contains(&loose),
        &|n| {
            let lower = n.to_lowercase();
            !words.is_empty() && words.iter().all(|w| lower.contains(w))
        },
    ];
    let allowed = match matching {
        Matching::Loose => steps.len(),
        Matching::Strict => 3,
    };
    for step in steps.into_iter().take(allowed) {
        let matches: Vec<String> = names.iter().filter(|n| step(n)).cloned().collect();
        match matches.len() {
            0 => continue,
            1 => return Resolution::One(matches.into_iter().next().unwrap_or_default()),
            _ => return Resolution::Many(matches),
        }
    }
    Resolution::None
}

/// What the rule picked.
#[derive(Debug, PartialEq, Eq)]
pub enum SpecChoice {
    /// This spec.
    One(String),
    /// `--spec` matched several: name one of these.
    SeveralMatch {
        query: String,
        candidates: Vec<String>,
    },
    /// No `--spec` and nothing to infer it from, with several specs: name one of these.
    NotSaid { candidates: Vec<String> },
    /// `--spec` matched nothing.
    NoMatch { query: String },
    /// `--spec` matched nothing strictly, only loosely (these), for a command that changes a
    /// spec: name one clearly.
    OnlyLoosely {
        query: String,
        candidates: Vec<String>,
    },
    /// There are no specs at all.
    NoSpecs,
    /// Started inside the slot of a spec whose folder is gone: no other spec is taken for it.
    SlotSpecGone(String),
}

/// The rule: `--spec` when given (explicit wins, wherever the command runs); else the spec of
/// the runner slot the command was started in (`slot_spec`: from the slot's branch
/// `auto-claude/<spec>`); else the only spec; else the list to choose from. A command started
/// in any other worktree infers nothing from it.
pub fn choose(names: &[String], query: Option<&str>, slot_spec: Option<&str>) -> SpecChoice {
    choose_with(names, query, slot_spec, Matching::Loose)
}

/// [`choose`], `--spec` read as `matching` allows.
pub fn choose_with(
    names: &[String],
    query: Option<&str>,
    slot_spec: Option<&str>,
    matching: Matching,
) -> SpecChoice {
    if let Some(query) = query {
        return match resolve_with(names, query, matching) {
            Resolution::One(name) => SpecChoice::One(name),
            Resolution::Many(candidates) => SpecChoice::SeveralMatch {
                query: query.to_string(),
                candidates,
            },
            Resolution::None if names.is_empty() => SpecChoice::NoSpecs,
            Resolution::None => match resolve_with(names, query, Matching::Loose) {
                Resolution::One(name) => SpecChoice::OnlyLoosely {
                    query: query.to_string(),
                    candidates: vec![name],
                },
                Resolution::Many(candidates) => SpecChoice::OnlyLoosely {
                    query: query.to_string(),
                    candidates,
                },
                Resolution::None => SpecChoice::NoMatch {
                    query: query.to_string(),
                },
            },
        };
    }
    if let Some(spec) = slot_spec {
        return if names.iter().any(|n| n == spec) {
            SpecChoice::One(spec.to_string())
        } else {
            SpecChoice::SlotSpecGone(spec.to_string())
        };
    }
    match names {
        [] => SpecChoice::NoSpecs,
        [one] => SpecChoice::One(one.clone()),
        _ => SpecChoice::NotSaid {
            candidates: names.to_vec(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn exact_then_prefix_then_substring() {
        let n = names(&["001-add-login", "002-add-logout", "010-login-page"]);
        assert_eq!(
            resolve_among(&n, "001-add-login"),
            Resolution::One("001-add-login".into())
        );
        assert_eq!(
            resolve_among(&n, "001"),
            Resolution::One("001-add-login".into())
        );
        assert_eq!(
            resolve_among(&n, "logout"),
            Resolution::One("002-add-logout".into())
        );
        assert_eq!(
            resolve_among(&n, "login"),
            Resolution::Many(names(&["001-add-login", "010-login-page"]))
        );
        assert_eq!(resolve_among(&n, "zzz"), Resolution::None);
        // "00" is no exact name and no folder starts with "00-": substring matches all three.
        assert!(matches!(resolve_among(&n, "00"), Resolution::Many(m) if m.len() == 2));
    }

    #[test]
    fn a_loosely_written_name_finds_the_spec_when_nothing_closer_does() {
        let n = names(&["007-add-a-sign-many-helper", "008-sign-one", "009-login"]);
        let one = |q: &str| resolve_among(&n, q);
        assert_eq!(one("sign_many"), Resolution::One(n[0].clone()));
        assert_eq!(one("Sign Many"), Resolution::One(n[0].clone()));
        assert_eq!(one("many_sign"), Resolution::One(n[0].clone()));
        assert_eq!(one("helper_add"), Resolution::One(n[0].clone()));
        // A closer reading wins: `sign` is a substring of two, so both are listed.
        assert_eq!(
            one("sign"),
            Resolution::Many(vec![n[0].clone(), n[1].clone()])
        );
        assert_eq!(one("logout_x"), Resolution::None);
    }

    #[test]
    fn a_command_that_changes_a_spec_takes_no_loose_reading() {
        let n = names(&["002-fix-auth-bug-regression", "003-login"]);
        let strict = |q: &str| choose_with(&n, Some(q), None, Matching::Strict);
        // A number, a part of the name, as written or in another case or with `_` for `-`.
        for q in ["002", "auth-bug", "Auth-Bug", "fix.auth", "auth_bug"] {
            assert_eq!(strict(q), SpecChoice::One(n[0].clone()), "{q}");
        }
        // A stale name whose words reappear in another order in another spec's names nothing
        // clearly: refused, naming what it loosely resembles.
        for q in ["regression_bug", "bug-fix", "fix_bug", "ion-002"] {
            assert_eq!(
                strict(q),
                SpecChoice::OnlyLoosely {
                    query: q.into(),
                    candidates: vec![n[0].clone()]
                },
                "{q}"
            );
            assert_eq!(choose(&n, Some(q), None), SpecChoice::One(n[0].clone()));
        }
        assert_eq!(
            strict("zzz"),
            SpecChoice::NoMatch {
                query: "zzz".into()
            }
        );
    }

    #[test]
    fn an_explicit_spec_wins_over_the_slot() {
        let n = names(&["001-a", "002-b"]);
        assert_eq!(
            choose(&n, Some("002"), Some("001-a")),
            SpecChoice::One("002-b".into())
        );
        assert_eq!(
            choose(&n, Some("zzz"), Some("001-a")),
            SpecChoice::NoMatch {
                query: "zzz".into()
            }
        );
    }

    #[test]
    fn without_spec_the_slot_then_the_only_spec_then_a_choice() {
        let two = names(&["001-a", "002-b"]);
        assert_eq!(
            choose(&two, None, Some("002-b")),
            SpecChoice::One("002-b".into())
        );
        assert_eq!(
            choose(&two, None, None),
            SpecChoice::NotSaid {
                candidates: two.clone()
            }
        );
        assert_eq!(
            choose(&names(&["001-a"]), None, None),
            SpecChoice::One("001-a".into())
        );
        assert_eq!(choose(&[], None, None), SpecChoice::NoSpecs);
        assert_eq!(choose(&[], Some("001"), None), SpecChoice::NoSpecs);
    }

    #[test]
    fn a_slot_whose_spec_is_gone_picks_no_other() {
        assert_eq!(
            choose(&names(&["002-b"]), None, Some("001-a")),
            SpecChoice::SlotSpecGone("001-a".into())
        );
    }

    #[test]
    fn several_matches_of_a_query_are_listed() {
        let n = names(&["001-add-login", "010-login-page"]);
        assert_eq!(
            choose(&n, Some("login"), None),
            SpecChoice::SeveralMatch {
                query: "login".into(),
                candidates: n.clone()
            }
        );
    }
}
