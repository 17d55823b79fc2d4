//! Sizes the page shows next to each stage: FIFO depth, indexer size, queue depth,
//! syncs in flight; and a few words, such as the wire format the API server answers
//! an informer in (`protobuf` or `json`).
//!
//! The owner of a size registers a reader once; the page reads them all on each
//! refresh. A reader holds only a weak reference to what it measures and answers
//! `None` once that is gone, which drops it: an informer or a queue that stops
//! leaves no reader behind.

use parking_lot::Mutex;
use serde::Serialize;

use crate::stage::Stage;

type Reader = Box<dyn Fn() -> Option<Reading> + Send + Sync>;

struct Entry {
    component: String,
    stage: Stage,
    name: &'static str,
    read: Reader,
}

/// Every registered size reader.
#[derive(Default)]
pub struct Gauges {
    entries: Mutex<Vec<Entry>>,
}

impl std::fmt::Debug for Gauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gauges")
            .field("entries", &self.entries.lock().len())
            .finish()
    }
}

/// One size, as read now.
#[derive(Debug, Clone, Serialize)]
pub struct GaugeValue {
    /// Whose size: the informer's kind or the controller's name.
    pub component: String,
    /// The stage it belongs to on the page.
    pub stage: Stage,
    /// What it is: `depth`, `size`, `in_flight`, `wire`.
    pub name: &'static str,
    /// Its value.
    pub value: Reading,
}

/// A gauge's value: a count, or a word. Serialized as a bare number or string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Reading {
    /// A size.
    Count(i64),
    /// A word, such as `protobuf`.
    Text(&'static str),
}

impl Gauges {
    /// Registers `read` as `component`'s `name` at `stage`. `read` returns `None`
    /// once what it measures is gone; it is then dropped.
    pub fn register(
        &self,
        component: impl Into<String>,
        stage: Stage,
        name: &'static str,
        read: impl Fn() -> Option<i64> + Send + Sync + 'static,
    ) {
        self.push(component.into(), stage, name, move || {
            read().map(Reading::Count)
        });
    }

    /// Registers `read` as `component`'s word `name` at `stage` (as
    /// [`register`](Self::register) does a size).
    pub fn register_text(
        &self,
        component: impl Into<String>,
        stage: Stage,
        name: &'static str,
        read: impl Fn() -> Option<&'static str> + Send + Sync + 'static,
    ) {
        self.push(component.into(), stage, name, move || {
            read().map(Reading::Text)
        });
    }

    fn push(
        &self,
        component: String,
        stage: Stage,
        name: &'static str,
        read: impl Fn() -> Option<Reading> + Send + Sync + 'static,
    ) {
        let mut entries = self.entries.lock();
        // Readers of things that are gone would otherwise wait for the next read.
        entries.retain(|entry| (entry.read)().is_some());
        entries.push(Entry {
            component,
            stage,
            name,
            read: Box::new(read),
        });
    }

    /// Reads every size, dropping the readers whose subject is gone.
    pub fn read(&self) -> Vec<GaugeValue> {
        let mut values = Vec::new();
        self.entries.lock().retain(|entry| match (entry.read)() {
            Some(value) => {
                values.push(GaugeValue {
                    component: entry.component.clone(),
                    stage: entry.stage,
                    name: entry.name,
                    value,
                });
                true
            }
            None => false,
        });
        values
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn readers_answer_until_their_subject_is_gone() {
        let gauges = Gauges::default();
        let depth = Arc::new(7_i64);
        let weak = Arc::downgrade(&depth);
        gauges.register("Foo", Stage::Fifo, "depth", move || {
            weak.upgrade().map(|d| *d)
        });
        let values = gauges.read();
        assert_eq!(values.len(), 1);
        assert_eq!(
            (
                values[0].component.as_str(),
                values[0].name,
                values[0].value
            ),
            ("Foo", "depth", Reading::Count(7))
        );
        drop(depth);
        assert!(gauges.read().is_empty());
        assert!(gauges.read().is_empty(), "the reader was dropped");
    }

    #[test]
    fn a_word_is_read_like_a_size_and_serialized_as_a_string() {
        let gauges = Gauges::default();
        let wire = Arc::new("protobuf");
        let weak = Arc::downgrade(&wire);
        gauges.register_text("Deployment", Stage::Fifo, "wire", move || {
            weak.upgrade().map(|w| *w)
        });
        gauges.register("Deployment", Stage::Fifo, "depth", || Some(3));
        let json = serde_json::to_value(gauges.read()).unwrap();
        assert_eq!(json[0]["value"], "protobuf");
        assert_eq!(json[1]["value"], 3);
        drop(wire);
        assert_eq!(gauges.read().len(), 1, "the word's reader was dropped");
    }
}
