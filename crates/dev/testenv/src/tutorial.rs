//! What every tutorial example (`docs/tutorial`, `examples/tutorial_0N_*.rs`) needs
//! around the part it teaches: a client, the CRDs, a namespace of its own that is
//! deleted at the end whatever happened, and its output kept for its e2e test.
//!
//! Each example has a `pub async fn run(client, namespace) -> anyhow::Result<String>`
//! that its e2e test calls inside a [`TestEnv`](crate::TestEnv) namespace, and a
//! `main` that hands the same `run` to [`main`](crate::tutorial::main) when a reader runs it by hand:
//!
//! ```no_run
//! use std::process::ExitCode;
//! use testenv::tutorial::{Example, Log};
//!
//! /// The chapter's code; the e2e test calls this with its own namespace.
//! pub async fn run(client: kube::Client, namespace: &str) -> anyhow::Result<String> {
//!     let mut log = Log::default();
//!     log.say(format!("working in {namespace}"));
//!     let _ = client;
//!     Ok(log.text())
//! }
//!
//! #[tokio::main]
//! async fn main() -> ExitCode {
//!     testenv::tutorial::main("tutorial-00", &[], |example: Example| async move {
//!         run(example.client, &example.namespace).await
//!     })
//!     .await
//! }
//! ```

use std::error::Error as StdError;
use std::future::Future;
use std::process::ExitCode;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client, Config};

/// Prints an example's lines as they come and keeps them, so the e2e test can compare
/// the whole output with what the chapter shows.
#[derive(Debug, Default)]
pub struct Log {
    lines: Vec<String>,
}

impl Log {
    /// Prints `line` and keeps it.
    pub fn say(&mut self, line: impl Into<String>) {
        let line = line.into();
        println!("{line}");
        self.lines.push(line);
    }

    /// Every line so far, each ending in a newline.
    pub fn text(&self) -> String {
        self.lines.join("\n") + "\n"
    }
}

/// What an example run by hand gets: the client configuration from the environment
/// (`KUBECONFIG`), a client made from it, and the name of a namespace of its own.
#[derive(Clone)]
pub struct Example {
    /// The inferred client configuration (an example that registers webhooks needs the
    /// API server's address, not only a client).
    pub config: Config,
    /// A client made from [`config`](Self::config).
    pub client: Client,
    /// `<prefix>-<random>`, created for this run, deleted when it ends.
    pub namespace: String,
}

/// An example's `main`: infers the client from the environment, installs `crds` (as
/// `kubectl apply --server-side -f deploy/crds/` would; none for examples on built-in
/// types), creates a namespace `<prefix>-<random>`, calls `run` and deletes the
/// namespace whatever `run` returned.
///
/// On failure it prints what failed and its first cause (without a backtrace: kube's
/// errors already repeat their sources) and returns [`ExitCode::FAILURE`].
pub async fn main<F, Fut, E>(prefix: &str, crds: &[CustomResourceDefinition], run: F) -> ExitCode
where
    F: FnOnce(Example) -> Fut,
    Fut: Future<Output = Result<String, E>>,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    match in_namespace(prefix, crds, run).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(cause) = e.source() {
                eprintln!("  cause: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

/// A failure in [`main`]: what was being done and why.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
struct Failure {
    what: String,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl Failure {
    fn new(what: impl Into<String>, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self {
            what: what.into(),
            source: Some(source.into()),
        }
    }
}

async fn in_namespace<F, Fut, E>(
    prefix: &str,
    crds: &[CustomResourceDefinition],
    run: F,
) -> Result<(), Box<dyn StdError + Send + Sync>>
where
    F: FnOnce(Example) -> Fut,
    Fut: Future<Output = Result<String, E>>,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let config = Config::infer().await.map_err(|e| {
        Failure::new(
            "no Kubernetes config: start a control plane with `bash hack/control-plane.sh up` \
             and export the KUBECONFIG it prints",
            e,
        )
    })?;
    let client = Client::try_from(config.clone())
        .map_err(|e| Failure::new("a client from the config", e))?;
    if !crds.is_empty() {
        crate::crd::install_crds(&client, crds)
            .await
            .map_err(|e| Failure::new("installing the CRDs", e))?;
    }
    let namespace = create_namespace(&client, prefix).await?;
    println!("(working in namespace {namespace}, shown as <namespace>; deleted at the end)\n");
    let example = Example {
        config,
        client: client.clone(),
        namespace: namespace.clone(),
    };
    let result = run(example).await.map(drop).map_err(Into::into);
    let namespaces: Api<Namespace> = Api::all(client);
    let cleanup = namespaces
        .delete(&namespace, &DeleteParams::default())
        .await
        .map(drop)
        .map_err(|e| Failure::new(format!("deleting namespace {namespace}"), e).into());
    if cleanup.is_ok() {
        println!("\n(namespace {namespace} deleted)");
    }
    result.and(cleanup)
}

/// Creates `<prefix>-<random>` (the API server picks the suffix), returns its name.
async fn create_namespace(client: &Client, prefix: &str) -> Result<String, Failure> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            generate_name: Some(format!("{prefix}-")),
            ..Default::default()
        },
        ..Default::default()
    };
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .map_err(|e| Failure::new("creating the example's namespace", e))?;
    created.metadata.name.ok_or_else(|| Failure {
        what: "the API server returned a namespace without a name".into(),
        source: None,
    })
}
