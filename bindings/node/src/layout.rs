//! `Layout`, `Decoded`, and the string forms of an ID.

use flakeid_bindings::flakeid::{self, FieldKind, Parts};
use napi::bindgen_prelude::{ClassInstance, FromNapiValue, JavaScriptClassExt, Object, Unknown};
use napi::{Env, JsDate, JsValue};
use napi_derive::napi;

use crate::args::{self, Options};
use crate::errors::{OrRaise, raise};

/// The bit plan of an ID: a preset name or the library's spec text.
#[napi]
#[derive(Clone)]
pub struct Layout {
    pub(crate) layout: flakeid::Layout,
}

/// A layout argument: a `Layout` or its spec text.
pub(crate) fn layout_arg(env: &Env, value: &Unknown<'_>) -> napi::Result<flakeid::Layout> {
    if Layout::instance_of(env, value)? {
        // SAFETY: `instance_of` checked the class.
        let layout = unsafe { ClassInstance::<Layout>::from_napi_value(env.raw(), value.raw())? };
        return Ok(layout.layout.clone());
    }
    if value.get_type()? != napi::ValueType::String {
        return Err(args::wrong_type(
            env,
            "layout",
            "a string (a preset name or a spec) or a Layout",
            value,
        ));
    }
    let spec = args::string(env, value, "layout")?;
    flakeid_bindings::parse_layout(&spec).or_raise(env)
}

/// A field of a layout, high to low.
#[napi(object)]
pub struct LayoutField {
    /// Its name (`timestamp`, `sequence`, `clock_id`, or a node field's).
    pub name: String,
    /// `timestamp`, `node`, `sequence` or `clock_id`.
    pub kind: String,
    /// Its width in bits.
    pub bits: u32,
}

#[napi]
impl Layout {
    /// A layout from a preset name or spec text (or a copy of a `Layout`).
    #[napi(constructor)]
    pub fn new(env: Env, spec: Unknown) -> napi::Result<Layout> {
        Ok(Layout {
            layout: layout_arg(&env, &spec)?,
        })
    }

    /// The spec text, which reads back as an equal layout.
    #[napi(getter)]
    pub fn spec(&self) -> String {
        self.layout.to_string()
    }

    /// The epoch, in Unix milliseconds.
    #[napi(getter)]
    pub fn epoch_ms(&self) -> f64 {
        self.layout.epoch_ms() as f64
    }

    /// Milliseconds per tick.
    #[napi(getter)]
    pub fn unit_ms(&self) -> f64 {
        self.layout.unit_ms() as f64
    }

    /// The largest node id (all node fields as one number).
    #[napi(getter)]
    pub fn max_node_id(&self) -> u64 {
        self.layout.max_node_id()
    }

    /// IDs per tick per node.
    #[napi(getter)]
    pub fn capacity_per_tick(&self) -> u64 {
        self.layout.capacity_per_tick()
    }

    /// The last instant the layout can encode, in Unix milliseconds.
    #[napi(getter)]
    pub fn last_ms(&self) -> f64 {
        self.layout.last_ms() as f64
    }

    /// The fields from the highest bit down.
    #[napi(getter)]
    pub fn fields(&self) -> Vec<LayoutField> {
        self.layout
            .fields()
            .iter()
            .map(|f| LayoutField {
                name: f.name().to_owned(),
                kind: match f.kind() {
                    FieldKind::Timestamp => "timestamp",
                    FieldKind::Sequence => "sequence",
                    FieldKind::ClockId => "clock_id",
                    _ => "node",
                }
                .into(),
                bits: f.bits(),
            })
            .collect()
    }

    /// Reads an ID back.
    #[napi]
    pub fn decode(&self, env: Env, id: Unknown) -> napi::Result<Decoded> {
        decode(&env, &self.layout, &id)
    }

    /// An ID from its parts.
    #[napi]
    pub fn compose(&self, env: Env, parts: Unknown) -> napi::Result<u64> {
        let layout = &self.layout;
        let options = Options::read(
            &env,
            Some(&parts),
            "parts",
            &[
                "timestamp",
                "unixMs",
                "nodeId",
                "nodeFields",
                "sequence",
                "clockId",
            ],
        )?;
        let invalid = |m: &str| raise(&env, flakeid_bindings::Error::invalid(m));
        let timestamp = match (
            args::opt_uint(&env, options.get("timestamp"), "timestamp", u64::MAX)?,
            args::opt_uint(&env, options.get("unixMs"), "unixMs", u64::MAX)?,
        ) {
            (Some(t), None) => t,
            (None, Some(ms)) => layout
                .timestamp_at(ms)
                .map_err(flakeid_bindings::Error::from)
                .or_raise(&env)?,
            _ => return Err(invalid("give one of timestamp and unixMs")),
        };
        let node = match (options.get("nodeId"), options.get("nodeFields")) {
            (Some(n), None) => args::uint(&env, n, "nodeId", u64::MAX)?,
            (None, Some(fields)) => {
                let fields = args::fields(&env, fields, "nodeFields")?;
                flakeid_bindings::node_id_from_fields(layout, &fields).or_raise(&env)?
            }
            (None, None) => 0,
            (Some(_), Some(_)) => return Err(invalid("give nodeId or nodeFields, not both")),
        };
        let parts = Parts {
            timestamp,
            node,
            sequence: args::opt_uint(&env, options.get("sequence"), "sequence", u64::MAX)?
                .unwrap_or(0),
            clock_id: args::opt_uint(&env, options.get("clockId"), "clockId", u64::MAX)?
                .unwrap_or(0),
        };
        flakeid_bindings::compose(layout, parts).or_raise(&env)
    }

