//! An operator's view of the flock store against real processes: `/proc/locks` tells who holds a
//! lock file (pid, mode) and who is blocked on it; the label comes from the holder's environment;
//! a forced release removes the file, so the old holder finds its lock gone and the next taker
//! gets a new file with a fencing token above the old ones.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

mod support;

use deadbolt_core::{FencingStore, FlockStore, InspectingStore, Key, Mode, Store};
use support::flock_child::{end, held_by_child};

#[test]
fn a_holder_in_another_process_is_shown_with_its_pid_mode_and_label() {
    let dir = tempfile::tempdir().unwrap();
    let store = FlockStore::new(dir.path()).unwrap();
    let path = store.path_for(&Key::new("report"));
    assert!(
        store.inspect(b"report").unwrap().holders.is_empty(),
        "no file yet"
    );
    std::fs::File::create(&path).unwrap();
    let child = held_by_child(&path, true, "nightly #7");

    let state = store.inspect(b"report").unwrap();
    assert_eq!(state.holders.len(), 1, "{state:?}");
    let holder = &state.holders[0];
    assert_eq!(holder.mode, Mode::Exclusive);
    assert_eq!(holder.origin.pid, Some(child.id()));
    assert_eq!(holder.origin.label.as_deref(), Some("nightly #7"));
    assert!(holder.origin.host.is_some());
    end(child);
    assert!(store.inspect(b"report").unwrap().holders.is_empty());
}

#[test]
fn readers_are_listed_each() {
    let dir = tempfile::tempdir().unwrap();
    let store = FlockStore::new(dir.path()).unwrap();
    let mut mine = Key::new("shared");
    store.save(&mut mine, Mode::Shared, None).unwrap();
    let child = held_by_child(&store.path_for(&mine), false, "reader");
    let state = store.inspect(b"shared").unwrap();
    let mut pids: Vec<_> = state
        .holders
        .iter()
        .map(|h| h.origin.pid.unwrap())
        .collect();
    pids.sort_unstable();
    let mut expected = vec![std::process::id(), child.id()];
    expected.sort_unstable();
    assert_eq!(pids, expected);
    assert!(state.holders.iter().all(|h| h.mode == Mode::Shared));
    end(child);
}

#[test]
fn a_forced_release_is_seen_by_the_old_holder_and_fencing_keeps_growing() {
    let dir = tempfile::tempdir().unwrap();
    let store = FlockStore::new(dir.path()).unwrap();
    let mut old = Key::new("stuck");
    store.save(&mut old, Mode::Exclusive, None).unwrap();
    let first = store.draw_fencing_token(&mut old).unwrap().unwrap();

    let operator = FlockStore::new(dir.path()).unwrap();
    assert_eq!(operator.force_release(b"stuck").unwrap(), 1);
    assert!(!store.exists(&old).unwrap(), "the old holder is told");

    let mut new = Key::new("stuck");
    store.save(&mut new, Mode::Exclusive, None).unwrap();
    let next = store.draw_fencing_token(&mut new).unwrap().unwrap();
    assert!(next > first, "{next} > {first}");
    assert_eq!(operator.force_release(b"nobody").unwrap(), 0);
}
