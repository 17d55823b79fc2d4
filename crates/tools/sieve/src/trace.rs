//! What a learning run records: the trace the planner and the invariants read.
//!
//! The recording [`proxy`](crate::proxy) sits between the controller and the API server and
//! appends one [`Record`] per thing it sees, in the order it sees them, each with a
//! sequence number: every write the controller sends ([`Write`]: the method, the
//! resource, the object's `namespace/name` key, the subresource, the response status
//! and the resourceVersion the server answered), every watch event the controller
//! receives ([`WatchEvent`]) and each workload step's boundaries ([`Event::StepBegin`],
//! and [`Event::StepEnd`] once the cluster is quiescent).
//!
//! On disk a trace is JSON lines, one record a line:
//!
//! ```text
//! {"seq":1,"type":"run","workload":"workloads/foo.yaml","controller":"sample-controller"}
//! {"seq":2,"type":"stepBegin","step":1,"op":"create","name":"sieve-foo"}
//! {"seq":3,"type":"watch","resource":"foos","event":"ADDED","key":"ns/sieve-foo","resourceVersion":"811","uid":"u1"}
//! {"seq":4,"type":"write","method":"POST","resource":"deployments","key":"ns/sieve-foo","status":201,"resourceVersion":"812","owners":[{"kind":"Foo","name":"sieve-foo","uid":"u1"}],"sentAfter":3}
//! {"seq":5,"type":"stepEnd","step":1}
//! ```

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One thing the recorder saw, numbered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The record's sequence number: strictly increasing through a trace.
    pub seq: u64,
    /// What it saw.
    #[serde(flatten)]
    pub event: Event,
}

/// What a [`Record`] records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Event {
    /// What the run ran (the first record): the replay commands name the same.
    Run {
        /// The workload file, as given to `sieve learn`.
        workload: String,
        /// The controller's name, as given to `sieve learn`.
        controller: String,
    },
    /// A workload step starts: its user operation is about to be sent.
    StepBegin {
        /// The step's number, from 1.
        step: usize,
        /// Its operation (`create`, `update`, `delete`, `recreate`).
        op: String,
        /// The name of the object it operates on.
        name: String,
    },
    /// A workload step ends: the cluster is quiescent.
    StepEnd {
        /// The step's number, from 1.
        step: usize,
    },
    /// A write the controller sent, with the server's answer.
    Write(Write),
    /// A watch event the controller received.
    Watch(WatchEvent),
    /// The controller listed a resource (the first page of a list): from the answer it
    /// knows every object that is there, and so every deletion it missed.
    List {
        /// The resource (its plural).
        resource: String,
    },
}

/// The HTTP methods that write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// A create.
    Post,
    /// An update (replace).
    Put,
    /// A patch (merge, strategic merge, JSON or server-side apply).
    Patch,
    /// A delete.
    Delete,
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        })
    }
}

/// An owner reference of a written object (`metadata.ownerReferences[]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OwnerRef {
    /// The owner's kind, e.g. `Foo`.
    pub kind: String,
    /// The owner's name (in the written object's namespace).
    pub name: String,
    /// The owner's uid, when the reference carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// A write the controller sent and the server's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Write {
    /// The method.
    pub method: Method,
    /// The resource (its plural, as in the URL path), e.g. `deployments`.
    pub resource: String,
    /// The object's `namespace/name` key (for a create, the name the server answered).
    pub key: String,
    /// The subresource, e.g. `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    /// The response's HTTP status.
    pub status: u16,
    /// The resourceVersion of the object the server answered, if it answered one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// The written object's owner references (from the object the server answered,
    /// else from the request's body).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<OwnerRef>,
    /// Whether the write removed a finalizer (the answered object lists fewer than
    /// the controller's last watch event of it did).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removes_finalizer: bool,
    /// The sequence number of the last record in the trace when the proxy received the
    /// request (the write is recorded once answered, later): what the controller could
    /// have seen before it sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_after: Option<u64>,
}

