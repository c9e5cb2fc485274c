//! The `Deadbolt\Exception\*` hierarchy and symfony/semaphore's under `Deadbolt\Semaphore\Exception\`, registered with `ClassBuilder` as plain classes so they
//! behave like userland exceptions: constructible from PHP, with a real file, line and trace, and
//! subclassable. (`#[php_class]` exceptions in ext-php-rs 0.16 are none of these.)

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use ext_php_rs::args::ArgInfoTables;
use ext_php_rs::builders::ClassBuilder;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::zend::{ce, ClassEntry};

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
fn park<const SLOT: usize>(ce: &'static mut ClassEntry, _tables: ArgInfoTables) {
    // These classes have no methods, so there are no argument tables to keep alive.
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
        ClassBuilder::new(class.name())
            .extends(class.parent())
            .implements((interfaces[family], INTERFACES[family]))
            .registration(PARKERS[class as usize + INTERFACES.len()])
            .register()?;
    }
    Ok(())
}
