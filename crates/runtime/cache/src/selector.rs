//! Label selectors: apimachinery's `labels.Parse` / `labels.Selector`
//! (k8s.io/apimachinery/pkg/labels/selector.go).
//!
//! The syntax `kubectl get -l` accepts, and that listers filter with:
//!
//! | syntax             | matches when the label...                     |
//! |--------------------|-----------------------------------------------|
//! | `a=b`, `a==b`      | `a` exists and equals `b`                      |
//! | `a!=b`             | `a` is absent or differs from `b`             |
//! | `a in (x,y)`       | `a` exists and is `x` or `y`                   |
//! | `a notin (x,y)`    | `a` is absent or is neither `x` nor `y`        |
//! | `a`                | `a` exists                                     |
//! | `!a`               | `a` is absent                                  |
//! | `a>1`, `a<1`       | `a` exists and is an integer greater / smaller |
//!
//! Requirements are separated by commas and must all hold; the empty selector
//! matches everything. Keys and values are validated like apimachinery does, and a bad
//! selector is an [`Error::InvalidSelector`] that says what is wrong and where.
//!
//! ```
//! use std::collections::BTreeMap;
//! use cache::Selector;
//!
//! let selector: Selector = "app=foo, tier in (web,api), !legacy".parse().unwrap();
//! let labels = BTreeMap::from([("app".to_string(), "foo".to_string()), ("tier".to_string(), "web".to_string())]);
//! assert!(selector.matches(&labels));
//! assert!("app in (foo".parse::<Selector>().is_err());
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Resource;

use crate::error::{Error, Result};

mod parser;
use parser::Parser;

/// A requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Operator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One `key op values` clause.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Requirement {
    key: String,
    op: Operator,
    /// Sorted and deduplicated.
    values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.op {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                value.is_some_and(|v| self.values.contains(v))
            }
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(have), Some(want)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.op == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = || self.values.first().map(String::as_str).unwrap_or("");
        match self.op {
            Operator::Equals => write!(f, "{}={}", self.key, first()),
            Operator::DoubleEquals => write!(f, "{}=={}", self.key, first()),
            Operator::NotEquals => write!(f, "{}!={}", self.key, first()),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::GreaterThan => write!(f, "{}>{}", self.key, first()),
            Operator::LessThan => write!(f, "{}<{}", self.key, first()),
        }
    }
}

/// A parsed label selector. `Display` gives its canonical form (requirements sorted by
/// key, values sorted), which parses back to an equal selector.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches everything: apimachinery's `labels.Everything()`.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses a selector string: apimachinery's `labels.Parse`. The same as
    /// `input.parse::<Selector>()`.
    ///
    /// ```
    /// use cache::{Error, Selector};
    ///
    /// let selector = Selector::parse("tier notin (db),app=foo").unwrap();
    /// assert_eq!(selector.to_string(), "app=foo,tier notin (db)");
    /// let Err(Error::InvalidSelector { reason, .. }) = Selector::parse("app in (foo") else {
    ///     panic!("must not parse");
    /// };
    /// assert!(reason.contains("expected ',' or ')' after a value"), "{reason}");
    /// ```
    pub fn parse(input: &str) -> Result<Self> {
        Parser::new(input).parse()
    }

    /// Whether this selector has no requirements (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether `obj`'s labels satisfy every requirement.
    pub fn matches_object<K: Resource>(&self, obj: &K) -> bool {
        match &obj.meta().labels {
            Some(labels) => self.matches(labels),
            None => self.matches(&BTreeMap::new()),
        }
    }

    /// Converts a `metav1.LabelSelector` (matchLabels and matchExpressions):
    /// apimachinery's `LabelSelectorAsSelector`. An empty one matches everything
    /// (apimachinery's "nil selector matches nothing" case is the caller's
    /// `Option::None`). Operators are `In`, `NotIn` (non-empty values), `Exists` and
    /// `DoesNotExist` (no values); anything else is an [`Error::InvalidSelector`].
    ///
    /// ```
    /// use cache::Selector;
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    ///
    /// let ls = LabelSelector {
    ///     match_labels: Some([("app".to_string(), "foo".to_string())].into()),
    ///     match_expressions: Some(vec![LabelSelectorRequirement {
    ///         key: "tier".into(),
    ///         operator: "In".into(),
    ///         values: Some(vec!["web".into(), "api".into()]),
    ///     }]),
    /// };
    /// let selector = Selector::from_label_selector(&ls).unwrap();
    /// assert_eq!(selector.to_string(), "app=foo,tier in (api,web)");
    /// ```
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidSelector {
            // The selector as the API writes it, e.g. {"matchLabels":{"a":"-x"}}.
            selector: serde_json::to_string(selector).unwrap_or_default(),
            reason,
        };
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            validate_key(key).map_err(&invalid)?;
            validate_value(value).map_err(&invalid)?;
            requirements.push(Requirement {
                key: key.clone(),
                op: Operator::Equals,
                values: vec![value.clone()],
            });
        }
        for expr in selector.match_expressions.iter().flatten() {
            validate_key(&expr.key).map_err(&invalid)?;
            let values: Vec<String> = expr.values.clone().unwrap_or_default();
            let op = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(invalid(format!(
                        "{other:?} is not a valid label selector operator"
                    )));
                }
            };
            let needs_values = matches!(op, Operator::In | Operator::NotIn);
            if needs_values && values.is_empty() {
                return Err(invalid(format!(
                    "values for {:?} must be non-empty with operator {}",
                    expr.key, expr.operator
                )));
            }
            if !needs_values && !values.is_empty() {
                return Err(invalid(format!(
                    "values for {:?} must be empty with operator {}",
                    expr.key, expr.operator
                )));
            }
            for v in &values {
                validate_value(v).map_err(&invalid)?;
            }
            requirements.push(requirement(expr.key.clone(), op, values));
        }
        requirements.sort();
        Ok(Self { requirements })
    }
}

fn requirement(key: String, op: Operator, mut values: Vec<String>) -> Requirement {
    values.sort();
    values.dedup();
    Requirement { key, op, values }
}

impl FromStr for Selector {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Validates a label key like apimachinery's `IsQualifiedName`: an optional prefix
/// that is a DNS-1123 subdomain (at most 253 characters of lowercase alphanumerics, `-`
/// and `.`, each dot-separated part starting and ending with an alphanumeric) and a
/// `/`, then a name of at most 63 characters of alphanumerics, `-`, `_` and `.`,
/// starting and ending with an alphanumeric.
fn validate_key(key: &str) -> std::result::Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((_, name)) if name.contains('/') => {
            return Err(format!(
                "invalid label key {key:?}: at most one '/' (between prefix and name)"
            ));
        }
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let dns_label = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        };
        if prefix.is_empty() || prefix.len() > 253 || !prefix.split('.').all(dns_label) {
            return Err(format!(
                "invalid label key {key:?}: prefix must be a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters)"
            ));
        }
    }
    if name.is_empty() {
        return Err(format!(
            "invalid label key {key:?}: name part must not be empty"
        ));
    }
    if !is_qualified_name_part(name) {
        return Err(format!(
            "invalid label key {key:?}: name part must be at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
        ));
    }
    Ok(())
}

/// Validates a label value: empty, or at most 63 characters of alphanumerics, `-`,
/// `_`, `.`, starting and ending with an alphanumeric.
fn validate_value(value: &str) -> std::result::Result<(), String> {
    if value.is_empty() || is_qualified_name_part(value) {
        Ok(())
    } else {
        Err(format!(
            "invalid label value {value:?}: must be at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
        ))
    }
}

fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}
