use super::*;

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{i:04}-spec")).collect()
}

#[test]
fn a_scan_reads_every_spec_within_the_bound() {
    let deadline = Instant::now() + Duration::from_secs(60);
    let read = scan(&names(50), deadline, |name| Some(name.clone()));
    assert_eq!(read, Some(names(50)));
    // What the reader drops is not kept.
    let read = scan(&names(50), deadline, |name| {
        name.starts_with("000").then_some(())
    });
    assert_eq!(read.map(|r| r.len()), Some(10));
}

#[test]
fn a_slow_scan_gives_nothing_within_the_bound() {
    // 1,000 specs of 10 ms each would take 5 s on two cores: past the bound the scan stops
    // between specs and gives nothing.
    let started = Instant::now();
    let read = scan(&names(1000), started + DETECTION_BOUND, |name| {
        std::thread::sleep(Duration::from_millis(10));
        Some(name.clone())
    });
    let took = started.elapsed();
    assert_eq!(read, None);
    assert!(took < Duration::from_millis(400), "took {took:?}");
    assert!(took >= DETECTION_BOUND, "took {took:?}");
}

#[test]
fn a_description_is_shown_by_its_first_line_bounded() {
    assert_eq!(shown("\n\n  # Add login \nmore"), "# Add login");
    assert_eq!(shown(""), "");
    let long = "x".repeat(500);
    assert_eq!(shown(&long).chars().count(), SHOWN_CHARS + 1);
    assert_eq!(shown("a\u{1b}[31mb"), "a [31mb");
}