impl Write {
    /// Whether the server accepted the write (a 2xx status).
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// `POST deployments ns/web -> 201`, `PUT foos/status ns/web -> 409`.
    pub fn summary(&self) -> String {
        let sub = self
            .subresource
            .as_deref()
            .map(|s| format!("/{s}"))
            .unwrap_or_default();
        format!(
            "{} {}{sub} {} -> {}",
            self.method, self.resource, self.key, self.status
        )
    }
}

/// A watch event's type (bookmarks and errors are not recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        })
    }
}

/// A watch event the controller received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchEvent {
    /// The resource watched (its plural), e.g. `foos`.
    pub resource: String,
    /// The event's type.
    pub event: EventType,
    /// The object's `namespace/name` key.
    pub key: String,
    /// The object's resourceVersion in the event.
    pub resource_version: String,
    /// The object's uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// A learning run's records, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// The records, by increasing sequence number.
    pub records: Vec<Record>,
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Reading failed.
    #[error("reading trace {}: {source}", path.display())]
    Io {
        /// The file (empty when reading a stream).
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a record.
    #[error("trace line {line}: {source}")]
    Json {
        /// The line, from 1.
        line: usize,
        /// The error.
        #[source]
        source: serde_json::Error,
    },
    /// A record's sequence number does not follow the one before it.
    #[error("trace line {line}: sequence number {seq} does not follow {previous}")]
    Sequence {
        /// The line, from 1.
        line: usize,
        /// Its sequence number.
        seq: u64,
        /// The previous record's.
        previous: u64,
    },
}

impl Trace {
    /// Appends `event` with the next sequence number (1 for the first) and returns it.
    pub fn push(&mut self, event: Event) -> u64 {
        let seq = self.records.last().map_or(1, |r| r.seq + 1);
        self.records.push(Record { seq, event });
        seq
    }

