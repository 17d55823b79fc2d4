//! `--metrics-bind-address` / `--health-probe-bind-address` values, parsed the way Go
//! programs (and so controller-runtime) read them.
//!
//! * `":8080"`: port 8080 on every interface. In Go an empty host means "all
//!   addresses"; here it becomes `0.0.0.0` (IPv4; give `"[::]:8080"` for IPv6).
//! * `"127.0.0.1:8080"`, `"[::1]:8080"`, `"localhost:8080"`: that host only; a host
//!   name is resolved when the server binds.
//! * `"0"` (or empty): the server is disabled, as in controller-runtime.
//! * Port `0` (`"127.0.0.1:0"`) binds a free port, which tests use.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// Where a server listens, or that it is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindAddress {
    /// `"0"` or `""`: do not serve.
    Disabled,
    /// Listen on `host:port`.
    Tcp {
        /// An IP address or a host name; `0.0.0.0` for `":port"`.
        host: String,
        /// The port (0 = any free port).
        port: u16,
    },
}

impl BindAddress {
    /// The address to pass to `TcpListener::bind`, or `None` when disabled.
    pub fn host_port(&self) -> Option<(&str, u16)> {
        match self {
            BindAddress::Disabled => None,
            BindAddress::Tcp { host, port } => Some((host, *port)),
        }
    }
}

impl FromStr for BindAddress {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = |reason: &str| Error::InvalidBindAddress {
            address: s.to_string(),
            reason: reason.to_string(),
        };
        let trimmed = s.trim();
        if trimmed.is_empty() || trimmed == "0" {
            return Ok(BindAddress::Disabled);
        }
        let (host, port) = trimmed
            .rsplit_once(':')
            .ok_or_else(|| invalid("missing \":port\""))?;
        let port: u16 = port
            .parse()
            .map_err(|_| invalid("the port is not a number from 0 to 65535"))?;
        let host = if host.is_empty() {
            "0.0.0.0".to_string()
        } else if let Some(v6) = host.strip_prefix('[') {
            let v6 = v6
                .strip_suffix(']')
                .ok_or_else(|| invalid("unbalanced '[' in an IPv6 address"))?;
            v6.parse::<std::net::Ipv6Addr>()
                .map_err(|_| invalid("not an IPv6 address between '[' and ']'"))?;
            v6.to_string()
        } else if host.contains(':') {
            return Err(invalid(
                "an IPv6 address must be written in brackets: [::1]:8080",
            ));
        } else if host.chars().any(char::is_whitespace) {
            return Err(invalid("the host contains whitespace"));
        } else {
            host.to_string()
        };
        Ok(BindAddress::Tcp { host, port })
    }
}

impl fmt::Display for BindAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindAddress::Disabled => f.write_str("0"),
            BindAddress::Tcp { host, port } if host.contains(':') => write!(f, "[{host}]:{port}"),
            BindAddress::Tcp { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> BindAddress {
        BindAddress::Tcp {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn go_style_addresses_parse() {
        assert_eq!(
            ":8080".parse::<BindAddress>().unwrap(),
            tcp("0.0.0.0", 8080)
        );
        assert_eq!(
            "127.0.0.1:0".parse::<BindAddress>().unwrap(),
            tcp("127.0.0.1", 0)
        );
        assert_eq!("[::1]:9".parse::<BindAddress>().unwrap(), tcp("::1", 9));
        assert_eq!(
            "localhost:81".parse::<BindAddress>().unwrap(),
            tcp("localhost", 81)
        );
        assert_eq!("0".parse::<BindAddress>().unwrap(), BindAddress::Disabled);
        assert_eq!("".parse::<BindAddress>().unwrap(), BindAddress::Disabled);
        assert_eq!(tcp("::1", 9).to_string(), "[::1]:9");
        assert_eq!(tcp("0.0.0.0", 8080).to_string(), "0.0.0.0:8080");
    }

    #[test]
    fn bad_addresses_are_clear_errors() {
        for (bad, why) in [
            ("8080", "missing"),
            (":http", "port"),
            (":70000", "port"),
            ("::1:80", "brackets"),
            ("[::1:80", "unbalanced"),
            ("[nope]:80", "IPv6"),
        ] {
            let err = bad.parse::<BindAddress>().unwrap_err().to_string();
            assert!(err.contains(why) && err.contains(bad), "{bad}: {err}");
        }
    }
}
