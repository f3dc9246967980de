//! What the `flakeid bench` command and the peers bench's report
//! (`benches/peers`) share: the SVG chart, and the machine they ran on.
//!
//! Not part of the API (hidden, and may change in any release). It is here,
//! behind the `cli` feature, because the library is the one place both can
//! reach: a crate of its own would have to be published for the command to
//! depend on it.

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
