//! Secure metrics, the default, on the real control plane: the binary runs with the
//! token of the ServiceAccount deploy/sample-controller ships (so its rbac.yaml must be
//! enough to ask TokenReviews and SubjectAccessReviews), serves /metrics over HTTPS
//! with its self-signed certificate, and answers 401 without a token, 403 to a
//! ServiceAccount without metrics.yaml's reader role, and the series to one bound to
//! it; /debug/pipeline sits behind the same check, /healthz stays plain.

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kube::api::{DeleteParams, ObjectMeta};
use metrics::testing::https_get;
use testenv::{Check, wait_for};

use super::*;

/// Creates ServiceAccount `name` in the test namespace; its token.
async fn account(env: &TestEnv, name: &str) -> anyhow::Result<String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(env.client().clone(), env.namespace());
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some(name.into());
    accounts.create(&PostParams::default(), &sa).await?;
    Ok(testenv::service_account_token(env.client(), env.namespace(), name).await?)
}

/// Binds ClusterRole `role` to ServiceAccount `name` of the test namespace (a
/// ClusterRoleBinding: non-resource URLs cannot be granted in a namespace); returns the
/// binding's name, to delete at the end.
async fn bind(env: &TestEnv, role: &str, name: &str) -> anyhow::Result<String> {
    let binding = format!("{}-{name}", env.namespace());
    let bindings: Api<ClusterRoleBinding> = Api::all(env.client().clone());
    bindings
        .create(
            &PostParams::default(),
            &ClusterRoleBinding {
                metadata: ObjectMeta {
                    name: Some(binding.clone()),
                    ..Default::default()
                },
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "ClusterRole".into(),
                    name: role.into(),
                },
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: name.into(),
                    namespace: Some(env.namespace().into()),
                    ..Default::default()
                }]),
            },
        )
        .await?;
    Ok(binding)
}

/// Waits until the API server itself allows ServiceAccount `name` to GET `path`, so the
/// controller's first SubjectAccessReview cannot see the binding before RBAC does (a
/// denial would then be cached for 30 s).
async fn wait_allowed(env: &TestEnv, name: &str, path: &str) -> anyhow::Result<()> {
    let user = format!("system:serviceaccount:{}:{name}", env.namespace());
    let reviews: Api<SubjectAccessReview> = Api::all(env.client().clone());
    wait_for(
        &format!("RBAC allows {user} GET {path}"),
        TIMEOUT,
        || async {
            let review = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: Some(user.clone()),
                    groups: Some(vec![
                        "system:serviceaccounts".into(),
                        "system:authenticated".into(),
                    ]),
                    non_resource_attributes: Some(NonResourceAttributes {
                        path: Some(path.into()),
                        verb: Some("get".into()),
                    }),
                    ..Default::default()
                },
                ..Default::default()
            };
            let allowed = reviews
                .create(&PostParams::default(), &review)
                .await?
                .status
                .is_some_and(|s| s.allowed);
            Ok::<_, kube::Error>(Check::ready_if(allowed, (), format!("allowed {allowed}")))
        },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn metrics_need_a_token_and_the_metrics_reader_role() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(&env).await?;
    let ns = env.namespace().to_string();
    // The controller's own permissions (rbac.yaml, now with tokenreviews and
    // subjectaccessreviews create) and the reader roles (metrics.yaml), as shipped.
    apply_deploy_files(&env, &["namespace.yaml", "rbac.yaml", "metrics.yaml"])?;
    let controller_token =
        testenv::service_account_token(env.client(), "kube-controllers", "sample-controller")
            .await?;
    let kubeconfig = token_kubeconfig(&env, &controller_token, "secure-metrics")?;

    // Readers: one bound to the metrics reader role, one to the pipeline reader role,
    // one to nothing.
    let scraper = account(&env, "scraper").await?;
    let debugger = account(&env, "debugger").await?;
    let nobody = account(&env, "nobody").await?;
    let bindings = vec![
        bind(&env, "sample-controller-metrics-reader", "scraper").await?,
        bind(&env, "sample-controller-pipeline-reader", "debugger").await?,
    ];
    let result = async {
        wait_allowed(&env, "scraper", "/metrics").await?;
        wait_allowed(&env, "debugger", "/debug/pipeline").await?;
        wait_allowed(&env, "debugger", "/debug/pipeline/state").await?;

        // The secure default, asked for explicitly only so that Replica leaves it on.
        let replica = Replica::start(
            "secure",
            &env,
            &kubeconfig,
            &["--metrics-secure=true", "--debug-pipeline"],
        )?;
        check_secure_metrics(&env, &replica, &ns, [&scraper, &debugger, &nobody])
            .await
            .map_err(|e| anyhow::anyhow!("{e:#}\nthe replica's log:\n{}", replica.log_text()))
    }
    .await;
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(env.client().clone());
    for binding in bindings {
        cluster_bindings
            .delete(&binding, &DeleteParams::default())
            .await?;
    }
    result
}

