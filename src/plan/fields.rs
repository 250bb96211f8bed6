//! The cheap first reading of a plan's JSON: each level's fields as values, except the lists
//! that hold phases or chunks, which stay text (borrowed from the file's bytes) until their
//! level reads them; and, for a chunk kept as text, the few fields runner checks.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One object level (the plan, a phase): its fields in file order, with an empty list in place
/// of each list under one of the `special` keys, which is in `lists` as text instead.
pub struct Level<'a> {
    pub raw: Map<String, Value>,
    pub lists: Vec<(&'static str, &'a RawValue)>,
}

impl<'a> Level<'a> {
    /// The list under `key`, taken out (its place in `raw` holds an empty list).
    pub fn take_list(&mut self, key: &str) -> Option<&'a RawValue> {
        let at = self.lists.iter().position(|(k, _)| *k == key)?;
        Some(self.lists.remove(at).1)
    }

    /// Put every list still aside back into `raw` as values.
    pub fn restore_lists(&mut self) -> serde_json::Result<()> {
        for (key, text) in std::mem::take(&mut self.lists) {
            self.raw
                .insert(key.into(), serde_json::from_str(text.get())?);
        }
        Ok(())
    }
}

/// Read an object's fields. As serde_json's map does, a key given twice keeps its first place
/// and its last value.
pub fn level<'de, D: de::Deserializer<'de>>(
    d: D,
    special: &'static [&'static str],
) -> Result<Level<'de>, D::Error> {
    d.deserialize_map(LevelVisitor { special })
}

struct LevelVisitor {
    special: &'static [&'static str],
}

impl<'de> Visitor<'de> for LevelVisitor {
    type Value = Level<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Level<'de>, A::Error> {
        let mut level = Level {
            raw: Map::new(),
            lists: Vec::new(),
        };
        while let Some(key) = map.next_key::<String>()? {
            let special = self.special.iter().find(|k| **k == key);
            let Some(&special) = special else {
                let value: Value = map.next_value()?;
                level.raw.insert(key, value);
                continue;
            };
            let text: &'de RawValue = map.next_value()?;
            level.lists.retain(|(k, _)| *k != special);
            if text.get().starts_with('[') {
                level.lists.push((special, text));
                level.raw.insert(key, Value::Array(Vec::new()));
            } else {
                let value = serde_json::from_str(text.get()).map_err(de::Error::custom)?;
                level.raw.insert(key, value);
            }
        }
        Ok(level)
    }
}

/// A list's items as text, borrowed.
pub fn items(list: &RawValue) -> serde_json::Result<Vec<&RawValue>> {
    serde_json::from_str(list.get())
}

/// What runner checks in a chunk, read from its text without building the rest: the fields
/// that name and describe it and its verification as values; its attempt records only checked
/// (a list of objects, each with a number `n` and text or null in runner's text fields).
/// `None` when the text is not an object or the records do not check out (the slow path
/// says why).
pub fn chunk_probe(text: &RawValue) -> Option<Map<String, Value>> {
    if !text.get().starts_with('{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text.get());
    de::Deserializer::deserialize_map(&mut de, ProbeVisitor).ok()
}

/// The fields of a chunk the probe reads as values.
const PROBED: [&str; 6] = [
    "id",
    "subtask_id",
    "status",
    "description",
    "title",
    "verification",
];

struct ProbeVisitor;

impl<'de> Visitor<'de> for ProbeVisitor {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a chunk object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<&str>()? {
            if PROBED.contains(&key) {
                fields.insert(key.to_string(), map.next_value()?);
            } else if key == "attempts" {
                map.next_value::<AttemptsCheck>()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(fields)
    }
}

/// A list of attempt records that `Attempt::list_from_value` would read.
struct AttemptsCheck;

impl<'de> de::Deserialize<'de> for AttemptsCheck {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(AttemptsCheck)
    }
}

impl<'de> Visitor<'de> for AttemptsCheck {
    type Value = AttemptsCheck;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of attempt records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element_seed(RecordCheck)?.is_some() {}
        Ok(AttemptsCheck)
    }
}

struct RecordCheck;

impl<'de> DeserializeSeed<'de> for RecordCheck {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RecordCheck {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an attempt record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut has_n = false;
        while let Some(key) = map.next_key::<&str>()? {
            if key == "n" {
                let n: serde_json::Number = map.next_value()?;
                let n = n.as_u64().and_then(|n| u32::try_from(n).ok());
                has_n = n.is_some();
                if !has_n {
                    return Err(de::Error::custom("n is not a whole number"));
                }
            } else if super::attempt::ATTEMPT_TEXTS.contains(&key) {
                map.next_value::<Option<TextCheck>>()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if has_n {
            Ok(())
        } else {
            Err(de::Error::custom("no n"))
        }
    }
}

/// A string (any; not kept).
struct TextCheck;

impl<'de> de::Deserialize<'de> for TextCheck {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextCheck)
    }
}

impl<'de> Visitor<'de> for TextCheck {
    type Value = TextCheck;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("text")
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<TextCheck, E> {
        Ok(TextCheck)
    }
}
