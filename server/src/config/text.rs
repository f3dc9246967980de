//! Values as a key's types read them: from the file's TOML (`max_count =
//! 5`, `lease_endpoints = ["a", "b"]`), or from the text of a flag or
//! variable (`--max-count 5`, `FLAKEID_LEASE_ENDPOINTS=a,b`), which is all
//! a command line has. Each type reads both, and writes itself back as the
//! file would say it (for `--check`).
//!
//! Fields use it as `#[serde(with = "text")]`, or `with = "text::option"`
//! for an optional key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::time::Duration;

use flakeid::{OnClockBehind, OnExhausted};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::Value;

use crate::quote::quote;

/// A type a key's value is read into.
pub(crate) trait Text: Sized {
    /// Reads the text of a flag or variable; the error says what is wrong.
    fn from_text(text: &str) -> Result<Self, String>;

    /// Reads a TOML value: a string as text; other kinds where the type
    /// takes them.
    fn from_toml(value: Value) -> Result<Self, String> {
        match value {
            Value::String(text) => Self::from_text(&text),
            other => Err(format!("expected a string, found {}", other.type_str())),
        }
    }

    /// The value as the file would say it.
    fn to_toml(&self) -> Value;
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>, T: Text>(d: D) -> Result<T, D::Error> {
    T::from_toml(Value::deserialize(d)?).map_err(D::Error::custom)
}

pub(crate) fn serialize<S: Serializer, T: Text>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    value.to_toml().serialize(s)
}

/// An optional key: absent is `None` (with `#[serde(default)]`).
pub(crate) mod option {
    use super::{Deserializer, Serializer, Text};

    pub(crate) fn deserialize<'de, D: Deserializer<'de>, T: Text>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        super::deserialize(d).map(Some)
    }

    pub(crate) fn serialize<S: Serializer, T: Text>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => super::serialize(value, s),
            None => s.serialize_none(),
        }
    }
}

impl Text for u64 {
    fn from_text(text: &str) -> Result<u64, String> {
        let digits = text.trim().replace('_', "");
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{} is not a whole number", quote(text)));
        }
        digits
            .parse()
            .map_err(|_| format!("{} is too large (at most {})", quote(text), u64::MAX))
    }

    fn from_toml(value: Value) -> Result<u64, String> {
        match value {
            Value::Integer(n) => u64::try_from(n).map_err(|_| format!("{n} is below 0")),
            Value::String(text) => u64::from_text(&text),
            other => Err(format!(
                "expected a whole number, found {}",
                other.type_str()
            )),
        }
    }

    fn to_toml(&self) -> Value {
        i64::try_from(*self).map_or_else(|_| Value::String(self.to_string()), Value::Integer)
    }
}

impl Text for u32 {
    fn from_text(text: &str) -> Result<u32, String> {
        narrow(u64::from_text(text)?)
    }

    fn from_toml(value: Value) -> Result<u32, String> {
        narrow(u64::from_toml(value)?)
    }

    fn to_toml(&self) -> Value {
        Value::Integer(i64::from(*self))
    }
}

fn narrow(n: u64) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("{n} is too large (at most {})", u32::MAX))
}

/// `true` or `false`: a TOML boolean, or its text.
impl Text for bool {
    fn from_text(text: &str) -> Result<bool, String> {
        match text.trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("{} is not true or false", quote(text))),
        }
    }

    fn from_toml(value: Value) -> Result<bool, String> {
        match value {
            Value::Boolean(b) => Ok(b),
            Value::String(text) => bool::from_text(&text),
            other => Err(format!(
                "expected true or false, found {}",
                other.type_str()
            )),
        }
    }

    fn to_toml(&self) -> Value {
        Value::Boolean(*self)
    }
}

/// `500ms`, `10s`, `2m`, `1h`, `1m30s`: humantime's grammar, which
/// `flakeid bench --duration` reads too.
impl Text for Duration {
    fn from_text(text: &str) -> Result<Duration, String> {
        humantime::parse_duration(text.trim()).map_err(|e| {
            format!(
                "{} is not a duration (like 500ms, 10s, 1m30s): {e}",
                quote(text)
            )
        })
    }

