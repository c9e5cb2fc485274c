//! The one boundary for every call Deadbolt makes into PHP code: a Redis client's methods, a
//! logger's `log()`, `method_exists`, `error_log`, `register_shutdown_function`, an exception's
//! constructor.
//!
//! PHP code can end the script in the middle of such a call in two ways, and neither is an
//! exception Deadbolt may catch:
//! - a fatal error (`E_USER_ERROR`, `max_execution_time`) "bails out": the engine longjmps to its
//!   nearest `zend_try`, skipping every Rust frame in between, so their destructors never run (a
//!   Key's mutex would stay locked, a borrow taken);
//! - `exit()`, and memory exhaustion while PHP code runs (PHP 8.2+ turns that one into an exit),
//!   leave an "unwind exit" in place of an exception: the call returns, and PHP unwinds every
//!   frame once control is back in the engine. It is no Throwable: it has no `getMessage()`.
//!
//! [`guarded`] turns both into an ordinary error right at the call, so the Rust side unwinds
//! normally (every guard dropped, every lock released). After a bailout nothing more is called
//! into PHP, and [`method`] (the end of a method that may call into PHP) or [`reraise`] (the end
//! of an engine hook) raises it again where nothing of Deadbolt's is left on the stack. An unwind
//! exit stays the engine's pending exception; it goes on once control is back in the engine.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;

use ext_php_rs::ffi::zend_object;
use ext_php_rs::zend::{bailout, try_catch, CatchError, ExecutorGlobals};

/// How PHP code ended the script during a call into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A fatal error: the engine bailed out.
    Bailout,
    /// `exit()` or memory exhaustion: an unwind exit is pending.
    Exit,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Ended::Bailout => "a fatal error ended the script during the call",
            Ended::Exit => "the script ended (exit or memory exhausted) during the call",
        })
    }
}

thread_local! {
    /// A bailout caught during a call, until it is handed back to the engine.
    static ENDED: Cell<Option<Ended>> = const { Cell::new(None) };
}

extern "C" {
    /// `zend_is_unwind_exit()` and `zend_is_graceful_exit()` (Zend/zend_exceptions.h, PHP 8.0 and
    /// 8.1+): whether an exception object is PHP's marker for an ending script.
    fn zend_is_unwind_exit(ex: *const zend_object) -> bool;
    fn zend_is_graceful_exit(ex: *const zend_object) -> bool;
}

/// Whether an exception (or an ending script's unwind exit) is pending in the engine.
pub fn exception_in_flight() -> bool {
    !ExecutorGlobals::get().exception.is_null()
}

/// Whether the engine's pending exception is an unwind exit (the script is ending).
pub fn exit_pending() -> bool {
    let exception = ExecutorGlobals::get().exception;
    // SAFETY: a non-null `EG(exception)` is a live object; both functions only read its class.
    !exception.is_null()
        && unsafe { zend_is_unwind_exit(exception) || zend_is_graceful_exit(exception) }
}

/// Runs `call`, a call into PHP code; a script ended inside it becomes `Err`. After a bailout,
/// nothing more is called until it is raised again.
pub fn guarded<R>(call: impl FnOnce() -> R) -> Result<R, Ended> {
    if let Some(ended) = ENDED.get() {
        return Err(ended);
    }
    match try_catch(AssertUnwindSafe(call)) {
        // The unwind exit is the engine's pending exception from now on, in flight like any
        // other (callers set it aside to call into PHP, and never take it).
        Ok(_) if exit_pending() => Err(Ended::Exit),
        Ok(value) => Ok(value),
        // A panic of Deadbolt's own code inside the call goes on to the method's handler, which
        // turns it into an Error exception.
        Err(CatchError::Panic(message)) => std::panic::resume_unwind(Box::new(message)),
        Err(_) => {
            ENDED.set(Some(Ended::Bailout));
            Err(Ended::Bailout)
        }
    }
}

/// Hands an ending back to the engine. Call it only where the Rust state is consistent: nothing
/// borrowed, no guard alive below the caller.
pub fn reraise() {
    if ENDED.take() == Some(Ended::Bailout) {
        bail();
    }
    // An unwind exit is still the engine's pending exception: it goes on once control is back.
}

fn bail() -> ! {
    // SAFETY: callers hold nothing that needs dropping; the engine continues its fatal error from
    // here as it would have from inside the call.
    unsafe { bailout() }
}

/// Runs the body of a PHP method that may call into PHP, then hands back an ending that happened
/// inside it: by then every value the body held is dropped. (A value returned while an unwind exit
/// is pending, an exception to throw included, is discarded by PHP.)
pub fn method<R>(body: impl FnOnce() -> R) -> R {
    let result = body();
    if ENDED.take() == Some(Ended::Bailout) {
        drop(result);
        bail();
    }
    result
}

/// A new request starts with nothing pending.
pub fn reset() {
    ENDED.set(None);
}
