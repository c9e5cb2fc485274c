//! The `\PDOException` Deadbolt throws for a statement a database refused (a SQLSTATE), on any
//! SQL store (PdoStore, PostgreSqlStore, MysqlStore), on the application's `\PDO` or on a
//! connection the store made: symfony/lock's SQL stores, all on PDO, let PDO's exception through,
//! so code catching `\PDOException` around a store call, or reading the SQLSTATE from `getCode()`
//! and `errorInfo`, works on Deadbolt's stores too. Failing to reach the server is not a
//! statement the database refused: it stays a `LockStorageException` ("cannot connect").
//!
//! It is made anew, not PDO's own passed on: the trace of PDO's own holds the frame of
//! `PDOStatement::execute()` with its parameters (a PdoStore's token among them) wherever
//! `zend.exception_ignore_args` is off. This one's trace starts at the store call, as any
//! exception of Deadbolt's does, and its message is Deadbolt's: which store, doing what, the
//! database's words quoted and bounded.

use deadbolt_core::SqlFailure;
use ext_php_rs::types::{ZendHashTable, ZendObject, Zval};
use ext_php_rs::zend::{ClassEntry, ExecutorGlobals};

/// A `\PDOException` for `failure`: Deadbolt's `message` (which store, doing what, PDO's words
/// quoted), PDO's SQLSTATE as the code (a string, as PDO's), `errorInfo` as PDO fills it
/// (its driver message quoted and bounded).
/// `None` when PHP cannot make one.
pub(crate) fn rebuilt(failure: &SqlFailure, message: &str) -> Option<Zval> {
    let class = ClassEntry::try_find("PDOException")?;
    let mut exception = crate::error_map::new_exception(class, message, None)?;
    let object = exception.object_mut()?;
    let mut info = ZendHashTable::new();
    info.push(failure.sqlstate.as_str()).ok()?;
    info.push(failure.code).ok()?;
    info.push(deadbolt_core::quoted_server_text(&failure.message))
        .ok()?;
    object.set_property("errorInfo", info).ok()?;
    set_protected(object, class, "code", failure.sqlstate.as_str())?;
    Some(exception)
}

/// Writes a protected property as code of `scope` would (what `zend_update_property()` does:
/// the class as the scope of the write).
fn set_protected(
    object: &mut ZendObject,
    scope: &ClassEntry,
    name: &str,
    value: &str,
) -> Option<()> {
    let before = std::mem::replace(
        &mut ExecutorGlobals::get_mut().fake_scope,
        std::ptr::from_ref(scope).cast_mut(),
    );
    let written = object.set_property(name, value);
    ExecutorGlobals::get_mut().fake_scope = before;
    written.ok()
}
