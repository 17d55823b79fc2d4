//! A small QMP (QEMU Machine Protocol) client over a unix socket.
//!
//! QMP is JSON, one message per line:
//!
//! 1. on connect QEMU sends a greeting, `{"QMP": {"version": ..., "capabilities": ...}}`;
//! 2. the client must send `{"execute": "qmp_capabilities"}` to leave "capabilities
//!    negotiation" mode, otherwise every other command is refused;
//! 3. then each `{"execute": CMD, "arguments": {...}, "id": N}` gets exactly one
//!    `{"return": ..., "id": N}` or `{"error": {"class", "desc"}, "id": N}`;
//! 4. at any time QEMU may also send asynchronous events, `{"event": ..., "timestamp":
//!    ...}` (for `quit`, a `SHUTDOWN` event usually arrives *before* the reply). The
//!    client skips them.
//!
//! Every step has a timeout: a wedged QEMU must make a driver call fail, not hang a
//! controller worker forever. Lines are capped at [`MAX_LINE_BYTES`] so a confused
//! peer cannot make us buffer without bound.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// The longest QMP message accepted.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// What went wrong talking QMP.
#[derive(Debug, thiserror::Error)]
pub enum QmpError {
    /// The socket could not be connected (QEMU not running, or not yet listening).
    #[error("connecting to QMP socket {path}: {source}")]
    Connect {
        /// The socket path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A step did not finish in time.
    #[error("QMP {step} timed out after {timeout:?}")]
    Timeout {
        /// `"connect"`, `"greeting"` or the command.
        step: String,
        /// The timeout.
        timeout: Duration,
    },
    /// Reading or writing the socket failed.
    #[error("QMP I/O error during {step}: {source}")]
    Io {
        /// The step.
        step: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// QEMU closed the connection.
    #[error("QMP connection closed by QEMU during {step}")]
    Closed {
        /// The step.
        step: String,
    },
    /// A message was not valid QMP.
    #[error("QMP protocol error during {step}: {detail}")]
    Protocol {
        /// The step.
        step: String,
        /// What was wrong.
        detail: String,
    },
    /// QEMU answered a command with an error.
    #[error("QMP command {command} failed: {class}: {desc}")]
    Command {
        /// The command.
        command: String,
        /// QEMU's error class, e.g. `CommandNotFound`.
        class: String,
        /// QEMU's description.
        desc: String,
    },
}

/// A connected QMP session, past capabilities negotiation: over QEMU's unix socket
/// ([`connect`](QmpClient::connect)), or over any byte stream
/// ([`over`](QmpClient::over)).
#[derive(Debug)]
pub struct QmpClient<S = UnixStream> {
    stream: BufReader<S>,
    timeout: Duration,
    next_id: u64,
}

impl QmpClient {
    /// Connects to `path`, reads the greeting and negotiates capabilities; each step
    /// may take up to `timeout`.
    pub async fn connect(path: &Path, timeout: Duration) -> Result<Self, QmpError> {
        let stream = tokio::time::timeout(timeout, UnixStream::connect(path))
            .await
            .map_err(|_| QmpError::Timeout {
                step: "connect".into(),
                timeout,
            })?
            .map_err(|source| QmpError::Connect {
                path: path.to_owned(),
                source,
            })?;
        QmpClient::over(stream, timeout).await
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> QmpClient<S> {
    /// A session over `stream`, already connected to QEMU's QMP monitor (a unix or TCP
    /// socket, or an in-memory peer): reads the greeting and negotiates capabilities;
    /// each step may take up to `timeout`.
    pub async fn over(stream: S, timeout: Duration) -> Result<Self, QmpError> {
        let mut client = Self {
            stream: BufReader::new(stream),
            timeout,
            next_id: 0,
        };
        let greeting = tokio::time::timeout(timeout, client.read_message("greeting"))
            .await
            .map_err(|_| QmpError::Timeout {
                step: "greeting".into(),
                timeout,
            })??;
        if greeting.get("QMP").is_none() {
            return Err(QmpError::Protocol {
                step: "greeting".into(),
                detail: format!("expected a QMP greeting, got {greeting}"),
            });
        }
        client.execute("qmp_capabilities", None).await?;
        Ok(client)
    }

    /// Runs `command` (with optional `arguments`) and returns its `return` value,
    /// skipping asynchronous events.
    pub async fn execute(
        &mut self,
        command: &str,
        arguments: Option<Value>,
    ) -> Result<Value, QmpError> {
        self.next_id += 1;
        let id = self.next_id;
        let mut request = json!({ "execute": command, "id": id });
        if let Some(arguments) = arguments {
            request["arguments"] = arguments;
        }
        let mut line = request.to_string();
        line.push('\n');
        let step = command.to_owned();
        tokio::time::timeout(self.timeout, async {
            self.stream
                .get_mut()
                .write_all(line.as_bytes())
                .await
                .map_err(|source| QmpError::Io {
                    step: step.clone(),
                    source,
                })?;
            loop {
                let message = self.read_message(&step).await?;
                if message.get("event").is_some() {
                    tracing::trace!(%message, "QMP event skipped");
                    continue;
                }
                if message.get("id").is_some_and(|got| got != &json!(id)) {
                    tracing::debug!(%message, "QMP reply to another request skipped");
                    continue;
                }
                if let Some(value) = message.get("return") {
                    return Ok(value.clone());
                }
                if let Some(error) = message.get("error") {
                    let field = |key| error.get(key).and_then(Value::as_str).unwrap_or("");
                    return Err(QmpError::Command {
                        command: step.clone(),
                        class: field("class").to_owned(),
                        desc: field("desc").to_owned(),
                    });
                }
                return Err(QmpError::Protocol {
                    step,
                    detail: format!("unexpected message {message}"),
                });
            }
        })
        .await
        .map_err(|_| QmpError::Timeout {
            step: command.to_owned(),
            timeout: self.timeout,
        })?
    }

    /// `query-status`: the VM's run state string (`"running"`, `"paused"`, ...).
    pub async fn query_status(&mut self) -> Result<String, QmpError> {
        let value = self.execute("query-status", None).await?;
        value
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| QmpError::Protocol {
                step: "query-status".into(),
                detail: format!("no status in {value}"),
            })
    }

    /// `quit`: QEMU exits. The connection closing (or being reset, or already broken)
    /// before the reply arrives counts as success: QEMU was faster than its answer.
    /// Callers that must be sure wait for the process to go away.
    pub async fn quit(&mut self) -> Result<(), QmpError> {
        match self.execute("quit", None).await {
            Ok(_) | Err(QmpError::Closed { .. }) => Ok(()),
            Err(QmpError::Io { source, .. })
                if matches!(
                    source.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Reads one non-empty line and parses it as a JSON object.
    async fn read_message(&mut self, step: &str) -> Result<Value, QmpError> {
        loop {
            let mut line = Vec::new();
            let read = (&mut self.stream)
                .take(MAX_LINE_BYTES + 1)
                .read_until(b'\n', &mut line)
                .await
                .map_err(|source| QmpError::Io {
                    step: step.to_owned(),
                    source,
                })?;
            if read == 0 {
                return Err(QmpError::Closed {
                    step: step.to_owned(),
                });
            }
            if line.len() as u64 > MAX_LINE_BYTES {
                return Err(QmpError::Protocol {
                    step: step.to_owned(),
                    detail: format!("message longer than {MAX_LINE_BYTES} bytes"),
                });
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: Value = serde_json::from_slice(&line).map_err(|e| QmpError::Protocol {
                step: step.to_owned(),
                detail: format!("invalid JSON ({e}): {}", String::from_utf8_lossy(&line)),
            })?;
            if !value.is_object() {
                return Err(QmpError::Protocol {
                    step: step.to_owned(),
                    detail: format!("expected a JSON object, got {value}"),
                });
            }
            return Ok(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::UnixListener;

    use super::*;

    /// A fresh temp directory for a socket, removed on drop.
    struct SocketDir(PathBuf);

    impl SocketDir {
        fn path(&self) -> PathBuf {
            self.0.join("qmp.sock")
        }
    }

    impl Drop for SocketDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn socket_dir() -> SocketDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "vm-driver-qmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        SocketDir(dir)
    }

    /// A scripted QEMU: for every line the client sends, the next answer of `script`
    /// (one or more lines; `None` = say nothing and keep the connection open).
    /// Returns the lines the client sent.
    fn serve(
        path: &Path,
        greeting: &'static str,
        script: Vec<Option<&'static str>>,
    ) -> tokio::task::JoinHandle<Vec<String>> {
        let listener = UnixListener::bind(path).unwrap();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            write.write_all(greeting.as_bytes()).await.unwrap();
            let mut received = Vec::new();
            for answer in script {
                let Ok(Some(line)) = lines.next_line().await else {
                    break;
                };
                received.push(line);
                match answer {
                    Some(answer) => write.write_all(answer.as_bytes()).await.unwrap(),
                    None => std::future::pending::<()>().await,
                }
            }
            received
        })
    }

    const GREETING: &str = "{\"QMP\": {\"version\": {}, \"capabilities\": [\"oob\"]}}\n";

    #[tokio::test]
    async fn negotiates_then_skips_events_and_returns_the_reply() {
        let dir = socket_dir();
        let path = dir.path();
        let server = serve(
            &path,
            GREETING,
            vec![
                Some("{\"return\": {}, \"id\": 1}\n"),
                Some(concat!(
                    "{\"event\": \"STOP\", \"timestamp\": {}}\n",
                    "\n",
                    "{\"return\": {\"status\": \"paused\", \"running\": false}, \"id\": 2}\n"
                )),
            ],
        );
        let mut client = QmpClient::connect(&path, Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(client.query_status().await.unwrap(), "paused");
        let sent = server.await.unwrap();
        let sent: Vec<Value> = sent
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(sent[0], json!({"execute": "qmp_capabilities", "id": 1}));
        assert_eq!(sent[1], json!({"execute": "query-status", "id": 2}));
    }

    #[tokio::test]
    async fn command_errors_carry_class_and_description() {
        let dir = socket_dir();
        let path = dir.path();
        let _server = serve(
            &path,
            GREETING,
            vec![
                Some("{\"return\": {}}\n"),
                Some(
                    "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"no such\"}, \"id\": 2}\n",
                ),
            ],
        );
        let mut client = QmpClient::connect(&path, Duration::from_secs(10))
            .await
            .unwrap();
        let err = client.execute("query-teleport", None).await.unwrap_err();
        match err {
            QmpError::Command {
                command,
                class,
                desc,
            } => {
                assert_eq!(
                    (command.as_str(), class.as_str(), desc.as_str()),
                    ("query-teleport", "CommandNotFound", "no such")
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn quit_accepts_the_connection_closing_before_the_reply() {
        let dir = socket_dir();
        let path = dir.path();
        // Answers capabilities, then closes right after reading `quit`.
        let server = serve(&path, GREETING, vec![Some("{\"return\": {}}\n"), Some("")]);
        let mut client = QmpClient::connect(&path, Duration::from_secs(10))
            .await
            .unwrap();
        client.quit().await.unwrap();
        let sent = server.await.unwrap();
        assert!(sent[1].contains("\"quit\""), "{sent:?}");

        // Already gone before `quit` was even written: also done.
        let dir = socket_dir();
        let path = dir.path();
        let server = serve(&path, GREETING, vec![Some("{\"return\": {}}\n")]);
        let mut client = QmpClient::connect(&path, Duration::from_secs(10))
            .await
            .unwrap();
        server.await.unwrap();
        client.quit().await.unwrap();
    }

    #[tokio::test]
    async fn a_wrong_greeting_or_garbage_is_a_protocol_error() {
        let dir = socket_dir();
        let path = dir.path();
        let _server = serve(&path, "{\"hello\": 1}\n", vec![]);
        let err = QmpClient::connect(&path, Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(matches!(err, QmpError::Protocol { .. }), "{err:?}");

        let dir = socket_dir();
        let path = dir.path();
        let _server = serve(&path, GREETING, vec![Some("not json\n")]);
        let err = QmpClient::connect(&path, Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("invalid JSON"), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_qemu_times_out_instead_of_hanging() {
        let dir = socket_dir();
        let path = dir.path();
        let _server = serve(&path, GREETING, vec![Some("{\"return\": {}}\n"), None]);
        let mut client = QmpClient::connect(&path, Duration::from_secs(5))
            .await
            .unwrap();
        let started = tokio::time::Instant::now();
        let err = client.query_status().await.unwrap_err();
        assert!(
            matches!(err, QmpError::Timeout { ref step, .. } if step == "query-status"),
            "{err:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test]
    async fn over_an_in_memory_peer_a_line_over_the_limit_is_a_protocol_error() {
        let mut said = GREETING.as_bytes().to_vec();
        said.extend_from_slice(b"{\"return\": {}, \"id\": 1}\n");
        said.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES as usize + 1));
        said.extend_from_slice(b"\n{\"return\": {\"status\": \"running\"}, \"id\": 3}\n");
        let peer = tokio::io::join(&said[..], tokio::io::sink());
        let mut client = QmpClient::over(peer, Duration::from_secs(5)).await.unwrap();
        let err = client.query_status().await.unwrap_err();
        assert!(
            matches!(&err, QmpError::Protocol { detail, .. } if detail.contains("longer than")),
            "{err:?}"
        );
        // The rest of the long line is skipped as blank; the next reply is read.
        assert_eq!(client.query_status().await.unwrap(), "running");
        let err = client.query_status().await.unwrap_err();
        assert!(matches!(err, QmpError::Closed { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn connecting_to_nothing_says_which_socket() {
        let dir = socket_dir();
        let path = dir.path();
        let err = QmpClient::connect(&path, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(err, QmpError::Connect { .. }), "{err:?}");
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    }
}
