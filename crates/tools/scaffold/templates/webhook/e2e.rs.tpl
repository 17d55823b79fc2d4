//! The {{kind}} webhooks, called by the real API server over TLS, as deploy/'s webhook
//! configurations make it call them.

use ::{{crate_name}}::api::{{api_module}}::{{{kind}}, {{kind}}Spec};
use ::{{crate_name}}::webhook::{{kind_snake}}::register;
// kcr:if example
// kcr:if defaulting
use ::{{crate_name}}::webhook::{{kind_snake}}::DEFAULT_MAX_ENTRIES;
// kcr:end
// kcr:end
use kube::api::PostParams;
use testenv::TestEnv;
use testenv::webhook::{Webhook, WebhookCerts, WebhookSpec};
use webhook::WebhookServer;
// kcr:if defaulting
use webhook::mutate_path;
// kcr:end
// kcr:if validation
use webhook::validate_path;
// kcr:end

use super::*;

#[tokio::test]
async fn the_api_server_defaults_and_validates_{{plural}}() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("{{kind_lower}}-webhook").await?;
    install_crds(&env).await?;

    // The webhook server, on any free port, with a certificate the API server trusts.
    let certs = WebhookCerts::temporary()?;
    let mut server = WebhookServer::new("127.0.0.1:0".parse()?, certs.dir());
    register(&mut server)?;
    let server = server.bind().await?.expect("an address was given");
    let address = server.local_addr();
    let stop = CancellationToken::new();
    tokio::spawn(server.serve(stop.clone()));
    let _stop = stop.drop_guard();

    // What deploy/'s webhook configurations do, for this test's namespace only.
    let mut spec = WebhookSpec::new(env.namespace(), address, certs.ca_pem());
// kcr:if defaulting
    spec = spec.webhook(
        Webhook::mutating(mutate_path::<{{kind}}>()).for_resource::<{{kind}}>(&["CREATE", "UPDATE"]),
    );
// kcr:end
// kcr:if validation
    spec = spec.webhook(
        Webhook::validating(validate_path::<{{kind}}>()).for_resource::<{{kind}}>(&["CREATE", "UPDATE"]),
    );
// kcr:end
    let _webhooks = env.install_webhooks(&spec).await?;
    let {{plural}} = api::<{{kind}}>(&env);

// kcr:if example
// kcr:if validation
    // Refused at the door, with the validator's message; nothing is stored.
    let mut bad = {{kind}}::new("bad", {{kind}}Spec::default());
    bad.spec.max_entries = Some(0);
    let refused = {{plural}}.create(&PostParams::default(), &bad).await;
    match refused {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{status:?}");
            assert!(
                status
                    .message
                    .contains("spec.maxEntries: Invalid value: 0: must be between 1 and 1000"),
                "{}",
                status.message
            );
        }
        other => panic!("expected the API server to refuse, got {other:?}"),
    }
    assert!({{plural}}.get_opt("bad").await?.is_none());

// kcr:end
// kcr:if defaulting
    // Empty fields are defaulted before the {{kind}} is stored.
    let stored = {{plural}}
        .create(
            &PostParams::default(),
            &{{kind}}::new("defaulted", {{kind}}Spec::default()),
        )
        .await?;
    assert_eq!(stored.spec.max_entries, Some(DEFAULT_MAX_ENTRIES));
    assert_eq!(stored.spec.title.as_deref(), Some("defaulted"));
// kcr:end
// kcr:end
// kcr:if generic
    // Admitted through the webhooks: with `failurePolicy: Fail`, a create that reached
    // no webhook would be refused. TODO(user): a {{kind}} that breaks each of your
    // rules is refused with its message; empty fields come back defaulted.
    let stored = {{plural}}
        .create(
            &PostParams::default(),
            &{{kind}}::new("admitted", {{kind}}Spec::default()),
        )
        .await?;
    assert_eq!(stored.spec, {{kind}}Spec::default());
// kcr:end
    Ok(())
}
