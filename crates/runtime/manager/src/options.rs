//! The flags every controller binary shares, as clap [`Args`] structs to
//! `#[command(flatten)]`, and turning them into a [`kube::Client`].
//!
//! The names are sample-controller's (`--kubeconfig`, `--master`) plus the knobs every
//! kube-controller-manager controller has (`--workers`, `--resync-period`). Every flag
//! falls back to an environment variable, which is how a Deployment usually sets them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cache::Wire;
use clap::Args;
use cliflag::parse_duration;
use controller::{Backoff, LoopOptions};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::logging::LogFormat;
use crate::throttle::{DEFAULT_BURST, DEFAULT_QPS, ThrottleLayer, ThrottleStats};

/// How to reach the API server: client-go's `clientcmd.BuildConfigFromFlags`.
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// Path to a kubeconfig. Only required if out-of-cluster; without it the in-cluster
    /// service account is used, then ~/.kube/config.
    #[arg(long, env = "KUBECONFIG", value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The address of the Kubernetes API server. Overrides any value in kubeconfig.
    /// Only required if out-of-cluster.
    #[arg(long, env = "KUBE_MASTER", value_name = "URL")]
    pub master: Option<String>,

    /// Steady rate of requests to the API server, per second, across the whole process
    /// (client-go's rest.Config QPS). 0 disables client-side throttling.
    #[arg(long, env = "KUBE_API_QPS", default_value_t = DEFAULT_QPS, value_name = "QPS")]
    pub kube_api_qps: f32,

    /// Requests allowed at once above the steady rate (client-go's Burst).
    #[arg(long, env = "KUBE_API_BURST", default_value_t = DEFAULT_BURST, value_name = "N")]
    pub kube_api_burst: u32,

    /// Speak HTTP/1.1 only. By default the client negotiates HTTP/2, as client-go
    /// does: one connection multiplexes every watch, list and write (the manager
    /// crate's `client` module). `DISABLE_HTTP2` is client-go's variable for it, and
    /// as there any value but a false-like one (`0`, `false`, `no`, `off`) turns it on.
    #[arg(long, env = "DISABLE_HTTP2", value_parser = clap::builder::FalseyValueParser::new())]
    pub disable_http2: bool,

    /// What the informers and the controllers' typed clients ask the API server for and
    /// write (client-go's rest.Config ContentType, kube-controller-manager's flag of the
    /// same name): application/vnd.kubernetes.protobuf (or protobuf), for the built-in
    /// types, as client-go does; custom resources are JSON either way.
    /// application/json (or json) speaks JSON for everything.
    #[arg(
        long,
        env = "KUBE_API_CONTENT_TYPE",
        default_value = "application/vnd.kubernetes.protobuf",
        value_name = "TYPE"
    )]
    pub kube_api_content_type: Wire,
}

impl Default for ClientArgs {
    fn default() -> Self {
        Self {
            kubeconfig: None,
            master: None,
            kube_api_qps: DEFAULT_QPS,
            kube_api_burst: DEFAULT_BURST,
            disable_http2: false,
            kube_api_content_type: Wire::Protobuf,
        }
    }
}

