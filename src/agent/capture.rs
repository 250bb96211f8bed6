//! A child's output, captured into its log with bounded disk and memory (`agent.max_log_bytes`):
//! a runaway agent or check that prints gigabytes cannot fill the disk or runner's memory.
//!
//! Output goes straight to the log (so it can be followed live) until it reaches the cap. Past
//! the first half of the cap, the bytes are also kept in a ring of the cap's second half. When
//! the output ends and it was longer than the cap, the log is cut back to the first half and
//! gets a marker line saying how many bytes were cut, then the last half: the log keeps the
//! head and the tail, never more than the cap plus the marker. The pipe is always drained, so
//! the child never blocks on a full pipe.
//!
//! The stream is also searched, as bytes, for a verification's expected output, so the check
//! sees every byte, even the ones cut from the log, and a non-UTF-8 byte cannot hide a match.
//!
//! Logging never changes a verdict: a log write that fails (a full disk) stops the logging,
//! not the counting and the search, and the summary says the log is incomplete.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};

/// What became of a child's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputSummary {
    /// Bytes the child wrote.
    pub total: u64,
    /// Bytes cut from the middle of the log.
    pub cut: u64,
    /// Whether the watched-for bytes appeared anywhere in the output.
    pub found: bool,
    /// Why the log misses some of the output (a write failed), if it does.
    pub log_incomplete: Option<String>,
}

/// The log of one child: see the module doc.
pub struct CappedLog<W: Write + Seek + SetLen> {
    out: W,
    head: u64,
    cap: u64,
    total: u64,
    tail: VecDeque<u8>,
    tail_cap: usize,
    search: StreamSearch,
    /// The first log write that failed; nothing more is written after it.
    failed: Option<std::io::Error>,
}

/// Cutting a log back to its head (a `File`; a `Cursor<Vec<u8>>` in tests).
pub trait SetLen {
    fn set_len(&mut self, len: u64) -> std::io::Result<()>;
}

impl SetLen for File {
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        File::set_len(self, len)
    }
}

impl SetLen for std::io::Cursor<Vec<u8>> {
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.get_mut().truncate(len as usize);
        Ok(())
    }
}

impl<W: Write + Seek + SetLen> CappedLog<W> {
    /// A log of at most `cap` bytes (plus a marker line) written to `out`; `watch_for`, if not
    /// empty, is searched for in the whole output.
    pub fn new(out: W, cap: u64, watch_for: &[u8]) -> Self {
        let head = cap / 2;
        CappedLog {
            out,
            head,
            cap,
            total: 0,
            tail: VecDeque::new(),
            tail_cap: usize::try_from(cap - head).unwrap_or(usize::MAX),
            search: StreamSearch::new(watch_for),
            failed: None,
        }
    }

    /// Take the next bytes of output. Never fails: a failed log write is remembered (see the
    /// module doc) and the bytes still count and are still searched.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.search.feed(bytes);
        let before = self.total;
        self.total += bytes.len() as u64;
        // Straight to the log while under the cap.
        if before < self.cap && self.failed.is_none() {
            let room = (self.cap - before).min(bytes.len() as u64) as usize;
            if let Err(e) = self.out.write_all(&bytes[..room]) {
                self.failed = Some(e);
            }
        }
        // Past the head, also into the ring of the last bytes.
        let skip = self.head.saturating_sub(before).min(bytes.len() as u64) as usize;
        let past_head = &bytes[skip..];
        let keep = &past_head[past_head.len().saturating_sub(self.tail_cap)..];
        let overflow = (self.tail.len() + keep.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(keep);
    }

    /// End of output: if it was longer than the cap, cut the log back to its head, add the
    /// marker and the tail. Always gives the summary (and back the log's writer); a write that
    /// failed only marks the log incomplete.
    pub fn finish(mut self) -> (OutputSummary, W) {
        let cut = if self.total > self.cap {
            self.total - self.head - self.tail.len() as u64
        } else {
            0
        };
        if self.failed.is_none()
            && let Err(e) = self.write_end(cut)
        {
            self.failed = Some(e);
        }
        let summary = OutputSummary {
            total: self.total,
            cut,
            found: self.search.found,
            log_incomplete: self.failed.map(|e| e.to_string()),
        };
        (summary, self.out)
    }

