//! A connection a forked process still shares with its parent: the hazard of a Redis client the
//! application connected before `fork()` (webman's master opening its pool before it forks the
//! workers) and then lent to a store in the child. Both processes write on one socket and read each
//! other's replies: a lock script answered with another command's reply, a reply that never comes.
//!
//! Deadbolt cannot see a PHP client's socket (phpredis does not show it), so it asks the kernel,
//! through `/proc`, about the process's connections to the client's server (a TCP port, or a unix
//! socket) and whether the parent holds the very same sockets (the same inode in `/proc/PID/fd`):
//!
//! - [`Sharing::WithParent`]: every connection of this process to that server is open in the
//!   parent too, so the client's is one of them. A fact, not a guess: the store refuses to use it.
//! - [`Sharing::Maybe`]: some are shared and some are this process's own; the client's may be
//!   either. Never refused; an error out of step on it names the likely cause.
//! - [`Sharing::Unknown`]: `/proc` cannot tell (the parent runs as another user, no `/proc`). The
//!   same, for the errors that only a shared connection explains.
//! - [`Sharing::Alone`]: no connection to that server is shared with the parent: a client the
//!   process connected itself (after the fork, or a reconnect), or one the parent closed.
//!
//! Cost: nothing in a process that was not forked since the module loaded (its PHP objects are its
//! own). In a forked one, the sockets it shares with its parent are listed once (a socket opened
//! later is never the parent's, and a shared one can only go), and when none is a connection (a
//! php-fpm worker shares only its master's listening socket) that answers every later call; else
//! each call through a client whose server one of them reaches lists the sockets again (one found
//! closed since, here or in the parent, is left out from then on).
//! Limits: only the parent is asked (a connection the parent closed but a sibling worker still holds
//! counts as the process's own); a client whose verdict was [`Sharing::Maybe`] is not asked again
//! in that process.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use crate::process::{forked_since_load, PerProcess};
use crate::sync::Mutex;

/// Where a client's connection goes, as far as the kernel's tables can tell it apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A TCP connection to `remote_port`; `local_port` when the client could tell its own end
    /// (Predis' stream), which makes the connection exact.
    Tcp {
        remote_port: u16,
        local_port: Option<u16>,
    },
    /// A connected unix stream socket (the client end has no path: any of the process's).
    Unix,
}

/// Whether a client's connection is shared with the parent process (see the module's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    Alone,
    WithParent { parent: u32 },
    Maybe { parent: u32 },
    Unknown { parent: u32 },
}

impl Sharing {
    /// The refusal of a client whose connection is shared with the parent: `None` otherwise. `name`
    /// is the client's (`\Redis(host:port)`), never a credential.
    pub fn refusal(self, name: &str) -> Option<String> {
        let Sharing::WithParent { parent } = self else {
            return None;
        };
        Some(format!(
            "Redis through {name}: this client was connected before fork(): process {parent}, \
             this one's parent, holds the same connection, and the two processes would read each \
             other's replies (one could take the other's \"acquired\" for its own). {WHAT_TO_DO}"
        ))
    }

    /// What to add to an error through the client: when the connection may be shared with the
    /// parent, or (`out_of_step`: a reply that is not the one asked for, or none) when that cannot
    /// be told, a shared connection as the likely cause, and what to do.
    pub fn hint(self, out_of_step: bool) -> Option<String> {
        match self {
            Sharing::Maybe { parent } => Some(format!(
                " (Likely cause: this process shares connections to that server with process \
                 {parent}, its parent, opened before fork(); if this client is one of them, the \
                 two processes read each other's replies. {WHAT_TO_DO})"
            )),
            Sharing::Unknown { parent } if out_of_step => Some(format!(
                " (Likely cause, if this client was connected before fork(): two processes \
                 reading each other's replies on one connection; Deadbolt cannot tell here, \
                 process {parent}'s descriptors are not readable. {WHAT_TO_DO})"
            )),
            _ => None,
        }
    }
}

/// The advice every message of this module ends with.
const WHAT_TO_DO: &str = "Connect the client in each worker, after the fork (webman: in \
    onWorkerStart), or give the store a DSN (new RedisStore('redis://host:6379')), which Deadbolt \
    connects in each process by itself.";

