//! Model-based property test: random operation sequences run against the real queue
//! and against a deliberately naive sequential model of client-go's rules (plus
//! controller-runtime's priorities with our starvation bound, and `add_after` on
//! paused time); after every step
//! the two must agree on what is in line, in what order and at which priority, what
//! is held, and what waits for its time.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use proptest::prelude::*;
use workqueue::{
    AddOpts, ItemState, OwnedWorkItem, QueueConfig, RateLimitingQueue, WorkItem,
    default_controller_rate_limiter,
};

/// The priorities the operations use: controller-runtime's low one, the default, and
/// two above it.
const PRIORITIES: [i32; 4] = [workqueue::priority::LOW, 0, 1, 5];
/// `add_after` delays and time steps, in milliseconds.
const DELAYS_MS: [u64; 4] = [0, 10, 20, 30];
const STEPS_MS: [u64; 3] = [5, 10, 20];
/// The queue's starvation bound: small, so that short sequences reach it.
const BOUND: u32 = 2;

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    /// Add by reference, `add(&k)` (the item is cloned only if stored).
    AddRef(u8),
    /// `add_with_opts` at `PRIORITIES[p]` (by reference if `true`).
    AddWithPriority(u8, usize, bool),
    /// `add_after` of `DELAYS_MS[d]` (`None`), or `add_with_opts` with that delay at
    /// `PRIORITIES[p]` (`Some(p)`).
    AddAfter(u8, usize, Option<usize>),
    /// Let `STEPS_MS[i]` pass.
    Advance(usize),
    /// Get; `true` keeps the item as an `OwnedWorkItem`.
    Get(bool),
    /// Finish the n-th held item (modulo how many are held).
    Done(usize),
    /// Finish a held item through `into_inner` + an explicit `Queue::done`.
    ExplicitDone(usize),
    /// `Queue::done` for a held item while its guard lives on; dropping the guard
    /// later must not touch the item again (it may be queued or held anew by then).
    DoneWhileGuarded(usize),
    ShutDown,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..6).prop_map(Op::Add),
        1 => (0u8..6).prop_map(Op::AddRef),
        4 => (0u8..6, 0..PRIORITIES.len(), any::<bool>())
            .prop_map(|(k, p, by_ref)| Op::AddWithPriority(k, p, by_ref)),
        2 => (0u8..6, 0..DELAYS_MS.len(), proptest::option::of(0..PRIORITIES.len()))
            .prop_map(|(k, d, p)| Op::AddAfter(k, d, p)),
        1 => (0..STEPS_MS.len()).prop_map(Op::Advance),
        4 => any::<bool>().prop_map(Op::Get),
        3 => any::<usize>().prop_map(Op::Done),
        1 => any::<usize>().prop_map(Op::ExplicitDone),
        1 => any::<usize>().prop_map(Op::DoneWhileGuarded),
        1 => Just(Op::ShutDown),
    ]
}

/// A guard as the test holds it.
enum Guard<'q> {
    Borrowed(WorkItem<'q, u8>),
    Owned(OwnedWorkItem<u8>),
}

impl Guard<'_> {
    fn key(&self) -> u8 {
        match self {
            Guard::Borrowed(g) => **g,
            Guard::Owned(g) => **g,
        }
    }

    fn into_inner(self) -> u8 {
        match self {
            Guard::Borrowed(g) => g.into_inner(),
            Guard::Owned(g) => g.into_inner(),
        }
    }
}

/// A held guard, and whether its processing was already ended by `Queue::done`.
struct Held<'q> {
    guard: Guard<'q>,
    finished: bool,
}

/// The rules, written as plainly as possible: a list, a held set, a re-run map, and
/// a list of items waiting for their time.
#[derive(Default)]
struct Model {
    /// `(item, priority)` in the order they got in line.
    line: Vec<(u8, i32)>,
    held: HashSet<u8>,
    /// Held items added again meanwhile, with the highest priority they were added at.
    rerun: HashMap<u8, i32>,
    /// `(item, ready at in ms, order of the add_after that set that time, priority)`.
    waiting: Vec<(u8, u64, u64, i32)>,
    now_ms: u64,
    add_afters: u64,
    shut: bool,
    /// Hand-outs in a row that passed over a lower-priority item in line.
    passed_over: u32,
}

