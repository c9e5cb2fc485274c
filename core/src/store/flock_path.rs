//! symfony/lock's FlockStore file-name rule, so that both libraries lock the same file for the
//! same resource: `sf.` + a 50-byte slug + `.` + 7 characters of the SHA-256 + `.lock`.

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// Length of the readable part of the name.
const SLUG_BYTES: usize = 50;
/// Characters of the base64 SHA-256 that follow it.
const HASH_CHARS: usize = 7;

/// The lock file name for `resource`: any bytes in, a safe ASCII file name out.
pub fn lock_file_name(resource: &[u8]) -> String {
    let mut name = String::with_capacity(3 + SLUG_BYTES + 1 + HASH_CHARS + 5);
    push_lock_file_name(&mut name, resource);
    name
}

/// Appends the lock file name for `resource` to `out` (one allocation for a whole path).
pub fn push_lock_file_name(out: &mut String, resource: &[u8]) {
    out.push_str("sf.");
    push_slug(out, resource);
    out.push('.');
    // 32 bytes of digest make 44 base64 characters; only the first 7 are used.
    let mut encoded = [0u8; 44];
    let digest = Sha256::digest(resource);
    let written = base64::engine::general_purpose::STANDARD
        .encode_slice(digest, &mut encoded)
        .unwrap_or(0);
    for &byte in encoded.iter().take(written.min(HASH_CHARS)) {
        out.push(if byte == b'/' { '_' } else { char::from(byte) });
    }
    out.push_str(".lock");
}

/// Every run of bytes outside `[A-Za-z0-9._-]` becomes one `-`; the result is cut at 50 bytes.
pub(crate) fn push_slug(out: &mut String, resource: &[u8]) {
    let start = out.len();
    let mut in_run = false;
    for &byte in resource {
        if out.len() - start == SLUG_BYTES {
            break;
        }
        if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') {
            out.push(char::from(byte));
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_the_names_symfony_lock_writes() {
        assert_eq!(lock_file_name(b"invoice:42"), "sf.invoice-42.XNI+szs.lock");
        assert_eq!(lock_file_name(b"a/b c"), "sf.a-b-c.CvmaYJF.lock");
        assert_eq!(lock_file_name(b""), "sf..47DEQpj.lock");
        assert_eq!(
            lock_file_name(&[b'x'; 80]),
            format!("sf.{}.2SnN7qf.lock", "x".repeat(50))
        );
        assert_eq!(
            lock_file_name("émoji✓".as_bytes()),
            "sf.-moji-.AqFA8dA.lock"
        );
    }

    proptest! {
        #[test]
        fn every_resource_maps_to_a_safe_bounded_name(resource in proptest::collection::vec(any::<u8>(), 0..300)) {
            let name = lock_file_name(&resource);
            prop_assert!(name.starts_with("sf.") && name.ends_with(".lock"));
            prop_assert!(name.len() <= 3 + SLUG_BYTES + 1 + HASH_CHARS + 5);
            prop_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b)));
            prop_assert!(!name.contains('/'));
        }
    }
}
