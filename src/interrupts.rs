//! PHP's turn between the pauses of a wait (the engine's `interrupt` hook, see deadbolt-core).
//!
//! Under `pcntl_async_signals(true)` a signal sets `EG(vm_interrupt)`, and the VM runs the handler
//! at its next instruction; the `max_execution_time` timer sets it too. During a wait no PHP
//! instruction runs, so Deadbolt does what the VM's interrupt helper does, between two pauses:
//! it runs `zend_interrupt_function` (pcntl's handler dispatch) or, when the timer fired,
//! `zend_timeout()` (a fatal error), both through the boundary of php_call.rs. The wait stops
//! when a handler threw, exited or the script ended; the exception (or exit) is then the one the
//! caller sees.

use deadbolt_core::Interrupts;
use std::cell::Cell;
use std::sync::OnceLock;

use ext_php_rs::ffi::{zend_atomic_bool, zend_execute_data, zend_interrupt_function, zend_object};
use ext_php_rs::types::ZendCallable;
use ext_php_rs::zend::ExecutorGlobals;

use crate::php_call::guarded;

extern "C" {
    /// Zend/zend_atomic.h (PHP 8.2+).
    fn zend_atomic_bool_exchange(obj: *mut zend_atomic_bool, desired: bool) -> bool;
    fn zend_atomic_bool_load(obj: *const zend_atomic_bool) -> bool;
    /// Zend/zend_execute.h: the fatal error of `max_execution_time`.
    fn zend_timeout() -> !;
}

/// Installs PHP's answers in the engine (MINIT).
pub fn install() {
    deadbolt_core::set_interrupts(Interrupts { watched, requested });
}

/// The interrupt function that was there before [`watch_handlers`] (pcntl's dispatch).
static PREVIOUS: OnceLock<Option<unsafe extern "C" fn(*mut zend_execute_data)>> = OnceLock::new();

thread_local! {
    /// The exception the last signal handler threw, as long as it may still be the pending one.
    static HANDLERS: Cell<*mut zend_object> = const { Cell::new(std::ptr::null_mut()) };
}

/// Wraps the engine's interrupt function (once, at the first request: pcntl installs its own at
/// its MINIT, whichever order the modules load in) to remember an exception a signal handler
/// throws. PHP also runs handlers when a function that Deadbolt calls returns (a client's
/// method during a wait); such an exception is the application's, not the client's.
pub fn watch_handlers() {
    // SAFETY: the engine's global, read and replaced on PHP's thread before any script runs.
    unsafe {
        let previous = zend_interrupt_function;
        if PREVIOUS.set(previous).is_ok() && previous.is_some() {
            zend_interrupt_function = Some(after_handlers);
        }
    }
}

unsafe extern "C" fn after_handlers(frame: *mut zend_execute_data) {
    let before = ExecutorGlobals::get().exception;
    if let Some(Some(previous)) = PREVIOUS.get() {
        // SAFETY: the engine's own interrupt function, called as the engine called this one.
        unsafe { previous(frame) };
    }
    let after = ExecutorGlobals::get().exception;
    if before.is_null() && !after.is_null() {
        HANDLERS.set(after);
    }
}

/// Forgets the last handler's exception: [`exception_is_a_handlers`] then answers for the calls
/// made from now on only.
pub fn forget_handlers() {
    HANDLERS.set(std::ptr::null_mut());
}

/// Whether the pending exception is one a signal handler threw.
pub fn exception_is_a_handlers() -> bool {
    let pending = ExecutorGlobals::get().exception;
    !pending.is_null() && HANDLERS.get() == pending
}

/// Whether something may need its turn during a wait: a time limit is armed
/// (`max_execution_time`, whose timer sets the interrupt flag), or pcntl's async signals are on.
fn watched() -> bool {
    if ExecutorGlobals::get().timeout_seconds > 0 {
        return true;
    }
    ZendCallable::try_from_name("pcntl_async_signals")
        .ok()
        .and_then(|f| guarded(|| f.try_call(vec![])).ok())
        .and_then(Result::ok)
        .and_then(|on| on.bool())
        .unwrap_or(false)
}

/// Runs what the VM would run now; true when the waiting caller must stop.
fn requested() -> bool {
    // The globals' guard is let go before anything runs: PHP code reaches them too.
    let (interrupted, timed_out, frame) = {
        let mut globals = ExecutorGlobals::get_mut();
        // SAFETY: the engine's own flags, read and reset as its interrupt helper does.
        unsafe {
            (
                zend_atomic_bool_exchange(&raw mut globals.vm_interrupt, false),
                zend_atomic_bool_load(&raw const globals.timed_out),
                globals.current_execute_data,
            )
        }
    };
    if interrupted {
        // SAFETY: the timeout and the interrupt function are the engine's, called as its VM calls
        // them, on its thread, inside the running frame.
        let ran = if timed_out {
            guarded(|| unsafe { zend_timeout() })
        } else {
            guarded(|| unsafe {
                if let Some(dispatch) = zend_interrupt_function {
                    dispatch(frame);
                }
            })
        };
        if ran.is_err() {
            return true;
        }
    }
    crate::php_call::exception_in_flight()
}
