# {{kind}} (src/webhook/{{kind_snake}}.rs)
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