async fn check_secure_metrics(
    env: &TestEnv,
    replica: &Replica,
    ns: &str,
    [scraper, debugger, nobody]: [&str; 3],
) -> anyhow::Result<()> {
    let get = |path: &'static str, token: Option<&str>| {
        let token = token.map(str::to_string);
        let addr = replica.metrics;
        async move { https_get(addr, path, token.as_deref()).await }
    };

    // No token, or one the API server does not know: 401, on every path.
    for path in ["/metrics", "/debug/pipeline", "/nothing"] {
        let response = get(path, None).await?;
        assert_eq!(response.status, 401, "{path}: {}", response.body);
    }
    assert_eq!(get("/metrics", Some("made-up")).await?.status, 401);
    // Plain HTTP gets no answer from the HTTPS port.
    assert!(http_get(replica.metrics, "/metrics").await.is_err());

    // Authenticated, no role: 403 naming the user. (Waits out a 500 while the shipped
    // RBAC of the controller itself propagates; a 500 is never cached.)
    let nobody_user = format!("system:serviceaccount:{ns}:nobody");
    let denied = wait_for(
        "403 for a ServiceAccount without the role",
        TIMEOUT,
        || async {
            let response = get("/metrics", Some(nobody)).await?;
            Ok::<_, std::io::Error>(Check::ready_if(
                response.status != 500,
                response.clone(),
                format!("{} {}", response.status, response.body),
            ))
        },
    )
    .await?;
    assert_eq!(
        (denied.status, denied.body.as_str()),
        (
            403,
            format!("Authorization denied for user {nobody_user}\n").as_str()
        )
    );

    // The reader role: 200 and the work's series.
    create_foo(env, "watched", 1).await?;
    let queue = [("name", "sample-controller")];
    let ok = [("controller", "sample-controller"), ("result", "success")];
    wait_for("/metrics over HTTPS shows the work", TIMEOUT, || async {
        let response = get("/metrics", Some(scraper)).await?;
        let text = &response.body;
        let adds = sample_value(text, "workqueue_adds_total", &queue);
        let success = sample_value(text, "controller_runtime_reconcile_total", &ok);
        Ok::<_, std::io::Error>(Check::ready_if(
            response.status == 200 && adds >= Some(1.0) && success >= Some(1.0),
            (),
            format!("{} adds {adds:?} success {success:?}", response.status),
        ))
    })
    .await?;

    // /debug/pipeline behind the same check: the metrics reader may not, the pipeline
    // reader may.
    assert_eq!(get("/debug/pipeline", Some(scraper)).await?.status, 403);
    let page = get("/debug/pipeline", Some(debugger)).await?;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<html"), "{}", page.body);
    let state = get("/debug/pipeline/state", Some(debugger)).await?;
    assert_eq!(state.status, 200, "{}", state.body);
    serde_json::from_str::<serde_json::Value>(&state.body)?;

    // The probes stay plain HTTP without a token.
    let healthz = http_get(replica.health, "/healthz").await?;
    assert_eq!(healthz.status, 200, "{}", healthz.body);
    Ok(())
}
