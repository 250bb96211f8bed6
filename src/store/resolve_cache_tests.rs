use super::*;

fn identity(dir: &Path) -> Identity {
    Identity::of_dir(dir).unwrap()
}

fn sample(dir: &Path) -> HashMap<String, SpecEntry> {
    let id = identity(dir);
    let mut entries = HashMap::new();
    entries.insert(
        "001-a".to_string(),
        SpecEntry {
            runs: Some((id, vec!["r0123456789ab".into(), "rabcdefabcdef".into()])),
            plan: Some((
                id,
                PlanFacts {
                    state: SpecState::Merged,
                    current: Some("c".into()),
                    last: None,
                },
            )),
            record: Some((
                "r0123456789ab".into(),
                id,
                RecordFacts {
                    discard: true,
                    chunk: Some("x".into()),
                },
            )),
        },
    );
    entries.insert(
        "002-b".to_string(),
        SpecEntry {
            runs: Some((id, Vec::new())),
            ..SpecEntry::default()
        },
    );
    entries
}

#[test]
fn entries_come_back_as_written_and_any_damage_loses_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let settled = dir.path().join("old");
    std::fs::create_dir(&settled).unwrap();
    let entries = sample(&settled);
    let bytes = encode(&entries);
    assert_eq!(decode(&bytes), Some(entries.clone()));
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x01;
        assert_eq!(decode(&bad), None, "byte {i} flipped");
    }
    for n in 0..bytes.len() {
        assert_eq!(decode(&bytes[..n]), None, "cut at {n}");
    }
}

#[test]
fn a_bad_run_id_or_spec_name_inside_a_valid_file_loses_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = sample(dir.path());
    entries.get_mut("002-b").unwrap().runs = Some((identity(dir.path()), vec!["../x".into()]));
    assert_eq!(decode(&encode(&entries)), None);
    let mut entries = sample(dir.path());
    let e = entries.remove("002-b").unwrap();
    entries.insert("../evil".into(), e);
    assert_eq!(decode(&encode(&entries)), None);
}

#[test]
fn an_identity_not_settled_before_the_file_was_written_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    // The folder was just made: its times are within the margin of the cache file's.
    let entries = sample(dir.path());
    ResolveCache::default().save(dir.path(), entries);
    assert!(dir.path().join(CACHE_FILE).exists());
    let loaded = ResolveCache::load(dir.path());
    assert!(loaded.entries().is_empty(), "{:?}", loaded.entries());
}
