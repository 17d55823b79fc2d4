# A {{kind}} to start from: `kubectl apply -k deploy/samples/`. Its controller runs
# `size` pods of {{image}} in a Deployment of the same name.
apiVersion: {{api_group}}/{{version}}
kind: {{kind}}
metadata:
  name: {{kind_lower}}-sample
spec:
  size: 1
  containerPort: {{container_port}}
