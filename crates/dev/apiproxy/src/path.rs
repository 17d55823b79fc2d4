//! What a Kubernetes API request addresses (read by `controller::testing::ApiAction`,
//! the fake API's decoder), and its query rewritten without touching the parameters it
//! does not set.

pub use controller::testing::ApiAction;
use http::{Method, Uri};

/// What `method` `uri` asks for, in client-go's terms (verb, group, version,
/// namespace, resource, name, subresource, query); `None` for what is not a resource
/// request (`/healthz`, discovery such as `/apis/apps/v1`).
pub fn action(method: &Method, uri: &Uri) -> Option<ApiAction> {
    ApiAction::parse(method, uri.path(), uri.query().unwrap_or(""))
}

/// The `namespace/name` key (`name` when cluster-scoped) of the object `action` names.
pub fn key(action: &ApiAction) -> Option<String> {
    let name = action.name.as_deref()?;
    Some(match &action.namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    })
}

/// The raw (still percent-encoded) value of the query parameter `key`, if present.
pub fn query(uri: &Uri, key: &str) -> Option<String> {
    uri.query()?
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_string())
}

/// `uri` with each `(key, value)` of `set` replacing that parameter (or appended);
/// every other parameter is kept as it was, in its place. Values are used as given
/// (encode them first if they need it).
pub fn with_query(uri: &Uri, set: &[(&str, &str)]) -> Uri {
    let mut pairs: Vec<String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(str::to_string)
        .collect();
    for (key, value) in set {
        let pair = format!("{key}={value}");
        let same = |p: &String| p.split('=').next() == Some(key);
        match pairs.iter_mut().find(|p| same(p)) {
            Some(existing) => *existing = pair,
            None => pairs.push(pair),
        }
    }
    let text = format!("{}?{}", uri.path(), pairs.join("&"));
    text.parse().unwrap_or_else(|_| uri.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action_of(method: Method, uri: &str) -> ApiAction {
        action(&method, &uri.parse().expect("a URI")).expect("a resource request")
    }

    #[test]
    fn uris_name_the_object_and_what_is_done_to_it() {
        let status = action_of(
            Method::PUT,
            "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/web/status",
        );
        assert_eq!(status.describe(), "update foos/status");
        assert_eq!(key(&status).as_deref(), Some("ns/web"));
        let watch = action_of(Method::GET, "/api/v1/pods?watch=true&resourceVersion=5");
        assert_eq!((watch.verb.as_str(), key(&watch)), ("watch", None));
        let namespace = action_of(Method::DELETE, "/api/v1/namespaces/ns");
        assert_eq!(key(&namespace).as_deref(), Some("ns"));
        for other in ["/healthz", "/apis/apps/v1", "/version"] {
            assert_eq!(action(&Method::GET, &other.parse().expect("a URI")), None);
        }
    }

    #[test]
    fn the_query_is_rewritten_in_place_and_the_rest_left_as_it_was() {
        let uri: Uri = "/api/v1/pods?labelSelector=a%3Db&resourceVersion=0&limit=500"
            .parse()
            .expect("a URI");
        assert_eq!(query(&uri, "labelSelector").as_deref(), Some("a%3Db"));
        assert_eq!(query(&uri, "continue"), None);
        let rewritten = with_query(
            &uri,
            &[("resourceVersion", "42"), ("resourceVersionMatch", "Exact")],
        );
        assert_eq!(
            rewritten.to_string(),
            "/api/v1/pods?labelSelector=a%3Db&resourceVersion=42&limit=500&resourceVersionMatch=Exact"
        );
        let bare: Uri = "/api/v1/pods".parse().expect("a URI");
        assert_eq!(
            with_query(&bare, &[("limit", "1")]).to_string(),
            "/api/v1/pods?limit=1"
        );
    }
}