/// Whether the connection of a client to `peer` is shared with the parent process. `peer` is asked
/// only when the process could share one (it costs the client's PHP calls); `None` (not connected,
/// or a client with many connections) is [`Sharing::Alone`]. `client` identifies the client object
/// in this process, for the [`Sharing::Maybe`] verdicts kept.
pub fn sharing(client: u64, peer: impl FnOnce() -> Option<Peer>) -> Sharing {
    if !forked_since_load() {
        return Sharing::Alone;
    }
    let inherited = INHERITED.get_or_init(Inherited::listed);
    let parent = inherited.parent;
    let Some(connections) = &inherited.connections else {
        return Sharing::Unknown { parent };
    };
    if connections.lock().is_empty() {
        return Sharing::Alone;
    }
    if inherited.maybe.lock().contains(&client) {
        return Sharing::Maybe { parent };
    }
    let Some(peer) = peer() else {
        return Sharing::Alone;
    };
    if !connections.lock().iter().any(|c| c.reaches(peer)) {
        return Sharing::Alone;
    }
    let verdict = now(parent, peer, connections);
    if matches!(verdict, Sharing::Maybe { .. }) {
        inherited.maybe.lock().insert(client);
    }
    verdict
}

/// The connections of this process shared with its parent when first asked in this process.
struct Inherited {
    parent: u32,
    /// `None`: `/proc` could not tell. Those found gone since (closed here or in the parent) are
    /// left out: a connection stops being shared, never starts.
    connections: Option<Mutex<Vec<Connection>>>,
    /// The clients found [`Sharing::Maybe`].
    maybe: Mutex<HashSet<u64>>,
}

static INHERITED: PerProcess<Inherited> = PerProcess::new();

impl Inherited {
    fn listed() -> Self {
        // SAFETY: getppid has no preconditions and cannot fail.
        let parent = u32::try_from(unsafe { libc::getppid() }).unwrap_or(0);
        let connections = socket_inodes(Path::new("/proc/self/fd")).and_then(|mine| {
            let theirs = socket_inodes(&Path::new("/proc").join(parent.to_string()).join("fd"))?;
            let shared: HashSet<u64> = mine.intersection(&theirs).copied().collect();
            if shared.is_empty() {
                return Some(Vec::new());
            }
            Some(connections(&shared))
        });
        let connections = connections.map(Mutex::new);
        Inherited {
            parent,
            connections,
            maybe: Mutex::new(HashSet::new()),
        }
    }
}

/// The verdict from `/proc` as it is now, for a process with connections to `peer` inherited;
/// those of `inherited` no longer shared are left out of it.
fn now(parent: u32, peer: Peer, inherited: &Mutex<Vec<Connection>>) -> Sharing {
    let listed = socket_inodes(Path::new("/proc/self/fd")).and_then(|mine| {
        let theirs = socket_inodes(&Path::new("/proc").join(parent.to_string()).join("fd"))?;
        Some((mine, theirs))
    });
    let Some((mine, theirs)) = listed else {
        return Sharing::Unknown { parent };
    };
    inherited
        .lock()
        .retain(|c| mine.contains(&c.inode) && theirs.contains(&c.inode));
    let to_peer: Vec<Connection> = connections(&mine)
        .into_iter()
        .filter(|c| c.reaches(peer))
        .collect();
    let shared = to_peer.iter().filter(|c| theirs.contains(&c.inode)).count();
    match shared {
        0 => Sharing::Alone,
        n if n == to_peer.len() => Sharing::WithParent { parent },
        _ => Sharing::Maybe { parent },
    }
}

/// A connected socket of this process, from the kernel's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Connection {
    inode: u64,
    peer: Peer,
}

impl Connection {
    /// Whether this could be a client's connection to `peer`.
    fn reaches(&self, peer: Peer) -> bool {
        match (self.peer, peer) {
            (
                Peer::Tcp {
                    remote_port,
                    local_port: Some(local),
                },
                Peer::Tcp {
                    remote_port: port,
                    local_port,
                },
            ) => remote_port == port && local_port.is_none_or(|l| l == local),
            (Peer::Unix, Peer::Unix) => true,
            _ => false,
        }
    }
}

/// The inodes of the sockets among a process's descriptors (`/proc/PID/fd`); `None` when the
/// directory cannot be read (another user's process, no `/proc`).
fn socket_inodes(fd_dir: &Path) -> Option<HashSet<u64>> {
    let mut inodes = HashSet::new();
    for entry in fs::read_dir(fd_dir).ok()? {
        let Ok(entry) = entry else { continue };
        // A descriptor closed meanwhile has no link any more: not a socket of the process.
        if let Some(inode) = fs::read_link(entry.path())
            .ok()
            .and_then(|target| socket_inode(&target.to_string_lossy()))
        {
            inodes.insert(inode);
        }
    }
    Some(inodes)
}