impl Model {
    fn add(&mut self, k: u8, p: i32) {
        if self.shut {
            return;
        }
        if let Some(i) = self.line.iter().position(|&(q, _)| q == k) {
            // Raised: to the end of the line, at the new priority.
            if p > self.line[i].1 {
                self.line.remove(i);
                self.line.push((k, p));
            }
            return;
        }
        if self.held.contains(&k) {
            let rerun = self.rerun.entry(k).or_insert(p);
            *rerun = (*rerun).max(p);
        } else {
            self.line.push((k, p));
        }
    }

    /// The first item of the highest priority; after `BOUND` hand-outs in a row that
    /// passed over a lower item, the first (longest in line) of those instead.
    fn get(&mut self) -> Option<(u8, i32)> {
        let top = self.line.iter().map(|&(_, p)| p).max()?;
        let mut i = self.line.iter().position(|&(_, p)| p == top)?;
        if self.line.iter().any(|&(_, p)| p < top) {
            self.passed_over += 1;
            if self.passed_over > BOUND {
                self.passed_over = 0;
                i = self.line.iter().position(|&(_, p)| p < top)?;
            }
        } else {
            self.passed_over = 0;
        }
        let (k, p) = self.line.remove(i);
        self.held.insert(k);
        Some((k, p))
    }

    fn done(&mut self, k: u8) {
        self.held.remove(&k);
        if let Some(p) = self.rerun.remove(&k) {
            self.line.push((k, p));
        }
    }

    fn add_after(&mut self, k: u8, delay_ms: u64, p: i32) {
        if self.shut {
            return;
        }
        if delay_ms == 0 {
            return self.add(k, p);
        }
        self.add_afters += 1;
        let at = self.now_ms + delay_ms;
        if let Some(w) = self.waiting.iter_mut().find(|w| w.0 == k) {
            // The earliest time, the highest priority.
            w.3 = w.3.max(p);
            if at < w.1 {
                (w.1, w.2) = (at, self.add_afters);
            }
        } else {
            self.waiting.push((k, at, self.add_afters, p));
        }
    }

    /// Time passes: what is due is added, earliest (then first parked) first.
    fn advance(&mut self, ms: u64) {
        self.now_ms += ms;
        let now = self.now_ms;
        let mut due: Vec<_> = self
            .waiting
            .iter()
            .copied()
            .filter(|w| w.1 <= now)
            .collect();
        self.waiting.retain(|w| w.1 > now);
        due.sort_by_key(|w| (w.1, w.2));
        for (k, _, _, p) in due {
            self.add(k, p);
        }
    }

    fn state_of(&self, k: u8) -> Option<ItemState> {
        match (self.held.contains(&k), self.rerun.contains_key(&k)) {
            (true, true) => Some(ItemState::ProcessingDirty),
            (true, false) => Some(ItemState::Processing),
            (false, _) if self.line.iter().any(|&(q, _)| q == k) => Some(ItemState::Queued),
            _ => None,
        }
    }
}

/// Lets the delaying queue's timer task run after time moved.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn queue_matches_the_sequential_model(ops in prop::collection::vec(op(), 1..200)) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("runtime");
        runtime.block_on(run(ops))?;
    }
}

