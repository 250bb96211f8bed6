//! The light read's readers (see `summary`): each level of a plan read over the borrowed
//! bytes, the fields it looks at kept as raw JSON, everything else skipped as the full parser
//! would read it.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::is_null;

/// A text, borrowed from the file when it has no escapes.
pub(super) struct Text<'a>(pub(super) Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// How a phase's chunk lists are read: in place (one pass; a phase with a second list, or the
/// same key again, stops the read with `TWO_LISTS`), or kept as text to be compared and read
/// afterwards (every value of a repeated key as before: the last one counts).
pub(super) const IN_PLACE: bool = true;
pub(super) const AS_TEXT: bool = false;

/// The error that stops an in-place read at a phase with two chunk lists (or one key twice).
pub(super) const TWO_LISTS: &str = "a phase with both subtasks and chunks";

/// The top level: `phases` read in place, `merged` noted, the rest skipped.
pub(super) struct Top<'a, const LISTS_IN_PLACE: bool> {
    pub(super) phases: Option<Vec<PhaseRead<'a, LISTS_IN_PLACE>>>,
    pub(super) merged: bool,
    /// runner's mark of a run stopped by the spec's budget (`budget_exhausted`).
    pub(super) budget_exhausted: bool,
    pub(super) top_level_list: bool,
}

impl<'de, const P: bool> de::Deserialize<'de> for Top<'de, P> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const P: bool>;
        impl<'de, const P: bool> Visitor<'de> for V<P> {
            type Value = Top<'de, P>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a plan object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut top = Top {
                    phases: None,
                    merged: false,
                    budget_exhausted: false,
                    top_level_list: false,
                };
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match &*key.0 {
                        // A repeated key: the last one counts, as in the full parser's map.
                        "phases" => top.phases = Some(map.next_value()?),
                        other => {
                            map.next_value::<Skip>()?;
                            match other {
                                "merged" => top.merged = true,
                                "budget_exhausted" => top.budget_exhausted = true,
                                // A top-level chunk list (even beside `phases`): unusual.
                                "subtasks" | "chunks" => top.top_level_list = true,
                                _ => {}
                            }
                        }
                    }
                }
                Ok(top)
            }
        }
        d.deserialize_map(V::<P>)
    }
}

/// A phase: its fields of `PhaseFields` as `Picked` keeps them, and its chunk lists
/// (`LIST_KEYS`; `None`: missing or null, the last of a repeated key counting).
pub(super) struct PhaseRead<'a, const LISTS_IN_PLACE: bool> {
    pub(super) fields: Picked<'a, PhaseFields>,
    pub(super) lists: [Option<List<'a>>; 2],
}

pub(super) const LIST_KEYS: [&str; 2] = ["subtasks", "chunks"];

/// A chunk list: its text, read afterwards, or its chunks read in place.
pub(super) enum List<'a> {
    Text(&'a RawValue),
    Read(Vec<Picked<'a, ChunkFields>>),
}

impl<'de, const P: bool> de::Deserialize<'de> for PhaseRead<'de, P> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const P: bool>;
        impl<'de, const P: bool> Visitor<'de> for V<P> {
            type Value = PhaseRead<'de, P>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut values = vec![None; PhaseFields::KEYS.len()];
                let mut lists = [None, None];
                let mut seen = false;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if let Some(i) = LIST_KEYS.iter().position(|k| *k == key.0) {
                        if P && std::mem::replace(&mut seen, true) {
                            return Err(de::Error::custom(TWO_LISTS));
                        }
                        lists[i] = if P {
                            map.next_value::<InPlace>()?.0
                        } else {
                            list_text(map.next_value()?)?
                        };
                    } else if let Some(i) = PhaseFields::KEYS.iter().position(|k| *k == key.0) {
                        values[i] = Some(kept(map.next_value()?)?);
                    } else {
                        map.next_value::<Skip>()?;
                    }
                }
                Ok(PhaseRead {
                    fields: Picked {
                        values,
                        _keys: PhantomData,
                    },
                    lists,
                })
            }
        }
        d.deserialize_map(V::<P>)
    }
}

/// A chunk list kept as text: a list is read afterwards, null is no list, anything else is
/// not the usual shape.
pub(super) fn list_text<E: de::Error>(raw: &RawValue) -> Result<Option<List<'_>>, E> {
    if raw.get().starts_with('[') {
        Ok(Some(List::Text(raw)))
    } else if is_null(raw) {
        Ok(None)
    } else {
        Err(E::custom("a chunk list that is not a list"))
    }
}

/// A chunk list read in place: its chunks, `None` for null; anything else does not read.
pub(super) struct InPlace<'a>(Option<List<'a>>);

impl<'de> de::Deserialize<'de> for InPlace<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InPlace<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of chunks or null")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(InPlace(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut chunks = Vec::new();
                while let Some(chunk) = seq.next_element()? {
                    chunks.push(chunk);
                }
                Ok(InPlace(Some(List::Read(chunks))))
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys of one level the light read looks at.
pub(super) trait Fields {
    const KEYS: &'static [&'static str];
}

/// A phase's fields besides its chunk lists (`PhaseRead`).
pub(super) struct PhaseFields;
impl Fields for PhaseFields {
    const KEYS: &'static [&'static str] = &["id", "phase", "depends_on"];
}

