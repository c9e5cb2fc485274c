//! Argument checks shared by the PHP classes.

use deadbolt_core::Ttl;
use ext_php_rs::exception::PhpResult;
use ext_php_rs::types::{ZendObject, Zval};

use crate::error_map::to_php;

/// A TTL in seconds from PHP, validated (positive, finite).
pub fn ttl(secs: f64) -> PhpResult<Ttl> {
    Ttl::from_secs(secs).map_err(to_php)
}

/// An optional TTL from PHP: `null` means "no expiry".
pub fn optional_ttl(secs: Option<f64>) -> PhpResult<Option<Ttl>> {
    secs.map(ttl).transpose()
}

/// A counted reference to a PHP object, to keep (a logger).
pub fn object_zval(object: &mut ZendObject) -> Zval {
    let mut zval = Zval::new();
    zval.set_object(object);
    zval
}
