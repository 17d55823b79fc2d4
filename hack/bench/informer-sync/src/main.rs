//! Initial-sync benchmark: how long and how much memory a process needs to sync one
//! ConfigMap informer from a real kube-apiserver, with crates/runtime/cache's
//! `SharedIndexInformer` and with kube-runtime's `reflector` + `watcher`.
//!
//! ```text
//! informer-sync-bench populate --count 10000 --namespace bench-10k
//! informer-sync-bench sync --impl ours --namespace bench-10k
//! ```
//!
//! `sync` is meant to run once per process (peak RSS is the process's VmHWM); it
//! prints one JSON line. hack/bench/informer-sync.sh runs the whole comparison.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::runtime::{reflector, watcher};
use cache::ListerWatcher;
use kube::{Client, ResourceExt};
use tokio_util::sync::CancellationToken;

// The `mimalloc` and `jemalloc` features swap the process's allocator (the ours-alt
// variant of hack/bench/informer-sync.sh); without them it is glibc's malloc.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(about = "Initial informer sync: crates/runtime/cache vs kube-runtime")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Creates ConfigMaps cm-000000..cm-<count-1> in a namespace; existing ones are
    /// skipped, so it can grow a namespace.
    Populate {
        #[arg(long)]
        count: usize,
        #[arg(long)]
        namespace: String,
        /// Requests in flight.
        #[arg(long, default_value_t = 32)]
        concurrency: usize,
    },
    /// Syncs one informer over the namespace's ConfigMaps and prints a JSON line.
    Sync {
        #[arg(long = "impl", value_enum)]
        implementation: Impl,
        #[arg(long)]
        namespace: String,
        /// Ours only: ask for JSON (`Wire::Json`, the binaries'
        /// `--kube-api-content-type application/json`) instead of protobuf, the
        /// default; the implementation's name gets `-json`.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Impl {
    /// crates/runtime/cache SharedIndexInformer (defaults: a streaming list, falling back to
    /// paged lists), no handlers, no transform.
    Ours,
    /// The same, with a transform that drops metadata.managedFields.
    OursTransform,
    /// Ours with ApiListerWatcher::strip_managed_fields: managedFields cut out of the
    /// raw JSON before decoding (what the controller binaries do by default).
    OursStrip,
    /// Ours with set_watch_list(false): always paged lists (500 per page, one page
    /// of read-ahead).
    OursPaged,
    /// Ours as a library user gets it: kube's own HTTP/1.1 client and glibc's default
    /// heap growth (none of the binaries' process set-up), to separate the informer's
    /// share from the process's.
    OursPlain,
    /// Ours with set_queue_kind(DeltaFifo): the classic per-key queue instead of the
    /// default atomic RealFIFO.
    OursDeltafifo,
    /// Ours with set_queue_kind(RealFifo): the plain in-order RealFIFO (a relist spelled
    /// out as events; the default before the atomic one).
    OursRealfifo,
    /// Ours with the pipeline trace off (PIPELINE_TRACE=off): what the always-on
    /// recording of FIFO and indexer steps costs.
    OursUntraced,
    /// kube-runtime reflector(store, watcher(api, Config::default())): a consistent
    /// (most recent) list, 500 per page, as ours lists.
    KubeRuntime,
    /// kube-runtime (default config), dropping metadata.managedFields of every event
    /// before the store.
    KubeRuntimeTransform,
    /// kube-runtime with `streaming_lists()`: the initial list as a watch with
    /// sendInitialEvents=true (the WatchList feature, on by default since 1.34 servers).
    KubeRuntimeStreaming,
}

impl Impl {
    fn name(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::OursTransform => "ours-transform",
            Impl::OursStrip => "ours-strip",
            Impl::OursPaged => "ours-paged",
            Impl::OursPlain => "ours-plain",
            Impl::OursDeltafifo => "ours-deltafifo",
            Impl::OursRealfifo => "ours-realfifo",
            Impl::OursUntraced => "ours-untraced",
            Impl::KubeRuntime => "kube-runtime",
            Impl::KubeRuntimeTransform => "kube-runtime-transform",
            Impl::KubeRuntimeStreaming => "kube-runtime-streaming",
        }
    }
}

impl Impl {
    /// Whether this variant is ours (crates/runtime/cache).
    fn uses_cache(self) -> bool {
        self.uses_binaries_client() || matches!(self, Impl::OursPlain)
    }

    /// Whether this variant runs on the controller binaries' client.
    fn uses_binaries_client(self) -> bool {
        matches!(
            self,
            Impl::Ours
                | Impl::OursTransform
                | Impl::OursStrip
                | Impl::OursPaged
                | Impl::OursDeltafifo
                | Impl::OursRealfifo
                | Impl::OursUntraced
        )
    }
}

fn main() -> anyhow::Result<()> {
    let process_start = Instant::now();
    let cli = Cli::parse();
    // As the controller binaries start (before the runtime: see manager::heap).
    if let Command::Sync { implementation, .. } = &cli.command
        && implementation.uses_binaries_client()
    {
        manager::heap::grow_heap_in_large_steps();
    }
    tokio::runtime::Runtime::new()?.block_on(run(cli, process_start))
}

