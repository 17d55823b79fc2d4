# The admission webhooks: the API server calls the manager through service.yaml with
# the CA cert-manager injects (the cert-manager.io/inject-ca-from annotations).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - service.yaml
  # +kcr:scaffold:webhooks
