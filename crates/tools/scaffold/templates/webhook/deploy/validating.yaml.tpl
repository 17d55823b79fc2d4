# The API server asks the kinds' validators (src/webhook/<kind>.rs) about every create
# and update of the kinds below, and refuses a write with its message (kubebuilder's
# validating-webhook-configuration: one configuration, one webhook per kind).
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
  annotations:
    cert-manager.io/inject-ca-from: {{project_name}}-system/{{project_name}}-serving-cert
webhooks:
  # +kcr:scaffold:validating-webhooks
