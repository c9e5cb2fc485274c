//! Every change Deadbolt makes to the Zend engine's own state, in one place: the destructor hook of
//! a class, the class's serializable flag, an exception set aside while a destructor calls into
//! PHP, an exception a client just threw, and a shutdown callback. Each guard puts the engine's
//! state back in its `Drop`, so no early return can leave it changed. `gc.rs`: what the cycle
//! collector sees of an object (the `get_gc` handler).

pub mod gc;

use std::sync::OnceLock;

use ext_php_rs::boxed::ZBox;
use ext_php_rs::class::RegisteredClass;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::types::{ZendObject, Zval};
use ext_php_rs::zend::{ExecuteData, ExecutorGlobals};

/// Clears the engine's "not serializable" flag on a class, so that `serialize()` reaches its
/// `__serialize`. ext-php-rs marks every Rust-backed class not serializable, and PHP then throws a
/// generic `Exception` before looking at the class; the classes are registered after the
/// extension's MINIT hook, so this runs at RINIT (a no-op after the first time).
pub fn let_serialize_reach<T: RegisteredClass>() {
    let ce = T::get_metadata().ce();
    let not_serializable = ClassFlags::NotSerializable.bits();
    if ce.ce_flags & not_serializable != 0 {
        let ce = std::ptr::from_ref(ce).cast_mut();
        // SAFETY: the class entry is PHP's and lives for the whole process; PHP is between requests
        // or at the start of one, so no code reads the flags while this one bit changes.
        unsafe { (*ce).ce_flags &= !not_serializable };
    }
}

/// The engine's own destructor of objects (`zend_objects_destroy_object`), run after a hook's.
static STANDARD_DESTRUCTOR: OnceLock<unsafe extern "C" fn(*mut ZendObject)> = OnceLock::new();

/// Runs `hook` when PHP destroys an object of class `T` (its `dtor_obj` handler), before the
/// engine's own destructor. A handler rather than a `__destruct` method: PHP also destroys the
/// placeholder object of a failed `clone`, which has no Rust state, and a method cannot be called
/// on it. Call once per process, at the first request startup, before any such object exists.
pub fn hook_destructor<T: RegisteredClass>(hook: unsafe extern "C" fn(*mut ZendObject)) {
    let handlers = handlers_of::<T>();
    // SAFETY: the handler table is ext-php-rs' static for this class, alive for the whole
    // process; this runs on PHP's thread before any object of the class exists, and only swaps
    // one function pointer.
    unsafe {
        if let Some(standard) = (*handlers).dtor_obj {
            let _ = STANDARD_DESTRUCTOR.set(standard);
        }
        (*handlers).dtor_obj = Some(hook);
    }
}

/// The object handler table ext-php-rs keeps for class `T` (a static, alive for the whole
/// process), to swap one of its function pointers.
fn handlers_of<T: RegisteredClass>() -> *mut ext_php_rs::ffi::zend_object_handlers {
    std::ptr::from_ref(T::get_metadata().handlers()).cast_mut()
}

/// What a destructor hook calls last: the engine's own destructor.
///
/// # Safety
/// `object` is the live object PHP handed the hook.
pub unsafe fn standard_destructor(object: *mut ZendObject) {
    if let Some(standard) = STANDARD_DESTRUCTOR.get() {
        // SAFETY: the engine's destructor, called as the engine would have called it.
        unsafe { standard(object) };
    }
}

/// An exception in flight set aside while a destructor calls into PHP (the object dies while an
/// exception unwinds), put back untouched, with its frame's position, when the guard drops.
/// `None` when no PHP frame is running (end of script): nothing may be called into then.
pub struct ParkedException {
    exception: *mut ZendObject,
    opline: *const ext_php_rs::ffi::zend_op,
    before: *const ext_php_rs::ffi::zend_op,
}

