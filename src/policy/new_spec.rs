//! A new spec's name (`runner new`): the slug made from its description, the rules a `--name`
//! must follow, and the next free number over every spec name runner can see.

/// The longest slug: a folder and branch name a person still reads at a glance.
pub const MAX_SLUG: usize = 50;

/// The slug of a description that has no ASCII letter or digit in it (only emoji, only
/// non-Latin script): still a valid name.
pub const FALLBACK_SLUG: &str = "spec";

/// `"Add a login page (JWT)!"` → `add-a-login-page-jwt`: lowercase ASCII letters and digits,
/// every run of anything else one dash, none at either end, at most `MAX_SLUG` characters, cut
/// at a dash when one is in the second half (so no word is cut in two where that can be
/// helped). A description with no ASCII letter or digit gives `FALLBACK_SLUG`.
pub fn slug(description: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in description.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
            if out.len() > MAX_SLUG {
                break;
            }
        } else {
            dash = true;
        }
    }
    if out.len() > MAX_SLUG {
        // Cut at the last dash within the bound (ASCII only: byte indexes are characters).
        let head = &out[..=MAX_SLUG];
        out = match head.rfind('-') {
            Some(at) if at >= MAX_SLUG / 2 => head[..at].to_string(),
            _ => out[..MAX_SLUG].trim_end_matches('-').to_string(),
        };
    }
    if out.is_empty() {
        FALLBACK_SLUG.to_string()
    } else {
        out
    }
}

/// Why `name` is not a slug (`--name`), or `None`: the same rules `slug` makes names by.
pub fn slug_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("it is empty".into())
    } else if name.len() > MAX_SLUG {
        Some(format!("it is longer than {MAX_SLUG} characters"))
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        Some(format!(
            "{c:?} is not allowed: use lowercase ASCII letters, digits and dashes"
        ))
    } else if name.starts_with('-') || name.ends_with('-') {
        Some("it starts or ends with a dash".into())
    } else if name.contains("--") {
        Some("it has two dashes in a row".into())
    } else {
        None
    }
}

/// The number a spec name starts with (`012-x` → 12, `7` → 7), if any: the digits before the
/// first dash, or the whole name.
pub fn number_of(name: &str) -> Option<u64> {
    let digits = name.split('-').next()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The part of a spec name after its number (`012-add-login` → `add-login`).
pub fn slug_of(name: &str) -> Option<&str> {
    number_of(name)?;
    name.split_once('-').map(|(_, rest)| rest)
}

/// The next free number over `names` (every spec folder, slot and branch), at least three
/// digits: `001` for none, one more than the highest otherwise (`999` → `1000`). `None` if
/// the highest is the largest number there is.
pub fn next_number<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let highest = names.into_iter().filter_map(number_of).max().unwrap_or(0);
    Some(format!("{:03}", highest.checked_add(1)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slug_is_lowercase_ascii_words_joined_by_single_dashes() {
        assert_eq!(slug("Add a login page (JWT)!"), "add-a-login-page-jwt");
        assert_eq!(slug("  --Fix   the  _bug_ -- now!! "), "fix-the-bug-now");
        assert_eq!(
            slug("line one\nline \"two\"\t\u{1b}[31m"),
            "line-one-line-two-31m"
        );
        assert_eq!(slug("Café über naïve"), "caf-ber-na-ve");
        assert_eq!(slug("v2.0 API"), "v2-0-api");
    }

    #[test]
    fn a_description_without_ascii_letters_still_gives_a_valid_slug() {
        for text in ["🚀🔥", "日本語の機能", "\u{200B}", "---", "ß"] {
            assert_eq!(slug(text), FALLBACK_SLUG, "{text:?}");
        }
        assert_eq!(slug_problem(FALLBACK_SLUG), None);
    }

    #[test]
    fn a_long_slug_is_cut_at_a_dash_within_fifty_characters() {
        let long = "implement the user authentication flow with refresh tokens and rotation";
        let s = slug(long);
        assert!(s.len() <= MAX_SLUG, "{s}");
        assert_eq!(s, "implement-the-user-authentication-flow-with");
        assert!(long.replace(' ', "-").starts_with(&s));
        // One word longer than the bound: cut at the bound.
        let word = "a".repeat(80);
        assert_eq!(slug(&word), "a".repeat(MAX_SLUG));
        // A dash only early on: cut at the bound, not at the dash.
        let s = slug(&format!("ab {}", "c".repeat(70)));
        assert_eq!(s.len(), MAX_SLUG, "{s}");
        // Exactly fifty: kept whole.
        let fifty = format!("{}-{}", "a".repeat(24), "b".repeat(25));
        assert_eq!(slug(&fifty), fifty);
        for text in [long, &word, "x-".repeat(60).as_str()] {
            let s = slug(text);
            assert!(slug_problem(&s).is_none(), "{s}");
        }
    }

    #[test]
    fn a_given_name_must_follow_the_slug_rules() {
        assert_eq!(slug_problem("add-login"), None);
        assert_eq!(slug_problem("v2"), None);
        for bad in [
            "", "Add", "a_b", "a b", "-a", "a-", "a--b", "a/b", "..", "a.lock", "é",
        ] {
            assert!(slug_problem(bad).is_some(), "{bad:?}");
        }
        assert!(slug_problem(&"a".repeat(MAX_SLUG + 1)).is_some());
    }

    #[test]
    fn the_next_number_is_one_more_than_the_highest_of_every_name() {
        assert_eq!(next_number([]).as_deref(), Some("001"));
        assert_eq!(
            next_number(["001-a", "007-b", "003", "notes", "x-12"]).as_deref(),
            Some("008")
        );
        assert_eq!(next_number(["999-a"]).as_deref(), Some("1000"));
        assert_eq!(next_number(["0042-a"]).as_deref(), Some("043"));
        assert_eq!(next_number([format!("{}-a", u64::MAX).as_str()]), None);
        // A number too long to read is no number (it cannot be taken by `format!`ing one).
        assert_eq!(
            next_number(["99999999999999999999999-a", "002-b"]).as_deref(),
            Some("003")
        );
        assert_eq!(number_of("12a-x"), None);
        assert_eq!(slug_of("012-add-login"), Some("add-login"));
        assert_eq!(slug_of("add-login"), None);
        assert_eq!(slug_of("012"), None);
    }
}
