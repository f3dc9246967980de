//! A generator's node id source, checked against its layout.

use flakeid::{FieldKind, Layout, node_id};

use super::values::{Reader, list, pairs, parse_range};
use super::{LeaseConfig, LeaseStore, NodeSource};

pub(super) fn check_node(
    generator: &str,
    layout: &Layout,
    r: &mut Reader<'_>,
) -> Option<NodeSource> {
    let lease_keys = [
        "lease_prefix",
        "lease_ttl",
        "lease_margin",
        "lease_connect_timeout",
        "lease_node_ids",
    ];
    let source = match r.text("node_source") {
        Some(s) => s,
        None if r.has("lease_url") => "redis".into(),
        None if r.has("lease_sentinels") || r.has("lease_master") => "sentinel".into(),
        None if r.has("lease_endpoints") => "etcd".into(),
        None if r.has("node_env") => "env".into(),
        None if r.has("node_id") || r.has("node_fields") => "static".into(),
        None if r.has("node_source") => return None,
        None => {
            r.fail(
                "node_source",
                None,
                "no node id source: set node_id or node_fields (static), node_env (a variable), \
                 node_source = \"statefulset\", a lease (lease_url for Redis, lease_sentinels \
                 and lease_master for Redis behind Sentinel, lease_endpoints for etcd), or node_source = \"single\" if this is the only generator of its \
                 layout anywhere",
            );
            return None;
        }
    };
    // Keys that belong to another source are mistakes, not leftovers.
    let belongs: &[&str] = match source.as_str() {
        "static" => &["node_id", "node_fields"],
        "env" => &["node_env"],
        "etcd" => &["lease_endpoints"],
        "redis" => &["lease_url"],
        "sentinel" => &["lease_sentinels", "lease_master"],
        _ => &[],
    };
    let is_lease = matches!(source.as_str(), "etcd" | "redis" | "sentinel");
    for key in [
        "node_id",
        "node_fields",
        "node_env",
        "lease_endpoints",
        "lease_url",
        "lease_sentinels",
        "lease_master",
    ]
    .into_iter()
    .chain(lease_keys.into_iter().filter(|_| !is_lease))
    {
        if r.has(key) && !belongs.contains(&key) {
            let origin = r.origin(key).cloned();
            r.fail(
                key,
                origin.as_ref(),
                format!("does not go with node_source = {source:?}"),
            );
        }
    }
    let origin = r.origin("node_source").cloned();
    match source.as_str() {
        "static" => {
            if r.has("node_id") && r.has("node_fields") {
                let origin = r.origin("node_fields").cloned();
                r.fail(
                    "node_fields",
                    origin.as_ref(),
                    "node_id and node_fields are both set; set one",
                );
                return None;
            }
            if r.has("node_fields") {
                let fields = r.get("node_fields", pairs)?;
                let origin = r.origin("node_fields").cloned();
                let mut ok = true;
                for (field, value) in &fields {
                    let known = layout.field(field).filter(|f| f.kind() == FieldKind::Node);
                    match known {
                        None => {
                            let names: Vec<_> = layout
                                .fields()
                                .iter()
                                .filter(|f| f.kind() == FieldKind::Node)
                                .map(|f| f.name().to_owned())
                                .collect();
                            r.fail(
                                "node_fields",
                                origin.as_ref(),
                                format!(
                                    "the layout has no node field {field:?} (its node fields: {})",
                                    if names.is_empty() {
                                        "none".into()
                                    } else {
                                        names.join(", ")
                                    }
                                ),
                            );
                            ok = false;
                        }
                        Some(f) if *value > f.max() => {
                            r.fail(
                                "node_fields",
                                origin.as_ref(),
                                format!("{field} = {value} is out of range (0..={})", f.max()),
                            );
                            ok = false;
                        }
                        Some(_) => {}
                    }
                }
                return ok.then_some(NodeSource::Fields(fields));
            }
            let node_id = match r.uint("node_id") {
                Some(n) => n,
                None if r.has("node_id") => return None,
                None => {
                    r.fail(
                        "node_id",
                        origin.as_ref(),
                        "node_source = \"static\" needs node_id or node_fields",
                    );
                    return None;
                }
            };
            if node_id > layout.max_node_id() {
                let origin = r.origin("node_id").cloned();
                r.fail(
                    "node_id",
                    origin.as_ref(),
                    format!(
                        "{node_id} is out of the layout's node id range (0..={})",
                        layout.max_node_id()
                    ),
                );
                return None;
            }
            Some(NodeSource::Static {
                node_id,
                from: "configured".into(),
            })
        }
        "env" => {
            let Some(var) = r.text("node_env") else {
                if !r.has("node_env") {
                    r.fail(
                        "node_env",
                        origin.as_ref(),
                        "node_source = \"env\" needs node_env, the variable's name",
                    );
                }
                return None;
            };
            match node_id::from_env(&var, layout) {
                Ok(node_id) => Some(NodeSource::Static {
                    node_id,
                    from: format!("environment variable {var}"),
                }),
                Err(e) => {
                    let origin = r.origin("node_env").cloned();
                    r.fail("node_env", origin.as_ref(), e.to_string());
                    None
                }
            }
        }
        "statefulset" => match node_id::from_statefulset(layout) {
            Ok(node_id) => Some(NodeSource::Static {
                node_id,
                from: "the StatefulSet ordinal in the host name".into(),
            }),
            Err(e) => {
                r.fail("node_source", origin.as_ref(), e.to_string());
                None
            }
        },
        "single" => Some(NodeSource::Single),
        "etcd" | "redis" | "sentinel" => {
            let store = if source == "sentinel" {
                let sentinels = r.get("lease_sentinels", list);
                let master = r.text("lease_master");
                for (key, set, what) in [
                    (
                        "lease_sentinels",
                        sentinels.is_some(),
                        "node_source = \"sentinel\" needs lease_sentinels (host:port, ...)",
                    ),
                    (
                        "lease_master",
                        master.is_some(),
                        "node_source = \"sentinel\" needs lease_master, the master name the \
                         sentinels monitor",
                    ),
                ] {
                    if !set && !r.has(key) {
                        r.fail(key, origin.as_ref(), what);
                    }
                }
                let (Some(sentinels), Some(master)) = (sentinels, master) else {
                    return None;
                };
                if sentinels.is_empty() {
                    let origin = r.origin("lease_sentinels").cloned();
                    r.fail("lease_sentinels", origin.as_ref(), "lists no sentinel");
                    return None;
                }
                LeaseStore::Sentinel { sentinels, master }
            } else if source == "etcd" {
                let Some(endpoints) = r.get("lease_endpoints", list) else {
                    if !r.has("lease_endpoints") {
                        r.fail(
                            "lease_endpoints",
                            origin.as_ref(),
                            "node_source = \"etcd\" needs lease_endpoints (http://host:port, ...)",
                        );
                    }
                    return None;
                };
                LeaseStore::Etcd(endpoints)
            } else {
                let Some(url) = r.text("lease_url") else {
                    if !r.has("lease_url") {
                        r.fail(
                            "lease_url",
                            origin.as_ref(),
                            "node_source = \"redis\" needs lease_url (redis://host:port/)",
                        );
                    }
                    return None;
                };
                if !url.starts_with("redis://") && !url.starts_with("rediss://") {
                    let origin = r.origin("lease_url").cloned();
                    r.fail(
                        "lease_url",
                        origin.as_ref(),
                        format!("{url:?} is not a redis:// URL"),
                    );
                    return None;
                }
                LeaseStore::Redis(url)
            };
            let prefix = r
                .text("lease_prefix")
                .unwrap_or_else(|| format!("flakeid/{generator}"));
            let ttl = r.duration("lease_ttl");
            let margin = r.duration("lease_margin");
            let connect_timeout = r.duration("lease_connect_timeout");
            let node_ids = r.parsed("lease_node_ids", parse_range);
            if let Some(range) = &node_ids
                && *range.end() > layout.max_node_id()
            {
                let origin = r.origin("lease_node_ids").cloned();
                r.fail(
                    "lease_node_ids",
                    origin.as_ref(),
                    format!(
                        "{}-{} reaches past the layout's node id range (0..={})",
                        range.start(),
                        range.end(),
                        layout.max_node_id()
                    ),
                );
            }
            Some(NodeSource::Lease(LeaseConfig {
                store,
                prefix,
                ttl,
                margin,
                connect_timeout,
                node_ids,
            }))
        }
        other => {
            r.fail(
                "node_source",
                origin.as_ref(),
                format!("{other:?} is not a node id source: static, env, statefulset, etcd, redis, sentinel or single"),
            );
            None
        }
    }
}
