//! What a run measures and for how long: quick or full, and the filter.

use std::time::Duration;

use criterion::Criterion;

/// The run's settings, from the environment and the command line.
pub struct Settings {
    /// `FLAKEID_BENCH_QUICK`: seconds per view instead of minutes.
    pub quick: bool,
    /// The first free command-line argument: runs only what contains it.
    pub filter: Option<String>,
    pub cap_time: Duration,
    pub latency_time: Duration,
}

impl Settings {
    pub fn from_env() -> Settings {
        let quick = std::env::var_os("FLAKEID_BENCH_QUICK").is_some_and(|v| v != "0");
        // criterion's options that take a value; anything else free is a filter.
        const WITH_VALUE: [&str; 17] = [
            "--measurement-time",
            "--warm-up-time",
            "--sample-size",
            "--save-baseline",
            "-s",
            "--baseline",
            "-b",
            "--baseline-lenient",
            "--load-baseline",
            "--color",
            "-c",
            "--output-format",
            "--noise-threshold",
            "--confidence-level",
            "--significance-level",
            "--nresamples",
            "--profile-time",
        ];
        let mut filter = None;
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            if WITH_VALUE.contains(&arg.as_str()) {
                args.next();
            } else if !arg.starts_with('-') && filter.is_none() {
                filter = Some(arg);
            }
        }
        Settings {
            quick,
            filter,
            cap_time: Duration::from_millis(if quick { 200 } else { 1000 }),
            latency_time: Duration::from_millis(if quick { 100 } else { 500 }),
        }
    }

    /// Whether the filter, if any, selects the measurement `name`.
    pub fn selects(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| name.contains(f))
    }

    /// criterion, configured for a quick or a full run and then by its own
    /// command-line options.
    pub fn criterion(&self) -> Criterion {
        let c = Criterion::default();
        let c = if self.quick {
            c.sample_size(10)
                .warm_up_time(Duration::from_millis(200))
                .measurement_time(Duration::from_millis(500))
        } else {
            c.sample_size(30)
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(2))
        };
        c.configure_from_args()
    }
}
