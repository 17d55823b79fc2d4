//! An in-memory [`Driver`] for controller tests: client-go's "fake clientset" idea
//! applied to the server driver.
//!
//! A controller test wants to assert behaviour ("after three failed creates and a
//! lost response, exactly one server exists") without a hypervisor, and without
//! timing luck. So the fake is:
//!
//! * **deterministic**: ids are `fake-1`, `fake-2`, ... in creation order; usage
//!   numbers are whatever the test set ([`FakeDriver::set_usage`]), zero by default;
//! * **scriptable**: [`fail_next`](FakeDriver::fail_next) /
//!   [`fail_next_any`](FakeDriver::fail_next_any) make the next N calls fail before
//!   they do anything (the hypervisor was unreachable; [`clear_faults`](FakeDriver::clear_faults)
//!   brings it back), and
//!   [`lose_next_response`](FakeDriver::lose_next_response) makes the next N calls do
//!   their work and *then* fail (the response was lost): the case that makes
//!   idempotency necessary;
//! * **slow on demand**: [`set_latency`](FakeDriver::set_latency) delays every call
//!   with `tokio::time::sleep`, so tests under `#[tokio::test(start_paused = true)]`
//!   get the delay in virtual time;
//! * **inspectable**: [`calls`](FakeDriver::calls), [`servers_created`](FakeDriver::servers_created),
//!   [`server_count`](FakeDriver::server_count), [`server`](FakeDriver::server).
//!
//! It validates names and specs exactly like the real driver, so a test with a bad
//! name fails the same way production would.
//!
//! Unlike the test doubles of the other crates (behind their `testing` features), this
//! one is always compiled and public: it is also a driver a binary runs with.
//! `vm-controller --vm-driver fake` selects it (the shipped `deploy/vm-controller`
//! manifest runs it, for demos), so production code constructs it at run time; the
//! controller's tests use it in process.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;

use crate::driver::{Driver, Operation, ServerId, ServerSpec, ServerState, ServerStatus};
use crate::error::DriverError;
use crate::name::validate_name;

/// One server held by a [`FakeDriver`].
#[derive(Debug, Clone, PartialEq)]
pub struct FakeServer {
    /// Its id (`fake-<n>`).
    pub id: ServerId,
    /// The spec it was created with.
    pub spec: ServerSpec,
    /// Its state: `Running` after create, or what [`FakeDriver::set_state`] set.
    pub state: ServerState,
    /// Reported CPU percent.
    pub cpu_percent: f64,
    /// Reported memory percent.
    pub memory_percent: f64,
}

#[derive(Debug, Default)]
struct State {
    servers: BTreeMap<String, FakeServer>,
    next_id: u64,
    created: u64,
    deleted: u64,
    latency: Duration,
    calls: [u64; 4],
    fail_op: [u32; 4],
    fail_any: u32,
    lose_op: [u32; 4],
}

/// What the injected faults decided for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// Fail without doing anything.
    Before,
    /// Do the work, then fail.
    After,
}

/// An in-memory, deterministic [`Driver`] with fault injection. See the
/// [module docs](self).
///
/// ```
/// use vm_driver::{Driver, FakeDriver, Operation, ServerSpec};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let driver = FakeDriver::new();
/// let spec = ServerSpec::new("vm-1", 1, 64 << 20, 1 << 30);
/// driver.lose_next_response(Operation::Create, 1);
/// // The server was made, but the caller saw an error...
/// assert!(driver.create_server(&spec).await.is_err());
/// // ...so it retries, and gets the same server back.
/// let id = driver.create_server(&spec).await.unwrap();
/// assert_eq!(id.as_str(), "fake-1");
/// assert_eq!(driver.servers_created(), 1);
/// assert_eq!(driver.calls(Operation::Create), 2);
/// # }
/// ```
#[derive(Debug, Default)]
pub struct FakeDriver {
    state: Mutex<State>,
}

impl FakeDriver {
    /// An empty fake: no servers, no faults, no latency.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next `n` calls of `operation` fail with [`DriverError::Injected`] without
    /// doing anything. Adds to any failures already pending.
    pub fn fail_next(&self, operation: Operation, n: u32) {
        self.state.lock().fail_op[operation.index()] += n;
    }

    /// The next `n` calls of any operation fail with [`DriverError::Injected`]
    /// without doing anything. Per-operation failures are used up first.
    pub fn fail_next_any(&self, n: u32) {
        self.state.lock().fail_any += n;
    }

    /// The next `n` calls of `operation` do their work and then fail with
    /// [`DriverError::Injected`], as if the response had been lost on the way back.
    pub fn lose_next_response(&self, operation: Operation, n: u32) {
        self.state.lock().lose_op[operation.index()] += n;
    }

    /// Cancels every injected fault still pending ([`fail_next`](Self::fail_next),
    /// [`fail_next_any`](Self::fail_next_any),
    /// [`lose_next_response`](Self::lose_next_response)): from the next call on, the
    /// driver works again, as when an unreachable hypervisor comes back. With
    /// `fail_next(operation, u32::MAX)` it holds a controller in its retry loop for as
    /// long as a test (or the tutorial's chapter 5) needs to look at it.
    pub fn clear_faults(&self) {
        let mut state = self.state.lock();
        state.fail_op = [0; 4];
        state.fail_any = 0;
        state.lose_op = [0; 4];
    }

