//! The layouts every generator runs on, flakeid's and ferroid's alike, and
//! the thread counts and batch sizes of the views.

use std::time::Duration;

use ferroid::time::MonotonicClock as FerroidClock;
use flakeid::Layout;

/// The thread counts of the `cost`, `cap`, `latency` and `lost` views.
pub const THREADS: [usize; 5] = [1, 2, 4, 8, 16];
/// The batch sizes of the `batch` view.
pub const BATCHES: [usize; 4] = [1, 16, 256, 4096];
/// Epoch of the wide layouts (2023-11-14).
pub const WIDE_EPOCH_MS: u64 = 1_700_000_000_000;

/// ferroid fixes a layout at compile time; this one matches [`wide_layout`].
#[allow(missing_docs)]
mod ferroid_layouts {
    ferroid::define_snowflake_id!(
        /// 1 unused, 41 ms, 22 sequence: as `wide_layout`.
        Wide, u64,
        reserved: 1,
        timestamp: 41,
        machine_id: 0,
        sequence: 22
    );
}
pub use ferroid_layouts::Wide as FerroidWide;

/// 41 ms + 22-bit sequence: 4 M IDs per ms, far above what any generator
/// here issues, so the cost of an ID is measured rather than the cap.
pub fn wide_layout() -> Layout {
    Layout::builder()
        .epoch_ms(WIDE_EPOCH_MS)
        .timestamp_bits(41)
        .sequence(22)
        .build()
        .expect("valid layout")
}

/// 38 ms + 25-bit sequence (33 M IDs per ms, epoch + 8.7 years): a batch
/// of 4,096 from one thread stays below the cap even at 0.3 ns per ID.
pub fn batch_layout() -> Layout {
    Layout::builder()
        .epoch_ms(WIDE_EPOCH_MS)
        .timestamp_bits(38)
        .sequence(25)
        .build()
        .expect("valid layout")
}

/// ferroid's clock on the wide layouts' epoch.
pub fn ferroid_wide_clock() -> FerroidClock {
    FerroidClock::with_epoch(Duration::from_millis(WIDE_EPOCH_MS))
}

/// snowflake_me on a wide layout's epoch: `time_bits` ms and
/// `sequence_bits` of sequence, no node bits.
pub fn snowflake_me_on(time_bits: u8, sequence_bits: u8) -> snowflake_me::Snowflake {
    snowflake_me::Snowflake::builder()
        .start_time(WIDE_EPOCH_MS as i64)
        .bit_len_time(time_bits)
        .bit_len_sequence(sequence_bits)
        .bit_len_data_center_id(0)
        .bit_len_machine_id(0)
        .machine_id(&|| Ok(0))
        .data_center_id(&|| Ok(0))
        .finalize()
        .expect("valid snowflake_me layout")
}