async fn run(cli: Cli, process_start: Instant) -> anyhow::Result<()> {
    // kubeconfig from KUBECONFIG, no client-side rate limit on either client. Our
    // informers run in the process set-up the controller binaries have (their HTTP/2
    // client, the heap grown in 64 MiB steps); kube-runtime and `ours-plain` use kube's
    // default client (HTTP/1.1) and glibc's defaults, what a kube-rs user gets from
    // Client::try_default.
    let binaries_client = match &cli.command {
        Command::Sync { implementation, .. } => implementation.uses_binaries_client(),
        Command::Populate { .. } => false,
    };
    let client = if binaries_client {
        let args = manager::ClientArgs {
            kube_api_qps: 0.0,
            ..manager::ClientArgs::default()
        };
        let config = kube::Config::infer().await.context("config from KUBECONFIG")?;
        args.throttled_client(config)?.0
    } else {
        Client::try_default().await.context("client from KUBECONFIG")?
    };
    match cli.command {
        Command::Populate {
            count,
            namespace,
            concurrency,
        } => populate(client, count, &namespace, concurrency).await,
        Command::Sync {
            implementation,
            namespace,
            json,
        } => sync(client, implementation, &namespace, json, process_start).await,
    }
}

/// A ConfigMap of realistic size: four labels, two annotations, four data keys of
/// about 256 bytes (~1 KiB of data), plus the managedFields entry the server adds.
fn config_map(namespace: &str, i: usize) -> ConfigMap {
    let name = format!("cm-{i:06}");
    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "informer-sync-bench".to_string()),
        ("app.kubernetes.io/component".to_string(), format!("shard-{}", i % 16)),
        ("bench.example.com/index".to_string(), i.to_string()),
        ("bench.example.com/parity".to_string(), if i % 2 == 0 { "even" } else { "odd" }.to_string()),
    ]);
    let annotations = BTreeMap::from([
        (
            "bench.example.com/description".to_string(),
            format!("ConfigMap number {i} of the informer initial-sync benchmark"),
        ),
        ("bench.example.com/owner".to_string(), "team-platform@example.com".to_string()),
    ]);
    // Deterministic filler, different per object and key (no two values share text).
    let filler = |key: usize| -> String {
        let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (key as u64 + 1);
        let mut s = String::with_capacity(256);
        while s.len() < 256 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push_str(&format!("{x:016x}"));
        }
        s
    };
    let data = BTreeMap::from([
        ("application.properties".to_string(), filler(0)),
        ("logging.yaml".to_string(), filler(1)),
        ("feature-flags.json".to_string(), filler(2)),
        ("endpoints.txt".to_string(), filler(3)),
    ]);
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_string()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

async fn populate(client: Client, count: usize, namespace: &str, concurrency: usize) -> anyhow::Result<()> {
    let started = Instant::now();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e).context("creating the namespace"),
    }

    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    // Names already there (metadata only, paged).
    let mut existing = std::collections::HashSet::new();
    let mut lp = ListParams::default().limit(500);
    loop {
        let page = api.list_metadata(&lp).await.context("listing existing ConfigMaps")?;
        existing.extend(page.items.into_iter().map(|m| m.name_any()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => break,
        }
    }
    let todo: Vec<usize> = (0..count)
        .filter(|i| !existing.contains(&format!("cm-{i:06}")))
        .collect();
    let to_create = todo.len();
    let pp = PostParams {
        field_manager: Some("informer-sync-bench".to_string()),
        ..Default::default()
    };
    let created = stream::iter(todo)
        .map(|i| {
            let (api, pp) = (&api, &pp);
            async move {
                let cm = config_map(namespace, i);
                // Retry transient errors a few times; 409 = someone was faster.
                let mut attempt = 0;
                loop {
                    match api.create(pp, &cm).await {
                        Ok(_) => return Ok::<_, anyhow::Error>(1usize),
                        Err(kube::Error::Api(s)) if s.code == 409 => return Ok(0),
                        Err(e) if attempt < 5 => {
                            attempt += 1;
                            eprintln!("create cm-{i:06}: {e}; retrying");
                            tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
                        }
                        Err(e) => return Err(e).with_context(|| format!("creating cm-{i:06}")),
                    }
                }
            }
        })
        .buffer_unordered(concurrency)
        .try_fold(0usize, |n, c| async move { Ok(n + c) })
        .await?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "populate": namespace,
            "count": count,
            "already_there": count - to_create,
            "created": created,
            "seconds": (secs * 10.0).round() / 10.0,
            "creates_per_s": (created as f64 / secs).round(),
        })
    );
    Ok(())
}

