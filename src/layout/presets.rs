//! The published layouts: Twitter, Discord, Instagram, Sonyflake, and one
//! whose IDs JavaScript numbers hold exactly.

use std::borrow::Cow;

use super::{FieldKind, Layout, LayoutError};

/// Twitter's epoch, 2010-11-04T01:42:54.657Z.
const TWITTER_EPOCH_MS: u64 = 1_288_834_974_657;
/// Discord's epoch, 2015-01-01T00:00:00Z.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;
/// Sonyflake's epoch, 2014-09-01T00:00:00Z.
const SONYFLAKE_EPOCH_MS: u64 = 1_409_529_600_000;
/// The JavaScript-safe preset's epoch, 2024-01-01T00:00:00Z.
const JS_SAFE_EPOCH_MS: u64 = 1_704_067_200_000;

/// The presets.
impl Layout {
    /// Twitter's original Snowflake: 1 unused + 41 ms + 5 `datacenter` + 5
    /// `worker` + 12 sequence, epoch 1288834974657 (2010-11-04).
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::twitter();
    /// assert_eq!(layout.capacity_per_tick(), 4096);
    /// assert_eq!(layout.max_node_id(), 1023);
    /// ```
    pub fn twitter() -> Layout {
        Layout::preset(
            TWITTER_EPOCH_MS,
            1,
            41,
            &[
                ("datacenter", FieldKind::Node, 5),
                ("worker", FieldKind::Node, 5),
                ("sequence", FieldKind::Sequence, 12),
            ],
        )
    }

    /// Discord's snowflakes: 42 ms + 5 `worker` + 5 `process` + 12 sequence
    /// (Discord calls it the increment), epoch 1420070400000 (2015-01-01).
    /// All 64 bits are used: IDs pass 2^63 in September 2084.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::discord();
    /// let parts = layout.decode(175928847299117063_u64.into())?;
    /// assert_eq!(parts.unix_ms(), 1_462_015_105_796); // 2016-04-30T11:18:25.796Z
    /// assert_eq!(parts.field("worker"), Some(1));
    /// assert_eq!(parts.field("process"), Some(0));
    /// assert_eq!(parts.sequence(), 7);
    /// # Ok(())
    /// # }
    /// ```
    pub fn discord() -> Layout {
        Layout::preset(
            DISCORD_EPOCH_MS,
            1,
            42,
            &[
                ("worker", FieldKind::Node, 5),
                ("process", FieldKind::Node, 5),
                ("sequence", FieldKind::Sequence, 12),
            ],
        )
    }

    /// Instagram's IDs: 41 ms + 13 `shard` + 10 sequence, from your epoch.
    /// All 64 bits are used: IDs pass 2^63 when the timestamp reaches 2^40 ms,
    /// 34.8 years after the epoch (2046 for Instagram's own 2011 epoch).
    ///
    /// # Errors
    ///
    /// [`LayoutError::EpochInFuture`] if `epoch_ms` is later than now.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let layout = Layout::instagram(1_314_220_021_721)?; // 2011-08-24
    /// assert_eq!(layout.max_node_id(), 8191);
    /// assert_eq!(layout.capacity_per_tick(), 1024);
    /// # Ok(())
    /// # }
    /// ```
    pub fn instagram(epoch_ms: u64) -> Result<Layout, LayoutError> {
        Layout::builder()
            .epoch_ms(epoch_ms)
            .timestamp_bits(41)
            .node("shard", 13)
            .sequence(10)
            .build()
    }

    /// Sonyflake: 1 unused + 39 bits of 10 ms + 8 sequence + 16 `machine`,
    /// epoch 2014-09-01T00:00:00Z. The sequence sits above the machine id.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::sonyflake();
    /// assert_eq!(layout.unit_ms(), 10);
    /// assert_eq!(layout.capacity_per_tick(), 256);
    /// assert_eq!(layout.field("machine").unwrap().shift(), 0);
    /// ```
    pub fn sonyflake() -> Layout {
        Layout::preset(
            SONYFLAKE_EPOCH_MS,
            10,
            39,
            &[
                ("sequence", FieldKind::Sequence, 8),
                ("machine", FieldKind::Node, 16),
            ],
        )
    }

