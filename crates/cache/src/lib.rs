//! client-go's `tools/cache` in Rust: the reflector-backed, indexed, always converging
//! local copy of API objects that controllers read from, and the shared informers that
//! fan changes out to event handlers.
//!
//! | client-go                                   | here                          |
//! |---------------------------------------------|-------------------------------|
//! | `MetaNamespaceKeyFunc`, `SplitMetaNamespaceKey`, `ObjectName` | [`meta_namespace_key`], [`split_meta_namespace_key`], [`ObjectName`] |
//! | `ThreadSafeStore`, `Indexer`, `Indexers`     | [`Indexer`]                   |
//! | `GenericLister`, generated listers          | [`Lister`], [`NamespaceLister`] |
//! | `labels.Parse`, `labels.Selector`           | [`Selector`]                  |
//! | `DeltaFIFO`, `Delta`, `DeletedFinalStateUnknown` | [`DeltaFifo`], [`Delta`], [`DeletedFinalStateUnknown`] |
//! | `ListerWatcher`, `NewFilteredListWatchFromClient` | [`ListerWatcher`], [`ApiListerWatcher`] |
//! | `Reflector`                                  | [`Reflector`]                 |
//! | `ResourceEventHandler(Funcs)`                | [`EventHandler`], [`EventHandlerFuncs`] |
//! | `SharedIndexInformer`                        | [`SharedIndexInformer`]       |
//! | `SharedInformerFactory`                      | [`SharedInformerFactory`]     |

#![warn(missing_docs)]

mod delta_fifo;
mod error;
mod factory;
mod keys;
mod lister;
mod lister_watcher;
mod processor_listener;
mod reflector;
mod selector;
mod shared_informer;
mod store;
pub mod testing;

pub use delta_fifo::{
    DeletedFinalStateUnknown, DeletedObject, Delta, DeltaFifo, DeltaType, KeyListerGetter,
    TransformFunc,
};
pub use error::{Error, Result};
pub use factory::{InformerOptions, SharedInformerFactory};
pub use keys::{
    ObjectName, deletion_handling_meta_namespace_key, meta_namespace_key, split_meta_namespace_key,
};
pub use lister::{Lister, NamespaceLister};
pub use lister_watcher::{
    ApiListerWatcher, DEFAULT_PAGE_SIZE, ListOptions, ListPage, ListerWatcher, WatchOptions,
    WatchStream,
};
pub use processor_listener::{EventHandler, EventHandlerFuncs};
pub use reflector::{BackoffConfig, Reflector, is_gone};
pub use selector::Selector;
pub use shared_informer::{ResourceEventHandlerRegistration, SharedIndexInformer};
pub use store::{
    IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, OWNER_UID_INDEX, meta_namespace_index_func,
    owner_uid_index_func,
};
