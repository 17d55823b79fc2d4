//! The VirtualMachine admission webhooks, called by the real kube-apiserver over TLS:
//! omitted sizes are defaulted on create, a resize is refused at the door with the webhook's message (instead of being stored
//! and reported as `ResizeUnsupported` afterwards), an oversized VM is refused, a
//! valid one passes, and a certificate rotated on disk is used without a restart.

use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use testenv::TestEnv;
use testenv::webhook::{Webhook, WebhookCerts, WebhookSpec};
use tokio_util::sync::CancellationToken;

use super::install_crds;

fn vm(name: &str, cpu: &str) -> VirtualMachine {
    VirtualMachine::new(
        name,
        VirtualMachineSpec {
            resource: VirtualMachineResource::new(cpu, "64Mi", "1Gi"),
        },
    )
}

/// The API server's refusal message, or a panic if it admitted the request.
fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_resize_is_refused_at_admission_with_the_webhooks_message() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(env.client()).await?;
    let certs = WebhookCerts::temporary()?;
    let mut server = ::webhook::WebhookServer::new("127.0.0.1:0".parse()?, certs.dir())
        .with_cert_poll_interval(std::time::Duration::from_millis(200));
    let paths = vm_controller::webhook::register(&mut server)?;
    let bound = server.bind().await?.expect("an address was given");
    let (addr, watcher) = (bound.local_addr(), bound.cert_watcher().clone());
    let stop = CancellationToken::new();
    tokio::spawn(bound.serve(stop.clone()));
    let [mutate, validate] = &paths[..] else {
        panic!("a defaulter and a validator: {paths:?}")
    };
    let spec = WebhookSpec::new(env.namespace(), addr, certs.ca_pem())
        .webhook(Webhook::mutating(mutate).for_resource::<VirtualMachine>(&["CREATE"]))
        .webhook(
            Webhook::validating(validate).for_resource::<VirtualMachine>(&["CREATE", "UPDATE"]),
        );
    let _guard = env.install_webhooks(&spec).await?;
    let vms: Api<VirtualMachine> = Api::namespaced(env.client().clone(), env.namespace());
    let post = PostParams::default();

    // Sizes left out are filled in by the defaulter (memory per CPU), before the
    // schema's `required` is checked.
    let untyped: Api<DynamicObject> = Api::namespaced_with(
        env.client().clone(),
        env.namespace(),
        &ApiResource::erase::<VirtualMachine>(&()),
    );
    let mut sparse = DynamicObject::new("sparse", &ApiResource::erase::<VirtualMachine>(&()));
    sparse.data = serde_json::json!({"spec": {"resource": {"cpu": "2"}}});
    untyped.create(&post, &sparse).await?;
    let defaulted = vms.get("sparse").await?.spec.resource;
    assert_eq!(
        (
            defaulted.cpu.0.as_str(),
            defaulted.memory.0.as_str(),
            defaulted.root_disk.0.as_str()
        ),
        ("2", "512Mi", "1Gi")
    );

    vms.create(&post, &vm("web", "1")).await?;
    let resize = serde_json::json!({"spec": {"resource": {"cpu": "2"}}});
    let refused = refusal(
        vms.patch("web", &PatchParams::default(), &Patch::Merge(&resize))
            .await,
    );
    assert!(
        refused
            .contains("denied the request: spec.resource: Forbidden: cannot be changed from cpu=1"),
        "{refused}"
    );
    assert_eq!(vms.get("web").await?.spec.resource.cpu.0, "1");
    let refused = refusal(vms.create(&post, &vm("huge", "100")).await);
    assert!(
        refused.contains("spec.resource.cpu: Invalid value: \"100\": must be at most 64"),
        "{refused}"
    );

    // A new serving certificate on disk (same CA): picked up without a restart, and
    // the API server's next call succeeds over it.
    let before = watcher.current();
    certs.rotate()?;
    testenv::wait_for(
        "the rotated certificate loaded",
        std::time::Duration::from_secs(10),
        || async {
            let changed = !std::sync::Arc::ptr_eq(&before, &watcher.current());
            Ok::<_, anyhow::Error>(testenv::Check::ready_if(changed, (), "old certificate"))
        },
    )
    .await?;
    vms.create(&post, &vm("after-rotation", "1")).await?;
    let refused = refusal(vms.create(&post, &vm("huge-again", "100")).await);
    assert!(refused.contains("must be at most 64"), "{refused}");
    stop.cancel();
    Ok(())
}
