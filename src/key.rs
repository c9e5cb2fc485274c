//! `Deadbolt\Key`: a resource and its owner token, shared with the locks made from it.

use std::sync::Arc;

use deadbolt_core::{Key, SharedKey};
use ext_php_rs::binary::Binary;
use ext_php_rs::binary_slice::BinarySlice;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use crate::args;

#[php_class]
#[php(name = "Deadbolt\\Key")]
#[php(flags = ClassFlags::Final)]
pub struct PhpKey {
    pub(crate) inner: SharedKey,
}

impl PhpKey {
    /// Wraps an engine key.
    pub fn from_key(key: Key) -> Self {
        PhpKey {
            inner: Arc::new(parking_lot::Mutex::new(key)),
        }
    }

    /// A new key for `resource`.
    pub fn for_resource(resource: &[u8]) -> Self {
        Self::from_key(Key::new(resource))
    }
}

#[php_impl]
impl PhpKey {
    pub fn __construct(resource: BinarySlice<u8>) -> Self {
        Self::for_resource(&resource)
    }

    #[php(name = "__toString")]
    pub fn to_string(&self) -> Binary<u8> {
        Binary::new(self.inner.lock().resource().to_vec())
    }

    pub fn get_remaining_lifetime(&self) -> Option<f64> {
        self.inner.lock().remaining_lifetime()
    }

    pub fn is_expired(&self) -> bool {
        self.inner.lock().is_expired()
    }

    pub fn reduce_lifetime(&self, ttl: f64) -> PhpResult<()> {
        let ttl = args::ttl(ttl)?;
        self.inner.lock().reduce_lifetime(ttl);
        Ok(())
    }

    pub fn reset_lifetime(&self) {
        self.inner.lock().reset_lifetime();
    }
}
