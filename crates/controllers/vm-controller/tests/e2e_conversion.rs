//! The VirtualMachine conversion webhook, called by the real kube-apiserver over TLS
//! (kubebuilder's multi-version tutorial, end to end):
//!
//! * a VirtualMachine created as v1alpha1 reads back as v1beta1, and one created as
//!   v1beta1 reads back as v1alpha1 and as itself, every field kept (the values the
//!   other version cannot hold travel in annotations), lists and status included;
//! * the controller, which only ever reads and writes v1alpha1, runs a VirtualMachine
//!   a client created as v1beta1, and the client sees its status in v1beta1;
//! * `kubectl get vm` prints each version's columns;
//! * with the webhook down, reads of v1beta1 fail with the API server's error while
//!   v1alpha1 (the stored version) still works, and both recover when it is back. An
//!   informer on v1beta1 that synced before keeps serving its last state (its watch stays
//!   open and silent: the API server's watch cache cannot convert the change and tells
//!   its watchers nothing); one that starts meanwhile backs off (its requests counted),
//!   says so in a log line, `reflector_list_errors_total` and on the pipeline page; both
//!   catch up on their own once the webhook answers again.
//!
//! A test binary of its own: the tests point the cluster-wide VirtualMachine CRD's
//! conversion at their own webhook server (`url` + `caBundle`, as envtest's
//! `CRDInstallOptions` does), which other binaries sharing the control plane set back
//! to the in-cluster Service when they install the CRDs. Test binaries run one after
//! another; within this one, [`CRD`] makes the tests take turns.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use apis::cloudnative::v1alpha1::{
    VirtualMachinePhase, VirtualMachineResource, VirtualMachineSpec, VirtualMachineStatus,
};
use apis::cloudnative::{v1alpha1, v1beta1};
use cache::SharedInformerFactory;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use record::{BroadcasterOptions, EventBroadcaster};
use testenv::inject::ResponseLog;
use testenv::webhook::WebhookCerts;
use testenv::{Check, TestEnv, wait_for};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use vm_controller::{CONTROLLER_NAME, VirtualMachineControllerOptions};

/// Generous: a loaded 2-core CI machine runs other work at the same time.
const TIMEOUT: Duration = Duration::from_secs(90);

/// The CRD's conversion is cluster-wide: one test at a time points it at its server.
static CRD: Mutex<()> = Mutex::const_new(());

/// The conversion webhook served on `addr` until stopped.
struct ConversionServer {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl ConversionServer {
    /// Serves `vm_controller::conversion` (what `cmd/vm-controller` registers) with the
    /// certificate in `certs`, on `addr` (port 0: any).
    async fn start(certs: &WebhookCerts, addr: SocketAddr) -> anyhow::Result<Self> {
        let mut server = webhook::WebhookServer::new(addr.to_string().parse()?, certs.dir());
        vm_controller::conversion::register(&mut server)?;
        let bound = server.bind().await?.expect("an address was given");
        let addr = bound.local_addr();
        let stop = CancellationToken::new();
        let task = tokio::spawn(bound.serve(stop.clone()));
        Ok(Self { addr, stop, task })
    }

