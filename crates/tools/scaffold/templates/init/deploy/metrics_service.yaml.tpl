# /metrics over HTTPS (--metrics-secure, the default): scrape with a token bound to
# rbac/metrics_reader_role.yaml's ClusterRole.
apiVersion: v1
kind: Service
metadata:
  name: controller-manager-metrics-service
  namespace: system
  labels:
    control-plane: controller-manager
spec:
  selector:
    control-plane: controller-manager
  ports:
    - name: https
      protocol: TCP
      port: 8443
      targetPort: metrics
