//! A fresh namespace per test, deleted (best effort) on drop.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client, Config};

use crate::error::Result;
use crate::wait::{Check, wait_for};

/// A namespace with a random name. Dropping it sends the delete request
/// (best effort, from a helper thread, since `Drop` cannot be async); the
/// namespace controller then removes its contents.
#[derive(Debug)]
pub struct TestNamespace {
    name: String,
    config: Config,
    delete_on_drop: bool,
}

impl TestNamespace {
    /// Create `<prefix>-<random>` and wait (up to 60 s) until its `default`
    /// ServiceAccount exists, so Pods can be created right away.
    pub async fn create(client: &Client, config: Config, prefix: &str) -> Result<Self> {
        let name = random_name(prefix);
        let ns = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                labels: Some([("testenv".to_string(), "true".to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await?;
        let guard = Self {
            name,
            config,
            delete_on_drop: true,
        };
        let sas = Api::<ServiceAccount>::namespaced(client.clone(), &guard.name);
        wait_for(
            &format!("ServiceAccount {}/default", guard.name),
            Duration::from_secs(60),
            || async {
                let sa = sas.get_opt("default").await?;
                Ok::<_, kube::Error>(Check::ready_if(sa.is_some(), (), "not created yet"))
            },
        )
        .await?;
        Ok(guard)
    }

    /// The namespace name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Keep the namespace after the test (for debugging); returns its name.
    pub fn keep(mut self) -> String {
        self.delete_on_drop = false;
        std::mem::take(&mut self.name)
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if !self.delete_on_drop {
            return;
        }
        let name = std::mem::take(&mut self.name);
        let config = self.config.clone();
        // Own thread + runtime: we may be inside (and blocking) a runtime.
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let client = Client::try_from(config).ok()?;
                let api = Api::<Namespace>::all(client);
                let params = DeleteParams::background();
                let req = api.delete(&name, &params);
                match tokio::time::timeout(Duration::from_secs(10), req).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(namespace = %name, error = %e, "deleting test namespace")
                    }
                    Err(_) => {
                        tracing::warn!(namespace = %name, "timed out deleting test namespace")
                    }
                }
                Some(())
            })
        });
        let _ = handle.join();
    }
}

/// `<prefix>-<8 random [a-z0-9]>`, made a valid DNS label (at most 63 chars).
pub(crate) fn random_name(prefix: &str) -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut clean: String = prefix
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    clean.truncate(54);
    let clean = clean.trim_matches('-');
    let mut rng = rand::rng();
    let suffix: String = (0..8)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    if clean.is_empty() {
        format!("t-{suffix}")
    } else {
        format!("{clean}-{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::random_name;

    #[test]
    fn random_names_are_dns_labels() {
        for prefix in ["", "Deployment_Test", &"x".repeat(100), "--a--"] {
            let name = random_name(prefix);
            assert!(name.len() <= 63, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
            assert!(!name.starts_with('-') && !name.ends_with('-'), "{name}");
        }
        assert_ne!(random_name("a"), random_name("a"));
    }
}