    fn to_toml(&self) -> Value {
        Value::String(humantime::format_duration(*self).to_string())
    }
}

/// A listener: `IP:port`, or `off` for none.
impl Text for Option<SocketAddr> {
    fn from_text(text: &str) -> Result<Option<SocketAddr>, String> {
        match text.trim() {
            "off" => Ok(None),
            addr => addr.parse().map(Some).map_err(|_| {
                format!(
                    "{} is not IP:port (for example 127.0.0.1:8080 or [::1]:8080) or `off`",
                    quote(text)
                )
            }),
        }
    }

    fn to_toml(&self) -> Value {
        Value::String(self.map_or_else(|| "off".into(), |addr| addr.to_string()))
    }
}

/// A list: a TOML array of strings, or comma-separated text.
impl Text for Vec<String> {
    fn from_text(text: &str) -> Result<Vec<String>, String> {
        let items: Vec<String> = text.split(',').map(|s| s.trim().to_owned()).collect();
        if items.iter().any(String::is_empty) {
            return Err(format!("{} has an empty item", quote(text)));
        }
        Ok(items)
    }

    fn from_toml(value: Value) -> Result<Vec<String>, String> {
        match value {
            Value::Array(items) if items.is_empty() => Err("the list is empty".to_owned()),
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) if !s.trim().is_empty() => Ok(s),
                    Value::String(_) => Err("the list has an empty item".to_owned()),
                    other => Err(format!("expected strings, found {}", other.type_str())),
                })
                .collect(),
            Value::String(text) => Vec::from_text(&text),
            other => Err(format!(
                "expected a list of strings, found {}",
                other.type_str()
            )),
        }
    }

    fn to_toml(&self) -> Value {
        Value::Array(self.iter().cloned().map(Value::String).collect())
    }
}

/// Node fields by name: a TOML table (`{ datacenter = 1, worker = 7 }`), or
/// `datacenter=1,worker=7`.
impl Text for BTreeMap<String, u64> {
    fn from_text(text: &str) -> Result<BTreeMap<String, u64>, String> {
        Vec::<String>::from_text(text)?
            .iter()
            .map(|item| {
                let (name, value) = item
                    .split_once('=')
                    .ok_or_else(|| format!("{} is not name=value", quote(item)))?;
                let value = u64::from_text(value).map_err(|e| format!("{}: {e}", name.trim()))?;
                Ok((name.trim().to_owned(), value))
            })
            .collect()
    }

    fn from_toml(value: Value) -> Result<BTreeMap<String, u64>, String> {
        match value {
            Value::Table(table) => table
                .into_iter()
                .map(|(name, value)| {
                    let value = u64::from_toml(value).map_err(|e| format!("{name}: {e}"))?;
                    Ok((name, value))
                })
                .collect(),
            Value::String(text) => BTreeMap::from_text(&text),
            other => Err(format!(
                "expected a table of node fields, found {}",
                other.type_str()
            )),
        }
    }

    fn to_toml(&self) -> Value {
        Value::Table(
            self.iter()
                .map(|(name, value)| (name.clone(), value.to_toml()))
                .collect(),
        )
    }
}

/// `FIRST-LAST`: node ids.
impl Text for RangeInclusive<u64> {
    fn from_text(text: &str) -> Result<RangeInclusive<u64>, String> {
        let (first, last) = text.split_once('-').ok_or_else(|| {
            format!(
                "{} is not a range FIRST-LAST (for example 0-31)",
                quote(text)
            )
        })?;
        let (first, last) = (u64::from_text(first)?, u64::from_text(last)?);
        if first > last {
            return Err(format!("{first}-{last} is empty: {first} is above {last}"));
        }
        Ok(first..=last)
    }

