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

use anyhow::{Context, Result, bail};
use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::{Client, Config};
use testenv::webhook::{Webhook, WebhookCerts, WebhookSpec};
use tokio_util::sync::CancellationToken;
use webhook::WebhookServer;

/// Prints the example's lines and keeps them for the caller (the e2e test reads them).
#[derive(Default)]
pub struct Log {
    lines: Vec<String>,
}

impl Log {
    fn say(&mut self, line: impl Into<String>) {
        let line = line.into();
        println!("{line}");
        self.lines.push(line);
    }

    fn text(&self) -> String {
        self.lines.join("\n") + "\n"
    }
}

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

/// Creates a namespace for the example (`tutorial-08-<random>`), returns its name.
async fn create_namespace(client: &Client) -> Result<String> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            generate_name: Some("tutorial-08-".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .context("creating the example's namespace")?;
    created
        .metadata
        .name
        .context("the API server returned a namespace without a name")
}

async fn delete_namespace(client: &Client, name: &str) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting namespace {name}"))?;
    Ok(())
}

#[tokio::main]
async fn main() {
    if let Err(e) = main_with_namespace().await {
        // What failed and why, without a backtrace. Only the first cause: kube's
        // errors already repeat their own sources in their messages.
        eprintln!("error: {e}");
        if let Some(cause) = e.chain().nth(1) {
            eprintln!("  cause: {cause}");
        }
        std::process::exit(1);
    }
}

/// Installs the CRDs, then runs the example in a namespace of its own, deleted at the
/// end whatever happened.
async fn main_with_namespace() -> Result<()> {
    let config = Config::infer().await.context(
        "no Kubernetes config: start a control plane with `bash hack/control-plane.sh up` \
         and export the KUBECONFIG it prints",
    )?;
    let client = Client::try_from(config.clone()).context("a client from the config")?;
    // deploy/crds, as `kubectl apply --server-side -f deploy/crds/` would install
    // them (idempotent), then waits until VirtualMachines are served.
    testenv::crd::install_crds(&client, &apis::crds())
        .await
        .context("installing the CRDs")?;
    let namespace = create_namespace(&client).await?;
    println!("(working in namespace {namespace}, shown as <namespace>; deleted at the end)\n");
    let result = run(config, &namespace).await;
    let cleanup = delete_namespace(&client, &namespace).await;
    if cleanup.is_ok() {
        println!("\n(namespace {namespace} deleted)");
    }
    result.and(cleanup)
}
