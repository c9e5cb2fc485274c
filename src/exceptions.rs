//! The `Deadbolt\Exception\*` hierarchy and symfony/semaphore's under `Deadbolt\Semaphore\Exception\`, registered with `ClassBuilder` as plain classes so they
//! behave like userland exceptions: constructible from PHP, with a real file, line and trace, and
//! subclassable. (`#[php_class]` exceptions in ext-php-rs 0.16 are none of these.)
//!
//! symfony/semaphore's `Semaphore{Acquiring,Expired,Releasing}Exception` take its constructor,
//! `(Key $key, string $message)`, and word the message from both, so a store written in PHP (or
//! code ported from symfony/semaphore) throws them as it would symfony's. The engine builds every
//! exception of its own through `\Exception::__construct` ([`construct_as_exception`]), so its
//! messages stay its own and it never needs a Key to throw one.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use ext_php_rs::args::{Arg, ArgInfoTables};
use ext_php_rs::builders::{ClassBuilder, FunctionBuilder};
use ext_php_rs::convert::FromZvalMut;
use ext_php_rs::flags::{ClassFlags, DataType, MethodFlags};
use ext_php_rs::types::{ZendObject, Zval};
use ext_php_rs::zend::{ce, ClassEntry, ExecuteData};

use crate::php_param::{refuse, Bytes};

/// The interfaces every exception of a family implements: the locks', the semaphores'.
const INTERFACES: [&str; 2] = [
    "Deadbolt\\Exception\\ExceptionInterface",
    "Deadbolt\\Semaphore\\Exception\\ExceptionInterface",
];

/// Every concrete exception class Deadbolt throws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExceptionClass {
    InvalidArgument,
    InvalidTtl,
    LockAcquiring,
    LockConflicted,
    LockExpired,
    LockReleasing,
    LockStorage,
    UnserializableKey,
    SemaphoreInvalidArgument,
    SemaphoreRuntime,
    SemaphoreAcquiring,
    SemaphoreExpired,
    SemaphoreReleasing,
}

impl ExceptionClass {
    /// Registration order: parents before children.
    const ALL: [ExceptionClass; 13] = [
        ExceptionClass::InvalidArgument,
        ExceptionClass::InvalidTtl,
        ExceptionClass::LockAcquiring,
        ExceptionClass::LockConflicted,
        ExceptionClass::LockExpired,
        ExceptionClass::LockReleasing,
        ExceptionClass::LockStorage,
        ExceptionClass::UnserializableKey,
        ExceptionClass::SemaphoreInvalidArgument,
        ExceptionClass::SemaphoreRuntime,
        ExceptionClass::SemaphoreAcquiring,
        ExceptionClass::SemaphoreExpired,
        ExceptionClass::SemaphoreReleasing,
    ];

    /// The fully qualified PHP class name.
    pub fn name(self) -> &'static str {
        match self {
            ExceptionClass::InvalidArgument => "Deadbolt\\Exception\\InvalidArgumentException",
            ExceptionClass::InvalidTtl => "Deadbolt\\Exception\\InvalidTtlException",
            ExceptionClass::LockAcquiring => "Deadbolt\\Exception\\LockAcquiringException",
            ExceptionClass::LockConflicted => "Deadbolt\\Exception\\LockConflictedException",
            ExceptionClass::LockExpired => "Deadbolt\\Exception\\LockExpiredException",
            ExceptionClass::LockReleasing => "Deadbolt\\Exception\\LockReleasingException",
            ExceptionClass::LockStorage => "Deadbolt\\Exception\\LockStorageException",
            ExceptionClass::UnserializableKey => "Deadbolt\\Exception\\UnserializableKeyException",
            ExceptionClass::SemaphoreInvalidArgument => {
                "Deadbolt\\Semaphore\\Exception\\InvalidArgumentException"
            }
            ExceptionClass::SemaphoreRuntime => "Deadbolt\\Semaphore\\Exception\\RuntimeException",
            ExceptionClass::SemaphoreAcquiring => {
                "Deadbolt\\Semaphore\\Exception\\SemaphoreAcquiringException"
            }
            ExceptionClass::SemaphoreExpired => {
                "Deadbolt\\Semaphore\\Exception\\SemaphoreExpiredException"
            }
            ExceptionClass::SemaphoreReleasing => {
                "Deadbolt\\Semaphore\\Exception\\SemaphoreReleasingException"
            }
        }
    }

    /// The parent class, as a class-entry getter and its name.
    fn parent(self) -> (fn() -> &'static ClassEntry, &'static str) {
        match self {
            ExceptionClass::InvalidArgument | ExceptionClass::SemaphoreInvalidArgument => {
                (spl_invalid_argument, "InvalidArgumentException")
            }
            ExceptionClass::InvalidTtl => (
                deadbolt_invalid_argument,
                ExceptionClass::InvalidArgument.name(),
            ),
            _ => (spl_runtime, "RuntimeException"),
        }
    }

    /// Which family's interface it implements (an index into [`INTERFACES`]).
    fn family(self) -> usize {
        match self {
            ExceptionClass::SemaphoreInvalidArgument
            | ExceptionClass::SemaphoreRuntime
            | ExceptionClass::SemaphoreAcquiring
            | ExceptionClass::SemaphoreExpired
            | ExceptionClass::SemaphoreReleasing => 1,
            _ => 0,
        }
    }

    /// The registered class entry.
    pub fn entry(self) -> &'static ClassEntry {
        registered(self as usize + INTERFACES.len())
    }
}

