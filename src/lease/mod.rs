//! Node ids leased from etcd, Redis, PostgreSQL or MySQL/MariaDB, with
//! fencing (features `etcd`, `redis`, `postgres`, `mysql`): unique node ids
//! for services whose processes come and go.
//!
//! # Where node ids come from
//!
//! IDs from different processes are unique only if their node ids are. Hard-coded
//! ids get copied between services, ids derived from IP addresses collide in
//! Kubernetes, and node ids leased from a store without fencing get duplicated
//! when a lease lapses while its holder still runs. flakeid gives a service on
//! Kubernetes (or anywhere) three ways to get a node id:
//!
//! | the service runs as | node id from | how |
//! |---|---|---|
//! | a Deployment, or anything whose pods come and go | a **lease** on etcd, Redis, or the database the service already has (PostgreSQL, MySQL) | `Builder::lease(Lease::etcd(..))` (features `etcd`, `redis`, `postgres`, `mysql`; this module) |
//! | a StatefulSet | the pod's **ordinal** (`orders-3` is node 3) | `node_id::from_statefulset(&layout)?` |
//! | anything that assigns ids itself | an **environment variable** | `node_id::from_env("FLAKEID_NODE_ID", &layout)?` |
//!
//! A lease, with the `etcd` feature (or `Lease::redis("redis://redis:6379/")`
//! with `redis`):
//!
//! ```rust,no_run
//! # #[cfg(feature = "etcd")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use flakeid::{Generator, Layout, Lease};
//! use std::time::Duration;
//!
//! let generator = Generator::builder(Layout::twitter())
//!     .lease(
//!         Lease::etcd(["http://etcd-0.etcd:2379", "http://etcd-1.etcd:2379"])
//!             .prefix("orders/ids") // one prefix per application and layout
//!             .ttl(Duration::from_secs(10)),
//!     )
//!     .build()?; // claims the lowest free node id, or a typed error within 5 s
//! let id = generator.next_id(); // waits while the lease cannot be proven valid
//! # let _ = id;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "etcd"))]
//! # fn main() {}
//! ```
//!
//! A StatefulSet ordinal, or a variable (the default build, no dependencies);
//! both are checked against the layout (`NodeIdError` says what is wrong):
//!
//! ```rust
//! use flakeid::{Generator, Layout, node_id};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let layout = Layout::twitter();
//! // In the pod: node_id::from_statefulset(&layout)? reads the host name.
//! let node = node_id::from_hostname("orders-3.orders.prod.svc.cluster.local", &layout)?;
//! let generator = Generator::builder(layout).node_id(node).build()?;
//! assert_eq!(generator.node_id(), 3);
//! # Ok(())
//! # }
//! ```
//!
//! On Kubernetes 1.28 and later the ordinal can also come in through the
//! downward API, for `node_id::from_env`:
//!
//! ```yaml
//! env:
//!   - name: FLAKEID_NODE_ID
//!     valueFrom:
//!       fieldRef:
//!         fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
//! ```
//!
//! A StatefulSet runs at most one pod per ordinal only while nobody
//! force-deletes pods: a pod force-deleted on an unreachable node may still be
//! running when its replacement starts. Two StatefulSets (or clusters) writing to
//! one table need disjoint ranges (a `datacenter` field). A lease covers both
//! cases.
//!
//! # How a lease works
//!
//! For each node id the store holds two keys under the application's prefix:
//!
//! | etcd | Redis | value |
//! |---|---|---|
//! | `<prefix>/nodes/<id>` | `<prefix>:node:<id>` | the holder's token; bound to an etcd lease, or set with `PX` |
//! | `<prefix>/marks/<id>` | `<prefix>:mark:<id>` | the *mark*: a Unix millisecond no ID of this node id has a later time than; never expires |
//!
//! - **Claim** (when the generator is built): the lowest node id of the range
//!   (the layout's, or `Lease::node_ids`) whose node key is absent and whose
//!   mark is usable, at most the claimer's wall clock plus
//!   `Lease::max_mark_ahead` (default: the larger of 1 minute and the TTL plus
//!   the lead allowance). Free node ids with later marks (left by a holder
//!   whose clock ran ahead, or planted) are skipped and counted
//!   (`Generator::lease_skipped_node_ids`); if no usable one is left, building
//!   fails with `LeaseError::MarksAhead`, which names them. One atomic step
//!   creates the node key and raises the mark to the holder's **ceiling**: the
//!   wall clock plus the TTL and the lead allowance (etcd: a transaction
//!   comparing the node key's absence and the mark's revision; Redis: a Lua
//!   script that takes the node key with `SET NX PX`, the TTL rounded up to
//!   whole milliseconds). The mark found is the new holder's **floor**: it
//!   issues only after it. On etcd, a claimer that loses a race to another
//!   picks at random among the lowest 2, 4, 8, ... usable node ids on its next
//!   tries, so n simultaneous claims take about log2(n) rounds; an etcd lease
//!   granted with a shorter TTL than asked is refused.
//! - **Ceiling**: the wall clock plus the TTL and the generator's lead
//!   allowance, or that far past a tick the generator was refused for want
//!   of ceiling under the current grant (a fresh grant forgets such ticks,
//!   and a rotation's claim ignores them).
//! - **Renew** every third of the TTL (on etcd below a TTL of about 4.5 s,
//!   more often, so the last renewal before a leader fails outlasts an
//!   election: every 400 ms at 3 s): etcd's lease keep-alive plus a
//!   transaction raising the mark if it is still where this holder last
//!   wrote it and the node key is still bound to its lease; Redis: one
//!   script that checks the token, runs `PEXPIRE` and raises the mark. A
//!   mark is never lowered.
//! - **Fence**: the generator never enters a millisecond past the ceiling the
//!   store has acknowledged, and it stops issuing once renewals have failed for
//!   the TTL less a safety margin (default a fifth of the TTL), measured on the
//!   monotonic clock from the moment the last successful renewal request was
//!   sent. `try_next_id` then returns `GenerateError::Fenced`, `next_id` waits.
//!   A renewal answered after that deadline extends nothing, and a generator
//!   that finds the deadline passed closes the fence for good. It resumes only
//!   after a fresh claim (the same node id or another; the floor applies either
//!   way). A claim of another node id takes effect in a new
//!   millisecond, after the floor and after the last one issued, so IDs stay in
//!   order across the switch (an `OnExhausted::NextClock` step to another clock
//!   id is not taken in the millisecond of the switch).
//! - **Release** when the generator is dropped: the mark set to the exact last
//!   millisecond it issued (or left at the ceiling, if an
//!   `OnClockBehind::NextClock` step took the timestamp back), the node key
//!   deleted if still its own (etcd: the lease revoked). A crashed holder's node
//!   key expires after one TTL; its mark stays at its last ceiling.
//! - **Rotation** (`Lease::rotate_after_rollback(threshold)`, the seed
//!   generator's policy): when the clock reads more than the threshold behind
//!   the generator's last timestamp, the keeper claims a node id whose mark is
//!   before the clock, switches the generator to it at the real (earlier) time,
//!   and gives the old node id back with its mark. IDs stay unique; time goes
//!   back under the new node id.
//!
//! **Two independent guarantees.** Uniqueness rests on the marks alone: a holder
//! never issues past the ceiling the store recorded for it, and the next holder
//! of that node id reads that ceiling as its floor in the same atomic step that
//! claims it (the old holder's later writes check ownership and fail). So two
//! holders' IDs cannot meet even if the old one keeps running past its lease
//! (a frozen VM, a partition), whatever the clocks say. Fencing adds that a
//! holder cut off from the store stops within the TTL, so two live processes do
//! not issue under one node id at once.
//!
//! **Assumptions behind the safety margin.** The store expires a claim no
//! earlier than one TTL after it received the last renewal, which is after the
//! moment flakeid sent it; flakeid's deadline is that send time plus the TTL
//! less the margin. The margin must absorb:
//!
//! - *clock rate error* between flakeid's monotonic clock (the TSC, calibrated
//!   against the OS monotonic clock) and the store's: quartz drifts up to about
//!   100 ppm and NTP slews up to 500 ppm, 5 ms over a 10 s TTL;
//! - *the store's clock jumping forward*: Redis expires keys by its wall clock,
//!   so a forward step of the Redis host's clock shortens every lease (etcd
//!   expires leases by its leader's monotonic clock, and a leader change only
//!   extends them);
//! - *nothing for pauses of the generator*: Rust has no garbage collector, but
//!   threads are preempted anywhere. Every ID is confirmed against the deadline
//!   right after its compare-and-swap, on the calling thread, so a thread paused
//!   between checking the fence and issuing drops the ID instead of handing it
//!   out late; and the fence closes by itself at the deadline, so a starved
//!   keeper thread cannot keep it open. A pause after the confirmation only
//!   delays an ID made while the lease was valid.
//!
//! It does not cover a machine whose monotonic clock stops while real time goes
//! on (a suspended VM, some live migrations): fencing may then end late, and
//! uniqueness still holds through the marks.
//!
//! **Restart safety.** A leased node id replaces `Builder::persist` (building
//! with both is a `LeaseError::Config`): the mark in the store is the node id's
//! high-water mark, kept current ahead of use like the state file's, and it
//! travels with the node id to whichever process claims it next. A process
//! restarted with its clock set back starts after the mark of the node id it
//! claims. The store must keep what it acknowledged: etcd does (Raft, fsync);
//! run Redis with `appendonly yes` and `appendfsync always`. A Redis failover
//! can lose acknowledged writes (marks and claims alike): behind Sentinel,
//! [the rules below](#redis-with-sentinel) keep node ids unique through it.
//!
//! **Errors.** All node ids held: `LeaseError::AllHeld { first, last }`. Server
//! unreachable at start: `LeaseError::Unreachable` after
//! `Lease::connect_timeout` (default 5 s). Malformed replies, or a value under
//! the prefix that flakeid did not write: `LeaseError::BadReply`. The server
//! refusing (authentication, read-only replica, ...): `LeaseError::Refused`.
//! Building returns them inside `BuildError::Lease`; a running generator's keeper
//! retries instead, fenced meanwhile.
//!
//! # Deployment
//!
//! The numbers behind this section (what each fault costs, as measured) are
//! in the repository's `benches/results/lease.md`.
//!
//! ## etcd
//!
//! A cluster of 3 or 5 members, each started with `--pre-vote` (the default
//! from etcd 3.5 on); list every member's client URL in [`Lease::etcd`],
//! not a load balancer or one DNS name for all:
//!
//! ```text
//! Lease::etcd(["http://etcd-0:2379", "http://etcd-1:2379", "http://etcd-2:2379"])
//! ```
//!
//! The keeper holds one client per member and asks the one that answered
//! last first. Each attempt has a limit of a twelfth of the TTL (between
//! 100 ms and 1 s); a member that misses it, refuses, or has no leader is
//! dropped for the next. A renewal not answered within a third of that
//! limit goes to the next member too, and the first answer counts; claims
//! and releases go to one member at a time. So with one member paused,
//! killed or cut off, the leader included, the other two keep answering
//! renewals and builds. Measured in a 30-minute fault run
//! (`--pre-vote`; the repository's `benches/results/lease.md` says on
//! which code): no member fault fenced every generator, and 4 of its 207
//! (a leader paused, killed or cut off) fenced one generator for 1.9 to
//! 4.3 s while the others issued. With quorum lost, generators fence at
//! their deadline and issue again within a second of its return. Without `--pre-vote`, a member that rejoins after
//! being cut off forces an election, and for up to about 2 s no member
//! can renew anything: generators then fence for that long.
//!
//! What it assumes: a TTL of at least 3 s with etcd's default election
//! timeout (1 s), so the deadline outlasts an election; the wall clocks of
//! generators that hand a node id to each other agree within the lead
//! allowance. Uniqueness needs no more than etcd's own guarantees
//! (linearizable transactions, leases a leader change only extends): a
//! renewal etcd applies late, or a hedged copy, never lowers a mark, and a
//! node key that etcd 3.4 revokes on a resumed leader (etcd-io/etcd#15247)
//! is taken back under a fresh lease if nobody claimed it meanwhile.
//!
//! ## Redis with Sentinel
//!
//! [`Lease::redis_sentinel`] with the sentinels' addresses and the master
//! name: a primary, two replicas and three sentinels
//! (`sentinel monitor <name> <host> <port> 2`), on separate machines. On the
//! data nodes:
//!
//! ```text
//! appendonly yes               # a restarted primary keeps what it acknowledged
//! appendfsync always
//! maxmemory-policy noeviction  # node keys, marks and the epoch are never evicted
//! repl-diskless-sync-delay 0   # a full resync starts at once (see the epoch)
//! min-replicas-to-write 1      # optional: a primary cut off from its replicas
//! min-replicas-max-lag 10      # refuses every client's writes within 10 s
//! ```
//!
//! Replication is asynchronous: a failover can lose claims and marks the old
//! primary acknowledged, and the old primary, back after a pause or cut off
//! with clients of its own, answers as a primary until it is demoted. Two
//! rules keep two holders of one node id from issuing at once through that
//! (which keeps their IDs apart, unless the failover also lost the node
//! id's mark and their clocks disagree: see the costs below):
//!
//! - **`WAIT`**: a claim or renewal counts only once
//!   [`wait_for_replicas`](Lease::wait_for_replicas) replicas (default 1)
//!   have acknowledged it. What a fence relies on is then on a replica, and a
//!   primary without its replicas extends no fence. With those replicas and
//!   the primary a majority of the data nodes, a deposed primary and its
//!   successor cannot both acknowledge. (`min-replicas-to-write` bounds how
//!   long a cut-off primary accepts anyone's writes; it cannot tell a client
//!   which of its writes a replica has, so flakeid relies on `WAIT`.)
//! - **The epoch** (the Chubby rule): a primary new to the lease data (a
//!   promoted replica, a restarted primary) starts an epoch once it serves
//!   with its replicas online (`wait_for_replicas` of them; before that,
//!   the primary it replaced may still acknowledge renewals: cut off from
//!   the sentinels with a replica on its side, it goes on until that
//!   replica follows the new primary, which the new primary sees as a
//!   replica online), and a claim in an epoch's first stretch
//!   waits out the rest of it before its generator issues
//!   ([`Event::LeaseWaiting`](crate::Event::LeaseWaiting)), its fence closed
//!   and its claim renewed. The stretch is the longest TTL in use under the
//!   prefix: each claim and renewal records its TTL (`<prefix>:ttls`), and a
//!   new epoch waits out the longest of the TTLs recorded within twice their
//!   length and the TTL of the claimer that starts it (a claimer with a
//!   longer TTL waits out its own). By then the lease of any holder an
//!   earlier primary acknowledged has lapsed, whether its claim was lost or
//!   not. The wait runs on the new primary's clock and then the claimer's
//!   monotonic clock, the old holder's deadline on its own: only their rate
//!   error remains, which the safety margin absorbs.
//!
//! What it costs and assumes:
//!
//! - A holder whose claim reached the promoted replica keeps its node id,
//!   and its fence stays open if a renewal reaches the new primary before its
//!   deadline. One that lapsed claims again and waits out the epoch, which
//!   starts once the new primary has a replica online. When the other
//!   replica follows the new primary at once (a partial resync, the usual
//!   case), it issues again within a TTL and a second of the failover's end
//!   (Sentinel's `+switch-master`; the lease finds the promoted replica
//!   among the replicas a sentinel lists before the sentinels name it).
//!   When the new primary's first replica must copy its data in full (the
//!   other replica out of reach or ahead of the promoted one, so the old
//!   primary rejoining is the first), the generators wait for that too,
//!   and the copy starts only after `repl-diskless-sync-delay`: Redis 7's
//!   default of 5 s adds that much, hence 0 above. So do generators built
//!   in that TTL, and the first ones under a prefix on a fresh deployment
//!   ([`build`](crate::Builder::build) returns with the fence closed;
//!   `next_id` waits, `try_next_id` answers
//!   [`Fenced`](crate::GenerateError::Fenced)).
//! - With one replica, a promoted primary has none until the old one rejoins
//!   as its replica, and nothing it acknowledges counts meanwhile: every
//!   generator fences. Run two replicas.
//! - `WAIT` adds a replica's acknowledgement to each claim and renewal (in the
//!   same round trip as the script).
//! - Marks a failover lost leave the next holder's floor below IDs its
//!   predecessor may have issued; they then stay apart only if the two
//!   holders' wall clocks agree within the safety margin less the lead
//!   allowance (2 s at the defaults). Sentinel promotes the freshest replica
//!   it reaches, which has every write `WAIT` confirmed: marks are lost only
//!   when that replica is out of reach too. The fleet simulation counts
//!   what happens past that bound (`benches/results/lease.md`): in 50,000
//!   simulated node-hours with a failover an hour, 193 overlapping ID ranges
//!   between a holder whose floor was below a lost mark and one whose clock
//!   was more than a second off (so two could disagree by more than 2 s);
//!   none where both clocks were within a second.
//! - Generators under one prefix may use different TTLs (a change of TTL
//!   rolled out over a running fleet): the epoch waits out the longest in
//!   use, and for twice its length after its last use. (Refusing a TTL
//!   other than the prefix's would stop such a rollout: new generators could
//!   not start while old ones hold node ids.) The cost is one more write per
//!   claim and renewal (the record, in the same script). What the record
//!   misses is a TTL whose every claim and renewal the failover lost (a
//!   generator with a TTL longer than every other in use, built less than
//!   the replication lag before the failover): the epoch then waits out a
//!   shorter TTL than its lease. Keep one TTL per prefix, or raise it while
//!   the deployment is healthy.
//! - Redis 4 or later (replication ids), scripts allowed to call `INFO` and
//!   `TIME` (the default).
//!
//! [`Lease::redis`] (one server) keeps neither rule unless asked
//! ([`wait_for_replicas`](Lease::wait_for_replicas)); it does not follow a
//! failover.
//!
//! ## PostgreSQL and MySQL
//!
//! [`Lease::postgres`] and [`Lease::mysql`] (MySQL 8, MariaDB 10.11) keep
//! the lease in a table of the database the service already has, with the
//! same rules as etcd and Redis: a deadline counted from the send, a fence
//! that closes without the database, marks carried to the next holder, and
//! the epoch rule after a failover.
//!
//! **The table** (`flakeid_leases`, or [`Lease::table`]) has one row per
//! (prefix, node id); rows are never deleted:
//!
//! | column | type (PostgreSQL / MySQL) | what |
//! |---|---|---|
//! | `prefix` | `text` / `VARCHAR(255)` (binary collation) | the lease's prefix |
//! | `node` | `bigint` | the node id (-1: the table's epoch row, under prefix `''`) |
//! | `token` | `text` / `VARCHAR(255)`, `NULL` when free | the holder's token |
//! | `expires` | `timestamptz` / `DATETIME(6)` in UTC | the expiry, by the **database's** clock |
//! | `ttl_ms` | `bigint` | the TTL of the last claim or renewal |
//! | `mark_ms` | `bigint` | the mark (never lowered while held) |
//!
//! - **Claim**: the epoch check, a listing of the prefix's rows in the
//!   range, and one conditional statement that takes the lowest free usable
//!   node id: an `INSERT` that does nothing if the row exists, or an
//!   `UPDATE` of a free row (no token, or expired by the database's
//!   `now()`) whose mark is still the one listed, raising it to the
//!   ceiling. Two claimers racing for one node id are decided by its row:
//!   one changes it, the other changes nothing and lists again. Three
//!   statements and a fourth per lost race; no lock is held across a round
//!   trip, so a paused client blocks nobody.
//! - **Renew**: one `UPDATE` of the row that holds this holder's token:
//!   expiry to `now()` plus the TTL, mark raised, never lowered. A row
//!   another holder took is not updated, and the fence closes at once.
//! - **Release**: the token cleared and the mark set to the exact last time
//!   issued, if the row is still this holder's.
//!
//! Every statement is autocommitted; a PostgreSQL session commits durably
//! (`synchronous_commit = on`, whatever the server's default), and has
//! statement, lock and idle-in-transaction timeouts of the connect timeout.
//! Run MySQL with `innodb_flush_log_at_trx_commit = 1` (its default). The
//! table name reaches SQL quoted as one identifier, the prefix and every
//! value as bound parameters.
//!
//! **Creating the table.** By default the lease creates the table on first
//! use (`CREATE TABLE IF NOT EXISTS`, and the epoch row) and checks its
//! columns, key and the user's rights at every connection: a table that is
//! missing, of another shape, or without a right is
//! [`LeaseError::Table`], naming the table and what is wrong; nothing is
//! issued and nothing in it is written. Where the application's user may not
//! run DDL, an administrator runs [`Lease::table_sql`] once (on the primary)
//! and grants the three rights; the lease is then built with
//! [`create_table(false)`](Lease::create_table). On PostgreSQL:
//!
//! ```sql
//! BEGIN;
//! SELECT pg_advisory_xact_lock(hashtext('flakeid lease table'));
//! CREATE TABLE IF NOT EXISTS "flakeid_leases" (
//!     prefix  text        NOT NULL,
//!     node    bigint      NOT NULL,
//!     token   text,
//!     expires timestamptz NOT NULL,
//!     ttl_ms  bigint      NOT NULL,
//!     mark_ms bigint      NOT NULL,
//!     PRIMARY KEY (prefix, node)
//! );
//! INSERT INTO "flakeid_leases" (prefix, node, token, expires, ttl_ms, mark_ms)
//!     VALUES ('', -1, ((SELECT system_identifier::text FROM pg_control_system()) || '/' ||
//!                     substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)),
//!             'epoch', 0, 0) ON CONFLICT DO NOTHING;
//! COMMIT;
//! GRANT SELECT, INSERT, UPDATE ON "flakeid_leases" TO app;
//! ```
//!
//! On MySQL:
//!
//! ```sql
//! CREATE TABLE IF NOT EXISTS `flakeid_leases` (
//!     prefix  VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
//!     node    BIGINT       NOT NULL,
//!     token   VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
//!     expires DATETIME(6)  NOT NULL,
//!     ttl_ms  BIGINT       NOT NULL,
//!     mark_ms BIGINT       NOT NULL,
//!     PRIMARY KEY (prefix, node)
//! ) ENGINE = InnoDB;
//! INSERT IGNORE INTO `flakeid_leases` (prefix, node, token, expires, ttl_ms, mark_ms)
//!     VALUES ('', -1, CONCAT(@@server_id, '/', @@hostname, ':', @@port),
//!             '1970-01-01 00:00:00', 0, 0);
//! GRANT SELECT, INSERT, UPDATE ON flakeid_leases TO 'app'@'%';
//! ```
//!
//! **Failover: the epoch rule.** With asynchronous replication a promoted
//! standby may lack claims, renewals and marks the old primary
//! acknowledged. The epoch row records the identity of the server that
//! serves the data (PostgreSQL: its system identifier and timeline, which a
//! promotion changes; MySQL: its `server_id`, host name and port). A claim
//! on a server new to the data starts a new epoch, and every claim in its
//! first stretch (the longest TTL of any row in the table, or the
//! claimer's if longer) waits until that stretch is over before its
//! generator issues ([`Event::LeaseWaiting`](crate::Event::LeaseWaiting)):
//! by then every lease the old primary acknowledged has ended, lost or
//! not. (A MySQL server restarted under another host name, as a pod may
//! be, counts as new too: one wait, no harm.) The cost: after a failover,
//! generators that had to claim anew
//! (their rows lost, or their process restarted) wait up to one TTL; those
//! whose rows survived renew on the new primary without a pause. A standby
//! given as the URL, or a read-only session, is refused
//! ([`LeaseError::Refused`]); a PostgreSQL URL may list every host with
//! `target_session_attrs=read-write` to follow a promotion.
//!
//! What it assumes: **the old primary accepts no writes once the new one
//! is promoted** (it crashed, or the failover manager stopped or demoted
//! it first, as Patroni and pg_auto_failover do). A deposed primary that
//! keeps accepting writes from some clients (a split brain) would keep
//! their fences open while the new primary hands their node ids to others,
//! as it would keep any other data of theirs apart. Synchronous replication
//! (`synchronous_standby_names`, with `synchronous_commit` at `on` or
//! `remote_apply`) closes that hole too: a deposed primary then commits
//! nothing without its standby, so its holders' renewals fail and they
//! fence; the cost is a round trip to the standby on every claim and
//! renewal, and a primary whose standby is down acknowledges nothing (its
//! generators fence). The lease does not require it. Tested on a real
//! primary and streaming standby, with the replication cut so the standby
//! lost the claim, the primary killed and the standby promoted
//! (`tests/lease_support/sql.rs`).
//!
//! ## What each store promises and assumes
//!
//! | store | a claim is unique because | expiry by | survives the store's crash if | failover |
//! |---|---|---|---|---|
//! | etcd | a transaction comparing the node key's absence and the mark's revision | the leader's monotonic clock | always (Raft, fsync) | built in (Raft); no acknowledged write is lost |
//! | Redis | a Lua script (`SET NX PX`) | the server's wall clock | `appendonly yes`, `appendfsync always` | Sentinel: `WAIT` for replicas, and the epoch rule |
//! | PostgreSQL | a conditional `INSERT`/`UPDATE` of the node id's row | the server's `now()` | always (`synchronous_commit = on` per session) | the epoch rule (timeline); the old primary must be stopped, or replication synchronous |
//! | MySQL, MariaDB | a conditional `INSERT IGNORE`/`UPDATE` of the row | the server's `UTC_TIMESTAMP(6)` | `innodb_flush_log_at_trx_commit = 1` | the epoch rule (`server_id`); the old primary must be stopped |
//!
//! # Threads and blocking
//!
//! Each leased generator has a keeper thread that makes the store's client
//! (for etcd, a current-thread tokio runtime of its own), claims, renews and
//! releases; the client is made, used and dropped on that thread only, so
//! building and dropping work the same inside an async runtime as outside.
//! `build()` waits for the first claim (at most the connect timeout); drop
//! waits for the release (at most the request timeout: a third of the TTL,
//! and no more than the connect timeout).
//!
//! # Costs
//!
//! A claim takes about 2 ms on etcd and 0.5 ms on Redis; a renewal, every
//! third of the TTL, is two requests (388 bytes) on etcd and one (210 bytes)
//! on Redis, so at the default 10 s TTL half a server core keeps about 2,200
//! nodes on etcd and 16,000 on Redis. On PostgreSQL a claim (a new session
//! included) takes about 12 ms and on MariaDB about 3 ms; a renewal is one
//! statement (464 and 169 bytes), so 1,000 holders at the default TTL cost
//! 300 statements a second, and half a server core keeps about 5,300 nodes
//! on PostgreSQL and 5,700 on MariaDB (measured with their data on tmpfs;
//! each holder keeps a session open, so mind `max_connections`). The
//! measurements, their method and the command that repeats them are in the
//! repository's `benches/results/lease.md`.

