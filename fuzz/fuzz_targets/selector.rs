//! Label selectors (`cache::Selector`, apimachinery's `labels.Parse`): what
//! `kubectl get -l` and a controller's `--selector`-like settings hand to the parser.
//!
//! Input: the selector, optionally followed by a NUL and `key=value` label lines to
//! match it against. Checks, for every selector that parses:
//! * its canonical form (`Display`) parses back to an equal selector and is a fixed
//!   point (rendering the re-parsed selector gives the same string);
//! * the empty selector and only it renders as `""` and matches everything;
//! * matching is the conjunction of the requirements: each top-level clause of the
//!   canonical form parses alone, and the selector matches the labels exactly when
//!   every clause does.

#![no_main]

use std::collections::BTreeMap;

use cache::Selector;
use libfuzzer_sys::fuzz_target;

/// The top-level clauses of a canonical selector: split at commas outside `( )`.
fn clauses(canonical: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0u32, 0);
    for (i, c) in canonical.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&canonical[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !canonical.is_empty() {
        out.push(&canonical[start..]);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (input, labels) = text.split_once('\0').unwrap_or((text, ""));
    let labels: BTreeMap<String, String> = labels
        .lines()
        .map(|line| line.split_once('=').unwrap_or((line, "")))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();

    let Ok(selector) = Selector::parse(input) else {
        return;
    };
    let canonical = selector.to_string();
    let reparsed = Selector::parse(&canonical).unwrap_or_else(|e| {
        panic!("{input:?} renders as {canonical:?}, which does not parse: {e}")
    });
    assert_eq!(reparsed, selector, "{input:?} -> {canonical:?}");
    assert_eq!(reparsed.to_string(), canonical, "{input:?}");
    assert_eq!(selector.is_empty(), canonical.is_empty(), "{input:?}");
    if selector.is_empty() {
        assert!(selector.matches(&labels));
    }

    let matches = selector.matches(&labels);
    let mut all = true;
    for clause in clauses(&canonical) {
        let one = Selector::parse(clause)
            .unwrap_or_else(|e| panic!("clause {clause:?} of {canonical:?} does not parse: {e}"));
        assert_eq!(one.to_string(), clause, "clause of {canonical:?}");
        all &= one.matches(&labels);
    }
    assert_eq!(matches, all, "{canonical:?} on {labels:?}");
});
