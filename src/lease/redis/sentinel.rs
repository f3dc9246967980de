//! Finding the primary through Sentinel, every wait bounded.
//!
//! The redis crate's own Sentinel client (feature `sentinel`) is not used:
//! its blocking API connects to sentinels and to the master it checks with
//! no timeout and reads their answers with none, so a sentinel or a primary
//! that is paused (its kernel still accepts connections) would hang the
//! keeper for good. This follows the Sentinel client protocol with a share
//! of the request's time for each step: ask a sentinel
//! (`SENTINEL get-master-addr-by-name`), connect to the address it names,
//! and confirm with `ROLE` that the server there is a primary; if it is
//! not, or does not answer, the replicas the sentinel knows
//! (`SENTINEL replicas`), in case one was promoted and the sentinels have
//! not named it yet (they name it once they have reconfigured the other
//! replicas, a second or more later); on any failure, the next sentinel.

use std::time::{Duration, Instant};

use redis::{
    Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo, Role,
};

use crate::error::LeaseError;

/// The sentinels of one master name, and how to reach the primary they
/// name.
pub(crate) struct Sentinels {
    /// Each sentinel: a client (its address and credentials) and its
    /// address, for messages.
    sentinels: Vec<(Client, String)>,
    /// The name the sentinels monitor the primary under.
    master: String,
    /// The credentials and database for the data nodes.
    data: RedisConnectionInfo,
    /// The sentinel asked first: the last that named a primary that
    /// served.
    first: usize,
}

impl Sentinels {
    /// Sentinels at `urls` (`redis://[user:password@]host:port`, or
    /// `host:port`) watching `master`: a name, or a URL whose host is the
    /// name and whose credentials and database are the data nodes'
    /// (`redis://:password@mymaster/2`).
    pub(crate) fn new(urls: &[String], master: &str) -> Result<Sentinels, LeaseError> {
        let config = |reason: String| LeaseError::Config { reason };
        if urls.is_empty() {
            return Err(config("no sentinel addresses".into()));
        }
        let mut sentinels = Vec::with_capacity(urls.len());
        for url in urls {
            let info = parse(url).map_err(|e| config(format!("sentinel address {url}: {e}")))?;
            let ConnectionAddr::Tcp(host, port) = info.addr() else {
                return Err(config(format!(
                    "sentinel address {url}: not redis://host:port"
                )));
            };
            if info.redis_settings().db() != 0 {
                return Err(config(format!(
                    "sentinel address {url}: a sentinel has no databases (give the \
                     database in the master's URL: redis://mymaster/2)"
                )));
            }
            let name = format!("{host}:{port}");
            let client = Client::open(info).map_err(|e| config(format!("sentinel {url}: {e}")))?;
            sentinels.push((client, name));
        }
        let (master, data) = if master.contains("://") {
            let info = parse(master).map_err(|e| config(format!("master {master}: {e}")))?;
            let ConnectionAddr::Tcp(name, _) = info.addr() else {
                return Err(config(format!(
                    "master {master}: not a name or redis://name"
                )));
            };
            (name.clone(), info.redis_settings().clone())
        } else {
            (master.to_owned(), RedisConnectionInfo::default())
        };
        if master.is_empty() {
            return Err(config("the master name is empty".into()));
        }
        Ok(Sentinels {
            sentinels,
            master,
            data,
            first: 0,
        })
    }

    /// A connection to the primary, confirmed by `ROLE`, and its address;
    /// within `budget` in all. The sentinels are asked in turn from the
    /// last that served, each with a share of the time left (one share is
    /// kept for the servers it names: half for the primary, half for its
    /// replicas, one of which may have been promoted already).
    pub(crate) fn primary(
        &mut self,
        budget: Duration,
    ) -> Result<(redis::Connection, String), String> {
        let deadline = Instant::now() + budget;
        let count = self.sentinels.len();
        let mut failures = Vec::new();
        for k in 0..count {
            let i = (self.first + k) % count;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                failures.push("no time left".into());
                break;
            }
            let shares = u32::try_from(count - k + 1).unwrap_or(u32::MAX);
            let (client, name) = &self.sentinels[i];
            let (named, replicas) = match ask(client, &self.master, left / shares) {
                Ok((Some(named), replicas)) => (named, replicas),
                Ok((None, _)) => {
                    failures.push(format!("sentinel {name} knows no master {}", self.master));
                    continue;
                }
                Err(e) => {
                    failures.push(format!("sentinel {name}: {e}"));
                    continue;
                }
            };
            // This sentinel's share: half for the primary it names, the
            // rest for its replicas, each in turn.
            let left = deadline.saturating_duration_since(Instant::now());
            let share = left / u32::try_from(count - k).unwrap_or(u32::MAX);
            let (for_named, each) = match u32::try_from(replicas.len()) {
                Ok(0) => (share, Duration::ZERO),
                Ok(n) => (share / 2, share / 2 / n),
                Err(_) => (share / 2, Duration::ZERO),
            };
            let candidates = std::iter::once(&named).chain(&replicas);
            for (j, addr) in candidates.enumerate() {
                let timeout = if j == 0 { for_named } else { each };
                match self.confirm(addr, timeout) {
                    Ok(connection) => {
                        self.first = i;
                        return Ok((connection, format!("{}:{}", addr.0, addr.1)));
                    }
                    Err(e) if j == 0 => failures.push(format!(
                        "{}:{} (named by sentinel {name}): {e}",
                        addr.0, addr.1
                    )),
                    // A replica that is one: not worth a message each.
                    Err(_) => {}
                }
            }
        }
        Err(failures.join("; "))
    }

    /// The primary last reached did not serve (it answered that it is a
    /// replica, or too few replicas acknowledged): ask another sentinel
    /// first next time, in case the one that named it is behind.
    pub(crate) fn distrust(&mut self) {
        self.first = (self.first + 1) % self.sentinels.len();
    }

    /// Connects to `addr` and confirms it is a primary, within `timeout`.
    fn confirm(
        &self,
        addr: &(String, u16),
        timeout: Duration,
    ) -> redis::RedisResult<redis::Connection> {
        let begun = Instant::now();
        let info = ConnectionAddr::Tcp(addr.0.clone(), addr.1)
            .into_connection_info()?
            .set_redis_settings(self.data.clone());
        let mut connection = super::connect(&Client::open(info)?, timeout)?;
        let left = at_least_1ms(timeout.saturating_sub(begun.elapsed()));
        connection.set_read_timeout(Some(left))?;
        connection.set_write_timeout(Some(left))?;
        match redis::cmd("ROLE").query::<Role>(&mut connection)? {
            Role::Primary { .. } => Ok(connection),
            _ => Err(redis::RedisError::from((
                redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
                "not a primary",
                "ROLE answered that it is a replica".to_owned(),
            ))),
        }
    }
}

