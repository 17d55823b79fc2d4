//! Server names: validated before they go anywhere near a path.
//!
//! The QEMU driver keeps each server in `<state_dir>/<name>/`, so a name such as
//! `../../etc` or `a/b` would escape or nest the state directory. Rather than
//! escaping, names are restricted to a Kubernetes-like DNS label that is always a
//! single, harmless path component, and every driver (the fake included, so tests
//! catch bad names early) rejects anything else with [`DriverError::InvalidName`].

use crate::error::DriverError;

/// The longest accepted name.
///
/// 63 is a DNS label, and it also keeps `<state_dir>/<name>/qmp.sock` within the
/// 107 bytes a unix socket path may have for any reasonable state directory.
pub const MAX_NAME_LEN: usize = 63;

/// Checks that `name` is a safe server name: 1 to [`MAX_NAME_LEN`] characters from
/// `a-z`, `0-9`, `-` and `.`, starting and ending with a letter or digit.
///
/// ```
/// use vm_driver::validate_name;
/// assert!(validate_name("default.vm-1").is_ok());
/// assert!(validate_name("../etc").is_err());
/// assert!(validate_name("VM").is_err());
/// ```
pub fn validate_name(name: &str) -> Result<(), DriverError> {
    let reject = |reason: &str| {
        Err(DriverError::InvalidName {
            name: name.to_owned(),
            reason: reason.to_owned(),
        })
    };
    if name.is_empty() {
        return reject("must not be empty");
    }
    if name.len() > MAX_NAME_LEN {
        return reject(&format!("must be at most {MAX_NAME_LEN} characters"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.'))
    {
        return reject(&format!(
            "character {c:?} not allowed (only a-z, 0-9, '-' and '.')"
        ));
    }
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = name.as_bytes();
    if !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return reject("must start and end with a letter or digit");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dns_labels_with_dots() {
        for name in ["a", "vm-1", "default.web-0", "0", &"x".repeat(MAX_NAME_LEN)] {
            assert!(validate_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn rejects_anything_that_is_not_a_plain_path_component() {
        let long = "x".repeat(MAX_NAME_LEN + 1);
        for name in [
            "", ".", "..", "../etc", "a/b", "/abs", "-a", "a-", ".a", "a.", "UPPER", "a b", "a\0b",
            "ä", "a,b", &long,
        ] {
            let err = validate_name(name).unwrap_err();
            assert!(
                matches!(err, DriverError::InvalidName { .. }),
                "{name:?}: {err:?}"
            );
        }
    }
}
