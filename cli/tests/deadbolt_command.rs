//! The `deadbolt` command run as an operator runs it, against a real redis-server and lock files
//! held by other processes: its text, its JSON fields and its exit statuses.
#![allow(clippy::unwrap_used)] // tests: an unwrap failing is the test failing

#[path = "../../core/tests/support/mod.rs"]
mod support;

use std::process::{Command, Output};

use deadbolt_core::{
    FlockStore, Key, KeyHash, Mode, NativeTransport, RedisStore, Store, SysvSemaphoreStore, Ttl,
};
use serde_json::Value;
use support::flock_child::{end, held_by_child};
use support::{unique, RedisServer};

/// `deadbolt ARGS...` with `env` set; its output.
fn deadbolt_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_deadbolt"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn deadbolt(args: &[&str]) -> Output {
    deadbolt_with(args, &[])
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_flock_holder_in_another_process_is_shown_then_the_resource_is_free() {
    let dir = tempfile::tempdir().unwrap();
    let store = FlockStore::new(dir.path()).unwrap();
    let path = store.path_for(&Key::new("report:nightly"));
    std::fs::File::create(&path).unwrap();
    let child = held_by_child(&path, true, "nightly #7");
    let dir_arg = dir.path().to_str().unwrap();

    let text = deadbolt(&["status", dir_arg, "report:nightly"]);
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    let out = stdout(&text);
    assert!(out.contains("\"report:nightly\" in FlockStore("), "{out}");
    assert!(out.contains("1 holder, 0 waiters"), "{out}");
    assert!(out.contains(&child.id().to_string()), "{out}");
    assert!(out.contains("nightly #7"), "{out}");
    assert!(out.contains("write"), "{out}");

    let flock_dsn = format!("flock://{dir_arg}");
    let status = json(&deadbolt(&[
        "status",
        "--json",
        &flock_dsn,
        "report:nightly",
    ]));
    assert_eq!(status["held"], true);
    assert_eq!(status["resource"], "report:nightly");
    let holder = &status["holders"][0];
    assert_eq!(holder["pid"], child.id());
    assert_eq!(holder["label"], "nightly #7");
    assert_eq!(holder["mode"], "write");
    assert!(holder["host"].is_string());
    assert_eq!(holder["tokenDigest"], Value::Null, "flock has no tokens");
    assert_eq!(holder["acquiredAt"], Value::Null);
    assert_eq!(status["waiters"], Value::Array(vec![]));

    let list = deadbolt(&["list", "--json", dir_arg]);
    assert_eq!(code(&list), 0);
    let list = json(&list);
    let file = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(list["locks"][0]["file"], file);
    assert_eq!(list["locks"][0]["holders"][0]["pid"], child.id());

    end(child);
    let free = deadbolt(&["status", dir_arg, "report:nightly"]);
    assert_eq!(code(&free), 1);
    assert!(stdout(&free).contains("is free"), "{}", stdout(&free));
    assert_eq!(code(&deadbolt(&["list", dir_arg])), 1);
}

#[test]
fn a_forced_flock_release_removes_the_file_and_its_holder_loses_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let store = FlockStore::new(dir.path()).unwrap();
    let mut key = Key::new("report:nightly");
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let dir_arg = dir.path().to_str().unwrap();

    let refused = deadbolt(&["release", dir_arg, "report:nightly"]);
    assert_eq!(code(&refused), 2);
    assert!(stderr(&refused).contains("--force"), "{}", stderr(&refused));
    assert!(
        store.exists(&key).unwrap(),
        "nothing released without --force"
    );

    let released = deadbolt(&["release", "--force", "--json", dir_arg, "report:nightly"]);
    assert_eq!(code(&released), 0, "{}", stderr(&released));
    assert_eq!(json(&released)["released"], 1);
    assert!(!store.exists(&key).unwrap(), "the old holder lost it");

    let again = deadbolt(&["release", "--force", dir_arg, "report:nightly"]);
    assert_eq!(code(&again), 1);
    assert!(
        stdout(&again).contains("it had 0 holders"),
        "{}",
        stdout(&again)
    );
}

fn redis_store(dsn: &str) -> RedisStore<NativeTransport> {
    RedisStore::connect(dsn, Ttl::from_secs(30.0).unwrap()).unwrap()
}