    /// IDs that JavaScript numbers hold exactly: 41 ms + 6 `worker` + 6
    /// sequence = 53 bits, epoch 2024-01-01T00:00:00Z. Every ID it can ever
    /// make is at most 2^53 − 1 (`Number.MAX_SAFE_INTEGER`).
    ///
    /// Lifetime: 2^41 ms, until 2093-09-06. Capacity: 64 IDs per ms per node
    /// (64,000 a second) on up to 64 nodes; use `OnExhausted::Borrow` to absorb
    /// bursts above that.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let layout = Layout::js_safe();
    /// assert_eq!(layout.total_bits(), 53);
    /// assert_eq!(layout.capacity_per_tick(), 64);
    /// ```
    pub fn js_safe() -> Layout {
        Layout::preset(
            JS_SAFE_EPOCH_MS,
            1,
            41,
            &[
                ("worker", FieldKind::Node, 6),
                ("sequence", FieldKind::Sequence, 6),
            ],
        )
    }

    /// Builds a preset, whose parameters are known to be valid.
    fn preset(
        epoch_ms: u64,
        unit_ms: u64,
        timestamp_bits: u32,
        fields: &[(&'static str, FieldKind, u32)],
    ) -> Layout {
        let mut builder = Layout::builder()
            .epoch_ms(epoch_ms)
            .unit_ms(unit_ms)
            .timestamp_bits(timestamp_bits);
        builder.fields = fields
            .iter()
            .map(|&(name, kind, bits)| (Cow::Borrowed(name), kind, bits))
            .collect();
        match builder.validate() {
            Ok(layout) => layout,
            Err(e) => unreachable!("preset layout is invalid: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Parts;
    use crate::rfc3339;

    #[test]
    fn presets_have_their_published_parameters() {
        let t = Layout::twitter();
        assert_eq!(
            (
                t.epoch_ms(),
                t.timestamp_bits(),
                t.node_bits(),
                t.sequence_bits()
            ),
            (1_288_834_974_657, 41, 10, 12)
        );
        let d = Layout::discord();
        assert_eq!(
            (
                d.epoch_ms(),
                d.timestamp_bits(),
                d.node_bits(),
                d.total_bits()
            ),
            (1_420_070_400_000, 42, 10, 64)
        );
        let s = Layout::sonyflake();
        assert_eq!(
            (
                s.epoch_ms(),
                s.unit_ms(),
                s.timestamp_bits(),
                s.total_bits()
            ),
            (1_409_529_600_000, 10, 39, 63)
        );
        assert!(s.field("sequence").unwrap().shift() > s.field("machine").unwrap().shift());
        let j = Layout::js_safe();
        assert_eq!(j.total_bits(), 53);
    }

    #[test]
    fn lifetimes_match_the_documented_dates() {
        // Years are checked through the RFC 3339 form of the last instant.
        let year = |ms: u64| {
            let mut s = String::new();
            rfc3339::push(&mut s, ms);
            s[..7].to_string()
        };
        assert_eq!(year(Layout::twitter().last_ms()), "2080-07");
        assert_eq!(year(Layout::discord().last_ms()), "2154-05");
        assert_eq!(year(Layout::discord().last_signed_ms()), "2084-09");
        assert_eq!(year(Layout::sonyflake().last_ms()), "2188-11");
        assert_eq!(year(Layout::js_safe().last_ms()), "2093-09");
        let insta = Layout::instagram(1_314_220_021_721).unwrap();
        assert_eq!(year(insta.last_signed_ms()), "2046-06");
    }

    #[test]
    fn js_safe_ids_never_pass_2_pow_53() {
        let layout = Layout::js_safe();
        let last = layout
            .compose(Parts {
                timestamp: layout.timestamp_field().max(),
                node: layout.max_node_id(),
                sequence: layout.capacity_per_tick() - 1,
                clock_id: 0,
            })
            .unwrap();
        assert_eq!(last.to_u64(), (1 << 53) - 1);
    }
}
