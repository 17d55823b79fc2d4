# The API server asks the validator (src/webhook/{{kind_snake}}.rs) about every create
# and update of a {{kind}}, and refuses the write with its message.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: {{kind_snake}}-validating-webhook-configuration
  annotations:
    cert-manager.io/inject-ca-from: {{project_name}}-system/{{project_name}}-serving-cert
webhooks:
  - name: v{{kind_lower}}-{{version}}.{{api_group}}
    clientConfig:
      service:
        name: webhook-service
        namespace: system
        path: /validate-{{api_group_dashed}}-{{version}}-{{kind_lower}}
    rules:
      - apiGroups: ["{{api_group}}"]
        apiVersions: ["{{version}}"]
        operations: ["CREATE", "UPDATE"]
        resources: ["{{plural}}"]
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 10
