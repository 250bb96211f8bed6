use super::*;

fn entry(n: u32) -> Entry {
    Entry {
        identity: Identity {
            dev: 2049,
            ino: 1000 + u64::from(n),
            mode: 0o100644,
            size: 7000,
            mtime: (1_700_000_000, 5),
            ctime: (1_700_000_001, 999_999_999),
        },
        digest: Digest {
            counts: [3, 1, 2, 0, 0],
            current_chunk: Some(format!("c{n}")),
            next_chunk: None,
            warnings: vec!["w".into()],
            merged: n.is_multiple_of(2),
            recorded: vec![("a".into(), "0123abcd".into()), ("b".into(), "é".into())],
            exhausted: n == 1,
            spent: crate::policy::budget::Spent {
                usd: 0.25 * f64::from(n),
                tokens: 1000 + u64::from(n),
                sessions: u64::from(n),
            },
        },
    }
}

fn sample() -> HashMap<String, Entry> {
    (0..3).map(|n| (format!("00{n}-spec"), entry(n))).collect()
}

#[test]
fn entries_read_back_as_written() {
    let entries = sample();
    assert_eq!(decode(&encode(&entries)), Some(entries));
    assert_eq!(decode(&encode(&HashMap::new())), Some(HashMap::new()));
}

#[test]
fn any_damaged_byte_or_cut_throws_the_whole_file_away() {
    let bytes = encode(&sample());
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[i] ^= flip;
            assert_eq!(decode(&bad), None, "byte {i} ^ {flip:#x}");
        }
    }
    for len in 0..bytes.len() {
        assert_eq!(decode(&bytes[..len]), None, "cut at {len}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(decode(&longer), None);
}

/// A file with a right checksum but values no status could have, or another version.
#[test]
fn a_well_summed_file_with_impossible_values_is_refused() {
    let resum = |mut body: Vec<u8>| {
        let sum = checksum(&body);
        body.extend_from_slice(&sum.to_le_bytes());
        body
    };
    let body = |entries: &HashMap<String, Entry>| {
        let b = encode(entries);
        b[..b.len() - 8].to_vec()
    };
    let mut other_version = body(&sample());
    other_version[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
    assert_eq!(decode(&resum(other_version)), None);

    let mut e = entry(1);
    e.digest.current_chunk = None; // one in progress, none named
    assert_eq!(decode(&encode(&HashMap::from([("s".into(), e)]))), None);
    let mut e = entry(1);
    e.digest.counts = [0, 1, 1, 0, 0]; // two recorded commits, one completed chunk
    assert_eq!(decode(&encode(&HashMap::from([("s".into(), e)]))), None);
    let mut e = entry(1);
    e.digest.counts = [u32::MAX, 1, 3, 0, 0];
    assert_eq!(decode(&encode(&HashMap::from([("s".into(), e)]))), None);
    assert_eq!(
        decode(&encode(&HashMap::from([("a/b".into(), entry(1))]))),
        None
    );
    // A count of entries far beyond the bytes: refused without allocating for it.
    let mut huge = body(&HashMap::new());
    huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(decode(&resum(huge)), None);
}

#[test]
fn only_times_older_than_the_margin_are_settled() {
    let now = SystemTime::now();
    let secs = |t: SystemTime| {
        let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap();
        (d.as_secs() as i64, d.subsec_nanos())
    };
    let mut id = entry(0).identity;
    id.mtime = secs(now - MARGIN - Duration::from_millis(10));
    id.ctime = id.mtime;
    assert!(id.settled_before(now));
    id.ctime = secs(now - MARGIN + Duration::from_millis(10));
    assert!(!id.settled_before(now), "a recent change time");
    id.ctime = id.mtime;
    id.mtime = secs(now);
    assert!(!id.settled_before(now), "a recent modification time");
    id.mtime = (-5, 0);
    assert!(!id.settled_before(now), "a time before 1970");
}
