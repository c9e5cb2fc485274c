//! Argument checks shared by the PHP classes.

use std::time::{Duration, Instant};

use deadbolt_core::{Error, Ttl, Wait};
use ext_php_rs::exception::PhpResult;
use ext_php_rs::flags::DataType;
use ext_php_rs::types::{ZendCallable, ZendObject, Zval};

use crate::error_map::{to_php, type_error};
use crate::php_call::guarded;

/// A TTL in seconds from PHP, validated (positive, finite).
pub fn ttl(secs: f64) -> PhpResult<Ttl> {
    Ttl::from_secs(secs).map_err(to_php)
}

/// An optional TTL from PHP: `null` means "no expiry".
pub fn optional_ttl(secs: Option<f64>) -> PhpResult<Option<Ttl>> {
    secs.map(ttl).transpose()
}

/// A PSR-3 logger argument: any object with a `log()` method, kept as a counted reference.
pub fn logger(object: &mut ZendObject, function: &str) -> PhpResult<Zval> {
    let has_log = ZendCallable::try_from_name("method_exists")
        .and_then(|exists| {
            let mut candidate = Zval::new();
            candidate.set_object(object);
            guarded(|| exists.try_call(vec![&candidate, &"log"]))
                .map_err(|_| ext_php_rs::error::Error::Callable)?
        })
        .ok()
        .and_then(|answer| answer.bool())
        .unwrap_or(false);
    if !has_log {
        return Err(type_error(format!(
            "{function}: Argument #1 ($logger) must be a PSR-3 logger (an object with a log() method), {} given",
            class_name(object)
        )));
    }
    let mut zval = Zval::new();
    zval.set_object(object);
    Ok(zval)
}

/// How long an acquire may wait: `$timeout` (seconds, >= 0) wins over `$blocking`.
pub fn wait(blocking: bool, timeout: Option<f64>) -> PhpResult<Wait> {
    let Some(secs) = timeout else {
        return Ok(if blocking { Wait::Forever } else { Wait::No });
    };
    let why = if secs.is_nan() {
        Some("not a number")
    } else if secs.is_infinite() {
        Some("not finite (for no limit, pass null with $blocking = true)")
    } else if secs < 0.0 {
        Some("negative")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(to_php(Error::InvalidArgument {
            message: format!(
                "The timeout must be a finite number of seconds, 0 or more: {} is {why}.",
                deadbolt_core::shown_secs(secs)
            ),
        }));
    }
    // Finite but beyond any clock (1e20 s): as good as no limit.
    let Ok(duration) = Duration::try_from_secs_f64(secs) else {
        return Ok(Wait::Forever);
    };
    if duration.is_zero() {
        return Ok(Wait::No);
    }
    Ok(Instant::now()
        .checked_add(duration)
        .map_or(Wait::Forever, Wait::Until))
}

/// A maximum hold in seconds for the refresher (positive, finite), if given.
pub fn max_hold(secs: Option<f64>) -> PhpResult<Option<Duration>> {
    secs.map(|secs| {
        Ttl::named(secs, "maxHold")
            .map(Ttl::duration)
            .map_err(to_php)
    })
    .transpose()
}

/// An object's class name for a message. Anonymous classes are named `class@anonymous` plus a NUL
/// byte and where they were declared; PHP shows the part before the NUL, and a message cannot
/// carry one.
pub fn class_name(object: &ZendObject) -> String {
    let mut name = object.get_class_name().unwrap_or_default();
    if let Some(nul) = name.find('\0') {
        name.truncate(nul);
    }
    name
}

/// Whether `object` is an instance of the class or interface `name` (false when PHP has no such
/// class: its extension or library is not loaded, so nothing can be one).
pub fn is_instance_of(object: &ZendObject, name: &str) -> bool {
    ext_php_rs::zend::ClassEntry::try_find(name).is_some_and(|ce| object.instance_of(ce))
}

/// An object's `getMessage()` (an exception's); `None` when it has none, fails or throws.
pub fn message_of(object: &ZendObject) -> Option<String> {
    guarded(|| object.try_call_method("getMessage", vec![]))
        .ok()?
        .ok()?
        .string()
}

/// What PHP's `get_debug_type()` calls a value, for a message naming what was given.
pub fn debug_type(value: &Zval) -> String {
    if let Some(object) = value.object() {
        return class_name(object);
    }
    let name = match value.get_type() {
        DataType::Null | DataType::Undef => "null",
        DataType::False | DataType::True | DataType::Bool => "bool",
        DataType::Long => "int",
        DataType::Double => "float",
        DataType::String => "string",
        DataType::Array => "array",
        DataType::Resource => "resource",
        _ => "mixed",
    };
    name.to_owned()
}
