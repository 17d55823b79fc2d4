# Lets a user read {{plural}}.{{api_group}}. Aggregated into the cluster's `view` role.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{kind_lower}}-viewer-role
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
  - apiGroups: ["{{api_group}}"]
    resources: ["{{plural}}"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["{{api_group}}"]
    resources: ["{{plural}}/status"]
    verbs: ["get"]
