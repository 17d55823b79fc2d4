//! e2e: `ApiListerWatcher::list` against a real kube-apiserver, with its one page of
//! read-ahead (`cache::lister_watcher::pager`): every object exactly once across
//! pages, a repeated or out-of-order request answered correctly (the read-ahead is
//! discarded, not served), and server errors reported as `kube::Error::Api` with the
//! server's status code, as `kube::Api` reports them.

use std::collections::BTreeSet;

use cache::{ApiListerWatcher, ListOptions, ListPage, ListerWatcher};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use testenv::TestEnv;

fn names(page: &ListPage<ConfigMap>) -> Vec<String> {
    page.items
        .iter()
        .map(|cm| cm.metadata.name.clone().unwrap())
        .collect()
}

async fn list(
    lw: &ApiListerWatcher<ConfigMap>,
    continue_token: Option<&str>,
) -> anyhow::Result<ListPage<ConfigMap>> {
    let options = ListOptions {
        resource_version: String::new(),
        limit: 10,
        continue_token: continue_token.map(str::to_string),
    };
    Ok(lw.list(&options).await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_with_read_ahead_are_exact_and_errors_keep_their_status() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-pager").await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), env.namespace());
    let created: BTreeSet<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    for name in &created {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([("pager".to_string(), "test".to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm).await?;
    }
    // The label leaves out what the cluster puts in every namespace (kube-root-ca.crt).
    let lw = ApiListerWatcher::new(api.clone()).labels("pager=test");

    // Page 1; its answer starts the request for page 2 in the background.
    let first = list(&lw, None).await?;
    let token1 = first.continue_token.clone().expect("a second page");
    // Asking for page 1 again must not be answered with the read-ahead of page 2.
    let again = list(&lw, None).await?;
    assert_eq!(names(&again), names(&first));

    // Walk the rest (the read-ahead serves pages 2 and 3).
    let mut seen: Vec<String> = names(&first);
    let mut token = Some(token1);
    let mut pages = 1;
    while let Some(t) = token {
        let page = list(&lw, Some(&t)).await?;
        assert_eq!(
            page.resource_version, first.resource_version,
            "one snapshot"
        );
        seen.extend(names(&page));
        token = page.continue_token;
        pages += 1;
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 25, "no object twice: {seen:?}");
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), created);

    // A bad selector: the server's 400 Status comes back as kube::Error::Api.
    let bad = ApiListerWatcher::new(api).labels("a in (");
    match bad.list(&ListOptions::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 400, "{status:?}"),
        other => panic!("expected a 400 Api error, got {other:?}"),
    }
    Ok(())
}
