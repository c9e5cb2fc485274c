//! How the PostgreSQL store words a failure: the store's name (server and database, never a
//! credential), what it was doing, and the server's own words quoted bounded.

use std::time::Duration;

use crate::error::quoted;
use crate::store::table::SqlFailure;
use crate::Error;

/// A failure of `name` while `doing`, with what the server or the network said.
pub(super) fn failure(
    name: &str,
    doing: &str,
    error: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    let said = said(&error);
    Error::storage(worded(name, doing, &said), error)
}

/// A statement of `name`'s that failed while `doing`: one the server refused (a SQLSTATE) is a
/// [`SqlFailure`], as a store on PDO reports it (the extension throws a `\PDOException`); one that
/// failed on the way (the connection) is as [`failure`] words it.
pub(super) fn statement_failure(name: &str, doing: &str, error: tokio_postgres::Error) -> Error {
    let Some(db) = error.as_db_error() else {
        return failure(name, doing, error);
    };
    let refused = SqlFailure {
        sqlstate: db.code().code().to_owned(),
        code: 0,
        message: said(&error),
    };
    Error::storage(worded(name, doing, &refused.message), refused)
}

/// "NAME DOING: "WHAT WAS SAID"." with the untrusted text quoted and bounded.
fn worded(name: &str, doing: &str, said: &str) -> String {
    format!("{name} {doing}: {}.", quoted(said))
}

/// An exchange that took longer than `limit`.
pub(super) fn timed_out(name: &str, doing: &str, limit: Duration) -> Error {
    Error::Storage {
        message: format!(
            "{name} got no answer within {} while {doing}: the connection was closed, and the \
             locks it held are freed by the server.",
            crate::ttl::shown(limit.as_secs_f64()) + " s"
        ),
        source: None,
    }
}

/// The server's message (with its detail) for an error it sent, else the error and its causes.
fn said(error: &(dyn std::error::Error + 'static)) -> String {
    if let Some(db) = error
        .downcast_ref::<tokio_postgres::Error>()
        .and_then(tokio_postgres::Error::as_db_error)
    {
        return format!("{}: {} ({})", db.severity(), db.message(), db.code().code());
    }
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}
