//! The Guestbook controller on a real API server: a Guestbook gets the finalizer and
//! becomes Ready for its generation; deleting it waits for the controller to remove
//! the finalizer, then the object is gone.

use ::guestbook::api::guestbook_v1::{Guestbook, GuestbookSpec};
use ::guestbook::controller::guestbook::{FINALIZER, setup};
use kube::api::{DeleteParams, PostParams};
use testenv::{Check, TestEnv};

use super::*;

#[tokio::test]
async fn a_guestbook_becomes_ready_and_is_finalized_on_delete() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("guestbook").await?;
    install_crds(&env).await?;
    let _manager = start_manager(&env, setup).await?;
    let guestbooks = api::<Guestbook>(&env);

    // TODO(user): a Guestbook with the fields your controller acts on, e.g.
    // `GuestbookSpec { title: Some("Hello".into()), ..Default::default() }`: the fields not
    // named keep their defaults, so a field added to the spec does not break this test.
    let spec = GuestbookSpec::default();
    let created = guestbooks
        .create(
            &PostParams::default(),
            &Guestbook::new("guestbook-sample", spec),
        )
        .await?;

    let ready = wait_for(
        &env,
        "guestbook-sample",
        "Guestbook Ready",
        |g: &Guestbook| {
            let conditions = g.status.clone().unwrap_or_default().conditions;
            ready_for(&conditions, g.metadata.generation)
        },
    )
    .await?;
    assert_eq!(ready.metadata.generation, created.metadata.generation);
    assert!(
        ready
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER),
        "{:?}",
        ready.metadata.finalizers
    );
    let event = testenv::wait_for_event(
        env.client(),
        env.namespace(),
        "Guestbook",
        "guestbook-sample",
        "Ready",
        TIMEOUT,
    )
    .await?;
    assert_eq!(event.type_.as_deref(), Some("Normal"));

    // Deleting: the API server only sets deletionTimestamp; the controller removes its
    // finalizer, and then the Guestbook is gone.
    guestbooks
        .delete("guestbook-sample", &DeleteParams::default())
        .await?;
    testenv::wait_for("the Guestbook to be gone", TIMEOUT, || async {
        let left = guestbooks.get_opt("guestbook-sample").await?;
        Ok::<_, kube::Error>(Check::ready_if(left.is_none(), (), format!("{left:?}")))
    })
    .await?;
    Ok(())
}