pub use crate::error::LeaseError;

// The keeper and the lease's terms are also the crate's tests' (the fleet
// simulation steps the keeper on an in-process store), so they compile for
// tests without the features.
#[cfg(any(
    test,
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
pub(crate) mod keeper;
#[cfg(any(
    test,
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
mod terms;

#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "redis")]
mod redis;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod sql;

#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
use std::fmt;
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
use std::ops::RangeInclusive;
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
use std::sync::Arc;
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
use std::time::Duration;

#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
use crate::fence::{Fence, Keeper};
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
use crate::layout::Layout;

#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
pub(crate) use keeper::Settings;
#[cfg(any(
    test,
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
pub(crate) use terms::Terms;

/// A node-id lease on etcd or Redis, for
/// [`Builder::lease`](crate::Builder::lease): the generator claims the lowest
/// free node id when it is built, keeps the lease alive on a background
/// thread, is fenced while the lease cannot be proven valid, and gives the
/// node id back when it is dropped.
///
/// Defaults: prefix `flakeid`, TTL 10 s, safety margin a fifth of the TTL,
/// 5 s to reach the server at start, the layout's whole node-id range, no
/// rotation, marks up to a minute ahead of the clock usable.
///
/// How a lease works, what it guarantees and assumes, and what it costs:
/// the [module docs](self).
///
/// # Blocking, and async services
///
/// The store's client lives on the generator's keeper thread (etcd's on a
/// tokio runtime of its own there), so a leased generator is built, used and
/// dropped the same way inside an async runtime (either flavor) as outside.
/// [`build`](crate::Builder::build) blocks the calling thread until the
/// first claim succeeds or fails: at most the
/// [connect timeout](Lease::connect_timeout) (5 s by default), during which a
/// current-thread runtime runs nothing else (build once at start, or inside
/// `tokio::task::spawn_blocking`). Dropping the generator blocks until the
/// keeper has recorded the last timestamp and released the node id: at most
/// the request timeout, a third of the TTL and no more than the connect
/// timeout (3.3 s by default), after which the node id is left to expire.
///
/// ```no_run
/// use flakeid::{Generator, Layout, Lease};
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # #[cfg(feature = "etcd")]
/// let lease = Lease::etcd(["http://etcd-0.etcd:2379", "http://etcd-1.etcd:2379"]);
/// # #[cfg(all(feature = "redis", not(feature = "etcd")))]
/// # let lease = Lease::redis("redis://redis:6379/");
/// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
/// # let lease = Lease::postgres("postgres://app@db/app");
/// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
/// # let lease = Lease::mysql("mysql://app@db/app");
/// let generator = Generator::builder(Layout::twitter())
///     .lease(lease.prefix("orders/ids").ttl(Duration::from_secs(10)))
///     .build()?; // claims a node id, or fails within the connect timeout
/// println!("node {} issued {}", generator.node_id(), generator.next_id());
/// # Ok(())
/// # }
/// ```
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    )))
)]
#[derive(Clone)]
#[must_use]
pub struct Lease {
    store: StoreConfig,
    terms: Terms,
    /// [`Lease::wait_for_replicas`] (Redis only).
    replicas: Option<u32>,
    /// A SQL-only option given to another store, refused at build.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    misapplied: Option<&'static str>,
}

