//! Text from plans, specs and agents, judged and shown safely.

/// Characters that show nothing or change the direction of the text around them: Unicode's
/// Default_Ignorable_Code_Point set (DerivedCoreProperties.txt, Unicode 16.0), which holds every
/// Bidi_Control character, plus the line and paragraph separators, the interlinear annotation
/// characters and the blank braille pattern (U+2800), which all show as nothing or as space.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{AD}'                         // soft hyphen
        | '\u{34F}'                      // combining grapheme joiner
        | '\u{61C}'                      // Arabic letter mark (bidi)
        | '\u{115F}' | '\u{1160}'        // Hangul choseong / jungseong fillers
        | '\u{17B4}' | '\u{17B5}'        // Khmer inherent vowels
        | '\u{180B}'..='\u{180F}'        // Mongolian variation selectors, vowel separator
        | '\u{200B}'..='\u{200F}'        // zero-width characters, direction marks
        | '\u{2028}' | '\u{2029}'        // line and paragraph separators
        | '\u{202A}'..='\u{202E}'        // direction embeddings and overrides
        | '\u{2060}'..='\u{206F}'        // word joiner, invisible operators, isolates, deprecated format
        | '\u{2800}'                     // braille pattern blank
        | '\u{3164}'                     // Hangul filler
        | '\u{FE00}'..='\u{FE0F}'        // variation selectors
        | '\u{FEFF}'                     // zero-width no-break space
        | '\u{FFA0}'                     // halfwidth Hangul filler
        | '\u{FFF0}'..='\u{FFFB}'        // unassigned specials, interlinear annotation
        | '\u{1BCA0}'..='\u{1BCA3}'      // shorthand format controls
        | '\u{1D173}'..='\u{1D17A}'      // musical symbol format controls
        | '\u{E0000}'..='\u{E0FFF}') // tags, variation selectors supplement
}

/// Text for a terminal or a log line: plan and agent text (descriptions, phase names,
/// `--reason`, `--notes`) is shown as written but cannot act on the terminal. Control
/// characters other than tab and newline (escape sequences, carriage returns that overwrite a
/// line, NUL …) are shown as visible escapes (`\u{1b}`); bidi controls, which reorder what
/// follows them, are removed. JSON output is never passed through this: it stays exact.
pub fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\t' && c != '\n') || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_bidi_control(c) {
            continue;
        }
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Unicode's Bidi_Control characters (PropList.txt).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A list for a message, comma-separated, cut at 20 items with "and N more": a person reads
/// it, and a merge can touch thousands of paths.
pub fn capped_list(items: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut out = items
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        out.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    out
}

/// A count and its noun as a person reads it: "1 commit", "0 commits", "3 matches" (see
/// [`noun`]).
pub fn count<N: Count>(n: N, one: &str) -> String {
    format!("{n} {}", noun(n, one))
}

/// The noun for `n` of it: `one` when `n` is 1, else its plural, for a count shown apart from
/// its noun ("1/1 chunk", "3/3 chunks"). The plural adds "es" after s, x, ch or sh, else "s":
/// runner's nouns are regular.
pub fn noun<N: Count>(n: N, one: &str) -> std::borrow::Cow<'_, str> {
    if n.is_one() {
        one.into()
    } else if ["s", "x", "ch", "sh"].iter().any(|end| one.ends_with(end)) {
        format!("{one}es").into()
    } else {
        format!("{one}s").into()
    }
}

/// A number that counts things: [`count`] and [`noun`] take any of them.
pub trait Count: Copy + std::fmt::Display {
    fn is_one(self) -> bool;
}

macro_rules! count_for {
    ($($t:ty),*) => {$(
        impl Count for $t {
            fn is_one(self) -> bool {
                self == 1
            }
        }
    )*};
}
count_for!(u8, u16, u32, u64, usize, i32, i64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_text_cannot_move_the_cursor_or_reorder_text() {
        assert_eq!(for_terminal("plain\ttext\nnext"), "plain\ttext\nnext");
        assert_eq!(
            for_terminal("x\u{1b}[2K\r  ✓ a completed"),
            "x\\u{1b}[2K\\u{d}  ✓ a completed"
        );
        assert_eq!(
            for_terminal("nul\0bell\u{7}c1\u{9b}"),
            "nul\\u{0}bell\\u{7}c1\\u{9b}"
        );
        assert_eq!(for_terminal("a\u{202E}evil\u{2066}b\u{61C}"), "aevilb");
        // Other invisible characters (an emoji's joiner) are kept: they do not forge anything.
        assert_eq!(for_terminal("👩\u{200D}💻"), "👩\u{200D}💻");
    }
}

#[cfg(test)]
mod capped_list_tests {
    #[test]
    fn a_long_list_is_cut_at_twenty_with_the_count_of_the_rest() {
        let items: Vec<String> = (0..25).map(|i| format!("f{i}")).collect();
        let text = super::capped_list(&items);
        assert!(text.ends_with("f19 and 5 more"), "{text}");
        assert_eq!(super::capped_list(&items[..2]), "f0, f1");
    }
}

#[cfg(test)]
mod count_tests {
    use super::{count, noun};

    #[test]
    fn one_is_singular_every_other_number_plural() {
        assert_eq!(count(1usize, "commit"), "1 commit");
        assert_eq!(count(0u64, "commit"), "0 commits");
        assert_eq!(count(2u32, "session"), "2 sessions");
        assert_eq!(count(-1i64, "token"), "-1 tokens");
        assert_eq!(count(1i32, "match"), "1 match");
        assert_eq!(count(3usize, "match"), "3 matches");
        assert_eq!(count(2usize, "box"), "2 boxes");
        assert_eq!(count(2usize, "uncommitted change"), "2 uncommitted changes");
        assert_eq!(noun(1u8, "chunk"), "chunk");
        assert_eq!(noun(11u16, "chunk"), "chunks");
        assert_eq!(noun(0usize, "day"), "days");
    }
}
