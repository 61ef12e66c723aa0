//! A JSON line read so that no key of any object can hide another. `serde_json` keeps the last
//! of two equal keys and says nothing, so a line that names one field twice would be judged
//! by whichever came second — swap them and the verdict changes. This reads the same value and
//! also says which key, if any, came twice (its path, `value.token` inside a read's value).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// A parsed line, and the first key found twice in one of its objects.
pub(crate) struct Strict {
    pub(crate) value: Value,
    pub(crate) duplicate: Option<String>,
}

impl Strict {
    fn plain(value: Value) -> Strict {
        Strict {
            value,
            duplicate: None,
        }
    }
}

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict::plain(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict::plain(Value::from(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict::plain(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Strict, E> {
        Ok(Strict::plain(Value::from(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict::plain(Value::String(v.to_string())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Strict, E> {
        Ok(Strict::plain(Value::String(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Strict, E> {
        Ok(Strict::plain(Value::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<Strict, E> {
        Ok(Strict::plain(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        let mut duplicate = None;
        while let Some(s) = seq.next_element::<Strict>()? {
            if duplicate.is_none() {
                duplicate = s.duplicate.map(|d| format!("[{}].{d}", items.len()));
            }
            items.push(s.value);
        }
        Ok(Strict {
            value: Value::Array(items),
            duplicate,
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Strict, A::Error> {
        let mut map = Map::new();
        let mut duplicate = None;
        while let Some(k) = m.next_key::<String>()? {
            let v: Strict = m.next_value()?;
            if duplicate.is_none() {
                duplicate = match v.duplicate {
                    Some(inner) => Some(format!("{k}.{inner}")),
                    None if map.contains_key(&k) => Some(k.clone()),
                    None => None,
                };
            }
            map.insert(k, v.value);
        }
        Ok(Strict {
            value: Value::Object(map),
            duplicate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Strict;

    fn dup(s: &str) -> Option<String> {
        serde_json::from_str::<Strict>(s).expect("JSON").duplicate
    }

    #[test]
    fn a_key_twice_is_named_with_its_path() {
        assert_eq!(dup(r#"{"a":1,"b":2}"#), None);
        assert_eq!(dup(r#"{"a":1,"a":2}"#).as_deref(), Some("a"));
        assert_eq!(
            dup(r#"{"a":1,"value":{"token":1,"token":2}}"#).as_deref(),
            Some("value.token")
        );
        assert_eq!(
            dup(r#"{"x":[{"k":1},{"k":1,"k":2}]}"#).as_deref(),
            Some("x.[1].k")
        );
        // The same value as serde_json's own reading when no key repeats.
        let text = r#"{"a":[1,-2,3.5,"s",null,true],"b":{"c":{}}}"#;
        let strict = serde_json::from_str::<Strict>(text).expect("JSON").value;
        let plain: serde_json::Value = serde_json::from_str(text).expect("JSON");
        assert_eq!(strict, plain);
    }
}