#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
#[derive(Clone)]
enum StoreConfig {
    #[cfg(feature = "etcd")]
    Etcd(Vec<String>),
    #[cfg(feature = "redis")]
    Redis(redis::Target),
    #[cfg(feature = "postgres")]
    Postgres(sql::SqlConfig),
    #[cfg(feature = "mysql")]
    Mysql(sql::SqlConfig),
}

#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
impl Lease {
    /// Leases node ids from the etcd cluster at `endpoints` (`http://host:port`).
    ///
    /// etcd rounds the TTL up to whole seconds, and to its minimum (1.5 times
    /// its election timeout, 2 s by default); the fence keeps to the TTL you
    /// set, the shorter. A server that grants a shorter TTL than asked is
    /// refused ([`LeaseError::BadReply`]).
    ///
    /// ```
    /// use flakeid::Lease;
    ///
    /// let lease = Lease::etcd(["http://etcd-0.etcd:2379", "http://etcd-1.etcd:2379"]);
    /// // Errors and `Debug` name the cluster by its endpoints.
    /// assert!(format!("{lease:?}").contains("etcd http://etcd-0.etcd:2379,http://etcd-1.etcd:2379"));
    /// ```
    #[cfg(feature = "etcd")]
    #[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
    pub fn etcd<I, E>(endpoints: I) -> Lease
    where
        I: IntoIterator<Item = E>,
        E: Into<String>,
    {
        Lease::new(StoreConfig::Etcd(
            endpoints.into_iter().map(Into::into).collect(),
        ))
    }