async fn sync(
    client: Client,
    implementation: Impl,
    namespace: &str,
    json: bool,
    process_start: Instant,
) -> anyhow::Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let name = if json {
        anyhow::ensure!(implementation.uses_cache(), "--json is for ours-* only");
        format!("{}-json", implementation.name())
    } else {
        implementation.name().to_string()
    };
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let objects = match implementation {
        Impl::Ours
        | Impl::OursTransform
        | Impl::OursStrip
        | Impl::OursPaged
        | Impl::OursDeltafifo
        | Impl::OursRealfifo
        | Impl::OursUntraced
        | Impl::OursPlain => {
            pipeline::global().set_enabled(!matches!(implementation, Impl::OursUntraced));
            let wire = if json { cache::Wire::Json } else { cache::Wire::Protobuf };
            let lister_watcher = Arc::new(
                cache::ApiListerWatcher::new(api)
                    .strip_managed_fields(matches!(implementation, Impl::OursStrip))
                    .wire(wire),
            );
            let informer =
                cache::SharedIndexInformer::new("configmaps", lister_watcher.clone(), Duration::ZERO);
            informer.set_watch_list(!matches!(implementation, Impl::OursPaged));
            if matches!(implementation, Impl::OursDeltafifo) {
                informer.set_queue_kind(cache::QueueKind::DeltaFifo);
            }
            if matches!(implementation, Impl::OursRealfifo) {
                informer.set_queue_kind(cache::QueueKind::RealFifo);
            }
            if matches!(implementation, Impl::OursTransform) {
                informer
                    .set_transform(Arc::new(|mut cm: ConfigMap| {
                        cm.metadata.managed_fields = None;
                        cm
                    }))
                    .map_err(|e| anyhow::anyhow!("set_transform: {e}"))?;
            }
            tokio::spawn({
                let (informer, cancel) = (informer.clone(), cancel.clone());
                async move { informer.run(cancel).await }
            });
            // Woken by the informer when the last listed object is in the indexer,
            // as kube-runtime's wait_until_ready below.
            anyhow::ensure!(informer.wait_for_cache_sync(&cancel).await, "not synced");
            let elapsed = started.elapsed();
            let objects = informer.indexer().len();
            // What the server answered in (its Content-Type), not what was asked.
            let answered = lister_watcher.answered_wire().map_or("-", |w| w.as_str());
            report(&name, answered, elapsed, objects, process_start).await;
            cancel.cancel();
            objects
        }
        Impl::KubeRuntime | Impl::KubeRuntimeTransform | Impl::KubeRuntimeStreaming => {
            let (reader, writer) = reflector::store::<ConfigMap>();
            // Config::default(): page size 500 (as ours), most recent list semantic.
            let mut config = watcher::Config::default();
            assert_eq!(config.page_size, Some(500));
            if matches!(implementation, Impl::KubeRuntimeStreaming) {
                config = config.streaming_lists();
            }
            let strip = matches!(implementation, Impl::KubeRuntimeTransform);
            let events = watcher(api, config).map_ok(move |event| {
                if strip {
                    event.modify(|cm| cm.metadata.managed_fields = None)
                } else {
                    event
                }
            });
            let stream = reflector(writer, events);
            let driver = tokio::spawn({
                let cancel = cancel.clone();
                async move {
                    let mut stream = std::pin::pin!(stream.take_until(cancel.cancelled_owned()));
                    while let Some(event) = stream.next().await {
                        if let Err(e) = event {
                            eprintln!("watcher error: {e}");
                        }
                    }
                }
            });
            reader.wait_until_ready().await.context("reflector writer dropped")?;
            let elapsed = started.elapsed();
            let objects = reader.len();
            // kube's Api asks for JSON only (Accept: application/json).
            report(&name, "json", elapsed, objects, process_start).await;
            cancel.cancel();
            let _ = driver.await;
            objects
        }
    };
    if objects == 0 {
        bail!("synced zero objects in namespace {namespace}");
    }
    Ok(())
}

async fn report(
    name: &str,
    wire: &str,
    elapsed: Duration,
    objects: usize,
    process_start: Instant,
) {
    let cpu = cpu_ms();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (hwm, rss) = mem_kb();
    println!(
        "{}",
        serde_json::json!({
            "impl": name,
            "wire": wire,
            "count": objects,
            "objects": objects,
            "sync_ms": (elapsed.as_secs_f64() * 1e4).round() / 10.0,
            "process_to_synced_ms": ((process_start.elapsed() - Duration::from_secs(1)).as_secs_f64() * 1e4).round() / 10.0,
            "cpu_ms": cpu,
            "peak_rss_kb": hwm,
            "rss_kb": rss,
        })
    );
}

/// CPU time (user + system) of this process so far, in ms with µs precision, from
/// `CLOCK_PROCESS_CPUTIME_ID` (/proc/self/stat counts 10 ms ticks, too coarse for
/// syncs of a few hundred ms). Client CPU is far less sensitive than wall time to
/// other load on the machine and to the API server's own work.
fn cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; the clock id is valid.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ((ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6) * 10.0).round() / 10.0
}

/// (VmHWM, VmRSS) in KiB from /proc/self/status.
fn mem_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}