/// One case: `ops` on a rate-limiting queue (the plain queue plus `add_after` and
/// `add_with_opts`; its rate limiter is never asked) and on the model, in a runtime
/// with paused time.
async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let queue = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        QueueConfig::default().with_starvation_bound(std::num::NonZeroU32::new(BOUND)),
    );
    let mut model = Model::default();
    let mut held: Vec<Held<'_>> = Vec::new();

    for op in ops {
        match op {
            Op::Add(k) => {
                queue.add(k);
                model.add(k, 0);
            }
            // The borrowed path (`Cow::Borrowed`, cloned only if stored) is the point.
            #[allow(clippy::needless_borrows_for_generic_args)]
            Op::AddRef(k) => {
                queue.add(&k);
                model.add(k, 0);
            }
            #[allow(clippy::needless_borrows_for_generic_args)]
            Op::AddWithPriority(k, p, by_ref) => {
                let p = PRIORITIES[p];
                let opts = AddOpts {
                    priority: p,
                    ..AddOpts::default()
                };
                if by_ref {
                    queue.add_with_opts(&k, opts);
                } else {
                    queue.add_with_opts(k, opts);
                }
                model.add(k, p);
            }
            Op::AddAfter(k, d, p) => {
                let d = DELAYS_MS[d];
                let after = Duration::from_millis(d);
                let p = match p {
                    None => {
                        queue.add_after(k, after);
                        workqueue::priority::DEFAULT
                    }
                    Some(p) => {
                        let priority = PRIORITIES[p];
                        queue.add_with_opts(
                            k,
                            AddOpts {
                                after,
                                priority,
                                ..AddOpts::default()
                            },
                        );
                        priority
                    }
                };
                model.add_after(k, d, p);
            }
            Op::Advance(i) => {
                tokio::time::advance(Duration::from_millis(STEPS_MS[i])).await;
                settle().await;
                model.advance(STEPS_MS[i]);
            }
            Op::Get(owned) => {
                let got = queue.try_get();
                let expected = model.get();
                prop_assert_eq!(got.as_ref().map(|g| (**g, g.priority())), expected);
                if let Some(item) = got {
                    prop_assert!(
                        !held.iter().any(|h| !h.finished && h.guard.key() == *item),
                        "item {} handed out while already held",
                        *item
                    );
                    let guard = if owned {
                        Guard::Owned(item.into_owned())
                    } else {
                        Guard::Borrowed(item)
                    };
                    held.push(Held {
                        guard,
                        finished: false,
                    });
                }
            }
            Op::Done(i) if !held.is_empty() => {
                let h = held.swap_remove(i % held.len());
                if !h.finished {
                    model.done(h.guard.key());
                }
                drop(h);
            }
            Op::ExplicitDone(i) if !held.is_empty() => {
                let h = held.swap_remove(i % held.len());
                let finished = h.finished;
                let k = h.guard.into_inner();
                if !finished {
                    model.done(k);
                    queue.done(&k);
                }
            }
            Op::DoneWhileGuarded(i) if !held.is_empty() => {
                let i = i % held.len();
                if !held[i].finished {
                    let k = held[i].guard.key();
                    model.done(k);
                    queue.done(&k);
                    held[i].finished = true;
                }
            }
            Op::Done(_) | Op::ExplicitDone(_) | Op::DoneWhileGuarded(_) => {}
            Op::ShutDown => {
                queue.shut_down();
                model.shut = true;
            }
        }
        prop_assert_eq!(queue.len(), model.line.len());
        prop_assert_eq!(queue.shutting_down(), model.shut);
        if !model.shut {
            prop_assert_eq!(queue.waiting_len(), model.waiting.len());
        }
        for k in 0..6 {
            prop_assert_eq!(queue.state_of(&k), model.state_of(k), "state of {}", k);
        }
    }

    // Draining what is left hands out exactly the model's line, in order.
    drop(held);
    let mut rest = Vec::new();
    while let Some(item) = queue.try_get() {
        rest.push((*item, item.priority()));
    }
    let mut expected = Vec::new();
    for k in model.held.clone() {
        model.done(k);
    }
    while let Some(k) = model.get() {
        expected.push(k);
    }
    // Dropping the held guards finished them in Vec order, which the model did in
    // set order: compare as sets, plus no duplicates.
    let unique: HashSet<_> = rest.iter().copied().collect();
    prop_assert_eq!(unique.len(), rest.len(), "no item twice in line");
    prop_assert_eq!(unique, expected.into_iter().collect::<HashSet<_>>());
    Ok(())
}
