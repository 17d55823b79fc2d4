//! What the QEMU driver reads from `/proc`: is a pid still our QEMU, how much CPU
//! time and resident memory does it use, and how to kill it.
//!
//! A pidfile alone cannot be trusted after a controller restart: the QEMU it names
//! may have died and the pid been reused by an unrelated process, which we must
//! never report as our server, let alone `SIGKILL`. So "is this our process" is
//! always decided from `/proc/<pid>/cmdline`: it must contain arguments only our
//! launch puts there (the server's disk path and its `-uuid`). A zombie has an
//! empty cmdline, so a dead-but-unreaped QEMU also counts as gone.

use std::fs;
use std::path::Path;

use rustix::process::{Pid, Signal, kill_process};

/// A pid read from a pidfile, if it holds a plausible one (> 1: never 0, which
/// `kill` would treat as "my process group", nor init).
pub(crate) fn read_pidfile(path: &Path) -> Option<i32> {
    let text = fs::read_to_string(path).ok()?;
    let pid: i32 = text.trim().parse().ok()?;
    (pid > 1).then_some(pid)
}

/// The arguments of a live process, or `None` when it is gone (or a zombie).
pub(crate) fn cmdline(pid: i32) -> Option<Vec<String>> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    if raw.is_empty() {
        return None;
    }
    Some(
        raw.split(|b| *b == 0)
            .filter(|arg| !arg.is_empty())
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect(),
    )
}

/// Whether `args` is the command line of the QEMU we launched for a server: its
/// exact `-drive` argument (which names the server's disk) and, when the id is known,
/// `-uuid <id>`.
pub(crate) fn is_our_qemu(args: &[String], id: Option<&str>, drive_arg: &str) -> bool {
    let has_drive = args
        .windows(2)
        .any(|w| w[0] == "-drive" && w[1] == drive_arg);
    let has_id = match id {
        Some(id) => args.windows(2).any(|w| w[0] == "-uuid" && w[1] == id),
        None => true,
    };
    has_drive && has_id
}

/// User + system CPU time of a process, in clock ticks, from `/proc/<pid>/stat`.
pub(crate) fn cpu_ticks(pid: i32) -> Option<u64> {
    parse_stat_cpu_ticks(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// utime + stime (fields 14 and 15) of a `/proc/<pid>/stat` line. The command name
/// (field 2) is in parentheses and may itself contain spaces and `)`, so fields are
/// counted from the *last* `)`.
pub(crate) fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace().skip(11); // field 3 (state) is index 0
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Whether `pid` is a QEMU that is still exiting: killed or crashed, its memory (and
/// so its cmdline) already released, but some of its threads not yet gone. Linux's
/// `do_exit` drops a thread's address space before its file table, and the files
/// (with QEMU's lock on the disk image) are closed only when the *last* thread of the
/// process drops the table; until then a new QEMU on the same disk fails with "Failed
/// to get write lock". QEMU runs many threads, and the main one may already show as a
/// zombie (`Z`: Linux keeps a thread group's leader as a zombie until every other
/// thread has exited) while the others still hold the files, so the process counts as
/// exiting until its leader is a zombie *and* is its only thread left. The command
/// name in `/proc/<pid>/stat` survives until the end, so a reused pid of another
/// program is not mistaken for it.
pub(crate) fn is_exiting_qemu(pid: i32) -> bool {
    is_exiting(pid, "qemu")
}

/// [`is_exiting_qemu`] for a program whose command name starts with `comm_prefix`.
fn is_exiting(pid: i32, comm_prefix: &str) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some((comm, state)) = parse_stat_comm_state(&stat) else {
        return false;
    };
    // Threads still listed under the process; an unreadable directory (the process
    // was reaped meanwhile) counts as none left.
    let threads = fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |dir| dir.count());
    comm.starts_with(comm_prefix) && cmdline(pid).is_none() && still_exiting(state, threads)
}

/// Whether a process whose address space is gone is still exiting, from its main
/// thread's state and the number of its threads still listed (see
/// [`is_exiting_qemu`]): a zombie main thread with other threads left is.
fn still_exiting(state: char, threads: usize) -> bool {
    !matches!(state, 'Z' | 'X') || threads > 1
}

/// The command name (field 2, without its parentheses) and state (field 3) of a
/// `/proc/<pid>/stat` line.
pub(crate) fn parse_stat_comm_state(stat: &str) -> Option<(&str, char)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let state = stat.get(close + 1..)?.trim_start().chars().next()?;
    Some((stat.get(open + 1..close)?, state))
}

