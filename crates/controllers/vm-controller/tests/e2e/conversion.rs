//! The VirtualMachine CRD installed as a cluster has it: converted by vm-controller's
//! webhook (`vm_controller::conversion`, what cmd/vm-controller serves at `/convert`),
//! which this test process serves over TLS on 127.0.0.1 for as long as it runs, the CRD
//! pointing at it by `url` and `caBundle` as envtest does. [`install_crds`] installs it
//! so for every test of the suite.
//!
//! Not with the conversion switched off (`strategy: None`): then the API server only
//! relabels `apiVersion`, and an object written through v1beta1, the preferred version
//! (a label from `kubectl`, the `deletionTimestamp` of `kubectl delete` or of the
//! namespace controller), is pruned to v1beta1's schema and stored as `spec: {}`, which
//! the controller's v1alpha1 informer cannot decode. The test below writes through
//! v1beta1 and would fail so.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use apis::cloudnative::v1beta1;
use kube::api::{ListParams, Patch, PatchParams};
use testenv::webhook::WebhookCerts;
use tokio::sync::OnceCell;
use vm_driver::FakeDriver;

use super::*;

/// The conversion webhook of this test process: where it listens and the CA of its
/// serving certificate.
struct ConversionWebhook {
    addr: SocketAddr,
    ca_pem: String,
    /// The certificate directory it serves from, kept for the life of the process.
    _certs: WebhookCerts,
}

/// Starts (once per process) the conversion webhook on a thread and runtime of its own:
/// each `#[tokio::test]` has its own runtime, which ends with the test, and the API
/// server calls the webhook for every test's VirtualMachines, also after that test ends
/// (the namespace controller deleting its namespace).
fn conversion_webhook() -> Result<&'static ConversionWebhook, String> {
    static WEBHOOK: OnceLock<Result<ConversionWebhook, String>> = OnceLock::new();
    WEBHOOK
        .get_or_init(|| {
            let certs = WebhookCerts::temporary().map_err(|e| format!("certificates: {e}"))?;
            let dir = certs.dir().to_path_buf();
            let (bound_tx, bound_rx) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("conversion-webhook".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime for the conversion webhook");
                    runtime.block_on(async move {
                        let bind = async {
                            let mut server =
                                ::webhook::WebhookServer::new("127.0.0.1:0".parse()?, dir);
                            vm_controller::conversion::register(&mut server)?;
                            anyhow::Ok(server.bind().await?.expect("an address was given"))
                        };
                        match bind.await {
                            Ok(bound) => {
                                let _ = bound_tx.send(Ok(bound.local_addr()));
                                bound.serve(CancellationToken::new()).await;
                            }
                            Err(e) => {
                                let _ = bound_tx.send(Err(e.to_string()));
                            }
                        }
                    });
                })
                .map_err(|e| format!("spawning the webhook's thread: {e}"))?;
            let addr = bound_rx
                .recv()
                .map_err(|_| "the webhook's thread ended".to_string())?
                .map_err(|e| format!("serving the conversion webhook: {e}"))?;
            Ok(ConversionWebhook {
                addr,
                ca_pem: certs.ca_pem(),
                _certs: certs,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Installs the CRDs (idempotent; other tests of the binary do it at the same time),
/// the VirtualMachine CRD's conversion served by this process's webhook; the first call
/// also waits until the API server converts through it.
pub async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    static CONVERTING: OnceCell<()> = OnceCell::const_new();
    let webhook = conversion_webhook().map_err(anyhow::Error::msg)?;
    let crds =
        testenv::crd::with_conversion_webhook_at(apis::crds(), webhook.addr, &webhook.ca_pem);
    testenv::crd::install_crds(client, &crds).await?;
    CONVERTING
        .get_or_try_init(|| wait_until_converting(client))
        .await?;
    Ok(())
}

/// Waits until the API server calls the webhook (it rebuilds a CRD's storage, its
/// conversion included, a moment after an update): a v1beta1 create, stored as
/// v1alpha1, needs a conversion each way. A dry run: nothing is stored.
async fn wait_until_converting(client: &kube::Client) -> anyhow::Result<()> {
    let betas = Api::<v1beta1::VirtualMachine>::namespaced(client.clone(), "default");
    let probe = v1beta1::VirtualMachine::new(
        "conversion-probe",
        v1beta1::VirtualMachineSpec::new(1, "64Mi", "1Gi"),
    );
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    wait_for(
        "the API server to convert through the webhook",
        TIMEOUT,
        || async {
            Ok::<_, kube::Error>(match betas.create(&dry_run, &probe).await {
                Ok(_) => Check::Ready(()),
                Err(e) => Check::Pending(e.to_string()),
            })
        },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_vm_written_and_deleted_through_v1beta1_keeps_its_v1alpha1_spec() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("vmc-convert").await?;
    install_crds(env.client()).await?;
    let driver = Arc::new(FakeDriver::new());
    let _controller = RunningController::start(
        env.client().clone(),
        env.namespace(),
        driver.clone(),
        Duration::from_secs(60),
    );
    let created = create_vm(&env, "web", "2", "64Mi", "1Gi").await?;
    wait_for_vm(&env, "web", "web Active", is_active).await?;

    // A write through v1beta1, as `kubectl label vm web` makes: converted to v1alpha1
    // to be stored, the spec kept.
    let betas = Api::<v1beta1::VirtualMachine>::namespaced(env.client().clone(), env.namespace());
    let labelled = betas
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {"tier": "web"}}})),
        )
        .await?;
    assert_eq!(
        labelled.spec,
        v1beta1::VirtualMachineSpec::new(2, "64Mi", "1Gi")
    );
    let stored = vms(&env).get("web").await?;
    assert_eq!(stored.spec, created.spec, "the stored v1alpha1 spec, kept");
    assert_eq!(
        stored.metadata.labels.and_then(|l| l.get("tier").cloned()),
        Some("web".to_string())
    );
    // The controller's v1alpha1 informer still decodes it: it lists all of them.
    assert_eq!(vms(&env).list(&ListParams::default()).await?.items.len(), 1);

    // `kubectl delete vm web` deletes through v1beta1 too: the deletionTimestamp is
    // written through it; the controller sees it, deletes the server and removes its
    // finalizer.
    betas.delete("web", &DeleteParams::default()).await?;
    wait_for("VirtualMachine web gone", TIMEOUT, || async {
        let vm = vms(&env).get_opt("web").await?;
        let seen = format!("{:?}", vm.as_ref().map(|vm| (&vm.spec, &vm.status)));
        Ok::<_, kube::Error>(Check::ready_if(vm.is_none(), (), seen))
    })
    .await?;
    assert_eq!(driver.server_count(), 0, "the server went with the object");
    Ok(())
}