    fn to_toml(&self) -> Value {
        Value::String(format!("{}-{}", self.start(), self.end()))
    }
}

/// `wait`, `borrow:<duration>`, `error`, `next_clock`.
impl Text for OnExhausted {
    fn from_text(text: &str) -> Result<OnExhausted, String> {
        match text.trim() {
            "wait" => Ok(OnExhausted::Wait),
            "error" => Ok(OnExhausted::Error),
            "next_clock" => Ok(OnExhausted::NextClock),
            other => match other.strip_prefix("borrow:") {
                Some(ahead) => Ok(OnExhausted::Borrow {
                    max_ahead: Duration::from_text(ahead)?,
                }),
                None => Err(format!(
                    "{} is not a policy: wait, borrow:<duration>, error or next_clock",
                    quote(other)
                )),
            },
        }
    }

    fn to_toml(&self) -> Value {
        Value::String(match self {
            OnExhausted::Borrow { max_ahead } => {
                format!("borrow:{}", humantime::format_duration(*max_ahead))
            }
            OnExhausted::Error => "error".into(),
            OnExhausted::NextClock => "next_clock".into(),
            _ => "wait".into(),
        })
    }
}

/// `continue`, `wait:<duration>`, `error`, `next_clock`.
impl Text for OnClockBehind {
    fn from_text(text: &str) -> Result<OnClockBehind, String> {
        match text.trim() {
            "continue" => Ok(OnClockBehind::Continue),
            "error" => Ok(OnClockBehind::Error),
            "next_clock" => Ok(OnClockBehind::NextClock),
            other => match other.strip_prefix("wait:") {
                Some(max) => Ok(OnClockBehind::Wait {
                    max: Duration::from_text(max)?,
                }),
                None => Err(format!(
                    "{} is not a policy: continue, wait:<duration>, error or next_clock",
                    quote(other)
                )),
            },
        }
    }

    fn to_toml(&self) -> Value {
        Value::String(match self {
            OnClockBehind::Wait { max } => format!("wait:{}", humantime::format_duration(*max)),
            OnClockBehind::Error => "error".into(),
            OnClockBehind::NextClock => "next_clock".into(),
            _ => "continue".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_toml_read_alike() {
        assert_eq!(u64::from_text("1_000"), Ok(1000));
        assert_eq!(u64::from_toml(Value::Integer(7)), Ok(7));
        assert!(u64::from_toml(Value::Integer(-1)).is_err());
        assert_eq!(
            u64::from_text("lots"),
            Err("\"lots\" is not a whole number".into())
        );
        assert_eq!(Duration::from_text("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(Duration::from_text("250ms"), Ok(Duration::from_millis(250)));
        assert!(Duration::from_text("10").is_err());
        assert_eq!(
            Vec::from_text("a, b"),
            Ok(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(
            BTreeMap::from_text("datacenter=1,worker=7"),
            Ok(BTreeMap::from([
                ("datacenter".into(), 1),
                ("worker".into(), 7)
            ]))
        );
        assert_eq!(RangeInclusive::from_text("3-9"), Ok(3..=9));
        assert_eq!(bool::from_text("false"), Ok(false));
        assert_eq!(bool::from_toml(Value::Boolean(true)), Ok(true));
        assert!(bool::from_text("yes").is_err());
        assert!(bool::from_toml(Value::Integer(1)).is_err());
        assert!(RangeInclusive::<u64>::from_text("9-3").is_err());
        assert_eq!(
            OnExhausted::from_text("borrow:5ms"),
            Ok(OnExhausted::Borrow {
                max_ahead: Duration::from_millis(5)
            })
        );
        assert_eq!(
            OnClockBehind::from_text("wait:5ms"),
            Ok(OnClockBehind::Wait {
                max: Duration::from_millis(5)
            })
        );
        for policy in ["wait", "borrow:5ms", "error", "next_clock"] {
            let read = OnExhausted::from_text(policy).unwrap();
            assert_eq!(read.to_toml(), Value::String(policy.into()));
        }
    }
}
