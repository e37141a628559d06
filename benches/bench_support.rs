//! What the benches share: reading their knobs and summarising samples.

use std::time::Duration;

/// A whole-number knob from the environment (`_` allowed as a digit
/// separator), or `default` when unset; a malformed value stops the bench.
pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(text) => text
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, not `{text}`")),
        Err(_) => default,
    }
}

/// The nearest-rank percentile.
pub(crate) fn percentile_of(mut durations: Vec<Duration>, pct: f64) -> Duration {
    durations.sort_unstable();
    let rank = ((pct / 100.0) * durations.len() as f64).ceil() as usize;
    durations[rank.clamp(1, durations.len()) - 1]
}

/// A duration in microseconds.
pub(crate) fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// The runtime a bench runs on: multi-thread, with `workers` threads when
/// given (tokio's default, one per core, otherwise).
pub(crate) fn runtime(workers: Option<usize>) -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers);
    }
    builder.enable_all().build().expect("a tokio runtime")
}
