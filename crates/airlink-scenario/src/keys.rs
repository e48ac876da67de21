//! Every key a scenario file may hold, with what it accepts (unit included), its default and
//! its documentation: `airlink keys`. The list is derived from the schema's own types and doc
//! comments (through `schemars`), so it cannot drift from what the parser accepts.

use crate::Scenario;
use serde::Serialize;
use serde_json::{Map, Value};

/// One key of a scenario file.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct KeyDoc {
    /// Dotted path, `N` standing for a flow's index: `flow.N.tcp.rwnd`.
    pub key: String,
    /// What the key accepts, with units: "a duration with a unit, like \"200 ms\" ...".
    pub accepts: String,
    /// The value a file that leaves the key out gets, as TOML; `None` when the documentation
    /// says (a default that depends on other keys) or the key is required.
    pub default: Option<String>,
    /// The doc comment of the field.
    pub doc: String,
}

/// Every key, in the order of the schema's tables.
pub fn keys() -> Vec<KeyDoc> {
    let schema = serde_json::to_value(schemars::schema_for!(Scenario)).expect("a schema is JSON");
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    walk(&defs, &schema, "", &mut out);
    out
}

fn resolve<'a>(defs: &'a Map<String, Value>, s: &'a Value) -> &'a Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => defs.get(r.trim_start_matches("#/$defs/")).unwrap_or(s),
        None => s,
    }
}

/// The schema inside an `Option` (`anyOf: [x, null]`), resolved.
fn unwrap_option<'a>(defs: &'a Map<String, Value>, s: &'a Value) -> &'a Value {
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        if let Some(inner) = any
            .iter()
            .find(|x| x.get("type").and_then(Value::as_str) != Some("null"))
        {
            return resolve(defs, inner);
        }
    }
    resolve(defs, s)
}

fn text(s: &Value, key: &str) -> String {
    s.get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// A tagged enum's variants (`[downlink.pipe]`): (name, schema) when every variant is a table.
fn variants(s: &Value) -> Option<Vec<(&String, &Value)>> {
    let one_of = s.get("oneOf")?.as_array()?;
    one_of
        .iter()
        .map(|v| {
            v.get("properties")?
                .as_object()
                .filter(|p| p.len() == 1)
                .and_then(|p| p.iter().next())
        })
        .collect()
}

fn walk(defs: &Map<String, Value>, table: &Value, prefix: &str, out: &mut Vec<KeyDoc>) {
    let Some(props) = table.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, prop) in props {
        let key = join(prefix, name);
        let doc = text(prop, "description");
        let mut target = unwrap_option(defs, prop);
        let mut key = key;
        if target.get("type").and_then(Value::as_str) == Some("array") {
            if let Some(items) = target.get("items").map(|i| resolve(defs, i)) {
                if items.get("properties").is_some() {
                    key = format!("{key}.N");
                    target = items;
                }
            }
        }
        // A table of named tables (`[host.NAME]`, `[link.NAME]`).
        if target.get("properties").is_none() {
            if let Some(values) = target
                .get("additionalProperties")
                .filter(|v| v.is_object())
                .map(|v| resolve(defs, v))
            {
                if values.get("properties").is_some() {
                    key = format!("{key}.NAME");
                    target = values;
                }
            }
        }
        if target.get("properties").is_some() {
            out.push(KeyDoc {
                key: key.clone(),
                accepts: "a table".into(),
                default: None,
                doc,
            });
            walk(defs, target, &key, out);
        } else if let Some(vs) = variants(target) {
            out.push(KeyDoc {
                key: key.clone(),
                accepts: format!(
                    "one table of: {}",
                    vs.iter()
                        .map(|v| v.0.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                default: None,
                doc,
            });
            for (variant, schema) in vs {
                let inner = resolve(defs, schema);
                let vkey = join(&key, variant);
                out.push(KeyDoc {
                    key: vkey.clone(),
                    accepts: "a table".into(),
                    default: None,
                    doc: text(inner, "description"),
                });
                walk(defs, inner, &vkey, out);
            }
        } else {
            let default = prop.get("default").map(toml_value);
            out.push(KeyDoc {
                key,
                accepts: accepts(target),
                default,
                doc,
            });
        }
    }
}

/// What a leaf schema accepts, in a scenario writer's terms.
fn accepts(s: &Value) -> String {
    if let Some(one_of) = s.get("oneOf").and_then(Value::as_array) {
        let names: Vec<String> = one_of
            .iter()
            .filter_map(|v| v.get("const"))
            .map(|c| format!("{c}"))
            .collect();
        if !names.is_empty() {
            return format!("one of {}", names.join(", "));
        }
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        return format!(
            "one of {}",
            values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let kinds: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => vec![],
    };
    let described = text(s, "description");
    if !described.is_empty() && kinds.iter().all(|k| *k != "object") {
        return described;
    }
    match kinds.first().copied() {
        Some("integer") => match (
            s.get("minimum"),
            s.get("maximum"),
            text(s, "format").as_str(),
        ) {
            (_, _, "uint8") => "a whole number from 0 to 255".into(),
            (_, _, "uint32") => "a whole number from 0 to 4294967295".into(),
            _ => "a whole number".into(),
        },
        Some("number") => "a number".into(),
        Some("boolean") => "true or false".into(),
        Some("string") => "text".into(),
        Some("object") => "a table of key = value".into(),
        Some("array") => "a list".into(),
        _ => "a value".into(),
    }
}

/// A default as it would be written in the file.
fn toml_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Object(m) => format!(
            "{{ {} }}",
            m.iter()
                .map(|(k, v)| format!("{k} = {}", toml_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}
