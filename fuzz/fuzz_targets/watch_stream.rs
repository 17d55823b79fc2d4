//! Watch responses (`cache::lister_watcher::watch_stream`): the API server's stream of
//! JSON event lines, split by our own line splitter wherever the network cut it into
//! chunks, and decoded into our types (here the Foo custom resource), with and
//! without managedFields stripped.
//!
//! Input: a header byte whose low 3 bits say how many chunk lengths follow (one byte
//! each), then the body. Checks:
//! * the events (and errors) do not depend on where the chunks were cut: the same as
//!   when the whole body arrives at once, and the same as decoding each line alone
//!   (the line splitter against `split` on `\n`), with managedFields kept or stripped;
//! * stripping managedFields changes nothing else, line by line: the same event with
//!   managedFields left out, an error where there was an error, nothing where a
//!   truncated line was dropped. The one difference allowed: a line whose
//!   managedFields are valid JSON but not valid entries (a malformed `time`) fails to
//!   decode as it is, and is decoded (or, if truncated, dropped) once they are cut out
//!   unread, the point of cutting them; a syntax error (broken JSON, bytes that are not
//!   UTF-8) stays an error.

#![no_main]

use apis::samplecontroller::v1alpha1::Foo;
use cache::lister_watcher::watch_stream::decode_chunks;
use kube::Resource;
use kube::api::WatchEvent;
use libfuzzer_sys::fuzz_target;
use serde_json::error::Category;

type Decoded = Vec<Result<WatchEvent<Foo>, kube::Error>>;

fn describe(results: &Decoded) -> Vec<String> {
    results.iter().map(|r| format!("{r:?}")).collect()
}

/// An event as JSON with managedFields left out, or `None` for an error.
fn without_managed_fields(result: &Result<WatchEvent<Foo>, kube::Error>) -> Option<String> {
    let mut event = result.as_ref().ok()?.clone();
    if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) = &mut event {
        o.meta_mut().managed_fields = None;
    }
    Some(serde_json::to_string(&event).expect("an event encodes"))
}

fuzz_target!(|data: &[u8]| {
    let Some((&header, rest)) = data.split_first() else {
        return;
    };
    let cuts = usize::from(header & 7).min(rest.len());
    let (lengths, body) = rest.split_at(cuts);
    let mut chunks: Vec<&[u8]> = Vec::new();
    let mut left = body;
    for &len in lengths {
        let (chunk, after) = left.split_at(usize::from(len).min(left.len()));
        chunks.push(chunk);
        left = after;
    }
    chunks.push(left);

    let whole: Decoded = decode_chunks(&[body], false);
    let chunked: Decoded = decode_chunks(&chunks, false);
    assert_eq!(describe(&chunked), describe(&whole), "chunks {lengths:?}");

    let (mut by_line, mut stripped_by_line) = (Vec::new(), Vec::new());
    for line in body.split(|&b| b == b'\n') {
        let kept: Decoded = decode_chunks(&[line], false);
        let stripped: Decoded = decode_chunks(&[line], true);
        by_line.extend(describe(&kept));
        stripped_by_line.extend(describe(&stripped));
        let lenient = matches!(
            kept.as_slice(),
            [Err(kube::Error::SerdeError(e))] if e.classify() == Category::Data
        );
        if lenient {
            continue;
        }
        assert_eq!(
            stripped.len(),
            kept.len(),
            "stripped {:?}\nkept {:?}",
            describe(&stripped),
            describe(&kept)
        );
        for (s, k) in stripped.iter().zip(&kept) {
            assert_eq!(
                without_managed_fields(s),
                without_managed_fields(k),
                "stripped {s:?}\nkept {k:?}"
            );
        }
    }
    assert_eq!(by_line, describe(&whole), "line by line");
    let stripped: Decoded = decode_chunks(&chunks, true);
    assert_eq!(
        stripped_by_line,
        describe(&stripped),
        "line by line, stripped"
    );
});
