apiVersion: v1
kind: Service
metadata:
  name: webhook-service
  namespace: system
spec:
  selector:
    control-plane: controller-manager
  ports:
    - name: webhook-server
      protocol: TCP
      port: 443
      targetPort: 9443
