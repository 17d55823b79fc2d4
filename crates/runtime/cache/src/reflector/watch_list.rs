//! The initial list as a stream: client-go's `Reflector.watchList` (KEP-3157,
//! "streaming lists").
//!
//! Instead of paging through a list and then starting a watch, the reflector starts
//! *one* watch with `sendInitialEvents=true` at resourceVersion `""` (not older than
//! now). The API server answers from its watch cache: an `ADDED` event for every
//! object that exists, a bookmark annotated `k8s.io/initial-events-end: "true"` at the
//! version of that snapshot, and from then on the ordinary watch events, on the same
//! connection.
//!
//! Why it is the default here (client-go 1.34 still has it behind its
//! `WatchListClient` gate): a paged list is a chain of requests, and on a quiet
//! cluster the API server answers the continuation pages from etcd rather than from
//! its cache (measured: 0.6-0.7 s of etcd CPU per 50k-object list, against none for a
//! stream; docs/benchmarks.md). The stream has no round trips and no page buffers,
//! and needs no second request to start watching.
//!
//! The events go into the informer's queue exactly as a list does: batches of 500
//! through [`InformerQueue::replace_page`](crate::InformerQueue::replace_page), and
//! the end bookmark is [`finish_replace`](crate::InformerQueue::finish_replace)
//! (tombstones for what is gone, then `has_synced`). Anything unexpected before the end bookmark (an error, a
//! closed stream, a `MODIFIED` or `DELETED` event) abandons the stream, and the
//! reflector lists in pages instead, that time. A server that rejects the request
//! itself (`400` or `422 Invalid`, as a server with the WatchList feature off answers),
//! or sends changes before any end bookmark (as a server that ignores the parameter
//! does), is not asked again: that reflector lists in pages from then on. Other 4xx
//! answers say nothing about the feature: a `404` for a resource not served yet (an
//! informer started right after its CRD was applied), a `401` or a `403` falls back
//! for that attempt only.
//!
//! An event whose object `K` cannot decode abandons the stream too: the stream cannot
//! say which object it was, and the paged list that follows sets that one object
//! aside and lists the rest ([`crate::unreadable`]).
//!
//! A `429 TooManyRequests` or a refused connection is different: the server is busy or
//! restarting, not lacking the feature, and a paged list would only add load. As in
//! client-go, the reflector backs off and streams again.
//!
//! Where client-go differs, on purpose: it applies `MODIFIED` and `DELETED` events
//! that arrive before the end bookmark to its temporary store, and it starts a new
//! stream (not a paged list) after one that closed early; and it asks again on every
//! relist, even after a `422`. An API server that supports streaming lists sends only
//! `ADDED` events before the end bookmark, so changes before it come from one that
//! ignored `sendInitialEvents`; and a stream that keeps closing early (a timeout
//! shorter than the time to send a large initial state) would never finish, where a
//! paged list makes progress page by page.

use std::mem;
use std::pin::pin;

use futures::StreamExt;
use kube::Resource;
use kube::api::WatchEvent;
use tokio_util::sync::CancellationToken;

use super::{INITIAL_EVENTS_END, Reflector, is_retriable};
use crate::lister_watcher::{DEFAULT_PAGE_SIZE, WatchStream};

/// How a streaming list ended.
pub(super) enum WatchList<K> {
    /// The initial events are in the queue; the stream continues as a normal watch.
    Synced {
        stream: WatchStream<K>,
        count: usize,
    },
    Cancelled,
    /// The server is busy or restarting (429, connection refused): back off, then
    /// stream again.
    Retry {
        reason: String,
    },
    /// Fall back to a paged list; `unsupported`: never try a stream again.
    Failed {
        reason: String,
        unsupported: bool,
    },
}

impl<K: Resource + Send + Sync + 'static> Reflector<K> {
    /// Runs a streaming list up to its end bookmark. See the module docs.
    pub(super) async fn watch_list(&self, cancel: &CancellationToken) -> WatchList<K> {
        // Not older than now: a consistent snapshot, as a paged list takes.
        let Some(started) = self.start_watch("", true, cancel).await else {
            return WatchList::Cancelled;
        };
        let mut stream = match started {
            Ok(stream) => stream,
            Err(e) if is_retriable(&e) => {
                return WatchList::Retry {
                    reason: e.to_string(),
                };
            }
            Err(e) => {
                // Only a refusal of the request itself says the server has no streaming
                // lists: 400 or 422 (an old server's "sendInitialEvents is forbidden").
                // A 404 (the resource not served yet: an informer started right after
                // its CRD was applied), 401 or 403 says nothing about them: a paged
                // list this time, a stream again next time, as client-go falls back
                // per attempt.
                let unsupported =
                    matches!(&e, kube::Error::Api(s) if s.code == 400 || s.code == 422);
                return WatchList::Failed {
                    reason: e.to_string(),
                    unsupported,
                };
            }
        };
        let batch_size = DEFAULT_PAGE_SIZE as usize;
        let mut replacement = self.store.begin_replace();
        let mut batch = Vec::with_capacity(batch_size);
        let mut count = 0;
        // One cancellation future for the whole stream, not one per event.
        let mut cancelled = pin!(cancel.cancelled());
        loop {
            let next = tokio::select! {
                _ = &mut cancelled => return WatchList::Cancelled,
                next = stream.next() => next,
            };
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(e)) if is_retriable(&e) => {
                    return WatchList::Retry {
                        reason: e.to_string(),
                    };
                }
                Some(Err(e)) => {
                    return WatchList::Failed {
                        reason: e.to_string(),
                        unsupported: false,
                    };
                }
                None => {
                    return WatchList::Failed {
                        reason: format!("closed after {count} objects, before the end bookmark"),
                        unsupported: false,
                    };
                }
            };
            match event {
                WatchEvent::Added(obj) => {
                    batch.push(obj);
                    count += 1;
                    if batch.len() == batch_size {
                        let full = mem::replace(&mut batch, Vec::with_capacity(batch_size));
                        self.store.replace_page(&mut replacement, full);
                    }
                }
                WatchEvent::Bookmark(bookmark) => {
                    let end = bookmark
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END)
                        .is_some_and(|v| v == "true");
                    if end {
                        self.store.replace_page(&mut replacement, batch);
                        let rv = &bookmark.metadata.resource_version;
                        if let Err(e) = self.store.finish_replace_at(replacement, rv) {
                            tracing::warn!(reflector = %self.name, error = %e, "streaming list contained objects that cannot be keyed; skipped them");
                        }
                        self.set_resource_version(&bookmark.metadata.resource_version);
                        tracing::debug!(reflector = %self.name, count, rv = %bookmark.metadata.resource_version, "listed (streaming)");
                        return WatchList::Synced { stream, count };
                    }
                }
                WatchEvent::Modified(_) | WatchEvent::Deleted(_) => {
                    return WatchList::Failed {
                        reason: "a change arrived before the end bookmark (the server ignores sendInitialEvents)".into(),
                        unsupported: true,
                    };
                }
                WatchEvent::Error(status) => {
                    let e = kube::Error::Api(status);
                    if is_retriable(&e) {
                        return WatchList::Retry {
                            reason: e.to_string(),
                        };
                    }
                    return WatchList::Failed {
                        reason: e.to_string(),
                        unsupported: false,
                    };
                }
            }
        }
    }
}
