//! Building an events.k8s.io/v1 Event and telling repeats apart: client-go
//! `tools/events`' `recorderImpl.makeEvent`, `util.GenerateEventName`, the
//! `reportingInstance` of `NewRecorder` and the broadcaster's `getKey`.
//!
//! An events.k8s.io/v1 Event says **who** (`reportingController`, e.g.
//! `sample-controller`, and `reportingInstance`, the replica), **did what**
//! (`action`, e.g. `CreateDeployment`), **why** (`reason`), **to what**
//! (`regarding`, plus an optional `related` object), **when** (`eventTime`, in
//! microseconds) and **how often** (`series`, added by the broadcaster on the
//! second occurrence). `note` is the human-readable text, `type` Normal or
//! Warning.
//!
//! The API server validates these strictly (they are optional only in the
//! schema): `reportingController` a qualified name, `reportingInstance`,
//! `action` and `reason` non-empty and at most 128 bytes, `note` at most 1 KiB,
//! and - on update - every field but `series` (and metadata) immutable. What the
//! server would reject for its length we shorten here, so a long error message
//! costs some text, not the whole Event.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use rand::Rng;

use crate::event::{EventType, NAMESPACE_DEFAULT, unique_suffix};

/// The API server's limit on `note`, in bytes (`NoteLengthLimit`).
pub const NOTE_LENGTH_LIMIT: usize = 1024;
/// The API server's limit on `reportingInstance`, in bytes
/// (`ReportingInstanceLengthLimit`).
pub const REPORTING_INSTANCE_LENGTH_LIMIT: usize = 128;

/// Who reports: the `reportingController` and `reportingInstance` every Event of
/// one recorder carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reporter {
    /// `reportingController`: the controller's name (`sample-controller`).
    pub controller: String,
    /// `reportingInstance`: this replica (`sample-controller-<hostname>`).
    pub instance: String,
}

