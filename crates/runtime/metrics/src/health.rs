//! Liveness and readiness: controller-runtime's `pkg/healthz` behind `/healthz` and
//! `/readyz`.
//!
//! Kubernetes asks two different questions, and mixing them up hurts:
//!
//! * **Liveness** (`/healthz`): "is the process alive, or should the kubelet restart
//!   it?". It answers `200 ok` as long as the process can serve HTTP at all. It must
//!   *not* depend on the API server or on the caches: if the API server is down, every
//!   controller replica would fail liveness and be restarted in a loop, which fixes
//!   nothing and loses the warm caches.
//! * **Readiness** (`/readyz`): "is it ready to do its job?". It answers `200` only when
//!   every registered check passes, typically "the informers have synced"
//!   ([`Health::add_readyz_check`] with a closure over `has_synced`). A standby replica
//!   that is not the leader still syncs its informers and so reports ready: it *is*
//!   ready to take over, and a rolling update should proceed through it.
//!
//! The answers follow controller-runtime (and the API server's own `/readyz`): `ok` when
//! everything passes; with `?verbose` (or on failure) one line per check, `[+]name ok`
//! or `[-]name failed: reason withheld`, then a summary line. `/readyz/<name>` runs a
//! single check. A failure answers **503 Service Unavailable** (controller-runtime
//! uses 500; any status >= 400 fails a probe, and 503 says what it means). A check that
//! panics counts as failed.
//!
//! Checks run on every probe request (every few seconds), on the server's task: keep
//! them cheap and non-blocking - read an atomic, never call the API server.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicBool, Ordering};
//!
//! let health = metrics::Health::new();
//! let synced = Arc::new(AtomicBool::new(false));
//! let flag = synced.clone();
//! health.add_readyz_check("informers", move || flag.load(Ordering::Acquire)).unwrap();
//!
//! let answer = health.readyz(None, false);
//! assert_eq!(answer.status, 503);
//! assert!(answer.body.contains("[-]informers failed"));
//!
//! synced.store(true, Ordering::Release);
//! assert_eq!(health.readyz(None, false).status, 200);
//! assert_eq!(health.healthz(false).body, "ok");
//! ```

use std::fmt;
use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{Error, Result};

/// A readiness check: `true` = passing.
pub type Check = Arc<dyn Fn() -> bool + Send + Sync>;

/// The answer to a probe: HTTP status and plain-text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResponse {
    /// 200 (passing), 503 (a check failed) or 404 (no such check).
    pub status: u16,
    /// `ok`, or one line per check and a summary.
    pub body: String,
}

/// The set of readiness checks of a process. Clones share the set, so checks can be
/// added after the health server has started.
#[derive(Clone, Default)]
pub struct Health {
    readyz: Arc<RwLock<Vec<(String, Check)>>>,
}

impl fmt::Debug for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.readyz.read().iter().map(|(n, _)| n.clone()).collect();
        f.debug_struct("Health")
            .field("readyz_checks", &names)
            .finish()
    }
}

