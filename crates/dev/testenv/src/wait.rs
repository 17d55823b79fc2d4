//! Polling for a condition with a timeout and a useful error.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};

/// The outcome of one check in [`wait_for`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check<T> {
    /// The condition holds; `wait_for` returns the value.
    Ready(T),
    /// Not yet; the string describes what was seen (reported on timeout).
    Pending(String),
}

impl<T> Check<T> {
    /// `Ready(value)` if `done`, else `Pending(seen)`.
    pub fn ready_if(done: bool, value: T, seen: impl Display) -> Self {
        if done {
            Self::Ready(value)
        } else {
            Self::Pending(seen.to_string())
        }
    }
}

/// Poll `check` until it returns [`Check::Ready`] or `timeout` passes.
///
/// Errors returned by `check` (e.g. a transient API error, or a 404 while an
/// object is still being created) are treated like `Pending`: they are recorded
/// as the last seen state and polling continues. On timeout the error names
/// `what` and the last seen state. Polls start every 100 ms and back off to 1 s.
///
/// ```no_run
/// # async fn example(client: kube::Client) -> testenv::Result<()> {
/// use std::time::Duration;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use testenv::{Check, wait_for};
///
/// let api = kube::Api::<Deployment>::namespaced(client, "default");
/// let available = wait_for("deployment web available", Duration::from_secs(90), || async {
///     let d = api.get("web").await?;
///     let status = d.status.unwrap_or_default();
///     let available = status.available_replicas.unwrap_or(0);
///     Ok::<_, kube::Error>(Check::ready_if(available == 2, available, format!("{status:?}")))
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub async fn wait_for<T, E, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<Check<T>, E>>,
    E: Display,
{
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(100);
    let mut last_seen = String::from("<nothing: the check never completed>");
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, check()).await {
            Ok(Ok(Check::Ready(value))) => return Ok(value),
            Ok(Ok(Check::Pending(seen))) => last_seen = seen,
            Ok(Err(e)) => last_seen = format!("error: {e}"),
            Err(_) => {}
        }
        if Instant::now() + delay > deadline {
            return Err(Error::Timeout {
                what: what.to_string(),
                timeout,
                last_seen,
            });
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn returns_the_ready_value() {
        let mut n = 0;
        let got = wait_for("n reaches 3", Duration::from_secs(10), || {
            n += 1;
            let n = n;
            async move { Ok::<_, String>(Check::ready_if(n >= 3, n, format!("n={n}"))) }
        })
        .await
        .unwrap();
        assert_eq!(got, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_reports_what_and_last_seen() {
        let err = wait_for("never", Duration::from_secs(2), || async {
            Err::<Check<()>, _>("boom")
        })
        .await
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("never"), "{text}");
        assert!(text.contains("error: boom"), "{text}");
    }
}
