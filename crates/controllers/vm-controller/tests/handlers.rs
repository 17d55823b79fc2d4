//! The event handler: which informer events become work-queue keys.

use std::sync::Arc;

use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
use cache::{DeletedObject, EventHandler};
use vm_controller::VirtualMachineHandler;
use workqueue::RateLimitingQueue;

fn vm(name: &str, rv: &str) -> Arc<VirtualMachine> {
    let mut vm = VirtualMachine::new(
        name,
        VirtualMachineSpec {
            resource: VirtualMachineResource::new("1", "64Mi", "1Gi"),
        },
    );
    vm.metadata.namespace = Some("ns".into());
    vm.metadata.resource_version = Some(rv.into());
    Arc::new(vm)
}

fn drain(queue: &RateLimitingQueue<String>) -> Vec<String> {
    let mut keys = Vec::new();
    while let Some(item) = queue.try_get() {
        keys.push(item.item().clone());
    }
    keys.sort();
    keys
}

#[tokio::test]
async fn adds_and_real_updates_enqueue_resyncs_and_deletes_do_not() {
    let queue = RateLimitingQueue::with_default_rate_limiter("t");
    let handler = VirtualMachineHandler::new(queue.clone());

    handler.on_add(&vm("a", "1"), true);
    handler.on_update(&vm("b", "1"), &vm("b", "2"));
    assert_eq!(drain(&queue), ["ns/a", "ns/b"]);

    // A resync re-delivers the same resourceVersion: the usage refresh is scheduled by
    // RequeueAfter, so nothing to do.
    handler.on_update(&vm("b", "2"), &vm("b", "2"));
    // A deleted object had its server deleted before the finalizer came off.
    handler.on_delete(&DeletedObject::Object(vm("c", "3")));
    assert!(drain(&queue).is_empty());
}
