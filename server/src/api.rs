//! What both APIs do, and how they fail: look up the generator, check the
//! count, take IDs without ever waiting on a lease or a store, decode.

use std::sync::Arc;
use std::time::Duration;

use flakeid::{Decoded, GenerateError, Id, IdBatch, IdFormat};
use tokio::sync::watch;

use crate::config::Config;
use crate::config::defaults::MAX_CHUNK_SIZE;
use crate::generators::{Entry, Generators};
use crate::quote::{quote, shorten};

/// Why a call got no answer: each API maps it to its own status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The call asked for something this server does not do (400 /
    /// INVALID_ARGUMENT).
    Invalid(String),
    /// No IDs now; try again after the hint (503 with `Retry-After` /
    /// UNAVAILABLE with `grpc-retry-pushback-ms`).
    Unavailable {
        /// What is wrong.
        message: String,
        /// When to try again.
        retry_after: Duration,
    },
    /// The layout has run out of time: no ID will be issued again (503
    /// without `Retry-After` / FAILED_PRECONDITION).
    Expired(String),
    /// The bearer token is missing or wrong (401 / UNAUTHENTICATED).
    Unauthenticated,
}

impl Failure {
    /// The message the client reads.
    pub fn message(&self) -> &str {
        match self {
            Failure::Invalid(m) | Failure::Expired(m) => m,
            Failure::Unavailable { message, .. } => message,
            Failure::Unauthenticated => "a bearer token is required: Authorization: Bearer <token>",
        }
    }
}

/// The retry hint for each transient error: how long until the condition
/// may have cleared. A fence lifts after a fresh claim (a renewal cycle, a
/// third of the TTL at most); storage retries run every 10 ms to 1 s.
fn retry_after(e: &GenerateError) -> Duration {
    match e {
        GenerateError::SequenceExhausted { retry_after } => {
            (*retry_after).max(Duration::from_millis(1))
        }
        GenerateError::ClockBehind { behind } => (*behind).max(Duration::from_millis(1)),
        _ => Duration::from_secs(1),
    }
}

/// A generator error as a failure.
pub fn unavailable(entry: &Entry, e: &GenerateError) -> Failure {
    let generator = &entry.name;
    match e {
        GenerateError::Expired { .. } => Failure::Expired(format!("generator {generator}: {e}")),
        _ => Failure::Unavailable {
            // While a restart waits out its predecessor's reservation, that
            // is the reason (the clock "behind" the mark, say).
            message: match entry.restarting() {
                Some(why) => format!("generator {generator} cannot issue IDs now: {why}"),
                None => format!("generator {generator} cannot issue IDs now: {e}"),
            },
            retry_after: retry_after(e),
        },
    }
}

/// The state both APIs share.
pub struct Service {
    /// The generators.
    pub generators: Arc<Generators>,
    /// Most IDs per batch call.
    pub max_count: u32,
    /// Most IDs per stream.
    pub max_stream_count: u64,
    /// Default chunk of a stream.
    pub chunk_size: u32,
    /// Longest wait for IDs.
    pub wait_limit: Duration,
    /// When streams still running end (set on SIGTERM: the drain timeout).
    streams_end: watch::Receiver<Option<tokio::time::Instant>>,
}

impl Service {
    /// The shared state of `config`'s APIs over `generators`; streams end
    /// when `streams_end` says.
    pub fn new(
        config: &Config,
        generators: Arc<Generators>,
        streams_end: watch::Receiver<Option<tokio::time::Instant>>,
    ) -> Service {
        Service {
            generators,
            max_count: config.max_count,
            max_stream_count: config.max_stream_count,
            chunk_size: config.chunk_size,
            wait_limit: config.wait_limit,
            streams_end,
        }
    }

    /// Whether a stream must end now, the server shutting down: the
    /// failure it ends with.
    pub fn stream_cut(&self, unsent: u64) -> Option<Failure> {
        // Asked before every chunk: until shutdown, one atomic load. The
        // channel's value sits behind a lock that every stream's check
        // would take (16-bit StreamIds at chunk 1 ran at 0.88-0.93x the
        // IDs/s of 0f0bb43 with it, 0.98-1.13x without; compare.sh).
        if let Ok(false) = self.streams_end.has_changed() {
            return None;
        }
        let end = (*self.streams_end.borrow())?;
        (tokio::time::Instant::now() >= end).then(|| Failure::Unavailable {
            message: format!(
                "the server is shutting down: {unsent} IDs of the stream were not sent; \
                 ask again (another server, or this one once restarted)"
            ),
            retry_after: Duration::ZERO,
        })
    }

    /// The generator a call names.
    ///
    /// # Errors
    ///
    /// [`Failure::Invalid`] naming the generators there are.
    pub fn generator(&self, name: &str) -> Result<&Arc<Entry>, Failure> {
        self.generators.get(name).ok_or_else(|| {
            Failure::Invalid(format!(
                "unknown generator {}; this server has: {}",
                quote(name),
                self.generators.names()
            ))
        })
    }

    /// Checks a batch call's count.
    ///
    /// # Errors
    ///
    /// [`Failure::Invalid`] for 0 or above `max_count`.
    pub fn batch_count(&self, count: u64) -> Result<usize, Failure> {
        if count == 0 || count > u64::from(self.max_count) {
            return Err(Failure::Invalid(format!(
                "count {count} is out of range: 1 to {} (the server's max_count)",
                self.max_count
            )));
        }
        Ok(count as usize)
    }

