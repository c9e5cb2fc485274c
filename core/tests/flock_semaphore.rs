//! Semaphores in a FlockStore, on real files with real threads and processes: at most `limit`
//! weight held, weights, the waiter at the turnstile never passed (by a caller that does not wait
//! or a lighter waiter), a waiter giving up leaves nothing behind, callers that do not wait are
//! not refused while there is room, a lock and a semaphore on one name are two things, and a
//! forked child or a dead process never keeps or frees the wrong slots.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: an unwrap failing is the test failing

mod support;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use deadbolt_core::{
    semaphores, ErrorKind, FlockStore, Key, Lock, Mode, Silent, Slots, Store, StoreRef, Ttl, Wait,
};
use support::flock_child::{end, held_by_child};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

/// The semaphore side of a FlockStore of its own on `dir` (each thread makes its own).
fn sem_store(dir: &Path) -> Rc<dyn Store> {
    semaphores(Rc::new(FlockStore::new(dir).unwrap())).unwrap()
}

fn semaphore(store: &Rc<dyn Store>, resource: &str, limit: i64, weight: i64) -> Lock {
    let key = Key::with_slots(resource, Slots::new(limit, weight).unwrap());
    let key = Arc::new(parking_lot::Mutex::new(key));
    Lock::new(
        key,
        StoreRef::Owned(Rc::clone(store)),
        Some(ttl(300.0)),
        true,
    )
}

fn acquire(semaphore: &mut Lock, wait: Wait) -> bool {
    semaphore
        .acquire(Mode::Exclusive, wait, &mut Silent)
        .unwrap()
}

fn within(secs: f64) -> Wait {
    Wait::Until(Instant::now() + Duration::from_secs_f64(secs))
}

/// Whether another file description holds `path` locked now (tried without waiting).
fn locked_by_someone(path: &Path) -> bool {
    let file = File::open(path).unwrap();
    // SAFETY: flock(2) on a descriptor we own; our lock, if we get it, goes with `file`.
    let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    !free
}