/// `socket:[12345]` -> 12345.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The connected TCP and unix stream sockets among `inodes`, from this network namespace's tables.
fn connections(inodes: &HashSet<u64>) -> Vec<Connection> {
    let mut found = Vec::new();
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        if let Ok(text) = fs::read_to_string(table) {
            found.extend(tcp_connections(&text).filter(|c| inodes.contains(&c.inode)));
        }
    }
    if let Ok(text) = fs::read_to_string("/proc/self/net/unix") {
        found.extend(unix_connections(&text).filter(|c| inodes.contains(&c.inode)));
    }
    found
}

/// `/proc/net/tcp` or `tcp6`: every socket but the listening ones (state `0A`), with its ports. Not
/// only the established ones: a client's connection the server closed (`CLOSE_WAIT`) is still the
/// client's, and leaving it out could make the inherited ones look like all there is.
fn tcp_connections(table: &str) -> impl Iterator<Item = Connection> + '_ {
    const LISTEN: &str = "0A";
    table.lines().skip(1).filter_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (local, remote, state, inode) = (
            fields.get(1)?,
            fields.get(2)?,
            fields.get(3)?,
            fields.get(9)?,
        );
        if *state == LISTEN {
            return None;
        }
        Some(Connection {
            inode: inode.parse().ok()?,
            peer: Peer::Tcp {
                remote_port: hex_port(remote)?,
                local_port: Some(hex_port(local)?),
            },
        })
    })
}

/// `0100007F:1F90` -> 8080.
fn hex_port(address: &str) -> Option<u16> {
    u16::from_str_radix(address.rsplit_once(':')?.1, 16).ok()
}