    /// Reads a JSON-lines trace (blank lines are skipped).
    pub fn read_jsonl(reader: impl BufRead) -> Result<Self, TraceError> {
        let mut trace = Trace::default();
        for (i, line) in reader.lines().enumerate() {
            let line_number = i + 1;
            let line = line.map_err(|source| TraceError::Io {
                path: PathBuf::new(),
                source,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let record: Record =
                serde_json::from_str(&line).map_err(|source| TraceError::Json {
                    line: line_number,
                    source,
                })?;
            if let Some(previous) = trace.records.last().map(|r| r.seq)
                && record.seq <= previous
            {
                return Err(TraceError::Sequence {
                    line: line_number,
                    seq: record.seq,
                    previous,
                });
            }
            trace.records.push(record);
        }
        Ok(trace)
    }

    /// Reads the JSON-lines trace at `path`.
    pub fn from_file(path: &Path) -> Result<Self, TraceError> {
        let file = std::fs::File::open(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::read_jsonl(std::io::BufReader::new(file)).map_err(|e| match e {
            TraceError::Io { source, .. } => TraceError::Io {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        })
    }

    /// Writes the trace as JSON lines.
    pub fn write_jsonl(&self, mut writer: impl std::io::Write) -> std::io::Result<()> {
        for record in &self.records {
            serde_json::to_writer(&mut writer, record)?;
            writer.write_all(b"\n")?;
        }
        writer.flush()
    }

    /// The workload and controller of the [`Event::Run`] record, if there is one.
    pub fn run(&self) -> Option<(&str, &str)> {
        self.records.iter().find_map(|r| match &r.event {
            Event::Run {
                workload,
                controller,
            } => Some((workload.as_str(), controller.as_str())),
            _ => None,
        })
    }

    /// The writes, each with its sequence number.
    pub fn writes(&self) -> impl Iterator<Item = (u64, &Write)> {
        self.records.iter().filter_map(|r| match &r.event {
            Event::Write(write) => Some((r.seq, write)),
            _ => None,
        })
    }

    /// The watch events, each with its sequence number.
    pub fn watch_events(&self) -> impl Iterator<Item = (u64, &WatchEvent)> {
        self.records.iter().filter_map(|r| match &r.event {
            Event::Watch(event) => Some((r.seq, event)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        let mut trace = Trace::default();
        trace.push(Event::Run {
            workload: "workloads/foo.yaml".into(),
            controller: "sample-controller".into(),
        });
        trace.push(Event::StepBegin {
            step: 1,
            op: "create".into(),
            name: "sieve-foo".into(),
        });
        trace.push(Event::Watch(WatchEvent {
            resource: "foos".into(),
            event: EventType::Added,
            key: "ns/sieve-foo".into(),
            resource_version: "811".into(),
            uid: Some("u1".into()),
        }));
        trace.push(Event::Write(Write {
            method: Method::Post,
            resource: "deployments".into(),
            key: "ns/sieve-foo".into(),
            subresource: None,
            status: 201,
            resource_version: Some("812".into()),
            owners: vec![OwnerRef {
                kind: "Foo".into(),
                name: "sieve-foo".into(),
                uid: Some("u1".into()),
            }],
            removes_finalizer: false,
            sent_after: Some(3),
        }));
        trace.push(Event::StepEnd { step: 1 });
        trace
    }

    #[test]
    fn a_trace_is_json_lines_in_the_documented_format() {
        let mut out = Vec::new();
        sample().write_jsonl(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let documented = [
            r#"{"seq":1,"type":"run","workload":"workloads/foo.yaml","controller":"sample-controller"}"#,
            r#"{"seq":2,"type":"stepBegin","step":1,"op":"create","name":"sieve-foo"}"#,
            r#"{"seq":3,"type":"watch","resource":"foos","event":"ADDED","key":"ns/sieve-foo","resourceVersion":"811","uid":"u1"}"#,
            r#"{"seq":4,"type":"write","method":"POST","resource":"deployments","key":"ns/sieve-foo","status":201,"resourceVersion":"812","owners":[{"kind":"Foo","name":"sieve-foo","uid":"u1"}],"sentAfter":3}"#,
            r#"{"seq":5,"type":"stepEnd","step":1}"#,
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), documented);
        let back = Trace::read_jsonl(format!("\n{text}\n").as_bytes()).unwrap();
        assert_eq!(back, sample());
        assert_eq!(
            back.run(),
            Some(("workloads/foo.yaml", "sample-controller"))
        );
        assert_eq!(back.writes().map(|(seq, _)| seq).collect::<Vec<_>>(), [4]);
        assert_eq!(
            back.watch_events().map(|(seq, _)| seq).collect::<Vec<_>>(),
            [3]
        );
    }

    #[test]
    fn a_write_summary_names_method_resource_key_and_status() {
        let (_, write) = sample()
            .writes()
            .next()
            .map(|(s, w)| (s, w.clone()))
            .unwrap();
        assert!(write.succeeded());
        assert_eq!(write.summary(), "POST deployments ns/sieve-foo -> 201");
        let conflict = Write {
            method: Method::Put,
            subresource: Some("status".into()),
            status: 409,
            ..write
        };
        assert!(!conflict.succeeded());
        assert_eq!(
            conflict.summary(),
            "PUT deployments/status ns/sieve-foo -> 409"
        );
    }

    #[test]
    fn bad_lines_and_out_of_order_records_are_refused_with_their_line() {
        let err =
            Trace::read_jsonl("{\"seq\":1,\"type\":\"stepEnd\",\"step\":1}\nnot json\n".as_bytes())
                .unwrap_err();
        assert!(matches!(err, TraceError::Json { line: 2, .. }), "{err}");
        let err = Trace::read_jsonl(
            "{\"seq\":2,\"type\":\"stepEnd\",\"step\":1}\n{\"seq\":2,\"type\":\"stepEnd\",\"step\":2}\n".as_bytes(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "trace line 2: sequence number 2 does not follow 2"
        );
        let err = Trace::from_file(Path::new("/nonexistent/trace.jsonl")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("reading trace /nonexistent/trace.jsonl: ")
        );
    }
}
