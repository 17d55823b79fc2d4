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
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
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

/// A connected QMP session, past capabilities negotiation.
#[derive(Debug)]
pub struct QmpClient {
    stream: BufReader<UnixStream>,
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

    /// `quit`: QEMU exits. The connection closing before the reply arrives counts as
    /// success (QEMU was faster than its answer).
    pub async fn quit(&mut self) -> Result<(), QmpError> {
        match self.execute("quit", None).await {
            Ok(_) | Err(QmpError::Closed { .. }) => Ok(()),
            Err(QmpError::Io { source, .. }) if source.kind() == io::ErrorKind::ConnectionReset => {
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
