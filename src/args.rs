//! Argument checks shared by the PHP classes.

use deadbolt_core::Ttl;
use ext_php_rs::exception::PhpResult;
use ext_php_rs::types::{ZendCallable, ZendObject, Zval};

use crate::error_map::{to_php, type_error};

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
            exists.try_call(vec![&candidate, &"log"])
        })
        .ok()
        .and_then(|answer| answer.bool())
        .unwrap_or(false);
    if !has_log {
        return Err(type_error(format!(
            "{function}: Argument #1 ($logger) must be a PSR-3 logger (an object with a log() method), {} given",
            object.get_class_name().unwrap_or_default()
        )));
    }
    let mut zval = Zval::new();
    zval.set_object(object);
    Ok(zval)
}
