//! Tutorial chapter 8, admission webhooks (docs/tutorial/08-admission-webhooks.md).
//!
//! Serves the VirtualMachine webhooks (a defaulter and a validator, from
//! `vm_controller::webhook`) over TLS on 127.0.0.1, registers them with the API
//! server for the example's namespace, and shows what they do to real requests: a
//! VirtualMachine that gives only its CPU count is stored with the memory and root
//! disk the defaulter filled in; one asking for 100 CPUs, and a resize of an existing
//! one, are refused at the door with the validator's message, and nothing is stored.
//!
//! Mirrors controller-runtime's pkg/webhook (`webhook.Server`,
//! `admission.CustomDefaulter`, `admission.CustomValidator`, `admission.Denied`) and
//! envtest's `WebhookInstallOptions` (here `testenv::webhook`), which make the
//! certificates and the webhook configurations a cluster gets from cert-manager and
//! deploy/.
//!
//! The API server must be able to call 127.0.0.1: run it against the local control
//! plane.
//!
//! ```sh
//! eval "$(bash hack/control-plane.sh up | grep '^export')"
//! cargo run -p vm-controller --example tutorial_08_webhooks
//! ```

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, Config};
use testenv::tutorial::{Example, Log};
use testenv::webhook::{Webhook, WebhookCerts, WebhookSpec};
use tokio_util::sync::CancellationToken;
use webhook::WebhookServer;

/// `cpu 2, memory 512Mi, rootDisk 1Gi`.
fn describe(resource: &VirtualMachineResource) -> String {
    format!(
        "cpu {}, memory {}, rootDisk {}",
        resource.cpu.0, resource.memory.0, resource.root_disk.0
    )
}

fn vm(name: &str, cpu: &str) -> VirtualMachine {
    VirtualMachine::new(
        name,
        VirtualMachineSpec {
            resource: VirtualMachineResource::new(cpu, "64Mi", "1Gi"),
        },
    )
}

/// `<code> <message>` of the API server's refusal, with the generated webhook name
/// shown as `<webhook>`; an error if the request was admitted.
fn refusal<T>(result: kube::Result<T>, webhook_name: &str) -> Result<String> {
    match result {
        Err(kube::Error::Api(status)) => Ok(format!(
            "{} {}",
            status.code,
            status.message.replace(webhook_name, "<webhook>")
        )),
        Err(other) => Err(other).context("the request failed without an answer"),
        Ok(_) => bail!("the API server admitted a request the webhook should refuse"),
    }
}