/// Why a client configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientConfigError {
    /// The kubeconfig file could not be read or used.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// No kubeconfig was given, not in a cluster, and no default kubeconfig works.
    #[error(
        "no kubeconfig given (--kubeconfig or KUBECONFIG), not running in a cluster, and ~/.kube/config is unusable: {0}"
    )]
    Infer(#[source] kube::config::InferConfigError),
    /// `--master` is not a URL.
    #[error("--master {master:?} is not a valid URL: {reason}")]
    Master {
        /// The value.
        master: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The HTTP client could not be built from the configuration (bad TLS material).
    #[error("building the API client: {0}")]
    Client(#[source] kube::Error),
}

impl ClientArgs {
    /// The client configuration: the kubeconfig file when given, else the in-cluster
    /// service account, else the default kubeconfig; `--master` overrides the server.
    pub async fn config(&self) -> Result<kube::Config, ClientConfigError> {
        let mut config = match &self.kubeconfig {
            Some(path) => {
                let err = |source| ClientConfigError::Kubeconfig {
                    path: path.clone(),
                    source,
                };
                let kubeconfig = Kubeconfig::read_from(path).map_err(err)?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                    .await
                    .map_err(err)?
            }
            None => match kube::Config::incluster() {
                Ok(config) => config,
                Err(_) => kube::Config::infer()
                    .await
                    .map_err(ClientConfigError::Infer)?,
            },
        };
        if let Some(master) = &self.master {
            config.cluster_url =
                master
                    .parse()
                    .map_err(|e: http::uri::InvalidUri| ClientConfigError::Master {
                        master: master.clone(),
                        reason: e.to_string(),
                    })?;
        }
        Ok(config)
    }

    /// A client built from [`config`](Self::config), throttled to `--kube-api-qps` /
    /// `--kube-api-burst` (see [`throttle`](crate::throttle)).
    pub async fn client(&self) -> Result<kube::Client, ClientConfigError> {
        Ok(self.client_with_stats().await?.0)
    }

    /// Like [`client`](Self::client), also returning the throttle's counters.
    pub async fn client_with_stats(
        &self,
    ) -> Result<(kube::Client, Arc<ThrottleStats>), ClientConfigError> {
        self.throttled_client(self.config().await?)
    }

    /// A client for `config`, throttled as these flags say.
    pub fn throttled_client(
        &self,
        config: kube::Config,
    ) -> Result<(kube::Client, Arc<ThrottleStats>), ClientConfigError> {
        let throttle = ThrottleLayer::new(self.kube_api_qps, self.kube_api_burst);
        let stats = throttle.stats();
        // kube's own client for HTTP/1.1 only, and for proxies (which it handles).
        let client = if self.disable_http2 || config.proxy_url.is_some() {
            kube::client::ClientBuilder::try_from(config)
                .map_err(ClientConfigError::Client)?
                .with_layer(&throttle)
                .build()
        } else {
            crate::client::http2_client_builder(&config)
                .map_err(ClientConfigError::Client)?
                .with_layer(&throttle)
                .build()
        };
        Ok((client, stats))
    }
}

/// How the controller runs: workers, resync, logs.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Number of workers syncing objects in parallel (client-go's "threadiness").
    #[arg(long, env = "WORKERS", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: u16,

    /// How often the informers re-deliver every cached object to the handlers (a safety
    /// net for missed changes to things outside the cache; 0 disables). Go duration
    /// syntax: 30s, 10m, 1h.
    #[arg(long, env = "RESYNC_PERIOD", default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub resync_period: Duration,

    /// Only watch (and act on) objects in this namespace; all namespaces when unset.
    #[arg(long, env = "WATCH_NAMESPACE", value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Keep `metadata.managedFields` in the informers' caches. By default they are left
    /// out when objects are decoded (controller-runtime recommends stripping them:
    /// server-side apply's bookkeeping, about half of a cached object's memory, which
    /// no controller here reads from its cache).
    #[arg(long, env = "KEEP_MANAGED_FIELDS", value_parser = clap::builder::FalseyValueParser::new())]
    pub keep_managed_fields: bool,

    /// The staleness guard (client-go 1.36's KEP-5647): a key is synced again only
    /// once the informers have seen its last write; meanwhile it is parked, and after
    /// this long it is requeued with backoff instead; 0 turns the guard off.
    #[arg(long, env = "FRESHNESS_TIMEOUT", default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub freshness_timeout: Duration,

    /// Use client-go's single FIFO queue instead of the priority queue (which puts
    /// initial-list and resync events behind real changes).
    #[arg(long, env = "FIFO_QUEUE", value_parser = clap::builder::FalseyValueParser::new())]
    pub fifo_queue: bool,

    /// Use client-go's backoff as it is: a key rate-limited again while its backoff
    /// is pending doubles the delay (kubernetes/kubernetes issue 132805). By default
    /// such re-triggers do not escalate it.
    #[arg(long, env = "CLIENT_GO_BACKOFF", value_parser = clap::builder::FalseyValueParser::new())]
    pub client_go_backoff: bool,

    /// Cancel a sync that runs longer than this and retry its key with backoff
    /// (controller-runtime's ReconciliationTimeout); counted in
    /// controller_runtime_reconcile_timeouts_total. 0, the default: no limit.
    #[arg(long, env = "RECONCILE_TIMEOUT", default_value = "0s", value_parser = parse_duration, value_name = "DURATION")]
    pub reconcile_timeout: Duration,

    /// Log format: text or json.
    #[arg(long, env = "LOG_FORMAT", default_value_t = LogFormat::Text, value_enum)]
    pub log_format: LogFormat,

    /// Threads of the async runtime (0: one per CPU, Tokio's own default). One by
    /// default: a controller spends its time waiting for the API server, and with a
    /// second thread most responses and watch events wake a thread only to hand the
    /// work to the other (about 10 % more CPU to converge the same Foos, measured in
    /// kube-controllers-rs's docs/benchmarks.md). Raise it for syncs
    /// that compute a lot; the handler threads and blocking work are not counted here.
    /// The environment variable is Tokio's own.
    #[arg(
        long,
        env = "TOKIO_WORKER_THREADS",
        default_value_t = 1,
        value_name = "N"
    )]
    pub runtime_threads: usize,
}

