apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - service_account.yaml
  # The manager's ClusterRole: written by `cargo run --bin manifests` from each
  # controller's `rbac()` (do not edit role.yaml).
  - role.yaml
  - role_binding.yaml
  - leader_election_role.yaml
  - leader_election_role_binding.yaml
  # Who may read /metrics (the manager checks each scrape with a SubjectAccessReview).
  - metrics_reader_role.yaml
  # Roles for the people who use each kind: bind them to your users.
  # +kcr:scaffold:rbac
