//! A node_exporter textfile for short jobs: when a process ends, its totals are added to the ones
//! the file holds, so the counters in it only grow across runs, as Prometheus counters must.
//!
//! Never torn, never losing a run: under an exclusive flock(2) of a companion `<file>.lock` (the
//! file itself is replaced, so it cannot carry the lock), the previous totals are read, this
//! process's added, and the sum written to `<file>.<pid>.tmp` in the same directory, fsynced and
//! renamed over the file (then the directory fsynced). node_exporter reads only `*.prom`, so it
//! never sees the temporary file, and a reader sees the old file or the new one, whole.
//!
//! Every sample carries `textfile="<file name without .prom>"`: node_exporter refuses a metric
//! that two of its files both define with the same labels, and each job has a file of its own.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind as IoKind, Write as _};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{process_totals, render, Snapshot, BUCKETS};
use crate::error::{Error, Result};
use crate::sync::Mutex;

/// The textfile this process adds its totals to when it ends (`deadbolt.metrics_textfile`).
static TEXTFILE: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The first line of every textfile Deadbolt writes; a file without it is not overwritten.
const FIRST_LINE: &str =
    "# Deadbolt metrics textfile, format 1: the totals of the processes that ended with \
                          deadbolt.metrics_textfile set to this file";
const MARK: &str = "# Deadbolt metrics textfile, format ";

/// Names the textfile this process adds its totals to when it ends (`None`: none).
pub fn use_textfile(path: Option<&Path>) {
    *TEXTFILE.lock() = path.map(Path::to_path_buf);
}

/// Adds everything this process counted (`reset()` or not) to its textfile, if it has one: called
/// once, as the process ends.
pub fn write_textfile() -> Result<()> {
    let path = TEXTFILE.lock().clone();
    match path {
        Some(path) => add_snapshot(&path, &process_totals()),
        None => Ok(()),
    }
}

/// Adds `numbers` to the textfile at `path`: the file's totals are read, summed and replaced
/// whole, under the companion lock.
fn add_snapshot(path: &Path, numbers: &Snapshot) -> Result<()> {
    if !path.is_absolute() {
        return Err(refused(
            path,
            "is not an absolute path (a relative one names another file in each working directory)",
        ));
    }
    let _lock = lock_companion(path)?;
    let mut totals = read_totals(path)?;
    totals.add(numbers);
    let text = format!("{FIRST_LINE}\n{}", render(&totals, &label(path)));
    replace(path, &text)
}

/// `<path>.lock`, created when missing, locked exclusively until dropped (closed).
fn lock_companion(path: &Path) -> Result<File> {
    let lock_path = suffixed(path, ".lock");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lock_path)
        // Another user's lock file (mode 0644): reading is enough to flock it.
        .or_else(|_| {
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&lock_path)
        })
        .map_err(|e| io_error(&lock_path, "open or create", &e))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| io_error(&lock_path, "lock", &std::io::Error::from(e)))?;
    Ok(file)
}

/// The totals the file holds now: zero when it does not exist or is empty.
fn read_totals(path: &Path) -> Result<Snapshot> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.is_empty() => Ok(Snapshot::zero()),
        Ok(text) => parse(path, &text),
        Err(e) if e.kind() == IoKind::NotFound => Ok(Snapshot::zero()),
        Err(e) => Err(io_error(path, "read", &e)),
    }
}

