//! What the `flakeid bench` command, the peers bench's report
//! (`benches/peers`) and the `lease_measure` example share: the SVG chart,
//! the machine they ran on, and quantiles of what they measured.
//!
//! Not part of the API (hidden, and may change in any release). It is here,
//! behind the `cli` feature, because the library is the one place all three
//! can reach: a crate of its own would have to be published for the command
//! to depend on it.

mod chart;

pub use chart::{Series, line_chart};

/// The CPU's model name (Linux), or else the architecture.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

/// The value at quantile `q` (0 to 1) of `values`, by nearest rank: the one
/// at index `⌊len × q⌋` once sorted (the last for `q` = 1); `None` if there
/// are none. Reorders `values` (a selection, not a sort).
pub fn quantile<T: Ord + Copy>(values: &mut [T], q: f64) -> Option<T> {
    let last = values.len().checked_sub(1)?;
    let at = ((values.len() as f64 * q) as usize).min(last);
    Some(*values.select_nth_unstable(at).1)
}

/// The load averages over 1, 5 and 15 minutes (Linux), if known.
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(str::parse);
    let mut next = || fields.next()?.ok();
    Some([next()?, next()?, next()?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut values = [9, 1, 8, 2, 7, 3, 6, 4, 5, 0];
        assert_eq!(quantile(&mut values, 0.0), Some(0));
        assert_eq!(quantile(&mut values, 0.5), Some(5));
        assert_eq!(quantile(&mut values, 0.99), Some(9));
        assert_eq!(quantile(&mut values, 1.0), Some(9));
        assert_eq!(quantile(&mut [3], 0.5), Some(3));
        // 200 claim times, as lease_measure takes: the 99th percentile is
        // the 199th smallest (index 198), not an interpolation's 197.
        let mut many: Vec<u32> = (0..200).rev().collect();
        assert_eq!(quantile(&mut many, 0.99), Some(198));
        assert_eq!(quantile(&mut many, 0.5), Some(100));
        assert_eq!(quantile::<u64>(&mut [], 0.5), None);
    }

    #[test]
    fn the_machine_is_described() {
        assert!(!cpu_model().is_empty());
        if cfg!(target_os = "linux") {
            let loads = load_average().expect("Linux has /proc/loadavg");
            assert!(
                loads.iter().all(|l| l.is_finite() && *l >= 0.0),
                "{loads:?}"
            );
        }
    }
}
