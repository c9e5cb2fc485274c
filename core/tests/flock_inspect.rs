//! An operator's view of the flock store against real processes: `/proc/locks` tells who holds a
//! lock file (pid, mode) and who is blocked on it; the label comes from the holder's environment;
//! a forced release removes the file, so the old holder finds its lock gone and the next taker
//! gets a new file with a fencing token above the old ones.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use deadbolt_core::{FencingStore, FlockStore, InspectingStore, Key, Mode, Store};

/// `flock(1)` holding `path` in a child process labelled `label`, once it says it holds it. `-o`:
/// only flock(1) itself holds the lock (its command gets no copy), so killing it frees the lock;
/// its own process group, so that [`end`] takes its command along.
fn held_by_child(path: &std::path::Path, exclusive: bool, label: &str) -> Child {
    let mut child = Command::new("flock")
        .process_group(0)
        .arg(if exclusive { "-x" } else { "-s" })
        .arg("-o")
        .arg(path)
        .args(["-c", "echo locked; exec sleep 600"])
        .env("DEADBOLT_LABEL", label)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "locked\n");
    child
}

/// Ends `child` and its command (which would otherwise outlive it holding our output open).
fn end(mut child: Child) {
    let group = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the process group this test made.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    child.wait().unwrap();
}

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