    /// Checks a stream call's count and chunk size (0: the default).
    ///
    /// # Errors
    ///
    /// [`Failure::Invalid`] for a count of 0 or above `max_stream_count`,
    /// or a chunk above 65,536.
    pub fn stream_shape(&self, count: u64, chunk: u32) -> Result<(u64, usize), Failure> {
        if count == 0 || count > self.max_stream_count {
            return Err(Failure::Invalid(format!(
                "count {count} is out of range: 1 to {} (the server's max_stream_count)",
                self.max_stream_count
            )));
        }
        if chunk > MAX_CHUNK_SIZE {
            return Err(Failure::Invalid(format!(
                "chunk_size {chunk} is out of range: 1 to {MAX_CHUNK_SIZE}, or 0 for the server's {}",
                self.chunk_size
            )));
        }
        let chunk = if chunk == 0 { self.chunk_size } else { chunk };
        Ok((count, chunk as usize))
    }

    /// Up to `n` IDs from `entry` in one reservation (at least one, at most
    /// the rest of the current tick): what the generator's `try_` call
    /// gives, waited for on tokio's timer for at most the wait limit.
    ///
    /// # Errors
    ///
    /// [`Failure::Unavailable`] at once when the generator reports (a
    /// fence, failing storage), or when the wait would run past the limit.
    pub async fn reserve(&self, entry: &Entry, n: usize) -> Result<IdBatch, Failure> {
        // The common case, with no timer armed: one compare-and-swap.
        let generator = &entry.generator;
        let batch = match generator.poll_ids(n) {
            Ok(batch) => batch,
            Err(e) => self.reserve_slow(entry, n, e).await?,
        };
        entry.issued.increment(batch.len() as u64);
        Ok(batch)
    }

    /// `reserve` after a first attempt failed with `e`.
    #[cold]
    async fn reserve_slow(
        &self,
        entry: &Entry,
        n: usize,
        mut e: GenerateError,
    ) -> Result<IdBatch, Failure> {
        let generator = &entry.generator;
        let deadline = tokio::time::Instant::now() + self.wait_limit;
        let too_long = || Failure::Unavailable {
            message: format!(
                "generator {} could not issue IDs within the wait limit of {:?}",
                entry.name, self.wait_limit
            ),
            retry_after: Duration::from_secs(1),
        };
        // A used-up tick: the next one is at most a tick away. Sleep on the
        // timer through all but its last millisecond (tokio's timer has
        // millisecond granularity, so a shorter sleep would oversleep the
        // tick), then yield to other tasks between attempts: a stream that
        // drains every tick gets the next one as soon as it starts.
        while let GenerateError::SequenceExhausted { retry_after } = e {
            if entry.reports_exhaustion {
                return Err(unavailable(entry, &e));
            }
            let now = tokio::time::Instant::now();
            if now + retry_after > deadline {
                // The next tick is further off than the call may wait.
                let why = entry.restarting().unwrap_or_else(|| {
                    format!("the current tick is used up and the next is {retry_after:?} away")
                });
                return Err(Failure::Unavailable {
                    message: format!(
                        "generator {}: {why}, past the wait limit of {:?}",
                        entry.name, self.wait_limit
                    ),
                    retry_after,
                });
            }
            if retry_after > Duration::from_millis(1) {
                tokio::time::sleep(retry_after - Duration::from_millis(1)).await;
            } else {
                tokio::task::yield_now().await;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(too_long());
            }
            match generator.poll_ids(n) {
                Ok(batch) => return Ok(batch),
                Err(next) => e = next,
            }
        }
        match e {
            // What waiting cannot fix in a call's time is answered at once.
            GenerateError::Fenced | GenerateError::Storage(_) | GenerateError::Expired { .. } => {
                Err(unavailable(entry, &e))
            }
            // A reservation being saved, a clock behind under a waiting
            // policy: the generator's own reporting call, its waits slept
            // on tokio's timer, bounded by the wait limit.
            _ => match tokio::time::timeout_at(deadline, generator.try_next_ids_async(n)).await {
                Ok(Ok(batch)) => Ok(batch),
                Ok(Err(e)) => Err(unavailable(entry, &e)),
                Err(_) => Err(too_long()),
            },
        }
    }

    /// What `id` says under `entry`'s layout.
    ///
    /// # Errors
    ///
    /// [`Failure::Invalid`] for an ID outside the layout.
    pub fn decode<'a>(&self, entry: &'a Entry, id: Id) -> Result<Decoded<'a>, Failure> {
        entry.generator.layout().decode(id).map_err(|e| {
            Failure::Invalid(format!(
                "{id} is not an ID of generator {}: {e}",
                entry.name
            ))
        })
    }

    /// Exactly `n` IDs (several reservations when a tick runs out), in
    /// increasing order.
    ///
    /// # Errors
    ///
    /// As [`reserve`](Service::reserve); IDs already reserved are dropped.
    pub async fn ids(&self, entry: &Entry, n: usize) -> Result<Vec<Id>, Failure> {
        let mut ids = Vec::with_capacity(n);
        while ids.len() < n {
            ids.extend(self.reserve(entry, n - ids.len()).await?);
        }
        Ok(ids)
    }
}

/// An ID string read in any of flakeid's forms.
///
/// # Errors
///
/// [`Failure::Invalid`] saying what is wrong with it.
pub fn parse_id(text: &str) -> Result<(Id, IdFormat), Failure> {
    Id::parse_any(text).map_err(|e| {
        Failure::Invalid(format!(
            "cannot read ID {}: {}",
            quote(text),
            shorten(&e.to_string())
        ))
    })
}
