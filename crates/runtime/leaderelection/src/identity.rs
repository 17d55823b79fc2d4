//! Candidate identities: the pattern Kubernetes' components use,
//! `id, _ := os.Hostname(); id = id + "_" + string(uuid.NewUUID())`.
//!
//! The hostname makes the holder recognisable in `kubectl get lease -o yaml` (in a Pod
//! it is the Pod name); the random suffix makes two processes on one host, or a
//! restarted process, distinct candidates. That matters: a restarted process with the
//! *same* identity would consider itself the current holder and renew a lease that
//! its previous incarnation held, skipping the wait that protects against the old
//! incarnation still running.

/// `hostname + "_" + a random (version 4) UUID`, e.g.
/// `foo-controller-7d9c_1b4e28ba-2fa1-4d2e-a0c1-54c1d0f0e8a3`. Falls back to the
/// `HOSTNAME` environment variable, then to `localhost`, if the hostname cannot be
/// read.
pub fn default_identity() -> String {
    let host = hostname()
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}_{}", new_uuid())
}

/// The kernel's hostname (`gethostname(2)`, the `nodename` of `uname(2)`): the Pod's
/// name in a cluster.
pub fn hostname() -> Option<String> {
    let uname = rustix::system::uname();
    uname
        .nodename()
        .to_str()
        .ok()
        .filter(|h| !h.is_empty())
        .map(str::to_string)
}

/// A random RFC 4122 version 4 UUID in its canonical text form.
fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_hostname_underscore_uuid_and_unique() {
        let a = default_identity();
        let b = default_identity();
        assert_ne!(a, b);
        let (host, uuid) = a.rsplit_once('_').expect("an underscore");
        assert!(!host.is_empty());
        assert_eq!(uuid.len(), 36);
        let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert_eq!(uuid.as_bytes()[14], b'4', "version 4: {uuid}");
        assert!(
            matches!(uuid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'),
            "variant: {uuid}"
        );
        assert!(uuid.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }
}