/// Reads a textfile Deadbolt wrote. Samples of names this version does not know are dropped (a
/// counter a later version added starts again from zero if an older one writes the file).
fn parse(path: &Path, text: &str) -> Result<Snapshot> {
    let first = text.lines().next().unwrap_or_default();
    if !first.starts_with(MARK) {
        return Err(refused(
            path,
            "was not written by Deadbolt (its first line is not Deadbolt's), so it is left as it is",
        ));
    }
    if first != FIRST_LINE {
        return Err(refused(
            path,
            "was written by another version of Deadbolt (another textfile format)",
        ));
    }
    let mut totals = Snapshot::zero();
    for (number, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#'))
    {
        let bad = || {
            refused(
                path,
                &format!(
                    "has a line Deadbolt cannot read (line {}: {line:?})",
                    number + 1
                ),
            )
        };
        let (series, value) = line.rsplit_once(' ').ok_or_else(bad)?;
        let (name, le) = split_series(series);
        // An unknown name is skipped; a known one whose value does not parse is refused.
        apply(&mut totals, name, le, value).ok_or_else(bad)?;
    }
    Ok(totals)
}

/// Puts one sample into `totals`: `Some(true)` when it was Deadbolt's, `Some(false)` when the
/// name is unknown, `None` when the value does not parse.
fn apply(totals: &mut Snapshot, name: &str, le: Option<&str>, value: &str) -> Option<bool> {
    let name = match name.strip_prefix("deadbolt_") {
        Some(name) => name,
        None => return Some(false),
    };
    if let Some(counter) = name.strip_suffix("_total") {
        if let Some(slot) = totals
            .counters
            .iter_mut()
            .find(|(c, _)| c.name() == counter)
        {
            slot.1 = value.parse().ok()?;
            return Some(true);
        }
        return Some(false);
    }
    for (timing, histogram) in &mut totals.timings {
        let Some(part) = name.strip_prefix(timing.name()) else {
            continue;
        };
        match (part, le) {
            ("_sum", _) => histogram.sum_seconds = value.parse().ok()?,
            ("_count", _) => histogram.count = value.parse().ok()?,
            ("_bucket", Some(le)) => {
                let bounds = BUCKETS
                    .iter()
                    .map(f64::to_string)
                    .chain(["+Inf".to_owned()]);
                let Some(index) = bounds.clone().position(|b| b == le) else {
                    return Some(false);
                };
                histogram.cumulative[index] = value.parse().ok()?;
            }
            _ => return Some(false),
        }
        return Some(true);
    }
    Some(false)
}

/// `name{a="x",le="0.5"}` into `name` and the `le` label's value.
fn split_series(series: &str) -> (&str, Option<&str>) {
    let Some((name, labels)) = series.split_once('{') else {
        return (series, None);
    };
    // `le` is the last label Deadbolt writes; searched with its comma, since `textfile="` ends in `le="` too
    // (and an escaped label value cannot hold `,le="`: its quotes are `\"`).
    let rest = match labels.rfind(",le=\"") {
        Some(at) => Some(&labels[at + 5..]),
        None => labels.strip_prefix("le=\""),
    };
    let le = rest.and_then(|rest| rest.split_once('"')).map(|(le, _)| le);
    (name, le)
}

/// `textfile="<file name without .prom>"`, escaped as the text format wants.
fn label(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".prom").unwrap_or(&name);
    let escaped = stem
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("textfile=\"{escaped}\"")
}

