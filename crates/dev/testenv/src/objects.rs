//! Waits on API objects that e2e tests of every controller need: an object reaching a
//! state, and an Event about an object.

use std::fmt::Debug;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::wait::{Check, wait_for};

/// Waits until the object `name` exists in `api` and `check` holds for it, and returns
/// it. `seen` describes the object for the timeout message ("absent" when missing).
pub async fn wait_for_object<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(&K) -> bool,
    seen: impl Fn(&K) -> String,
) -> Result<K>
where
    K: Clone + DeserializeOwned + Debug,
{
    wait_for(what, timeout, || async {
        let obj = api.get_opt(name).await?;
        let done = obj.as_ref().is_some_and(&check);
        let described = obj.as_ref().map_or("absent".to_string(), &seen);
        Ok::<_, kube::Error>(match obj {
            Some(obj) if done => Check::Ready(obj),
            _ => Check::Pending(described),
        })
    })
    .await
}

/// Waits for an Event with `reason` about the `kind` object `name` in `namespace`,
/// and returns the first one.
pub async fn wait_for_event(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    name: &str,
    reason: &str,
    timeout: Duration,
) -> Result<Event> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let selector = format!("involvedObject.kind={kind},involvedObject.name={name},reason={reason}");
    wait_for(
        &format!("a {reason} Event for {kind} {name}"),
        timeout,
        || async {
            let events = api.list(&ListParams::default().fields(&selector)).await?;
            let count = events.items.len();
            Ok::<_, kube::Error>(match events.items.into_iter().next() {
                Some(event) => Check::Ready(event),
                None => Check::Pending(format!("{count} events")),
            })
        },
    )
    .await
}
