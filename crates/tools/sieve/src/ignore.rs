//! Ignore rules: what the end-state comparison ([`diff`](crate::diff)) drops, for every
//! kind or for one, beyond what it always drops.
//!
//! A run's end state holds values the cluster chooses per run: an id a driver makes up,
//! a timestamp, a name the API server generated and a status that repeats it. A
//! difference there is not the controller's fault, and a plan that fails on one is a
//! false positive. The presets carry their controllers' rules; any other target gives
//! its own with `--ignore` (repeatable) or `--ignore-file` (one rule a line, `#`
//! comments), in the same syntax:
//!
//! ```text
//! .status.server.id                      # every kind
//! Deployment:.status.conditions[*].reason  # Deployments only
//! .metadata.annotations["example.com/last-sync"]
//! ```
//!
//! A path is jq's: `.key` steps into an object, `[*]` (or `.*`) into every element or key,
//! `["key"]` names a key that is not a plain word. The rule drops what the path names.
//!
//! [`DEFAULT_RULES`] hold the rules every comparison applies, judged on real clusters:
//! what kube-controller-manager writes into a Deployment's status conditions names its
//! current ReplicaSet (`ReplicaSet "web-5d4f8b" has successfully progressed.`), a name
//! generated per run, so two runs that converged alike differ there.

use std::fmt;

/// One rule: a path, for every kind or for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoreRule {
    /// The kind it applies to (`None`: every kind).
    pub kind: Option<String>,
    /// The path, one key per element; `*` is every element or key.
    pub path: Vec<String>,
}

/// Why a rule does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "ignore rule {rule:?}: {reason} (want [Kind:].path.to[*].field, e.g. Deployment:.status.conditions[*].message)"
)]
pub struct ParseError {
    /// The rule as given.
    pub rule: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// The rules every comparison applies, as text (see the module docs for why each).
pub const DEFAULT_RULES: &[&str] = &[
    // kube-controller-manager's deployment controller names the ReplicaSet, whose name
    // is generated, in the message of both conditions (Progressing, Available).
    "Deployment:.status.conditions[*].message",
];

impl IgnoreRule {
    /// A rule for every kind, from its path's keys (`["status", "lastUpdateTime"]`).
    pub fn everywhere<S: AsRef<str>>(path: &[S]) -> Self {
        Self {
            kind: None,
            path: path.iter().map(|s| s.as_ref().to_owned()).collect(),
        }
    }

    /// Parses `[Kind:]path` (module docs).
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let error = |reason| ParseError {
            rule: text.to_owned(),
            reason,
        };
        let text = text.trim();
        let (kind, path) = match text.split_once(':') {
            // A colon inside a quoted key is not a kind's end.
            Some((kind, path)) if !kind.contains(['"', '[', '.']) => {
                if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
                    return Err(error("the kind must be a word"));
                }
                (Some(kind.to_owned()), path)
            }
            _ => (None, text),
        };
        let path = parse_path(path).map_err(error)?;
        if path.is_empty() {
            return Err(error("the path is empty"));
        }
        Ok(Self { kind, path })
    }

    /// Parses a file's rules: one a line, blank lines and `#` comments skipped.
    pub fn parse_lines(text: &str) -> Result<Vec<Self>, ParseError> {
        text.lines()
            .map(|line| line.split_once('#').map_or(line, |(rule, _)| rule).trim())
            .filter(|line| !line.is_empty())
            .map(Self::parse)
            .collect()
    }

    /// Whether the rule applies to an object of `kind`.
    pub fn applies_to(&self, kind: &str) -> bool {
        self.kind.as_deref().is_none_or(|k| k == kind)
    }

    /// [`DEFAULT_RULES`], parsed.
    pub fn defaults() -> Vec<Self> {
        DEFAULT_RULES
            .iter()
            .map(|r| Self::parse(r).expect("the default rules parse"))
            .collect()
    }
}

