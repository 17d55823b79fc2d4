//! Acting as a controller's ServiceAccount: apply the manifests a project ships, then
//! get a token for the ServiceAccount they define.
//!
//! An e2e test that runs a controller with the ServiceAccount's token (instead of the
//! admin client) proves that the shipped RBAC grants everything the controller does:
//! a missing verb shows up as a 403 in the test, not in a user's cluster.

use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};

use crate::control_plane::ControlPlane;
use crate::error::{Error, Result};

impl ControlPlane {
    /// `kubectl apply --server-side --force-conflicts -f` of each file, in order.
    /// Server-side apply with one field manager is idempotent, so test binaries that
    /// share the control plane may apply the same manifests concurrently.
    pub fn apply_files(&self, files: &[&Path]) -> Result<()> {
        for file in files {
            let out = self
                .kubectl()
                .args(["apply", "--server-side", "--force-conflicts", "-f"])
                .arg(file)
                .output()
                .map_err(|source| Error::Io {
                    context: format!("running kubectl apply -f {}", file.display()),
                    source,
                })?;
            if !out.status.success() {
                return Err(Error::InvalidRequest(format!(
                    "kubectl apply -f {}: {}",
                    file.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        Ok(())
    }

    /// [`apply_files`](Self::apply_files) of `files` from the project's
    /// `deploy/<component>/` directory, exactly as shipped (e.g. `"sample-controller"`,
    /// `&["namespace.yaml", "rbac.yaml"]`).
    pub fn apply_shipped(&self, component: &str, files: &[&str]) -> Result<()> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../deploy")
            .join(component);
        let paths: Vec<PathBuf> = files.iter().map(|file| dir.join(file)).collect();
        let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        self.apply_files(&paths)
    }
}

/// A one-hour token for ServiceAccount `namespace/name`, from the TokenRequest API
/// (what the kubelet mounts into a Pod). Use it with
/// [`ControlPlane::client_with_token`].
pub async fn service_account_token(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await?
        .status
        .and_then(|status| status.token)
        .ok_or_else(|| {
            Error::InvalidRequest(format!(
                "TokenRequest for {namespace}/{name} returned no token"
            ))
        })
}
