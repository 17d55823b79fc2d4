//! Model-based property test: random operation sequences run against the real queue
//! and against a deliberately naive sequential model of client-go's rules; after every
//! step the two must agree on what is in line, in what order, and what is held.

use std::collections::{HashSet, VecDeque};

use proptest::prelude::*;
use workqueue::{ItemState, OwnedWorkItem, Queue, WorkItem};

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    /// Add through `add_ref` (the item is cloned only if stored).
    AddRef(u8),
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
        4 => (0u8..6).prop_map(Op::Add),
        2 => (0u8..6).prop_map(Op::AddRef),
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

/// The rules, written as plainly as possible: a list, a held set, a re-run set.
#[derive(Default)]
struct Model {
    line: VecDeque<u8>,
    held: HashSet<u8>,
    rerun: HashSet<u8>,
    shut: bool,
}

impl Model {
    fn add(&mut self, k: u8) {
        if self.shut || self.line.contains(&k) {
            return;
        }
        if self.held.contains(&k) {
            self.rerun.insert(k);
        } else {
            self.line.push_back(k);
        }
    }

    fn get(&mut self) -> Option<u8> {
        let k = self.line.pop_front()?;
        self.held.insert(k);
        Some(k)
    }

    fn done(&mut self, k: u8) {
        self.held.remove(&k);
        if self.rerun.remove(&k) {
            self.line.push_back(k);
        }
    }

    fn state_of(&self, k: u8) -> Option<ItemState> {
        match (self.held.contains(&k), self.rerun.contains(&k)) {
            (true, true) => Some(ItemState::ProcessingDirty),
            (true, false) => Some(ItemState::Processing),
            (false, _) if self.line.contains(&k) => Some(ItemState::Queued),
            _ => None,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn queue_matches_the_sequential_model(ops in prop::collection::vec(op(), 1..200)) {
        let queue = Queue::new();
        let mut model = Model::default();
        let mut held: Vec<Held<'_>> = Vec::new();

        for op in ops {
            match op {
                Op::Add(k) => {
                    queue.add(k);
                    model.add(k);
                }
                Op::AddRef(k) => {
                    queue.add_ref(&k);
                    model.add(k);
                }
                Op::Get(owned) => {
                    let got = queue.try_get();
                    let expected = model.get();
                    prop_assert_eq!(got.as_deref().copied(), expected);
                    if let Some(item) = got {
                        prop_assert!(
                            !held.iter().any(|h| !h.finished && h.guard.key() == *item),
                            "item {} handed out while already held", *item
                        );
                        let guard = if owned {
                            Guard::Owned(item.into_owned())
                        } else {
                            Guard::Borrowed(item)
                        };
                        held.push(Held { guard, finished: false });
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
            for k in 0..6 {
                prop_assert_eq!(queue.state_of(&k), model.state_of(k), "state of {}", k);
            }
        }

        // Draining what is left hands out exactly the model's line, in order.
        drop(held);
        let mut rest = Vec::new();
        while let Some(item) = queue.try_get() {
            rest.push(item.into_inner());
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
    }
}