impl Reporter {
    /// client-go's `NewRecorder(scheme, reportingController)`: the instance is
    /// `<controller>-<hostname>`. Deviations: the hostname is passed in (tests,
    /// and the Pod name in a cluster), an empty one gives just `<controller>`
    /// (client-go would write `<controller>-`), and the instance is cut to the
    /// server's 128 bytes instead of having every Event rejected.
    pub fn new(controller: impl Into<String>, host: &str) -> Self {
        let controller = controller.into();
        let instance = if host.is_empty() {
            controller.clone()
        } else {
            format!("{controller}-{host}")
        };
        Self {
            instance: truncate_at_boundary(&instance, REPORTING_INSTANCE_LENGTH_LIMIT).to_string(),
            controller,
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character
/// boundary.
fn truncate_at_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Cuts a note longer than the server's 1 KiB to 1020 bytes plus `" ..."`, as
/// kube-scheduler's `truncateMessage` does for its FailedScheduling Events.
///
/// Deviation: client-go's `tools/events` does not truncate; the server rejects
/// the Event (422) and it is lost. Truncation keeps UTF-8 valid (it cuts at a
/// character boundary, so the result may be a few bytes shorter).
pub fn truncate_note(note: String) -> String {
    if note.len() <= NOTE_LENGTH_LIMIT {
        return note;
    }
    const SUFFIX: &str = " ...";
    let kept = truncate_at_boundary(&note, NOTE_LENGTH_LIMIT - SUFFIX.len());
    format!("{kept}{SUFFIX}")
}

/// Whether `name` is a DNS-1123 subdomain (what Event names must be): at most
/// 253 characters of lowercase alphanumerics, `-` and `.`, each dot-separated
/// label starting and ending with an alphanumeric.
fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes[0].is_ascii_alphanumeric()
                && bytes[bytes.len() - 1].is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

/// client-go's `util.GenerateEventName`: `<regarding name>.<unique hex>`, or a
/// random UUID when that is not a valid name (object names such as
/// `system:controller` or 250-character names would make every Event rejected,
/// kubernetes#127594). The hex suffix is [`unique_suffix`]: wall-clock
/// nanoseconds, strictly increasing process-wide.
pub fn event_name(regarding_name: &str, wall: Timestamp) -> String {
    let name = format!("{regarding_name}.{}", unique_suffix(wall));
    if is_dns_subdomain(&name) {
        return name;
    }
    let v: u128 = rand::rng().random();
    // A version 4, variant 1 UUID, as `uuid.New()`.
    let v = (v & !(0xf << 76)) | (0x4 << 76);
    let v = (v & !(0x3 << 62)) | (0x2 << 62);
    let hex = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// One occurrence as a controller reports it: the arguments of client-go's
/// `Eventf`.
#[derive(Debug, Clone, PartialEq)]
pub struct Occurrence {
    /// The object the Event is about.
    pub regarding: ObjectReference,
    /// A second object involved, if any.
    pub related: Option<ObjectReference>,
    /// Normal or Warning.
    pub event_type: EventType,
    /// Why (`ErrResourceExists`).
    pub reason: String,
    /// What was done or attempted (`CreateDeployment`).
    pub action: String,
    /// For humans; cut to 1 KiB by [`make_event`].
    pub note: String,
}

/// A new events.k8s.io/v1 Event (client-go's `makeEvent`): named
/// [`event_name`], in `regarding`'s namespace (`default` for cluster-scoped
/// objects, as client-go; the server accepts `default` or `kube-system` there),
/// `eventTime = wall`, no series yet, the note [truncated](truncate_note).
pub fn make_event(reporter: &Reporter, occurrence: Occurrence, wall: Timestamp) -> Event {
    let Occurrence {
        regarding,
        related,
        event_type,
        reason,
        action,
        note,
    } = occurrence;
    let namespace = regarding
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| NAMESPACE_DEFAULT.to_string());
    Event {
        metadata: ObjectMeta {
            name: Some(event_name(
                regarding.name.as_deref().unwrap_or_default(),
                wall,
            )),
            namespace: Some(namespace),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(wall)),
        series: None,
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(reporter.instance.clone()),
        action: Some(action),
        reason: Some(reason),
        regarding: Some(regarding),
        related,
        note: Some(truncate_note(note)),
        type_: Some(event_type.as_str().to_string()),
        ..Event::default()
    }
}

/// The identity of an object reference within an [`EventKey`]: everything but
/// `resourceVersion`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ReferenceKey {
    api_version: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    field_path: String,
}

impl ReferenceKey {
    fn of(r: &ObjectReference) -> Self {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        Self {
            api_version: s(&r.api_version),
            kind: s(&r.kind),
            namespace: s(&r.namespace),
            name: s(&r.name),
            uid: s(&r.uid),
            field_path: s(&r.field_path),
        }
    }
}

/// The isomorphic key (client-go's `eventKey`): two Events with the same key are
/// one series. See [`get_key`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct EventKey {
    event_type: String,
    action: String,
    reason: String,
    reporting_controller: String,
    reporting_instance: String,
    regarding: ReferenceKey,
    related: Option<ReferenceKey>,
}

/// client-go's `getKey`: `type`, `action`, `reason`, `reportingController`,
/// `reportingInstance`, `regarding` and `related`.
///
/// **`note` is not part of the key**, as in client-go (and KEP-383): a repeat
/// whose text differs joins the series, and the Event keeps the first note -
/// the server forbids changing `note` on update anyway. This also bounds the
/// number of Events a controller in an error loop can create (one per object,
/// reason and action, whatever the error text), which matters because this API
/// has no spam filter.
///
/// Deviation: the references' `resourceVersion` is left out (client-go compares
/// whole `ObjectReference`s). A controller usually records about an object it
/// just updated, so with the resourceVersion in the key hardly any repeat would
/// form a series; core/v1's `getEventKey` leaves it out too.
pub fn get_key(event: &Event) -> EventKey {
    let s = |v: &Option<String>| v.clone().unwrap_or_default();
    EventKey {
        event_type: s(&event.type_),
        action: s(&event.action),
        reason: s(&event.reason),
        reporting_controller: s(&event.reporting_controller),
        reporting_instance: s(&event.reporting_instance),
        regarding: event
            .regarding
            .as_ref()
            .map(ReferenceKey::of)
            .unwrap_or_default(),
        related: event.related.as_ref().map(ReferenceKey::of),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(name: &str) -> Occurrence {
        Occurrence {
            regarding: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some("u-1".into()),
                resource_version: Some("1".into()),
                field_path: None,
            },
            related: None,
            event_type: EventType::Warning,
            reason: "R".into(),
            action: "A".into(),
            note: "n".into(),
        }
    }

    #[test]
    fn reporter_instance_is_controller_dash_host_within_128_bytes() {
        assert_eq!(Reporter::new("c", "h").instance, "c-h");
        assert_eq!(Reporter::new("c", "").instance, "c");
        let long = Reporter::new("c", &"é".repeat(100));
        assert!(long.instance.len() <= REPORTING_INSTANCE_LENGTH_LIMIT);
        assert!(long.instance.starts_with("c-é"));
    }

    #[test]
    fn notes_over_1_kib_are_cut_with_an_ellipsis() {
        assert_eq!(truncate_note("short".into()), "short");
        let exact = "x".repeat(NOTE_LENGTH_LIMIT);
        assert_eq!(truncate_note(exact.clone()), exact);
        let cut = truncate_note("y".repeat(5000));
        assert_eq!(cut.len(), NOTE_LENGTH_LIMIT);
        assert!(cut.ends_with("y ..."));
        // Multi-byte characters are never split.
        let cut = truncate_note("ü".repeat(1000));
        assert!(cut.len() <= NOTE_LENGTH_LIMIT && cut.ends_with(" ..."));
    }

    #[test]
    fn names_fall_back_to_a_uuid_when_invalid() {
        let wall = Timestamp::from_second(1_800_000_000).unwrap();
        assert!(event_name("cm", wall).starts_with("cm."));
        for bad in ["system:controller", "Upper", &"a".repeat(250)] {
            let name = event_name(bad, wall);
            assert_eq!(name.len(), 36, "{name}");
            assert_eq!(&name[14..15], "4", "{name}");
            assert!(is_dns_subdomain(&name), "{name}");
        }
    }

    #[test]
    fn make_event_fills_every_required_field() {
        let wall = Timestamp::from_second(1_800_000_000).unwrap();
        let e = make_event(&Reporter::new("c", "h"), occurrence("cm"), wall);
        assert_eq!(e.metadata.namespace.as_deref(), Some("ns"));
        assert!(e.metadata.name.as_deref().unwrap().starts_with("cm."));
        assert_eq!(e.event_time, Some(MicroTime(wall)));
        assert_eq!(e.reporting_controller.as_deref(), Some("c"));
        assert_eq!(e.reporting_instance.as_deref(), Some("c-h"));
        assert_eq!(e.action.as_deref(), Some("A"));
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.series, None);
        let mut cluster_scoped = occurrence("node-1");
        cluster_scoped.regarding.namespace = None;
        let e = make_event(&Reporter::new("c", "h"), cluster_scoped, wall);
        assert_eq!(e.metadata.namespace.as_deref(), Some(NAMESPACE_DEFAULT));
    }

    #[test]
    fn the_key_ignores_note_and_resource_version_but_not_the_rest() {
        let wall = Timestamp::UNIX_EPOCH;
        let r = Reporter::new("c", "h");
        let key = |o: Occurrence| get_key(&make_event(&r, o, wall));
        let base = key(occurrence("cm"));
        let mut o = occurrence("cm");
        o.note = "other".into();
        o.regarding.resource_version = Some("2".into());
        assert_eq!(key(o), base);
        let mut o = occurrence("cm");
        o.action = "B".into();
        assert_ne!(key(o), base);
        let mut o = occurrence("cm");
        o.related = Some(ObjectReference::default());
        assert_ne!(key(o), base);
        assert_ne!(key(occurrence("other")), base);
    }
}