    fn write_end(&mut self, cut: u64) -> std::io::Result<()> {
        if cut > 0 {
            self.out.set_len(self.head)?;
            self.out.seek(SeekFrom::Start(self.head))?;
            let marker = format!(
                "\n[runner: {cut} bytes of output cut here; the log keeps the first {} and the last {} bytes (agent.max_log_bytes = {})]\n",
                self.head,
                self.tail.len(),
                self.cap
            );
            self.out.write_all(marker.as_bytes())?;
            let (a, b) = self.tail.as_slices();
            self.out.write_all(a)?;
            self.out.write_all(b)?;
        }
        self.out.flush()
    }
}

/// A search for `needle` in a stream that arrives in pieces of any size, in time linear in the
/// stream whatever the needle's length or the pieces' sizes (an output of `aaaa…` against an
/// expected `aaa…ab` must not cost length × needle).
///
/// A match inside one piece is found with `memchr::memmem` (SIMD, already in the build through
/// serde_json). A match across pieces is found by Knuth–Morris–Pratt: its state is the longest
/// prefix of the needle that the stream ends with, stepped byte by byte only over the first
/// and last `needle.len() - 1` bytes of a large piece (and over all of a small one).
struct StreamSearch {
    needle: Vec<u8>,
    /// `border[i]`: length of the longest proper prefix of `needle[..=i]` that ends it.
    border: Vec<usize>,
    finder: memchr::memmem::Finder<'static>,
    /// How much of the needle the stream seen so far ends with.
    state: usize,
    found: bool,
}

impl StreamSearch {
    fn new(needle: &[u8]) -> StreamSearch {
        let mut border = vec![0; needle.len()];
        let mut k = 0;
        for i in 1..needle.len() {
            while k > 0 && needle[i] != needle[k] {
                k = border[k - 1];
            }
            if needle[i] == needle[k] {
                k += 1;
            }
            border[i] = k;
        }
        StreamSearch {
            needle: needle.to_vec(),
            border,
            finder: memchr::memmem::Finder::new(needle).into_owned(),
            state: 0,
            found: needle.is_empty(),
        }
    }

