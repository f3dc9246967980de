//! What a lease asks for besides its store (the TTL, the safety margin, the
//! node ids, rotation, ...), and its check against a generator's layout.

use std::ops::RangeInclusive;
use std::time::Duration;

use super::keeper::{Settings, WallClock};
use crate::error::LeaseError;
use crate::events::Events;
use crate::layout::Layout;

/// A lease's terms, as [`Lease`](super::Lease)'s builder methods set them
/// (see each for its meaning and default).
#[derive(Debug, Clone)]
pub(crate) struct Terms {
    pub(crate) prefix: String,
    pub(crate) ttl: Duration,
    /// `None`: a fifth of the TTL.
    pub(crate) safety_margin: Option<Duration>,
    pub(crate) connect_timeout: Duration,
    /// `None`: every node id the layout has.
    pub(crate) node_ids: Option<RangeInclusive<u64>>,
    pub(crate) rotate_after: Option<Duration>,
    /// `None`: one minute, or the TTL plus the lead allowance if longer.
    pub(crate) max_mark_ahead: Option<Duration>,
    /// A bug planted on purpose (`crate::plant`).
    #[cfg(any(test, flakeid_plant))]
    pub(crate) plant: Option<crate::plant::Plant>,
}

impl Default for Terms {
    fn default() -> Terms {
        Terms {
            prefix: "flakeid".into(),
            ttl: Duration::from_secs(10),
            safety_margin: None,
            connect_timeout: Duration::from_secs(5),
            node_ids: None,
            rotate_after: None,
            max_mark_ahead: None,
            #[cfg(any(test, flakeid_plant))]
            plant: None,
        }
    }
}

impl Terms {
    /// The safety margin in force.
    pub(crate) fn margin(&self) -> Duration {
        self.safety_margin.unwrap_or(self.ttl / 5)
    }

    /// Checks the terms against the generator's layout and time lead; the
    /// keeper's settings for a store named `server` (in messages).
    pub(crate) fn settings(
        &self,
        layout: &Layout,
        lead: Duration,
        server: String,
    ) -> Result<Settings, LeaseError> {
        let config = |reason: String| Err(LeaseError::Config { reason });
        let margin = self.margin();
        if self.ttl < Duration::from_millis(100) {
            return config(format!("the TTL ({:?}) is shorter than 100 ms", self.ttl));
        }
        if margin.is_zero() {
            return config(
                "the safety margin is 0: it must absorb the monotonic clock running slower \
                 than the store's"
                    .into(),
            );
        }
        if margin >= self.ttl {
            return config(format!(
                "the safety margin ({margin:?}) is not shorter than the TTL ({:?})",
                self.ttl
            ));
        }
        let (first, last) = match &self.node_ids {
            Some(range) => (*range.start(), *range.end()),
            None => (0, layout.max_node_id()),
        };
        if first > last || last > layout.max_node_id() {
            return config(format!(
                "node ids {first}..={last} are not a non-empty range within the layout's 0..={}",
                layout.max_node_id()
            ));
        }
        if self.prefix.is_empty() {
            return config("the key prefix is empty".into());
        }
        let unit = Duration::from_millis(layout.unit_ms());
        let rotate_after_ticks = match self.rotate_after {
            None => 0,
            Some(threshold) if threshold < unit => {
                return config(format!(
                    "the rotation threshold ({threshold:?}) is shorter than the layout's time unit"
                ));
            }
            Some(threshold) => u64::try_from(threshold.as_millis() / u128::from(layout.unit_ms()))
                .unwrap_or(u64::MAX),
        };
        let ahead = self.ttl.saturating_add(lead);
        Ok(Settings {
            layout: layout.clone(),
            first,
            last,
            ttl: self.ttl,
            margin,
            connect_timeout: self.connect_timeout,
            ahead,
            usable_ahead: self
                .max_mark_ahead
                .unwrap_or_else(|| Duration::from_secs(60).max(ahead)),
            rotate_after_ticks,
            server,
            wall: WallClock::system(),
            events: Events::default(),
            #[cfg(any(test, flakeid_plant))]
            plant: self.plant,
        })
    }
}
