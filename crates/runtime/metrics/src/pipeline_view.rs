//! `/debug/pipeline`: the live view of the controller's pipeline, served on the
//! metrics port when `--debug-pipeline` is on.
//!
//! Three read-only endpoints over the process-wide [`pipeline`] trace:
//!
//! | path | what |
//! |---|---|
//! | `/debug/pipeline` | the page: the stages as a diagram with live counters, and a "follow" box that shows one key's trip as a timeline (plain HTML and JavaScript in the binary: no build step, nothing fetched from elsewhere) |
//! | `/debug/pipeline/state` | JSON: steps per stage so far (the page turns them into rates), sizes (FIFO depth, indexer size, queue depth, syncs in flight), what is failing now (`troubles`: a reflector whose list or watch keeps failing, shown as a red banner), recently seen keys |
//! | `/debug/pipeline/trip?key=NAMESPACE/NAME` | JSON: every step still kept for that key, in order |
//!
//! The page also reads `/metrics` from the same server for retries and reconcile
//! results. Off by default: the trace holds object keys, which a cluster may consider
//! sensitive, so exposing them is a choice.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use serde::Serialize;

/// The page.
const PAGE: &str = include_str!("pipeline_view.html");

/// How many recently seen keys the state offers for following.
const RECENT_KEYS: usize = 20;

/// The state endpoint's answer.
#[derive(Debug, Serialize)]
struct State {
    enabled: bool,
    capacity: usize,
    stages: Vec<pipeline::StageCount>,
    gauges: Vec<pipeline::GaugeValue>,
    troubles: Vec<pipeline::Trouble>,
    recent_keys: Vec<String>,
}

/// The trip endpoint's answer.
#[derive(Debug, Serialize)]
struct Trip {
    key: String,
    steps: Vec<pipeline::Step>,
}

/// Answers `path` (with `query`) if it is one of the view's endpoints.
pub(crate) fn handle(path: &str, query: Option<&str>) -> Option<Response<Full<Bytes>>> {
    match path {
        "/debug/pipeline" | "/debug/pipeline/" => Some(respond(
            StatusCode::OK,
            "text/html; charset=utf-8",
            PAGE.into(),
        )),
        "/debug/pipeline/state" => {
            let trace = pipeline::global();
            json(&State {
                enabled: trace.is_enabled(),
                capacity: trace.capacity(),
                stages: trace.counts(),
                gauges: pipeline::gauges().read(),
                troubles: pipeline::troubles().read(),
                recent_keys: trace.recent_keys(RECENT_KEYS),
            })
        }
        "/debug/pipeline/trip" => {
            let key = query.and_then(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .find(|(name, _)| name == "key")
                    .map(|(_, value)| value.into_owned())
            });
            match key {
                Some(key) if !key.is_empty() => {
                    let steps = pipeline::trip(&key);
                    json(&Trip { key, steps })
                }
                _ => Some(respond(
                    StatusCode::BAD_REQUEST,
                    "text/plain; charset=utf-8",
                    "missing ?key=NAMESPACE/NAME\n".into(),
                )),
            }
        }
        _ => None,
    }
}

fn json(value: &impl Serialize) -> Option<Response<Full<Bytes>>> {
    Some(match serde_json::to_string(value) {
        Ok(body) => respond(StatusCode::OK, "application/json", body),
        Err(e) => respond(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain; charset=utf-8",
            format!("{e}\n"),
        ),
    })
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        "X-Content-Type-Options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("Cache-Control", HeaderValue::from_static("no-store"));
    // Only this server's own script and data: nothing else may load.
    headers.insert(
        "Content-Security-Policy",
        HeaderValue::from_static(
            "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
        ),
    );
    response
}