    /// The node id of named node fields, every one of the layout's.
    #[napi]
    pub fn node_id_from_fields(&self, env: Env, fields: Unknown) -> napi::Result<u64> {
        let fields = args::fields(&env, &fields, "fields")?;
        flakeid_bindings::node_id_from_fields(&self.layout, &fields).or_raise(&env)
    }

    /// Whether `other` is a `Layout` with the same fields and epoch.
    #[napi]
    pub fn equals(&self, env: Env, other: Unknown) -> napi::Result<bool> {
        if !Layout::instance_of(&env, &other)? {
            return Ok(false);
        }
        // SAFETY: `instance_of` checked the class.
        let other = unsafe { ClassInstance::<Layout>::from_napi_value(env.raw(), other.raw())? };
        Ok(other.layout == self.layout)
    }

    /// The spec text.
    #[napi]
    #[allow(clippy::inherent_to_string)]
    pub fn to_string(&self) -> String {
        self.layout.to_string()
    }

    /// The spec text, for `JSON.stringify`.
    #[napi(js_name = "toJSON")]
    pub fn to_json(&self) -> String {
        self.layout.to_string()
    }
}

pub(crate) fn decode(
    env: &Env,
    layout: &flakeid::Layout,
    id: &Unknown<'_>,
) -> napi::Result<Decoded> {
    let id = args::uint(env, id, "id", u64::MAX)?;
    flakeid_bindings::decode(layout, id)
        .map(|decoded| Decoded { decoded })
        .or_raise(env)
}

/// An ID read back through its layout.
#[napi]
pub struct Decoded {
    decoded: flakeid_bindings::Decoded,
}

#[napi]
impl Decoded {
    /// The ID.
    #[napi(getter)]
    pub fn id(&self) -> u64 {
        self.decoded.id
    }

    /// Ticks since the layout's epoch.
    #[napi(getter)]
    pub fn timestamp(&self) -> u64 {
        self.decoded.timestamp
    }

    /// The time, in Unix milliseconds.
    #[napi(getter)]
    pub fn unix_ms(&self) -> f64 {
        self.decoded.unix_ms as f64
    }

    /// The time in RFC 3339, UTC.
    #[napi(getter)]
    pub fn rfc3339(&self) -> String {
        self.decoded.rfc3339.clone()
    }

    /// The time as a `Date`.
    #[napi(getter)]
    pub fn date<'env>(&self, env: &'env Env) -> napi::Result<JsDate<'env>> {
        env.create_date(self.decoded.unix_ms as f64)
    }

    /// All node fields as one number.
    #[napi(getter)]
    pub fn node_id(&self) -> u64 {
        self.decoded.node_id
    }

    /// The node fields by name, high to low.
    #[napi(getter)]
    pub fn fields<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let mut fields = Object::new(env)?;
        for (name, value) in &self.decoded.fields {
            fields.set(name, *value)?;
        }
        Ok(fields)
    }

    /// The sequence within the tick.
    #[napi(getter)]
    pub fn sequence(&self) -> u64 {
        self.decoded.sequence
    }

    /// The clock id (0 without a clock-id field).
    #[napi(getter)]
    pub fn clock_id(&self) -> u64 {
        self.decoded.clock_id
    }

    /// The time in RFC 3339 and every field.
    #[napi]
    #[allow(clippy::inherent_to_string)]
    pub fn to_string(&self) -> String {
        self.decoded.text.clone()
    }

    /// For `JSON.stringify`: the ID and the fields as decimal strings, the
    /// time as RFC 3339 and Unix milliseconds.
    #[napi(js_name = "toJSON")]
    pub fn to_json<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let d = &self.decoded;
        let mut json = Object::new(env)?;
        json.set("id", d.id.to_string())?;
        json.set("rfc3339", d.rfc3339.as_str())?;
        json.set("unixMs", d.unix_ms as f64)?;
        json.set("timestamp", d.timestamp.to_string())?;
        json.set("nodeId", d.node_id.to_string())?;
        let mut fields = Object::new(env)?;
        for (name, value) in &d.fields {
            fields.set(name, value.to_string())?;
        }
        json.set("fields", fields)?;
        json.set("sequence", d.sequence.to_string())?;
        json.set("clockId", d.clock_id.to_string())?;
        Ok(json)
    }
}

/// The string form by name (`decimal` when absent).
fn format_arg(env: &Env, format: Option<Unknown>) -> napi::Result<Option<flakeid::IdFormat>> {
    args::opt_string(env, format.as_ref(), "format")?
        .map(|name| flakeid_bindings::id_format(&name))
        .transpose()
        .or_raise(env)
}

/// `id` in a string form: `decimal` (the default), `hex`, `base32` or
/// `base62`.
#[napi]
pub fn encode(env: Env, id: Unknown, format: Option<Unknown>) -> napi::Result<String> {
    let id = args::uint(&env, &id, "id", u64::MAX)?;
    let format = format_arg(&env, format)?.unwrap_or(flakeid::IdFormat::Decimal);
    Ok(flakeid_bindings::encode(id, format))
}

/// An ID from a string form: the one named, or (without `format`) the one
/// the string's shape says.
#[napi]
pub fn parse_id(env: Env, text: Unknown, format: Option<Unknown>) -> napi::Result<u64> {
    let text = args::string(&env, &text, "text")?;
    let format = format_arg(&env, format)?;
    flakeid_bindings::parse_id(&text, format)
        .map(|(id, _)| id)
        .or_raise(&env)
}
