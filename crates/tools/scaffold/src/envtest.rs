//! `kcr envtest`: the control plane a project's e2e tests run on, as
//! controller-runtime's `setup-envtest` provides envtest's binaries.
//!
//! The binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)
//! are built from Go modules by this repository's `hack/control-plane.sh build` and
//! cached under `~/.cache/kube-controllers-rs/k8s-<version>/bin`: the one cache this
//! repository's own tests use, so a machine builds them once. kcr-testenv starts them
//! through that script; the exports printed here tell it where the script is.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::ScaffoldError;
use crate::project::Project;

/// The `hack/control-plane.sh` to use: the project's runtime checkout when it names
/// one by path, else the repository this kcr was built from.
pub fn control_plane_script(project_dir: &Path) -> Option<PathBuf> {
    let from_project = Project::load(project_dir)
        .ok()
        .and_then(|p| p.runtime.path)
        .map(|path| project_dir.join(path).join("hack/control-plane.sh"));
    from_project
        .filter(|script| script.is_file())
        .or_else(|| crate::source_repository().map(|repo| repo.join("hack/control-plane.sh")))
        .filter(|script| script.is_file())
}

/// Builds (or finds in the cache) the control-plane binaries, its progress on stderr,
/// and returns the shell lines that point kcr-testenv at them.
pub fn envtest(project_dir: &Path) -> Result<String, ScaffoldError> {
    let script = control_plane_script(project_dir).ok_or_else(|| {
        ScaffoldError::Usage(
            "kcr envtest needs a checkout of kube-controllers-rs (its hack/control-plane.sh): this kcr was built from a directory that is gone, and the project's PROJECT names no runtime path".into(),
        )
    })?;
    let script = script
        .canonicalize()
        .map_err(|e| ScaffoldError::io(&script, e))?;
    let status = Command::new("bash")
        .arg(&script)
        .arg("build")
        // Its output is progress: to stderr, so that stdout holds only the exports
        // (`eval "$(kcr envtest)"`).
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| ScaffoldError::io(&script, e))?;
    if !status.success() {
        return Err(ScaffoldError::Usage(format!(
            "{} build failed ({status}): it needs Go and the Go module proxy on a cold machine",
            script.display()
        )));
    }
    Ok(format!(
        "export TESTENV_CONTROL_PLANE_SCRIPT='{}'\n",
        script.display()
    ))
}
