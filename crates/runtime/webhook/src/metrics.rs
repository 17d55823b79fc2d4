//! Webhook metrics with controller-runtime's names (pkg/webhook/internal/metrics and
//! pkg/webhook/admission/metrics), registered in the process's [`metrics::Registry`].
//!
//! | series | what it tells you |
//! |---|---|
//! | `controller_runtime_webhook_requests_total{webhook, code}` | requests per path and **HTTP** status |
//! | `controller_runtime_webhook_latency_seconds{webhook}` | time from request to response |
//! | `controller_runtime_webhook_requests_in_flight{webhook}` | requests being served now |
//! | `controller_runtime_webhook_panics_total` | handlers that panicked (and were answered 500) |
//! | `webhook_admission_denied_total{webhook, code}` | **ours**: admission requests refused |
//!
//! `webhook` is the path (`/validate-...`). The last family is not controller-runtime's:
//! its `requests_total` counts HTTP statuses, and a refused admission is an HTTP 200
//! whose body says `allowed: false`, so no controller-runtime series tells a denial from
//! an admission. `webhook_admission_denied_total` does; its `code` is the code in the
//! response's status: the validator's (403 `Forbidden` by default, 422 `Invalid`), 400
//! for an object that did not decode, 500 for a panic. It is named outside the
//! `controller_runtime_` namespace on purpose, so it can never collide with a future
//! upstream series. The denial *ratio* of a webhook is
//! `rate(webhook_admission_denied_total[5m]) / rate(controller_runtime_webhook_requests_total{code="200"}[5m])`.
//!
//! Requests to unregistered paths are not counted (the label would be whatever a scanner
//! sends), as in controller-runtime where the mux answers those before the
//! instrumentation.
//!
//! ```
//! let registry = metrics::Registry::new();
//! let webhook_metrics = webhook::WebhookMetrics::new(&registry);
//! // Given to a server: WebhookServer::new(...).with_metrics(webhook_metrics)
//! # drop(webhook_metrics);
//! assert!(registry.encode().unwrap().contains("controller_runtime_webhook_panics_total 0"));
//! ```

use std::fmt;
use std::time::Instant;

use metrics::registry::counter_family_name;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

/// The metric names.
pub mod names {
    /// Counter: requests per webhook path and HTTP status code.
    pub const REQUESTS_TOTAL: &str = "controller_runtime_webhook_requests_total";
    /// Histogram: seconds per request, per webhook path.
    pub const LATENCY: &str = "controller_runtime_webhook_latency_seconds";
    /// Gauge: requests being served, per webhook path.
    pub const IN_FLIGHT: &str = "controller_runtime_webhook_requests_in_flight";
    /// Counter: handler panics (no labels, as controller-runtime).
    pub const PANICS: &str = "controller_runtime_webhook_panics_total";
    /// Counter (ours): refused admission requests per webhook path and status code.
    pub const DENIED: &str = "webhook_admission_denied_total";
}