/// How many class entries are kept: the interfaces, then the classes.
const SLOTS: usize = 15;
const _: () = assert!(SLOTS == INTERFACES.len() + ExceptionClass::ALL.len());

/// Class entries of the interfaces (slots 0 and 1) and the classes (slot 2 + variant), recorded
/// by `park` when PHP registers them: at MINIT the engine's class lookup is not available yet.
static REGISTERED: [AtomicPtr<ClassEntry>; SLOTS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];

// The signature is the one `ClassBuilder::registration` asks for.
#[allow(clippy::boxed_local)]
fn park<const SLOT: usize>(ce: &'static mut ClassEntry, tables: ArgInfoTables) {
    // The engine points at the argument tables of a class's methods (the semaphore exceptions'
    // constructors) for the life of the process: they must never be freed.
    std::mem::forget(tables);
    REGISTERED[SLOT].store(ce, Ordering::Release);
}

const PARKERS: [fn(&'static mut ClassEntry, ArgInfoTables); SLOTS] = [
    park::<0>, park::<1>, park::<2>, park::<3>, park::<4>, park::<5>, park::<6>, park::<7>,
    park::<8>, park::<9>, park::<10>, park::<11>, park::<12>, park::<13>, park::<14>,
];

fn registered(slot: usize) -> &'static ClassEntry {
    let entry = REGISTERED
        .get(slot)
        .map_or(ptr::null_mut(), |p| p.load(Ordering::Acquire));
    // SAFETY: the pointer was handed to `park` by PHP as a `&'static mut ClassEntry`; class
    // entries live until the module shuts down. Null only if MINIT failed, and then no Deadbolt
    // code runs at all; `\Exception` is the harmless answer should it ever happen.
    unsafe { entry.as_ref() }.unwrap_or_else(ce::exception)
}

fn lock_interface() -> &'static ClassEntry {
    registered(0)
}

fn semaphore_interface() -> &'static ClassEntry {
    registered(1)
}

fn deadbolt_invalid_argument() -> &'static ClassEntry {
    ExceptionClass::InvalidArgument.entry()
}

// SPL's exception classes, exported by the PHP binary that loads this extension.
extern "C" {
    static spl_ce_RuntimeException: *mut ClassEntry;
    static spl_ce_InvalidArgumentException: *mut ClassEntry;
    static spl_ce_BadMethodCallException: *mut ClassEntry;
}

fn spl(entry: *mut ClassEntry) -> &'static ClassEntry {
    // SAFETY: SPL is part of PHP and registers these classes before any extension's MINIT; the
    // entries live for the life of the process.
    unsafe { entry.as_ref() }.unwrap_or_else(ce::exception)
}

fn spl_runtime() -> &'static ClassEntry {
    // SAFETY: reading an initialised pointer-sized global exported by PHP.
    spl(unsafe { spl_ce_RuntimeException })
}

fn spl_invalid_argument() -> &'static ClassEntry {
    // SAFETY: as above.
    spl(unsafe { spl_ce_InvalidArgumentException })
}

/// `\BadMethodCallException`, thrown when a Lock is serialized (as symfony/lock does).
pub fn bad_method_call() -> &'static ClassEntry {
    // SAFETY: as above.
    spl(unsafe { spl_ce_BadMethodCallException })
}

