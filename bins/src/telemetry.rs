//! Traces over OTLP (`[telemetry] otlp_endpoint`), from Warden's `tracing`
//! spans.
//!
//! The call pipeline opens a span per call (`tools/call`, with agent,
//! server, tool and outcome) and child spans for an approval wait and for
//! each upstream attempt; `tracing-opentelemetry` turns them into
//! OpenTelemetry spans, and the SDK's batch processor sends them to the
//! collector over OTLP/HTTP (protobuf) on hyper.
//!
//! Only `warden serve` exports, and only when its config names a
//! collector: the layer is built with the subscriber, before anything
//! runs (a layer added later, through a reload slot, cannot be reached by
//! `OpenTelemetrySpanExt`, which trace context needs). Without an endpoint
//! there is no layer, no exporter and no exporter task. The layer takes
//! spans and events at INFO and above, whatever `-v` says of the log.

use std::sync::{Mutex, OnceLock};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::{Filtered, LevelFilter};
use tracing_subscriber::{Layer as _, Registry};
use warden_config::{Discovered, TelemetryConfig, WardenConfig};

/// The OpenTelemetry layer, filtered to INFO.
pub(crate) type OtelLayer = Filtered<
    tracing_opentelemetry::OpenTelemetryLayer<Registry, opentelemetry_sdk::trace::Tracer>,
    LevelFilter,
    Registry,
>;

/// The provider exporting, kept to flush it when the daemon stops.
static PROVIDER: OnceLock<Mutex<Option<SdkTracerProvider>>> = OnceLock::new();

/// The layer for `command`: `warden serve` whose config names a collector
/// gets one; the error, when that collector cannot be used.
pub(crate) fn for_command(command: &crate::cli::Command) -> (Option<OtelLayer>, Option<anyhow::Error>) {
    let crate::cli::Command::Serve { config, .. } = command else { return (None, None) };
    // A config that does not load is `serve`'s to report, in its own words.
    let Ok(Discovered::Loaded { config, .. }) = WardenConfig::discover(config.as_deref()) else { return (None, None) };
    match layer(&config.telemetry) {
        Ok(layer) => (layer, None),
        Err(error) => (None, Some(error)),
    }
}

/// The layer for `config`, when it names a collector. Must run inside the
/// tokio runtime (the batch processor is a task on it).
fn layer(config: &TelemetryConfig) -> anyhow::Result<Option<OtelLayer>> {
    let Some(url) = config.traces_url() else { return Ok(None) };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .build()
        .map_err(|error| anyhow::anyhow!("cannot export traces to {url}: {error}"))?;
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .with_attributes([
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("service.instance.id", format!("warden pid {}", std::process::id())),
        ])
        .build();
    let processor = BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build();
    let provider = SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource).build();
    let tracer = provider.tracer("warden");
    *PROVIDER.get_or_init(|| Mutex::new(None)).lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(provider);
    Ok(Some(tracing_opentelemetry::layer().with_tracer(tracer).with_filter(LevelFilter::INFO)))
}

/// Sends what is buffered and stops exporting (the daemon is stopping).
/// Blocks on the exporter's task: call it off the runtime's workers.
pub(crate) fn flush() {
    let provider = PROVIDER.get().and_then(|slot| slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take());
    if let Some(provider) = provider {
        let _ = provider.shutdown();
    }
}
