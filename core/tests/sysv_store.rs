//! The System V semaphore store beyond the shared contract (`store_contract.rs`): a waiter woken
//! by a release in another thread, the kernel's view of a holder, an operator's forced release
//! seen by the holder, and the two IPC key derivations as two different locks.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use deadbolt_core::{
    wait, InspectingStore, Key, KeyHash, Mode, Store, SysvSemaphoreStore, WaitReport,
};
use support::unique;

fn store() -> SysvSemaphoreStore {
    SysvSemaphoreStore::new(KeyHash::Xxh128)
}

#[test]
fn a_waiter_in_the_kernel_gets_the_lock_its_holder_releases() {
    let resource = unique("sysv-handover");
    let mut holder = Key::new(resource.clone());
    store().save(&mut holder, Mode::Exclusive, None).unwrap();
    let (waiting, waiting_seen) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let mut key = Key::new(resource);
        let mut report = WaitReport::default();
        waiting.send(()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let taken = wait(
            &store(),
            &mut key,
            Mode::Exclusive,
            None,
            Some(deadline),
            &mut report,
        );
        (taken.unwrap(), store().exists(&key).unwrap())
    });
    waiting_seen.recv().unwrap();
    // Released whether the waiter already sleeps in semtimedop(2) or has not reached it yet: it
    // must get the lock either way (woken by the removal, or finding the set free).
    store().delete(&mut holder).unwrap();
    assert_eq!(waiter.join().unwrap(), (true, true));
    assert!(!store().exists(&holder).unwrap());
}

#[test]
fn the_kernel_names_the_holder_and_an_operator_releases_it() {
    let resource = unique("sysv-inspect");
    let store = store();
    assert!(store
        .inspect(resource.as_bytes())
        .unwrap()
        .holders
        .is_empty());
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let state = store.inspect(resource.as_bytes()).unwrap();
    assert_eq!(state.holders.len(), 1);
    assert_eq!(state.holders[0].origin.pid, Some(std::process::id()));
    assert_eq!(store.force_release(resource.as_bytes()).unwrap(), 1);
    assert!(
        !store.exists(&key).unwrap(),
        "the holder sees its lock gone"
    );
    let err = store.put_off_expiration(&mut key, deadbolt_core::Ttl::from_secs(5.0).unwrap());
    assert!(err.unwrap_err().is_conflict());
    let mut next = Key::new(resource.clone());
    store.save(&mut next, Mode::Exclusive, None).unwrap();
    // The old holder's release must not remove the new holder's set.
    store.delete(&mut key).unwrap();
    assert!(store.exists(&next).unwrap());
    store.delete(&mut next).unwrap();
    assert_eq!(store.force_release(resource.as_bytes()).unwrap(), 0);
}

#[test]
fn a_key_dropped_without_release_frees_its_lock() {
    let resource = unique("sysv-drop");
    let mut key = Key::new(resource.clone());
    store().save(&mut key, Mode::Exclusive, None).unwrap();
    drop(key);
    let mut next = Key::new(resource);
    store().save(&mut next, Mode::Exclusive, None).unwrap();
    store().delete(&mut next).unwrap();
}

#[test]
fn the_two_key_derivations_are_two_locks() {
    let resource = unique("sysv-hash");
    let mut new_style = Key::new(resource.clone());
    let mut old_style = Key::new(resource);
    store().save(&mut new_style, Mode::Exclusive, None).unwrap();
    SysvSemaphoreStore::new(KeyHash::Md5)
        .save(&mut old_style, Mode::Exclusive, None)
        .unwrap();
    store().delete(&mut new_style).unwrap();
    SysvSemaphoreStore::new(KeyHash::Md5)
        .delete(&mut old_style)
        .unwrap();
}

/// A process stopped while it joins a set (SIGSTOP between PHP's `sem_get()` system calls) keeps the
/// set's guard: PHP's own `sem_get()` then waits for ever. Deadbolt's attempts do not: a try reports
/// the lock as held, a wait ends at its deadline.
#[test]
fn a_guard_held_by_a_stopped_joiner_hangs_no_attempt() {
    let resource = unique("sysv-guard");
    let ipc_key = KeyHash::Xxh128.ipc_key(resource.as_bytes());
    // SAFETY: plain System V calls on integers and one live sembuf.
    let semid = unsafe { libc::semget(ipc_key, 3, 0o666 | libc::IPC_CREAT) };
    assert!(semid >= 0);
    let mut take_guard = libc::sembuf {
        sem_num: 2,
        sem_op: 1,
        sem_flg: 0,
    };
    assert_eq!(unsafe { libc::semop(semid, &raw mut take_guard, 1) }, 0);

    let (done, outcome) = mpsc::channel();
    let attempts = resource.clone();
    std::thread::spawn(move || {
        let mut key = Key::new(attempts);
        let tried = store().save(&mut key, Mode::Exclusive, None);
        let deadline = Instant::now() + Duration::from_millis(300);
        let waited = wait(
            &store(),
            &mut key,
            Mode::Exclusive,
            None,
            Some(deadline),
            &mut WaitReport::default(),
        );
        done.send((tried.unwrap_err().is_conflict(), waited.unwrap()))
            .unwrap();
    });
    let ended = outcome.recv_timeout(Duration::from_secs(60));
    // SAFETY: IPC_RMID on the set this test made.
    unsafe { libc::semctl(semid, 0, libc::IPC_RMID) };
    assert_eq!(
        ended.expect("an attempt hung on the held guard"),
        (true, false)
    );
}
