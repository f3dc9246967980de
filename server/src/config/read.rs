//! The merged table read into the types, with every error at once: serde
//! stops at the first, so each error is recorded with its key and origin,
//! its value taken out, and the table read again.

use std::collections::BTreeSet;

use serde_path_to_error::Segment;
use toml::{Table, Value};

use super::layers::Origins;
use super::{Config, ConfigError};

/// The key names, for "did you mean" and for a key in the wrong place.
pub(super) struct Keys {
    pub(super) server: Vec<String>,
    pub(super) generator: Vec<String>,
}

/// Reads `table` into a [`Config`]. Errors go to `errors`, their keys to
/// `failed` (the checks skip what depends on them); `None` if the table
/// could not be read at all.
pub(super) fn read(
    mut table: Table,
    origins: &Origins,
    keys: &Keys,
    errors: &mut Vec<ConfigError>,
    failed: &mut BTreeSet<String>,
) -> Option<Config> {
    // The values taken out so far: an error about what contains one of
    // them (a variant missing a key, then the node missing its variant) is
    // a consequence, not news.
    let mut taken: Vec<Vec<String>> = Vec::new();
    loop {
        let error = match serde_path_to_error::deserialize(Value::Table(table.clone())) {
            Ok(config) => return Some(config),
            Err(error) => error,
        };
        let path: Vec<String> = error
            .path()
            .iter()
            .map(|segment| match segment {
                Segment::Seq { index } => index.to_string(),
                Segment::Map { key } => key.clone(),
                Segment::Enum { variant } => variant.clone(),
                _ => String::new(),
            })
            .collect();
        if !taken.iter().any(|t| t.starts_with(&path)) {
            let (key, message) = explain(&path, error.inner().message(), keys);
            errors.push(ConfigError {
                origin: origins.of(&key),
                key: key.clone(),
                message,
            });
            failed.insert(key);
        }
        if !take_out(&mut table, &path) {
            return None;
        }
        taken.push(path);
    }
}

/// The key an error is about (dotted, as in the file) and what is wrong,
/// from serde's path and message. A node key's path runs through the
/// `node` table the merge made (`generators.a.node.redis.lease_url`): its
/// key is `generators.a.lease_url`.
fn explain(path: &[String], message: &str, keys: &Keys) -> (String, String) {
    let unknown = message.starts_with("unknown field");
    if let [generators, name, node, rest @ ..] = path
        && generators == "generators"
        && node == "node"
    {
        let at = |key: &str| format!("generators.{name}.{key}");
        let rest: Vec<&String> = rest.iter().filter(|s| *s != "terms").collect();
        return match rest.as_slice() {
            [] => (at("node_source"), message.to_owned()),
            [source] => match missing(message) {
                Some(key) => (at(key), format!("node_source = {source:?} needs {key}")),
                None => (at("node_source"), message.to_owned()),
            },
            [source, key, ..] if unknown => (
                at(key),
                format!("does not go with node_source = {source:?}"),
            ),
            [_, key, ..] => (at(key), message.to_owned()),
        };
    }
    let key = path.join(".");
    if !unknown {
        return (key, message.to_owned());
    }
    let message = match path {
        [generators, _, name] if generators == "generators" => {
            if keys.server.contains(name) {
                format!("{name} is a server key: write it at the top of the file")
            } else {
                format!("unknown key{}", suggestion(name, &keys.generator))
            }
        }
        [name] => {
            let all: Vec<String> = keys.server.iter().chain(&keys.generator).cloned().collect();
            format!("unknown key{}", suggestion(name, &all))
        }
        _ => message.to_owned(),
    };
    (key, message)
}

/// The key of serde's "missing field `x`".
fn missing(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.strip_suffix('`')
}

/// "; did you mean `x`?" for a known key one or two edits away.
fn suggestion(name: &str, known: &[String]) -> String {
    known
        .iter()
        .map(|k| (strsim::levenshtein(name, k), k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map_or_else(String::new, |(_, k)| format!("; did you mean `{k}`?"))
}

/// Removes the value at `path`; false if there is none.
fn take_out(table: &mut Table, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut at = table;
    for key in parents {
        match at.get_mut(key) {
            Some(Value::Table(inner)) => at = inner,
            _ => return false,
        }
    }
    at.remove(last).is_some()
}
