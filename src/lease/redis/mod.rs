//! Node-id leases on Redis: node keys set with a `PX` expiry, claimed,
//! renewed and released by Lua scripts that check ownership, so each step is
//! one atomic round trip; on one server (`Lease::redis`) or on the primary
//! that Sentinel names (`Lease::redis_sentinel`, found by `sentinel.rs`).
//!
//! Marks are decimal strings compared as such (length first), so no value
//! passes through Lua's floating-point numbers.
//!
//! A failover can lose writes the old primary acknowledged (replication is
//! asynchronous), and a deposed primary may go on answering for a while.
//! Two rules keep leases unique through that:
//!
//! - **WAIT**: a claim or renewal counts only once `acks` replicas have
//!   acknowledged it (`WAIT`, pipelined after the script): what a fence
//!   relies on is on that many replicas, and a primary that lost them (a
//!   deposed one) extends nobody's fence.
//! - **The epoch** (Sentinel leases): `<prefix>:epoch` names the
//!   replication id of the primary serving the lease data, when (by that
//!   primary's clock) it first did so with `acks` replicas online, and the
//!   longest TTL in use then. A claim on a primary new to the data (after a
//!   failover or a restart) starts a new epoch, and every claim in an
//!   epoch's first stretch (that TTL, or the claimer's if longer) waits
//!   until it is over (the Chubby rule): by then every lease another
//!   primary could have acknowledged has ended, lost or not. The TTLs in
//!   use are recorded by every claim and renewal in `<prefix>:ttls` (each
//!   TTL and the latest time a lease of it may last until).

mod sentinel;

use std::time::{Duration, Instant};

use redis::{
    Client, Connection, ErrorKind, FromRedisValue, RedisError, Script, ServerErrorKind, Value,
};

use self::sentinel::Sentinels;
use super::keeper::{Ask, CallLimit, Claim, Claimed, Settings, Skipped, Store, ttl_ms};
use crate::error::LeaseError;
#[cfg(any(test, flakeid_plant))]
use crate::plant::Plant;

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

/// The store's clock (`TIME`) in Unix milliseconds; and the record of
/// TTLs in use under the prefix: the hash `ttls` maps each TTL (ms) that a
/// claim or renewal used to the latest time a lease of it may last until
/// (that claim's or renewal's time plus the TTL), never lowered. `ttls` is
/// `''` where no epoch rule needs it (one server).
const TTLS: &str = r"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function note_ttl(ttls, ttl, now)
  if ttls == '' then return end
  local till = now + tonumber(ttl)
  local kept = tonumber(redis.call('HGET', ttls, ttl))
  if not kept or kept < till then
    redis.call('HSET', ttls, ttl, string.format('%d', till))
  end
end
";

/// The epoch rule: how many milliseconds a claim must wait before its
/// holder may issue, by the primary's own clock (`TIME`), or an error if
/// this server is not a primary or a new epoch cannot start yet (fewer
/// than `replicas` replicas online: until then the primary it replaced may
/// still have its replicas, and acknowledge renewals). A new epoch waits
/// out the longest of the claimer's TTL and every TTL the record `ttls`
/// shows in use within twice that TTL; a claim in it waits until its start
/// plus the longer of that and its own TTL. Replication ids need Redis 4.
const EPOCH: &str = r"
local function epoch_wait(prefix, ttl, replicas, ttls)
  local info = redis.call('INFO', 'replication')
  if not string.find(info, 'role:master', 1, true) then
    return redis.error_reply('READONLY flakeid: this server is not the primary')
  end
  local replid = string.match(info, 'master_replid:(%w+)')
  if not replid then
    return redis.error_reply('FLAKEID_NO_REPLID INFO replication names no master_replid')
  end
  local now = now_ms()
  local key = prefix .. ':epoch'
  local epoch = redis.call('HMGET', key, 'replid', 'since', 'longest')
  if epoch[1] == replid and epoch[2] then
    local longest = math.max(ttl, tonumber(epoch[3]) or 0)
    local wait = tonumber(epoch[2]) + longest - now
    if wait > 0 then return wait end
    return 0
  end
  local online = 0
  for _ in string.gmatch(info, 'state=online') do online = online + 1 end
  if online < replicas then
    return redis.error_reply('FLAKEID_REPLICAS ' .. online .. ' of ' .. replicas ..
      ' replicas online: no new epoch yet')
  end
  local longest = ttl
  if ttls ~= '' then
    local kept = redis.call('HGETALL', ttls)
    for i = 1, #kept, 2 do
      local t, till = tonumber(kept[i]), tonumber(kept[i + 1])
      if t and till and t > longest and till + t > now then longest = t end
    end
  end
  redis.call('HSET', key, 'replid', replid, 'since', string.format('%d', now),
    'longest', string.format('%d', longest))
  return longest
