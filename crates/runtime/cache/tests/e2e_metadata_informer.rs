//! e2e: the metadata-only informer against a real kube-apiserver (crates/dev/testenv).
//!
//! 1,000 ConfigMaps of 1 KiB `data` each, listed and watched through the factory's
//! metadata informer and, for comparison, its full-object informer, each on a client
//! that counts the response bytes it reads. The metadata informer must cache every
//! object's metadata, read none of the `data` (no byte of it crosses the wire: the
//! marker in every value never shows up) and far fewer bytes than the full one, and
//! see adds, updates (of `data` alone) and deletes as they happen.
//!
//! It also measures both caches: the heap bytes still allocated after each informer
//! synced (a counting global allocator), and the bytes each read. It prints them; with
//! `META_E2E_OBJECTS=5000` it is the benchmark in docs/benchmarks.md ("metadata-only
//! informers").

#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeSet;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use cache::{DeletedObject, EventHandlerFuncs, InformerOptions, Selector, SharedInformerFactory};
use futures::{StreamExt, TryStreamExt};
use http_body::{Body, Frame, SizeHint};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use parking_lot::Mutex;
use testenv::{Check, TestEnv, wait_for};
use tokio_util::sync::CancellationToken;

/// In every value, so a body that carries any `data` carries this.
const MARKER: &str = "MARKER-of-the-data-only";
const TIMEOUT: Duration = Duration::from_secs(300);

/// How many ConfigMaps: 1,000, or `META_E2E_OBJECTS` (the benchmark's 5,000).
fn objects() -> usize {
    std::env::var("META_E2E_OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000)
}

/// Heap bytes allocated and not yet freed, by the whole process.
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting [`LIVE`] bytes.
struct LiveBytes;

// SAFETY: every call is forwarded unchanged to the system allocator; the counting is
// one atomic add (no allocation). A global allocator can only be written with
// `unsafe`: the one item allowed it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for LiveBytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        new
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: LiveBytes = LiveBytes;

fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// What a client read: response body bytes, bodies with [`MARKER`] in a frame, and
/// the answers' content types. A tower layer on the client, so it sees exactly what
/// the informer's requests received, after TLS and before decoding.
#[derive(Clone, Default)]
struct Read {
    bytes: Arc<AtomicUsize>,
    marked_frames: Arc<AtomicUsize>,
    content_types: Arc<Mutex<BTreeSet<String>>>,
}

impl<S> tower::Layer<S> for Read {
    type Service = Counting<S>;
    fn layer(&self, inner: S) -> Counting<S> {
        Counting {
            inner,
            read: self.clone(),
        }
    }
}

#[derive(Clone)]
struct Counting<S> {
    inner: S,
    read: Read,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, Req, B> tower::Service<Req> for Counting<S>
where
    S: tower::Service<Req, Response = http::Response<B>>,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
{
    type Response = http::Response<CountingBody<B>>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let future = self.inner.call(request);
        let read = self.read.clone();
        Box::pin(async move {
            let response = future.await?;
            if let Some(ct) = response.headers().get(http::header::CONTENT_TYPE) {
                read.content_types
                    .lock()
                    .insert(ct.to_str().unwrap_or_default().to_string());
            }
            Ok(response.map(|inner| CountingBody {
                inner: Box::pin(inner),
                read,
            }))
        })
    }
}

struct CountingBody<B> {
    inner: Pin<Box<B>>,
    read: Read,
}

impl<B: Body<Data = Bytes>> Body for CountingBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let frame = ready!(self.inner.as_mut().poll_frame(cx));
        if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()?.data_ref()) {
            self.read.bytes.fetch_add(data.len(), Ordering::Relaxed);
            if memchr::memmem::find(data, MARKER.as_bytes()).is_some() {
                self.read.marked_frames.fetch_add(1, Ordering::Relaxed);
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A factory on a client of its own that counts what it reads.
fn counting_factory(env: &TestEnv) -> anyhow::Result<(SharedInformerFactory, Read)> {
    let read = Read::default();
    let client = kube::client::ClientBuilder::try_from(env.config().clone())?
        .with_layer(&read)
        .build();
    Ok((
        SharedInformerFactory::new(client, Duration::ZERO).with_strip_managed_fields(true),
        read,
    ))
}

fn config_map(name: &str) -> ConfigMap {
    // 1 KiB of data, the marker in it.
    let mut value = MARKER.to_string();
    value.push_str(&"x".repeat(1024 - MARKER.len()));
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("app".to_string(), "meta-e2e".to_string())].into()),
            ..ObjectMeta::default()
        },
        data: Some([("page".to_string(), value)].into()),
        ..ConfigMap::default()
    }
}

