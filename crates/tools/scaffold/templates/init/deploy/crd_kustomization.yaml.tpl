# The CRDs, written by `cargo run --bin manifests` from src/api (do not edit them).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  # +kcr:scaffold:crds
