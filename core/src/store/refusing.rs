//! A store made from a setting it cannot work with, which refuses every call with the reason
//! instead of refusing to be made. symfony/lock's stores check a DSN's driver when they first
//! connect (its own `PostgreSqlStoreTest::testInvalidDriver` pins that): an application that
//! builds its stores at boot (a DI container, a console command that never locks) keeps running
//! on a lock DSN of the wrong database, and its first lock says what is wrong.

use super::{Mode, Store};
use crate::{Error, Key, Result, Ttl};

/// Refuses every call with one [`Error::InvalidArgument`].
#[derive(Debug)]
pub struct RefusingStore {
    name: String,
    why: String,
}

impl RefusingStore {
    /// A store named `name` whose every call fails with `why`.
    pub fn new(name: impl Into<String>, why: impl Into<String>) -> Self {
        RefusingStore {
            name: name.into(),
            why: why.into(),
        }
    }

    /// The error each call fails with.
    pub fn error(&self) -> Error {
        Error::invalid_argument(&self.why)
    }
}

impl Store for RefusingStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn save(&self, _key: &mut Key, _mode: Mode, _ttl: Option<Ttl>) -> Result<()> {
        Err(self.error())
    }

    fn put_off_expiration(&self, _key: &mut Key, _ttl: Ttl) -> Result<()> {
        Err(self.error())
    }

    fn delete(&self, _key: &mut Key) -> Result<()> {
        Err(self.error())
    }

    fn exists(&self, _key: &Key) -> Result<bool> {
        Err(self.error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn every_call_fails_with_the_reason() {
        let store = RefusingStore::new("PostgreSqlStore(sqlite)", "not a PostgreSQL DSN");
        let mut key = Key::new("r");
        let failures = [
            store.save(&mut key, Mode::Exclusive, None).unwrap_err(),
            store.delete(&mut key).unwrap_err(),
            store.exists(&key).unwrap_err(),
        ];
        for error in failures {
            assert_eq!(error.kind(), ErrorKind::InvalidArgument);
            assert_eq!(error.to_string(), "not a PostgreSQL DSN");
        }
    }
}