end
";

/// ARGV: prefix, first, last, token, ttl ms, fresh-before ms ('' for any),
/// ceiling ms, usable-until ms, how many skipped node ids to name, the
/// replicas an epoch needs ('' for no epoch rule), the TTL record's key
/// ('' for none). Claims the lowest node id whose node key is absent, whose
/// mark is before fresh-before and not after usable-until, raising its mark
/// to the ceiling, and notes its TTL in the record. Returns {node, mark
/// found, mark now, skipped, wait ms, skipped node, its mark, ...} with
/// node, marks '' if none could be claimed; `skipped` counts the free node
/// ids passed over for a mark after usable-until; `wait` is the epoch
/// rule's.
const CLAIM: &str = r"
local prefix, first, last = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local token, ttl, fresh, ceiling = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local usable, shown, ttls = ARGV[8], tonumber(ARGV[9]), ARGV[11]
local wait = 0
if ARGV[10] ~= '' then
  wait = epoch_wait(prefix, tonumber(ttl), tonumber(ARGV[10]), ttls)
  if type(wait) == 'table' then return wait end
end
wait = string.format('%d', wait)
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
        note_ttl(ttls, ttl, now_ms())
        return {id, mark, now, string.format('%d', count), wait, unpack(skipped)}
      end
    end
  end
end
return {'', '', '', string.format('%d', count), wait, unpack(skipped)}
";

/// ARGV: prefix, ttl ms, the replicas an epoch needs, the TTL record's
/// key. The epoch rule alone: the wait a claim would have now.
const TOUCH: &str = r"
return epoch_wait(ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4])
";

/// KEYS: node key, mark key. ARGV: token, ttl ms, ceiling ms, the TTL
/// record's key ('' for none). 1 if renewed (its TTL noted in the record),
/// 0 if the node key is not this holder's.
const RENEW: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
note_ttl(ARGV[4], ARGV[2], now_ms())
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

/// Where a Redis lease's primary is.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// One server, at this URL (`Lease::redis`).
    Server(String),
    /// The primary that these sentinels (URLs or `host:port`) name for this
    /// master (`Lease::redis_sentinel`).
    Sentinel(Vec<String>, String),
}

/// What a Redis lease asks for besides its terms.
#[derive(Debug, Clone)]
pub(crate) struct RedisConfig {
    pub(crate) target: Target,
    /// Replicas that must acknowledge each claim and renewal (`WAIT`; 0:
    /// none). `None`: 1 behind Sentinel, 0 on one server.
    pub(crate) acks: Option<u32>,
}

impl RedisConfig {
    /// The replicas that must acknowledge, as configured or by default.
    pub(crate) fn acks(&self) -> u32 {
        self.acks.unwrap_or(match self.target {
            Target::Server(_) => 0,
            Target::Sentinel(..) => 1,
        })
    }
}

/// How a store reaches its primary.
/// Connects to the server `client` names within `timeout`. redis-rs
/// bounds each reply of a connection's setup by the whole timeout, and its
/// setup sends `CLIENT SETINFO` (two replies) besides `AUTH` and `SELECT`:
/// a server that accepts and never answers held a connection for a
/// multiple of the timeout. `CLIENT SETINFO` is not sent, and the timeout is
/// shared among the replies that remain.
pub(super) fn connect(client: &Client, timeout: Duration) -> redis::RedisResult<Connection> {
    let info = client.get_connection_info().clone();
    let setup = info.redis_settings().clone().set_skip_set_lib_name();
    let replies = u32::from(setup.password().is_some()) + u32::from(setup.db() != 0);
    let info = info.set_redis_settings(setup);
    let timeout = (timeout / replies.max(1)).max(Duration::from_millis(1));
    Client::open(info)?.get_connection_with_timeout(timeout)
}

enum Primary {
    Server(Client),
    Sentinel(Sentinels),
}

