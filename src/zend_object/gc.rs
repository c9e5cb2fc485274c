//! What PHP's cycle collector sees of Deadbolt's objects: the PHP values each one holds a counted
//! reference to (a Lock's logger and the object of a store written in PHP, a Key's state), through
//! the `get_gc` object handler. Without it a cycle through one of them (a logger that keeps its
//! Lock, a store that keeps the Lock, a Key in its own state) is never collected, and a held lock
//! stays held for the life of the process (a webman worker).
//!
//! The rule that keeps the collector right: report a value only where this object owns one
//! counted reference to it, once. Reporting a reference that is not there (a value shared behind
//! an `Rc` with other holders, each reporting it) would let the collector free a live object; not
//! reporting one only leaves a cycle uncollected. So a value behind a shared `Rc` is reported
//! only by its sole holder, and a value that cannot be read right now (borrowed) is not reported.

use ext_php_rs::class::RegisteredClass;
use ext_php_rs::ffi::{
    ext_php_rs_executor_globals, zend_array, zend_get_gc_buffer, zend_object, zval,
};
use ext_php_rs::types::{ZendClassObject, ZendObject, Zval};

/// A class whose objects hold PHP values.
pub trait GcChildren {
    /// Reports each value this object holds one counted reference to (see the module).
    fn gc_children(&self, report: &mut dyn FnMut(&Zval));
}

extern "C" {
    /// Makes room in the collector's buffer (Zend API; no binding in ext-php-rs).
    fn zend_get_gc_buffer_grow(buffer: *mut zend_get_gc_buffer);
}

/// Makes PHP's cycle collector see the values `T`'s objects hold. Call once per process, at the
/// first request startup, before any such object exists.
pub fn hook_gc<T: RegisteredClass + GcChildren>() {
    let handlers = std::ptr::from_ref(T::get_metadata().handlers()).cast_mut();
    // SAFETY: the handler table is ext-php-rs' static for this class, alive for the whole
    // process; this runs on PHP's thread before any object of the class exists.
    unsafe { (*handlers).get_gc = Some(gc_of::<T>) };
}

/// The `get_gc` handler: the object's values in the engine's own buffer (`EG(get_gc_buffer)`,
/// as PHP's own classes do), and its dynamic properties, as the standard handler gives them.
unsafe extern "C" fn gc_of<T: RegisteredClass + GcChildren>(
    object: *mut zend_object,
    table: *mut *mut zval,
    n: *mut std::ffi::c_int,
) -> *mut zend_array {
    // SAFETY: PHP hands a live object of the class and the two places for the buffer; the buffer
    // is the executor's, used by one handler at a time on PHP's thread. Not through ext-php-rs'
    // guard of the globals: the collector may run while code up the stack holds that guard.
    unsafe {
        let buffer: *mut zend_get_gc_buffer =
            std::ptr::addr_of_mut!((*ext_php_rs_executor_globals()).get_gc_buffer);
        (*buffer).cur = (*buffer).start;
        let live = object.cast::<ZendObject>().as_ref();
        if let Some(object) = live.and_then(ZendClassObject::<T>::from_zend_obj) {
            object.gc_children(&mut |child| push(buffer, child));
        }
        *table = (*buffer).start;
        *n = std::ffi::c_int::try_from((*buffer).cur.offset_from((*buffer).start)).unwrap_or(0);
        (*object).properties
    }
}

/// `zend_get_gc_buffer_add_zval`: a counted value goes into the buffer (others cannot be in a
/// cycle).
///
/// # Safety
/// `buffer` is the executor's collector buffer.
unsafe fn push(buffer: *mut zend_get_gc_buffer, value: &Zval) {
    /// `IS_TYPE_REFCOUNTED << Z_TYPE_FLAGS_SHIFT`: the value points at a counted thing.
    const REFCOUNTED: u32 = 1 << 8;
    // SAFETY: reading the type word of a live zval; the buffer is grown by the engine before a
    // value is written past its end, as its own inline helper does.
    unsafe {
        if value.u1.type_info & REFCOUNTED == 0 {
            return;
        }
        if (*buffer).cur == (*buffer).end {
            zend_get_gc_buffer_grow(buffer);
        }
        std::ptr::copy_nonoverlapping(std::ptr::from_ref(value).cast::<zval>(), (*buffer).cur, 1);
        (*buffer).cur = (*buffer).cur.add(1);
    }
}
