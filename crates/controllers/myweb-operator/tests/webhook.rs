//! The MyWeb webhook's rule, against an informer cache filled from a scripted source:
//! a node port already used by another MyWeb is refused, naming who has it.

use std::sync::Arc;
use std::time::Duration;

use apis::operator::v1::{MyWeb, MyWebSpec};
use cache::SharedIndexInformer;
use cache::testing::ScriptedListerWatcher;
use myweb_operator::webhook::MyWebValidator;
use tokio_util::sync::CancellationToken;
use webhook::Validator;

fn web(namespace: &str, name: &str, port: i32) -> MyWeb {
    let mut web = MyWeb::new(name, MyWebSpec::new("nginx", port, "<p>hi</p>"));
    web.metadata.namespace = Some(namespace.into());
    web.metadata.resource_version = Some("1".into());
    web
}

#[tokio::test]
async fn a_node_port_used_by_another_myweb_is_refused() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![web("team-a", "site", 30080)], "10");
    let informer: SharedIndexInformer<MyWeb> =
        SharedIndexInformer::new("mywebs", Arc::new(lw), Duration::ZERO);
    let validator = MyWebValidator::new(informer.clone());

    // Before the cache has synced it cannot vouch for anything: 503, retry later.
    let early = validator
        .validate_create(&web("team-b", "blog", 30081))
        .unwrap_err();
    assert_eq!(early.code, 503, "{early}");

    let stop = CancellationToken::new();
    tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    assert!(informer.wait_for_cache_sync(&stop).await);

    let taken = validator
        .validate_create(&web("team-b", "blog", 30080))
        .unwrap_err();
    assert_eq!(taken.code, 422);
    assert_eq!(
        taken.message,
        "spec.nodePortNumber: Duplicate value: 30080: already used by MyWeb team-a/site"
    );
    assert!(
        validator
            .validate_create(&web("team-b", "blog", 30081))
            .is_ok()
    );
    // Its own port is not a conflict (an update of the same MyWeb), and an update that
    // keeps the port is not checked again.
    let me = web("team-a", "site", 30080);
    assert!(validator.validate_create(&me).is_ok());
    assert!(validator.validate_update(&me, &me).is_ok());
    let moved = web("team-b", "blog", 30081);
    let onto_taken = web("team-b", "blog", 30080);
    assert!(validator.validate_update(&moved, &onto_taken).is_err());
    stop.cancel();
}
