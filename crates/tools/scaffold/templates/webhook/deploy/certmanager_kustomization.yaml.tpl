# The webhook server's certificate, issued by cert-manager (install it first:
# https://cert-manager.io/docs/installation/) into the Secret the manager mounts.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - certificate.yaml