impl ParkedException {
    pub fn park() -> Option<ParkedException> {
        let mut globals = ExecutorGlobals::get_mut();
        // SAFETY: the engine's current frame, which lives while the destructor runs.
        let frame = unsafe { globals.current_execute_data.as_mut() }?;
        let parked = ParkedException {
            exception: globals.exception,
            opline: frame.opline,
            before: globals.opline_before_exception,
        };
        globals.exception = std::ptr::null_mut();
        Some(parked)
    }
}

impl Drop for ParkedException {
    fn drop(&mut self) {
        if self.exception.is_null() {
            return;
        }
        let mut globals = ExecutorGlobals::get_mut();
        globals.exception = self.exception;
        globals.opline_before_exception = self.before;
        // SAFETY: the same frame as at parking: the destructor has not returned to it yet.
        if let Some(frame) = unsafe { globals.current_execute_data.as_mut() } {
            frame.opline = self.opline;
        }
    }
}

/// Takes the exception a client just threw, as `zend_clear_exception()` would: when the call came
/// from user code (a Lock dying in `unset()`), PHP has already pointed that frame at its exception
/// handler, and it must resume where it was or it unwinds with no exception at all.
pub fn take_pending_exception() -> Option<ZBox<ZendObject>> {
    // An ending script's unwind exit is no exception to take: it must reach the engine.
    if crate::php_call::exit_pending() {
        return None;
    }
    let exception = ExecutorGlobals::take_exception()?;
    let globals = ExecutorGlobals::get_mut();
    // SAFETY: the frame pointer is the engine's current one (or null); user frames have `op_array`
    // as their function, and `opline_before_exception` is where the engine left that frame.
    unsafe {
        if let Some(frame) = globals.current_execute_data.as_mut() {
            if is_user_code(frame) {
                frame.opline = globals.opline_before_exception;
            }
        }
    }
    Some(exception)
}

/// `ZEND_USER_FUNCTION` from zend_compile.h.
const ZEND_USER_FUNCTION: u32 = 2;

/// Whether `frame` runs PHP code (not an internal function).
///
/// # Safety
/// `frame` is a live frame of the engine.
unsafe fn is_user_code(frame: &ExecuteData) -> bool {
    // SAFETY: a live frame's function pointer is valid or null.
    unsafe { frame.func.as_ref() }.is_some_and(|func| u32::from(func.type_) == ZEND_USER_FUNCTION)
}

/// Registers `callback` (an invokable object) with `register_shutdown_function()`: it then runs
/// at the end of the request inside a PHP frame, where calls into PHP clients are allowed.
pub fn register_shutdown(callback: Zval) -> bool {
    ext_php_rs::types::ZendCallable::try_from_name("register_shutdown_function")
        .ok()
        .and_then(|register| crate::php_call::guarded(|| register.try_call(vec![&callback])).ok())
        .is_some_and(|called| called.is_ok())
}

extern "C" {
    /// `zend_add_attribute()` (Zend/zend_attributes.h), exported by PHP since 8.0; the inline
    /// `zend_add_parameter_attribute()` that PHP's own extensions use calls it the same way.
    fn zend_add_attribute(
        attributes: *mut *mut ext_php_rs::ffi::HashTable,
        name: *mut ext_php_rs::ffi::zend_string,
        argc: u32,
        flags: u32,
        offset: u32,
        lineno: u32,
    ) -> *mut std::ffi::c_void;
}

/// `ZEND_ATTRIBUTE_PERSISTENT`: the attribute lives as long as the (internal) function.
const ZEND_ATTRIBUTE_PERSISTENT: u32 = 1;