pub(super) struct ChunkFields;
impl Fields for ChunkFields {
    const KEYS: &'static [&'static str] = &[
        "id",
        "description",
        "title",
        "status",
        "attempts",
        "verification",
    ];
}

pub(super) struct AttemptFields;
impl Fields for AttemptFields {
    const KEYS: &'static [&'static str] = &ATTEMPT_KEYS;
}

/// `n`, then the text fields of an attempt record (`attempt::ATTEMPT_TEXTS`), so that the light
/// read knows exactly the keys the full reader knows, then the ledger's keys (`COST_KEYS`,
/// summed as the full reader reads them).
const ATTEMPT_KEYS: [&str; 13] = {
    let texts = crate::plan::attempt::ATTEMPT_TEXTS;
    let mut keys = ["n"; 13];
    let mut i = 0;
    while i < texts.len() {
        keys[i + 1] = texts[i];
        i += 1;
    }
    keys[11] = COST_KEYS[0];
    keys[12] = COST_KEYS[1];
    keys
};

/// The attempt keys of the cost ledger (`Attempt::record_report`).
pub(super) const COST_KEYS: [&str; 2] = ["cost_usd", "tokens"];

/// The text fields among `AttemptFields::KEYS`.
pub(super) const ATTEMPT_TEXT_KEYS: std::ops::Range<usize> = 1..11;

pub(super) struct VerificationFields;
impl Fields for VerificationFields {
    // Every field `verification::check` reads.
    const KEYS: &'static [&'static str] = &[
        "type",
        "command",
        "run",
        "expect_output",
        "expect_stdout",
        "expect_status",
        "expected_status",
        "expected_exit_code",
    ];
}

/// An object's fields of `F::KEYS` as raw JSON (the last of a repeated key, as in the full
/// parser's map), every other field skipped. Only an object reads (serde's derived structs
/// would also take a list). Every value, kept or skipped, is read as the full parser reads it
/// (see `Skip`, `kept`).
pub(super) struct Picked<'a, F> {
    pub(super) values: Vec<Option<&'a RawValue>>,
    pub(super) _keys: PhantomData<F>,
}

impl<'a, F: Fields> Picked<'a, F> {
    pub(super) fn get(&self, key: &str) -> Option<&'a RawValue> {
        let i = F::KEYS.iter().position(|k| *k == key)?;
        self.values[i]
    }
}

impl<'de, F: Fields> de::Deserialize<'de> for Picked<'de, F> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<F>(PhantomData<F>);
        impl<'de, F: Fields> Visitor<'de> for V<F> {
            type Value = Picked<'de, F>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut values = vec![None; F::KEYS.len()];
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match F::KEYS.iter().position(|k| *k == key.0) {
                        Some(i) => values[i] = Some(kept(map.next_value()?)?),
                        None => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(Picked {
                    values,
                    _keys: PhantomData,
                })
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// A value skipped, but read as the full parser reads it into a JSON value: serde_json's own
/// skipping (`IgnoredAny`, a raw value) checks neither its recursion limit, nor escapes (a lone
/// surrogate), nor, reading bytes, UTF-8; the full parser rejects a plan for any of them.
/// Nothing is kept: texts without escapes are borrowed, numbers are not stored.
pub(super) struct Skip;

impl<'de> de::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Capped(usize::MAX).deserialize(d)
    }
}

/// `Skip`, at most this many lists or objects deep (`usize::MAX`: serde_json's own limit).
#[derive(Clone, Copy)]
pub(super) struct Capped(usize);

impl<'de> DeserializeSeed<'de> for Capped {
    type Value = Skip;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Capped {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        let inner = self.inner::<A::Error>()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        let inner = self.inner::<A::Error>()?;
        while map.next_key_seed(inner)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(Skip)
    }
}

impl Capped {
    fn inner<E: de::Error>(self) -> Result<Capped, E> {
        match self.0 {
            0 => Err(E::custom("nested deeper than the light read looks")),
            usize::MAX => Ok(self),
            n => Ok(Capped(n - 1)),
        }
    }
}

/// How deep a value the light read keeps may nest: it is read again on its own, where
/// serde_json's recursion limit counts from it and not from the top of the file as in the full
/// parser; anything deeper goes to the full parser (a usual verification is 1 deep).
pub(super) const KEPT_DEPTH: usize = 16;

/// A kept value reads as the full parser reads it (see `Skip`), and nests no deeper than
/// `KEPT_DEPTH`.
pub(super) fn sound(r: &RawValue) -> bool {
    // Most kept values are texts without an escape or a control character: read as the full
    // parser reads them by what they are. A number, `true`, `false` or `null` was read whole
    // when it was taken as raw JSON.
    let text = r.get();
    if plain_text(text).is_some() || !text.starts_with(['"', '[', '{']) {
        return true;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    Capped(KEPT_DEPTH).deserialize(&mut de).is_ok()
}

/// The text of a JSON string with no escape and no control character (what it means is what
/// it says): `None` for anything else, which serde_json reads.
pub(crate) fn plain_text(json: &str) -> Option<&str> {
    let inner = json.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20)).then_some(inner)
}

/// A kept value, once `sound`.
pub(super) fn kept<E: de::Error>(raw: &RawValue) -> Result<&RawValue, E> {
    if sound(raw) {
        Ok(raw)
    } else {
        Err(E::custom("not read as the full parser"))
    }
}
