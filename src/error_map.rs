//! Engine errors to PHP exceptions: the only place that knows which class each error becomes.
//! The exception object is built here (message, code 0, previous) so that the same object can be
//! thrown and handed to the logger as `exception`.

use deadbolt_core::{Error, ErrorKind, SqlFailure};
use ext_php_rs::convert::IntoZval;
use ext_php_rs::exception::PhpException;
use ext_php_rs::types::{ZendObject, Zval};
use ext_php_rs::zend::ClassEntry;

use crate::exceptions::ExceptionClass;

/// The PHP class for an engine error.
fn class_of(err: &Error) -> ExceptionClass {
    match err.kind() {
        ErrorKind::InvalidArgument => ExceptionClass::InvalidArgument,
        ErrorKind::InvalidTtl => ExceptionClass::InvalidTtl,
        ErrorKind::Conflict => ExceptionClass::LockConflicted,
        ErrorKind::Expired => ExceptionClass::LockExpired,
        ErrorKind::Storage => ExceptionClass::LockStorage,
        ErrorKind::Unserializable => ExceptionClass::UnserializableKey,
        ErrorKind::Acquiring => ExceptionClass::LockAcquiring,
        ErrorKind::Releasing => ExceptionClass::LockReleasing,
    }
}

/// A new exception object of class `ce` with `message` and `previous`, made as PHP code would
/// make one with `\Exception`'s constructor (`new X($message, 0, $previous)`), so file, line and
/// trace point at the calling PHP code. `\Exception`'s and not the class's own: symfony/semaphore's
/// Semaphore*Exception classes take `(Key $key, string $message)` and word the message themselves.
pub fn new_exception(ce: &ClassEntry, message: &str, previous: Option<Zval>) -> Option<Zval> {
    let object = ZendObject::new(ce);
    let mut args = vec![message.into_zval(false).ok()?, 0i64.into_zval(false).ok()?];
    args.extend(previous);
    let constructed =
        crate::php_call::guarded(|| crate::exceptions::construct_as_exception(&object, args));
    if !constructed.ok()? {
        return None;
    }
    let mut zval = Zval::new();
    IntoZval::set_zval(object, &mut zval, false).ok()?;
    Some(zval)
}

/// The exception object for `err`, with its cause chain as `previous`. A statement a database
/// refused is a `\PDOException` (see [`crate::pdo_exception`]).
pub fn exception_object(err: &Error) -> Option<Zval> {
    if let Some(failure) = refused_statement(err) {
        return crate::pdo_exception::rebuilt(failure, &err.to_string());
    }
    let previous = err
        .cause()
        .and_then(exception_object)
        .or_else(|| thrown(err));
    new_exception(class_of(err).entry(), &err.to_string(), previous)
}

/// The statement a database refused that `err` reports, when it is one.
fn refused_statement(err: &Error) -> Option<&SqlFailure> {
    match err {
        Error::Storage {
            source: Some(source),
            ..
        } => source.downcast_ref::<SqlFailure>(),
        _ => None,
    }
}

/// The exception a store written in PHP threw that became `err` (a failure of the store).
fn thrown(err: &Error) -> Option<Zval> {
    match err {
        Error::Storage { .. } => crate::user_store::thrown_for(&err.to_string()),
        _ => None,
    }
}

/// Wraps an exception object (or, should building it fail, a plain one) for throwing.
pub fn throwable(err: &Error, object: Option<Zval>) -> PhpException {
    let class = class_of(err);
    let exception = PhpException::new(err.to_string(), 0, class.entry());
    match object {
        Some(object) => exception.with_object(object),
        None => exception,
    }
}

/// Converts an engine error into the exception to throw.
pub fn to_php(err: Error) -> PhpException {
    let object = exception_object(&err);
    throwable(&err, object)
}

/// Which exception family an error of a call becomes: a lock's (`Deadbolt\Exception\*`), or a
/// semaphore's (symfony/semaphore's classes under `Deadbolt\Semaphore\Exception\`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Lock,
    Semaphore,
}