/// Marks parameter `position` (from 0) of method `method` (lower case) of class `T`
/// `#[\SensitiveParameter]`, as PHP's own PDO does for its password: exception traces and
/// `debug_backtrace()` then show a `SensitiveParameterValue` instead of the argument, even with
/// `zend.exception_ignore_args=0`. Call once per process, at the first request startup (classes
/// are registered after MINIT), before any call of the method.
pub fn mark_sensitive_parameter<T: RegisteredClass>(method: &str, position: u32) {
    let Some(function) = method_of::<T>(method) else {
        return;
    };
    // SAFETY: the method's `zend_function`, whose attribute table PHP itself fills this way for
    // internal functions (persistent memory, freed with the function).
    unsafe {
        let mut name = ext_php_rs::types::ZendStr::new("SensitiveParameter", true);
        // The name is copied (a reference taken) by zend_add_attribute; ours is released here.
        zend_add_attribute(
            &raw mut function.common.attributes,
            std::ptr::from_mut(&mut *name).cast(),
            0,
            ZEND_ATTRIBUTE_PERSISTENT,
            position + 1,
            0,
        );
    }
}

/// Method `method` (lower case) of class `T`, as the engine keeps it. Only for the one-time
/// changes of `install_engine_hooks` (lib.rs), before any PHP code runs.
fn method_of<T: RegisteredClass>(
    method: &str,
) -> Option<&'static mut ext_php_rs::ffi::zend_function> {
    let ce = T::get_metadata().ce();
    // SAFETY: the class's function table is PHP's and lives for the whole process; the lookup
    // only reads it, and its values are the methods' `zend_function`s, which live as long.
    unsafe {
        let found = ext_php_rs::ffi::zend_hash_str_find(
            &raw const ce.function_table,
            method.as_ptr().cast(),
            method.len(),
        );
        found
            .as_ref()?
            .value
            .ptr
            .cast::<ext_php_rs::ffi::zend_function>()
            .as_mut()
    }
}

/// The handler of an internal function (`zif_handler`).
pub type Handler =
    unsafe extern "C" fn(*mut ext_php_rs::ffi::zend_execute_data, *mut ext_php_rs::ffi::zval);

/// Makes method `method` (lower case) of class `T` run `handler`, and returns the handler it had
/// (for `handler` to call). Subclasses declared later inherit the new one. Call once per process,
/// as [`mark_sensitive_parameter`], before any call of the method.
pub fn swap_method_handler<T: RegisteredClass>(method: &str, handler: Handler) -> Option<Handler> {
    let function = method_of::<T>(method)?;
    // SAFETY: the internal function lives for the whole process, and nothing runs the method
    // while it is swapped (the first request has not started running PHP code).
    unsafe {
        if u32::from(function.type_) != ext_php_rs::ffi::ZEND_INTERNAL_FUNCTION {
            return None;
        }
        function.internal_function.handler.replace(handler)
    }
}

/// The engine's own comparison of objects (`zend_std_compare_objects`), kept by [`hook_compare`].
type Compare = unsafe extern "C" fn(*mut ext_php_rs::ffi::zval, *mut ext_php_rs::ffi::zval) -> i32;
static STANDARD_COMPARE: OnceLock<Compare> = OnceLock::new();

/// Makes `==` (and `<=>`) on objects of class `T` go through `compare`, which may hand anything it
/// does not decide to [`standard_compare`]. Call once per process, as [`hook_destructor`] (`install_engine_hooks` in lib.rs).
pub fn hook_compare<T: RegisteredClass>(compare: Compare) {
    let handlers = handlers_of::<T>();
    // SAFETY: as in `hook_destructor`: ext-php-rs' static handler table, one pointer swapped on
    // PHP's thread before any object of the class exists.
    unsafe {
        if let Some(standard) = (*handlers).compare {
            let _ = STANDARD_COMPARE.set(standard);
        }
        (*handlers).compare = Some(compare);
    }
}

/// The engine's comparison, for what a compare hook does not decide itself.
///
/// # Safety
/// The zvals PHP handed the hook.
pub unsafe fn standard_compare(
    left: *mut ext_php_rs::ffi::zval,
    right: *mut ext_php_rs::ffi::zval,
) -> i32 {
    match STANDARD_COMPARE.get() {
        // SAFETY: the engine's comparison, called as the engine would have called it.
        Some(standard) => unsafe { standard(left, right) },
        None => 1,
    }
}

