//! JavaScript arguments to Rust values. Each wrong type or value is thrown
//! as `InvalidTypeError` or `InvalidArgumentError` naming the argument
//! (never napi-rs's own conversion errors). `undefined` and `null` mean
//! "not given" wherever an argument is optional.

use std::time::Duration;

use flakeid_bindings::{Error, ErrorKind};
use napi::bindgen_prelude::{BigInt, JsObjectValue, Object, Unknown};
use napi::{Env, JsValue, ValueType};

use crate::errors::raise;

/// The largest integer a JavaScript number holds exactly (2^53 - 1).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The most IDs one batch call makes (2^24, 128 MiB of IDs): larger counts
/// are refused rather than attempted as one allocation.
pub(crate) const MAX_BATCH: u64 = 1 << 24;

fn type_name(value: &Unknown<'_>) -> napi::Result<&'static str> {
    Ok(match value.get_type()? {
        ValueType::Undefined => "undefined",
        ValueType::Null => "null",
        ValueType::Boolean => "boolean",
        ValueType::Number => "number",
        ValueType::String => "string",
        ValueType::Symbol => "symbol",
        ValueType::Function => "function",
        ValueType::BigInt => "bigint",
        ValueType::Object if value.is_array()? => "an array",
        _ => "object",
    })
}

/// The error for `what` not being `expected`.
pub(crate) fn wrong_type(
    env: &Env,
    what: &str,
    expected: &str,
    value: &Unknown<'_>,
) -> napi::Error {
    match type_name(value) {
        Ok(name) => raise(
            env,
            Error::new(
                ErrorKind::InvalidType,
                format!("{what} must be {expected}, not {name}"),
            ),
        ),
        Err(e) => e,
    }
}

/// Whether an optional argument was left out (`undefined` or `null`).
pub(crate) fn absent(value: &Unknown<'_>) -> napi::Result<bool> {
    Ok(matches!(
        value.get_type()?,
        ValueType::Undefined | ValueType::Null
    ))
}

/// A non-negative integer up to `max`: a number (an exact integer, at most
/// 2^53 - 1) or a bigint.
pub(crate) fn uint(env: &Env, value: &Unknown<'_>, what: &str, max: u64) -> napi::Result<u64> {
    let out_of_range = |shown: String| {
        raise(
            env,
            Error::invalid(format!(
                "{what} must be an integer from 0 to {max}, not {shown}"
            )),
        )
    };
    match value.get_type()? {
        ValueType::Number => {
            // SAFETY: the value is a number.
            let n: f64 = unsafe { value.cast()? };
            if n.fract() != 0.0 || !n.is_finite() {
                return Err(out_of_range(format_number(n)));
            }
            if n > MAX_SAFE_INTEGER {
                return Err(raise(
                    env,
                    Error::invalid(format!(
                        "{what} is {} as a number, above 2^53 - 1, where numbers are not exact \
                         integers: pass a bigint",
                        format_number(n)
                    )),
                ));
            }
            // `-0` is 0.
            if n < 0.0 || n as u64 > max {
                return Err(out_of_range(format_number(n)));
            }
            Ok(n as u64)
        }
        ValueType::BigInt => {
            // SAFETY: the value is a bigint.
            let big: BigInt = unsafe { value.cast()? };
            let (negative, n, lossless) = big.get_u64();
            if negative && n != 0 || !lossless || n > max {
                let shown = if negative {
                    "a negative bigint"
                } else {
                    "a bigint above it"
                };
                return Err(out_of_range(shown.into()));
            }
            Ok(n)
        }
        _ => Err(wrong_type(env, what, "a number or a bigint", value)),
    }
}

fn format_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        format!("{n}")
    }
}

/// An optional `uint`.
pub(crate) fn opt_uint(
    env: &Env,
    value: Option<&Unknown<'_>>,
    what: &str,
    max: u64,
) -> napi::Result<Option<u64>> {
    match value {
        Some(v) if !absent(v)? => uint(env, v, what, max).map(Some),
        _ => Ok(None),
    }
}

/// A count of IDs for one batch: 0 to [`MAX_BATCH`].
pub(crate) fn count(env: &Env, value: &Unknown<'_>) -> napi::Result<usize> {
    uint(env, value, "n", MAX_BATCH).map(|n| n as usize)
}

/// A string.
pub(crate) fn string(env: &Env, value: &Unknown<'_>, what: &str) -> napi::Result<String> {
    match value.get_type()? {
        // SAFETY: the value is a string.
        ValueType::String => unsafe { value.cast() },
        _ => Err(wrong_type(env, what, "a string", value)),
    }
}

