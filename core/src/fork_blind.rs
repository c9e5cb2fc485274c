//! Sockets a forked child must never talk on: the connections of a client Deadbolt made for
//! itself through PHP (a `\PDO` from a PdoStore's DSN).
//!
//! A forked child inherits the parent's PHP objects with their sockets, and PHP frees every object
//! when the child ends, used or not: a `\PDO` then says goodbye to the server on the socket it
//! shares with the parent (PostgreSQL's Terminate, MySQL's COM_QUIT, a prepared statement's
//! DEALLOCATE), and the server ends the *parent's* session, under the parent's feet. Deadbolt
//! cannot reach into PDO, so it lists the sockets that appeared while it made its client
//! ([`sockets`] before and after) and, in a `pthread_atfork` child handler, puts `/dev/null` in
//! their place (`dup2`) in every child: the child's copy of the client then writes into nothing and
//! reads an end of file, and the parent's connection is left alone. Only a descriptor that is still
//! that very socket (same inode) is replaced; the parent lets go of an entry before it closes the
//! client ([`Blinded`]'s drop).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Once;

// std's atomics, not crate::sync's checked ones: the child handler runs right after fork(), outside every thread
// checker's view.
use std::sync::atomic::AtomicU64;

/// How many sockets can be watched at once (a few per store and process).
const SLOTS: usize = 64;
/// An empty slot.
const FREE: u64 = u64::MAX;

/// Each slot: the descriptor (or [`FREE`]), and the socket's inode.
static FDS: [AtomicU64; SLOTS] = [const { AtomicU64::new(FREE) }; SLOTS];
static INODES: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
static HOOK: Once = Once::new();

/// A socket of this process: its descriptor and inode.
pub type Socket = (i32, u64);

/// This process's sockets, from `/proc/self/fd` (empty where there is no `/proc`).
pub fn sockets() -> HashSet<Socket> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return HashSet::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let fd = entry.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(entry.path()).ok()?;
            let inode = target
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()?;
            Some((fd, inode))
        })
        .collect()
}

/// Sockets put out of every forked child's reach while this lives.
#[derive(Debug)]
pub struct Blinded {
    slots: Vec<usize>,
}

/// Puts `sockets` out of every child's reach (see the module); the ones past the table's room
/// are left as they are.
pub fn blind_in_children(sockets: impl IntoIterator<Item = Socket>) -> Blinded {
    HOOK.call_once(|| {
        // SAFETY: registers a child handler that only makes async-signal-safe calls (fstat, open,
        // dup2, close) and reads atomics.
        unsafe { libc::pthread_atfork(None, None, Some(blind_in_child)) };
    });
    let mut slots = Vec::new();
    for (fd, inode) in sockets {
        let Ok(fd) = u64::try_from(fd) else { continue };
        let free = (0..SLOTS).find(|&slot| {
            FDS[slot]
                .compare_exchange(FREE, fd, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        });
        if let Some(slot) = free {
            INODES[slot].store(inode, Ordering::Release);
            slots.push(slot);
        }
    }
    Blinded { slots }
}

impl Drop for Blinded {
    fn drop(&mut self) {
        for &slot in &self.slots {
            INODES[slot].store(0, Ordering::Release);
            FDS[slot].store(FREE, Ordering::Release);
        }
    }
}

extern "C" fn blind_in_child() {
    for slot in 0..SLOTS {
        let fd = FDS[slot].load(Ordering::Acquire);
        let inode = INODES[slot].load(Ordering::Acquire);
        let Ok(fd) = i32::try_from(fd) else { continue };
        if inode == 0 {
            continue;
        }
        // SAFETY: fstat into a zeroed stat; open, dup2 and close on descriptors; all
        // async-signal-safe, as a child handler after fork() must be.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut stat) != 0
                || stat.st_ino != inode
                || stat.st_mode & libc::S_IFMT != libc::S_IFSOCK
            {
                continue;
            }
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, fd);
                libc::close(null);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_child_writes_nothing_on_a_blinded_socket_and_the_parent_keeps_it() {
        let (mut ours, mut server) = UnixStream::pair().unwrap();
        let before = sockets();
        assert!(before.iter().any(|(fd, _)| *fd == ours.as_raw_fd()));
        let socket = *before
            .iter()
            .find(|(fd, _)| *fd == ours.as_raw_fd())
            .unwrap();
        let blinded = blind_in_children([socket]);

        // SAFETY: the child only writes on a descriptor and exits without unwinding.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let _ = ours.write_all(b"child");
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        ours.write_all(b"parent").unwrap();
        drop(ours);
        let mut heard = String::new();
        server.read_to_string(&mut heard).unwrap();
        assert_eq!(heard, "parent", "the child's write went nowhere");
        drop(blinded);
    }
}
