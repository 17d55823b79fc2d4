//! The names a resource is known by, and the rules its flags must follow.
//!
//! Kubernetes decides most of these rules (a group is a DNS subdomain, a version is
//! `v1`, `v2beta1`, ...), kubebuilder adds the rest (a kind is UpperCamelCase). Each
//! check names the flag it read and the rule it broke, so a bad command line is fixed
//! in one try.

use std::collections::BTreeMap;

use crate::error::ScaffoldError;
use crate::render::replace_placeholders;

/// A DNS-1123 subdomain: lowercase alphanumerics, `-` and `.`, each label starting and
/// ending with an alphanumeric, at most 253 characters (Kubernetes' `IsDNS1123Subdomain`).
pub fn check_dns_subdomain(flag: &'static str, value: &str) -> Result<(), ScaffoldError> {
    let rule = "a DNS subdomain: lowercase letters, digits, '-' and '.', each part starting and ending with a letter or digit, at most 253 characters";
    let ok = !value.is_empty()
        && value.len() <= 253
        && value.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if ok {
        Ok(())
    } else {
        Err(ScaffoldError::invalid(flag, value, rule))
    }
}

/// A DNS-1123 label (a project name becomes a namespace, a name prefix and a crate
/// name): lowercase alphanumerics and `-`, starting with a letter, at most 63 characters.
pub fn check_project_name(flag: &'static str, value: &str) -> Result<(), ScaffoldError> {
    let rule = "a DNS label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, at most 63 characters";
    let ok = !value.is_empty()
        && value.len() <= 63
        && value.as_bytes()[0].is_ascii_lowercase()
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(ScaffoldError::invalid(flag, value, rule))
    }
}

/// A Kubernetes API version: `v` + a number, optionally `alpha` or `beta` + a number
/// (`v1`, `v1beta2`, `v2alpha1`), as apimachinery's version priority rules read them.
pub fn check_version(value: &str) -> Result<(), ScaffoldError> {
    let rule =
        "a Kubernetes version: v<N>, v<N>alpha<M> or v<N>beta<M> (v1, v1beta1, v2alpha3), N > 0";
    let number =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0');
    let ok = value.strip_prefix('v').is_some_and(|rest| {
        let (major, pre) = match rest.find(|c: char| c.is_ascii_alphabetic()) {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        number(major)
            && pre.is_none_or(|pre| {
                ["alpha", "beta"]
                    .iter()
                    .any(|stage| pre.strip_prefix(stage).is_some_and(number))
            })
    });
    if ok {
        Ok(())
    } else {
        Err(ScaffoldError::invalid("--version", value, rule))
    }
}

/// A kind: UpperCamelCase ASCII (`Guestbook`, `CronJob`), at most 63 characters.
pub fn check_kind(value: &str) -> Result<(), ScaffoldError> {
    let rule = "UpperCamelCase: an ASCII capital letter, then letters and digits only (Guestbook, CronJob), at most 63 characters";
    let ok = value.len() <= 63
        && value.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && value.chars().all(|c| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(ScaffoldError::invalid("--kind", value, rule))
    }
}

/// The names the generated code uses for a kind besides the kind's own: `<Kind>Spec`,
/// `<Kind>Status`, its reconciler, its webhooks.
const KIND_SUFFIXES: &[&str] = &["Spec", "Status", "Reconciler", "Defaulter", "Validator"];

/// Rust's strict and reserved keywords (edition 2024): a kind whose snake-case name is
/// one cannot be a module or a variable.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro", "override",
    "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// The names of Rust's prelude (edition 2024) and the derives the generated types use:
/// a kind of one of these names would shadow it in the kind's own files.
const PRELUDE: &[&str] = &[
    "AsMut",
    "AsRef",
    "AsyncFn",
    "AsyncFnMut",
    "AsyncFnOnce",
    "Box",
    "Clone",
    "Copy",
    "Debug",
    "Default",
    "DoubleEndedIterator",
    "Drop",
    "Eq",
    "Err",
    "ExactSizeIterator",
    "Extend",
    "Fn",
    "FnMut",
    "FnOnce",
    "From",
    "FromIterator",
    "Future",
    "Hash",
    "Into",
    "IntoFuture",
    "IntoIterator",
    "Iterator",
    "None",
    "Ok",
    "Option",
    "Ord",
    "PartialEq",
    "PartialOrd",
    "Result",
    "Send",
    "Sized",
    "Some",
    "String",
    "Sync",
    "ToOwned",
    "ToString",
    "TryFrom",
    "TryInto",
    "Unpin",
    "Vec",
];

/// Every name the code of `templates` imports (`use a::b::{C, D as E}` gives `C` and
/// `E`, each with its path) or declares (`struct`, `enum`, `trait`, `type`, `const`,
/// `static`, `fn`, `mod`, `let`), by name. Comments are skipped, and so are names built
/// from a placeholder (`{{kind}}Spec`): those are the kind's own.
pub fn template_names(templates: &[&str]) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for template in templates {
        let code = replace_placeholders(template, |_| PLACEHOLDER.to_owned());
        let mut statement = String::new();
        for line in code.lines() {
            let line = line.trim();
            if line.starts_with("//") || line.starts_with('#') {
                continue;
            }
            if statement.is_empty() && (line.starts_with("use ") || line.starts_with("pub use ")) {
                statement.push_str(line.trim_start_matches("pub ").trim_start_matches("use "));
            } else if !statement.is_empty() {
                statement.push(' ');
                statement.push_str(line);
            }
            if !statement.is_empty() {
                if let Some(end) = statement.find(';') {
                    for (name, path) in use_tree("", &statement[..end]) {
                        names.entry(name).or_insert(path);
                    }
                    statement.clear();
                }
                continue;
            }
            let code = without_strings(line);
            let words: Vec<&str> = code
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            for pair in words.windows(2) {
                let declares = [
                    "struct", "enum", "trait", "type", "const", "static", "fn", "mod", "let", "mut",
                ];
                if declares.contains(&pair[0]) && !pair[1].contains(PLACEHOLDER) {
                    names
                        .entry(pair[1].to_owned())
                        .or_insert_with(|| format!("declared as `{} {}`", pair[0], pair[1]));
                }
            }
        }
    }
    names.retain(|name, _| {
        !name.contains(PLACEHOLDER) && name != "self" && name != "*" && !name.is_empty()
    });
    names
}

