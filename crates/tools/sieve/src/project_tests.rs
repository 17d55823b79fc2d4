//! `kcr sieve`'s pieces that need no control plane.

use super::*;

#[test]
fn the_kinds_a_role_may_create_leave_out_the_bookkeeping() {
    let role: Json = serde_yaml::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../testdata/project/deploy/rbac/role.yaml"),
        )
        .expect("the golden project's ClusterRole"),
    )
    .expect("YAML");
    assert_eq!(
        creatable(&role),
        [("apps".to_owned(), "deployments".to_owned())]
    );
    let star: Json = serde_json::json!({"rules": [
        {"apiGroups": [""], "resources": ["configmaps", "services/status", "events"], "verbs": ["*"]},
        {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["get", "list"]},
    ]});
    assert_eq!(creatable(&star), [(String::new(), "configmaps".to_owned())]);
}

#[test]
fn a_project_without_a_name_is_refused() {
    let dir = std::env::temp_dir().join(format!("sieve-project-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    std::fs::write(dir.join("PROJECT"), "version: '1'\n").expect("written");
    let error = project_name(&dir).expect_err("no projectName");
    assert!(
        error.to_string().contains("is this a kcr project?"),
        "{error}"
    );
    std::fs::write(dir.join("PROJECT"), "projectName: guestbook\n").expect("written");
    assert_eq!(project_name(&dir).expect("a name"), "guestbook");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cluster_scoped_kinds_are_found_in_the_crd_files() {
    let dir = std::env::temp_dir().join(format!("sieve-project-scope-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("crds.yaml");
    std::fs::write(
        &file,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  scope: Cluster\n  names: {kind: ClusterPolicy}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  scope: Namespaced\n  names: {kind: Memcached}\n",
    )
    .expect("written");
    assert_eq!(cluster_scoped_kinds(&[file]), ["clusterpolicy"]);
    let _ = std::fs::remove_dir_all(&dir);
}
