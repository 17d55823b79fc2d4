# Everything {{project_name}} needs in a cluster: `kubectl apply -k deploy/`.
# Run `cargo run --bin manifests` first: it writes crd/*.yaml and rbac/role.yaml from the code.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {{project_name}}-system
namePrefix: {{project_name}}-
labels:
  - pairs:
      app.kubernetes.io/name: {{project_name}}
      app.kubernetes.io/managed-by: kustomize
resources:
  - crd
  - rbac
  - manager
  - metrics
  # +kcr:scaffold:resources
patches:
  # +kcr:scaffold:patches