pub(crate) struct RedisStore {
    primary: Primary,
    server: String,
    /// Connected lazily, and again after an error; with the address it
    /// reached (behind Sentinel), for messages.
    connection: Option<(Connection, Option<String>)>,
    prefix: String,
    ttl_ms: u64,
    /// Bounds each call.
    limit: CallLimit,
    token: String,
    /// Replicas that must acknowledge each claim and renewal (0: none).
    acks: u32,
    /// The epoch rule is on (behind Sentinel).
    epoch: bool,
    /// A bug planted on purpose (`crate::plant`).
    #[cfg(any(test, flakeid_plant))]
    plant: Option<Plant>,
    claim: Script,
    renew: Script,
    release: Script,
    touch: Script,
}

impl RedisStore {
    pub(crate) fn new(
        config: &RedisConfig,
        prefix: &str,
        settings: &Settings,
        token: String,
    ) -> Result<RedisStore, LeaseError> {
        let primary = match &config.target {
            Target::Server(url) => {
                Primary::Server(Client::open(url.as_str()).map_err(|e| LeaseError::Config {
                    reason: format!("redis URL: {e}"),
                })?)
            }
            Target::Sentinel(sentinels, master) => {
                Primary::Sentinel(Sentinels::new(sentinels, master)?)
            }
        };
        if settings.last > MAX_NODE_ID {
            return Err(LeaseError::Config {
                reason: format!(
                    "node ids up to {} are more than a Redis lease can scan (up to {MAX_NODE_ID})",
                    settings.last
                ),
            });
        }
        Ok(RedisStore {
            epoch: matches!(primary, Primary::Sentinel(_)),
            primary,
            server: settings.server.clone(),
            connection: None,
            prefix: prefix.to_owned(),
            ttl_ms: ttl_ms(settings.ttl),
            limit: CallLimit {
                timeout: settings.connect_timeout,
                deadline: None,
            },
            token,
            acks: config.acks(),
            #[cfg(any(test, flakeid_plant))]
            plant: settings.plant,
            claim: Script::new(&format!("{LESS}{TTLS}{EPOCH}{CLAIM}")),
            renew: Script::new(&format!("{LESS}{TTLS}{RENEW}")),
            release: Script::new(&format!("{LESS}{RELEASE}")),
            touch: Script::new(&format!("{TTLS}{EPOCH}{TOUCH}")),
        })
    }

    /// The key of the record of TTLs in use under the prefix, which the
    /// epoch rule reads (`''` without the rule).
    fn ttls_key(&self) -> String {
        #[cfg(any(test, flakeid_plant))]
        if self.plant == Some(Plant::EpochOwnTtl) {
            return String::new();
        }
        match self.epoch {
            true => format!("{}:ttls", self.prefix),
            false => String::new(),
        }
    }

    fn keys(&self, node: u64) -> (String, String) {
        (
            format!("{}:node:{node}", self.prefix),
            format!("{}:mark:{node}", self.prefix),
        )
    }

    /// Runs one request on the connection (made first if needed: behind
    /// Sentinel, by asking the sentinels for the primary), all within the
    /// budget: the socket timeouts are what is left of it, which `run` is
    /// also told (for `WAIT`).
    fn call<T>(
        &mut self,
        what: &str,
        run: impl FnOnce(&mut Connection, Duration) -> redis::RedisResult<T>,
    ) -> Result<T, LeaseError> {
        let begun = Instant::now();
        let budget = self.limit.budget();
        if budget.is_zero() {
            return Err(self.unreachable(what, "no time left".into()));
        }
        if self.connection.is_none() {
            let connected = match &mut self.primary {
                Primary::Server(client) => connect(client, budget)
                    .map(|c| (c, None))
                    .map_err(|e| (Some(e), String::new())),
                Primary::Sentinel(sentinels) => sentinels
                    .primary(budget)
                    .map(|(c, addr)| (c, Some(addr)))
                    .map_err(|reason| (None, reason)),
            };
            self.connection = Some(match connected {
                Ok(connection) => connection,
                Err((Some(e), _)) => return Err(self.error("connect", &e)),
                Err((None, reason)) => {
                    return Err(self.unreachable("find the primary", reason));
                }
            });
            if self.epoch {
                self.touch_epoch(budget.saturating_sub(begun.elapsed()))?;
            }
        }
        let left = budget.saturating_sub(begun.elapsed());
        let Some((connection, _)) = &mut self.connection else {
            return Err(self.unreachable("connect", "no connection".into()));
        };
        // (A zero socket timeout is refused: at least 1 ms.)
        let left = left.max(Duration::from_millis(1));
        let timeouts = connection
            .set_read_timeout(Some(left))
            .and_then(|()| connection.set_write_timeout(Some(left)));
        match timeouts.and_then(|()| run(connection, left)) {
            Ok(reply) => Ok(reply),
            Err(e) => Err(self.error(what, &e)),
        }
    }