impl RunArgs {
    /// The loop's staleness, queue-order, backoff and timeout choices these flags make.
    pub fn loop_options(&self) -> LoopOptions {
        LoopOptions {
            freshness_timeout: self.freshness_timeout,
            priority_queue: !self.fifo_queue,
            backoff: if self.client_go_backoff {
                Backoff::ClientGo
            } else {
                Backoff::Coalescing
            },
            max_retry_delay: None,
            reconcile_timeout: Some(self.reconcile_timeout).filter(|t| !t.is_zero()),
        }
    }
}

/// Says how metrics are served: who can read them is worth a line at start-up.
pub(crate) fn log_metrics_mode(serving: &metrics::ServingArgs, mode: &metrics::MetricsServing) {
    if serving.metrics_address() == metrics::BindAddress::Disabled {
        return;
    }
    match &mode.cert {
        Some(cert) => tracing::info!(
            certificate = %cert.describe(),
            "metrics over HTTPS; each request authenticated (TokenReview) and authorized \
             (SubjectAccessReview) by the API server"
        ),
        None => tracing::warn!(
            "metrics over plain HTTP without authentication (--metrics-secure=false): \
             anyone who reaches the port can read them"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        client: ClientArgs,
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn defaults_and_overrides() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.run.workers, 2);
        assert_eq!(cli.run.resync_period, Duration::from_secs(30));
        assert_eq!(cli.run.log_format, LogFormat::Text);
        assert!(!cli.run.keep_managed_fields);
        assert_eq!(cli.run.runtime_threads, 1, "one runtime thread by default");
        assert_eq!(cli.run.loop_options(), LoopOptions::default());
        assert_eq!(
            (cli.client.kube_api_qps, cli.client.kube_api_burst),
            (DEFAULT_QPS, DEFAULT_BURST)
        );
        assert_eq!(cli.client.kube_api_content_type, Wire::Protobuf);
        let cli = Cli::try_parse_from([
            "x",
            "--workers",
            "5",
            "--resync-period",
            "1m30s",
            "--log-format",
            "json",
            "--kubeconfig",
            "/k",
            "--master",
            "https://h:6443",
            "--keep-managed-fields",
            "--freshness-timeout",
            "0",
            "--fifo-queue",
            "--client-go-backoff",
            "--kube-api-content-type",
            "application/json",
            "--runtime-threads",
            "0",
        ])
        .unwrap();
        assert_eq!(cli.run.runtime_threads, 0, "0: one per CPU");
        assert_eq!(cli.client.kube_api_content_type, Wire::Json);
        assert_eq!(cli.run.loop_options(), LoopOptions::client_go());
        assert_eq!(cli.run.workers, 5);
        assert!(cli.run.keep_managed_fields);
        assert_eq!(cli.run.resync_period, Duration::from_secs(90));
        assert_eq!(cli.run.log_format, LogFormat::Json);
        assert_eq!(
            cli.client.kubeconfig.as_deref(),
            Some(std::path::Path::new("/k"))
        );
    }

    #[test]
    fn bad_values_are_clear_errors() {
        for args in [
            &["x", "--workers", "0"][..],
            &["x", "--resync-period", "soon"],
            &["x", "--log-format", "xml"],
            &["x", "--kube-api-content-type", "application/cbor"],
        ] {
            let err = Cli::try_parse_from(args)
                .err()
                .expect("rejected")
                .to_string();
            assert!(err.contains(args[1]), "{err}");
        }
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_names_the_file() {
        let args = ClientArgs {
            kubeconfig: Some("/nonexistent/kubeconfig".into()),
            ..ClientArgs::default()
        };
        let err = args.config().await.unwrap_err().to_string();
        assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
    }
}
