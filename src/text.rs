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