/// controller-runtime's `ExponentialBuckets(10e-9, 10, 12)`: 10 ns ... 1000 s, written
/// out so the exposition shows `1e-8`, not `9.999999999999999e-9`.
const LATENCY_BUCKETS: [f64; 12] = [
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabel {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookCodeLabels {
    webhook: String,
    code: String,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The webhook metric families. Create one per registry (registering twice would
/// duplicate the families) and hand clones to servers; clones share the series.
#[derive(Clone)]
pub struct WebhookMetrics {
    requests: Family<WebhookCodeLabels, Counter>,
    latency: Family<WebhookLabel, Histogram, fn() -> Histogram>,
    in_flight: Family<WebhookLabel, Gauge>,
    panics: Counter,
    denied: Family<WebhookCodeLabels, Counter>,
}

impl fmt::Debug for WebhookMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookMetrics").finish_non_exhaustive()
    }
}

impl WebhookMetrics {
    /// Creates the families and registers them in `registry` (e.g.
    /// `metrics::Metrics::new().registry`, the one `/metrics` serves).
    pub fn new(registry: &metrics::Registry) -> Self {
        let metrics = Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            in_flight: Family::default(),
            panics: Counter::default(),
            denied: Family::default(),
        };
        registry.register(
            counter_family_name(names::REQUESTS_TOTAL),
            "Total number of admission requests by HTTP status code.",
            metrics.requests.clone(),
        );
        registry.register(
            names::LATENCY,
            "Histogram of the latency of processing admission requests",
            metrics.latency.clone(),
        );
        registry.register(
            names::IN_FLIGHT,
            "Current number of admission requests being served.",
            metrics.in_flight.clone(),
        );
        registry.register(
            counter_family_name(names::PANICS),
            "Total number of webhook panics",
            metrics.panics.clone(),
        );
        registry.register(
            counter_family_name(names::DENIED),
            "Total number of admission requests refused (allowed=false), by the code in the response status.",
            metrics.denied.clone(),
        );
        metrics
    }

    /// Creates `webhook`'s series at zero (codes 200 and 500, as controller-runtime),
    /// so that `rate()` works before the first request.
    pub(crate) fn init_webhook(&self, webhook: &str) {
        for code in ["200", "500"] {
            let _ = self.requests.get_or_create(&code_labels(webhook, code));
        }
        let _ = self.in_flight.get_or_create(&label(webhook));
        let _ = self.latency.get_or_create(&label(webhook));
    }

    /// A request to `webhook` starts; the returned guard counts it in flight until it is
    /// finished or dropped.
    pub(crate) fn start(&self, webhook: &str) -> RequestTimer {
        self.in_flight.get_or_create(&label(webhook)).inc();
        RequestTimer {
            metrics: self.clone(),
            webhook: webhook.to_string(),
            started: Instant::now(),
        }
    }

    pub(crate) fn panicked(&self) {
        self.panics.inc();
    }

    pub(crate) fn denied(&self, webhook: &str, code: u16) {
        self.denied
            .get_or_create(&code_labels(webhook, &code.to_string()))
            .inc();
    }
}

/// One request being served (see [`WebhookMetrics::start`]).
pub(crate) struct RequestTimer {
    metrics: WebhookMetrics,
    webhook: String,
    started: Instant,
}

impl RequestTimer {
    /// The request was answered with HTTP status `code`.
    pub(crate) fn finish(self, code: u16) {
        self.metrics
            .requests
            .get_or_create(&code_labels(&self.webhook, &code.to_string()))
            .inc();
        self.metrics
            .latency
            .get_or_create(&label(&self.webhook))
            .observe(self.started.elapsed().as_secs_f64());
        // The in-flight gauge goes down in Drop.
    }
}

impl Drop for RequestTimer {
    fn drop(&mut self) {
        self.metrics
            .in_flight
            .get_or_create(&label(&self.webhook))
            .dec();
    }
}

fn label(webhook: &str) -> WebhookLabel {
    WebhookLabel {
        webhook: webhook.to_string(),
    }
}

fn code_labels(webhook: &str, code: &str) -> WebhookCodeLabels {
    WebhookCodeLabels {
        webhook: webhook.to_string(),
        code: code.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::testing::sample_value;

    #[test]
    fn a_request_moves_every_series() {
        let registry = metrics::Registry::new();
        let m = WebhookMetrics::new(&registry);
        m.init_webhook("/validate-x");
        let text = registry.encode().unwrap();
        let total = |text: &str, code| {
            sample_value(
                text,
                names::REQUESTS_TOTAL,
                &[("webhook", "/validate-x"), ("code", code)],
            )
        };
        assert_eq!(total(&text, "200"), Some(0.0));
        assert_eq!(total(&text, "500"), Some(0.0));

        let timer = m.start("/validate-x");
        let text = registry.encode().unwrap();
        assert_eq!(
            sample_value(&text, names::IN_FLIGHT, &[("webhook", "/validate-x")]),
            Some(1.0)
        );
        timer.finish(200);
        m.denied("/validate-x", 403);
        m.panicked();
        let text = registry.encode().unwrap();
        assert_eq!(total(&text, "200"), Some(1.0));
        assert_eq!(
            sample_value(&text, names::IN_FLIGHT, &[("webhook", "/validate-x")]),
            Some(0.0)
        );
        assert_eq!(
            sample_value(
                &text,
                "controller_runtime_webhook_latency_seconds_count",
                &[("webhook", "/validate-x")]
            ),
            Some(1.0)
        );
        assert_eq!(
            sample_value(
                &text,
                names::DENIED,
                &[("webhook", "/validate-x"), ("code", "403")]
            ),
            Some(1.0)
        );
        assert_eq!(sample_value(&text, names::PANICS, &[]), Some(1.0));
        assert!(text.contains("le=\"1e-8\""), "{text}");
    }
}