    /// Starts the epoch of the primary just reached if it is new to the
    /// lease data and has its replicas (else a claim will), so that claims
    /// after a failover wait from as early as they can.
    fn touch_epoch(&mut self, left: Duration) -> Result<(), LeaseError> {
        let ttls = self.ttls_key();
        let Some((connection, _)) = &mut self.connection else {
            return Ok(());
        };
        let left = left.max(Duration::from_millis(1));
        let mut eval = redis::cmd("EVALSHA");
        eval.arg(self.touch.get_hash())
            .arg(0)
            .arg(&self.prefix)
            .arg(self.ttl_ms)
            .arg(self.acks)
            .arg(ttls);
        let touched = connection
            .set_read_timeout(Some(left))
            .and_then(|()| connection.set_write_timeout(Some(left)))
            .and_then(|()| with_script(connection, &self.touch, |c| eval.query::<i64>(c)));
        match touched {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some("FLAKEID_REPLICAS") => Ok(()),
            Err(e) => Err(self.error("start the epoch", &e)),
        }
    }

    /// Runs `script` with `keys` and `args` and, if replicas must
    /// acknowledge, `WAIT` in the same round trip; the reply and how many
    /// replicas acknowledged (0 if none must).
    fn acked<T: FromRedisValue>(
        &mut self,
        what: &str,
        script: &Script,
        keys: &[String],
        args: &[String],
    ) -> Result<(T, u32), LeaseError> {
        let acks = self.acks;
        let mut eval = redis::cmd("EVALSHA");
        eval.arg(script.get_hash())
            .arg(keys.len())
            .arg(keys)
            .arg(args);
        let (reply, acked) = self.call(what, |c, left| {
            with_script(c, script, |c| {
                if acks == 0 {
                    return eval.query::<T>(c).map(|reply| (reply, 0));
                }
                // WAIT's own timeout ends before the socket's, so a short
                // count is an answer, not a broken connection. (0 would be
                // no timeout at all.)
                let wait_ms = (left.as_millis() * 3 / 4).clamp(1, u128::from(u32::MAX));
                let mut wait = redis::cmd("WAIT");
                wait.arg(acks).arg(wait_ms as u64);
                // Each reply on its own, so that the script's error is the
                // script's (with its code), not a pipeline's.
                let replies: Vec<Value> = redis::pipe()
                    .add_command(eval.clone())
                    .add_command(wait)
                    .ignore_errors()
                    .query(c)?;
                let [reply, acked] = <[Value; 2]>::try_from(replies).map_err(|replies| {
                    RedisError::from((
                        ErrorKind::UnexpectedReturnType,
                        "a script and WAIT answered",
                        format!("{replies:?}"),
                    ))
                })?;
                let reply = redis::from_redis_value::<T>(reply.extract_error()?)?;
                let acked = redis::from_redis_value::<u32>(acked.extract_error()?)?;
                Ok((reply, acked))
            })
        })?;
        #[cfg(any(test, flakeid_plant))]
        let acked = if self.plant == Some(Plant::WaitShortCounted) {
            acks
        } else {
            acked
        };
        Ok((reply, acked))
    }

    /// Fewer replicas than needed acknowledged `what`: it counts for
    /// nothing, and behind Sentinel the primary is looked up again.
    fn short_of_acks(&mut self, what: &str, acked: u32) -> LeaseError {
        let reason = format!("{acked} of {} replicas acknowledged it in time", self.acks);
        self.unreachable(what, reason)
    }

