//! The layers merged into one TOML table in the types' shape: the file,
//! then the variables, then the flags, each value's origin remembered.

use std::collections::BTreeMap;
use std::path::PathBuf;

use toml::{Table, Value};

use super::defaults::DEFAULT_GENERATOR;
use super::{ConfigError, LeaseTerms, NodeSource, Origin};

/// A key given as a flag or variable.
pub(super) struct Given {
    /// The key, as in the file.
    pub(super) key: String,
    /// A generator key (of the default generator), not a server key.
    pub(super) generator: bool,
    /// The text (a repeated flag's values joined by commas).
    pub(super) text: String,
    pub(super) origin: Origin,
}

/// Where each value came from, by dotted key (`max_count`,
/// `generators.orders.layout`).
#[derive(Debug, Default)]
pub(super) struct Origins(BTreeMap<String, Origin>);

impl Origins {
    pub(super) fn of(&self, key: &str) -> Option<Origin> {
        self.0.get(key).cloned()
    }

    fn set(&mut self, key: String, origin: Origin) {
        self.0.insert(key, origin);
    }

    /// Every key of the file: its server keys and its generator tables.
    fn set_file(&mut self, server_keys: &Table, generators: &Table, file: &Origin) {
        for key in server_keys.keys() {
            self.set(key.clone(), file.clone());
        }
        for (name, keys) in generators {
            for key in keys.as_table().into_iter().flat_map(Table::keys) {
                self.set(format!("generators.{name}.{key}"), file.clone());
            }
        }
    }
}

/// The merged table, where its values came from, and what could not be
/// merged.
pub(super) struct Layers {
    pub(super) table: Table,
    pub(super) origins: Origins,
    pub(super) errors: Vec<ConfigError>,
}

/// Merges the file's `table` (read from `file`), and the flags and
/// variables `given`, into one table: server keys at the top, each
/// generator's keys in `generators.<name>`, the default generator's also
/// when the file writes them at the top or a flag or variable gives them.
/// `is_generator_key` tells a generator key from a server key.
pub(super) fn merge(
    file: Option<(Table, PathBuf)>,
    given: Vec<Given>,
    is_generator_key: impl Fn(&str) -> bool,
) -> Layers {
    let mut layers = Layers {
        table: Table::new(),
        origins: Origins::default(),
        errors: Vec::new(),
    };
    let (mut top, path) = file.map_or((Table::new(), None), |(t, p)| (t, Some(p)));
    let file_origin = path.map(Origin::File);
    let mut generators = match top.remove("generators") {
        None => Table::new(),
        Some(Value::Table(generators)) => generators,
        Some(_) => {
            layers.error(
                "generators",
                file_origin.clone(),
                "must be a table of [generators.<name>] tables",
            );
            Table::new()
        }
    };
    generators.retain(|name, keys| {
        let table = keys.is_table();
        if !table {
            layers.error(
                format!("generators.{name}"),
                file_origin.clone(),
                "must be a table",
            );
        }
        table
    });
    let (default_keys, server_keys): (Table, Table) =
        top.into_iter().partition(|(key, _)| is_generator_key(key));

    let configures_default = !default_keys.is_empty() || given.iter().any(|g| g.generator);
    let default = default_name(&given, &server_keys, configures_default, &generators);

    if let Some(origin) = &file_origin {
        layers.origins.set_file(&server_keys, &generators, origin);
    }
    layers.table = server_keys;
    if configures_default || generators.is_empty() {
        let slot = generators
            .entry(default.clone())
            .or_insert_with(|| Value::Table(Table::new()));
        let slot = slot.as_table_mut().expect("generator tables were checked");
        for (key, value) in default_keys {
            let dotted = format!("generators.{default}.{key}");
            if slot.contains_key(&key) {
                layers.error(
                    key.clone(),
                    file_origin.clone(),
                    format!("also set as {dotted}; set it in one place"),
                );
                continue;
            }
            if let Some(origin) = &file_origin {
                layers.origins.set(dotted, origin.clone());
            }
            slot.insert(key, value);
        }
        // clap gives each key one value: the flag's, else the variable's.
        for g in given {
            let (table, dotted) = if g.generator {
                (&mut *slot, format!("generators.{default}.{}", g.key))
            } else {
                (&mut layers.table, g.key.clone())
            };
            table.insert(g.key, Value::String(g.text));
            layers.origins.set(dotted, g.origin);
        }
    } else {
        for g in given {
            layers.origins.set(g.key.clone(), g.origin);
            layers.table.insert(g.key, Value::String(g.text));
        }
    }
    // As named, or found; a wrong value stays for its type to refuse.
    layers
        .table
        .entry("default_generator")
        .or_insert(Value::String(default));
    for (name, keys) in generators.iter_mut() {
        let Value::Table(keys) = keys else { continue };
        for key in nest_node(keys) {
            let dotted = format!("generators.{name}.{key}");
            let origin = layers.origins.of(&dotted);
            layers.error(
                dotted,
                origin,
                "goes with a lease: set lease_url (Redis, PostgreSQL or MySQL), \
                 lease_endpoints (etcd), or lease_sentinels and lease_master (Redis behind \
                 Sentinel)",
            );
        }
    }
    layers
        .table
        .insert("generators".into(), Value::Table(generators));
    layers
}

