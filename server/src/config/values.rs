//! Reading values as given (TOML, or text from a flag or variable) into
//! types, each error saying what is wrong.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::str::FromStr;
use std::time::Duration;

use flakeid::{OnClockBehind, OnExhausted};

use super::{ConfigError, Origin};

/// A value as given: TOML from the file, text from a flag or variable.
#[derive(Debug, Clone)]
pub(super) enum Raw {
    Toml(toml::Value),
    Text(String),
    /// A repeated flag.
    Many(Vec<String>),
}

#[derive(Debug, Clone)]
pub(super) struct Setting {
    pub(super) raw: Raw,
    pub(super) origin: Origin,
}

/// Reads typed values out of settings, collecting errors under dotted keys.
pub(super) struct Reader<'a> {
    /// `""` for server keys, `"generators.<name>."` for generator keys.
    pub(super) path: String,
    pub(super) settings: &'a BTreeMap<&'static str, Setting>,
    pub(super) errors: &'a mut Vec<ConfigError>,
}

impl Reader<'_> {
    pub(super) fn dotted(&self, name: &str) -> String {
        format!("{}{name}", self.path)
    }

    pub(super) fn fail(&mut self, name: &str, origin: Option<&Origin>, message: impl Into<String>) {
        let key = self.dotted(name);
        self.errors.push(ConfigError {
            key,
            origin: origin.cloned(),
            message: message.into(),
        });
    }

    pub(super) fn origin(&self, name: &str) -> Option<&Origin> {
        self.settings.get(name).map(|s| &s.origin)
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.settings.contains_key(name)
    }

    /// A value through `parse`, which says what is wrong; `None` if unset or
    /// wrong (the error recorded).
    pub(super) fn get<T>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&Raw) -> Result<T, String>,
    ) -> Option<T> {
        let setting = self.settings.get(name)?;
        match parse(&setting.raw) {
            Ok(value) => Some(value),
            Err(message) => {
                let origin = setting.origin.clone();
                self.fail(name, Some(&origin), message);
                None
            }
        }
    }

    pub(super) fn text(&mut self, name: &str) -> Option<String> {
        self.get(name, text)
    }

    pub(super) fn uint(&mut self, name: &str) -> Option<u64> {
        self.get(name, uint)
    }

    pub(super) fn duration(&mut self, name: &str) -> Option<Duration> {
        self.get(name, |raw| text(raw).and_then(|t| parse_duration(&t)))
    }

    pub(super) fn parsed<T>(
        &mut self,
        name: &str,
        what: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        self.get(name, |raw| text(raw).and_then(|t| what(&t)))
    }
}

pub(super) fn text(raw: &Raw) -> Result<String, String> {
    match raw {
        Raw::Text(t) => Ok(t.clone()),
        Raw::Toml(toml::Value::String(s)) => Ok(s.clone()),
        Raw::Many(v) => Ok(v.join(",")),
        Raw::Toml(other) => Err(format!("expected a string, found {}", other.type_str())),
    }
}

pub(super) fn uint(raw: &Raw) -> Result<u64, String> {
    match raw {
        Raw::Toml(toml::Value::Integer(n)) => {
            u64::try_from(*n).map_err(|_| format!("{n} is negative; expected a whole number ≥ 0"))
        }
        Raw::Toml(toml::Value::String(s)) | Raw::Text(s) => parse_uint(s),
        Raw::Many(v) => parse_uint(&v.join(",")),
        Raw::Toml(other) => Err(format!(
            "expected a whole number, found {}",
            other.type_str()
        )),
    }
}

pub(super) fn parse_uint(s: &str) -> Result<u64, String> {
    let digits: String = s.trim().chars().filter(|c| *c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{s:?} is not a whole number"));
    }
    digits
        .parse()
        .map_err(|_| format!("{s} is too large (at most {})", u64::MAX))
}

