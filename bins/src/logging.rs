//! Where log lines go, and at what level: stderr, or the daemon's own
//! rotating `daemon.log`; text or JSON. `RUST_LOG` wins over `-v`. Quiet
//! by default: the commands report failed servers themselves. Traces are a
//! layer of their own, for `warden serve` with a collector
//! ([`crate::telemetry`]).
//!
//! Two things here are about cost, since the daemon logs at info and every
//! call passes three spans (`mcp request`, `tools/call`, `upstream
//! tools/call`):
//!
//! - the log formats a span's fields when the span opens, whether or not
//!   anything inside it logs — 24-38 µs of CPU per call on the front, for
//!   lines that rarely come. So spans reach the log only at debug, where a
//!   line's span prefix (`tools/call{gen_ai.tool.name=..}:`) is worth it;
//! - without a trace collector there is no trace layer at all: an absent
//!   layer (`Option::None`) counts as wanting every span, which made the
//!   span registry record spans nobody reads.

use std::io::IsTerminal as _;

use tracing::Subscriber;
use tracing_subscriber::filter::{filter_fn, FilterExt as _, LevelFilter};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

use crate::daemon::RotatingLog;
use crate::telemetry::OtelLayer;

/// Installs the global subscriber. `verbose`: 0 errors, 1 info, 2+ debug.
pub(crate) fn init(verbose: u8, log: Option<RotatingLog>, json: bool, traces: Option<OtelLayer>) {
    match traces {
        Some(traces) => {
            let traced = tracing_subscriber::registry().with(traces);
            let logging = logging_layer(verbose, log, json);
            traced.with(logging).init();
        }
        None => tracing_subscriber::registry().with(logging_layer(verbose, log, json)).init(),
    }
}

/// The log lines' layer, over any span registry.
fn logging_layer<S>(verbose: u8, log: Option<RotatingLog>, json: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    let default = match verbose {
        0 => "error",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let spans_too = filter.max_level_hint().is_none_or(|level| level >= LevelFilter::DEBUG);
    let filter = filter.and(filter_fn(move |meta| spans_too || meta.is_event()));
    let logging = tracing_subscriber::fmt::layer().with_target(false);
    match (json, log) {
        (true, Some(log)) => logging.json().with_writer(log).with_filter(filter).boxed(),
        (true, None) => logging.json().with_writer(std::io::stderr).with_filter(filter).boxed(),
        (false, Some(log)) => logging.with_writer(log).with_ansi(false).with_filter(filter).boxed(),
        (false, None) => {
            logging.with_writer(std::io::stderr).with_ansi(std::io::stderr().is_terminal()).with_filter(filter).boxed()
        }
    }
}