/// `/proc/net/unix`: the stream sockets (type `0001`) but the listening ones (flag `__SO_ACCEPTCON`),
/// whatever their state, as for TCP.
fn unix_connections(table: &str) -> impl Iterator<Item = Connection> + '_ {
    const STREAM: &str = "0001";
    const LISTENING: u32 = 0x0001_0000;
    table.lines().skip(1).filter_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (flags, kind, inode) = (fields.get(3)?, fields.get(4)?, fields.get(6)?);
        if *kind != STREAM || u32::from_str_radix(flags, 16).ok()? & LISTENING != 0 {
            return None;
        }
        Some(Connection {
            inode: inode.parse().ok()?,
            peer: Peer::Unix,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::unix::net::{UnixListener, UnixStream};

    /// Runs `child` in a forked process while the parent keeps everything open; what it returned.
    fn in_child(child: impl FnOnce() -> Sharing) -> Option<Sharing> {
        // The module loads (MINIT installs the fork hook) before any fork.
        crate::process::epoch();
        let mut fds = [0i32; 2];
        // SAFETY: plain pipe/fork/write/read/waitpid; the child computes, writes and _exits.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                let code: [u8; 5] = match child() {
                    Sharing::Alone => [0, 0, 0, 0, 0],
                    Sharing::WithParent { parent } => with(1, parent),
                    Sharing::Maybe { parent } => with(2, parent),
                    Sharing::Unknown { parent } => with(3, parent),
                };
                libc::write(fds[1], code.as_ptr().cast(), 5);
                libc::_exit(0);
            }
            let mut code = [9u8; 5];
            assert_eq!(libc::read(fds[0], code.as_mut_ptr().cast(), 5), 5);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
            let parent = u32::from_le_bytes([code[1], code[2], code[3], code[4]]);
            match code[0] {
                0 => Some(Sharing::Alone),
                1 => Some(Sharing::WithParent { parent }),
                2 => Some(Sharing::Maybe { parent }),
                3 => Some(Sharing::Unknown { parent }),
                _ => None,
            }
        }
    }

    fn with(kind: u8, parent: u32) -> [u8; 5] {
        let p = parent.to_le_bytes();
        [kind, p[0], p[1], p[2], p[3]]
    }

    fn tcp(port: u16) -> Peer {
        Peer::Tcp {
            remote_port: port,
            local_port: None,
        }
    }

    fn local_port(stream: &TcpStream) -> Option<u16> {
        stream.local_addr().ok().map(|a| a.port())
    }

    #[test]
    fn a_process_never_forked_shares_nothing() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let _client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let asked = std::cell::Cell::new(false);
        // The test binary loaded "the module" (its first epoch) and was not forked since.
        assert_eq!(
            sharing(1, || {
                asked.set(true);
                Some(tcp(port))
            }),
            Sharing::Alone
        );
        assert!(!asked.get(), "the client is not even asked");
    }

    #[test]
    fn a_connection_opened_before_fork_and_still_open_in_the_parent_is_shared() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let me = std::process::id();
        assert_eq!(
            in_child(|| sharing(1, || Some(tcp(port)))),
            Some(Sharing::WithParent { parent: me })
        );
        // Exact when the client tells its own end: another connection's port is not this one.
        let exact = Peer::Tcp {
            remote_port: port,
            local_port: local_port(&client),
        };
        assert_eq!(
            in_child(|| sharing(1, || Some(exact))),
            Some(Sharing::WithParent { parent: me })
        );
        // Another server's port: nothing inherited reaches it.
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let other_port = other.local_addr().unwrap().port();
        assert_eq!(
            in_child(|| sharing(1, || Some(tcp(other_port)))),
            Some(Sharing::Alone)
        );
        drop(client);
    }

    #[test]
    fn a_connection_the_child_opens_itself_is_its_own() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        assert_eq!(
            in_child(|| {
                let own = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let verdict = sharing(1, || Some(tcp(port)));
                drop(own);
                verdict
            }),
            Some(Sharing::Alone)
        );
    }

    #[test]
    fn an_inherited_connection_beside_one_of_the_childs_own_may_be_either() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let inherited = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let me = std::process::id();
        assert_eq!(
            in_child(|| {
                let own = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let first = sharing(7, || Some(tcp(port)));
                // Kept for that client: not asked again.
                let again = sharing(7, || None);
                // Told by its own end, the child's connection is its own.
                let exact = sharing(8, || {
                    Some(Peer::Tcp {
                        remote_port: port,
                        local_port: local_port(&own),
                    })
                });
                drop(own);
                if first == again && exact == Sharing::Alone {
                    first
                } else {
                    Sharing::Alone
                }
            }),
            Some(Sharing::Maybe { parent: me })
        );
        drop(inherited);
    }

    #[test]
    fn a_connection_the_child_closed_and_opened_again_is_its_own() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let inherited = TcpStream::connect(("127.0.0.1", port)).unwrap();
        assert_eq!(
            in_child(move || {
                // A reconnect: the inherited copy closed, a new connection opened.
                drop(inherited);
                let own = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let verdict = sharing(1, || Some(tcp(port)));
                drop(own);
                verdict
            }),
            Some(Sharing::Alone)
        );
    }

    /// The child's own connection that the server closed (`CLOSE_WAIT`) is still the child's: beside an
    /// inherited one, the client may be either, never "shared" for sure.
    #[test]
    fn a_connection_of_the_childs_own_the_server_closed_still_counts() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let inherited = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (_accepted, _) = server.accept().unwrap();
        let me = std::process::id();
        assert_eq!(
            in_child(|| {
                let own = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let (closed, _) = server.accept().unwrap();
                drop(closed);
                // The server's FIN makes the child's end CLOSE_WAIT (08).
                let local = format!(":{:04X} ", local_port(&own).unwrap_or(0));
                for _ in 0..1000 {
                    let table = fs::read_to_string("/proc/self/net/tcp").unwrap_or_default();
                    if table
                        .lines()
                        .any(|l| l.contains(&local) && l.split_whitespace().nth(3) == Some("08"))
                    {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                let verdict = sharing(1, || Some(tcp(port)));
                drop(own);
                verdict
            }),
            Some(Sharing::Maybe { parent: me })
        );
        drop(inherited);
    }

    /// Once found closed, an inherited connection is left out of the process's list for good. (The
    /// list, not whether the client is asked: the test binary's other threads may hold connections of
    /// their own at the fork, which the child inherits too and which keep the list from being empty.)
    #[test]
    fn an_inherited_connection_found_closed_is_not_asked_about_again() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let inherited = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let me = std::process::id();
        let still_listed = || {
            INHERITED
                .get()
                .and_then(|i| i.connections.as_ref())
                .is_some_and(|c| c.lock().iter().any(|c| c.reaches(tcp(port))))
        };
        assert_eq!(
            in_child(move || {
                let before = sharing(1, || Some(tcp(port)));
                let listed_before = still_listed();
                drop(inherited);
                let own = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let after = sharing(1, || Some(tcp(port)));
                let listed_after = still_listed();
                drop(own);
                match (before, listed_before, after, listed_after) {
                    (Sharing::WithParent { .. }, true, Sharing::Alone, false) => before,
                    _ => Sharing::Alone,
                }
            }),
            Some(Sharing::WithParent { parent: me })
        );
    }

    #[test]
    fn a_unix_socket_connection_is_told_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("redis.sock");
        let _server = UnixListener::bind(&path).unwrap();
        let inherited = UnixStream::connect(&path).unwrap();
        let me = std::process::id();
        assert_eq!(
            in_child(|| sharing(1, || Some(Peer::Unix))),
            Some(Sharing::WithParent { parent: me })
        );
        drop(inherited);
        assert_eq!(
            in_child(|| {
                let own = UnixStream::connect(&path).unwrap();
                let verdict = sharing(1, || Some(Peer::Unix));
                drop(own);
                verdict
            }),
            Some(Sharing::Alone)
        );
    }

    #[test]
    fn the_kernels_tables_are_read_as_written() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
            \x20  0: 0100007F:C350 0100007F:18EB 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4 30 10 -1\n\
            \x20  1: 00000000:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0 100 0 0 10 0\n\
            \x20  2: 0100007F:C352 0100007F:18EB 08 00000000:00000000 00:00000000 00000000  1000        0 4444 1 0 20 4 30 10 -1\n";
        assert_eq!(
            tcp_connections(tcp).collect::<Vec<_>>(),
            vec![
                Connection {
                    inode: 4242,
                    peer: Peer::Tcp {
                        remote_port: 6379,
                        local_port: Some(50000)
                    }
                },
                Connection {
                    inode: 4444,
                    peer: Peer::Tcp {
                        remote_port: 6379,
                        local_port: Some(50002)
                    }
                }
            ],
            "the listening socket is no connection; one the server closed (CLOSE_WAIT) is"
        );
        let tcp6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
            \x20  0: 00000000000000000000000001000000:C351 00000000000000000000000001000000:18EB 01 00000000:00000000 00:00000000 00000000  1000        0 77 1 0 20 4 30 10 -1\n";
        assert_eq!(
            tcp_connections(tcp6).map(|c| c.peer).collect::<Vec<_>>(),
            vec![Peer::Tcp {
                remote_port: 6379,
                local_port: Some(50001)
            }]
        );
        let unix = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000000000000000: 00000002 00000000 00010000 0001 01 100 /run/redis.sock\n\
            0000000000000000: 00000003 00000000 00000000 0001 03 101\n\
            0000000000000000: 00000003 00000000 00000000 0002 03 102\n\
            0000000000000000: 00000002 00000000 00000000 0001 04 103\n";
        assert_eq!(
            unix_connections(unix).map(|c| c.inode).collect::<Vec<_>>(),
            vec![101, 103],
            "a listening socket and a datagram socket are no connections"
        );
        assert_eq!(socket_inode("socket:[123]"), Some(123));
        assert_eq!(socket_inode("pipe:[123]"), None);
    }

    #[test]
    fn every_message_says_what_to_do_and_names_the_parent() {
        let refusal = Sharing::WithParent { parent: 4321 }
            .refusal("\\Redis(127.0.0.1:6379)")
            .unwrap_or_default();
        assert!(refusal.starts_with("Redis through \\Redis(127.0.0.1:6379): this client was connected before fork(): process 4321"), "{refusal}");
        let maybe = Sharing::Maybe { parent: 4321 }
            .hint(false)
            .unwrap_or_default();
        let unknown = Sharing::Unknown { parent: 4321 }
            .hint(true)
            .unwrap_or_default();
        for text in [&refusal, &maybe, &unknown] {
            for words in ["before fork()", "4321", "onWorkerStart", "a DSN"] {
                assert!(text.contains(words), "{text}");
            }
        }
        assert_eq!(Sharing::Alone.refusal("x"), None);
        assert_eq!(Sharing::Maybe { parent: 1 }.refusal("x"), None);
        assert_eq!(Sharing::Alone.hint(true), None);
        assert_eq!(Sharing::WithParent { parent: 1 }.hint(true), None);
        // Unknown names a cause only for the errors a shared connection explains.
        assert_eq!(Sharing::Unknown { parent: 1 }.hint(false), None);
    }
}
