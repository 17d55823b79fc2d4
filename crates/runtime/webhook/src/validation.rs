//! Field checks validators keep needing: apimachinery's `validation.IsDNS1123Subdomain`
//! and `IsDNS1123Label`, with its messages, so a webhook can refuse a name the API
//! server would refuse later (and say so at the door, naming the field).

/// The longest DNS-1123 subdomain (most object names): 253 characters.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// The longest DNS-1123 label (Service names, label values' host part): 63 characters.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;

/// Whether `value` is a DNS-1123 subdomain, the rule for most object names
/// (Deployments, ConfigMaps, ...): at most 253 characters, lowercase alphanumerics,
/// `-` and `.`, starting and ending with an alphanumeric. `Err` says what is wrong,
/// in apimachinery's words.
///
/// ```
/// use webhook::validation::dns1123_subdomain;
///
/// assert!(dns1123_subdomain("web-1.example").is_ok());
/// let err = dns1123_subdomain("Bad_Name!").unwrap_err();
/// assert!(err.starts_with("a lowercase RFC 1123 subdomain must consist of"));
/// ```
pub fn dns1123_subdomain(value: &str) -> Result<(), String> {
    let valid_labels = value.split('.').all(is_label_shaped);
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        return Err(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
        ));
    }
    if value.is_empty() || !valid_labels {
        return Err(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
             characters, '-' or '.', and must start and end with an alphanumeric character \
             (e.g. 'example.com')"
                .to_string(),
        );
    }
    Ok(())
}

/// Whether `value` is a DNS-1123 label (one segment: at most 63 characters,
/// lowercase alphanumerics and `-`, alphanumeric at both ends).
///
/// ```
/// use webhook::validation::dns1123_label;
///
/// assert!(dns1123_label("web-1").is_ok());
/// assert!(dns1123_label("web.1").is_err());
/// ```
pub fn dns1123_label(value: &str) -> Result<(), String> {
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        return Err(format!(
            "must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"
        ));
    }
    if !is_label_shaped(value) {
        return Err(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric \
             characters or '-', and must start and end with an alphanumeric character \
             (e.g. 'my-name')"
                .to_string(),
        );
    }
    Ok(())
}

/// Non-empty, `[a-z0-9-]`, alphanumeric at both ends (length checked by the callers).
fn is_label_shaped(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.chars().all(|c| alnum(c) || c == '-')
        && s.starts_with(alnum)
        && s.ends_with(alnum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains() {
        for ok in [
            "a",
            "a-b",
            "a.b",
            "0",
            "x".repeat(253).as_str(),
            "web-1.example.com",
        ] {
            assert!(dns1123_subdomain(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "A",
            "a_b",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a.",
            "Bad_Name!",
            "ü",
        ] {
            assert!(dns1123_subdomain(bad).is_err(), "{bad}");
        }
        assert_eq!(
            dns1123_subdomain(&"x".repeat(254)).unwrap_err(),
            "must be no more than 253 characters"
        );
    }

    #[test]
    fn labels() {
        assert!(dns1123_label(&"x".repeat(63)).is_ok());
        assert!(dns1123_label(&"x".repeat(64)).is_err());
        for bad in ["", "a.b", "A", "-a", "a-"] {
            assert!(dns1123_label(bad).is_err(), "{bad}");
        }
    }
}
