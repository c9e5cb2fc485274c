//! What the commands print: a text table for people, or (`--json`) one JSON object whose fields
//! are stable. Times in JSON are Unix seconds (floats, as PHP shows times), `null` when the store
//! does not know them; in text, UTC in RFC 3339 and the seconds left.

use std::time::SystemTime;

use deadbolt_core::{unix_secs, Holder, LockState, Mode, Origin, Snapshot, Waiter, BUCKETS};
use serde_json::{json, Map, Value};

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Exclusive => "write",
        Mode::Shared => "read",
    }
}

fn secs(at: Option<SystemTime>) -> Value {
    at.map_or(Value::Null, |at| json!(unix_secs(at)))
}

/// An empty digest (flock has no tokens) is no digest.
fn digest(digest: &str) -> Value {
    if digest.is_empty() {
        Value::Null
    } else {
        json!(digest)
    }
}

/// The fields of `Deadbolt\Holder::toArray()` and `Waiter::toArray()` they share, in their order
/// and with their names: the command and the PHP API say the same.
fn who_fields(mode: Mode, token_digest: &str, origin: &Origin) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("mode".into(), json!(mode_name(mode)));
    fields.insert("tokenDigest".into(), digest(token_digest));
    fields.insert("host".into(), json!(origin.host));
    fields.insert("pid".into(), json!(origin.pid));
    fields.insert("label".into(), json!(origin.label));
    fields
}

fn holder_json(holder: &Holder) -> Value {
    let mut fields = who_fields(holder.mode, &holder.token_digest, &holder.origin);
    fields.insert("acquiredAt".into(), secs(holder.acquired_at));
    fields.insert("expiresAt".into(), secs(holder.expires_at));
    // The command's own: what a script wants without reading the clock.
    fields.insert(
        "expiresIn".into(),
        holder
            .expires_at
            .map_or(Value::Null, |at| json!(seconds_left(at))),
    );
    Value::Object(fields)
}

fn waiter_json(waiter: &Waiter) -> Value {
    let mut fields = who_fields(waiter.mode, &waiter.token_digest, &waiter.origin);
    fields.insert("waitingSince".into(), secs(waiter.since));
    Value::Object(fields)
}

fn state_json(state: &LockState) -> (Value, Value) {
    (
        Value::Array(state.holders.iter().map(holder_json).collect()),
        Value::Array(state.waiters.iter().map(waiter_json).collect()),
    )
}

/// Seconds from now to `at` (negative once past), to the millisecond.
fn seconds_left(at: SystemTime) -> f64 {
    let left = unix_secs(at) - unix_secs(SystemTime::now());
    (left * 1000.0).round() / 1000.0
}

/// `at` in UTC, RFC 3339 to the second.
fn utc(at: SystemTime) -> String {
    let secs = unix_secs(at).floor();
    // Whole seconds since 1970 fit an i64 for any time a store can write.
    #[allow(clippy::cast_possible_truncation)]
    let secs = secs as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Howard Hinnant's `civil_from_days`: the proleptic Gregorian date of a day count since 1970.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn or_dash(text: Option<String>) -> String {
    text.filter(|text| !text.is_empty())
        .unwrap_or_else(|| "-".into())
}

/// The text table of `state`'s holders and waiters, indented by two spaces.
fn table(state: &LockState) -> String {
    let mut rows = vec![[
        "ROLE",
        "MODE",
        "PID",
        "HOST",
        "LABEL",
        "SINCE",
        "EXPIRES IN",
        "TOKEN",
    ]
    .map(String::from)];
    for holder in &state.holders {
        rows.push([
            "holder".into(),
            mode_name(holder.mode).into(),
            or_dash(holder.origin.pid.map(|pid| pid.to_string())),
            or_dash(holder.origin.host.clone()),
            or_dash(holder.origin.label.clone()),
            or_dash(holder.acquired_at.map(utc)),
            or_dash(
                holder
                    .expires_at
                    .map(|at| format!("{:.1}s", seconds_left(at))),
            ),
            or_dash(Some(holder.token_digest.clone())),
        ]);
    }
    for waiter in &state.waiters {
        rows.push([
            "waiter".into(),
            mode_name(waiter.mode).into(),
            or_dash(waiter.origin.pid.map(|pid| pid.to_string())),
            or_dash(waiter.origin.host.clone()),
            or_dash(waiter.origin.label.clone()),
            or_dash(waiter.since.map(utc)),
            "-".into(),
            or_dash(Some(waiter.token_digest.clone())),
        ]);
    }
    let mut widths = [0usize; 8];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str("  ");
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn print_json(value: &Value) {
    println!("{value}");
}

pub fn status(json: bool, store: &str, resource: &str, state: &LockState) {
    if json {
        let (holders, waiters) = state_json(state);
        print_json(&json!({
            "store": store,
            "resource": resource,
            "held": !state.holders.is_empty(),
            "holders": holders,
            "waiters": waiters,
        }));
        return;
    }
    if state.holders.is_empty() && state.waiters.is_empty() {
        println!("\"{resource}\" is free in {store}.");
        return;
    }
    println!(
        "\"{resource}\" in {store}: {}, {}.",
        counted(state.holders.len(), "holder", "holders"),
        counted(state.waiters.len(), "waiter", "waiters")
    );
    print!("{}", table(state));
}

pub fn list(json: bool, store: &str, files: bool, listed: &[(String, LockState)]) {
    let what = if files { "file" } else { "resource" };
    if json {
        let locks: Vec<Value> = listed
            .iter()
            .map(|(name, state)| {
                let (holders, waiters) = state_json(state);
                json!({ what: name, "holders": holders, "waiters": waiters })
            })
            .collect();
        print_json(&json!({ "store": store, "locks": locks }));
        return;
    }
    if listed.is_empty() {
        println!("No lock is held or waited for in {store}.");
        return;
    }
    println!(
        "{} held or waited for in {store}:",
        counted(listed.len(), "lock", "locks")
    );
    for (name, state) in listed {
        println!(
            "\n{} \"{name}\": {}, {}.",
            if files { "Lock file" } else { "Resource" },
            counted(state.holders.len(), "holder", "holders"),
            counted(state.waiters.len(), "waiter", "waiters")
        );
        print!("{}", table(state));
    }
}

pub fn released(json: bool, store: &str, resource: &str, holders: usize) {
    if json {
        print_json(&json!({ "store": store, "resource": resource, "released": holders }));
    } else {
        println!(
            "Released \"{resource}\" in {store}: it had {}.",
            counted(holders, "holder", "holders")
        );
    }
}

/// The snapshot in the shape of `Deadbolt\Metrics::snapshot()`: counters by name; timings by
/// name with count, sum (seconds) and cumulative buckets by bound.
pub fn metrics_json(snapshot: &Snapshot) {
    let counters: Map<String, Value> = snapshot
        .counters
        .iter()
        .map(|(counter, value)| (counter.name().to_owned(), json!(value)))
        .collect();
    let timings: Map<String, Value> = snapshot
        .timings
        .iter()
        .map(|(timing, histogram)| {
            let bounds = BUCKETS.iter().map(ToString::to_string);
            let buckets: Map<String, Value> = bounds
                .chain(["+Inf".to_owned()])
                .zip(&histogram.cumulative)
                .map(|(le, count)| (le, json!(count)))
                .collect();
            (
                timing.name().to_owned(),
                json!({ "count": histogram.count, "sum": histogram.sum_seconds, "buckets": buckets }),
            )
        })
        .collect();
    print_json(&json!({ "counters": counters, "timings": timings }));
}