/// Registers the interface and the classes. Runs in MINIT, before any other Deadbolt class.
///
/// # Errors
/// When PHP refuses a class (a name already taken by another extension).
pub fn register() -> ext_php_rs::error::Result<()> {
    for (slot, name) in INTERFACES.iter().enumerate() {
        ClassBuilder::new(*name)
            .flags(ClassFlags::Interface)
            .implements((ce::throwable, "Throwable"))
            .registration(PARKERS[slot])
            .register()?;
    }
    let interfaces: [fn() -> &'static ClassEntry; 2] = [lock_interface, semaphore_interface];
    for class in ExceptionClass::ALL {
        let family = class.family();
        let mut builder = ClassBuilder::new(class.name())
            .extends(class.parent())
            .implements((interfaces[family], INTERFACES[family]))
            .registration(PARKERS[class as usize + INTERFACES.len()]);
        if let Some(constructor) = semaphore_constructor(class) {
            builder = builder.method(
                FunctionBuilder::constructor(constructor)
                    .arg(Arg::new("key", DataType::object(SEMAPHORE_KEY)))
                    .arg(Arg::new("message", DataType::String)),
                MethodFlags::Public,
            );
        }
        builder.register()?;
    }
    Ok(())
}

/// The class of symfony/semaphore's constructors' first parameter: Deadbolt's Key, the one its
/// stores are handed (symfony's own Key is a different class, which no Deadbolt store sees).
const SEMAPHORE_KEY: &str = "Deadbolt\\Semaphore\\Key";

/// An internal method's handler, as `FunctionBuilder` takes it (ext-php-rs does not export its
/// name for the type).
type Handler = extern "C" fn(&mut ExecuteData, &mut Zval);

/// symfony/semaphore's constructor of the classes that have one.
fn semaphore_constructor(class: ExceptionClass) -> Option<Handler> {
    match class {
        ExceptionClass::SemaphoreAcquiring => Some(construct_acquiring),
        ExceptionClass::SemaphoreExpired => Some(construct_expired),
        ExceptionClass::SemaphoreReleasing => Some(construct_releasing),
        _ => None,
    }
}

extern "C" fn construct_acquiring(ex: &mut ExecuteData, _retval: &mut Zval) {
    construct_semaphore_exception(ex, b"could not be acquired");
}

extern "C" fn construct_expired(ex: &mut ExecuteData, _retval: &mut Zval) {
    construct_semaphore_exception(ex, b"has expired");
}

extern "C" fn construct_releasing(ex: &mut ExecuteData, _retval: &mut Zval) {
    construct_semaphore_exception(ex, b"could not be released");
}

extern "C" {
    /// PHP's ArgumentCountError for an internal function ("expects exactly 2 arguments, 1 given").
    fn zend_wrong_parameters_count_error(min_num_args: u32, max_num_args: u32);
}

/// `__construct(Key $key, string $message)`: the message `The semaphore "<key>" <what>:
/// <message>.` (symfony/semaphore's), code 0, no previous. Arguments are checked as PHP checks
/// those of its own functions, with its own errors.
fn construct_semaphore_exception(ex: &mut ExecuteData, what: &[u8]) {
    // SAFETY: every field of the `u2` union is the same integer; the engine set it for this call.
    let count = unsafe { ex.This.u2.num_args };
    if count != 2 {
        // SAFETY: called while the engine runs this constructor, whose name the error takes from
        // the current frame.
        unsafe { zend_wrong_parameters_count_error(2, 2) };
        return;
    }
    // SAFETY: both arguments exist (counted above) and live as long as this call's frame.
    let (key, message) = unsafe { (ex.zend_call_arg(0), ex.zend_call_arg(1)) };
    let (Some(key), Some(message)) = (key, message) else {
        return;
    };
    let Some(resource) = crate::semaphore::key_resource(key) else {
        refuse(1, c"Deadbolt\\Semaphore\\Key", key);
        return;
    };
    // On `None` the engine's TypeError for `$message` is already thrown.
    let Some(Bytes(message)) = Bytes::<2>::from_zval_mut(message) else {
        return;
    };
    let Some(this) = ex.get_self() else {
        return;
    };
    let text = [
        b"The semaphore \"".as_slice(),
        &resource,
        b"\" ",
        what,
        b": ",
        &message,
        b".",
    ]
    .concat();
    let mut text_zval = Zval::new();
    text_zval.set_zend_string(ext_php_rs::types::ZendStr::new(text, false));
    construct_as_exception(this, vec![text_zval]);
}

/// Runs `\Exception::__construct` on `object` with `args` (message, then code and previous if
/// given). The engine's exceptions are built this way and not with their class's own constructor:
/// the semaphore exceptions' takes a Key, and the engine's messages are its own. For every other
/// class Deadbolt throws, `\Exception`'s constructor is the class's own. False when PHP has no
/// such constructor (it always has).
pub fn construct_as_exception(object: &ZendObject, mut args: Vec<Zval>) -> bool {
    let constructor = ce::exception().constructor;
    let Ok(count) = u32::try_from(args.len()) else {
        return false;
    };
    if constructor.is_null() {
        return false;
    }
    let mut retval = Zval::new();
    // SAFETY: `constructor` is `\Exception::__construct`, a live internal function; `object` is
    // a live exception object (an instance of `\Exception`, whose constructor this is); the
    // arguments are `count` initialised zvals the call copies and we drop afterwards.
    unsafe {
        ext_php_rs::ffi::zend_call_known_function(
            constructor,
            ptr::from_ref(object).cast_mut(),
            object.ce,
            &raw mut retval,
            count,
            args.as_mut_ptr(),
            ptr::null_mut(),
        );
    }
    true
}
