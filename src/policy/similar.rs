//! Finding the unfinished spec a new description repeats (issue 13, `runner new`): a spec's
//! keywords, how alike two keyword sets are, how recent a spec's last activity is, and which
//! specs to show. Plain functions over data; `ops::detect` reads the specs.
//!
//! - **Keywords**: the description's lowercase alphanumeric words, minus stop words
//!   ([`STOP_WORDS`]: the and the usual English ones), plus every synonym group
//!   ([`SYNONYM_GROUPS`]) one of whose words (its name or a member) is among them: the whole
//!   group, name included. Sorted, without repeats. What runner stores with a spec.
//! - **Concepts** ([`concepts`]): the keywords with each synonym group's words as one, its
//!   name. Two descriptions are compared on them, so a group counts once: one shared common
//!   word ("test") weighs as any one word does, not as the six words of its group on both
//!   sides (issue 27: "Verbose output test" scored 0.60 against three unrelated specs).
//! - **Score** = Jaccard(the new description's concepts, the spec's) × the recency of the
//!   spec's last activity ([`recency`]). Scores of at least [`THRESHOLD`] are kept, best first
//!   (ties: the most recent activity, then the spec's name), at most [`MAX_SHOWN`].
//! - **Identical**: the same description, trimmed, case-insensitive ([`same_description`]),
//!   whatever the score.

use chrono::{DateTime, Utc};

/// The lowest score shown.
pub const THRESHOLD: f64 = 0.35;

/// How many similar specs are shown at most.
pub const MAX_SHOWN: usize = 3;

/// Words that say nothing about what a spec is about: the list (`a an the with and or
/// for to of in on build create implement add make`), then the usual English ones.
pub const STOP_WORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "with",
    "and",
    "or",
    "for",
    "to",
    "of",
    "in",
    "on",
    "build",
    "create",
    "implement",
    "add",
    "make", //
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "etc",
    "few",
    "from",
    "further",
    "get",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "i",
    "if",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "let",
    "me",
    "more",
    "most",
    "must",
    "my",
    "new",
    "no",
    "nor",
    "not",
    "now",
    "off",
    "once",
    "only",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "please",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "their",
    "theirs",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "too",
    "under",
    "until",
    "up",
    "us",
    "use",
    "using",
    "very",
    "via",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "would",
    "you",
    "your",
    "yours",
];

/// The synonym groups: a group's name, then its members. A description that names any of
/// them gets all of them.
pub const SYNONYM_GROUPS: &[(&str, &[&str])] = &[
    (
        "auth",
        &["authentication", "login", "jwt", "oauth", "session"],
    ),
    (
        "api",
        &["rest", "endpoint", "fastapi", "flask", "routes", "http"],
    ),
    (
        "db",
        &["database", "postgres", "sqlite", "mysql", "sql", "orm"],
    ),
    (
        "frontend",
        &["ui", "react", "nextjs", "vue", "svelte", "html", "css"],
    ),
    (
        "queue",
        &["worker", "celery", "task", "async", "job", "broker"],
    ),
    ("cache", &["redis", "memcache", "caching", "ttl"]),
    ("test", &["pytest", "jest", "unittest", "spec", "tdd"]),
];

/// The keywords of `text` (see the module comment): sorted, without repeats. Each word is
/// lowercased in one reused buffer (no allocation for a stop word), and looked up in one
/// table of the stop words and the synonym groups' words; the unit tests check it against the
/// plain definition.
pub fn keywords(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let hit = each_word(text, |w, _| {
        words.push(w.to_string());
        true
    });
    with_groups(words, hit)
}

