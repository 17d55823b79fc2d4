//! How the process heap grows: in 64 MiB steps, not a page at a time.
//!
//! A controller's memory is mostly its informers' caches, built in a burst at start-up
//! (tens of thousands of objects decoded in a second) on Tokio's worker threads. glibc
//! gives each thread an arena of its own, and grows a thread arena by exactly the
//! pages the next allocation needs, with one `mprotect` call each: an initial sync of
//! 20,000 ConfigMaps (170 MiB) made **33,427** `mprotect` calls, each also splitting
//! and merging the arena's memory mapping in the kernel; that was about a fifth of the
//! sync's CPU (docs/benchmarks.md). glibc's `M_TOP_PAD` sets how much more than needed
//! to reserve at each growth; with 64 MiB the same sync makes 14 calls.
//!
//! Reserving is not using: the pages of a grown arena cost no memory until they are
//! written, so resident memory is unchanged (measured: the same peak RSS). Go's runtime
//! reserves its heap in 64 MiB arenas for the same reason.

/// How much the heap grows past what an allocation needs.
pub const TOP_PAD: usize = 64 << 20;

/// Makes glibc grow the heap [`TOP_PAD`] at a time (see the module docs). Returns
/// whether the setting was applied: false on other C libraries (musl, macOS), which
/// grow their heaps their own way.
///
/// Process-wide; call it first thing in `main`, before the Tokio runtime starts: a
/// thread arena takes the setting when it is created, and one created before keeps
/// growing page by page until its 64 MiB are used up (measured: 14,805 `mprotect`
/// calls instead of 14 when called after the runtime had started).
///
/// The crate's one `unsafe` item: `mallopt` is a glibc function that neither std nor
/// rustix wraps.
#[allow(unsafe_code)]
pub fn grow_heap_in_large_steps() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let pad = libc::c_int::try_from(TOP_PAD).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only stores the value in glibc's malloc parameters (checked
        // by the unit test `glibc_takes_the_setting` below).
        unsafe { libc::mallopt(libc::M_TOP_PAD, pad) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_the_setting() {
        assert!(super::grow_heap_in_large_steps());
        // Allocating and freeing afterwards works as before.
        let big = vec![1u8; 3 << 20];
        assert_eq!(big.iter().map(|&b| usize::from(b)).sum::<usize>(), 3 << 20);
    }
}
