//! The names a resource is known by, and the rules its flags must follow.
//!
//! Kubernetes decides most of these rules (a group is a DNS subdomain, a version is
//! `v1`, `v2beta1`, ...), kubebuilder adds the rest (a kind is UpperCamelCase). Each
//! check names the flag it read and the rule it broke, so a bad command line is fixed
//! in one try.

use crate::error::ScaffoldError;

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
