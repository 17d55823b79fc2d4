//! Comparing resourceVersions: the one place in the workspace that does.
//!
//! A resourceVersion was long documented as an opaque string: clients could only
//! test two for equality, or hand one back to the server. Kubernetes 1.35 made them
//! comparable (KEP-5504, "Comparable resource versions"): the API server promises that
//! every resourceVersion it hands out for built-in and custom resources is a decimal
//! integer without leading zeros, and that a larger one is newer *within one
//! resource* (one group, resource and, where it applies, namespace; in practice one
//! etcd revision counter). client-go exposes the same rule as
//! `resourceversion.CompareResourceVersion`.
//!
//! Why it matters here: the freshness guard (the `controller` crate's `freshness`
//! module, client-go 1.36's "stale controller" mitigation, KEP-5647) asks "has my
//! informer's store caught up with the version my last write produced?", which is an
//! ordering question.
//!
//! # The safe fallback
//!
//! A string that does not follow the rule (a server that is not the Kubernetes API
//! server, an aggregated API with its own versions, an empty string) is *not
//! comparable*: [`compare`] answers `None` and never guesses. Callers must then fall
//! back to what they did before versions were comparable; the freshness guard stops
//! waiting and lets the sync run, so a strange version can cost a stale read, never a
//! stuck object.
//!
//! ```
//! use std::cmp::Ordering;
//! use cache::resource_version::{compare, is_at_least};
//!
//! assert_eq!(compare("99", "100"), Some(Ordering::Less)); // numeric, not lexicographic
//! assert_eq!(compare("100", "100"), Some(Ordering::Equal));
//! assert_eq!(is_at_least("1000", "999"), Some(true));
//! assert_eq!(compare("", "1"), None); // not a resourceVersion
//! assert_eq!(compare("007", "7"), None); // leading zeros are not allowed
//! assert_eq!(compare("abc", "1"), None); // opaque: the server does not follow KEP-5504
//! ```

use std::cmp::Ordering;

/// Whether `rv` follows KEP-5504's format: a non-empty string of ASCII digits that
/// does not start with `0` (so `"0"`, which means "any version" in list requests, is
/// not an object's version).
pub fn is_comparable(rv: &str) -> bool {
    let bytes = rv.as_bytes();
    !bytes.is_empty() && bytes[0] != b'0' && bytes.iter().all(u8::is_ascii_digit)
}

/// Orders two resourceVersions of the same resource, or `None` when either one is not
/// comparable (see [`is_comparable`] and the [module docs](self) for the fallback).
///
/// Both are decimal integers without leading zeros, so the longer one is the larger,
/// and two of the same length compare digit by digit; no parsing, so versions beyond
/// `u64` compare correctly too.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    if !is_comparable(a) || !is_comparable(b) {
        return None;
    }
    Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// Whether `reached` is `target` or newer, or `None` when the two are not comparable.
pub fn is_at_least(reached: &str, target: &str) -> Option<bool> {
    compare(reached, target).map(Ordering::is_ge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_value_not_by_text() {
        assert_eq!(compare("9", "10"), Some(Ordering::Less));
        assert_eq!(compare("10", "9"), Some(Ordering::Greater));
        assert_eq!(compare("123", "124"), Some(Ordering::Less));
        assert_eq!(compare("124", "124"), Some(Ordering::Equal));
        // Beyond u64: still ordered.
        assert_eq!(
            compare("18446744073709551616", "18446744073709551615"),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn refuses_what_kep_5504_does_not_promise() {
        for bad in ["", "0", "01", "-1", "1a", " 1", "1.5", "abc"] {
            assert!(!is_comparable(bad), "{bad:?}");
            assert_eq!(compare(bad, "5"), None, "{bad:?}");
            assert_eq!(compare("5", bad), None, "{bad:?}");
            assert_eq!(is_at_least(bad, "5"), None, "{bad:?}");
        }
    }

    #[test]
    fn at_least_includes_equal() {
        assert_eq!(is_at_least("5", "5"), Some(true));
        assert_eq!(is_at_least("4", "5"), Some(false));
        assert_eq!(is_at_least("50", "5"), Some(true));
    }
}
