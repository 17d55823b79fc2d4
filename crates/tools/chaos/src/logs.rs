//! Reading the replicas' JSON logs after the run: panics, real 410 relists, leadership
//! changes, and whether two replicas ever synced the same key at the same time.
//!
//! Each incarnation of a replica logs to a file of its own, with
//! `RUST_LOG=info,controller::controller=debug`, so every completed sync is a line
//! `{"timestamp", "message": "synced" | "synced; requeued", "controller", "key",
//! "elapsed", "started_at", "last_poll_at"}`: the interval
//! `[started_at, started_at + elapsed]` is when that incarnation ran the sync
//! (`[timestamp - elapsed, timestamp]` for lines without `started_at`).
//!
//! A sync whose interval spans a SIGSTOP window of its replica is judged by when its
//! last poll *began* (`last_poll_at`), not by when it ended: the fence is checked
//! before every poll and cannot be inside one, so a freeze that lands mid-poll lets
//! the rest of that poll run after the thaw without any new check (the loop's
//! `sync_clock` module, docs/reliability.md finding 12). Such a sync is no overlap;
//! one that began a poll after the thaw is.
//!
//! A key is a name, and the invariant is about objects: under uid sharding a name
//! deleted and created again is a new object that may hash to another replica, while
//! the first replica still syncs the old one's "not found" (docs/reliability.md
//! finding 13). The loop logs the hash the gate placed the key by (`object_hash`); two
//! replicas syncing one name for two different hashes are counted apart, not as a
//! violation. Lines without the field (leader election, no gate) are compared with all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

/// What the logs say.
#[derive(Debug, Default, Clone, Serialize)]
pub struct LogFindings {
    /// Lines that report a panic: `file: line`.
    pub panics: Vec<String>,
    /// Watches that ended with 410 Gone and relisted (the compaction fault's evidence).
    pub relists_after_410: u64,
    /// Completed syncs read.
    pub syncs: u64,
    /// Syncs of one key by two incarnations whose intervals overlap.
    pub overlapping_syncs: Vec<String>,
    /// Overlaps where one of the two syncs was in flight while its replica was
    /// SIGSTOPped (frozen mid-sync, then finished after a successor took over):
    /// unavoidable without fencing; every write is conditional on a resourceVersion.
    pub frozen_overlaps: u64,
    /// The first 50 of those, described as `overlapping_syncs` are.
    pub frozen_overlap_examples: Vec<String>,
    /// Overlapping syncs of one name by two replicas for two different objects (the
    /// name deleted and created again with a uid in another replica's range): not a
    /// violation, see the module docs.
    pub name_reused_overlaps: u64,
    /// The first 50 of those, described as `overlapping_syncs` are.
    pub name_reused_examples: Vec<String>,
    /// "leading: starting controllers" lines: how many times some replica took over.
    pub leadership_acquired: u64,
    /// Incarnations that logged losing the Lease.
    pub leadership_lost: u64,
    /// "error syncing" lines.
    pub sync_errors: u64,
}

/// One completed sync.
#[derive(Debug, Clone)]
struct Sync {
    start_us: i64,
    end_us: i64,
    /// When its last poll began (`end_us` if the line does not say).
    last_poll_us: i64,
    file: usize,
    /// The hash the gate placed the key by (`object_hash`), if the line has one.
    object: Option<u64>,
}