pub(super) fn list(raw: &Raw) -> Result<Vec<String>, String> {
    let items = match raw {
        Raw::Toml(toml::Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err(format!("expected strings, found {}", other.type_str())),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Raw::Toml(toml::Value::String(s)) | Raw::Text(s) => {
            s.split(',').map(|s| s.trim().to_owned()).collect()
        }
        Raw::Many(v) => v.iter().map(|s| s.trim().to_owned()).collect(),
        Raw::Toml(other) => {
            return Err(format!(
                "expected a list of strings, found {}",
                other.type_str()
            ));
        }
    };
    if items.iter().any(String::is_empty) {
        return Err("the list has an empty item".into());
    }
    Ok(items)
}

/// `name=value` pairs: a TOML table, or text items.
pub(super) fn pairs(raw: &Raw) -> Result<Vec<(String, u64)>, String> {
    if let Raw::Toml(toml::Value::Table(table)) = raw {
        return table
            .iter()
            .map(|(name, value)| {
                let value = uint(&Raw::Toml(value.clone())).map_err(|e| format!("{name}: {e}"))?;
                Ok((name.clone(), value))
            })
            .collect();
    }
    list(raw)?
        .iter()
        .map(|item| {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?} is not name=value"))?;
            Ok((
                name.trim().to_owned(),
                parse_uint(value).map_err(|e| format!("{name}: {e}"))?,
            ))
        })
        .collect()
}

/// `500ms`, `10s`, `2m`, `1h`, or a sum of them (`1m30s`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration (like 500ms, 10s, 2m, 1h)");
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let part = match &rest[..unit_len] {
            "ms" => Duration::from_millis(number),
            "s" => Duration::from_secs(number),
            "m" => Duration::from_secs(number.saturating_mul(60)),
            "h" => Duration::from_secs(number.saturating_mul(3600)),
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = total.saturating_add(part);
    }
    Ok(total)
}

/// `IP:port` or `off`.
pub(super) fn parse_addr(s: &str) -> Result<Option<SocketAddr>, String> {
    if s.trim() == "off" {
        return Ok(None);
    }
    SocketAddr::from_str(s.trim()).map(Some).map_err(|_| {
        format!("{s:?} is not IP:port (for example 127.0.0.1:8080 or [::1]:8080) or `off`")
    })
}

pub(super) fn parse_on_exhausted(s: &str) -> Result<OnExhausted, String> {
    match s.trim() {
        "wait" => Ok(OnExhausted::Wait),
        "error" => Ok(OnExhausted::Error),
        "next_clock" => Ok(OnExhausted::NextClock),
        other => match other.strip_prefix("borrow:") {
            Some(d) => Ok(OnExhausted::Borrow {
                max_ahead: parse_duration(d)?,
            }),
            None => Err(format!(
                "{other:?} is not a policy: wait, borrow:<duration>, error or next_clock"
            )),
        },
    }
}

pub(super) fn parse_on_clock_behind(s: &str) -> Result<OnClockBehind, String> {
    match s.trim() {
        "continue" => Ok(OnClockBehind::Continue),
        "error" => Ok(OnClockBehind::Error),
        "next_clock" => Ok(OnClockBehind::NextClock),
        other => match other.strip_prefix("wait:") {
            Some(d) => Ok(OnClockBehind::Wait {
                max: parse_duration(d)?,
            }),
            None => Err(format!(
                "{other:?} is not a policy: continue, wait:<duration>, error or next_clock"
            )),
        },
    }
}

pub(super) fn parse_range(s: &str) -> Result<RangeInclusive<u64>, String> {
    let (first, last) = s
        .split_once('-')
        .ok_or_else(|| format!("{s:?} is not a range FIRST-LAST (for example 0-31)"))?;
    let (first, last) = (parse_uint(first)?, parse_uint(last)?);
    if first > last {
        return Err(format!("{s:?} is empty: {first} is above {last}"));
    }
    Ok(first..=last)
}

/// Generator names appear in URLs and metric labels.
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `redis://:secret@host/` as `redis://:***@host/`.
pub fn mask_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
