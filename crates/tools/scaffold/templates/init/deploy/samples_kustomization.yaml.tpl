# One object of each kind: `kubectl apply -k deploy/samples/`.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  # +kcr:scaffold:samples
