//! Numeric arguments as a model writes them: a number (`1`) or a string of digits (`"1"`).
//! A value that is neither says what is expected in plain words (never a Rust type name);
//! the schema says both forms are accepted.

use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

/// A whole number, 0 or more: `3` or `"3"` (surrounding spaces allowed in the string).
pub fn whole<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => parse_whole(&v).map(Some).map_err(serde::de::Error::custom),
    }
}

/// `whole`, for a count that a `usize` holds.
pub fn whole_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    whole(d)?
        .map(|n| {
            usize::try_from(n).map_err(|_| serde::de::Error::custom("the number is too large"))
        })
        .transpose()
}

/// A number of dollars (or any amount), 0 or more: `2.5` or `"2.5"`.
pub fn amount<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    let shown = |v: &Value| v.to_string();
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = match &v {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            };
            match n {
                Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n)),
                _ => Err(serde::de::Error::custom(format!(
                    "expected an amount of 0 or more, as a number (2.5) or a string (\"2.5\"); got {}",
                    shown(&v)
                ))),
            }
        }
    }
}

fn parse_whole(v: &Value) -> Result<u64, String> {
    let n = match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    n.ok_or_else(|| {
        format!("expected a whole number of 0 or more, as a number (1) or a string of digits (\"1\"); got {v}")
    })
}

/// The schema of a whole-number argument: an integer, or a string of digits.
pub fn whole_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schema_of(json!({
        "anyOf": [
            {"type": "integer", "minimum": 0},
            {"type": "string", "pattern": "^\\s*[0-9]+\\s*$"},
            {"type": "null"}
        ]
    }))
}

/// The schema of an amount: a number, or a string that reads as one.
pub fn amount_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schema_of(json!({
        "anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": "^\\s*[0-9]+(\\.[0-9]+)?\\s*$"},
            {"type": "null"}
        ]
    }))
}

fn schema_of(v: Value) -> schemars::Schema {
    schemars::Schema::try_from(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Args {
        #[serde(default, deserialize_with = "whole_usize")]
        n: Option<usize>,
        #[serde(default, deserialize_with = "amount")]
        usd: Option<f64>,
    }

    fn parse(v: Value) -> Result<Args, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn numbers_and_numeric_strings_are_taken_and_anything_else_is_said_plainly() {
        assert_eq!(parse(json!({"n": 1})).unwrap().n, Some(1));
        assert_eq!(parse(json!({"n": "2"})).unwrap().n, Some(2));
        assert_eq!(parse(json!({"n": " 3 "})).unwrap().n, Some(3));
        assert_eq!(parse(json!({})).unwrap().n, None);
        assert_eq!(parse(json!({"n": null})).unwrap().n, None);
        assert_eq!(parse(json!({"usd": "2.5"})).unwrap().usd, Some(2.5));
        for bad in [json!("one"), json!(-1), json!(1.5), json!([1]), json!("")] {
            let e = parse(json!({ "n": bad })).unwrap_err();
            assert!(e.contains("expected a whole number of 0 or more"), "{e}");
            assert!(!e.contains("usize") && !e.contains("u64"), "{e}");
        }
        let e = parse(json!({"usd": "lots"})).unwrap_err();
        assert!(e.contains("expected an amount"), "{e}");
    }
}
