//! The plain [`Queue`](crate::Queue)'s methods on the queues built around it.
//!
//! A [`DelayingQueue`](crate::DelayingQueue) is a `Queue` plus a waiting set, and a
//! [`RateLimitingQueue`](crate::RateLimitingQueue) is a `DelayingQueue` plus a rate
//! limiter (client-go embeds one interface in the next). A worker holding the
//! rate-limiting queue calls `add`, `get`, `len` and `shut_down` on it directly. Those
//! calls are written out as methods of each wrapper, not reached through `Deref`: the
//! API guidelines keep `Deref` for smart pointers, and rustdoc would list the methods
//! under "Methods from `Deref`" instead of on the type a learner is reading about.
//!
//! The macro writes each method once for both wrappers. Every one is `#[inline]` and
//! only calls the same method one level down; the `async` ones hand back the inner
//! future itself, so a call costs exactly what it costs on the `Queue` (the workqueue
//! benchmarks compare against client-go; see docs/benchmarks.md).

/// Inside an `impl<T: Item>` block of a wrapper queue, defines the `Queue` methods,
/// each forwarding to the same method of the field named (a `Queue` or a queue that
/// has these methods itself).
macro_rules! forward_queue_methods {
    ($inner:ident) => {
        /// The queue's name (empty when unnamed): see [`Queue::name`](crate::Queue::name).
        #[inline]
        pub fn name(&self) -> &str {
            self.$inner.name()
        }

        /// Sets the queue's [observer](crate::observer): see
        /// [`Queue::set_observer`](crate::Queue::set_observer).
        #[inline]
        pub fn set_observer(
            &self,
            observer: ::std::sync::Arc<dyn $crate::QueueObserver<T>>,
        ) -> bool {
            self.$inner.set_observer(observer)
        }

        /// Adds `item` to be processed (by value or by reference): client-go's `Add`,
        /// see [`Queue::add`](crate::Queue::add).
        #[inline]
        pub fn add(&self, item: impl $crate::IntoItem<T>) {
            self.$inner.add(item)
        }

        /// Waits for an item (`None` once shut down and empty): client-go's `Get`,
        /// see [`Queue::get`](crate::Queue::get).
        #[inline]
        pub fn get(
            &self,
        ) -> impl ::std::future::Future<Output = Option<$crate::WorkItem<'_, T>>> + '_ {
            self.$inner.get()
        }

        /// [`get`](Self::get) with a `'static` guard for a spawned task: see
        /// [`Queue::get_owned`](crate::Queue::get_owned).
        #[inline]
        pub fn get_owned(
            &self,
        ) -> impl ::std::future::Future<Output = Option<$crate::OwnedWorkItem<T>>> + '_ {
            self.$inner.get_owned()
        }

        /// The next item if one is waiting, without waiting: see
        /// [`Queue::try_get`](crate::Queue::try_get).
        #[inline]
        pub fn try_get(&self) -> Option<$crate::WorkItem<'_, T>> {
            self.$inner.try_get()
        }

        /// Marks `item` as done processing: client-go's `Done`, see
        /// [`Queue::done`](crate::Queue::done).
        #[inline]
        pub fn done(&self, item: &T) {
            self.$inner.done(item)
        }

        /// The number of items waiting in line: see [`Queue::len`](crate::Queue::len).
        #[inline]
        pub fn len(&self) -> usize {
            self.$inner.len()
        }

        /// Whether no item is waiting in line: see
        /// [`Queue::is_empty`](crate::Queue::is_empty).
        #[inline]
        pub fn is_empty(&self) -> bool {
            self.$inner.is_empty()
        }

        /// Where `item` stands, if the queue knows it: see
        /// [`Queue::state_of`](crate::Queue::state_of).
        #[inline]
        pub fn state_of(&self, item: &T) -> Option<$crate::ItemState> {
            self.$inner.state_of(item)
        }

        /// Stops the queue: client-go's `ShutDown`, see
        /// [`Queue::shut_down`](crate::Queue::shut_down).
        #[inline]
        pub fn shut_down(&self) {
            self.$inner.shut_down()
        }

        /// Stops the queue and waits for the items being processed: client-go's
        /// `ShutDownWithDrain`, see [`Queue::shut_down_with_drain`](crate::Queue::shut_down_with_drain).
        #[inline]
        pub fn shut_down_with_drain(&self) -> impl ::std::future::Future<Output = ()> + '_ {
            self.$inner.shut_down_with_drain()
        }

        /// Whether the queue is shutting down: client-go's `ShuttingDown`, see
        /// [`Queue::shutting_down`](crate::Queue::shutting_down).
        #[inline]
        pub fn shutting_down(&self) -> bool {
            self.$inner.shutting_down()
        }
    };
}

pub(crate) use forward_queue_methods;