/// Asks one sentinel for the primary's address and those of the replicas
/// it sees up (neither down nor disconnected), within `timeout`.
fn ask(
    client: &Client,
    master: &str,
    timeout: Duration,
) -> redis::RedisResult<(Option<Addr>, Vec<Addr>)> {
    let begun = Instant::now();
    let mut connection = super::connect(client, timeout)?;
    let left = at_least_1ms(timeout.saturating_sub(begun.elapsed()));
    connection.set_read_timeout(Some(left))?;
    connection.set_write_timeout(Some(left))?;
    let reply: Option<(String, String)> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(master)
        .query(&mut connection)?;
    let Some((host, port)) = reply else {
        return Ok((None, Vec::new()));
    };
    let named = (host, parse_port(&port)?);
    // Each replica: a flat list of field names and values.
    let listed: Vec<Vec<String>> = redis::cmd("SENTINEL")
        .arg("replicas")
        .arg(master)
        .query(&mut connection)
        .unwrap_or_default();
    let mut replicas = Vec::new();
    for fields in listed {
        let field = |name: &str| {
            fields
                .chunks_exact(2)
                .find(|pair| pair[0] == name)
                .map(|pair| pair[1].as_str())
        };
        let flags = field("flags").unwrap_or("");
        if flags.contains("down") || flags.contains("disconnected") {
            continue;
        }
        if let (Some(ip), Some(port)) = (field("ip"), field("port")) {
            let addr = (ip.to_owned(), parse_port(port)?);
            if addr != named {
                replicas.push(addr);
            }
        }
    }
    Ok((Some(named), replicas))
}

fn parse_port(port: &str) -> redis::RedisResult<u16> {
    port.parse::<u16>().map_err(|_| {
        redis::RedisError::from((
            redis::ErrorKind::Parse,
            "a port that is not a number",
            port.to_owned(),
        ))
    })
}

/// A data node's host and port.
type Addr = (String, u16);

/// A zero socket timeout is refused: at least 1 ms.
fn at_least_1ms(d: Duration) -> Duration {
    d.max(Duration::from_millis(1))
}

/// `redis://...` or `host:port`.
fn parse(url: &str) -> redis::RedisResult<ConnectionInfo> {
    if url.contains("://") {
        url.into_connection_info()
    } else {
        format!("redis://{url}").into_connection_info()
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_master_urls_are_read() {
        let s = Sentinels::new(
            &["redis://s1:26379".into(), "s2:26380".into()],
            "redis://app:pw@orders/3",
        )
        .unwrap();
        let names: Vec<&str> = s.sentinels.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(
            (s.master.as_str(), names),
            ("orders", vec!["s1:26379", "s2:26380"])
        );
        assert_eq!(s.data.db(), 3);
        assert_eq!(s.data.password(), Some("pw"));
        let plain = Sentinels::new(&["s1:26379".into()], "orders").unwrap();
        assert_eq!(plain.master, "orders");
        assert_eq!(plain.data.db(), 0);
        let reason = |r: Result<Sentinels, LeaseError>| match r {
            Err(LeaseError::Config { reason }) => reason,
            Err(other) => panic!("expected a configuration error, got {other:?}"),
            Ok(_) => panic!("expected a configuration error"),
        };
        assert!(reason(Sentinels::new(&[], "m")).contains("no sentinel"));
        assert!(reason(Sentinels::new(&["redis://s1:26379/2".into()], "m")).contains("databases"));
        assert!(reason(Sentinels::new(&["s1:26379".into()], "")).contains("empty"));
    }
}