/// Waits until someone holds the turnstile of `resource` (a waiter reached the front).
fn until_a_waiter_is_at_the_turnstile(dir: &Path, resource: &str) {
    let path = FlockStore::new(dir)
        .unwrap()
        .turnstile_path(resource.as_bytes());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(path.exists() && locked_by_someone(&path)) {
        assert!(Instant::now() < deadline, "no waiter reached the turnstile");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn at_most_the_limit_is_held_across_threads() {
    let dir = tempfile::tempdir().unwrap();
    let held = Arc::new(AtomicI64::new(0));
    let most = Arc::new(AtomicI64::new(0));
    let start = Arc::new(Barrier::new(8));
    let workers: Vec<_> = (0..8i64)
        .map(|n| {
            let dir = dir.path().to_owned();
            let (held, most, start) = (Arc::clone(&held), Arc::clone(&most), Arc::clone(&start));
            thread::spawn(move || {
                let store = sem_store(&dir);
                let weight = 1 + n % 3;
                start.wait();
                for round in 0..20 {
                    let mut s = semaphore(&store, "tally", 4, weight);
                    // Blocking in the kernel, polling to a deadline, and not waiting, mixed.
                    let got = match (n + round) % 3 {
                        0 => acquire(&mut s, Wait::Forever),
                        1 => acquire(&mut s, within(30.0)),
                        _ => acquire(&mut s, Wait::No),
                    };
                    if !got {
                        continue;
                    }
                    let now = held.fetch_add(weight, Ordering::SeqCst) + weight;
                    most.fetch_max(now, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(1));
                    held.fetch_sub(weight, Ordering::SeqCst);
                    s.release(&mut Silent).unwrap();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!((1..=4).contains(&most), "held {most} of 4 at once");
}

#[test]
fn weights_add_up_to_the_limit_and_a_release_frees_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = sem_store(dir.path());
    let mut a = semaphore(&store, "weights", 4, 2);
    let mut b = semaphore(&store, "weights", 4, 2);
    let mut c = semaphore(&store, "weights", 4, 1);
    assert!(acquire(&mut a, Wait::No));
    assert!(acquire(&mut b, Wait::No));
    assert!(!acquire(&mut c, Wait::No), "4 of 4 held: no room for 1");
    assert!(a.is_acquired().unwrap() && b.is_acquired().unwrap());
    assert!(!c.is_acquired().unwrap());
    assert!(
        acquire(&mut a, Wait::No),
        "acquiring what one holds is fine"
    );
    a.refresh(None, &mut Silent).unwrap();
    a.release(&mut Silent).unwrap();
    assert!(!a.is_acquired().unwrap());
    assert!(acquire(&mut c, Wait::No), "a's weight is free");
    drop(b);
    let mut d = semaphore(&store, "weights", 4, 3);
    assert!(
        acquire(&mut d, Wait::No),
        "a dropped semaphore frees its weight"
    );
}

/// Extending a key that holds no slot is a not-held conflict (flock slots never expire).
#[test]
fn put_off_checks_the_key_still_holds_its_slots() {
    let dir = tempfile::tempdir().unwrap();
    let store = sem_store(dir.path());
    let mut key = Key::with_slots("put-off", Slots::new(2, 1).unwrap());
    let err = store.put_off_expiration(&mut key, ttl(10.0)).unwrap_err();
    assert!(err.is_conflict(), "{err}");
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    store.put_off_expiration(&mut key, ttl(10.0)).unwrap();
    assert!(store.exists(&key).unwrap());
    store.delete(&mut key).unwrap();
    assert!(!store.exists(&key).unwrap());
    assert!(store.put_off_expiration(&mut key, ttl(10.0)).is_err());
}

/// A slot file removed while held (a temp cleaner) excludes nobody: the key no longer holds it,
/// and the next taker gets the file now at the path.
#[test]
fn a_removed_slot_file_is_no_longer_held() {
    let dir = tempfile::tempdir().unwrap();
    let store = sem_store(dir.path());
    let mut key = Key::with_slots("cleaned", Slots::new(1, 1).unwrap());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let slot = FlockStore::new(dir.path())
        .unwrap()
        .slot_path(b"cleaned", 0);
    std::fs::remove_file(&slot).unwrap();
    assert!(!store.exists(&key).unwrap());
    assert!(store.put_off_expiration(&mut key, ttl(10.0)).is_err());
    let mut next = Key::with_slots("cleaned", Slots::new(1, 1).unwrap());
    store.save(&mut next, Mode::Exclusive, None).unwrap();
    assert!(store.exists(&next).unwrap());
}

/// Slots freed while a waiter is at the turnstile are the waiter's: a caller that does not wait
/// is refused, a lighter waiter gives up, and the waiter gets its whole weight.
#[test]
fn nobody_passes_the_waiter_at_the_turnstile() {
    let dir = tempfile::tempdir().unwrap();
    let store = sem_store(dir.path());
    let mut a = semaphore(&store, "front", 2, 1);
    let mut b = semaphore(&store, "front", 2, 1);
    assert!(acquire(&mut a, Wait::No) && acquire(&mut b, Wait::No));
    let heavy = {
        let dir = dir.path().to_owned();
        thread::spawn(move || {
            let store = sem_store(&dir);
            let mut heavy = semaphore(&store, "front", 2, 2);
            let got = acquire(&mut heavy, within(20.0));
            let held = heavy.is_acquired().unwrap();
            heavy.release(&mut Silent).unwrap();
            (got, held)
        })
    };
    until_a_waiter_is_at_the_turnstile(dir.path(), "front");
    a.release(&mut Silent).unwrap();
    // One slot is free until the waiter's next try (up to 25 ms away): not for us.
    let mut barging = semaphore(&store, "front", 2, 1);
    assert!(
        !acquire(&mut barging, Wait::No),
        "a caller that does not wait passed the waiter"
    );
    let mut light = semaphore(&store, "front", 2, 1);
    assert!(
        !acquire(&mut light, within(0.3)),
        "a light waiter overtook the heavy one"
    );
    b.release(&mut Silent).unwrap();
    assert_eq!(heavy.join().unwrap(), (true, true));
    assert!(acquire(&mut barging, Wait::No));
}

/// At the deadline the waiter drops the slots it collected and the turnstile.
#[test]
fn a_waiter_that_gives_up_leaves_nothing_locked() {
    let dir = tempfile::tempdir().unwrap();
    let store = sem_store(dir.path());
    let mut holder = semaphore(&store, "give-up", 3, 2);
    assert!(acquire(&mut holder, Wait::No));
    // Collects the one free slot, then waits for a second one that never comes.
    let mut waiter = semaphore(&store, "give-up", 3, 2);
    assert!(!acquire(&mut waiter, within(0.3)));
    assert!(!waiter.is_acquired().unwrap());
    let turnstile = FlockStore::new(dir.path())
        .unwrap()
        .turnstile_path(b"give-up");
    assert!(!locked_by_someone(&turnstile));
    let mut one = semaphore(&store, "give-up", 3, 1);
    assert!(acquire(&mut one, Wait::No), "the free slot is free again");
}

/// Callers that do not wait, all at once, with room for all: none is refused (they line up at
/// the gate instead of finding each other at the turnstile).
#[test]
fn callers_that_do_not_wait_are_not_refused_while_there_is_room() {
    let dir = tempfile::tempdir().unwrap();
    let rounds = 500;
    let start = Arc::new(Barrier::new(4));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (dir, start) = (dir.path().to_owned(), Arc::clone(&start));
            thread::spawn(move || {
                let store = sem_store(&dir);
                let mut refused = 0;
                for _ in 0..rounds {
                    let mut s = semaphore(&store, "room", 4, 1);
                    start.wait();
                    if !acquire(&mut s, Wait::No) {
                        refused += 1;
                    }
                    start.wait();
                    s.release(&mut Silent).unwrap();
                }
                refused
            })
        })
        .collect();
    let refused: i32 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(refused, 0, "refused {refused} times with room for all");
}

/// The semaphore's files are neither symfony/lock's lock file for the name nor another name's
/// (two names that sanitize alike keep their own slots).
#[test]
fn a_lock_and_a_semaphore_on_one_name_do_not_collide() {
    let dir = tempfile::tempdir().unwrap();
    let flock = FlockStore::new(dir.path()).unwrap();
    let mut lock_key = Key::new("shared/name");
    flock.save(&mut lock_key, Mode::Exclusive, None).unwrap();
    let store = sem_store(dir.path());
    let mut only = semaphore(&store, "shared/name", 1, 1);
    assert!(acquire(&mut only, Wait::No), "the lock took the slot");
    let mut alike = semaphore(&store, "shared:name", 1, 1);
    assert!(
        acquire(&mut alike, Wait::No),
        "another name's slot was taken"
    );
    let lock_file = flock.path_for(&lock_key);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(
            path == lock_file || !(name.starts_with("sf.") || name.ends_with(".lock")),
            "{name} looks like a symfony/lock file"
        );
    }
}

/// A forked child that drops the key it inherited (adoption, or exit) leaves the parent's slots
/// held: the child's descriptors share the parent's locks, and unlocking them would free them.
#[test]
fn a_forked_child_dropping_an_inherited_key_leaves_the_parents_slots_held() {
    let dir = tempfile::tempdir().unwrap();
    let store = sem_store(dir.path());
    let mut key = Key::with_slots("fork", Slots::new(1, 1).unwrap());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    // SAFETY: fork/_exit/waitpid; the child only drops the key (closing descriptors) and exits.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            key.adopt_if_inherited();
            drop(key);
            libc::_exit(0);
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
    let other = self::sem_store(dir.path());
    let mut next = Key::with_slots("fork", Slots::new(1, 1).unwrap());
    let refused = other.save(&mut next, Mode::Exclusive, None).unwrap_err();
    assert!(refused.is_conflict(), "the child freed the parent's slot");
    assert!(store.exists(&key).unwrap());
    store.delete(&mut key).unwrap();
    other.save(&mut next, Mode::Exclusive, None).unwrap();
}

/// The kernel frees the slots of a process that ends: a flock(1) child holding slot 0.
#[test]
fn a_process_that_ends_frees_its_slots() {
    let dir = tempfile::tempdir().unwrap();
    let flock = FlockStore::new(dir.path()).unwrap();
    let slot = flock.slot_path(b"ends", 0);
    File::create(&slot).unwrap();
    let child = held_by_child(&slot, true, "slot holder");
    let store = sem_store(dir.path());
    let mut s = semaphore(&store, "ends", 1, 1);
    assert!(!acquire(&mut s, Wait::No), "the child holds the only slot");
    end(child);
    assert!(acquire(&mut s, Wait::No));
}

#[test]
fn a_limit_over_the_cap_is_refused_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    let store = sem_store(dir.path());
    let mut key = Key::with_slots("huge", Slots::new(1025, 1).unwrap());
    let err = store.save(&mut key, Mode::Exclusive, None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let message = err.to_string();
    assert!(
        message.contains("1024") && message.contains("RedisStore"),
        "{message}"
    );
    let mut fits = Key::with_slots("huge", Slots::new(1024, 1024).unwrap());
    store.save(&mut fits, Mode::Exclusive, None).unwrap();
    store.delete(&mut fits).unwrap();
}
