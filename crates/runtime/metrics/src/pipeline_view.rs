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

/// The page's languages: English, and Traditional Chinese (Taiwan) for this project's
/// first learners (docs/zh-TW).
const LANGUAGES: [&str; 2] = ["en", "zh-TW"];

/// The page's language for a request's `Accept-Language`: the supported one the
/// browser ranks highest (`q` weights honoured); any `zh` tag gets zh-TW, the only
/// Chinese the page has; English without a header or a match.
pub(crate) fn language(accept_language: Option<&str>) -> &'static str {
    let mut best: Option<(f32, &'static str)> = None;
    for range in accept_language.unwrap_or_default().split(',') {
        let mut parts = range.split(';');
        let tag = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let lang = if tag == "zh" || tag.starts_with("zh-") {
            LANGUAGES[1]
        } else if tag == "en" || tag.starts_with("en-") {
            LANGUAGES[0]
        } else {
            continue;
        };
        if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
            best = Some((q, lang));
        }
    }
    best.map_or(LANGUAGES[0], |(_, lang)| lang)
}

/// Answers `path` (with `query`) if it is one of the view's endpoints; the page in the
/// language `accept_language` asks for.
pub(crate) fn handle(
    path: &str,
    query: Option<&str>,
    accept_language: Option<&str>,
) -> Option<Response<Full<Bytes>>> {
    match path {
        "/debug/pipeline" | "/debug/pipeline/" => {
            let lang = language(accept_language);
            let mut page = respond(
                StatusCode::OK,
                "text/html; charset=utf-8",
                PAGE.replace("__LANG__", lang),
            );
            let headers = page.headers_mut();
            headers.insert("Content-Language", HeaderValue::from_static(lang));
            headers.insert("Vary", HeaderValue::from_static("Accept-Language"));
            Some(page)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_is_the_browsers_first_supported_choice() {
        assert_eq!(language(None), "en");
        assert_eq!(language(Some("")), "en");
        assert_eq!(
            language(Some("zh-TW,zh;q=0.9,en-US;q=0.8,en;q=0.7")),
            "zh-TW"
        );
        assert_eq!(language(Some("zh-Hant-TW")), "zh-TW");
        assert_eq!(language(Some("en-US,en;q=0.9,zh-TW;q=0.8")), "en");
        assert_eq!(
            language(Some("fr-FR, zh-TW;q=0.5")),
            "zh-TW",
            "French is not offered"
        );
        assert_eq!(language(Some("ja, fr")), "en", "nothing supported: English");
        assert_eq!(
            language(Some("en;q=0.2, zh;q=0.8")),
            "zh-TW",
            "weights count"
        );
        assert_eq!(
            language(Some("zh-TW;q=0")),
            "en",
            "q=0 means not acceptable"
        );
    }

    #[test]
    fn the_page_is_served_in_that_language() {
        let page = |accept| {
            let response = handle("/debug/pipeline", None, accept).expect("the page");
            let lang = response.headers()["Content-Language"]
                .to_str()
                .unwrap()
                .to_string();
            (
                lang,
                response.headers()["Vary"].to_str().unwrap().to_string(),
            )
        };
        assert_eq!(
            page(Some("zh-TW")),
            ("zh-TW".to_string(), "Accept-Language".to_string())
        );
        assert_eq!(page(None).0, "en");
        assert!(!PAGE.replace("__LANG__", "en").contains("__LANG__"));
    }
}
