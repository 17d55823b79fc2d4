apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - metrics_service.yaml
