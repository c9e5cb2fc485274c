//! Who holds a lock file and who waits for it, as the kernel tells (`/proc/locks`): each flock(2)
//! lock with the pid that took it and its mode, and each caller blocked in flock(2). flock keeps
//! no record of its own and Deadbolt writes none on this store's hot path, so the rest of an
//! origin comes from the holder's process: the host is this one, the label its environment's
//! (`DEADBOLT_LABEL`, else systemd's `INVOCATION_ID`, readable by its own user and root). When
//! it took the lock is not known here.
//!
//! A process that inherited a locked descriptor through fork() is not listed apart: the kernel
//! shows the pid that took the lock.

use std::io::{self, Read as _};

use crate::holder::{Holder, LockState, Origin, Waiter};
use crate::store::Mode;

/// One line of `/proc/locks` about our file: `N: [-> ]FLOCK ADVISORY WRITE|READ PID DEV:INO ...`.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    blocked: bool,
    mode: Mode,
    pid: u32,
}

/// Room reserved for `/proc/locks` before reading it.
const PROC_LOCKS_BUFFER: usize = 256 * 1024;

/// The flock(2) locks and blocked callers on the file `/proc/locks` names `file`.
pub fn state_of(file: &str) -> io::Result<LockState> {
    let locks = read_proc_locks()?;
    Ok(state_in(&locks, file, &this_host()))
}

/// The state of each file of `files` (as `/proc/locks` names them), from one read of it (an
/// operator's listing of a directory).
pub fn states_of(files: &[String]) -> io::Result<Vec<LockState>> {
    let locks = read_proc_locks()?;
    let host = this_host();
    Ok(files
        .iter()
        .map(|file| state_in(&locks, file, &host))
        .collect())
}

/// The state of `file` in the listing `locks`.
fn state_in(locks: &str, file: &str, host: &str) -> LockState {
    let mut state = LockState::default();
    for entry in locks.lines().filter_map(|line| parse(line, file)) {
        let origin = Origin {
            host: Some(host.to_owned()),
            pid: Some(entry.pid),
            label: label_of(entry.pid),
        };
        let token_digest = String::new();
        if entry.blocked {
            state.waiters.push(Waiter {
                token_digest,
                mode: entry.mode,
                origin,
                since: None,
            });
        } else {
            state.holders.push(Holder {
                token_digest,
                mode: entry.mode,
                origin,
                acquired_at: None,
                expires_at: None,
            });
        }
    }
    state
}

/// `/proc/locks` to its end, in as few read(2) calls as the kernel allows. The kernel lists it by
/// position, one pass per read (up to a page of lines, under its lock list's lock), so a listing
/// that fits in a page is one consistent snapshot; a longer one is read page by page, where a
/// lock taken or dropped elsewhere between two reads can shift a line out of sight (a forced
/// release does not depend on the count). Room for the whole listing up front: no small first
/// probe read splits it (std's `read_to_string` on an empty buffer reads 32 bytes first).
fn read_proc_locks() -> io::Result<String> {
    let mut listing = Vec::with_capacity(PROC_LOCKS_BUFFER);
    std::fs::File::open("/proc/locks")?.read_to_end(&mut listing)?;
    Ok(String::from_utf8_lossy(&listing).into_owned())
}

/// The entry of `line` when it is a flock(2) lock on `file`.
fn parse(line: &str, file: &str) -> Option<Entry> {
    let mut fields = line.split_whitespace().skip(1).peekable();
    let blocked = fields.next_if_eq(&"->").is_some();
    let (kind, _advisory, mode, pid, on) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    if kind != "FLOCK" || on != file {
        return None;
    }
    let mode = match mode {
        "WRITE" => Mode::Exclusive,
        "READ" => Mode::Shared,
        _ => return None,
    };
    Some(Entry {
        blocked,
        mode,
        pid: pid.parse().ok()?,
    })
}

/// This host's name, as records give it.
fn this_host() -> String {
    crate::holder::Origin::here(None).host.unwrap_or_default()
}

/// The label in process `pid`'s environment, if it can be read.
pub(crate) fn label_of(pid: u32) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    crate::holder::label_from_environ(&environ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_about_the_file_are_read_others_skipped() {
        let file = "fe:00:10641473";
        let holder = parse("1: FLOCK  ADVISORY  WRITE 6332 fe:00:10641473 0 EOF", file);
        assert_eq!(
            holder,
            Some(Entry {
                blocked: false,
                mode: Mode::Exclusive,
                pid: 6332
            })
        );
        let waiter = parse("1: -> FLOCK  ADVISORY  READ 77 fe:00:10641473 0 EOF", file).unwrap();
        assert!(waiter.blocked);
        assert_eq!(waiter.mode, Mode::Shared);
        for other in [
            "2: FLOCK  ADVISORY  WRITE 6332 fe:00:10641442 0 EOF",
            "3: POSIX  ADVISORY  WRITE 6332 fe:00:10641473 0 EOF",
            "4: OFDLCK ADVISORY  READ  -1 fe:00:10641473 0 EOF",
            "garbage",
            "",
        ] {
            assert_eq!(parse(other, file), None, "{other}");
        }
    }
}