/// What placeholders become while [`template_names`] reads a template.
const PLACEHOLDER: &str = "KcrPlaceholder";

/// The names a `use` tree brings in, with their paths: `a::{b::C, D as E}`.
fn use_tree(prefix: &str, tree: &str) -> Vec<(String, String)> {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let base = format!("{prefix}{}", &tree[..open]);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        // Split at the commas outside nested braces.
        let mut items = Vec::new();
        let (mut depth, mut from) = (0usize, 0usize);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    items.push(&inner[from..i]);
                    from = i + 1;
                }
                _ => {}
            }
        }
        items.push(&inner[from..]);
        return items
            .into_iter()
            .filter(|item| !item.trim().is_empty())
            .flat_map(|item| use_tree(&base, item))
            .collect();
    }
    let path = format!("{prefix}{tree}");
    let (path, name) = match path.split_once(" as ") {
        Some((path, alias)) => (path.trim().to_owned(), alias.trim().to_owned()),
        None => {
            let name = path.rsplit("::").next().unwrap_or_default().to_owned();
            (path, name)
        }
    };
    let path = path.trim_start_matches("::");
    vec![(name, format!("imported from {path}"))]
}

/// `line` without its string literals (`"type": "Ready"` declares nothing).
fn without_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in line.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// Refuses a kind whose names would collide in the code generated from `templates`:
/// a Rust keyword as its module name (`Type` -> `type`), a name of Rust's prelude
/// (`Option`), or a name those templates import or declare (`Condition`, `Error`,
/// `Request`; `Pod` for its spec type `PodSpec`).
pub fn check_kind_is_free(kind: &str, templates: &[&str]) -> Result<(), ScaffoldError> {
    let snake = snake_case(kind);
    let refuse = |reason: String| {
        Err(ScaffoldError::ReservedKind {
            kind: kind.to_owned(),
            reason,
        })
    };
    if KEYWORDS.contains(&snake.as_str()) || kind == "Self" {
        return refuse(format!(
            "{kind} is a reserved word in Rust (its module and variables would be named `{snake}`)"
        ));
    }
    if PRELUDE.contains(&kind) {
        return refuse(format!(
            "{kind} is a name of Rust's prelude, which the generated code uses"
        ));
    }
    let names = template_names(templates);
    if let Some(from) = names.get(kind) {
        return refuse(format!(
            "the generated code already uses the name {kind} ({from})"
        ));
    }
    for suffix in KIND_SUFFIXES {
        let derived = format!("{kind}{suffix}");
        if let Some(from) = names.get(&derived) {
            return refuse(format!(
                "the generated code names {kind}'s {} {derived}, which it already uses ({from})",
                suffix.to_ascii_lowercase()
            ));
        }
    }
    if let Some(from) = names.get(&snake) {
        return refuse(format!(
            "the generated code names {kind}'s module and variables `{snake}`, which it already uses ({from})"
        ));
    }
    Ok(())
}

/// `CronJob` -> `cron_job`: a kind as a Rust module or function name.
pub fn snake_case(kind: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = kind.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev_lower = chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit();
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev_lower || (chars[i - 1].is_ascii_uppercase() && next_lower) {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The resource name (plural, lowercase) kubebuilder derives from a kind: `Guestbook` ->
/// `guestbooks`, `Policy` -> `policies`, `Ingress` -> `ingresses`. The English rules
/// kube-derive applies to a `CustomResource` with no `plural` given, so the CRD, the
/// RBAC rules and the sample agree.
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with('s')
        || lower.ends_with('x')
        || lower.ends_with('z')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        format!("{lower}es")
    } else if lower.ends_with('y')
        && !lower.ends_with("ay")
        && !lower.ends_with("ey")
        && !lower.ends_with("oy")
        && !lower.ends_with("uy")
    {
        format!("{}ies", &lower[..lower.len() - 1])
    } else {
        format!("{lower}s")
    }
}

