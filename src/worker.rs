//! `Deadbolt\Worker`: the logical end of a request in a long-running worker (FrankenPHP's worker
//! mode, webman, RoadRunner), where PHP never ends the real one.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use crate::end_of_request;

#[php_class]
#[php(name = "Deadbolt\\Worker")]
#[php(flags = ClassFlags::Final)]
pub struct PhpWorker;

#[php_impl]
impl PhpWorker {
    /// Releases every lock acquired since the last call (or since the real request began) that is
    /// still held and was made with `autoRelease` (the default), as the end of an FPM request
    /// would; locks made with `autoRelease: false` stay held. Returns how many it released.
    pub fn end_request() -> i64 {
        i64::try_from(end_of_request::end_logical_request()).unwrap_or(i64::MAX)
    }
}