    /// Stops serving and waits until the port is closed.
    async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// The shipped VirtualMachine CRD, its conversion webhook at `addr` (a `url` and the
/// test CA as `caBundle`) instead of the in-cluster Service.
fn crd_calling(addr: SocketAddr, ca_pem: &str) -> CustomResourceDefinition {
    let shipped = vec![apis::crds::virtual_machine_crd()];
    let crd = testenv::crd::with_conversion_webhook_at(shipped, addr, ca_pem)
        .pop()
        .expect("one CRD in, one out");
    let url = crd
        .spec
        .conversion
        .as_ref()
        .and_then(|c| c.webhook.as_ref()?.client_config.as_ref()?.url.clone());
    assert_eq!(
        url,
        Some(format!("https://{addr}{}", apis::crds::CONVERSION_PATH)),
        "the shipped CRD converts by webhook at its Service's path"
    );
    crd
}

/// Installs the CRD calling `server`, and waits until the API server does (it
/// rebuilds a CRD's storage, conversion included, a moment after an update): a
/// v1beta1 list that needs a conversion succeeds.
async fn install_crd_calling(
    env: &TestEnv,
    server: &ConversionServer,
    certs: &WebhookCerts,
) -> anyhow::Result<()> {
    let crd = crd_calling(server.addr, &certs.ca_pem());
    testenv::crd::install_crds(env.client(), &[crd]).await?;
    let probe = "conversion-probe";
    alphas(env)
        .create(&PostParams::default(), &alpha_vm(probe, "1"))
        .await?;
    let betas = betas(env);
    wait_for(
        "the API server to call the conversion webhook",
        TIMEOUT,
        || async {
            Ok::<_, kube::Error>(match betas.get(probe).await {
                Ok(_) => Check::Ready(()),
                Err(e) => Check::Pending(e.to_string()),
            })
        },
    )
    .await?;
    alphas(env).delete(probe, &DeleteParams::default()).await?;
    Ok(())
}

/// Points the CRD back at the in-cluster Service, as shipped (what the next test
/// binary would install anyway), after deleting this test's VirtualMachines while
/// the webhook still answers: the namespace controller lists them in the preferred
/// version (v1beta1) when it deletes the namespace, which needs the webhook.
async fn restore(env: &TestEnv) -> anyhow::Result<()> {
    alphas(env)
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    testenv::crd::install_crds(env.client(), &apis::crds()).await?;
    Ok(())
}

fn alphas(env: &TestEnv) -> Api<v1alpha1::VirtualMachine> {
    Api::namespaced(env.client().clone(), env.namespace())
}

fn betas(env: &TestEnv) -> Api<v1beta1::VirtualMachine> {
    Api::namespaced(env.client().clone(), env.namespace())
}

fn alpha_vm(name: &str, cpu: &str) -> v1alpha1::VirtualMachine {
    v1alpha1::VirtualMachine::new(
        name,
        VirtualMachineSpec {
            resource: VirtualMachineResource::new(cpu, "2Gi", "10Gi"),
        },
    )
}

/// A started informer on v1beta1 VirtualMachines in the test's namespace, on a client of
/// its own whose responses `requests` logs.
async fn v1beta1_informer(
    env: &TestEnv,
    requests: &ResponseLog,
    cancel: &CancellationToken,
) -> anyhow::Result<cache::SharedIndexInformer<v1beta1::VirtualMachine>> {
    let client = kube::client::ClientBuilder::try_from(env.control_plane().config().await?)?
        .with_layer(requests)
        .build();
    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    let informer = factory.informer_for_api(
        Api::<v1beta1::VirtualMachine>::namespaced(client, env.namespace()),
        cache::InformerOptions::default(),
    );
    factory.start(cancel);
    Ok(informer)
}

/// Every log line written while it is the test's subscriber's writer.
#[derive(Clone, Default)]
struct LogCapture(Arc<std::sync::Mutex<Vec<u8>>>);

impl LogCapture {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("not poisoned")).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

fn annotation<'a>(meta: &'a kube::api::ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

#[tokio::test]
async fn a_vm_written_in_either_version_reads_back_in_the_other() -> anyhow::Result<()> {
    let _turn = CRD.lock().await;
    let env = TestEnv::with_prefix("conversion").await?;
    let certs = WebhookCerts::temporary()?;
    let server = ConversionServer::start(&certs, "127.0.0.1:0".parse()?).await?;
    install_crd_calling(&env, &server, &certs).await?;
    let post = PostParams::default();

    // Written as v1alpha1 (stored as is), read as v1beta1 (converted).
    let mut alpha = alpha_vm("alpha", "1500m");
    alpha.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    alphas(&env).create(&post, &alpha).await?;
    let status = VirtualMachineStatus {
        phase: VirtualMachinePhase::Active,
        reason: None,
        server: None,
        last_update_time: None,
    };
    alphas(&env)
        .patch_status(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": status})),
        )
        .await?;
    let read = betas(&env).get("alpha").await?;
    assert_eq!(
        read.spec,
        v1beta1::VirtualMachineSpec::new(2, "2Gi", "10Gi")
    );
    assert_eq!(read.status.as_ref(), Some(&status));
    assert_eq!(read.metadata.labels, alpha.metadata.labels);
    assert_eq!(
        annotation(&read.metadata, v1beta1::CPU_ANNOTATION),
        Some("1500m"),
        "the quantity v1beta1 cannot hold travels in an annotation"
    );
    let stored = alphas(&env).get("alpha").await?;
    assert_eq!(stored.spec, alpha.spec, "stored as written");
    assert_eq!(stored.metadata.annotations, None);

    // Written as v1beta1 (converted to v1alpha1 to be stored), read as both.
    let mut beta =
        v1beta1::VirtualMachine::new("beta", v1beta1::VirtualMachineSpec::new(3, "1Gi", "5Gi"));
    beta.spec.root_disk.image = Some("debian-13".into());
    betas(&env).create(&post, &beta).await?;
    let stored = alphas(&env).get("beta").await?;
    assert_eq!(
        stored.spec.resource,
        VirtualMachineResource::new("3", "1Gi", "5Gi")
    );
    assert_eq!(
        annotation(&stored.metadata, v1beta1::ROOT_DISK_IMAGE_ANNOTATION),
        Some("debian-13"),
        "the field v1alpha1 has not is stored in an annotation"
    );
    let read = betas(&env).get("beta").await?;
    assert_eq!(read.spec, beta.spec, "read back as written, image included");
    assert_eq!(read.metadata.annotations, None);

    // A v1beta1 update of a field v1alpha1 has not; a list converts every item.
    betas(&env)
        .patch(
            "beta",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"rootDisk": {"image": "debian-14"}}})),
        )
        .await?;
    let stored = alphas(&env).get("beta").await?;
    assert_eq!(
        annotation(&stored.metadata, v1beta1::ROOT_DISK_IMAGE_ANNOTATION),
        Some("debian-14")
    );
    let listed: Vec<_> = betas(&env)
        .list(&ListParams::default())
        .await?
        .into_iter()
        .map(|vm| (vm.metadata.name.unwrap_or_default(), vm.spec.compute.cpus))
        .collect();
    assert_eq!(listed, [("alpha".to_string(), 2), ("beta".to_string(), 3)]);

    // `kubectl get vm` asks for the preferred version, v1beta1, and prints its columns;
    // the fully qualified resource gives v1alpha1's.
    let table = |resource: &str| -> anyhow::Result<String> {
        let out = env
            .control_plane()
            .kubectl()
            .args(["get", resource, "-n", env.namespace()])
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "kubectl: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8(out.stdout)?)
    };
    let beta_table = table("vm")?;
    let header: Vec<&str> = beta_table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "PHASE", "CPUS", "MEMORY", "STATE", "AGE"],
        "{beta_table}"
    );
    assert!(
        beta_table
            .lines()
            .any(|l| l.starts_with("alpha") && l.contains("Active")),
        "{beta_table}"
    );
    let alpha_table = table("virtualmachines.v1alpha1.cloudnative.tw")?;
    let header: Vec<&str> = alpha_table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "PHASE", "CPU", "MEMORY", "STATE", "AGE"],
        "{alpha_table}"
    );
    assert!(
        alpha_table
            .lines()
            .any(|l| l.starts_with("alpha") && l.contains("1500m")),
        "{alpha_table}"
    );

    restore(&env).await?;
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_controller_runs_a_vm_created_as_v1beta1_on_v1alpha1() -> anyhow::Result<()> {
    let _turn = CRD.lock().await;
    let env = TestEnv::with_prefix("conversion").await?;
    let certs = WebhookCerts::temporary()?;
    let server = ConversionServer::start(&certs, "127.0.0.1:0".parse()?).await?;
    install_crd_calling(&env, &server, &certs).await?;

    // The controller as cmd/vm-controller runs it: a v1alpha1 informer, v1alpha1 writes.
    let cancel = CancellationToken::new();
    let factory = SharedInformerFactory::new(env.client().clone(), Duration::ZERO);
    let events = EventBroadcaster::new(BroadcasterOptions::default());
    let recorder = events.new_recorder(CONTROLLER_NAME, "e2e-conversion");
    let driver = Arc::new(vm_driver::FakeDriver::new());
    let options = VirtualMachineControllerOptions {
        namespace: Some(env.namespace().to_string()),
        ..Default::default()
    };
    let controller =
        vm_controller::new_controller(env.client().clone(), &factory, recorder, driver, options);
    factory.start(&cancel);
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { controller.run(1, cancel).await }
    });

    let beta =
        v1beta1::VirtualMachine::new("web", v1beta1::VirtualMachineSpec::new(2, "64Mi", "1Gi"));
    betas(&env).create(&PostParams::default(), &beta).await?;
    let betas = betas(&env);
    let active = wait_for(
        "VirtualMachine web Active, read as v1beta1",
        TIMEOUT,
        || async {
            let vm = betas.get("web").await?;
            let phase = vm.status.as_ref().map(|s| s.phase);
            Ok::<_, kube::Error>(Check::ready_if(
                phase == Some(VirtualMachinePhase::Active),
                vm,
                format!("phase {phase:?}"),
            ))
        },
    )
    .await?;
    assert_eq!(
        active.spec, beta.spec,
        "the controller's writes kept the v1beta1 spec"
    );
    let server_status = active
        .status
        .and_then(|s| s.server)
        .expect("the server, reported");
    assert!(!server_status.id.is_empty());

    // The controller deletes its server and removes its finalizer (v1alpha1 writes).
    alphas(&env).delete("web", &DeleteParams::default()).await?;
    let alphas = alphas(&env);
    wait_for("VirtualMachine web gone", TIMEOUT, || async {
        let vm = alphas.get_opt("web").await?;
        Ok::<_, kube::Error>(Check::ready_if(vm.is_none(), (), "still there"))
    })
    .await?;
    cancel.cancel();
    run.await??;
    restore(&env).await?;
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn with_the_webhook_down_reads_of_the_other_version_fail_then_recover() -> anyhow::Result<()>
{
    let _turn = CRD.lock().await;
    let logs = LogCapture::default();
    let _logging = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_ansi(false)
            .finish(),
    );
    let registry = metrics::Registry::new();
    metrics::ReflectorMetrics::new(&registry).install_global();
    let env = TestEnv::with_prefix("conversion").await?;
    let certs = WebhookCerts::temporary()?;
    let server = ConversionServer::start(&certs, "127.0.0.1:0".parse()?).await?;
    let addr = server.addr;
    install_crd_calling(&env, &server, &certs).await?;
    alphas(&env)
        .create(&PostParams::default(), &alpha_vm("web", "2"))
        .await?;
    assert_eq!(betas(&env).get("web").await?.spec.compute.cpus, 2);

    // An informer on v1beta1 (every list and watch event converted), synced while the
    // webhook answers.
    let cancel = CancellationToken::new();
    let running = v1beta1_informer(&env, &ResponseLog::new(), &cancel).await?;
    assert!(running.wait_for_cache_sync(&cancel).await);
    let cpus = |informer: &cache::SharedIndexInformer<v1beta1::VirtualMachine>| {
        informer
            .lister()
            .namespaced(env.namespace())
            .get("web")
            .map(|vm| vm.spec.compute.cpus)
            .ok()
    };
    assert_eq!(cpus(&running), Some(2));

    server.stop().await;
    // A change the informer must convert to see: its watch fails, then its relists.
    alphas(&env)
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"resource": {"cpu": "3"}}})),
        )
        .await?;
    let error = match betas(&env).get("web").await {
        Err(kube::Error::Api(status)) => status,
        other => panic!("a v1beta1 read without the webhook: {other:?}"),
    };
    // The API server's own words, naming the conversion and why it failed.
    assert!(
        error
            .message
            .contains("conversion webhook for cloudnative.tw/v1alpha1, Kind=VirtualMachine failed"),
        "{error:?}"
    );
    assert!(error.message.contains("connection refused"), "{error:?}");
    // The stored version needs no conversion: v1alpha1 clients (the controller) go on.
    assert_eq!(alphas(&env).get("web").await?.spec.resource.cpu.0, "3");
    assert!(betas(&env).list(&ListParams::default()).await.is_err());

    // A process starting now (a restart, a second replica): its informer's lists fail.
    // It backs off: 0.8 s doubling (jittered up to 2x), a streaming and a paged list per
    // attempt; a loop would make hundreds of requests in 20 s.
    let requests = ResponseLog::new();
    let starting = v1beta1_informer(&env, &requests, &cancel).await?;
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(!starting.has_synced());
    let vm_requests = requests.count(|r| r.resource() == Some("virtualmachines"));
    println!("the starting informer: {vm_requests} requests in 20 s without the webhook");
    assert!(
        (2..=14).contains(&vm_requests),
        "{vm_requests} requests for virtualmachines in 20 s: {:?}\n{}",
        requests.entries(),
        logs.text()
    );
    // The running informer's watch stays open and silent: the API server's watch cache
    // for v1beta1 cannot convert the change, and says nothing to its watchers (client-go
    // sees the same). Its listers keep the last state.
    assert_eq!(cpus(&running), Some(2), "the listers keep the last state");
    let trouble = pipeline::troubles()
        .read()
        .into_iter()
        .find(|t| t.component == "VirtualMachine")
        .context("the failure on the pipeline page")?;
    assert!(
        trouble.last_error.contains("conversion webhook") && trouble.failures >= 2,
        "{trouble:?}"
    );
    let text = registry.encode()?;
    let list_errors: f64 = text
        .lines()
        .filter(|l| l.starts_with("reflector_list_errors_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(list_errors >= 2.0, "{text}");
    let logged = logs.text();
    assert!(
        logged.contains("list failed; the cache keeps what it has")
            && logged.contains("conversion webhook for cloudnative.tw/v1alpha1"),
        "{logged}"
    );

    // Back on the same address: the API server recovers on the next request.
    let server = ConversionServer::start(&certs, addr).await?;
    let betas = betas(&env);
    let read = wait_for("v1beta1 reads to work again", TIMEOUT, || async {
        Ok::<_, kube::Error>(match betas.get("web").await {
            Ok(vm) => Check::Ready(vm),
            Err(e) => Check::Pending(e.to_string()),
        })
    })
    .await?;
    assert_eq!(read.spec.compute.cpus, 3);
    // Both informers catch up on their own: the starting one at its next attempt (at
    // most a minute away), the running one when the API server's watch cache does.
    wait_for("the informers to catch up", TIMEOUT, || async {
        let now = (cpus(&starting), cpus(&running));
        Ok::<_, kube::Error>(Check::ready_if(
            now == (Some(3), Some(3)),
            (),
            format!("cached cpus (starting, running): {now:?}"),
        ))
    })
    .await?;
    assert!(
        !pipeline::troubles()
            .read()
            .iter()
            .any(|t| t.component == "VirtualMachine"),
        "recovered: no banner"
    );
    cancel.cancel();

    restore(&env).await?;
    server.stop().await;
    Ok(())
}