#[test]
fn redis_holders_read_back_listed_and_force_released_with_password_env() {
    let redis = RedisServer::start_with(&["--requirepass", "s3cret-pw"]);
    let app_dsn = format!("{}?password_env=APP_REDIS_PASSWORD", redis.url());
    std::env::set_var("APP_REDIS_PASSWORD", "s3cret-pw");
    let store = redis_store(&app_dsn);
    let resource = unique("orders");
    let mut key = Key::new(resource.as_str());
    key.set_label("checkout 42").unwrap();
    store.save(&mut key, Mode::Exclusive, None).unwrap();
    let env = [("APP_REDIS_PASSWORD", "s3cret-pw")];

    let text = deadbolt_with(&["status", &app_dsn, &resource], &env);
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    let out = stdout(&text);
    assert!(out.contains("checkout 42"), "{out}");
    assert!(out.contains(&std::process::id().to_string()), "{out}");
    assert!(!out.contains("s3cret-pw"), "{out}");

    let status = json(&deadbolt_with(
        &["status", "--json", &app_dsn, &resource],
        &env,
    ));
    let holder = &status["holders"][0];
    assert_eq!(holder["pid"], std::process::id());
    assert_eq!(holder["label"], "checkout 42");
    assert_eq!(holder["mode"], "write");
    assert_eq!(holder["tokenDigest"].as_str().unwrap().len(), 12);
    assert!(holder["acquiredAt"].as_f64().unwrap() > 1.7e9);
    let left = holder["expiresIn"].as_f64().unwrap();
    assert!(left > 0.0 && left <= 30.0, "{left}");
    assert!(status["store"].as_str().unwrap().starts_with("RedisStore("));

    let prefix = resource.split(':').next().unwrap().to_owned();
    let list = json(&deadbolt_with(&["list", "--json", &app_dsn, &prefix], &env));
    assert_eq!(list["locks"][0]["resource"], resource.as_str());
    assert_eq!(list["locks"][0]["holders"][0]["label"], "checkout 42");

    let released = deadbolt_with(&["release", "--force", &app_dsn, &resource], &env);
    assert_eq!(code(&released), 0, "{}", stderr(&released));
    assert!(
        stdout(&released).contains("it had 1 holder."),
        "{}",
        stdout(&released)
    );
    assert!(!store.exists(&key).unwrap(), "the old holder lost it");
    assert_eq!(
        code(&deadbolt_with(&["status", &app_dsn, &resource], &env)),
        1
    );
}

#[test]
fn failures_say_what_in_the_engines_words_and_never_print_a_password() {
    let wrong = deadbolt(&["status", "redis://:hunter2@127.0.0.1:1?timeout=1", "r"]);
    assert_eq!(code(&wrong), 3);
    let err = stderr(&wrong);
    assert!(err.starts_with("deadbolt: "), "{err}");
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert!(stdout(&wrong).is_empty());

    let missing = deadbolt(&["status", "/nonexistent/deadbolt-dir", "r"]);
    assert_eq!(code(&missing), 3);
    assert!(stderr(&missing).contains("does not exist"));

    for usage in [
        &["status"][..],
        &["bogus"],
        &["status", "memcached://x", "r"],
        &["status", "flock://relative", "r"],
        &["status", "in-memory", "r"],
        &["status", "redis://127.0.0.1?bogus_option=1", "r"],
    ] {
        let output = deadbolt(usage);
        assert_eq!(code(&output), 2, "{usage:?}: {}", stderr(&output));
    }
}

#[test]
fn metrics_of_a_missing_file_fail_and_help_lists_exit_statuses() {
    let missing = deadbolt(&["metrics", "/nonexistent/deadbolt.metrics"]);
    assert_eq!(code(&missing), 3, "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("does not exist"),
        "{}",
        stderr(&missing)
    );

    let help = deadbolt(&["--help"]);
    assert_eq!(code(&help), 0);
    let help = stdout(&help);
    for part in [
        "EXIT STATUS",
        "password_env",
        "release --force",
        "sf.<name>.<hash>.lock",
    ] {
        assert!(help.contains(part), "{part}: {help}");
    }
}

#[test]
fn metrics_print_a_metrics_file_as_prometheus_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deadbolt.metrics");
    // This test process makes the file, as a php-fpm worker would.
    deadbolt_core::use_metrics_file(Some(&file)).unwrap();
    let text = deadbolt(&["metrics", file.to_str().unwrap()]);
    assert_eq!(code(&text), 0, "{}", stderr(&text));
    assert!(stdout(&text).contains("# TYPE"), "{}", stdout(&text));
    let snapshot = json(&deadbolt(&["metrics", "--json", file.to_str().unwrap()]));
    assert!(snapshot["counters"].is_object());
    assert!(snapshot["timings"].is_object());
}