/// The concepts of `keywords` (as [`keywords`] or [`normalized`] give them): a synonym group's
/// word is the group's name, any other word itself; sorted, without repeats. A group's whole
/// expansion and any one of its words give the same concepts, so keywords stored expanded
/// compare as the description they came from.
pub fn concepts(keywords: &[String]) -> Vec<String> {
    let table = table();
    let mut out: Vec<String> = keywords
        .iter()
        .map(|w| match table.get(w.as_str()) {
            Some(Word::Group(i)) => SYNONYM_GROUPS[*i].0.to_string(),
            _ => w.clone(),
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `words` with every synonym group of `hit`, sorted, without repeats.
fn with_groups(mut words: Vec<String>, hit: [bool; SYNONYM_GROUPS.len()]) -> Vec<String> {
    for ((name, members), _) in SYNONYM_GROUPS.iter().zip(hit).filter(|(_, h)| *h) {
        words.push(name.to_string());
        words.extend(members.iter().map(|m| m.to_string()));
    }
    words.sort_unstable();
    words.dedup();
    words
}

/// Each word of `text` that is not a stop word, lowercased, to `f` with its synonym group's
/// name if it has one (`f` returns whether to go on); the synonym groups these words hit.
fn each_word(
    text: &str,
    mut f: impl FnMut(&str, Option<&'static str>) -> bool,
) -> [bool; SYNONYM_GROUPS.len()] {
    let table = table();
    let mut hit = [false; SYNONYM_GROUPS.len()];
    let mut buf = String::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        if w.is_ascii() {
            buf.clear();
            buf.push_str(w);
            buf.make_ascii_lowercase();
        } else {
            buf = w.to_lowercase();
        }
        let group = match table.get(buf.as_str()) {
            Some(Word::Stop) => continue,
            Some(Word::Group(i)) => {
                hit[*i] = true;
                Some(SYNONYM_GROUPS[*i].0)
            }
            None => None,
        };
        if !f(&buf, group) {
            break;
        }
    }
    hit
}

/// The Jaccard of `query` (concepts) with the concepts of `text`, when it is at least
/// [`THRESHOLD`]; `None` otherwise. The answer of `jaccard(query, &concepts(&keywords(text)))`,
/// but `text` is read only until it holds more distinct concepts than could reach the
/// threshold: the Jaccard is at most |query| / |concepts|, so a text of more than
/// |query| / THRESHOLD distinct concepts cannot (a long `spec.md` stops after a few dozen
/// words).
pub fn similar_enough(query: &[String], text: &str) -> Option<f64> {
    let limit = (query.len() as f64 / THRESHOLD).floor() as usize;
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut over = false;
    each_word(text, |w, group| {
        let concept = group.unwrap_or(w);
        if !seen.contains(concept) {
            seen.insert(concept.to_string());
        }
        over = seen.len() > limit;
        !over
    });
    if over {
        return None;
    }
    let mut seen: Vec<String> = seen.into_iter().collect();
    seen.sort_unstable();
    let j = jaccard(query, &seen);
    (j >= THRESHOLD).then_some(j)
}

/// What a word of the table is.
enum Word {
    Stop,
    /// A synonym group's name or member (the group's index).
    Group(usize),
}

/// The stop words and every synonym group's word (its name and members) with its group.
fn table() -> &'static std::collections::HashMap<&'static str, Word> {
    static TABLE: std::sync::OnceLock<std::collections::HashMap<&'static str, Word>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: std::collections::HashMap<&str, Word> =
            STOP_WORDS.iter().map(|w| (*w, Word::Stop)).collect();
        for (i, (name, members)) in SYNONYM_GROUPS.iter().enumerate() {
            for w in std::iter::once(name).chain(members.iter()) {
                table.insert(*w, Word::Group(i));
            }
        }
        table
    })
}

/// Keywords as stored with a spec (`requirements.json`'s `runner_keywords`), made comparable:
/// trimmed, lowercase, sorted, without repeats or empty ones. Not expanded again: they are
/// the spec's as they were stored.
pub fn normalized(stored: Vec<String>) -> Vec<String> {
    // As runner stores them (sorted, once each, trimmed lowercase): taken as they are.
    let as_stored = stored.windows(2).all(|w| w[0] < w[1])
        && stored.iter().all(|w| {
            let lower = if w.is_ascii() {
                !w.bytes().any(|b| b.is_ascii_uppercase())
            } else {
                w.to_lowercase() == *w
            };
            lower && !w.is_empty() && w.trim() == w
        });
    if as_stored {
        return stored;
    }
    let mut words: Vec<String> = stored
        .into_iter()
        .map(|w| w.trim().to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// |a ∩ b| / |a ∪ b| of two sorted lists without repeats (as [`keywords`] gives them); 0 when
/// both are empty (nothing in common to speak of).
pub fn jaccard(a: &[String], b: &[String]) -> f64 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 {
        0.0
    } else {
        common as f64 / union as f64
    }
}

/// How recent an activity at `last` is at `now`: within a day 1.0, 3 days 0.85, 7 days 0.65,
/// 14 days 0.40, older 0.20. A time in the future counts as now.
pub fn recency(last: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    let age = now.signed_duration_since(last);
    let days = |n: i64| chrono::Duration::days(n);
    if age <= days(1) {
        1.0
    } else if age <= days(3) {
        0.85
    } else if age <= days(7) {
        0.65
    } else if age <= days(14) {
        0.40
    } else {
        0.20
    }
}

/// A spec's score: its concepts' Jaccard with the new description's × its recency.
pub fn score(jaccard: f64, recency: f64) -> f64 {
    jaccard * recency
}

/// `score` rounded to 2 decimals, as shown.
pub fn rounded(score: f64) -> f64 {
    (score * 100.0).round() / 100.0
}

/// Whether two descriptions are the same: trimmed, case-insensitive.
pub fn same_description(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    a == b || a.to_lowercase() == b.to_lowercase()
}

/// What ranking needs of a spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub spec: String,
    pub score: f64,
    pub last_activity: DateTime<Utc>,
}

/// Best first: the highest score, then the most recent activity, then the spec's name.
fn better(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then(b.last_activity.cmp(&a.last_activity))
        .then(a.spec.cmp(&b.spec))
}

/// Every score of at least [`THRESHOLD`], best first (the order the specs are shown in).
pub fn best_first(mut scored: Vec<Scored>) -> Vec<Scored> {
    scored.retain(|s| s.score >= THRESHOLD);
    scored.sort_by(better);
    scored
}

/// The specs to show: scores of at least [`THRESHOLD`], best first, at most [`MAX_SHOWN`].
pub fn rank(scored: Vec<Scored>) -> Vec<Scored> {
    let mut ranked = best_first(scored);
    ranked.truncate(MAX_SHOWN);
    ranked
}

/// Specs with the same description, the one to report first: the most recently active, then
/// by name.
pub fn most_recent_first(mut same: Vec<Scored>) -> Vec<Scored> {
    same.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then(a.spec.cmp(&b.spec))
    });
    same
}

/// Of the specs with the same description, the one to report (see [`most_recent_first`]).
pub fn pick_identical(same: Vec<Scored>) -> Option<Scored> {
    most_recent_first(same).into_iter().next()
}

#[cfg(test)]
#[path = "similar_tests.rs"]
mod tests;
