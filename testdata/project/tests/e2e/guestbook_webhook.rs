//! The Guestbook webhooks, called by the real API server over TLS, as deploy/'s webhook
//! configurations make it call them.

use ::guestbook::api::guestbook_v1::{Guestbook, GuestbookSpec};
use ::guestbook::webhook::guestbook::DEFAULT_MAX_ENTRIES;
use ::guestbook::webhook::guestbook::register;
use kube::api::PostParams;
use testenv::TestEnv;
use testenv::webhook::{Webhook, WebhookCerts, WebhookSpec};
use webhook::WebhookServer;
use webhook::mutate_path;
use webhook::validate_path;

use super::*;

#[tokio::test]
async fn the_api_server_defaults_and_validates_guestbooks() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("guestbook-webhook").await?;
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
    spec = spec.webhook(
        Webhook::mutating(mutate_path::<Guestbook>())
            .for_resource::<Guestbook>(&["CREATE", "UPDATE"]),
    );
    spec = spec.webhook(
        Webhook::validating(validate_path::<Guestbook>())
            .for_resource::<Guestbook>(&["CREATE", "UPDATE"]),
    );
    let _webhooks = env.install_webhooks(&spec).await?;
    let guestbooks = api::<Guestbook>(&env);

    // Refused at the door, with the validator's message; nothing is stored.
    let mut bad = Guestbook::new("bad", GuestbookSpec::default());
    bad.spec.max_entries = Some(0);
    let refused = guestbooks.create(&PostParams::default(), &bad).await;
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
    assert!(guestbooks.get_opt("bad").await?.is_none());

    // Empty fields are defaulted before the Guestbook is stored.
    let stored = guestbooks
        .create(
            &PostParams::default(),
            &Guestbook::new("defaulted", GuestbookSpec::default()),
        )
        .await?;
    assert_eq!(stored.spec.max_entries, Some(DEFAULT_MAX_ENTRIES));
    assert_eq!(stored.spec.title.as_deref(), Some("defaulted"));
    Ok(())
}
