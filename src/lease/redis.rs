//! Node-id leases on Redis: node keys set with a `PX` expiry, claimed,
//! renewed and released by Lua scripts that check ownership, so each step is
//! one atomic round trip.
//!
//! Marks are decimal strings compared as such (length first), so no value
//! passes through Lua's floating-point numbers.

use std::time::{Duration, Instant};

use redis::{Client, Connection, ErrorKind, RedisError, Script, ServerErrorKind};

use super::keeper::{Ask, CallLimit, Claim, Claimed, Settings, Skipped, Store};
use crate::LeaseError;

/// Shared by the scripts: `a < b` for decimal strings without leading zeros.
const LESS: &str = r"
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
local function mark_of(key)
  local mark = redis.call('GET', key)
  if not mark then return '0' end
  if not string.match(mark, '^%d+$') or (#mark > 1 and string.sub(mark, 1, 1) == '0') then
    return redis.error_reply('FLAKEID_BAD_MARK ' .. key .. ' holds ' .. mark)
  end
  return mark
end
";

/// ARGV: prefix, first, last, token, ttl ms, fresh-before ms ('' for any),
/// ceiling ms, usable-until ms, how many skipped node ids to name. Claims the
/// lowest node id whose node key is absent, whose mark is before
/// fresh-before and not after usable-until, raising its mark to the ceiling.
/// Returns {node, mark found, mark now, skipped, skipped node, its mark, ...}
/// with node, marks '' if none could be claimed; `skipped` counts the free
/// node ids passed over for a mark after usable-until.
const CLAIM: &str = r"
local prefix, first, last = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local token, ttl, fresh, ceiling = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local usable, shown = ARGV[8], tonumber(ARGV[9])
local skipped = {}
local count = 0
for node = first, last do
  local id = string.format('%d', node)
  local node_key = prefix .. ':node:' .. id
  if redis.call('EXISTS', node_key) == 0 then
    local mark_key = prefix .. ':mark:' .. id
    local mark = mark_of(mark_key)
    if type(mark) == 'table' then return mark end
    if fresh == '' or less(mark, fresh) then
      if less(usable, mark) then
        count = count + 1
        if count <= shown then
          table.insert(skipped, id)
          table.insert(skipped, mark)
        end
      else
        redis.call('SET', node_key, token, 'NX', 'PX', ttl)
        local now = mark
        if less(mark, ceiling) then now = ceiling end
        redis.call('SET', mark_key, now)
        return {id, mark, now, string.format('%d', count), unpack(skipped)}
      end
    end
  end
end
return {'', '', '', string.format('%d', count), unpack(skipped)}
";

/// KEYS: node key, mark key. ARGV: token, ttl ms, ceiling ms. 1 if renewed,
/// 0 if the node key is not this holder's.
const RENEW: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local mark = mark_of(KEYS[2])
if type(mark) == 'table' then return mark end
if less(mark, ARGV[3]) then redis.call('SET', KEYS[2], ARGV[3]) end
return 1
";

/// KEYS: node key, mark key. ARGV: token, exact mark ms ('' to keep it).
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('DEL', KEYS[1])
return 1
";

/// Node ids the claim script can name exactly (Lua numbers are doubles and
/// print as integers up to 2^53).
const MAX_NODE_ID: u64 = 1 << 48;

pub(crate) struct RedisStore {
    client: Client,
    server: String,
    /// Connected lazily, and again after an I/O error.
    connection: Option<Connection>,
    prefix: String,
    ttl_ms: u64,
    /// Bounds each call.
    limit: CallLimit,
    token: String,
    claim: Script,
    renew: Script,
    release: Script,
}

impl RedisStore {
    pub(crate) fn new(
        url: &str,
        prefix: &str,
        settings: &Settings,
        token: String,
    ) -> Result<RedisStore, LeaseError> {
        let client = Client::open(url).map_err(|e| LeaseError::Config {
            reason: format!("redis URL: {e}"),
        })?;
        if settings.last > MAX_NODE_ID {
            return Err(LeaseError::Config {
                reason: format!(
                    "node ids up to {} are more than a Redis lease can scan (up to {MAX_NODE_ID})",
                    settings.last
                ),
            });
        }
        Ok(RedisStore {
            client,
            server: settings.server.clone(),
            connection: None,
            prefix: prefix.to_owned(),
            ttl_ms: ttl_ms(settings.ttl),
            limit: CallLimit {
                timeout: settings.connect_timeout,
                deadline: None,
            },
            token,
            claim: Script::new(&format!("{LESS}{CLAIM}")),
            renew: Script::new(&format!("{LESS}{RENEW}")),
            release: Script::new(&format!("{LESS}{RELEASE}")),
        })
    }

    fn keys(&self, node: u64) -> (String, String) {
        (
            format!("{}:node:{node}", self.prefix),
            format!("{}:mark:{node}", self.prefix),
        )
    }

    /// Runs one script call on the connection (made first if needed), all
    /// within the budget: the socket timeouts are what is left of it.
    fn call<T>(
        &mut self,
        what: &str,
        run: impl FnOnce(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, LeaseError> {
        let begun = Instant::now();
        let budget = self.limit.budget();
        if budget.is_zero() {
            return Err(self.unreachable(what, "no time left".into()));
        }
        if self.connection.is_none() {
            let connection = self
                .client
                .get_connection_with_timeout(budget)
                .map_err(|e| self.error("connect", &e))?;
            self.connection = Some(connection);
        }
        let left = budget.saturating_sub(begun.elapsed());
        let Some(connection) = &mut self.connection else {
            return Err(self.unreachable("connect", "no connection".into()));
        };
        // (A zero socket timeout is refused: at least 1 ms.)
        let left = left.max(Duration::from_millis(1));
        let timeouts = connection
            .set_read_timeout(Some(left))
            .and_then(|()| connection.set_write_timeout(Some(left)));
        match timeouts.and_then(|()| run(connection)) {
            Ok(reply) => Ok(reply),
            Err(e) => Err(self.error(what, &e)),
        }
    }

    fn unreachable(&mut self, what: &str, reason: String) -> LeaseError {
        self.connection = None;
        LeaseError::Unreachable {
            server: self.server.clone(),
            waited: self.limit.timeout,
            reason: format!("{what}: {reason}"),
        }
    }

    /// Sorts a Redis error into the kinds a keeper tells apart.
    fn error(&mut self, what: &str, e: &RedisError) -> LeaseError {
        let reason = format!("{what}: {e}");
        if e.is_io_error()
            || e.is_timeout()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
        {
            return self.unreachable(what, e.to_string());
        }
        match e.kind() {
            // Still loading its data after a restart, or failing over.
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                | ServerErrorKind::TryAgain
                | ServerErrorKind::MasterDown
                | ServerErrorKind::ClusterDown,
            ) => self.unreachable(what, e.to_string()),
            ErrorKind::Parse | ErrorKind::UnexpectedReturnType => LeaseError::BadReply { reason },
            ErrorKind::InvalidClientConfig => LeaseError::Config { reason },
            _ if e.code() == Some("FLAKEID_BAD_MARK") => LeaseError::BadReply { reason },
            _ => LeaseError::Refused { reason },
        }
    }
}

/// The TTL sent to Redis (`PX`): whole milliseconds, rounded up, so a key
/// never expires before the fence (which keeps to the exact TTL) closes.
fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// A mark as the scripts return it.
fn parse_mark(what: &str, value: &str) -> Result<u64, LeaseError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(LeaseError::BadReply {
            reason: format!("{what} is {value:?}, not a Unix millisecond"),
        });
    }
    value.parse().map_err(|_| LeaseError::BadReply {
        reason: format!("{what} {value} does not fit 64 bits"),
    })
}

