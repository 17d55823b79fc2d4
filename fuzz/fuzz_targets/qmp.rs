//! QMP framing (`vm_driver::qmp::QmpClient`): what a QEMU process (or whatever sits
//! on its monitor socket) sends back, read line by line into JSON messages, with the
//! greeting, capabilities negotiation, events and replies sorted out.
//!
//! The input is everything the peer says; what the client writes goes nowhere. The
//! client negotiates, then runs `query-status` until the input runs out, then `quit`.
//! Checks: no step hangs or times out on a finite input (each ends in a reply or a
//! clean error: closed, protocol or command error), and `quit` accepts a closed
//! connection.

#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tokio::runtime::Runtime;
use vm_driver::qmp::{QmpClient, QmpError};

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    })
}

/// An error a finite, in-memory peer may cause.
fn check(error: &QmpError) {
    assert!(
        matches!(
            error,
            QmpError::Closed { .. } | QmpError::Protocol { .. } | QmpError::Command { .. }
        ),
        "{error:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    runtime().block_on(async {
        let peer = tokio::io::join(data, tokio::io::sink());
        let mut client = match QmpClient::over(peer, Duration::from_secs(10)).await {
            Ok(client) => client,
            Err(e) => return check(&e),
        };
        // Every command reads at least one line or ends the loop: bounded by the input.
        for _ in 0..=data.len() {
            match client.query_status().await {
                Ok(_status) => {}
                Err(e) => {
                    check(&e);
                    if matches!(e, QmpError::Closed { .. }) {
                        break;
                    }
                }
            }
        }
        if let Err(e) = client.quit().await {
            check(&e);
        }
    });
});
