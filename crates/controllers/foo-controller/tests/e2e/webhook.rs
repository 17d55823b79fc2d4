//! The Foo admission webhook, called by the real kube-apiserver over real TLS: a bad
//! Foo is refused at the door with the webhook's message (what `kubectl apply` shows),
//! a good one passes, and a rename is refused; with the webhook down and
//! `failurePolicy: Fail`, writes are refused until it is back.

use ::webhook::{WebhookServer, validate_path};
use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use kube::api::{Api, Patch, PatchParams, PostParams};
use testenv::webhook::{Webhook, WebhookCerts, WebhookSpec};
use testenv::{Check, TestEnv, wait_for};
use tokio_util::sync::CancellationToken;

use super::*;

/// Serves the Foo webhooks on `address` (port 0: any) until `stop`; returns the
/// address bound.
async fn serve_foo_webhooks(
    certs: &WebhookCerts,
    address: &str,
    stop: &CancellationToken,
) -> anyhow::Result<std::net::SocketAddr> {
    let mut server = WebhookServer::new(address.parse()?, certs.dir())
        .with_cert_poll_interval(Duration::from_millis(200));
    foo_controller::webhook::register(&mut server)?;
    let bound = server.bind().await?.expect("an address was given");
    let addr = bound.local_addr();
    tokio::spawn(bound.serve(stop.clone()));
    Ok(addr)
}

fn api_message<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => format!("{} {}", status.code, status.message),
        other => panic!("expected the API server to refuse, got {other:?}"),
    }
}

#[tokio::test]
async fn the_api_server_refuses_a_bad_foo_with_the_webhooks_message() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(env.client()).await?;
    let certs = WebhookCerts::temporary()?;
    let stop = CancellationToken::new();
    let addr = serve_foo_webhooks(&certs, "127.0.0.1:0", &stop).await?;
    let path = validate_path::<Foo>();
    let spec = WebhookSpec::new(env.namespace(), addr, certs.ca_pem())
        .webhook(Webhook::validating(&path).for_resource::<Foo>(&["CREATE", "UPDATE"]));
    let guard = env.install_webhooks(&spec).await?;
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    let post = PostParams::default();

    // Refused at the door: nothing stored, the message names the field.
    let refused = api_message(
        foos.create(&post, &Foo::new("bad", FooSpec::new("Bad_Name!", 1)))
            .await,
    );
    let name = guard.webhook_name(&path).expect("installed").to_string();
    assert!(
        refused.starts_with("422 ")
            && refused.contains(&format!("admission webhook \"{name}\" denied the request"))
            && refused.contains("spec.deploymentName: Invalid value: \"Bad_Name!\""),
        "{refused}"
    );
    assert!(foos.get_opt("bad").await?.is_none());

    // A good one passes; scaling it passes; renaming its Deployment does not.
    foos.create(&post, &Foo::new("good", FooSpec::new("good-deploy", 1)))
        .await?;
    let scale = serde_json::json!({"spec": {"replicas": 3}});
    foos.patch("good", &PatchParams::default(), &Patch::Merge(&scale))
        .await?;
    let rename = serde_json::json!({"spec": {"deploymentName": "other"}});
    let refused = api_message(
        foos.patch("good", &PatchParams::default(), &Patch::Merge(&rename))
            .await,
    );
    assert!(refused.contains("field is immutable"), "{refused}");
    assert_eq!(foos.get("good").await?.spec.deployment_name, "good-deploy");

    // The webhook down, failurePolicy Fail: the API server refuses, saying why.
    stop.cancel();
    let down = wait_for(
        "writes refused while the webhook is down",
        TIMEOUT,
        || async {
            let result = foos
                .create(&post, &Foo::new("while-down", FooSpec::new("fine", 1)))
                .await;
            Ok::<_, anyhow::Error>(match result {
                Err(kube::Error::Api(status)) => Check::Ready(status.message),
                Err(other) => return Err(other.into()),
                Ok(_) => Check::Pending("admitted".into()),
            })
        },
    )
    .await?;
    assert!(
        down.contains(&format!("failed calling webhook \"{name}\"")),
        "{down}"
    );

    // Back on the same port: admission recovers.
    let again = CancellationToken::new();
    serve_foo_webhooks(&certs, &addr.to_string(), &again).await?;
    wait_for("admission recovers", TIMEOUT, || async {
        let result = foos
            .create(&post, &Foo::new("after", FooSpec::new("after-deploy", 1)))
            .await;
        Ok::<_, anyhow::Error>(match result {
            Ok(_) => Check::Ready(()),
            Err(e) => Check::Pending(e.to_string()),
        })
    })
    .await?;
    again.cancel();
    Ok(())
}