/// An image reference as `--image` takes it: no spaces, no uppercase in the name part
/// (the registry's rule), something after any `:`.
pub fn check_image(value: &str) -> Result<(), ScaffoldError> {
    let rule = "an image reference such as nginx:1.27 or registry.example.com/team/app:v2 (no spaces, lowercase repository)";
    let name = value.split(['@', ':']).next().unwrap_or_default();
    let ok = !value.is_empty()
        && !value.contains(char::is_whitespace)
        && !name.is_empty()
        && !name.chars().any(|c| c.is_ascii_uppercase())
        && !value.ends_with(':');
    if ok {
        Ok(())
    } else {
        Err(ScaffoldError::invalid("--image", value, rule))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_become_snake_case_modules() {
        assert_eq!(snake_case("Guestbook"), "guestbook");
        assert_eq!(snake_case("CronJob"), "cron_job");
        assert_eq!(snake_case("HTTPRoute"), "http_route");
        assert_eq!(snake_case("V2Thing"), "v2_thing");
    }

    #[test]
    fn plurals_follow_english_rules() {
        assert_eq!(plural("Guestbook"), "guestbooks");
        assert_eq!(plural("Policy"), "policies");
        assert_eq!(plural("Gateway"), "gateways");
        assert_eq!(plural("Ingress"), "ingresses");
        assert_eq!(plural("Box"), "boxes");
        assert_eq!(plural("Match"), "matches");
    }

    #[test]
    fn versions() {
        for ok in ["v1", "v2", "v1beta1", "v2alpha10", "v10"] {
            check_version(ok).unwrap();
        }
        for bad in [
            "1", "v0", "v01", "V1", "v1gamma1", "v1beta", "v1beta0", "v", "v1-beta1",
        ] {
            assert!(check_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds() {
        for ok in ["Guestbook", "CronJob", "V2"] {
            check_kind(ok).unwrap();
        }
        for bad in [
            "guestbook",
            "Guest_book",
            "Guest-Book",
            "",
            "Gästebuch",
            "1Kind",
        ] {
            assert!(check_kind(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn template_names_are_imports_and_declarations_outside_comments() {
        let template = "//! use a::Doc;\n\
            use std::collections::{BTreeMap, btree_map::Entry as E};\n\
            use crate::api::{{api_module}}::{{{kind}}, {{kind}}Spec};\n\
            use k8s::{\n    Pod,\n    PodSpec,\n};\n\
            pub enum Error {}\n\
            fn {{kind_snake}}_name() { let env = json!({\"type\": \"Ready\"}); }\n";
        let names = template_names(&[template]);
        assert_eq!(
            names.keys().collect::<Vec<_>>(),
            ["BTreeMap", "E", "Error", "Pod", "PodSpec", "env"]
        );
        assert_eq!(
            names["E"],
            "imported from std::collections::btree_map::Entry"
        );
        assert_eq!(names["Pod"], "imported from k8s::Pod");
        assert_eq!(names["Error"], "declared as `enum Error`");
    }

    #[test]
    fn kinds_that_collide() {
        let template = "use builder::Request;\nuse k8s::PodSpec;\nlet env = 1;\n";
        for (kind, reason) in [
            (
                "Request",
                "already uses the name Request (imported from builder::Request)",
            ),
            ("Pod", "names Pod's spec PodSpec"),
            ("Env", "module and variables `env`"),
            ("Option", "Rust's prelude"),
            ("Type", "Type is a reserved word in Rust"),
            ("Self", "Self is a reserved word in Rust"),
            ("Crate", "Crate is a reserved word in Rust"),
        ] {
            let err = check_kind_is_free(kind, &[template])
                .unwrap_err()
                .to_string();
            assert!(err.contains(reason), "{kind}: {err}");
            assert!(
                err.starts_with(&format!("invalid --kind {kind:?}")),
                "{err}"
            );
        }
        for ok in ["Guestbook", "Requests", "PodSet", "Environment"] {
            check_kind_is_free(ok, &[template]).unwrap();
        }
    }

    #[test]
    fn groups_and_domains() {
        for ok in ["webapp", "my.domain", "a-b.c1"] {
            check_dns_subdomain("--group", ok).unwrap();
        }
        for bad in ["Web", "web_app", "-web", "web.", ".web", "", "a..b"] {
            assert!(check_dns_subdomain("--group", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn project_names() {
        check_project_name("--project-name", "guestbook-operator").unwrap();
        for bad in ["Guestbook", "9lives", "a_b", "x-", ""] {
            assert!(check_project_name("--project-name", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn images() {
        check_image("nginx:1.27").unwrap();
        check_image("registry.example.com:5000/team/app@sha256:abc").unwrap();
        for bad in ["", "nginx 1.27", "Nginx:1", "nginx:"] {
            assert!(check_image(bad).is_err(), "{bad}");
        }
    }
}