/// Writes `text` to a temporary file beside `path`, fsyncs it, renames it over `path`, fsyncs the directory.
fn replace(path: &Path, text: &str) -> Result<()> {
    let temp = suffixed(path, &format!(".{}.tmp", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(io_error(path, "write", &e));
    }
    // The rename is durable once the directory is; a failure here leaves the new file in place.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn refused(path: &Path, why: &str) -> Error {
    Error::InvalidArgument {
        message: format!(
            "The metrics textfile {} {why}: nothing was added to it. Point deadbolt.metrics_textfile at a file of \
             its own, or remove this one (its totals start over).",
            path.display()
        ),
    }
}

fn io_error(path: &Path, action: &str, error: &std::io::Error) -> Error {
    let hint = match error.kind() {
        IoKind::NotFound => "create its directory first",
        IoKind::PermissionDenied => "give this job's user the right to write in its directory",
        _ => "check the path and the file system",
    };
    Error::Storage {
        message: format!(
            "Cannot {action} the metrics textfile {}: {error}; {hint}. This process's numbers were not added to it.",
            path.display()
        ),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Counter;

    fn numbers(acquired: u64, wait_bucket: usize) -> Snapshot {
        let mut snapshot = Snapshot::zero();
        snapshot.counters[0] = (Counter::Acquired, acquired);
        let wait = &mut snapshot.timings[0].1;
        for bucket in &mut wait.cumulative[wait_bucket..] {
            *bucket = 1;
        }
        wait.count = 1;
        wait.sum_seconds = 0.25;
        snapshot
    }

    #[test]
    fn runs_add_up_in_one_labelled_file_that_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.prom");
        add_snapshot(&path, &numbers(2, 3)).unwrap();
        add_snapshot(&path, &numbers(5, 0)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(FIRST_LINE), "{text}");
        assert!(
            text.contains("deadbolt_acquired_total{textfile=\"report\"} 7\n"),
            "{text}"
        );
        assert!(
            text.contains("deadbolt_wait_seconds_bucket{textfile=\"report\",le=\"0.0005\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("deadbolt_wait_seconds_bucket{textfile=\"report\",le=\"+Inf\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("deadbolt_wait_seconds_sum{textfile=\"report\"} 0.5\n"),
            "{text}"
        );
        assert!(
            text.contains("deadbolt_wait_seconds_count{textfile=\"report\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("deadbolt_hold_seconds_count{textfile=\"report\"} 0\n"),
            "{text}"
        );
        let mut left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["report.prom", "report.prom.lock"],
            "no temporary file left"
        );
        assert_eq!(parse(&path, &text).unwrap(), {
            let mut sum = numbers(2, 3);
            sum.add(&numbers(5, 0));
            sum
        });
    }

    #[test]
    fn threads_ending_at_once_lose_no_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("many.prom");
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..5 {
                        add_snapshot(&path, &numbers(1, 2)).unwrap();
                    }
                });
            }
        });
        let totals = read_totals(&path).unwrap();
        assert_eq!(totals.counters[0], (Counter::Acquired, 40));
        assert_eq!(totals.timings[0].1.count, 40);
    }

    #[test]
    fn a_file_deadbolt_did_not_write_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node.prom");
        std::fs::write(&path, "node_something 1\n").unwrap();
        let error = add_snapshot(&path, &numbers(1, 0)).unwrap_err().to_string();
        assert!(error.contains("was not written by Deadbolt"), "{error}");
        assert!(error.contains("nothing was added"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "node_something 1\n"
        );

        std::fs::write(
            &path,
            format!("{FIRST_LINE}\ndeadbolt_acquired_total{{textfile=\"node\"}} many\n"),
        )
        .unwrap();
        let error = add_snapshot(&path, &numbers(1, 0)).unwrap_err().to_string();
        assert!(error.contains("line 2"), "{error}");

        std::fs::write(&path, "# Deadbolt metrics textfile, format 9: newer\n").unwrap();
        let error = add_snapshot(&path, &numbers(1, 0)).unwrap_err().to_string();
        assert!(error.contains("another version of Deadbolt"), "{error}");
    }

    #[test]
    fn an_unwritable_place_is_named_with_what_to_do() {
        let error = add_snapshot(Path::new("/nonexistent-deadbolt/job.prom"), &numbers(1, 0))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("/nonexistent-deadbolt/job.prom.lock"),
            "{error}"
        );
        assert!(error.contains("create its directory first"), "{error}");
    }

    #[test]
    fn a_relative_path_is_refused() {
        let error = add_snapshot(Path::new("job.prom"), &numbers(1, 0))
            .unwrap_err()
            .to_string();
        assert!(error.contains("is not an absolute path"), "{error}");
        assert!(!Path::new("job.prom.lock").exists());
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(label(Path::new("/x/a\"b.prom")), "textfile=\"a\\\"b\"");
        assert_eq!(label(Path::new("plain")), "textfile=\"plain\"");
    }
}
