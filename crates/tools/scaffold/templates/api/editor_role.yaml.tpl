# Lets a user create and change {{plural}}.{{api_group}}: bind it to the people who use
# them. Aggregated into the cluster's `edit` and `admin` roles.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{kind_lower}}-editor-role
  labels:
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
  - apiGroups: ["{{api_group}}"]
    resources: ["{{plural}}"]
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"]
  - apiGroups: ["{{api_group}}"]
    resources: ["{{plural}}/status"]
    verbs: ["get"]