/// The default generator's name: as named (a flag or variable over the
/// file), else the only one the file has when nothing else configures one,
/// else `default`.
fn default_name(
    given: &[Given],
    server_keys: &Table,
    configures_default: bool,
    generators: &Table,
) -> String {
    let named = given
        .iter()
        .find(|g| g.key == "default_generator")
        .map(|g| g.text.clone())
        .or_else(|| match server_keys.get("default_generator") {
            Some(Value::String(name)) => Some(name.clone()),
            _ => None,
        });
    match named {
        Some(name) => name,
        None if !configures_default && generators.len() == 1 => {
            generators.keys().next().cloned().unwrap_or_default()
        }
        None => DEFAULT_GENERATOR.to_owned(),
    }
}

impl Layers {
    fn error(
        &mut self,
        key: impl Into<String>,
        origin: Option<Origin>,
        message: impl Into<String>,
    ) {
        self.errors.push(ConfigError {
            key: key.into(),
            origin,
            message: message.into(),
        });
    }
}

/// The source a `lease_url` names by its scheme, when `node_source` does
/// not say.
fn url_source(url: &str) -> &'static str {
    let scheme = url
        .trim_start()
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("postgres" | "postgresql") => "postgres",
        Some("mysql") => "mysql",
        _ => "redis",
    }
}

/// Whether a generator key belongs to its node source.
pub(super) fn is_node_key(key: &str) -> bool {
    key.starts_with("node_") || key.starts_with("lease_")
}

/// Moves a generator's node keys (`node_source`, `node_*`, `lease_*`) into
/// `node = { <source> = { ... } }`, the shape of [`NodeSource`], a lease's
/// terms into `terms` within. The source is `node_source`, or the
/// one the keys name (`lease_url` by its scheme: `postgres://` or
/// `postgresql://` is PostgreSQL, `mysql://` MySQL, any other Redis); with
/// neither (lease terms alone), the keys are taken out and returned, and
/// the check reports the missing source.
fn nest_node(generator: &mut Table) -> Vec<String> {
    let keys: Vec<String> = generator
        .keys()
        .filter(|k| is_node_key(k))
        .cloned()
        .collect();
    let mut node: Table = keys
        .into_iter()
        .filter_map(|k| generator.remove(&k).map(|v| (k, v)))
        .collect();
    let source = match node.remove("node_source") {
        Some(Value::String(source)) => Some(source),
        Some(other) => Some(other.to_string()),
        None => [
            "lease_url",
            "lease_sentinels",
            "lease_master",
            "lease_endpoints",
        ]
        .into_iter()
        .zip(["redis", "sentinel", "sentinel", "etcd"])
        .chain([
            ("node_env", "env"),
            ("node_id", "static"),
            ("node_fields", "static"),
        ])
        .find(|(key, _)| node.contains_key(*key))
        .map(|(key, source)| match node.get(key) {
            Some(Value::String(url)) if key == "lease_url" => url_source(url).to_owned(),
            _ => source.to_owned(),
        }),
    };
    if let Some(source) = source {
        if NodeSource::LEASES.contains(&source.as_str()) {
            let terms: Table = LeaseTerms::KEYS
                .into_iter()
                .filter_map(|k| node.remove(k).map(|v| (k.to_owned(), v)))
                .collect();
            if !terms.is_empty() {
                node.insert("terms".into(), Value::Table(terms));
            }
        }
        let mut nested = Table::new();
        nested.insert(source, Value::Table(node));
        generator.insert("node".into(), Value::Table(nested));
        return Vec::new();
    }
    node.keys().cloned().collect()
}