impl Health {
    /// No checks yet: live, and ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds readiness check `name` (controller-runtime's `AddReadyzCheck`). The name
    /// must be unique, non-empty and free of `/` (it is also served as `/readyz/<name>`).
    pub fn add_readyz_check(
        &self,
        name: impl Into<String>,
        check: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Result<()> {
        let name = name.into();
        if name.is_empty() || name.contains('/') || name == "ping" {
            return Err(if name == "ping" {
                Error::DuplicateCheck { name }
            } else {
                Error::InvalidCheckName { name }
            });
        }
        let mut checks = self.readyz.write();
        if checks.iter().any(|(n, _)| *n == name) {
            return Err(Error::DuplicateCheck { name });
        }
        checks.push((name, Arc::new(check)));
        Ok(())
    }

    /// The `/healthz` answer: the built-in `ping` check, which always passes while the
    /// process serves.
    pub fn healthz(&self, verbose: bool) -> ProbeResponse {
        render("healthz", &[("ping".to_string(), true)], verbose)
    }

    /// The `/readyz` answer (`only = None`) or the `/readyz/<name>` answer
    /// (`only = Some(name)`, 404 if there is no such check).
    pub fn readyz(&self, only: Option<&str>, verbose: bool) -> ProbeResponse {
        let checks: Vec<(String, Check)> = self.readyz.read().clone();
        let mut results = vec![("ping".to_string(), true)];
        for (name, check) in &checks {
            if only.is_some_and(|only| only != name) {
                continue;
            }
            let passed = std::panic::catch_unwind(AssertUnwindSafe(|| check())).unwrap_or_else(|_| {
                tracing::error!(check = %name, "readiness check panicked; reporting it as failed");
                false
            });
            results.push((name.clone(), passed));
        }
        if let Some(only) = only {
            return match results.into_iter().find(|(name, _)| name == only) {
                Some(result) => render("readyz", &[result], verbose),
                None => ProbeResponse {
                    status: 404,
                    body: format!("no readyz check named {only:?}\n"),
                },
            };
        }
        render("readyz", &results, verbose)
    }

    /// The names of the registered readiness checks.
    pub fn readyz_check_names(&self) -> Vec<String> {
        self.readyz.read().iter().map(|(n, _)| n.clone()).collect()
    }
}

/// controller-runtime's text: `ok`, or per-check lines plus a summary.
fn render(endpoint: &str, results: &[(String, bool)], verbose: bool) -> ProbeResponse {
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| n.as_str())
        .collect();
    if failed.is_empty() && !verbose {
        return ProbeResponse {
            status: 200,
            body: "ok".to_string(),
        };
    }
    let mut body = String::new();
    for (name, ok) in results {
        if *ok {
            let _ = writeln!(body, "[+]{name} ok");
        } else {
            let _ = writeln!(body, "[-]{name} failed: reason withheld");
        }
    }
    if failed.is_empty() {
        let _ = writeln!(body, "{endpoint} check passed");
        ProbeResponse { status: 200, body }
    } else {
        tracing::info!(endpoint, failed = ?failed, "probe check failed");
        let _ = writeln!(body, "{endpoint} check failed");
        ProbeResponse { status: 503, body }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn no_checks_is_ready_and_live() {
        let health = Health::new();
        assert_eq!(
            health.readyz(None, false),
            ProbeResponse {
                status: 200,
                body: "ok".into()
            }
        );
        assert_eq!(health.healthz(false).body, "ok");
        assert_eq!(
            health.healthz(true).body,
            "[+]ping ok\nhealthz check passed\n"
        );
    }

    #[test]
    fn readiness_flips_with_its_checks_and_names_the_failing_one() {
        let health = Health::new();
        let informers = Arc::new(AtomicBool::new(false));
        let flag = informers.clone();
        health
            .add_readyz_check("informers", move || flag.load(Ordering::SeqCst))
            .unwrap();
        health.add_readyz_check("other", || true).unwrap();

        let answer = health.readyz(None, false);
        assert_eq!(answer.status, 503);
        assert_eq!(
            answer.body,
            "[+]ping ok\n[-]informers failed: reason withheld\n[+]other ok\nreadyz check failed\n"
        );
        assert_eq!(health.readyz(Some("other"), false).status, 200);
        assert_eq!(health.readyz(Some("informers"), false).status, 503);
        assert_eq!(health.readyz(Some("nope"), false).status, 404);

        informers.store(true, Ordering::SeqCst);
        assert_eq!(health.readyz(None, false).status, 200);
        assert_eq!(health.readyz(None, false).body, "ok");
        assert_eq!(
            health.readyz(None, true).body,
            "[+]ping ok\n[+]informers ok\n[+]other ok\nreadyz check passed\n"
        );
        // Liveness never depends on readiness checks.
        informers.store(false, Ordering::SeqCst);
        assert_eq!(health.healthz(false).status, 200);
    }

    #[test]
    fn a_panicking_check_fails_instead_of_crashing() {
        let health = Health::new();
        health
            .add_readyz_check("boom", || panic!("check bug"))
            .unwrap();
        let answer = health.readyz(None, false);
        assert_eq!(answer.status, 503);
        assert!(answer.body.contains("[-]boom failed"), "{}", answer.body);
    }

    #[test]
    fn bad_and_duplicate_names_are_rejected() {
        let health = Health::new();
        health.add_readyz_check("a", || true).unwrap();
        assert!(matches!(
            health.add_readyz_check("a", || true),
            Err(Error::DuplicateCheck { .. })
        ));
        assert!(matches!(
            health.add_readyz_check("ping", || true),
            Err(Error::DuplicateCheck { .. })
        ));
        for bad in ["", "a/b"] {
            assert!(matches!(
                health.add_readyz_check(bad, || true),
                Err(Error::InvalidCheckName { .. })
            ));
        }
        assert_eq!(health.readyz_check_names(), ["a"]);
    }
}