impl Store for RedisStore {
    fn set_timeout(&mut self, timeout: Duration) {
        self.limit.timeout = timeout;
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.limit.deadline = deadline;
    }

    fn claim(&mut self, ask: &Ask) -> Result<Claimed, LeaseError> {
        let script = self.claim.clone();
        let (prefix, token, ttl) = (self.prefix.clone(), self.token.clone(), self.ttl_ms);
        let fresh = ask
            .fresh_before_ms
            .map_or_else(String::new, |ms| ms.to_string());
        let reply: Vec<String> = self.call("claim a node id", |c| {
            script
                .arg(prefix)
                .arg(ask.first)
                .arg(ask.last)
                .arg(token)
                .arg(ttl)
                .arg(fresh)
                .arg(ask.ceiling_ms)
                .arg(ask.usable_until_ms)
                .arg(Skipped::SHOWN)
                .invoke(c)
        })?;
        let [node, mark, now, count, named @ ..] = reply.as_slice() else {
            return Err(LeaseError::BadReply {
                reason: format!("the claim script answered {reply:?}"),
            });
        };
        let mut skipped = Skipped {
            count: parse_mark("the count of skipped node ids", count)?,
            lowest: Vec::new(),
        };
        for pair in named.chunks(2) {
            let [node, mark] = pair else {
                return Err(LeaseError::BadReply {
                    reason: format!("the claim script answered {reply:?}"),
                });
            };
            skipped.lowest.push((
                parse_mark("a skipped node id", node)?,
                parse_mark("a skipped node id's mark", mark)?,
            ));
        }
        if node.is_empty() {
            return Ok(Claimed::None(skipped));
        }
        let claim = Claim {
            node: parse_mark("the claimed node id", node)?,
            mark_ms: parse_mark("the mark found", mark)?,
            ceiling_ms: parse_mark("the mark recorded", now)?,
            handle: 0,
        };
        Ok(Claimed::Node(claim, skipped))
    }

    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError> {
        let script = self.renew.clone();
        let (node_key, mark_key) = self.keys(claim.node);
        let (token, ttl) = (self.token.clone(), self.ttl_ms);
        let renewed: i64 = self.call("renew the lease", |c| {
            script
                .key(node_key)
                .key(mark_key)
                .arg(token)
                .arg(ttl)
                .arg(ceiling_ms)
                .invoke(c)
        })?;
        Ok(renewed == 1)
    }

    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError> {
        let script = self.release.clone();
        let (node_key, mark_key) = self.keys(claim.node);
        let token = self.token.clone();
        let mark = mark_ms.map_or_else(String::new, |ms| ms.to_string());
        let _: i64 = self.call("release the node id", |c| {
            script
                .key(node_key)
                .key(mark_key)
                .arg(token)
                .arg(mark)
                .invoke(c)
        })?;
        Ok(())
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_sub_millisecond_ttl_is_rounded_up_not_down() {
        assert_eq!(ttl_ms(Duration::from_millis(1_000)), 1_000);
        assert_eq!(ttl_ms(Duration::from_micros(1_000_500)), 1_001);
        assert_eq!(ttl_ms(Duration::from_nanos(100_000_001)), 101);
        assert_eq!(ttl_ms(Duration::MAX), u64::MAX);
    }
}