/// Reads every log file.
pub fn analyse(files: &[PathBuf], frozen: &[crate::processes::Frozen]) -> LogFindings {
    // Per file index: its SIGSTOP windows.
    let windows: Vec<Vec<(i64, i64)>> = files
        .iter()
        .map(|f| {
            frozen
                .iter()
                .filter(|w| &w.log == f)
                .map(|w| (w.from_us, w.until_us.unwrap_or(i64::MAX)))
                .collect()
        })
        .collect();
    let was_frozen = |s: &Sync| {
        windows.get(s.file).is_some_and(|ws| {
            ws.iter()
                .any(|&(from, until)| s.start_us <= until && s.end_us >= from)
        })
    };
    // The end that counts: a frozen sync ran (could send requests) until its last
    // poll began; whatever came after ran inside that one poll (module docs).
    let effective_end = |s: &Sync| {
        if was_frozen(s) {
            s.last_poll_us.min(s.end_us)
        } else {
            s.end_us
        }
    };
    let mut findings = LogFindings::default();
    let mut syncs: BTreeMap<(String, String), Vec<Sync>> = BTreeMap::new();
    for (index, file) in files.iter().enumerate() {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let short = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut lost = false;
        for line in text.lines() {
            if line.contains("panicked at") || line.contains("panic while syncing") {
                if findings.panics.len() < 50 {
                    findings
                        .panics
                        .push(format!("{short}: {}", truncate(line, 300)));
                }
                continue;
            }
            let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let message = value["message"].as_str().unwrap_or_default();
            match message {
                m if m.starts_with("watch: resource version too old (410)") => {
                    findings.relists_after_410 += 1
                }
                "leading: starting controllers" => findings.leadership_acquired += 1,
                "leadership lost; stopping controllers at once" => lost = true,
                "error syncing; requeuing" => findings.sync_errors += 1,
                "synced" | "synced; requeued" => {
                    let (Some(logged_us), Some(elapsed)) = (
                        value["timestamp"].as_str().and_then(parse_timestamp_us),
                        value["elapsed"].as_str().and_then(parse_debug_duration),
                    ) else {
                        continue;
                    };
                    let elapsed_us = i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX);
                    let (start_us, end_us) =
                        match value["started_at"].as_str().and_then(parse_timestamp_us) {
                            Some(start) => (start, start.saturating_add(elapsed_us)),
                            None => (logged_us.saturating_sub(elapsed_us), logged_us),
                        };
                    let last_poll_us = value["last_poll_at"]
                        .as_str()
                        .and_then(parse_timestamp_us)
                        .unwrap_or(end_us);
                    let key = (
                        value["controller"].as_str().unwrap_or_default().to_string(),
                        value["key"].as_str().unwrap_or_default().to_string(),
                    );
                    syncs.entry(key).or_default().push(Sync {
                        start_us,
                        end_us,
                        last_poll_us,
                        file: index,
                        object: value["object_hash"].as_u64(),
                    });
                    findings.syncs += 1;
                }
                _ => {}
            }
        }
        findings.leadership_lost += u64::from(lost);
    }
    for ((controller, key), mut list) in syncs {
        list.sort_by_key(|s| s.start_us);
        // Sweep, per object: the sync with the latest end so far, from any incarnation.
        let mut latest: BTreeMap<Option<u64>, Sync> = BTreeMap::new();
        for sync in list {
            for (object, prev) in &latest {
                if prev.file == sync.file || sync.start_us >= effective_end(prev) {
                    continue;
                }
                let described = format!(
                    "{controller} {key}: {} synced it until {:.3}s after {} started ({})",
                    name_of(files, prev.file),
                    (effective_end(prev) - sync.start_us) as f64 / 1e6,
                    name_of(files, sync.file),
                    sync.start_us
                );
                let same_object =
                    object.is_none() || sync.object.is_none() || *object == sync.object;
                let examples = if !same_object {
                    findings.name_reused_overlaps += 1;
                    &mut findings.name_reused_examples
                } else if was_frozen(prev) || was_frozen(&sync) {
                    findings.frozen_overlaps += 1;
                    &mut findings.frozen_overlap_examples
                } else {
                    &mut findings.overlapping_syncs
                };
                if examples.len() < 50 {
                    examples.push(described);
                }
            }
            if latest
                .get(&sync.object)
                .is_none_or(|l| effective_end(&sync) > effective_end(l))
            {
                latest.insert(sync.object, sync);
            }
        }
    }
    findings
}

fn name_of(files: &[PathBuf], index: usize) -> String {
    files
        .get(index)
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn truncate(line: &str, max: usize) -> &str {
    let mut end = line.len().min(max);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// `2026-11-23T09:11:24.123456Z` as microseconds since the epoch (UTC only, which is
/// what tracing-subscriber writes).
pub fn parse_timestamp_us(ts: &str) -> Option<i64> {
    let ts = ts.strip_suffix('Z')?;
    let (date, time) = ts.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min, s) = (t.next()??, t.next()??, t.next()??);
    let digits: String = frac.chars().take(6).collect();
    let micros = format!("{digits:0<6}").parse::<i64>().ok()?;
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + min * 60 + s) * 1_000_000) + micros)
}

/// A `Duration`'s `Debug` form (`1.5s`, `12.3ms`, `250µs`, `80ns`).
pub fn parse_debug_duration(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = s.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit {
        "s" => number,
        "ms" => number / 1e3,
        "µs" | "us" => number / 1e6,
        "ns" => number / 1e9,
        _ => return None,
    };
    Some(Duration::from_secs_f64(seconds))
}

