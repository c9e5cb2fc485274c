//! Scalar parameters read as PHP reads those of its own functions: in a caller's weak mode `42`
//! becomes `"42"`, `"30"` becomes `30.0` and `1` becomes `true` (with PHP's deprecation for a
//! null, its warning for a leading-numeric string); under `strict_types` only what PHP's own
//! functions take there. What neither allows is a TypeError in PHP's own words
//! (`Deadbolt\LockFactory::createLock(): Argument #2 ($ttl) must be of type ?float, array given`).
//!
//! ext-php-rs accepts a value only of the exact type and words its refusal its own way, so each
//! type here asks the engine (`zend_parse_arg_*_slow`, which knows the caller's strictness) and
//! throws the engine's TypeError itself. `ARG` is the parameter's position (1 for the first, not
//! counting `$this`), which PHP's message names. The TypeError is thrown before ext-php-rs sees
//! the refusal; it then throws nothing of its own, as it never throws over a pending exception.

use std::ffi::{c_char, CStr};

use ext_php_rs::convert::{FromZvalMut, StubLiteral};
use ext_php_rs::ffi::{zend_string, zval};
use ext_php_rs::flags::DataType;
use ext_php_rs::types::Zval;

extern "C" {
    fn zend_parse_arg_double_slow(arg: *mut zval, dest: *mut f64, arg_num: u32) -> bool;
    fn zend_parse_arg_str_slow(arg: *mut zval, dest: *mut *mut zend_string, arg_num: u32) -> bool;
    fn zend_parse_arg_bool_slow(arg: *mut zval, dest: *mut bool, arg_num: u32) -> bool;
    fn zend_argument_type_error(arg_num: u32, format: *const c_char, ...);
    /// What PHP's own messages call the given value: its type (8.2), or, from 8.3, its value
    /// for `true`/`false` and its class for an object.
    #[cfg(php_zval_value_name)]
    fn zend_zval_value_name(arg: *const zval) -> *const c_char;
    #[cfg(not(php_zval_value_name))]
    fn zend_zval_type_name(arg: *const zval) -> *const c_char;
}

/// Throws PHP's TypeError for argument `arg` of the running function: "must be of type
/// `expected`, X given".
pub(crate) fn refuse(arg: u32, expected: &CStr, given: &Zval) {
    // SAFETY: called while the engine runs the internal function whose argument this is (the
    // message names it from the current frame); both strings are NUL-terminated and outlive the
    // call, which copies them into the message.
    unsafe {
        #[cfg(php_zval_value_name)]
        let name = zend_zval_value_name(given);
        #[cfg(not(php_zval_value_name))]
        let name = zend_zval_type_name(given);
        zend_argument_type_error(
            arg,
            c"must be of type %s, %s given".as_ptr(),
            expected.as_ptr(),
            name,
        );
    }
}

/// A `float` parameter.
#[derive(Debug, Clone, Copy)]
pub struct Float<const ARG: u32>(pub f64);

/// A `?float` parameter.
#[derive(Debug, Clone, Copy)]
pub struct OptionalFloat<const ARG: u32>(pub Option<f64>);

/// A `bool` parameter.
#[derive(Debug, Clone, Copy)]
pub struct Bool<const ARG: u32>(pub bool);

/// A `string` parameter, as bytes (a resource name may be any bytes).
#[derive(Debug, Clone)]
pub struct Bytes<const ARG: u32>(pub Vec<u8>);

/// A `?string` parameter, as bytes.
#[derive(Debug, Clone)]
pub struct OptionalBytes<const ARG: u32>(pub Option<Vec<u8>>);

fn float(zval: &mut Zval, arg: u32, expected: &CStr) -> Option<f64> {
    if let Some(value) = zval.double() {
        return Some(value);
    }
    let mut value = 0.0;
    // SAFETY: a live argument zval (which the engine may convert in place, as it does for its
    // own functions) and a place for the result.
    if unsafe { zend_parse_arg_double_slow(zval, &mut value, arg) } {
        return Some(value);
    }
    refuse(arg, expected, zval);
    None
}