impl Family {
    /// The exception object for `err` (its cause chain, as a lock's, as `previous`).
    pub fn exception_object(self, err: &Error) -> Option<Zval> {
        match self {
            Family::Lock => exception_object(err),
            Family::Semaphore => {
                // A store written in PHP that failed: its own exception is the previous one,
                // as symfony/semaphore's Semaphore wraps a store's exception.
                let previous = match err.cause() {
                    Some(cause) => thrown(cause).or_else(|| exception_object(cause)),
                    None => thrown(err),
                };
                new_exception(
                    semaphore_class_of(err).entry(),
                    &semaphore_message(err),
                    previous,
                )
            }
        }
    }

    /// Wraps an exception object of this family (or a plain one) for throwing.
    pub fn throwable(self, err: &Error, object: Option<Zval>) -> PhpException {
        match self {
            Family::Lock => throwable(err, object),
            Family::Semaphore => {
                let class = semaphore_class_of(err).entry();
                let exception = PhpException::new(semaphore_message(err), 0, class);
                match object {
                    Some(object) => exception.with_object(object),
                    None => exception,
                }
            }
        }
    }
}

/// symfony/semaphore's class for a semaphore's error: a slot no longer held (taken away, expired,
/// lost) is `SemaphoreExpiredException`, bad input `InvalidArgumentException`, a failing store
/// `RuntimeException` (as symfony/semaphore wraps a store's failure).
fn semaphore_class_of(err: &Error) -> ExceptionClass {
    match err.kind() {
        ErrorKind::InvalidArgument | ErrorKind::InvalidTtl => {
            ExceptionClass::SemaphoreInvalidArgument
        }
        ErrorKind::Conflict | ErrorKind::Expired => ExceptionClass::SemaphoreExpired,
        _ => ExceptionClass::SemaphoreRuntime,
    }
}

/// symfony/semaphore's wording where it has one ("The semaphore "x" has expired: ...").
fn semaphore_message(err: &Error) -> String {
    match err {
        Error::Conflict { resource, store, .. } => format!(
            "The semaphore \"{resource}\" has expired: this key holds no slot of it in {store} any more."
        ),
        Error::Expired { message } => {
            format!("The semaphore has expired: {}", message.trim_end_matches('.')) + "."
        }
        _ => err.to_string(),
    }
}

/// A `Deadbolt\Exception\InvalidArgumentException` with `message`.
pub fn invalid_argument(message: String) -> PhpException {
    to_php(Error::InvalidArgument { message })
}

/// A `Deadbolt\Exception\LockConflictedException` with `message` (a lock someone else holds,
/// in the caller's own words: `Lock::run()`).
pub fn lock_conflicted(message: &str) -> PhpException {
    let class = ExceptionClass::LockConflicted.entry();
    let exception = PhpException::new(message.into(), 0, class);
    match new_exception(class, message, None) {
        Some(object) => exception.with_object(object),
        None => exception,
    }
}

/// A `\BadMethodCallException` with `message` (symfony/lock's for what a Lock cannot do).
pub fn bad_method_call_exception(message: &str) -> PhpException {
    let class = crate::exceptions::bad_method_call();
    let exception = PhpException::new(message.into(), 0, class);
    match new_exception(class, message, None) {
        Some(object) => exception.with_object(object),
        None => exception,
    }
}

/// What `Class::__set_state()` (the code `var_export()` writes) throws: Deadbolt's objects keep
/// their state in Rust, out of `var_export()`'s sight, so its output cannot rebuild them.
pub fn not_rebuildable(class: &str, instead: &str) -> PhpException {
    bad_method_call_exception(&format!(
        "A {class} cannot be rebuilt from var_export() output: its state is not in its \
         properties. {instead}"
    ))
}

/// A `\TypeError` as PHP raises for a wrong argument type.
pub fn type_error(message: String) -> PhpException {
    PhpException::new(message, 0, ext_php_rs::zend::ce::type_error())
}
