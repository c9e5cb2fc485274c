//! PSR-3 logging. Engine events are collected during a call and sent to the logger afterwards,
//! once the key is no longer borrowed, so a logger may touch the lock without deadlocking.

use deadbolt_core::{Event, EventSink, Level, Store};
use ext_php_rs::binary::Binary;
use ext_php_rs::types::{ZendCallable, ZendHashTable, Zval};

use crate::error_map::exception_object;
use crate::php_call::guarded;

/// Which exception an event's context carries.
#[derive(Debug)]
enum Exception {
    None,
    /// The one the call ends with.
    TheCalls,
    /// One of its own: an earlier call's failure, found out during this one.
    Own(Zval),
}

/// One recorded event.
#[derive(Debug)]
pub struct Recorded {
    level: &'static str,
    message: &'static str,
    /// The event's figures under their context names.
    figures: [(&'static str, Option<f64>); 4],
    count: Option<u64>,
    exception: Exception,
}

/// Collects the events of one call.
#[derive(Debug, Default)]
pub struct EventLog {
    /// False when there is no logger: then nothing is kept (and nothing allocated).
    recording: bool,
    events: Vec<Recorded>,
}

impl EventLog {
    /// A log that keeps events only when `recording` (a logger is set).
    pub fn recording(recording: bool) -> Self {
        EventLog {
            recording,
            events: Vec::new(),
        }
    }
}

impl EventSink for EventLog {
    fn emit(&mut self, event: Event<'_>) {
        if !self.recording {
            return;
        }
        self.events.push(Recorded {
            level: event.level.as_str(),
            message: event.message,
            figures: [
                // symfony/semaphore names the TTL of its "Expiration defined" message so.
                (ttl_name(event.message), event.ttl),
                ("wait", event.wait),
                ("hold", event.hold),
                ("timeout", event.timeout),
            ],
            count: event.count,
            exception: match event.error {
                None => Exception::None,
                Some(error) if event.earlier => {
                    exception_object(error).map_or(Exception::None, Exception::Own)
                }
                Some(_) => Exception::TheCalls,
            },
        });
    }
}

/// The context key of a message's TTL: `ttlInSecond` where its template says so
/// (symfony/semaphore's), `ttl` otherwise (symfony/lock's).
fn ttl_name(message: &str) -> &'static str {
    if message.contains("{ttlInSecond}") {
        "ttlInSecond"
    } else {
        "ttl"
    }
}

impl EventLog {
    /// Sends the events to `logger` (`$logger->log($level, $message, $context)`). Failures of the
    /// logger itself are left to PHP (an exception it throws propagates as usual).
    pub fn send(self, logger: &Zval, resource: &[u8], exception: Option<&Zval>) {
        for event in self.events {
            let mut context = ZendHashTable::new();
            let _ = context.insert("resource", Binary::new(resource.to_vec()));
            for (name, figure) in event.figures {
                if let Some(figure) = figure {
                    let _ = context.insert(name, figure);
                }
            }
            if let Some(count) = event.count {
                let _ = context.insert("count", i64::try_from(count).unwrap_or(i64::MAX));
            }
            match (&event.exception, exception) {
                (Exception::TheCalls, Some(exception)) => {
                    let _ = context.insert("exception", exception.shallow_clone());
                }
                (Exception::Own(own), _) => {
                    let _ = context.insert("exception", own.shallow_clone());
                }
                _ => {}
            }
            let _ = guarded(|| {
                logger.try_call_method("log", vec![&event.level, &event.message, &context])
            });
        }
    }
}

/// A warning about a store's setup (an evicting Redis) noticed during the last calls, once.
pub fn take_store_warning(store: &dyn Store) -> Option<String> {
    store
        .capabilities()
        .expiring
        .and_then(|store| store.take_warning())
}

/// Passes on a warning about a store's setup: to PHP's error log and, when there is one, to the
/// logger at level `warning`.
pub fn report_store_warning(
    warning: &str,
    logger: Option<&Zval>,
    resource: impl FnOnce() -> Vec<u8>,
) {
    if let Ok(error_log) = ZendCallable::try_from_name("error_log") {
        let _ = guarded(|| error_log.try_call(vec![&format!("Deadbolt: {warning}")]));
    }
    if let Some(logger) = logger {
        let mut context = ZendHashTable::new();
        let _ = context.insert("resource", Binary::new(resource()));
        let _ = guarded(|| {
            logger.try_call_method("log", vec![&Level::Warning.as_str(), &warning, &context])
        });
    }
}
