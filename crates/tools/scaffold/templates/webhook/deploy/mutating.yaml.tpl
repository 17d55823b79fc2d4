# The API server sends every create and update of a {{kind}} to the defaulter
# (src/webhook/{{kind_snake}}.rs) before it is stored.
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: {{kind_snake}}-mutating-webhook-configuration
  annotations:
    cert-manager.io/inject-ca-from: {{project_name}}-system/{{project_name}}-serving-cert
webhooks:
  - name: m{{kind_lower}}-{{version}}.{{api_group}}
    clientConfig:
      service:
        name: webhook-service
        namespace: system
        path: /mutate-{{api_group_dashed}}-{{version}}-{{kind_lower}}
    rules:
      - apiGroups: ["{{api_group}}"]
        apiVersions: ["{{version}}"]
        operations: ["CREATE", "UPDATE"]
        resources: ["{{plural}}"]
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 10