/// What `var_dump()`, `print_r()` and `debug_zval_dump()` show of an object of a Deadbolt class:
/// safe state only (resource, held or not, time left, store kind and redacted endpoint), never a
/// token or a password. Rust-backed objects have no PHP properties, so without this they show
/// nothing.
pub trait DebugInfo {
    /// Adds the fields to show to `table`.
    fn debug_info(&self, table: &mut ext_php_rs::types::ZendHashTable);
}

/// Makes the debug views of class `T` show [`DebugInfo::debug_info`]. Call once per process, as
/// [`hook_destructor`].
pub fn hook_debug_info<T: RegisteredClass + DebugInfo>() {
    let handlers = handlers_of::<T>();
    // SAFETY: as in `hook_destructor`.
    unsafe { (*handlers).get_debug_info = Some(debug_info_of::<T>) };
}

unsafe extern "C" fn debug_info_of<T: RegisteredClass + DebugInfo>(
    object: *mut ZendObject,
    is_temp: *mut std::ffi::c_int,
) -> *mut ext_php_rs::ffi::HashTable {
    // SAFETY: PHP hands a live object of the class and a place for the "temporary" flag: the
    // engine frees the table it is given after showing it.
    unsafe {
        if let Some(is_temp) = is_temp.as_mut() {
            *is_temp = 1;
        }
        let mut table = ext_php_rs::types::ZendHashTable::new();
        if let Some(object) = object
            .as_ref()
            .and_then(ext_php_rs::types::ZendClassObject::<T>::from_zend_obj)
        {
            object.debug_info(&mut table);
        }
        table.into_raw().cast()
    }
}

/// What `var_export()` shows of an object whose state lives in Rust (its properties are empty).
pub trait ExportedProperties {
    fn exported(&self, table: &mut ext_php_rs::types::ZendHashTable);
}

extern "C" {
    /// The engine's own answer for a purpose (Zend API; no binding in ext-php-rs).
    fn zend_std_get_properties_for(
        object: *mut ext_php_rs::ffi::zend_object,
        purpose: ext_php_rs::ffi::zend_prop_purpose,
    ) -> *mut ext_php_rs::ffi::zend_array;
}

/// `var_export()` of a `T` shows [`ExportedProperties`] (so the code it writes can rebuild the
/// object through `T::__set_state`); every other purpose gets the engine's own answer.
pub fn hook_var_export<T: RegisteredClass + ExportedProperties>() {
    let handlers = handlers_of::<T>();
    // SAFETY: as in `hook_destructor`.
    unsafe { (*handlers).get_properties_for = Some(properties_for::<T>) };
}

unsafe extern "C" fn properties_for<T: RegisteredClass + ExportedProperties>(
    object: *mut ext_php_rs::ffi::zend_object,
    purpose: ext_php_rs::ffi::zend_prop_purpose,
) -> *mut ext_php_rs::ffi::zend_array {
    if purpose != ext_php_rs::ffi::_zend_prop_purpose_ZEND_PROP_PURPOSE_VAR_EXPORT {
        // SAFETY: the object and purpose PHP handed this hook, passed on unchanged.
        return unsafe { zend_std_get_properties_for(object, purpose) };
    }
    // SAFETY: PHP hands a live object of the class. The table is new (refcount 1): the caller
    // releases it after use (zend_release_properties).
    unsafe {
        let mut table = ext_php_rs::types::ZendHashTable::new();
        if let Some(object) = object
            .cast::<ZendObject>()
            .as_ref()
            .and_then(ext_php_rs::types::ZendClassObject::<T>::from_zend_obj)
        {
            object.exported(&mut table);
        }
        table.into_raw().cast()
    }
}
