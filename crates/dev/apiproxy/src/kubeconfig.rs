//! The kubeconfig of the proxy's clients.

use std::net::SocketAddr;

/// `admin` (a kubeconfig's text) with every cluster's `server:` replaced by
/// `https://addr`: the proxy serves a certificate of the cluster CA, so its clients
/// keep the CA and the credentials (which the proxy does not use: it forwards with its
/// own [`Upstream`](crate::Upstream)'s).
pub fn kubeconfig_for(admin: &str, addr: SocketAddr) -> String {
    let mut text: String = admin
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("server: ") {
                let indent = &line[..line.len() - trimmed.len()];
                format!("{indent}server: https://{addr}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_server_changes() {
        let admin = "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0E=\n    server: https://127.0.0.1:6443\n  name: local\nusers:\n- name: admin\n";
        let addr: SocketAddr = "127.0.0.1:8443".parse().expect("an address");
        assert_eq!(
            kubeconfig_for(admin, addr),
            admin.replace("https://127.0.0.1:6443", "https://127.0.0.1:8443")
        );
    }
}
