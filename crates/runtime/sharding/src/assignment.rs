//! Which ranges each member should hold: **contiguous equal ranges** over the 64-bit
//! hash space, one per live member, in the order of their identities.
//!
//! Every replica computes the assignment from the member list alone (no leader, no
//! stored state), so replicas that see the same members agree on it. Two schemes
//! were measured ([`moved_fraction`], the tests below, docs/architecture.md):
//!
//! | scheme | ranges per member (`||` terms) | largest share, 3 -> 4 members | moved on a join, 3 -> 4 |
//! |---|---|---|---|
//! | contiguous equal ranges | 1 | exactly 1/4 | 1/3 or 1/2 of the space (where the newcomer sorts) |
//! | consistent-hash ring, 16 points per member | up to 17 | 1.27x of 1/4 on average, 1.94x at worst | 0.249 on average (1/4 is the minimum) |
//!
//! (The ring's figures are over 200 groups of differently named members, from the test
//! `the_ring_moves_less_but_is_uneven_and_long`.) The ring moves the least, but its
//! shares are uneven: the largest replica, which sets the memory every replica must
//! be given, holds 27 % more than 1/N on average and up to twice as much, and its
//! selector has up to seventeen terms. Equal ranges keep every replica at exactly 1/N
//! with a one-term selector, which is what the memory goal (each replica's cache at
//! most 1.15/N of one replica's) needs. What a move costs is small either way: a
//! replica whose ranges change relists its slice (a watch cannot widen its selector),
//! which it does on any change, and
//! the keys that moved pause only for the handover (a renew period or two).

use std::collections::BTreeMap;

use cache::shard::{HashRange, RangeSet};

/// The ranges of `members` (identities, any order, duplicates ignored): member `i` of
/// the sorted list holds `[i * 2^64 / n, (i + 1) * 2^64 / n)`.
///
/// ```
/// let assignment = sharding::assign(&["b".to_string(), "a".to_string()]);
/// assert_eq!(assignment["a"].to_string(), "[0x0000000000000000, 0x8000000000000000)");
/// assert_eq!(assignment["b"].to_string(), "[0x8000000000000000, 0x10000000000000000)");
/// ```
pub fn assign(members: &[String]) -> BTreeMap<String, RangeSet> {
    let mut sorted: Vec<&String> = members.iter().collect();
    sorted.sort();
    sorted.dedup();
    let n = sorted.len() as u128;
    let space: u128 = 1 << 64;
    sorted
        .into_iter()
        .enumerate()
        .map(|(i, member)| {
            let i = i as u128;
            let first = i * space / n;
            let end = (i + 1) * space / n;
            let range = HashRange::new(first as u64, (end - 1) as u64)
                .map(|r| RangeSet::from_ranges([r]))
                .unwrap_or_default();
            (member.clone(), range)
        })
        .collect()
}

/// The ranges `me` should hold among `members` (empty if `me` is not one of them).
pub fn ranges_for(members: &[String], me: &str) -> RangeSet {
    assign(members).remove(me).unwrap_or_default()
}

/// The share of the hash space whose owner differs between two assignments (a hash
/// owned by nobody on either side counts as moved).
pub fn moved_fraction(
    before: &BTreeMap<String, RangeSet>,
    after: &BTreeMap<String, RangeSet>,
) -> f64 {
    let kept: f64 = before
        .iter()
        .filter_map(|(member, was)| {
            after
                .get(member)
                .map(|now| was.intersection(now).fraction())
        })
        .sum();
    1.0 - kept
}

