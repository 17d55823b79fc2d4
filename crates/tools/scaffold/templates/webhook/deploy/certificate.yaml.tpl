apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: selfsigned-issuer
  namespace: system
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: serving-cert
  namespace: system
spec:
  # The webhook Service's names, after kustomize's namespace and namePrefix.
  dnsNames:
    - {{project_name}}-webhook-service.{{project_name}}-system.svc
    - {{project_name}}-webhook-service.{{project_name}}-system.svc.cluster.local
  issuerRef:
    kind: Issuer
    name: selfsigned-issuer
  secretName: webhook-server-cert