    fn unreachable(&mut self, what: &str, reason: String) -> LeaseError {
        let at = self.connection.take().and_then(|(_, addr)| addr);
        if let Primary::Sentinel(sentinels) = &mut self.primary {
            sentinels.distrust();
        }
        let at = at.map_or_else(String::new, |addr| format!(" (primary {addr})"));
        LeaseError::Unreachable {
            server: self.server.clone(),
            waited: self.limit.timeout,
            reason: format!("{what}{at}: {reason}"),
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
        let sentinel = matches!(self.primary, Primary::Sentinel(_));
        match e.kind() {
            // Still loading its data after a restart, or failing over.
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                | ServerErrorKind::TryAgain
                | ServerErrorKind::MasterDown
                | ServerErrorKind::ClusterDown,
            ) => self.unreachable(what, e.to_string()),
            // Behind Sentinel, a primary demoted (or not yet promoted), or
            // one with too few replicas (`min-replicas-to-write`, or too
            // few online to start an epoch): ask the sentinels again.
            ErrorKind::Server(ServerErrorKind::ReadOnly) if sentinel => {
                self.unreachable(what, e.to_string())
            }
            _ if sentinel && matches!(e.code(), Some("NOREPLICAS" | "FLAKEID_REPLICAS")) => {
                self.unreachable(what, e.to_string())
            }
            ErrorKind::Parse | ErrorKind::UnexpectedReturnType => LeaseError::BadReply { reason },
            ErrorKind::InvalidClientConfig => LeaseError::Config { reason },
            _ if e.code() == Some("FLAKEID_BAD_MARK") => LeaseError::BadReply { reason },
            _ => LeaseError::Refused { reason },
        }
    }
}

/// Runs `run`, loading `script` first if the server does not know it.
fn with_script<T>(
    c: &mut Connection,
    script: &Script,
    run: impl Fn(&mut Connection) -> redis::RedisResult<T>,
) -> redis::RedisResult<T> {
    match run(c) {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            script.load(c)?;
            run(c)
        }
        other => other,
    }
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
        let fresh = ask
            .fresh_before_ms
            .map_or_else(String::new, |ms| ms.to_string());
        let epoch = if self.epoch {
            self.acks.to_string()
        } else {
            String::new()
        };
        let args = [
            self.prefix.clone(),
            ask.first.to_string(),
            ask.last.to_string(),
            self.token.clone(),
            self.ttl_ms.to_string(),
            fresh,
            ask.ceiling_ms.to_string(),
            ask.usable_until_ms.to_string(),
            Skipped::SHOWN.to_string(),
            epoch,
            self.ttls_key(),
        ];
        let script = self.claim.clone();
        let what = "claim a node id";
        let (reply, acked): (Vec<String>, u32) = self.acked(what, &script, &[], &args)?;
        let [node, mark, now, count, wait, named @ ..] = reply.as_slice() else {
            return Err(LeaseError::BadReply {
                reason: format!("the claim script answered {reply:?}"),
            });
        };
        if acked < self.acks {
            // Not on the replicas: a failover could lose it, so it counts
            // for nothing. Give it back if we can (else it expires).
            if let Ok(node) = node.parse::<u64>() {
                let (node_key, mark_key) = self.keys(node);
                let _ = self.release_keys(node_key, mark_key, None);
            }
            return Err(self.short_of_acks(what, acked));
        }
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
        match parse_mark("the wait", wait)? {
            0 => Ok(Claimed::Node(claim, skipped)),
            ms => Ok(Claimed::NodeAfter(
                claim,
                skipped,
                Duration::from_millis(ms),
            )),
        }
    }

    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError> {
        let (node_key, mark_key) = self.keys(claim.node);
        let args = [
            self.token.clone(),
            self.ttl_ms.to_string(),
            ceiling_ms.to_string(),
            self.ttls_key(),
        ];
        let script = self.renew.clone();
        let what = "renew the lease";
        let (renewed, acked): (i64, u32) =
            self.acked(what, &script, &[node_key, mark_key], &args)?;
        if renewed == 1 && acked < self.acks {
            return Err(self.short_of_acks(what, acked));
        }
        Ok(renewed == 1)
    }

    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError> {
        let (node_key, mark_key) = self.keys(claim.node);
        self.release_keys(node_key, mark_key, mark_ms)
    }
}

impl RedisStore {
    /// Deletes the node key if it is this holder's, first setting the mark
    /// at `mark_key` to `mark_ms` if given.
    fn release_keys(
        &mut self,
        node_key: String,
        mark_key: String,
        mark_ms: Option<u64>,
    ) -> Result<(), LeaseError> {
        let script = self.release.clone();
        let token = self.token.clone();
        let mark = mark_ms.map_or_else(String::new, |ms| ms.to_string());
        let _: i64 = self.call("release the node id", |c, _| {
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