    /// Leases node ids from the Redis server at `url` (`redis://[:password@]host:port/[db]`).
    ///
    /// One Redis server, or the primary of a Sentinel setup; not Redis
    /// Cluster (the claim scans keys in one script). For the marks to survive
    /// a crash of Redis itself, run it with `appendonly yes` and
    /// `appendfsync always` (see [Restart safety](self#how-a-lease-works)).
    ///
    /// ```
    /// use flakeid::Lease;
    ///
    /// let lease = Lease::redis("redis://:s3cret@redis:6379/0");
    /// // Errors and `Debug` name the server without its password.
    /// assert!(format!("{lease:?}").contains("redis redis://:***@redis:6379/0"));
    /// ```
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn redis(url: impl Into<String>) -> Lease {
        Lease::new(StoreConfig::Redis(redis::Target::Server(url.into())))
    }

    /// Leases node ids from the Redis primary that the sentinels at
    /// `sentinels` (`redis://[user:password@]host:port`, or `host:port`)
    /// name for `master`, and follows it through failovers.
    ///
    /// `master` is the name the sentinels monitor, or a URL whose host is
    /// that name and whose credentials and database are the data nodes'
    /// (`redis://:s3cret@orders/2`); the credentials in a sentinel's URL
    /// are that sentinel's. Each request of the keeper, finding the primary
    /// included, ends within the request timeout: a sentinel or a primary
    /// that stops answering costs a share of it, and the next sentinel is
    /// asked. The primary found must answer `ROLE` as a primary; when the
    /// one a sentinel names does not, a replica that sentinel lists and
    /// that does (promoted, not yet named) is used. A primary that is
    /// demoted, refuses writes or loses its replicas sends the keeper back
    /// to the sentinels.
    ///
    /// A failover can lose writes the old primary acknowledged, so this
    /// lease adds two rules to the single server's (the [module
    /// docs](self#redis-with-sentinel) say what they cost): each claim and
    /// renewal counts only once a replica has acknowledged it
    /// ([`wait_for_replicas`](Lease::wait_for_replicas), default 1), and in
    /// the first TTL after a failover (or a restart of the primary) a claim
    /// waits until that TTL is over before its generator issues
    /// ([`Event::LeaseWaiting`](crate::Event::LeaseWaiting)). Needs Redis 4
    /// or later.
    ///
    /// ```
    /// use flakeid::Lease;
    ///
    /// let lease = Lease::redis_sentinel(
    ///     ["redis://sentinel-0:26379", "sentinel-1:26379", "sentinel-2:26379"],
    ///     "redis://:s3cret@orders/0", // the master's name, with the data nodes' password
    /// );
    /// // Errors and `Debug` name the master and the sentinels, no password.
    /// let shown = format!("{lease:?}");
    /// assert!(shown.contains("redis sentinel orders via sentinel-0:26379,"));
    /// assert!(!shown.contains("s3cret"));
    /// ```
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn redis_sentinel<I, S>(sentinels: I, master: impl Into<String>) -> Lease
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Lease::new(StoreConfig::Redis(redis::Target::Sentinel(
            sentinels.into_iter().map(Into::into).collect(),
            master.into(),
        )))
    }

    /// Leases node ids from a table on the PostgreSQL server at `url`
    /// (`postgres://user:password@host:port/database`, or the `key=value`
    /// form; both as libpq takes them, `sslmode` included).
    ///
    /// The table ([`table`](Lease::table), `flakeid_leases` by default) is
    /// created on first use if it is missing and the user may (see
    /// [`create_table`](Lease::create_table)); the [module
    /// docs](self#postgresql-and-mysql) have its SQL and the rights it
    /// needs. Expiry is judged by the server's clock, and each session
    /// commits durably (`synchronous_commit = on`). Give the primary: a
    /// standby, or a session that is read-only, is refused
    /// ([`LeaseError::Refused`]). Several hosts with
    /// `target_session_attrs=read-write` follow a failover; after one, the
    /// first claims wait out the longest TTL in use (the epoch rule, see
    /// the module docs). Needs PostgreSQL 10 or later.
    ///
    /// ```
    /// use flakeid::Lease;
    ///
    /// let lease = Lease::postgres("postgres://app:s3cret@db.internal:5432/orders?sslmode=require");
    /// // Errors and `Debug` name the server without its password.
    /// assert!(format!("{lease:?}").contains("postgres postgres://app:***@db.internal:5432/orders"));
    /// ```
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub fn postgres(url: impl Into<String>) -> Lease {
        Lease::new(StoreConfig::Postgres(sql::SqlConfig::new(url.into())))
    }

    /// Leases node ids from a table on the MySQL 8 or MariaDB 10.11 server
    /// at `url` (`mysql://user:password@host:port/database`, with
    /// `?require_ssl=true` for TLS).
    ///
    /// As [`postgres`](Lease::postgres): the table is created on first use
    /// if allowed, expiry is judged by the server's clock
    /// (`UTC_TIMESTAMP(6)`), and a read-only server is refused. For an
    /// acknowledged claim to survive a crash of the server itself, run it
    /// with `innodb_flush_log_at_trx_commit = 1` (the default). Each server
    /// of a replicated setup needs its own `server_id` (replication needs
    /// it anyway): the epoch rule tells a promoted replica by it.
    ///
    /// ```
    /// use flakeid::Lease;
    ///
    /// let lease = Lease::mysql("mysql://app:s3cret@db.internal:3306/orders");
    /// assert!(format!("{lease:?}").contains("mysql mysql://app:***@db.internal:3306/orders"));
    /// ```
    #[cfg(feature = "mysql")]
    #[cfg_attr(docsrs, doc(cfg(feature = "mysql")))]
    pub fn mysql(url: impl Into<String>) -> Lease {
        Lease::new(StoreConfig::Mysql(sql::SqlConfig::new(url.into())))
    }

    /// The table of a PostgreSQL or MySQL lease (default
    /// `flakeid_leases`): one identifier, quoted as such, found by the
    /// session's search path (PostgreSQL) or in the URL's database (MySQL).
    /// Any other lease refuses it ([`LeaseError::Config`]).
    ///
    /// ```
    /// use flakeid::Lease;
    /// # #[cfg(feature = "postgres")]
    /// let lease = Lease::postgres("postgres://app@db/orders").table("orders_node_leases");
    /// # #[cfg(all(feature = "mysql", not(feature = "postgres")))]
    /// # let lease = Lease::mysql("mysql://app@db/orders").table("orders_node_leases");
    /// # let _ = lease;
    /// ```
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "postgres", feature = "mysql"))))]
    pub fn table(mut self, table: impl Into<String>) -> Self {
        match self.sql_mut() {
            Some(config) => config.table = table.into(),
            None => self.misapplied = Some("table"),
        }
        self
    }

    /// Whether a PostgreSQL or MySQL lease creates its table when it is
    /// missing (default `true`). With `false`, a missing table is an error
    /// ([`LeaseError::Table`]) naming it: for teams whose application user
    /// runs no DDL, and who create the table with the SQL in the [module
    /// docs](self#postgresql-and-mysql). Either way a table of another shape
    /// is refused, and nothing in it is overwritten.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "postgres", feature = "mysql"))))]
    pub fn create_table(mut self, create: bool) -> Self {
        match self.sql_mut() {
            Some(config) => config.create = create,
            None => self.misapplied = Some("create_table"),
        }
        self
    }

    /// The SQL that creates this lease's table and its epoch row, for a
    /// PostgreSQL or MySQL lease (`None` for the others): what a database
    /// administrator runs once when the application's user may not run DDL
    /// (then grant that user `SELECT, INSERT, UPDATE` on the table, and set
    /// [`create_table(false)`](Lease::create_table)). Run it on the primary
    /// the lease will use: the epoch row records that server's identity.
    ///
    /// ```
    /// use flakeid::Lease;
    /// # #[cfg(feature = "postgres")]
    /// # {
    /// let sql = Lease::postgres("postgres://app@db/orders").table_sql().unwrap();
    /// assert!(sql.contains("CREATE TABLE IF NOT EXISTS \"flakeid_leases\""));
    /// # }
    /// # #[cfg(feature = "mysql")]
    /// # {
    /// let sql = Lease::mysql("mysql://app@db/orders").table("ids").table_sql().unwrap();
    /// assert!(sql.contains("CREATE TABLE IF NOT EXISTS `ids`"));
    /// # }
    /// ```
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "postgres", feature = "mysql"))))]
    pub fn table_sql(&self) -> Option<String> {
        match &self.store {
            #[cfg(feature = "postgres")]
            StoreConfig::Postgres(config) => Some(sql::postgres::create_sql(&config.table)),
            #[cfg(feature = "mysql")]
            StoreConfig::Mysql(config) => {
                Some(sql::mysql::create_sql(&config.table).join(";\n") + ";")
            }
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The SQL store's configuration, if this is a SQL lease.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn sql(&self) -> Option<&sql::SqlConfig> {
        match &self.store {
            #[cfg(feature = "postgres")]
            StoreConfig::Postgres(config) => Some(config),
            #[cfg(feature = "mysql")]
            StoreConfig::Mysql(config) => Some(config),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The SQL store's configuration, if this is a SQL lease.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn sql_mut(&mut self) -> Option<&mut sql::SqlConfig> {
        match &mut self.store {
            #[cfg(feature = "postgres")]
            StoreConfig::Postgres(config) => Some(config),
            #[cfg(feature = "mysql")]
            StoreConfig::Mysql(config) => Some(config),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// How many replicas must acknowledge each claim and renewal before it
    /// counts (Redis' `WAIT`, in the same round trip; Redis leases only).
    /// Default 1 for [`redis_sentinel`](Lease::redis_sentinel), 0 (no
    /// `WAIT`) for [`redis`](Lease::redis).
    ///
    /// What a fence relies on is then on `n` replicas, and a primary that
    /// has lost them (one deposed in a failover, still answering) extends
    /// nobody's fence. For that, `n` replicas plus the primary must be a
    /// majority of the data nodes (1 of 2 replicas; 2 of 3 or 4), so that a
    /// deposed primary and its successor cannot both have them. The cost: a
    /// primary with fewer than `n` replicas online acknowledges nothing, and
    /// its generators fence. With one replica, a failover leaves the new
    /// primary none until the old one rejoins it: run two replicas. 0 turns
    /// `WAIT` off, and leaves a deposed primary that keeps its clients (a
    /// partition) free to extend their fences while the new primary's
    /// generators issue.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, Lease, LeaseError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // A primary and four replicas: two acknowledge, so three of five agree.
    /// let lease = Lease::redis_sentinel(["sentinel-0:26379"], "orders").wait_for_replicas(2);
    /// # let _ = lease;
    /// # #[cfg(feature = "etcd")]
    /// # {
    /// let err = Generator::builder(Layout::twitter())
    ///     .lease(Lease::etcd(["http://etcd:2379"]).wait_for_replicas(1))
    ///     .build()
    ///     .unwrap_err(); // refused before the server is contacted
    /// assert!(matches!(err, BuildError::Lease(LeaseError::Config { .. })));
    /// # }
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn wait_for_replicas(mut self, n: u32) -> Self {
        self.replicas = Some(n);
        self
    }

    fn new(store: StoreConfig) -> Lease {
        Lease {
            store,
            terms: Terms::default(),
            replicas: None,
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            misapplied: None,
        }
    }

    /// The key prefix, one per application and layout (default `flakeid`).
    /// Generators that share a prefix share the node ids under it.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, Lease, LeaseError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let orders = lease.clone().prefix("orders/ids"); // one per application and layout
    /// # let _ = orders;
    /// let err = Generator::builder(Layout::twitter())
    ///     .lease(lease.prefix(""))
    ///     .build()
    ///     .unwrap_err(); // refused before the server is contacted
    /// assert!(matches!(err, BuildError::Lease(LeaseError::Config { .. })));
    /// assert!(err.to_string().contains("prefix"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.terms.prefix = prefix.into();
        self
    }

    /// How long the store keeps a claim without renewal (default 10 s). The
    /// keeper renews every third of it. A crashed holder's node id is free
    /// again after one TTL; a holder cut off from the store stops issuing
    /// after the TTL less the safety margin.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, Lease, LeaseError};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// // A crashed holder's node id is free again after 30 s.
    /// let slow = lease.clone().ttl(Duration::from_secs(30));
    /// # let _ = slow;
    /// let err = Generator::builder(Layout::twitter())
    ///     .lease(lease.ttl(Duration::from_millis(50)))
    ///     .build()
    ///     .unwrap_err(); // refused before the server is contacted
    /// assert!(matches!(err, BuildError::Lease(LeaseError::Config { .. })));
    /// assert!(err.to_string().contains("TTL"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.terms.ttl = ttl;
        self
    }

    /// How much earlier than the store's expiry the generator stops issuing
    /// when renewals fail (default: a fifth of the TTL). It absorbs the
    /// monotonic clock running slower than the store's, and the store's own
    /// clock jumping forward (Redis expires keys by its wall clock); the
    /// [module docs](self#how-a-lease-works) state the assumptions. It must be more than 0 and less than the
    /// TTL (building fails with [`LeaseError::Config`] otherwise).
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, Lease, LeaseError};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let lease = lease.ttl(Duration::from_secs(10));
    /// // Cut off from the store, stop issuing 7 s after the last renewal was sent.
    /// let tight = lease.clone().safety_margin(Duration::from_secs(3));
    /// # let _ = tight;
    /// let err = Generator::builder(Layout::twitter())
    ///     .lease(lease.safety_margin(Duration::from_secs(10)))
    ///     .build()
    ///     .unwrap_err(); // refused before the server is contacted
    /// assert!(matches!(err, BuildError::Lease(LeaseError::Config { .. })));
    /// assert!(err.to_string().contains("safety margin"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn safety_margin(mut self, margin: Duration) -> Self {
        self.terms.safety_margin = Some(margin);
        self
    }

    /// How long building may try to reach the server and claim a node id
    /// before it fails with [`LeaseError::Unreachable`] (default 5 s).
    ///
    /// ```no_run
    /// use flakeid::{BuildError, Generator, Layout, Lease, LeaseError};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let lease = lease.connect_timeout(Duration::from_secs(1));
    /// match Generator::builder(Layout::twitter()).lease(lease).build() {
    ///     Ok(generator) => println!("node {}", generator.node_id()),
    ///     Err(BuildError::Lease(LeaseError::Unreachable { server, .. })) => {
    ///         eprintln!("{server} did not answer within 1 s");
    ///     }
    ///     Err(e) => return Err(e.into()),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.terms.connect_timeout = timeout;
        self
    }

    /// The node ids to lease from (default: all the layout has, from 0 to
    /// [`Layout::max_node_id`]), for example to give two datacenters disjoint
    /// ranges under one prefix.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, Lease, LeaseError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let east = lease.clone().node_ids(0..=511); // two datacenters, one prefix
    /// let west = lease.clone().node_ids(512..=1_023);
    /// # let _ = (east, west);
    /// let err = Generator::builder(Layout::twitter())
    ///     .lease(lease.node_ids(512..=1_024))
    ///     .build()
    ///     .unwrap_err(); // refused before the server is contacted
    /// assert!(matches!(err, BuildError::Lease(LeaseError::Config { .. })));
    /// assert!(err.to_string().contains("0..=1023"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn node_ids(mut self, range: RangeInclusive<u64>) -> Self {
        self.terms.node_ids = Some(range);
        self
    }

    /// The rotation policy: after the clock reads `threshold` or more behind
    /// the generator's last timestamp (beyond what `OnExhausted::Borrow`
    /// allows it to lead), give the node id back and claim one
    /// whose mark is before the clock, then issue at the real time under it
    /// (the timestamp goes back under the new node id; IDs stay unique).
    /// Without it (the default) the generator's
    /// [`OnClockBehind`](crate::OnClockBehind) policy alone decides.
    ///
    /// ```
    /// use flakeid::{BuildError, Generator, Layout, Lease, LeaseError};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let rotating = lease.clone().rotate_after_rollback(Duration::from_secs(5));
    /// # let _ = rotating;
    /// // Less than one tick (Sonyflake's is 10 ms) is refused.
    /// let err = Generator::builder(Layout::sonyflake())
    ///     .lease(lease.rotate_after_rollback(Duration::from_millis(5)))
    ///     .build()
    ///     .unwrap_err(); // refused before the server is contacted
    /// assert!(matches!(err, BuildError::Lease(LeaseError::Config { .. })));
    /// assert!(err.to_string().contains("rotation"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn rotate_after_rollback(mut self, threshold: Duration) -> Self {
        self.terms.rotate_after = Some(threshold);
        self
    }

    /// How far past this generator's wall clock a free node id's mark may be
    /// for a claim to take it (default: one minute, or the TTL plus the
    /// generator's lead allowance if that is longer).
    ///
    /// A holder whose clock ran ahead (or a mark written by hand) leaves a
    /// mark this generator's clock would need that long to pass: it would
    /// wait that long before issuing. A claim skips such node ids and takes
    /// the lowest usable one; it fails with [`LeaseError::MarksAhead`] only
    /// if every free node id was skipped. A holder with a correct clock
    /// leaves a mark at most the TTL plus its lead allowance ahead, and by
    /// the time its node id is free again (a TTL after its last renewal) only
    /// the lead allowance; the default tolerates clocks a minute apart on
    /// top. The bound is also the longest a claim can make the generator
    /// wait for its first ID.
    ///
    /// ```
    /// use flakeid::Lease;
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let lease = lease.max_mark_ahead(Duration::from_secs(5));
    /// # let _ = lease;
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_mark_ahead(mut self, bound: Duration) -> Self {
        self.terms.max_mark_ahead = Some(bound);
        self
    }

    /// Checks the lease's terms against `layout` as building a generator
    /// does before it contacts the store (the TTL, the safety margin, the
    /// node ids, the prefix), without contacting it: for a program that
    /// reads its configuration first and builds later.
    ///
    /// # Errors
    ///
    /// [`LeaseError::Config`] saying what is wrong, as
    /// [`Builder::build`](crate::Builder::build) would.
    ///
    /// ```
    /// use flakeid::{Layout, Lease, LeaseError};
    /// use std::time::Duration;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:1/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:1"]);
    /// let lease = lease.ttl(Duration::from_secs(2));
    /// lease.check(&Layout::twitter())?; // nothing listens on port 1: not asked
    /// let err = lease.safety_margin(Duration::from_secs(3)).check(&Layout::twitter());
    /// assert!(matches!(err, Err(LeaseError::Config { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn check(&self, layout: &Layout) -> Result<(), LeaseError> {
        self.settings(layout, Duration::ZERO).map(drop)
    }

    /// Plants a lease bug on purpose, for a test that must catch it
    /// ([`crate::plant`]; only under `--cfg flakeid_plant`).
    ///
    /// ```
    /// use flakeid::Lease;
    /// use flakeid::plant::Plant;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # #[cfg(feature = "redis")]
    /// let lease = Lease::redis("redis://127.0.0.1:6379/");
    /// # #[cfg(all(feature = "etcd", not(feature = "redis")))]
    /// # let lease = Lease::etcd(["http://127.0.0.1:2379"]);
    /// # #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
    /// # let lease = Lease::postgres("postgres://app@127.0.0.1/app");
    /// # #[cfg(all(feature = "mysql", not(any(feature = "etcd", feature = "redis", feature = "postgres"))))]
    /// # let lease = Lease::mysql("mysql://app@127.0.0.1/app");
    /// let planted = lease.plant(Plant::from_name("deadline-from-answer").ok_or("no such plant")?);
    /// assert!(format!("{planted:?}").contains("DeadlineFromAnswer"));
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(flakeid_plant)]
    #[doc(hidden)]
    pub fn plant(mut self, plant: crate::plant::Plant) -> Self {
        self.terms.plant = Some(plant);
        self
    }

    /// The server, for messages (a Redis password is masked).
    fn server(&self) -> String {
        match &self.store {
            #[cfg(feature = "etcd")]
            StoreConfig::Etcd(endpoints) => format!("etcd {}", endpoints.join(",")),
            #[cfg(feature = "redis")]
            StoreConfig::Redis(redis::Target::Server(url)) => {
                format!("redis {}", mask_password(url))
            }
            #[cfg(feature = "redis")]
            StoreConfig::Redis(redis::Target::Sentinel(sentinels, master)) => {
                let addrs: Vec<String> = sentinels.iter().map(|s| host_of(s)).collect();
                format!("redis sentinel {} via {}", host_of(master), addrs.join(","))
            }
            #[cfg(feature = "postgres")]
            StoreConfig::Postgres(config) => format!("postgres {}", mask_password(&config.url)),
            #[cfg(feature = "mysql")]
            StoreConfig::Mysql(config) => format!("mysql {}", mask_password(&config.url)),
        }
    }

    /// Checks the lease against the generator's layout and time lead.
    fn settings(&self, layout: &Layout, lead: Duration) -> Result<Settings, LeaseError> {
        #[cfg(feature = "etcd")]
        if let (StoreConfig::Etcd(_), Some(_)) = (&self.store, self.replicas) {
            return Err(LeaseError::Config {
                reason: "wait_for_replicas applies to Redis leases, not etcd".into(),
            });
        }
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        if let Some(config) = self.sql() {
            if self.replicas.is_some() {
                return Err(LeaseError::Config {
                    reason: "wait_for_replicas applies to Redis leases, not SQL ones".into(),
                });
            }
            config.check(&self.terms.prefix)?;
        }
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        if let Some(option) = self.misapplied {
            return Err(LeaseError::Config {
                reason: format!("{option} applies to PostgreSQL and MySQL leases only"),
            });
        }
        self.terms.settings(layout, lead, self.server())
    }
}

