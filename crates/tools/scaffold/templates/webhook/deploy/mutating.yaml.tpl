# The API server sends every create and update of the kinds below to their defaulters
# (src/webhook/<kind>.rs) before they are stored (kubebuilder's
# mutating-webhook-configuration: one configuration, one webhook per kind).
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
  annotations:
    cert-manager.io/inject-ca-from: {{project_name}}-system/{{project_name}}-serving-cert
webhooks:
  # +kcr:scaffold:mutating-webhooks
