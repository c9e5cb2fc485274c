//! A lock file held by another process: `flock(1)` in a child, for the tests that read holders
//! from the kernel (core/tests/flock_inspect.rs, cli/tests).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `flock(1)` holding `path` (exclusive or shared) in a child process whose environment gives it
/// `label`, once it says it holds it. `-o`: only flock(1) itself holds the lock (its command gets no
/// copy), so killing it frees the lock; its own process group, so that [`end`] takes its command
/// along (which would otherwise outlive it holding our output open).
pub fn held_by_child(path: &Path, exclusive: bool, label: &str) -> Child {
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

/// Ends `child` and its command.
pub fn end(mut child: Child) {
    let group = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the process group `held_by_child` made.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    child.wait().unwrap();
}