/// Whether `path` mentions a panic (for one-off checks).
pub fn has_panic(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains("panicked at"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_durations() {
        assert_eq!(
            parse_timestamp_us("1970-01-01T00:00:01.5Z"),
            Some(1_500_000)
        );
        assert_eq!(
            parse_timestamp_us("2000-03-01T00:00:00Z"),
            Some(951_868_800_000_000)
        );
        assert_eq!(
            parse_debug_duration("1.5s"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_debug_duration("12ms"),
            Some(Duration::from_millis(12))
        );
        assert_eq!(
            parse_debug_duration("250µs"),
            Some(Duration::from_micros(250))
        );
        assert_eq!(parse_debug_duration("soon"), None);
    }

    #[test]
    fn overlapping_syncs_of_one_key_by_two_incarnations_are_found() {
        let dir = std::env::temp_dir().join(format!("chaos-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |ts: &str, key: &str, elapsed: &str| {
            format!(
                r#"{{"timestamp":"{ts}","level":"DEBUG","message":"synced","controller":"foo","key":"{key}","elapsed":"{elapsed}"}}"#
            )
        };
        let a = dir.join("a.log");
        let b = dir.join("b.log");
        std::fs::write(
            &a,
            [
                line("2026-01-01T00:00:10Z", "ns/x", "5s"),
                line("2026-01-01T00:00:10Z", "ns/y", "1ms"),
            ]
            .join("\n"),
        )
        .unwrap();
        // ns/x: b synced it from 7 s to 8 s while a ran from 5 s to 10 s: overlap.
        // ns/y: b synced it long after a: no overlap.
        std::fs::write(
            &b,
            [
                line("2026-01-01T00:00:08Z", "ns/x", "1s"),
                line("2026-01-01T00:00:20Z", "ns/y", "1s"),
                "thread 'main' panicked at src/x.rs".into(),
            ]
            .join("\n"),
        )
        .unwrap();
        let findings = analyse(&[a.clone(), b.clone()], &[]);
        assert_eq!(findings.syncs, 4);
        assert_eq!(
            findings.overlapping_syncs.len(),
            1,
            "{:?}",
            findings.overlapping_syncs
        );
        assert!(findings.overlapping_syncs[0].contains("ns/x"));
        assert_eq!(findings.panics.len(), 1);
        // The same, but a was SIGSTOPped from 6 s to 9 s, during its sync of ns/x: a sync
        // frozen in flight, counted apart.
        let t0 = parse_timestamp_us("2026-01-01T00:00:00Z").unwrap();
        let frozen = crate::processes::Frozen {
            log: a.clone(),
            pid: 1,
            from_us: t0 + 6_000_000,
            until_us: Some(t0 + 9_000_000),
        };
        let findings = analyse(&[a, b], &[frozen]);
        assert!(
            findings.overlapping_syncs.is_empty(),
            "{:?}",
            findings.overlapping_syncs
        );
        assert_eq!(findings.frozen_overlaps, 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Finding 12: a replica frozen inside the last poll of a sync finishes that poll
    /// after the thaw; the sync's `elapsed` spans the freeze, but no poll of it began
    /// after the thaw, so a successor's sync meanwhile is no overlap. One whose last
    /// poll began after the thaw (the fence let it run on) still is.
    #[test]
    fn a_sync_frozen_inside_its_last_poll_is_judged_by_when_that_poll_began() {
        let dir = std::env::temp_dir().join(format!("chaos-logs-poll-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |ts: &str, key: &str, elapsed: &str, started: &str, last_poll: &str| {
            format!(
                r#"{{"timestamp":"{ts}","level":"DEBUG","message":"synced","controller":"foo","key":"{key}","elapsed":"{elapsed}","started_at":"{started}","last_poll_at":"{last_poll}"}}"#
            )
        };
        let a = dir.join("a.log");
        let b = dir.join("b.log");
        // a: frozen from 6 s to 14 s. ns/x began at 5.9 s and its only poll began then
        // (frozen inside it, logged at 14.001 s). ns/y began at 5.5 s, waited on a
        // response across the freeze and was polled again at 14.002 s: the fence should
        // have revoked it.
        std::fs::write(
            &a,
            [
                line(
                    "2026-01-01T00:00:14.001Z",
                    "ns/x",
                    "8.101s",
                    "2026-01-01T00:00:05.900Z",
                    "2026-01-01T00:00:05.900Z",
                ),
                line(
                    "2026-01-01T00:00:14.003Z",
                    "ns/y",
                    "8.503s",
                    "2026-01-01T00:00:05.500Z",
                    "2026-01-01T00:00:14.002Z",
                ),
            ]
            .join("\n"),
        )
        .unwrap();
        // b took both keys over during the freeze.
        std::fs::write(
            &b,
            [
                line(
                    "2026-01-01T00:00:12.001Z",
                    "ns/x",
                    "1ms",
                    "2026-01-01T00:00:12Z",
                    "2026-01-01T00:00:12Z",
                ),
                line(
                    "2026-01-01T00:00:12.001Z",
                    "ns/y",
                    "1ms",
                    "2026-01-01T00:00:12Z",
                    "2026-01-01T00:00:12Z",
                ),
            ]
            .join("\n"),
        )
        .unwrap();
        let t0 = parse_timestamp_us("2026-01-01T00:00:00Z").unwrap();
        let frozen = crate::processes::Frozen {
            log: a.clone(),
            pid: 1,
            from_us: t0 + 6_000_000,
            until_us: Some(t0 + 14_000_000),
        };
        let findings = analyse(&[a.clone(), b.clone()], std::slice::from_ref(&frozen));
        assert_eq!(findings.syncs, 4);
        assert!(findings.overlapping_syncs.is_empty());
        // ns/y only.
        assert_eq!(findings.frozen_overlaps, 1);
        assert!(
            findings.frozen_overlap_examples[0].contains("ns/y"),
            "{:?}",
            findings.frozen_overlap_examples
        );
        // Without the freeze on record both are plain overlaps by their whole intervals.
        let findings = analyse(&[a, b], &[]);
        assert_eq!(
            findings.overlapping_syncs.len(),
            2,
            "{:?}",
            findings.overlapping_syncs
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Finding 13 (CI, seed 2038720513): vm-0015 was deleted in replica 0's range and
    /// created again with a uid in replica 1's; replica 0's pending requeue of the name
    /// synced the old object's "not found" while replica 1 synced the new object. Two
    /// objects, one name: counted apart. The same hash on both sides stays a violation.
    #[test]
    fn one_name_synced_for_two_objects_is_not_a_violation_but_one_object_is() {
        let dir = std::env::temp_dir().join(format!("chaos-logs-names-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |ts: &str, elapsed: &str, started: &str, hash: u64| {
            format!(
                r#"{{"timestamp":"{ts}","level":"DEBUG","message":"synced","controller":"vm-controller","key":"chaos/vm-0015","elapsed":"{elapsed}","started_at":"{started}","last_poll_at":"{ts}","object_hash":{hash}}}"#
            )
        };
        let (a, b) = (dir.join("vm-0.log"), dir.join("vm-1.log"));
        let old_object = 0x9000_0000_0000_0001_u64;
        let new_object = 0x1000_0000_0000_0002_u64;
        std::fs::write(
            &a,
            line(
                "2026-11-29T13:00:01.860771Z",
                "390.883µs",
                "2026-11-29T13:00:01.860335Z",
                old_object,
            ),
        )
        .unwrap();
        let b_line = |hash| {
            line(
                "2026-11-29T13:00:03.610183Z",
                "2.63528263s",
                "2026-11-29T13:00:00.971583Z",
                hash,
            )
        };
        std::fs::write(&b, b_line(new_object)).unwrap();
        let findings = analyse(&[a.clone(), b.clone()], &[]);
        assert!(
            findings.overlapping_syncs.is_empty(),
            "{:?}",
            findings.overlapping_syncs
        );
        assert_eq!(findings.name_reused_overlaps, 1);
        assert!(findings.name_reused_examples[0].contains("chaos/vm-0015"));
        // One object synced by both replicas at once: the violation it always was.
        std::fs::write(&b, b_line(old_object)).unwrap();
        let findings = analyse(&[a.clone(), b.clone()], &[]);
        assert_eq!(
            findings.overlapping_syncs.len(),
            1,
            "{:?}",
            findings.overlapping_syncs
        );
        assert_eq!(findings.name_reused_overlaps, 0);
        // A line without the field (no gate) is compared with every object.
        std::fs::write(
            &b,
            b_line(new_object).replace(&format!(r#","object_hash":{new_object}"#), ""),
        )
        .unwrap();
        let findings = analyse(&[a, b], &[]);
        assert_eq!(findings.overlapping_syncs.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