#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Lease");
        d.field("server", &self.server())
            .field("prefix", &self.terms.prefix)
            .field("ttl", &self.terms.ttl)
            .field("safety_margin", &self.terms.margin())
            .field("connect_timeout", &self.terms.connect_timeout)
            .field("node_ids", &self.terms.node_ids)
            .field("rotate_after_rollback", &self.terms.rotate_after)
            .field("max_mark_ahead", &self.terms.max_mark_ahead)
            .field("wait_for_replicas", &self.replicas);
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        if let Some(config) = self.sql() {
            d.field("table", &config.table)
                .field("create_table", &config.create);
        }
        #[cfg(flakeid_plant)]
        d.field("plant", &self.terms.plant);
        d.finish()
    }
}

/// `redis://user:secret@host/` as `redis://user:***@host/`; in a
/// `key=value` connection string, `password=secret` as `password=***`.
#[cfg(any(feature = "redis", feature = "postgres", feature = "mysql"))]
fn mask_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // libpq's `key=value` form.
        return url
            .split(' ')
            .map(|part| match part.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => part.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" ");
    };
    match rest.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => url.into(),
        },
        None => url.into(),
    }
}

/// The host (or, for a bare name, the name) and port of a Redis URL,
/// without scheme, credentials or database: `redis://:pw@cache:6379/2` is
/// `cache:6379`, `orders` is `orders`.
#[cfg(feature = "redis")]
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    rest.split_once('/')
        .map_or(rest, |(host, _)| host)
        .to_owned()
}

