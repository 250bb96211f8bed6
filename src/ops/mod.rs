//! Operations: what each command does, over the workspace. Commands in `cli` only call these.
//! An operation takes typed options and returns data; it never prints and never asks: progress
//! goes to the sink it is given (`engine::progress::ProgressSink`), questions to the asker
//! (`engine::ask::Asker`).

pub mod choice;
pub mod chunk;
pub mod demo;
pub mod discard;
pub mod merge;
pub mod recover;
pub mod review;
pub mod run;
pub mod status;
pub mod undo;

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
