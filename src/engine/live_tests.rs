use super::*;
use crate::engine::progress::{Event, Progress, ProgressSink, Recorded};
use std::rc::Rc;

#[test]
fn a_log_is_read_again_only_when_it_changed_and_only_news_is_returned() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    let mut tail = LogTail::new(&log);
    assert_eq!(tail.changed(), None, "no log yet");
    std::fs::write(&log, "").unwrap();
    assert_eq!(tail.changed(), None, "an empty log says nothing");
    std::fs::write(&log, "reading the spec\nediting src/lib.rs now\n").unwrap();
    assert_eq!(tail.changed().as_deref(), Some("editing src/lib.rs now"));
    assert_eq!(tail.changed(), None, "unchanged");
    // A line without its newline yet is the latest.
    std::fs::write(&log, "editing src/lib.rs now\nrunning cargo te").unwrap();
    assert_eq!(tail.changed().as_deref(), Some("running cargo te"));
    // Grown, but the latest line is the same: nothing new to say.
    std::fs::write(&log, "x\nediting src/lib.rs now\nrunning cargo te\n").unwrap();
    assert_eq!(tail.changed(), None);
    // Cut back by its cap at the end: smaller, read again.
    std::fs::write(&log, "head\n[cut]\ndone\n").unwrap();
    assert_eq!(tail.changed().as_deref(), Some("done"));
}

#[test]
fn the_file_is_not_read_while_its_size_and_time_stay() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    std::fs::write(&log, "first\n").unwrap();
    let mut tail = LogTail::new(&log);
    assert_eq!(tail.changed().as_deref(), Some("first"));
    // Same size, same modification time: the stat says unchanged, so the new words are not
    // seen (the proof that it was not read again).
    let mtime = std::fs::metadata(&log).unwrap().modified().unwrap();
    std::fs::write(&log, "other\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(tail.changed(), None);
}

#[test]
fn a_link_or_a_folder_where_the_log_belongs_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "the secret\n").unwrap();
    let log = dir.path().join("output.log");
    std::os::unix::fs::symlink(&secret, &log).unwrap();
    assert_eq!(LogTail::new(&log).changed(), None);
    let folder = dir.path().join("folder.log");
    std::fs::create_dir(&folder).unwrap();
    assert_eq!(LogTail::new(&folder).changed(), None);
}

#[test]
fn an_endless_line_is_passed_on_cut() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    std::fs::write(&log, "y".repeat(1 << 20)).unwrap();
    let line = LogTail::new(&log).changed().unwrap();
    assert_eq!(
        line.chars().count(),
        crate::policy::live::MAX_ACTIVITY_CHARS + 1
    );
}

/// A sink that records like [`Recorded`] but is not live (a log, `--quiet`).
struct NotLive(Recorded);

impl ProgressSink for NotLive {
    fn report(&self, event: Progress<'_>) {
        self.0.report(event);
    }
}

/// A session that writes `lines` into `log`, one every 150 ms, then returns 7.
async fn session_writing(log: &Path, lines: &[&str]) -> u32 {
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
        std::fs::write(log, &text).unwrap();
        tokio::time::sleep(POLL.mul_f32(1.5)).await;
    }
    7
}

#[test]
fn a_live_sink_hears_the_start_each_new_activity_and_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    let sink = Rc::new(Recorded::default());
    let reporter = Reporter::new(sink.clone());
    let before = SystemTime::now();
    let out = crate::engine::block_on(async {
        Ok(watched(
            Some(&reporter),
            "1-2 (attempt 2)",
            &log,
            session_writing(&log, &["reading", "editing src/lib.rs now"]),
        )
        .await)
    })
    .unwrap();
    assert_eq!(out, 7);
    let events = sink.0.borrow().clone();
    let Some(Event::SessionStarted { label, started }) = events.first() else {
        panic!("{events:?}");
    };
    assert_eq!(label, "1-2 (attempt 2)");
    assert!(*started >= before && *started <= SystemTime::now());
    assert_eq!(
        events[1..],
        [
            Event::Activity("reading".into()),
            Event::Activity("editing src/lib.rs now".into()),
            Event::SessionEnded
        ]
    );
}

#[test]
fn a_session_that_fails_still_ends_and_a_sink_not_live_hears_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    let sink = Rc::new(Recorded::default());
    let reporter = Reporter::new(sink.clone());
    let failed: anyhow::Result<()> = crate::engine::block_on(async {
        watched(Some(&reporter), "planning", &log, async {
            anyhow::bail!("could not start")
        })
        .await
    });
    assert!(failed.is_err());
    assert!(matches!(
        sink.0.borrow().as_slice(),
        [Event::SessionStarted { .. }, Event::SessionEnded]
    ));

    let quiet = Rc::new(NotLive(Recorded::default()));
    let reporter = Reporter::new(quiet.clone());
    let out = crate::engine::block_on(async {
        Ok(watched(
            Some(&reporter),
            "planning",
            &log,
            session_writing(&log, &["a", "b"]),
        )
        .await)
    })
    .unwrap();
    assert_eq!(out, 7);
    assert_eq!(*quiet.0.0.borrow(), vec![], "not live: no event at all");
    let out =
        crate::engine::block_on(async { Ok(watched(None, "planning", &log, async { 8 }).await) })
            .unwrap();
    assert_eq!(out, 8);
}