/// A token no other holder has: the process, the time, and a random seed.
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
fn token() -> String {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{:016x}{:016x}",
        std::process::id(),
        random.hash_one(nanos),
        random.hash_one((nanos, std::thread::current().id()))
    )
}

/// A SQL store that could not be made: its URL or TLS setup.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn sql_config_error(config: &sql::SqlConfig, e: sql::DbError) -> LeaseError {
    match e {
        sql::DbError::Config(reason) => LeaseError::Config { reason },
        other => LeaseError::Config {
            reason: format!("{}: {other:?}", mask_password(&config.url)),
        },
    }
}

/// Claims a node id for a generator being built: returns its keeper once the
/// fence is open. The store is made, used and dropped on the keeper's thread
/// only; this waits for the first claim (up to the connect timeout).
#[cfg(any(
    feature = "etcd",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
pub(crate) fn start(
    lease: &Lease,
    layout: &Layout,
    lead: Duration,
    fence: &Arc<Fence>,
    events: &crate::events::Events,
) -> Result<Box<dyn Keeper>, LeaseError> {
    let mut settings = lease.settings(layout, lead)?;
    settings.events = events.clone();
    let token = token();
    let prefix = lease.terms.prefix.clone();
    let fence = fence.clone();
    match &lease.store {
        #[cfg(feature = "etcd")]
        StoreConfig::Etcd(endpoints) => {
            let endpoints = endpoints.clone();
            let make = move |s: &Settings| etcd::EtcdStore::new(endpoints, &prefix, s, token);
            Ok(Box::new(keeper::start(make, settings, fence)?))
        }
        #[cfg(feature = "redis")]
        StoreConfig::Redis(target) => {
            let config = redis::RedisConfig {
                target: target.clone(),
                acks: lease.replicas,
            };
            let make = move |s: &Settings| redis::RedisStore::new(&config, &prefix, s, token);
            Ok(Box::new(keeper::start(make, settings, fence)?))
        }
        #[cfg(feature = "postgres")]
        StoreConfig::Postgres(config) => {
            let config = config.clone();
            let make = move |s: &Settings| {
                let db = sql::postgres::PgDb::new(
                    &config.url,
                    &config.table,
                    config.create,
                    s.connect_timeout,
                )
                .map_err(|e| sql_config_error(&config, e))?;
                sql::SqlStore::new(db, &config.table, &prefix, s, token)
            };
            Ok(Box::new(keeper::start(make, settings, fence)?))
        }
        #[cfg(feature = "mysql")]
        StoreConfig::Mysql(config) => {
            let config = config.clone();
            let make = move |s: &Settings| {
                let db = sql::mysql::MyDb::new(
                    &config.url,
                    &config.table,
                    config.create,
                    s.connect_timeout,
                )
                .map_err(|e| sql_config_error(&config, e))?;
                sql::SqlStore::new(db, &config.table, &prefix, s, token)
            };
            Ok(Box::new(keeper::start(make, settings, fence)?))
        }
    }
}

