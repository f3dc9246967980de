//! The configuration printed as a file would say it, for `--check`: the
//! types written back to TOML, each generator's node keys back beside its
//! other keys, and each node id resolved before the start in a comment.
//! The token is never printed.

use std::fmt;

use toml::{Table, Value};

use super::Config;

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut table = Table::try_from(self).map_err(|_| fmt::Error)?;
        let generators = table.get_mut("generators").and_then(Value::as_table_mut);
        for (_, g) in generators.into_iter().flat_map(|t| t.iter_mut()) {
            let Some(g) = g.as_table_mut() else { continue };
            if let Some(Value::Table(node)) = g.remove("node") {
                for (source, keys) in node {
                    g.insert("node_source".into(), Value::String(source));
                    let mut keys = match keys {
                        Value::Table(keys) => keys,
                        _ => Table::new(),
                    };
                    if let Some(Value::Table(terms)) = keys.remove("terms") {
                        keys.extend(terms);
                    }
                    g.extend(keys);
                }
            }
            for key in ["lease_url", "lease_master"] {
                if let Some(Value::String(url)) = g.get_mut(key) {
                    *url = super::mask_password(url);
                }
            }
            if let Some(Value::Array(sentinels)) = g.get_mut("lease_sentinels") {
                for s in sentinels.iter_mut() {
                    if let Value::String(url) = s {
                        *url = super::mask_password(url);
                    }
                }
            }
        }
        write!(f, "{table}")?;
        // The node ids known before the start, with where they came from
        // (a comment: the keys above say how to find them again).
        for (name, g) in &self.generators {
            if let (Some(node_id), Some(node)) = (g.node_id, &g.node) {
                writeln!(
                    f,
                    "# generators.{name}: node id {node_id} ({})",
                    node.describe(name)
                )?;
            }
        }
        Ok(())
    }
}