    fn step_over(&mut self, bytes: &[u8]) {
        for &b in bytes {
            let mut k = self.state;
            while k > 0 && self.needle[k] != b {
                k = self.border[k - 1];
            }
            if self.needle[k] == b {
                k += 1;
            }
            if k == self.needle.len() {
                self.found = true;
                return;
            }
            self.state = k;
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        if self.found {
            return;
        }
        let edge = self.needle.len() - 1;
        if bytes.len() <= 2 * edge {
            self.step_over(bytes);
            return;
        }
        // A match that began in earlier pieces ends within this one's first `edge` bytes.
        self.step_over(&bytes[..edge]);
        if self.found || self.finder.find(bytes).is_some() {
            self.found = true;
            return;
        }
        // No match inside: the state at the end depends only on the last `edge` bytes.
        self.state = 0;
        self.step_over(&bytes[bytes.len() - edge..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn log_of(chunks: &[&[u8]], cap: u64, needle: &[u8]) -> (Vec<u8>, OutputSummary) {
        let mut log = CappedLog::new(Cursor::new(Vec::new()), cap, needle);
        for c in chunks {
            log.feed(c);
        }
        let (summary, out) = log.finish();
        (out.into_inner(), summary)
    }

    #[test]
    fn output_under_the_cap_is_kept_whole() {
        let (bytes, s) = log_of(&[b"hello ", b"\xff world"], 100, b"");
        assert_eq!(bytes, b"hello \xff world");
        assert_eq!((s.total, s.cut, s.found), (13, 0, true));
        let (bytes, s) = log_of(&[&[b'a'; 100]], 100, b"");
        assert_eq!((bytes.len(), s.cut), (100, 0));
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_says_what_was_cut() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        // Odd chunk sizes, so that every boundary case is crossed.
        let chunks: Vec<&[u8]> = data.chunks(37).collect();
        let (bytes, s) = log_of(&chunks, 1000, b"");
        assert_eq!(s.total, 10_000);
        assert_eq!(s.cut, 9_000);
        assert!(bytes.starts_with(&data[..500]));
        assert!(bytes.ends_with(&data[data.len() - 500..]));
        let marker = &bytes[500..bytes.len() - 500];
        let marker = String::from_utf8_lossy(marker);
        assert!(marker.contains("9000 bytes of output cut"), "{marker}");
        assert!(bytes.len() < 1000 + 200);
    }

    #[test]
    fn the_watched_bytes_are_found_anywhere_even_across_reads_and_in_the_cut_part() {
        let mut data = vec![b'x'; 5000];
        data[2500..2504].copy_from_slice(b"PASS");
        for size in [1, 3, 7, 4096] {
            let chunks: Vec<&[u8]> = data.chunks(size).collect();
            let (bytes, s) = log_of(&chunks, 100, b"PASS");
            assert!(s.found, "chunk size {size}");
            assert!(!bytes.windows(4).any(|w| w == b"PASS"));
        }
        let (_, s) = log_of(&[b"PAS", b"\xffS"], 100, b"PASS");
        assert!(!s.found);
    }

    /// A log on a disk that fills up after `room` bytes.
    struct FullDisk {
        room: usize,
        written: Vec<u8>,
    }

    impl Write for FullDisk {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.written.len() >= self.room {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            let n = buf.len().min(self.room - self.written.len());
            self.written.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Seek for FullDisk {
        fn seek(&mut self, _: SeekFrom) -> std::io::Result<u64> {
            Ok(self.written.len() as u64)
        }
    }

    impl SetLen for FullDisk {
        fn set_len(&mut self, len: u64) -> std::io::Result<()> {
            self.written.truncate(len as usize);
            Ok(())
        }
    }

    #[test]
    fn a_failed_log_write_changes_no_verdict() {
        let mut data = vec![b'x'; 5000];
        data[4000..4004].copy_from_slice(b"PASS");
        for cap in [100_000, 1000] {
            let mut log = CappedLog::new(
                FullDisk {
                    room: 10,
                    written: Vec::new(),
                },
                cap,
                b"PASS",
            );
            for c in data.chunks(64) {
                log.feed(c);
            }
            let (s, out) = log.finish();
            assert!(s.found, "cap {cap}: the search stopped with the log");
            assert_eq!(s.total, 5000);
            assert!(
                s.log_incomplete
                    .as_deref()
                    .is_some_and(|e| e.contains("space")),
                "{s:?}"
            );
            assert_eq!(out.written.len(), 10);
        }
    }

    #[test]
    fn a_long_expected_output_is_searched_in_linear_time() {
        // The worst case for a naive search: a long run of `a` against `aaa…ab`.
        let needle = [vec![b'a'; 20_000], vec![b'b']].concat();
        let data = vec![b'a'; 1_000_000];
        let started = std::time::Instant::now();
        for size in [1, 4096, 65536] {
            let mut search = StreamSearch::new(&needle);
            for c in data.chunks(size) {
                search.feed(c);
            }
            assert!(!search.found);
            search.feed(b"b");
            assert!(search.found, "chunk size {size}");
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn the_stream_search_agrees_with_a_plain_search() {
        // Small alphabets and needles with repeats, pieces of every size.
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for _ in 0..300 {
            let needle: Vec<u8> = (0..1 + next() % 6)
                .map(|_| b'a' + (next() % 2) as u8)
                .collect();
            let data: Vec<u8> = (0..next() % 60)
                .map(|_| b'a' + (next() % 2) as u8)
                .collect();
            let want = data.windows(needle.len()).any(|w| w == needle.as_slice());
            let mut search = StreamSearch::new(&needle);
            let mut rest = data.as_slice();
            while !rest.is_empty() {
                let (piece, tail) = rest.split_at((1 + next() % 12).min(rest.len()));
                search.feed(piece);
                rest = tail;
            }
            assert_eq!(search.found, want, "{needle:?} in {data:?}");
        }
    }
}
