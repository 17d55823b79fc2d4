//! Loopback networking for the soak: free ports for the replicas' servers, and a tiny
//! HTTP GET for their `/metrics`.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::ChaosError;

/// Every port [`free_port`] handed out in this process: never handed out twice.
fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// A free loopback port (bound, then released), drawn at random from below the
/// kernel's ephemeral range, as `hack/lib/host.sh`'s `free_ports` does: a replica binds
/// its port again after every restart, and an ephemeral port may meanwhile have become
/// the source port of some outgoing connection ("address already in use").
///
/// A port is never handed out twice by one process: a test bind only shows that no
/// process holds the port *now*, and the soak draws the ports of every replica before
/// the first one binds, so two replicas could be given the same port (a sharded soak
/// saw a myweb-operator replica fail at every restart on the health port a
/// sample-controller replica held).
pub fn free_port() -> Result<u16, ChaosError> {
    use rand::Rng;
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let from = if low > 11_000 { 10_000 } else { 1024 };
    let mut rng = rand::rng();
    let mut last = None;
    for _ in 0..1000 {
        let port = rng.random_range(from..low.max(from + 1));
        let mut ports = handed_out().lock().unwrap_or_else(|e| e.into_inner());
        if ports.contains(&port) {
            continue;
        }
        match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(_) => {
                ports.insert(port);
                return Ok(port);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(ChaosError::io(
        "finding a free port below the ephemeral range",
        last.unwrap_or_else(|| std::io::Error::other("no port tried")),
    ))
}

/// `GET path` on 127.0.0.1:`port` (HTTP/1.0), the body; None on any failure or after 1 s.
pub async fn http_get(port: u16, path: &str) -> Option<String> {
    let fetch = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await
            .ok()?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.ok()?;
        let text = String::from_utf8_lossy(&response).into_owned();
        text.split_once("\r\n\r\n").map(|(_, body)| body.to_owned())
    };
    tokio::time::timeout(Duration::from_secs(1), fetch)
        .await
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_is_never_handed_out_twice() {
        // 2,000 draws from about 22,000 ports: without the set, a repeat is all but
        // certain (the birthday bound puts it above 99.99 %).
        let mut seen = HashSet::new();
        for _ in 0..2000 {
            let port = free_port().expect("a free port");
            assert!(seen.insert(port), "port {port} handed out twice");
        }
    }
}
