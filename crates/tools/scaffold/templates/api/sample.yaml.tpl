# A {{kind}} to start from: `kubectl apply -k deploy/samples/`.
apiVersion: {{api_group}}/{{version}}
kind: {{kind}}
metadata:
  name: {{kind_lower}}-sample
spec:
  # TODO(user): the fields of src/api/{{api_module}}.rs.
  title: My first {{kind}}
  maxEntries: 100
