//! Semaphores on the lock engine, against a real redis-server and in memory: at most `limit`
//! weight held, symfony/semaphore's data on Redis (so a slot one library writes counts for the
//! other), waiters handed freed weight in their order of arrival (a heavy waiter is not overtaken
//! by a light one behind it), deadlines, expiry.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: an unwrap failing is the test failing

mod support;

use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use deadbolt_core::{
    semaphores, InMemoryStore, Key, Lock, Mode, NativeTransport, RedisStore, Silent, Slots, Store,
    StoreRef, Ttl, Wait,
};
use support::{unique, RedisServer};

fn ttl(secs: f64) -> Ttl {
    Ttl::from_secs(secs).unwrap()
}

fn redis_store(redis: &RedisServer) -> Rc<dyn Store> {
    let store: RedisStore<NativeTransport> = RedisStore::connect(&redis.url(), ttl(300.0)).unwrap();
    semaphores(Rc::new(store)).unwrap()
}

/// A semaphore (the engine's lock on a key with slots) of `weight` in `limit`.
fn semaphore(store: &Rc<dyn Store>, resource: &str, limit: i64, weight: i64, secs: f64) -> Lock {
    let key = Key::with_slots(resource, Slots::new(limit, weight).unwrap());
    let key = Arc::new(parking_lot::Mutex::new(key));
    Lock::new(
        key,
        StoreRef::Owned(Rc::clone(store)),
        Some(ttl(secs)),
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

#[test]
fn slots_refuse_a_limit_or_weight_symfony_semaphore_refuses() {
    let message = |r: deadbolt_core::Result<Slots>| r.unwrap_err().to_string();
    assert!(message(Slots::new(0, 1)).contains("The limit (0) should be greater than 0."));
    assert!(message(Slots::new(2, 0)).contains("The weight (0) should be greater than 0."));
    assert!(message(Slots::new(2, 3))
        .contains("The weight (3) should be lower or equals to the limit (2)."));
}

#[test]
fn at_most_the_limit_is_held_in_memory_and_in_redis() {
    let redis = RedisServer::start();
    let memory: Rc<dyn Store> = semaphores(Rc::new(InMemoryStore::new())).unwrap();
    for store in [memory, redis_store(&redis)] {
        let resource = unique("limit");
        let mut a = semaphore(&store, &resource, 4, 2, 30.0);
        let mut b = semaphore(&store, &resource, 4, 2, 30.0);
        let mut c = semaphore(&store, &resource, 4, 1, 30.0);
        assert!(acquire(&mut a, Wait::No));
        assert!(acquire(&mut b, Wait::No));
        assert!(
            !acquire(&mut c, Wait::No),
            "4 of 4 held: no room for 1 more"
        );
        assert!(a.is_acquired().unwrap() && b.is_acquired().unwrap());
        assert!(!c.is_acquired().unwrap());
        // Acquiring again what one holds is fine (its slot is put off).
        assert!(acquire(&mut a, Wait::No));
        a.release(&mut Silent).unwrap();
        assert!(!a.is_acquired().unwrap());
        assert!(acquire(&mut c, Wait::No), "the weight a gave back is free");
    }
}

#[test]
fn a_lock_and_a_semaphore_on_one_name_are_two_things() {
    let redis = RedisServer::start();
    let plain: RedisStore<NativeTransport> = RedisStore::connect(&redis.url(), ttl(300.0)).unwrap();
    let resource = unique("both");
    let mut lock_key = Key::new(resource.clone());
    plain.save(&mut lock_key, Mode::Exclusive, None).unwrap();
    let store = redis_store(&redis);
    let mut only = semaphore(&store, &resource, 1, 1, 30.0);
    assert!(acquire(&mut only, Wait::No));
}

/// The slots are symfony/semaphore's two sorted sets: `{r}:weight` (token -> weight) and
/// `{r}:time` (token -> expiry in whole Unix seconds), living 10 s past the latest expiry.
#[test]
fn redis_keeps_symfony_semaphores_data() {
    let redis = RedisServer::start();
    let mut con = redis.client();
    let store = redis_store(&redis);
    let resource = unique("data");
    let mut s = semaphore(&store, &resource, 3, 2, 30.0);
    assert!(acquire(&mut s, Wait::No));
    let weights: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("{{{resource}}}:weight"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut con)
        .unwrap();
    let times: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("{{{resource}}}:time"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut con)
        .unwrap();
    let (now, _): (i64, i64) = redis::cmd("TIME").query(&mut con).unwrap();
    assert_eq!(weights.len(), 1);
    assert_eq!(weights[0].1, 2.0);
    assert_eq!(times[0].0, weights[0].0, "one token in both sets");
    let expiry = times[0].1;
    assert_eq!(
        expiry.fract(),
        0.0,
        "whole seconds, as symfony/semaphore's EXPIREAT needs"
    );
    assert!(
        (now as f64 + 29.0..=now as f64 + 31.0).contains(&expiry),
        "{expiry} vs {now}"
    );
    let key_ttl: i64 = redis::cmd("TTL")
        .arg(format!("{{{resource}}}:time"))
        .query(&mut con)
        .unwrap();
    assert!((38..=41).contains(&key_ttl), "{key_ttl}");
    s.release(&mut Silent).unwrap();
    let left: i64 = redis::cmd("ZCARD")
        .arg(format!("{{{resource}}}:weight"))
        .query(&mut con)
        .unwrap();
    assert_eq!(left, 0);
}

/// A slot symfony/semaphore wrote counts (and an expired one of its does not).
#[test]
fn slots_written_as_symfony_semaphore_writes_them_count() {
    let redis = RedisServer::start();
    let mut con = redis.client();
    let store = redis_store(&redis);
    let resource = unique("peer");
    let (now, _): (i64, i64) = redis::cmd("TIME").query(&mut con).unwrap();
    let write = |con: &mut redis::Connection, token: &str, weight: i64, expiry: i64| {
        redis::pipe()
            .cmd("ZADD")
            .arg(format!("{{{resource}}}:weight"))
            .arg(weight)
            .arg(token)
            .cmd("ZADD")
            .arg(format!("{{{resource}}}:time"))
            .arg(expiry)
            .arg(token)
            .exec(con)
            .unwrap();
    };
    write(&mut con, "expired", 4, now - 5);
    write(&mut con, "live", 3, now + 100);
    let mut two = semaphore(&store, &resource, 4, 2, 30.0);
    assert!(!acquire(&mut two, Wait::No), "3 of 4 held by the peer");
    let mut one = semaphore(&store, &resource, 4, 1, 30.0);
    assert!(acquire(&mut one, Wait::No));
    let expired: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("{{{resource}}}:weight"))
        .arg("expired")
        .query(&mut con)
        .unwrap();
    assert_eq!(expired, None, "expired slots are dropped from both sets");
}

/// Puts a waiter of `weight` in `limit` at the back of the semaphore's queue, as a waiting
/// process's save script would, but seen alive for a minute: a real waiter stays alive only while
/// it asks again within `ALIVE_FOR` (400 ms), which a loaded machine cannot promise a test, and a
/// waiter that stops asking losing its place is the design, not what these tests are about.
fn queue_waiter(con: &mut redis::Connection, resource: &str, token: &str, weight: i64, limit: i64) {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(con).unwrap();
    let now_ms = secs * 1000 + micros / 1000;
    let queue = format!("{{{resource}}}#deadbolt:squeue");
    let waiters = format!("{{{resource}}}#deadbolt:swaiters");
    let alive_until = now_ms + 60_000;
    redis::pipe()
        .cmd("ZADD")
        .arg(&queue)
        .arg(now_ms)
        .arg(token)
        .cmd("HSET")
        .arg(&waiters)
        .arg(token)
        .arg(format!("{alive_until} {weight} {limit} 30000"))
        .cmd("PEXPIRE")
        .arg(&queue)
        .arg(60_000)
        .cmd("PEXPIRE")
        .arg(&waiters)
        .arg(60_000)
        .query::<()>(con)
        .unwrap();
}

/// The weight `token` holds in the semaphore's symfony/semaphore sets, if any.
fn weight_held(con: &mut redis::Connection, resource: &str, token: &str) -> Option<f64> {
    redis::cmd("ZSCORE")
        .arg(format!("{{{resource}}}:weight"))
        .arg(token)
        .query(con)
        .unwrap()
}

/// First come, first served: a light caller that would fit does not go before a heavy waiter that
/// came first; a release hands the freed weight to the heavy one first, and the light one fits
/// beside it. Every attempt, waiting or not, meets the same rule (save.lua: nobody alive waits
/// before me); the light caller here does not wait, since a waiting one keeps the queue alive only
/// while it asks again within `ALIVE_FOR`, as a real heavy waiter does (`queue_waiter`).
#[test]
fn a_heavy_waiter_is_not_overtaken_by_a_light_one_behind_it() {
    let redis = RedisServer::start();
    let mut con = redis.client();
    let resource = unique("fifo");
    let store = redis_store(&redis);
    let mut holder = semaphore(&store, &resource, 4, 2, 30.0);
    assert!(acquire(&mut holder, Wait::No));
    queue_waiter(&mut con, &resource, "heavy", 3, 4);
    // 2 + 1 fits under 4, but the heavy waiter came first.
    let mut light = semaphore(&store, &resource, 4, 1, 30.0);
    assert!(
        !acquire(&mut light, Wait::No),
        "the light caller went before the heavy waiter"
    );
    holder.release(&mut Silent).unwrap();
    assert_eq!(
        weight_held(&mut con, &resource, "heavy"),
        Some(3.0),
        "the release handed the heavy waiter its weight"
    );
    let granted: i64 = redis::cmd("LLEN")
        .arg(format!("{{{resource}}}#deadbolt:squeue:heavy"))
        .query(&mut con)
        .unwrap();
    assert_eq!(granted, 1, "the heavy waiter was signalled");
    assert!(
        acquire(&mut light, Wait::No),
        "3 + 1 of 4: room for the light one"
    );
    let mut more = semaphore(&store, &resource, 4, 1, 30.0);
    assert!(!acquire(&mut more, Wait::No), "4 of 4 held");
}

/// The weight held never passes the limit: threads on their own connections, random weights,
/// each checking a shared tally of what is held while it holds.
#[test]
fn many_waiters_never_hold_more_than_the_limit() {
    let redis = RedisServer::start();
    let resource = unique("tally");
    let held = Arc::new(AtomicI64::new(0));
    let most = Arc::new(AtomicI64::new(0));
    let start = Arc::new(Barrier::new(8));
    let workers: Vec<_> = (0..8i64)
        .map(|n| {
            let (url, resource) = (redis.url(), resource.clone());
            let (held, most, start) = (Arc::clone(&held), Arc::clone(&most), Arc::clone(&start));
            thread::spawn(move || {
                let store = semaphores(Rc::new(
                    RedisStore::<NativeTransport>::connect(
                        &format!("{url}?timeout={}", 5 + n),
                        ttl(300.0),
                    )
                    .unwrap(),
                ))
                .unwrap();
                let weight = 1 + n % 3;
                start.wait();
                for _ in 0..20 {
                    let mut s = semaphore(&store, &resource, 4, weight, 30.0);
                    assert!(acquire(&mut s, within(30.0)));
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

/// A slot that expired is gone: the weight is free again, and its holder's refresh fails.
#[test]
fn an_expired_slot_frees_its_weight() {
    let redis = RedisServer::start();
    let store = redis_store(&redis);
    let resource = unique("expiry");
    let mut short = semaphore(&store, &resource, 1, 1, 1.0);
    assert!(acquire(&mut short, Wait::No));
    let mut next = semaphore(&store, &resource, 1, 1, 30.0);
    // Whole seconds: the slot is gone within two of them; the wait gets it when it is.
    assert!(acquire(&mut next, within(10.0)));
    assert!(!short.is_acquired().unwrap());
    assert!(short.refresh(None, &mut Silent).is_err());
    // Releasing the expired slot gives back nothing, and takes nothing from the one who has it now.
    short.release(&mut Silent).unwrap();
    assert!(next.is_acquired().unwrap());
    let mut third = semaphore(&store, &resource, 1, 1, 30.0);
    assert!(!acquire(&mut third, Wait::No));
}

/// A slot too few replicas acknowledged does not count, and is given back: it never holds weight unseen by a
/// replica (here a server with no replica at all, so nothing is ever acknowledged).
#[test]
fn a_slot_no_replica_acknowledged_is_given_back() {
    let redis = RedisServer::start();
    let mut con = redis.client();
    let store: RedisStore<NativeTransport> = RedisStore::connect(
        &format!("{}?replicas=1&replicas_timeout=0.1", redis.url()),
        ttl(300.0),
    )
    .unwrap();
    let store = semaphores(Rc::new(store)).unwrap();
    let resource = unique("unacknowledged");
    let mut s = semaphore(&store, &resource, 2, 1, 30.0);
    let error = s
        .acquire(Mode::Exclusive, Wait::No, &mut Silent)
        .unwrap_err()
        .to_string();
    assert!(error.contains("semaphore"), "{error}");
    let held: i64 = redis::cmd("ZCARD")
        .arg(format!("{{{resource}}}:weight"))
        .query(&mut con)
        .unwrap();
    assert_eq!(held, 0, "the unacknowledged slot was left held");
}