/// The example, in `namespace` (the CRDs must be installed); returns what it printed.
///
/// It takes the client's [`Config`] rather than a client: the webhook configurations
/// are removed by a guard that needs its own client (see
/// `testenv::webhook::install_webhooks`).
pub async fn run(config: Config, namespace: &str) -> Result<String> {
    let mut log = Log::default();
    let client = Client::try_from(config.clone()).context("a client from the config")?;

    log.say("1. a webhook server: the defaulter and the validator, over TLS");
    // In a cluster, cert-manager writes tls.crt and tls.key into the directory the
    // binary serves from (--webhook-cert-dir); here, a throw-away CA and a serving
    // certificate for 127.0.0.1.
    let certs = WebhookCerts::temporary().context("making the serving certificate")?;
    let mut server = WebhookServer::new("127.0.0.1:0".parse()?, certs.dir());
    // What cmd/vm-controller does with --webhook-bind-address.
    let paths = vm_controller::webhook::register(&mut server)?;
    let [mutate, validate] = &paths[..] else {
        bail!("expected a mutate and a validate path, got {paths:?}");
    };
    log.say(format!(
        "  {mutate}: VirtualMachineDefaulter (a raw Handler: a JSON patch)"
    ));
    log.say(format!(
        "  {validate}: VirtualMachineValidator (a typed Validator)"
    ));
    let bound = server
        .bind()
        .await?
        .context("the server has an address, so it binds")?;
    let address = bound.local_addr();
    let stop = CancellationToken::new();
    let _stop_on_return = stop.clone().drop_guard();
    let serving = tokio::spawn(bound.serve(stop.clone()));
    log.say("  serving HTTPS on 127.0.0.1, on a free port");

    log.say("");
    log.say("2. registration: the API server learns where to send VirtualMachines");
    // deploy/vm-controller has these as YAML; envtest's WebhookInstallOptions makes
    // them for a test. Both only call the webhooks for objects in this namespace.
    let spec = WebhookSpec::new(namespace, address, certs.ca_pem())
        .webhook(Webhook::mutating(mutate).for_resource::<VirtualMachine>(&["CREATE"]))
        .webhook(
            Webhook::validating(validate).for_resource::<VirtualMachine>(&["CREATE", "UPDATE"]),
        );
    let guard = testenv::webhook::install_webhooks(&config, &spec)
        .await
        .context("installing the webhook configurations")?;
    let validator_name = guard
        .webhook_name(validate)
        .context("the validator's name")?
        .to_string();
    log.say("  a MutatingWebhookConfiguration (CREATE) and a ValidatingWebhookConfiguration (CREATE, UPDATE),");
    log.say("  each with url https://127.0.0.1:<port><path> and the CA as caBundle; the API server calls them now");

    log.say("");
    log.say("3. defaulting: the sizes a VirtualMachine leaves out are filled in");
    let resource = ApiResource::erase::<VirtualMachine>(&());
    let untyped: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let mut sparse = DynamicObject::new("sparse", &resource);
    sparse.data = serde_json::json!({ "spec": { "resource": { "cpu": "2" } } });
    untyped
        .create(&PostParams::default(), &sparse)
        .await
        .context("creating VirtualMachine sparse")?;
    log.say(
        "  created sparse with spec.resource {cpu: \"2\"} only (the schema requires all three)",
    );
    let vms: Api<VirtualMachine> = Api::namespaced(client.clone(), namespace);
    let stored = vms.get("sparse").await.context("reading sparse back")?;
    log.say(format!(
        "  sparse as stored: {} (256Mi of memory per CPU)",
        describe(&stored.spec.resource)
    ));

    log.say("");
    log.say("4. validation: refused at the door, nothing stored");
    let post = PostParams::default();
    let refused = refusal(vms.create(&post, &vm("huge", "100")).await, &validator_name)?;
    log.say(format!("  create huge (cpu 100) -> {refused}"));
    log.say(format!(
        "  get huge -> exists: {}",
        vms.get_opt("huge").await?.is_some()
    ));
    vms.create(&post, &vm("web", "1"))
        .await
        .context("creating VirtualMachine web")?;
    log.say("  create web (cpu 1) -> created");
    let resize = serde_json::json!({ "spec": { "resource": { "cpu": "2" } } });
    let refused = refusal(
        vms.patch("web", &PatchParams::default(), &Patch::Merge(&resize))
            .await,
        &validator_name,
    )?;
    log.say(format!("  resize web to cpu 2 -> {refused}"));
    let web = vms.get("web").await.context("reading web back")?;
    log.say(format!("  web as stored: {}", describe(&web.spec.resource)));

    // Deregister first: a configuration left behind without its server would make
    // the API server refuse every VirtualMachine write in the namespace.
    guard
        .delete()
        .await
        .context("deleting the webhook configurations")?;
    stop.cancel();
    serving.await.context("the webhook server task")?;
    Ok(log.text())
}

/// Installs the CRDs, then runs the example in a namespace of its own, deleted at the
/// end whatever happened (`testenv::tutorial::main`).
#[tokio::main]
async fn main() -> ExitCode {
    testenv::tutorial::main(
        "tutorial-08",
        &apis::crds(),
        |example: Example| async move { run(example.config, &example.namespace).await },
    )
    .await
}
