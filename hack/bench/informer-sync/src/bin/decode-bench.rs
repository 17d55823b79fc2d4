//! Decoding a recorded watch stream (one JSON event per line), on one thread, with
//! no network and no informer: what `serde_json` into k8s-openapi types costs per
//! event (best of N passes), and what a decoded ConfigMap occupies on the heap.
//!
//! ```text
//! curl ... '/api/v1/namespaces/NS/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan' > events.jsonl
//! decode-bench events.jsonl 5              # decoding variants, best of 5 passes
//! decode-bench events.jsonl 1 retained     # heap bytes and allocations per kept object
//! ```
//!
//! docs/benchmarks.md ("Where the bytes of a cached ConfigMap go") has its figures.
use std::time::Instant;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;
use serde::de::IgnoredAny;

fn main() {
    let path = std::env::args().nth(1).expect("path of a watch stream");
    let passes: usize = std::env::args().nth(2).map_or(5, |p| p.parse().unwrap());
    let which = std::env::args().nth(3).unwrap_or_default();
    let body = std::fs::read(&path).unwrap();
    let lines: Vec<&[u8]> = body.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
    if which == "retained" {
        retained(&lines, false);
        retained(&lines, true);
        parts(lines[0]);
        return;
    }
    let run = |name: &str, f: &mut dyn FnMut(&[u8]) -> usize| {
        if !which.is_empty() && which != name {
            return;
        }
        let mut best = f64::MAX;
        let mut sink = 0;
        for _ in 0..passes {
            let t = Instant::now();
            for l in &lines {
                sink += f(l);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{name:28} {:8.1} ms  {:6.2} us/event  ({sink})", best * 1e3, best * 1e6 / lines.len() as f64);
    };
    run("kube (String + from_str)", &mut |l| {
        let s = String::from_utf8(l.to_vec()).unwrap();
        let e: WatchEvent<ConfigMap> = serde_json::from_str(&s).unwrap();
        matches!(e, WatchEvent::Added(_)) as usize
    });
    run("from_utf8 + from_str", &mut |l| {
        let s = std::str::from_utf8(l).unwrap();
        let e: WatchEvent<ConfigMap> = serde_json::from_str(s).unwrap();
        matches!(e, WatchEvent::Added(_)) as usize
    });
    run("from_slice", &mut |l| {
        let e: WatchEvent<ConfigMap> = serde_json::from_slice(l).unwrap();
        matches!(e, WatchEvent::Added(_)) as usize
    });
    run("from_slice + drop mf", &mut |l| {
        let e: WatchEvent<ConfigMap> = serde_json::from_slice(l).unwrap();
        match e {
            WatchEvent::Added(mut c) => {
                c.metadata.managed_fields = None;
                1
            }
            _ => 0,
        }
    });
    run("ignored_any scan", &mut |l| {
        let _: IgnoredAny = serde_json::from_slice(l).unwrap();
        1
    });
    run("serde_json::Value", &mut |l| {
        let v: serde_json::Value = serde_json::from_slice(l).unwrap();
        v.is_object() as usize
    });
}

/// Counts live heap bytes and allocations (requested sizes, no allocator overhead).
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    pub static LIVE: AtomicUsize = AtomicUsize::new(0);
    pub static COUNT: AtomicUsize = AtomicUsize::new(0);
    pub struct Counting;
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            LIVE.fetch_add(l.size(), Relaxed);
            COUNT.fetch_add(1, Relaxed);
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            LIVE.fetch_sub(l.size(), Relaxed);
            COUNT.fetch_sub(1, Relaxed);
            unsafe { System.dealloc(p, l) }
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
            LIVE.fetch_add(n, Relaxed);
            LIVE.fetch_sub(l.size(), Relaxed);
            unsafe { System.realloc(p, l, n) }
        }
    }
}
#[global_allocator]
static A: counting::Counting = counting::Counting;

pub fn retained(lines: &[&[u8]], strip: bool) {
    use std::sync::atomic::Ordering::Relaxed;
    let (b0, c0) = (counting::LIVE.load(Relaxed), counting::COUNT.load(Relaxed));
    let mut kept = Vec::with_capacity(lines.len());
    for l in lines {
        let s = std::str::from_utf8(l).unwrap();
        if let Ok(WatchEvent::Added(mut c)) = serde_json::from_str::<WatchEvent<ConfigMap>>(s) {
            if strip {
                c.metadata.managed_fields = None;
            }
            kept.push(c);
        }
    }
    let n = kept.len();
    let (b1, c1) = (counting::LIVE.load(Relaxed), counting::COUNT.load(Relaxed));
    let vec_bytes = n * std::mem::size_of::<ConfigMap>();
    println!(
        "retained strip={strip}: {n} objects, {:.0} heap bytes/object ({} of them the ConfigMap struct itself), {:.1} allocations/object, JSON {:.0} bytes/object",
        (b1 - b0) as f64 / n as f64,
        vec_bytes / n,
        (c1 - c0) as f64 / n as f64,
        lines.iter().map(|l| l.len()).sum::<usize>() as f64 / lines.len() as f64
    );
    drop(kept);
}

/// Heap bytes (requested sizes) and allocations of decoding `json` as a `T`, kept.
fn footprint<T: serde::de::DeserializeOwned>(json: &serde_json::Value) -> (usize, usize) {
    use std::sync::atomic::Ordering::Relaxed;
    let text = json.to_string();
    let (b0, c0) = (counting::LIVE.load(Relaxed), counting::COUNT.load(Relaxed));
    let kept: T = serde_json::from_str(&text).unwrap();
    let (b1, c1) = (counting::LIVE.load(Relaxed), counting::COUNT.load(Relaxed));
    drop(kept);
    (b1 - b0, c1 - c0)
}

/// Where the heap bytes of one decoded ConfigMap go, part by part.
pub fn parts(line: &[u8]) {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
    use std::collections::BTreeMap;
    let event: serde_json::Value = serde_json::from_slice(line).unwrap();
    let object = &event["object"];
    let meta = &object["metadata"];
    let mut bare_meta = meta.clone();
    for field in ["labels", "annotations", "managedFields"] {
        bare_meta.as_object_mut().unwrap().remove(field);
    }
    let rows: Vec<(&str, (usize, usize), usize)> = vec![
        ("whole ConfigMap (heap only)", footprint::<ConfigMap>(object), object.to_string().len()),
        ("metadata.managedFields", footprint::<Vec<ManagedFieldsEntry>>(&meta["managedFields"]), meta["managedFields"].to_string().len()),
        ("data (4 keys)", footprint::<BTreeMap<String, String>>(&object["data"]), object["data"].to_string().len()),
        ("metadata.labels (4)", footprint::<BTreeMap<String, String>>(&meta["labels"]), meta["labels"].to_string().len()),
        ("metadata.annotations (2)", footprint::<BTreeMap<String, String>>(&meta["annotations"]), meta["annotations"].to_string().len()),
        ("rest of metadata (name, uid, ...)", footprint::<ObjectMeta>(&bare_meta), bare_meta.to_string().len()),
    ];
    println!("| part | JSON bytes | heap bytes | allocations |\n|---|---:|---:|---:|");
    for (name, (bytes, allocs), json) in rows {
        println!("| {name} | {json} | {bytes} | {allocs} |");
    }
    println!("(plus {} bytes of the ConfigMap struct itself, inline where it is stored)", std::mem::size_of::<ConfigMap>());
}