#[cfg(all(
    test,
    not(flakeid_loom),
    any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    )
))]
mod tests {
    use super::*;

    fn any_lease() -> Lease {
        #[cfg(feature = "etcd")]
        return Lease::etcd(["http://127.0.0.1:1"]);
        #[cfg(all(feature = "redis", not(feature = "etcd")))]
        return Lease::redis("redis://127.0.0.1:1/");
        #[cfg(all(feature = "postgres", not(any(feature = "etcd", feature = "redis"))))]
        return Lease::postgres("postgres://app@127.0.0.1:1/app");
        #[cfg(all(
            feature = "mysql",
            not(any(feature = "etcd", feature = "redis", feature = "postgres"))
        ))]
        return Lease::mysql("mysql://app@127.0.0.1:1/app");
    }

    #[test]
    fn bad_configurations_are_named() {
        let layout = Layout::twitter();
        let lead = Duration::ZERO;
        let reason = |lease: Lease| match lease.settings(&layout, lead) {
            Err(LeaseError::Config { reason }) => reason,
            other => panic!("expected a configuration error, got {other:?}"),
        };
        assert!(reason(any_lease().ttl(Duration::from_millis(10))).contains("TTL"));
        assert!(
            reason(
                any_lease()
                    .ttl(Duration::from_secs(2))
                    .safety_margin(Duration::from_secs(2))
            )
            .contains("safety margin")
        );
        assert!(reason(any_lease().safety_margin(Duration::ZERO)).contains("safety margin is 0"));
        assert!(reason(any_lease().node_ids(5..=1024)).contains("0..=1023"));
        assert!(reason(any_lease().prefix("")).contains("prefix"));
        let settings = any_lease().node_ids(3..=9).settings(&layout, lead).unwrap();
        assert_eq!((settings.first, settings.last), (3, 9));
        assert_eq!(
            settings.margin,
            Duration::from_secs(2),
            "a fifth of the TTL"
        );
    }

    #[cfg(feature = "redis")]
    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            mask_password("redis://app:s3cret@cache:6379/0"),
            "redis://app:***@cache:6379/0"
        );
        assert_eq!(mask_password("redis://cache:6379/"), "redis://cache:6379/");
        let lease = Lease::redis("redis://:s3cret@cache/");
        assert!(!format!("{lease:?}").contains("s3cret"));
    }

    #[cfg(any(feature = "postgres", feature = "mysql"))]
    #[test]
    fn sql_passwords_stay_out_of_messages() {
        assert_eq!(
            mask_password("postgres://app:s3cret@db:5432/x"),
            "postgres://app:***@db:5432/x"
        );
        assert_eq!(mask_password("postgres://app@db/x"), "postgres://app@db/x");
        assert_eq!(
            mask_password("host=db user=app password=s3cret dbname=x"),
            "host=db user=app password=*** dbname=x"
        );
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn sql_options_are_checked() {
        let layout = Layout::twitter();
        let reason = |lease: Lease| match lease.settings(&layout, Duration::ZERO) {
            Err(LeaseError::Config { reason }) => reason,
            other => panic!("expected a configuration error, got {other:?}"),
        };
        let pg = || Lease::postgres("postgres://app@127.0.0.1:1/app");
        assert!(reason(pg().table("")).contains("table name"));
        assert!(reason(pg().table("x".repeat(64))).contains("1 to 63 bytes"));
        assert!(reason(pg().prefix("p".repeat(256))).contains("at most 255 bytes"));
        #[cfg(feature = "redis")]
        assert!(reason(pg().wait_for_replicas(1)).contains("Redis leases"));
        assert!(
            pg().table("x\"; DROP TABLE y; --")
                .settings(&layout, Duration::ZERO)
                .is_ok()
        );
        #[cfg(feature = "redis")]
        assert!(
            reason(Lease::redis("redis://127.0.0.1:1/").table("t"))
                .contains("table applies to PostgreSQL and MySQL leases only")
        );
    }

    #[test]
    fn tokens_differ() {
        assert_ne!(token(), token());
    }
}