async fn create_all(api: &Api<ConfigMap>, n: usize) -> anyhow::Result<()> {
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &config_map(&format!("cm-{i:04}")))
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(8)
        .try_collect::<()>()
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_informer_over_1000_config_maps_reads_no_data_and_sees_every_change()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-meta").await?;
    let ns = env.namespace().to_string();
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), &ns);
    let n = objects();
    create_all(&api, n).await?;

    let (factory, read) = counting_factory(&env)?;
    let informer = factory.metadata_informer_for_api::<ConfigMap>(
        Api::namespaced(factory.client().clone(), &ns),
        InformerOptions::default(),
    );
    // The factory shares it, and keeps it apart from the full objects' informer.
    assert_eq!(
        informer.name(),
        factory
            .metadata_informer_for_api::<ConfigMap>(
                Api::namespaced(factory.client().clone(), &ns),
                InformerOptions::default(),
            )
            .name()
    );
    assert_eq!(informer.name(), format!("ConfigMap metadata in {ns}"));

    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let note = |seen: &Arc<Mutex<Vec<String>>>, what: String| seen.lock().push(what);
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add({
                let seen = seen.clone();
                move |m: &Arc<PartialObjectMeta<ConfigMap>>, initial| {
                    if !initial {
                        note(
                            &seen,
                            format!("add {}", m.metadata.name.as_deref().unwrap()),
                        );
                    }
                }
            })
            .on_update({
                let seen = seen.clone();
                move |old: &Arc<PartialObjectMeta<ConfigMap>>,
                      new: &Arc<PartialObjectMeta<ConfigMap>>| {
                    if old.metadata.resource_version != new.metadata.resource_version {
                        note(
                            &seen,
                            format!("update {}", new.metadata.name.as_deref().unwrap()),
                        );
                    }
                }
            })
            .on_delete({
                let seen = seen.clone();
                move |d: &DeletedObject<PartialObjectMeta<ConfigMap>>| {
                    let name = d
                        .object()
                        .and_then(|o| o.metadata.name.clone())
                        .unwrap_or_default();
                    note(&seen, format!("delete {name}"));
                }
            }),
    );
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    let before = live_bytes();
    factory.start(&stop);
    assert!(informer.wait_for_cache_sync(&stop).await);
    let metadata_heap = live_bytes() - before;

    // Every object, its metadata only.
    let lister = informer.lister();
    let cached = lister
        .namespaced(&ns)
        .list(&"app=meta-e2e".parse::<Selector>()?);
    assert_eq!(cached.len(), n);
    for m in &cached {
        assert!(m.metadata.uid.is_some() && m.metadata.resource_version.is_some());
        assert_eq!(m.metadata.managed_fields, None, "stripped");
        // As the server converted it (not a ConfigMap with its data cut off here).
        let types = m.types.as_ref().unwrap();
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("meta.k8s.io/v1", "PartialObjectMetadata")
        );
    }
    assert!(lister.get(&ns, "cm-0042").is_ok());
    assert_eq!(
        lister.get(&ns, "nope").unwrap_err().to_string(),
        r#"configmaps "nope" not found"#
    );
    // No data crossed the wire, all of it JSON (no protobuf form is asked for).
    let metadata_bytes = read.bytes.load(Ordering::Relaxed);
    assert_eq!(read.marked_frames.load(Ordering::Relaxed), 0);
    let content_types = read.content_types.lock().clone();
    assert!(
        content_types
            .iter()
            .all(|ct| ct.starts_with("application/json")),
        "{content_types:?}"
    );
    assert!(
        metadata_bytes < n * 1024,
        "{metadata_bytes} bytes for {n} objects' metadata: more than their data alone"
    );

    // The full objects' informer, on the same objects: the data, and the bytes.
    let (full_factory, full_read) = counting_factory(&env)?;
    let full = full_factory.informer_for_api::<ConfigMap>(
        Api::namespaced(full_factory.client().clone(), &ns),
        InformerOptions::default(),
    );
    let before = live_bytes();
    full_factory.start(&stop);
    assert!(full.wait_for_cache_sync(&stop).await);
    let full_heap = live_bytes() - before;
    // (The namespace also holds kube-root-ca.crt, in both caches.)
    assert_eq!(
        full.lister()
            .list(&"app=meta-e2e".parse::<Selector>()?)
            .len(),
        n
    );
    let full_bytes = full_read.bytes.load(Ordering::Relaxed);
    assert!(full_read.marked_frames.load(Ordering::Relaxed) > 0);
    assert!(
        metadata_bytes * 2 < full_bytes,
        "metadata {metadata_bytes} bytes, full {full_bytes} bytes"
    );
    // Both caches hold every object's metadata; only the full one holds the data.
    assert!(
        metadata_heap < full_heap,
        "heap: metadata {metadata_heap} bytes, full {full_heap} bytes"
    );
    println!(
        "{n} ConfigMaps of 1 KiB data: read {metadata_bytes} bytes ({content_types:?}) \
         and kept {metadata_heap} heap bytes for metadata; read {full_bytes} and kept \
         {full_heap} for full objects"
    );

    // Adds, updates (of the data alone) and deletes arrive as they happen.
    api.create(&PostParams::default(), &config_map("cm-new"))
        .await?;
    let patch = serde_json::json!({"data": {"page": "changed"}});
    api.patch("cm-0007", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    api.delete("cm-0008", &DeleteParams::default()).await?;
    let want = ["add cm-new", "update cm-0007", "delete cm-0008"];
    wait_for("add, update and delete seen", TIMEOUT, || async {
        let seen = seen.lock().clone();
        let all = want.iter().all(|w| seen.iter().any(|s| s == w));
        Ok::<_, Infallible>(Check::ready_if(all, (), format!("{seen:?}")))
    })
    .await?;
    assert!(lister.get(&ns, "cm-new").is_ok());
    assert!(lister.get(&ns, "cm-0008").unwrap_err().is_not_found());
    let updated = lister.get(&ns, "cm-0007")?;
    let server = api.get("cm-0007").await?;
    assert_eq!(
        updated.metadata.resource_version,
        server.metadata.resource_version
    );
    // Still no data: the watch events were metadata too.
    assert_eq!(read.marked_frames.load(Ordering::Relaxed), 0);
    Ok(())
}