#[test]
fn a_redis_waiter_in_the_queue_is_shown_after_the_holders() {
    let redis = RedisServer::start();
    let dsn = format!("{}?timeout=2", redis.url());
    let store = redis_store(&dsn);
    let resource = unique("queue");
    let mut holder = Key::new(resource.as_str());
    store.save(&mut holder, Mode::Exclusive, None).unwrap();
    let waiting = {
        let (dsn, resource) = (dsn.clone(), resource.clone());
        std::thread::spawn(move || {
            let store = redis_store(&dsn);
            let mut key = Key::new(resource.as_str());
            key.set_label("second in line").unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let mut report = deadbolt_core::WaitReport::default();
            deadbolt_core::wait(
                &store,
                &mut key,
                Mode::Shared,
                None,
                Some(deadline),
                &mut report,
            )
            .unwrap()
        })
    };
    // Until the waiter has joined the queue (a bound only against a hang: a slow machine waits longer).
    let mut status = Value::Null;
    for _ in 0..3000 {
        status = json(&deadbolt(&["status", "--json", &dsn, &resource]));
        if status["waiters"].as_array().is_some_and(|w| !w.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let waiter = &status["waiters"][0];
    assert_eq!(waiter["mode"], "read", "{status}");
    assert_eq!(waiter["label"], "second in line");
    assert!(waiter["waitingSince"].as_f64().unwrap() > 1.7e9);
    let text = stdout(&deadbolt(&["status", &dsn, &resource]));
    assert!(text.contains("1 holder, 1 waiter."), "{text}");
    assert!(text.contains("waiter  read"), "{text}");

    store.delete(&mut holder).unwrap();
    assert!(waiting.join().unwrap(), "the waiter got the lock");
}

#[test]
fn a_system_v_semaphore_holder_is_shown_and_released_by_force() {
    let store = SysvSemaphoreStore::new(KeyHash::Md5);
    let resource = unique("cli-sysv");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();

    let status = deadbolt(&["status", "--json", "semaphore?hash=md5", &resource]);
    assert_eq!(code(&status), 0, "{}", stderr(&status));
    let status = json(&status);
    assert_eq!(status["holders"][0]["pid"], std::process::id());
    assert_eq!(status["holders"][0]["mode"], "write");
    let other_hash = deadbolt(&["status", "semaphore", &resource]);
    assert_eq!(code(&other_hash), 1, "xxh128 keys are another set");

    let released = deadbolt(&["release", "--force", "semaphore?hash=md5", &resource]);
    assert_eq!(code(&released), 0, "{}", stderr(&released));
    assert!(!store.exists(&key).unwrap(), "the holder lost its lock");
    let listed = deadbolt(&["list", "semaphore"]);
    assert_eq!(code(&listed), 2);
    assert!(
        stderr(&listed).contains("cannot name them"),
        "{}",
        stderr(&listed)
    );
    assert_eq!(code(&deadbolt(&["status", "semaphore?hash=sha1", "r"])), 2);
}

#[test]
fn a_memcached_holder_is_shown_and_released_by_force() {
    let server = support::MemcachedServer::start();
    let store =
        deadbolt_core::MemcachedStore::connect(&server.dsn(), Ttl::from_secs(60.0).unwrap())
            .unwrap();
    let resource = unique("cli-memcached");
    let mut key = Key::new(resource.clone());
    store.save(&mut key, Mode::Exclusive, None).unwrap();

    let status = deadbolt(&["status", "--json", &server.dsn(), &resource]);
    assert_eq!(code(&status), 0, "{}", stderr(&status));
    assert_eq!(json(&status)["holders"][0]["mode"], "write");

    let released = deadbolt(&["release", "--force", &server.dsn(), &resource]);
    assert_eq!(code(&released), 0, "{}", stderr(&released));
    assert!(!store.exists(&key).unwrap(), "the holder lost its lock");
    let listed = deadbolt(&["list", &server.dsn()]);
    assert_eq!(code(&listed), 2);
    assert!(
        stderr(&listed).contains("cannot list its keys"),
        "{}",
        stderr(&listed)
    );
    let refused = deadbolt(&["status", "memcached://u:s3cret@127.0.0.1", "r"]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(!stderr(&refused).contains("s3cret"));
}
