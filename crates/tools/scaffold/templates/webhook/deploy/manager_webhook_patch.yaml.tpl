# The manager serves the webhooks on :9443 with the certificate cert-manager writes
# into the webhook-server-cert Secret.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller-manager
  namespace: system
spec:
  template:
    spec:
      containers:
        - name: manager
          args:
            - --leader-elect
            - --log-format=json
            - --health-probe-bind-address=:8081
            - --metrics-bind-address=:8443
            - --webhook-bind-address=:9443
            - --webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs
          ports:
            - name: webhook-server
              containerPort: 9443
          volumeMounts:
            - name: webhook-certs
              mountPath: /tmp/k8s-webhook-server/serving-certs
              readOnly: true
      volumes:
        - name: webhook-certs
          secret:
            secretName: webhook-server-cert
