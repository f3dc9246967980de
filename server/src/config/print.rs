//! The configuration printed as a file would say it.

use std::fmt;
use std::net::SocketAddr;

use flakeid::{OnClockBehind, OnExhausted};

use super::values::mask_password;
use super::{Config, LeaseStore, LogFormat, NodeSource};

/// The configuration as the file would say it, for `--check` and the
/// start-up log. The token is never printed.
impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addr = |a: Option<SocketAddr>| a.map_or_else(|| "off".to_owned(), |a| a.to_string());
        writeln!(f, "http_addr = {:?}", addr(self.http_addr))?;
        writeln!(f, "grpc_addr = {:?}", addr(self.grpc_addr))?;
        writeln!(f, "max_count = {}", self.max_count)?;
        writeln!(f, "max_stream_count = {}", self.max_stream_count)?;
        writeln!(f, "chunk_size = {}", self.chunk_size)?;
        writeln!(f, "wait_limit = \"{}ms\"", self.wait_limit.as_millis())?;
        if self.token.is_some() {
            writeln!(f, "# token = (set, not shown)")?;
        }
        if let Some(tls) = &self.tls {
            writeln!(f, "tls_cert = {:?}", tls.cert.display().to_string())?;
            writeln!(f, "tls_key = {:?}", tls.key.display().to_string())?;
        }
        let format = match self.log_format {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        };
        writeln!(f, "log_format = {format:?}")?;
        writeln!(f, "log_level = {:?}", self.log_level)?;
        writeln!(
            f,
            "drain_timeout = \"{}ms\"",
            self.drain_timeout.as_millis()
        )?;
        if let Some(n) = self.workers {
            writeln!(f, "workers = {n}")?;
        }
        writeln!(f, "default_generator = {:?}", self.default_generator)?;
        for (name, g) in &self.generators {
            writeln!(f, "\n[generators.{name}]")?;
            writeln!(f, "layout = {:?}", g.layout.to_string())?;
            match &g.node {
                NodeSource::Static { node_id, from } => {
                    writeln!(f, "node_id = {node_id} # {from}")?;
                }
                NodeSource::Fields(fields) => {
                    let list: Vec<_> = fields.iter().map(|(n, v)| format!("{n} = {v}")).collect();
                    writeln!(f, "node_fields = {{ {} }}", list.join(", "))?;
                }
                NodeSource::Single => writeln!(f, "node_source = \"single\"")?,
                NodeSource::Lease(lease) => {
                    match &lease.store {
                        LeaseStore::Etcd(endpoints) => {
                            writeln!(f, "lease_endpoints = {endpoints:?}")?;
                        }
                        LeaseStore::Redis(url) => {
                            writeln!(f, "lease_url = {:?}", mask_password(url))?;
                        }
                        LeaseStore::Sentinel { sentinels, master } => {
                            let sentinels: Vec<_> =
                                sentinels.iter().map(|s| mask_password(s)).collect();
                            writeln!(f, "lease_sentinels = {sentinels:?}")?;
                            writeln!(f, "lease_master = {:?}", mask_password(master))?;
                        }
                    }
                    writeln!(f, "lease_prefix = {:?}", lease.prefix)?;
                    for (key, value) in [
                        ("lease_ttl", lease.ttl),
                        ("lease_margin", lease.margin),
                        ("lease_connect_timeout", lease.connect_timeout),
                    ] {
                        if let Some(d) = value {
                            writeln!(f, "{key} = \"{}ms\"", d.as_millis())?;
                        }
                    }
                    if let Some(range) = &lease.node_ids {
                        writeln!(f, "lease_node_ids = \"{}-{}\"", range.start(), range.end())?;
                    }
                }
            }
            if let Some(p) = &g.persist {
                writeln!(f, "state_file = {:?}", p.path.display().to_string())?;
                if let Some(w) = p.window {
                    writeln!(f, "persist_window = \"{}ms\"", w.as_millis())?;
                }
            }
            writeln!(
                f,
                "on_exhausted = {:?}",
                policy_text_exhausted(g.on_exhausted)
            )?;
            writeln!(
                f,
                "on_clock_behind = {:?}",
                policy_text_behind(g.on_clock_behind)
            )?;
            if let Some(n) = g.random_start {
                writeln!(f, "random_start = {n}")?;
            }
        }
        Ok(())
    }
}

pub(super) fn policy_text_exhausted(p: OnExhausted) -> String {
    match p {
        OnExhausted::Borrow { max_ahead } => format!("borrow:{}ms", max_ahead.as_millis()),
        OnExhausted::Error => "error".into(),
        OnExhausted::NextClock => "next_clock".into(),
        _ => "wait".into(),
    }
}

pub(super) fn policy_text_behind(p: OnClockBehind) -> String {
    match p {
        OnClockBehind::Wait { max } => format!("wait:{}ms", max.as_millis()),
        OnClockBehind::Error => "error".into(),
        OnClockBehind::NextClock => "next_clock".into(),
        _ => "continue".into(),
    }
}
