//! The MyWeb admission webhook: a validator that reads the informer cache.
//!
//! Rule: `spec.nodePortNumber` is not used by another MyWeb anywhere in the cluster.
//! A node port is cluster-wide, so two MyWebs asking for the same one can never both
//! be served; without the webhook the second one's Service is refused by the API
//! server and the operator reports `Ready=False` afterwards.
//!
//! The lesson in it: a webhook that needs other objects reads a **lister**, like a
//! controller, never the API server on every admission (which would put a LIST in the
//! path of every write). The price is the cache's freshness: two MyWebs created in
//! the same instant can both pass, and the API server's own node-port allocation stays
//! the final arbiter (the second Service gets a 422, which the operator reports). A
//! cache that has not synced yet cannot vouch for anything, so the webhook refuses
//! with 503 until it has, and the API server's caller can retry (the readiness probe
//! keeps a new replica out of the Service until then anyway).
//!
//! The range 30000-32767 is the CRD schema's rule, enforced even without the webhook.

use std::sync::Arc;

use apis::operator::v1::MyWeb;
use cache::{Indexers, SharedIndexInformer};
use kube::ResourceExt;
use webhook::{Denied, Validator, Warnings, WebhookServer};

/// The index of MyWebs by `spec.nodePortNumber`: the validator looks a port up
/// instead of scanning every MyWeb (client-go's `Indexers`, as a controller would).
pub const NODE_PORT_INDEX: &str = "spec.nodePortNumber";

/// MyWeb's admission rules; see the [module docs](self).
#[derive(Clone)]
pub struct MyWebValidator {
    informer: SharedIndexInformer<MyWeb>,
}

impl std::fmt::Debug for MyWebValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MyWebValidator")
            .field("synced", &self.informer.has_synced())
            .finish()
    }
}

impl MyWebValidator {
    /// A validator reading every MyWeb in the cluster from `informer` (an
    /// all-namespaces informer: node ports are cluster-wide); adds
    /// [`NODE_PORT_INDEX`] to it unless it has it.
    pub fn new(informer: SharedIndexInformer<MyWeb>) -> Self {
        let mut indexers = Indexers::new();
        indexers.insert(
            NODE_PORT_INDEX.to_string(),
            Arc::new(|web: &MyWeb| vec![web.spec.node_port_number.to_string()]),
        );
        // Already there (a second validator on the same informer): fine.
        let _ = informer.add_indexers(indexers);
        Self { informer }
    }

    fn check_port(&self, web: &MyWeb) -> Result<Warnings, Denied> {
        if !self.informer.has_synced() {
            return Err(Denied::new(
                "the MyWeb webhook's cache has not synced yet; retry in a moment",
            )
            .with_reason("ServiceUnavailable", 503));
        }
        let port = web.spec.node_port_number;
        let me = (web.namespace(), web.name_any());
        let users = self
            .informer
            .indexer()
            .by_index(NODE_PORT_INDEX, &port.to_string())
            .unwrap_or_default();
        let taken = users
            .into_iter()
            .find(|other| (other.namespace(), other.name_any()) != me);
        match taken {
            Some(other) => Err(Denied::invalid(format!(
                "spec.nodePortNumber: Duplicate value: {port}: already used by MyWeb {}/{}",
                other.namespace().unwrap_or_default(),
                other.name_any()
            ))),
            None => Ok(Warnings::new()),
        }
    }
}

impl Validator<MyWeb> for MyWebValidator {
    fn validate_create(&self, web: &MyWeb) -> Result<Warnings, Denied> {
        self.check_port(web)
    }

    fn validate_update(&self, old: &MyWeb, new: &MyWeb) -> Result<Warnings, Denied> {
        if old.spec.node_port_number == new.spec.node_port_number {
            return Ok(Warnings::new());
        }
        self.check_port(new)
    }
}

/// Registers the MyWeb webhook on `server`, reading `informer`; returns the paths.
pub fn register(
    server: &mut WebhookServer,
    informer: SharedIndexInformer<MyWeb>,
) -> webhook::Result<Vec<String>> {
    Ok(vec![server.register_validator::<MyWeb, _>(
        MyWebValidator::new(informer),
    )?])
}
