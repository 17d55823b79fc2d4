# Bind this to the scraper (Prometheus' ServiceAccount): /metrics is served over HTTPS
# and each request is authenticated (TokenReview) and authorized (SubjectAccessReview).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: metrics-reader
rules:
  - nonResourceURLs: ["/metrics"]
    verbs: ["get"]