impl fmt::Display for IgnoreRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(kind) = &self.kind {
            write!(f, "{kind}:")?;
        }
        for key in &self.path {
            let plain =
                !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            match key.as_str() {
                "*" => write!(f, "[*]")?,
                _ if plain => write!(f, ".{key}")?,
                _ => write!(f, "[{}]", serde_json::Value::String(key.clone()))?,
            }
        }
        Ok(())
    }
}

/// `.a.b[*]["c.d"]` (or without the leading dot) as its keys.
fn parse_path(text: &str) -> Result<Vec<String>, &'static str> {
    let mut keys = Vec::new();
    let mut rest = text.strip_prefix('.').unwrap_or(text);
    if rest.is_empty() {
        return Ok(keys);
    }
    // The first key needs no dot: `status.x` is `.status.x`.
    if !rest.starts_with('[') {
        rest = take_word(rest, &mut keys)?;
    }
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            rest = take_word(after, &mut keys)?;
        } else if let Some(after) = rest.strip_prefix("[*]") {
            keys.push("*".to_owned());
            rest = after;
        } else if let Some(after) = rest.strip_prefix("[\"") {
            let end = after.find("\"]").ok_or("a [\" without its \"]")?;
            keys.push(after[..end].to_owned());
            rest = &after[end + 2..];
        } else {
            return Err("expected .key, [*] or [\"key\"]");
        }
    }
    Ok(keys)
}

/// Takes one `key` (a word, or `*`) off `text` into `keys`.
fn take_word<'a>(text: &'a str, keys: &mut Vec<String>) -> Result<&'a str, &'static str> {
    let end = text.find(['.', '[']).unwrap_or(text.len());
    let word = &text[..end];
    if word.is_empty() {
        return Err("an empty key");
    }
    keys.push(word.to_owned());
    Ok(&text[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_with_and_without_a_kind() {
        let rule = IgnoreRule::parse("Deployment:.status.conditions[*].message").unwrap();
        assert_eq!(rule.kind.as_deref(), Some("Deployment"));
        assert_eq!(rule.path, ["status", "conditions", "*", "message"]);
        assert!(rule.applies_to("Deployment"));
        assert!(!rule.applies_to("Foo"));
        assert_eq!(rule.to_string(), "Deployment:.status.conditions[*].message");

        let rule = IgnoreRule::parse(r#".metadata.annotations["example.com/last:sync"]"#).unwrap();
        assert_eq!(rule.kind, None);
        assert_eq!(
            rule.path,
            ["metadata", "annotations", "example.com/last:sync"]
        );
        assert!(rule.applies_to("Foo"));
        assert_eq!(
            IgnoreRule::parse(&rule.to_string()).unwrap(),
            rule,
            "Display round-trips"
        );

        let dotted = IgnoreRule::parse("status.items.*.id").unwrap();
        assert_eq!(dotted.path, ["status", "items", "*", "id"]);
        assert_eq!(dotted, IgnoreRule::parse(".status.items[*].id").unwrap());
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (bad, reason) in [
            ("", "the path is empty"),
            (".", "the path is empty"),
            ("Deployment:", "the path is empty"),
            (".status..id", "an empty key"),
            (".status[0]", "expected .key, [*] or [\"key\"]"),
            (r#".a["b"#, "a [\" without its \"]"),
            ("Deploy ment:.x", "the kind must be a word"),
        ] {
            let error = IgnoreRule::parse(bad).expect_err(bad);
            assert_eq!(error.reason, reason, "{bad}");
            assert!(error.to_string().contains("e.g. Deployment:"), "{error}");
        }
    }

    #[test]
    fn a_file_has_one_rule_a_line_and_comments() {
        let rules = IgnoreRule::parse_lines(
            "# the driver's ids\n.status.server.id\n\n  Deployment:.status.observedGeneration # rollouts\n",
        )
        .unwrap();
        assert_eq!(
            rules,
            [
                IgnoreRule::everywhere(&["status", "server", "id"]),
                IgnoreRule::parse("Deployment:.status.observedGeneration").unwrap(),
            ]
        );
        assert!(IgnoreRule::parse_lines("ok.x\n.a..b\n").is_err());
        assert_eq!(IgnoreRule::defaults().len(), DEFAULT_RULES.len());
    }
}