    /// Every call first sleeps this long (`tokio::time::sleep`, so paused-time tests
    /// stay deterministic). Zero (the default) means no sleep at all.
    pub fn set_latency(&self, latency: Duration) {
        self.state.lock().latency = latency;
    }

    /// Sets the state a server reports; false if there is no such server.
    pub fn set_state(&self, name: &str, state: ServerState) -> bool {
        self.with_server(name, |server| server.state = state)
    }

    /// Sets the usage a server reports; false if there is no such server.
    pub fn set_usage(&self, name: &str, cpu_percent: f64, memory_percent: f64) -> bool {
        self.with_server(name, |server| {
            server.cpu_percent = cpu_percent;
            server.memory_percent = memory_percent;
        })
    }

    /// How many times `operation` was called (failed calls included).
    pub fn calls(&self, operation: Operation) -> u64 {
        self.state.lock().calls[operation.index()]
    }

    /// How many servers were really created (idempotent repeats and failed calls not
    /// counted).
    pub fn servers_created(&self) -> u64 {
        self.state.lock().created
    }

    /// How many servers were really deleted (deletes of missing servers not counted).
    pub fn servers_deleted(&self) -> u64 {
        self.state.lock().deleted
    }

    /// How many servers exist now.
    pub fn server_count(&self) -> usize {
        self.state.lock().servers.len()
    }

    /// A copy of one server.
    pub fn server(&self, name: &str) -> Option<FakeServer> {
        self.state.lock().servers.get(name).cloned()
    }

    /// Copies of every server, ordered by name.
    pub fn servers(&self) -> Vec<FakeServer> {
        self.state.lock().servers.values().cloned().collect()
    }

    fn with_server(&self, name: &str, f: impl FnOnce(&mut FakeServer)) -> bool {
        self.state.lock().servers.get_mut(name).map(f).is_some()
    }

    /// Counts the call, sleeps the latency, and decides its fault.
    async fn begin(&self, operation: Operation) -> Fault {
        let latency = {
            let mut state = self.state.lock();
            state.calls[operation.index()] += 1;
            state.latency
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let mut state = self.state.lock();
        let i = operation.index();
        if state.fail_op[i] > 0 {
            state.fail_op[i] -= 1;
            Fault::Before
        } else if state.fail_any > 0 {
            state.fail_any -= 1;
            Fault::Before
        } else if state.lose_op[i] > 0 {
            state.lose_op[i] -= 1;
            Fault::After
        } else {
            Fault::None
        }
    }

    /// Runs one call: faults, then validation, then `work` under the lock.
    async fn call<T>(
        &self,
        operation: Operation,
        name: &str,
        work: impl FnOnce(&mut State) -> Result<T, DriverError>,
    ) -> Result<T, DriverError> {
        let fault = self.begin(operation).await;
        if fault == Fault::Before {
            return Err(DriverError::Injected { operation });
        }
        validate_name(name)?;
        let result = work(&mut self.state.lock());
        match fault {
            Fault::After => Err(DriverError::Injected { operation }),
            _ => result,
        }
    }
}

impl Driver for FakeDriver {
    fn create_server<'a>(
        &'a self,
        spec: &'a ServerSpec,
    ) -> BoxFuture<'a, Result<ServerId, DriverError>> {
        self.call(Operation::Create, &spec.name, move |state| {
            spec.validate()?;
            if let Some(server) = state.servers.get_mut(&spec.name) {
                // Like the QEMU driver: an existing server that is not running is
                // started again; a running one is left alone.
                if server.state != ServerState::Running {
                    server.state = ServerState::Running;
                }
                return Ok(server.id.clone());
            }
            state.next_id += 1;
            state.created += 1;
            let id = ServerId(format!("fake-{}", state.next_id));
            let server = FakeServer {
                id: id.clone(),
                spec: spec.clone(),
                state: ServerState::Running,
                cpu_percent: 0.0,
                memory_percent: 0.0,
            };
            state.servers.insert(spec.name.clone(), server);
            Ok(id)
        })
        .boxed()
    }

    fn delete_server<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), DriverError>> {
        self.call(Operation::Delete, name, move |state| {
            if state.servers.remove(name).is_some() {
                state.deleted += 1;
            }
            Ok(())
        })
        .boxed()
    }

    fn server_exists<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, DriverError>> {
        self.call(Operation::Exists, name, move |state| {
            Ok(state.servers.contains_key(name))
        })
        .boxed()
    }

    fn server_status<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ServerStatus, DriverError>> {
        self.call(Operation::Status, name, move |state| {
            let server = state
                .servers
                .get(name)
                .ok_or_else(|| DriverError::NotFound {
                    name: name.to_owned(),
                })?;
            Ok(ServerStatus {
                state: server.state.clone(),
                cpu_percent: server.cpu_percent,
                memory_percent: server.memory_percent,
            })
        })
        .boxed()
    }
}