#[cfg(test)]
mod tests {
    use cache::shard::fnv1a64;

    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("replica-{i}")).collect()
    }

    #[test]
    fn the_ranges_cover_the_space_exactly_once() {
        for n in 1..=7 {
            let assignment = assign(&names(n));
            let all = assignment
                .values()
                .fold(RangeSet::empty(), |acc, r| acc.union(r));
            assert_eq!(all, RangeSet::all(), "n={n}");
            let total: f64 = assignment.values().map(RangeSet::fraction).sum();
            assert!((total - 1.0).abs() < 1e-9);
            for (a, ra) in &assignment {
                assert!((ra.fraction() - 1.0 / n as f64).abs() < 1e-9, "n={n} {a}");
                assert_eq!(ra.ranges().len(), 1);
                for (b, rb) in &assignment {
                    assert!(a == b || !ra.overlaps(rb), "{a} and {b} overlap");
                }
            }
        }
        assert!(assign(&[]).is_empty());
    }

    #[test]
    fn what_moves_on_a_join_and_a_leave() {
        // 3 -> 4: the newcomer's place in the order decides; 1/4 is the minimum any
        // scheme can reach.
        let three = assign(&names(3));
        for (newcomer, expected) in [
            ("a-first", 0.5),
            ("replica-0a", 1.0 / 3.0),
            ("replica-1a", 1.0 / 3.0),
            ("replica-9", 0.5),
        ] {
            let mut members = names(3);
            members.push(newcomer.to_string());
            let moved = moved_fraction(&three, &assign(&members));
            assert!((moved - expected).abs() < 1e-9, "{newcomer}: {moved}");
        }
        // 4 -> 3 (replica-1 leaves): its quarter, and a twelfth shifted to replica-0.
        let four = assign(&names(4));
        let remaining: Vec<String> = names(4).into_iter().filter(|m| m != "replica-1").collect();
        let moved = moved_fraction(&four, &assign(&remaining));
        assert!((moved - 1.0 / 3.0).abs() < 1e-9, "{moved}");
    }

    /// splitmix64's finaliser: spreads the ring's points (FNV-1a of "m#0", "m#1", ...
    /// differ only in their low bytes' products, so its raw values cluster).
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The alternative measured against: a consistent-hash ring with `points` per
    /// member; a hash belongs to the first point at or after it (wrapping).
    fn ring(members: &[String], points: usize) -> BTreeMap<String, RangeSet> {
        let mut ring: Vec<(u64, &String)> = members
            .iter()
            .flat_map(|m| {
                (0..points).map(move |i| (mix(fnv1a64(format!("{m}#{i}").as_bytes())), m))
            })
            .collect();
        ring.sort();
        let mut out: BTreeMap<String, Vec<HashRange>> = BTreeMap::new();
        let mut start = 0u64;
        for &(point, member) in &ring {
            out.entry(member.clone())
                .or_default()
                .extend(HashRange::new(start, point));
            start = point.wrapping_add(1);
        }
        // The wrap-around: from the last point to the top belongs to the first point.
        if let (Some(&(_, first)), Some(&(last, _))) = (ring.first(), ring.last())
            && last < u64::MAX
        {
            out.entry(first.clone())
                .or_default()
                .extend(HashRange::new(last + 1, u64::MAX));
        }
        out.into_iter()
            .map(|(m, r)| (m, RangeSet::from_ranges(r)))
            .collect()
    }

    #[test]
    fn the_ring_moves_less_but_is_uneven_and_long() {
        // 200 groups of differently named members, 3 -> 4 each: what moves, how big the
        // largest share is against 1/N, how many selector terms the largest member has.
        let (mut moved_sum, mut worst_ratio, mut ratio_sum, mut terms_max) = (0.0, 0.0f64, 0.0, 0);
        let groups = 200;
        for g in 0..groups {
            let names =
                |n: usize| -> Vec<String> { (0..n).map(|i| format!("g{g}-replica-{i}")).collect() };
            let (three, four) = (ring(&names(3), 16), ring(&names(4), 16));
            let moved = moved_fraction(&three, &four);
            // Only what the newcomer takes moves.
            let newcomer = four[&format!("g{g}-replica-3")].fraction();
            assert!((moved - newcomer).abs() < 1e-9, "{moved} vs {newcomer}");
            moved_sum += moved;
            let largest = four.values().map(RangeSet::fraction).fold(0.0, f64::max);
            worst_ratio = worst_ratio.max(largest * 4.0);
            ratio_sum += largest * 4.0;
            terms_max = terms_max.max(four.values().map(|r| r.ranges().len()).max().unwrap_or(0));
        }
        println!(
            "ring, 16 points, 3 -> 4 over {groups} groups: moved {:.3} on average; largest share {:.2}x of 1/4 on average, {:.2}x at worst; up to {terms_max} terms",
            moved_sum / f64::from(groups),
            ratio_sum / f64::from(groups),
            worst_ratio,
        );
        // The ring moves about the minimum (1/4) but its largest member holds more than
        // 1/4 and needs many terms; equal ranges hold exactly 1/4 in one term.
        assert!(moved_sum / f64::from(groups) < 0.3);
        assert!(ratio_sum / f64::from(groups) > 1.1);
        assert!(terms_max > 8);
        for r in assign(&names(4)).values() {
            assert!((r.fraction() - 0.25).abs() < 1e-12 && r.ranges().len() == 1);
        }
    }
}