/// An optional string.
pub(crate) fn opt_string(
    env: &Env,
    value: Option<&Unknown<'_>>,
    what: &str,
) -> napi::Result<Option<String>> {
    match value {
        Some(v) if !absent(v)? => string(env, v, what).map(Some),
        _ => Ok(None),
    }
}

/// An optional boolean (absent is `false`).
pub(crate) fn boolean(env: &Env, value: Option<&Unknown<'_>>, what: &str) -> napi::Result<bool> {
    match value {
        Some(v) if !absent(v)? => match v.get_type()? {
            // SAFETY: the value is a boolean.
            ValueType::Boolean => unsafe { v.cast() },
            _ => Err(wrong_type(env, what, "a boolean", v)),
        },
        _ => Ok(false),
    }
}

/// An optional duration in milliseconds (a non-negative number).
pub(crate) fn opt_duration(
    env: &Env,
    value: Option<&Unknown<'_>>,
    what: &str,
) -> napi::Result<Option<Duration>> {
    let Some(v) = value else { return Ok(None) };
    match v.get_type()? {
        ValueType::Undefined | ValueType::Null => Ok(None),
        ValueType::Number => {
            // SAFETY: the value is a number.
            let ms: f64 = unsafe { v.cast()? };
            flakeid_bindings::duration(ms, 1e-3, what)
                .map(Some)
                .map_err(|e| raise(env, e))
        }
        _ => Err(wrong_type(env, what, "a number of milliseconds", v)),
    }
}

/// A plain object (not an array, a function or a primitive).
pub(crate) fn object<'env>(
    env: &Env,
    value: &Unknown<'env>,
    what: &str,
) -> napi::Result<Object<'env>> {
    match value.get_type()? {
        ValueType::Object if !value.is_array()? => {
            // SAFETY: the value is an object.
            unsafe { value.cast() }
        }
        _ => Err(wrong_type(env, what, "an object", value)),
    }
}

/// A non-empty array of strings (a lone string is refused: it names one
/// endpoint, and would be read as such by mistake for a list).
pub(crate) fn strings(env: &Env, value: &Unknown<'_>, what: &str) -> napi::Result<Vec<String>> {
    if value.get_type()? != ValueType::Object || !value.is_array()? {
        return Err(wrong_type(env, what, "an array of strings", value));
    }
    // SAFETY: the value is an array (an object).
    let array: Object<'_> = unsafe { value.cast()? };
    let len = array.get_array_length()?;
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let item: Unknown<'_> = array.get_element(i)?;
        out.push(string(env, &item, &format!("each of {what}"))?);
    }
    if out.is_empty() {
        return Err(raise(
            env,
            Error::invalid(format!("{what} must not be empty")),
        ));
    }
    Ok(out)
}

/// An object of node fields: names to integers.
pub(crate) fn fields(
    env: &Env,
    value: &Unknown<'_>,
    what: &str,
) -> napi::Result<Vec<(String, u64)>> {
    let object = object(env, value, what)?;
    let mut out = Vec::new();
    for name in Object::keys(&object)? {
        let field: Unknown<'_> = object.get_named_property(&name)?;
        let field = uint(env, &field, &format!("{what}.{name}"), u64::MAX)?;
        out.push((name, field));
    }
    Ok(out)
}

/// The properties of an options object, each checked against `known`
/// (an unknown name is refused: a misspelt option would otherwise be
/// ignored). `undefined`/`null` options are an empty set.
pub(crate) struct Options<'env> {
    values: Vec<(&'static str, Unknown<'env>)>,
}

impl<'env> Options<'env> {
    /// Reads `value` (an options object, or absent) against `known`.
    pub(crate) fn read(
        env: &Env,
        value: Option<&Unknown<'env>>,
        what: &str,
        known: &[&'static str],
    ) -> napi::Result<Options<'env>> {
        let mut values = Vec::new();
        let Some(value) = value else {
            return Ok(Options { values });
        };
        if absent(value)? {
            return Ok(Options { values });
        }
        let object = object(env, value, what)?;
        for name in Object::keys(&object)? {
            let Some(known) = known.iter().find(|k| **k == name) else {
                return Err(raise(
                    env,
                    Error::invalid(format!(
                        "unknown option {name:?} in {what}: expected {}",
                        known.join(", ")
                    )),
                ));
            };
            let option: Unknown<'env> = object.get_named_property(&name)?;
            if !absent(&option)? {
                values.push((*known, option));
            }
        }
        Ok(Options { values })
    }

    /// The option `name`, if given.
    pub(crate) fn get(&self, name: &str) -> Option<&Unknown<'env>> {
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}