/// Resident memory of a process in bytes, from `VmRSS` in `/proc/<pid>/status`.
pub(crate) fn rss_bytes(pid: i32) -> Option<u64> {
    parse_status_rss_bytes(&fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// The `VmRSS:  1234 kB` line of a `/proc/<pid>/status`, in bytes.
pub(crate) fn parse_status_rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut parts = line["VmRSS:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => value.checked_mul(1024),
        _ => None,
    }
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, almost always 100).
pub(crate) fn clock_ticks_per_second() -> u64 {
    let ticks = rustix::param::clock_ticks_per_second();
    if ticks > 0 { ticks } else { 100 }
}

/// Sends SIGKILL. Callers have checked with [`is_our_qemu`] that `pid` is ours.
pub(crate) fn kill(pid: i32) -> std::io::Result<()> {
    // pid > 1 by construction (read_pidfile); checked again, as a pid <= 0 would
    // make kill(2) signal a process group or every process we may signal.
    let pid = (pid > 0)
        .then(|| Pid::from_raw(pid))
        .flatten()
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    Ok(kill_process(pid, Signal::KILL)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `USER_HZ`, the unit of `/proc/<pid>/stat`'s times, is 100 in the Linux ABI of
    /// x86-64 and arm64 (`getconf CLK_TCK`).
    #[test]
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    fn clock_ticks_per_second_is_user_hz() {
        assert_eq!(clock_ticks_per_second(), 100);
    }

    #[test]
    fn command_name_and_state() {
        let stat = "4242 (qemu-system-x86) R 1 4242 4242 0 -1 4194624";
        assert_eq!(parse_stat_comm_state(stat), Some(("qemu-system-x86", 'R')));
        let odd = "7 (a) b) Z 1 7";
        assert_eq!(parse_stat_comm_state(odd), Some(("a) b", 'Z')));
        assert_eq!(parse_stat_comm_state("garbage"), None);
        // This process is alive and not QEMU; pid 0 has no /proc entry.
        assert!(!is_exiting_qemu(std::process::id() as i32));
        assert!(!is_exiting_qemu(0));
    }

    /// The state the disk-lock race needs (found by a QEMU restart failing with "Failed
    /// to get write lock" under load): a main thread already a zombie while another
    /// thread of the process still runs. Made with Python, whose main thread leaves
    /// through the raw `exit` system call (that thread only, not the process; 60 is its
    /// number on x86-64, the architecture the QEMU driver runs guests for).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn a_zombie_main_thread_with_threads_left_is_still_exiting() {
        let script = "import ctypes, threading, time\n\
                      threading.Thread(target=time.sleep, args=(60,)).start()\n\
                      ctypes.CDLL(None).syscall(60, 0)\n";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .spawn()
            .expect("python3");
        let pid = child.id() as i32;
        let zombie_leader = || {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parse_stat_comm_state(&stat).map(|(_, state)| state == 'Z'))
                .unwrap_or(false)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !zombie_leader() {
            assert!(
                std::time::Instant::now() < deadline,
                "main thread never exited"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            cmdline(pid).is_none(),
            "the address space is gone with the main thread"
        );
        assert!(is_exiting(pid, "python"), "a thread is left: still exiting");
        assert!(!is_exiting(pid, "qemu"), "another program's pid");
        child.kill().expect("kill");
        child.wait().expect("reaped");
        assert!(!is_exiting(pid, "python"), "gone");
        assert!(!still_exiting('Z', 1) && !still_exiting('X', 0));
        assert!(still_exiting('R', 1) && still_exiting('D', 3) && still_exiting('Z', 2));
    }

    #[test]
    fn stat_fields_are_counted_after_the_last_paren() {
        let stat = "4242 (qemu) x) y) S 1 4242 4242 0 -1 4194624 100 0 0 0 \
                    7 5 0 0 20 0 3 0 1234 567890 1000";
        assert_eq!(parse_stat_cpu_ticks(stat), Some(12));
        assert_eq!(parse_stat_cpu_ticks("4242 (qemu"), None);
        assert_eq!(parse_stat_cpu_ticks("4242 (qemu) S 1 2"), None);
    }

    #[test]
    fn vm_rss_is_read_in_bytes() {
        let status = "Name:\tqemu\nVmPeak:\t 9 kB\nVmRSS:\t   27796 kB\nThreads:\t3\n";
        assert_eq!(parse_status_rss_bytes(status), Some(27796 * 1024));
        assert_eq!(parse_status_rss_bytes("Name:\tkthreadd\n"), None);
        assert_eq!(parse_status_rss_bytes("VmRSS:\t12 MB\n"), None);
    }

    #[test]
    fn our_qemu_needs_the_disk_and_the_uuid() {
        let drive = "file=/s/vm/disk.qcow2,if=virtio,format=qcow2";
        let args: Vec<String> = ["qemu-system-x86_64", "-uuid", "u-1", "-drive", drive]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(is_our_qemu(&args, Some("u-1"), drive));
        assert!(is_our_qemu(&args, None, drive));
        assert!(!is_our_qemu(&args, Some("u-2"), drive));
        assert!(!is_our_qemu(
            &args,
            Some("u-1"),
            "file=/other/disk.qcow2,if=virtio,format=qcow2"
        ));
        // The disk path alone, in another position, is not enough.
        let other = [
            "sleep",
            "file=/s/vm/disk.qcow2,if=virtio,format=qcow2",
            "-uuid",
            "u-1",
        ];
        let other: Vec<String> = other.iter().map(|s| s.to_string()).collect();
        assert!(!is_our_qemu(&other, Some("u-1"), drive));
    }

    #[test]
    fn this_process_is_visible_and_implausible_pids_are_rejected() {
        let me = std::process::id() as i32;
        assert!(cmdline(me).is_some());
        assert!(cpu_ticks(me).is_some());
        assert!(rss_bytes(me).unwrap() > 0);
        let dir = std::env::temp_dir().join(format!("vm-driver-pidfile-{me}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (text, want) in [
            ("1234\n", Some(1234)),
            ("0", None),
            ("1", None),
            ("-5", None),
            ("x", None),
        ] {
            std::fs::write(dir.join("pid"), text).unwrap();
            assert_eq!(read_pidfile(&dir.join("pid")), want, "{text:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
