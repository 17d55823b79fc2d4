//! The admission webhooks: one module per kind, each a defaulter and/or a validator
//! (controller-runtime's `CustomDefaulter`, `CustomValidator`).

use webhook::WebhookServer;

// +kcr:scaffold:webhook-modules

/// Registers one kind's webhooks on a server; returns the paths it serves.
pub type Registration = fn(&mut WebhookServer) -> webhook::Result<Vec<String>>;

/// Registers every webhook on `server`; returns the paths served.
pub fn register(server: &mut WebhookServer) -> webhook::Result<Vec<String>> {
    let registrations: &[Registration] = &[
        // +kcr:scaffold:webhooks
    ];
    let mut paths = Vec::new();
    for register in registrations {
        paths.extend(register(server)?);
    }
    Ok(paths)
}
