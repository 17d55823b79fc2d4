//! Model-based property test: random operation sequences run against the real queue
//! and against a deliberately naive sequential model of client-go's rules; after every
//! step the two must agree on what is in line, in what order, and what is held.

use std::collections::{HashSet, VecDeque};

use proptest::prelude::*;
use workqueue::{ItemState, Queue, WorkItem};

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Get,
    /// Finish the n-th held item (modulo how many are held).
    Done(usize),
    /// Finish a held item through `into_inner` + an explicit `Queue::done`.
    ExplicitDone(usize),
    ShutDown,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..6).prop_map(Op::Add),
        4 => Just(Op::Get),
        3 => any::<usize>().prop_map(Op::Done),
        1 => any::<usize>().prop_map(Op::ExplicitDone),
        1 => Just(Op::ShutDown),
    ]
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
        let mut held: Vec<WorkItem<u8>> = Vec::new();

        for op in ops {
            match op {
                Op::Add(k) => {
                    queue.add(k);
                    model.add(k);
                }
                Op::Get => {
                    let got = queue.try_get();
                    let expected = model.get();
                    prop_assert_eq!(got.as_deref().copied(), expected);
                    if let Some(item) = got {
                        prop_assert!(
                            !held.iter().any(|h| **h == *item),
                            "item {} handed out while already held", *item
                        );
                        held.push(item);
                    }
                }
                Op::Done(i) if !held.is_empty() => {
                    let item = held.swap_remove(i % held.len());
                    model.done(*item);
                    item.done();
                }
                Op::ExplicitDone(i) if !held.is_empty() => {
                    let k = held.swap_remove(i % held.len()).into_inner();
                    model.done(k);
                    queue.done(&k);
                }
                Op::Done(_) | Op::ExplicitDone(_) => {}
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
