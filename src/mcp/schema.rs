//! Every tool's schemas kept to the formats JSON Schema defines. schemars writes a `format`
//! for each Rust integer (`uint64`, `uint32`, `uint`, `int64`, `int32`) and float (`double`),
//! which no JSON Schema validator knows and the MCP Inspector warns about on every call: they
//! are taken out, wherever they are (properties, `$defs`, items, `anyOf` …).

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

/// The formats JSON Schema (2020-12) defines.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `tool` with no format outside [`STANDARD_FORMATS`] in its input or output schema.
pub fn standard(tool: &mut Tool) {
    tool.input_schema = cleaned(&tool.input_schema);
    if let Some(output) = &tool.output_schema {
        tool.output_schema = Some(cleaned(output));
    }
}

fn cleaned(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
    let mut value = Value::Object(schema.as_ref().clone());
    drop_formats(&mut value);
    match value {
        Value::Object(map) => Arc::new(map),
        _ => schema.clone(),
    }
}

/// Remove every non-standard `format` (a string value: a property named `format` is an
/// object, a schema, and is walked into, not removed).
fn drop_formats(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
            {
                map.remove("format");
            }
            map.values_mut().for_each(drop_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_formats),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integer_formats_go_and_standard_ones_and_a_property_named_format_stay() {
        let mut v = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint64", "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "format": {"type": "string"},
                "list": {"type": "array", "items": {"type": "number", "format": "double"}}
            },
            "$defs": {"X": {"anyOf": [{"type": "integer", "format": "int32"}, {"type": "null"}]}}
        });
        drop_formats(&mut v);
        assert_eq!(
            v,
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0},
                    "when": {"type": "string", "format": "date-time"},
                    "format": {"type": "string"},
                    "list": {"type": "array", "items": {"type": "number"}}
                },
                "$defs": {"X": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}
            })
        );
    }
}