fn bytes(zval: &mut Zval, arg: u32, expected: &CStr) -> Option<Vec<u8>> {
    if let Some(value) = zval.zend_str() {
        return Some(value.as_bytes().to_vec());
    }
    let mut value: *mut zend_string = std::ptr::null_mut();
    // SAFETY: as in `float`; on success the engine has turned the zval into that string.
    if unsafe { zend_parse_arg_str_slow(zval, &mut value, arg) } {
        return zval.zend_str().map(|value| value.as_bytes().to_vec());
    }
    refuse(arg, expected, zval);
    None
}

impl<'a, const ARG: u32> FromZvalMut<'a> for Float<ARG> {
    const TYPE: DataType = DataType::Double;

    fn from_zval_mut(zval: &'a mut Zval) -> Option<Self> {
        float(zval, ARG, c"float").map(Float)
    }
}

impl<'a, const ARG: u32> FromZvalMut<'a> for OptionalFloat<ARG> {
    const TYPE: DataType = DataType::Double;
    const NULLABLE: bool = true;

    fn from_zval_mut(zval: &'a mut Zval) -> Option<Self> {
        if zval.is_null() {
            return Some(OptionalFloat(None));
        }
        float(zval, ARG, c"?float").map(|value| OptionalFloat(Some(value)))
    }

    fn from_missing() -> Option<Self> {
        Some(OptionalFloat(None))
    }
}

impl<'a, const ARG: u32> FromZvalMut<'a> for Bool<ARG> {
    const TYPE: DataType = DataType::Bool;

    fn from_zval_mut(zval: &'a mut Zval) -> Option<Self> {
        if let Some(value) = zval.bool() {
            return Some(Bool(value));
        }
        let mut value = false;
        // SAFETY: as in `float`.
        if unsafe { zend_parse_arg_bool_slow(zval, &mut value, ARG) } {
            return Some(Bool(value));
        }
        refuse(ARG, c"bool", zval);
        None
    }
}

impl<'a, const ARG: u32> FromZvalMut<'a> for Bytes<ARG> {
    const TYPE: DataType = DataType::String;

    fn from_zval_mut(zval: &'a mut Zval) -> Option<Self> {
        bytes(zval, ARG, c"string").map(Bytes)
    }
}

impl<'a, const ARG: u32> FromZvalMut<'a> for OptionalBytes<ARG> {
    const TYPE: DataType = DataType::String;
    const NULLABLE: bool = true;

    fn from_zval_mut(zval: &'a mut Zval) -> Option<Self> {
        if zval.is_null() {
            return Some(OptionalBytes(None));
        }
        bytes(zval, ARG, c"?string").map(|value| OptionalBytes(Some(value)))
    }

    fn from_missing() -> Option<Self> {
        Some(OptionalBytes(None))
    }
}

// The defaults the `#[php(defaults(...))]` attributes give, and how the stubs print them.

impl<const ARG: u32> From<f64> for Float<ARG> {
    fn from(value: f64) -> Self {
        Float(value)
    }
}

impl<const ARG: u32> From<f64> for OptionalFloat<ARG> {
    fn from(value: f64) -> Self {
        OptionalFloat(Some(value))
    }
}

impl<const ARG: u32> From<Option<f64>> for OptionalFloat<ARG> {
    fn from(value: Option<f64>) -> Self {
        OptionalFloat(value)
    }
}

impl<const ARG: u32> From<bool> for Bool<ARG> {
    fn from(value: bool) -> Self {
        Bool(value)
    }
}

impl<const ARG: u32> From<Option<Vec<u8>>> for OptionalBytes<ARG> {
    fn from(value: Option<Vec<u8>>) -> Self {
        OptionalBytes(value)
    }
}

impl<const ARG: u32> StubLiteral for Float<ARG> {
    fn stub_literal(&self) -> String {
        self.0.stub_literal()
    }
}

impl<const ARG: u32> StubLiteral for OptionalFloat<ARG> {
    fn stub_literal(&self) -> String {
        self.0.stub_literal()
    }
}

impl<const ARG: u32> StubLiteral for Bool<ARG> {
    fn stub_literal(&self) -> String {
        self.0.stub_literal()
    }
}

impl<const ARG: u32> StubLiteral for OptionalBytes<ARG> {
    fn stub_literal(&self) -> String {
        match &self.0 {
            None => "null".to_owned(),
            Some(bytes) => String::from_utf8_lossy(bytes).stub_literal(),
        }
    }
}
