//! Owner tokens. Same format as symfony/lock's (base64 of 32 random bytes, 44 characters), so a
//! Deadbolt token is indistinguishable from a Symfony one in shared stores.

use base64::Engine as _;

use crate::{Error, Result};

/// Longest token accepted from outside.
const MAX_IMPORTED_LEN: usize = 1024;

/// A lock owner's secret token. Its `Debug` never prints the value.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Token(String);

impl Token {
    /// Draws a fresh token from the operating system's random source.
    ///
    /// # Errors
    /// [`Error::Storage`] when the OS has no randomness to give (never seen in practice).
    pub fn generate() -> Result<Self> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| {
            Error::storage("No random bytes available for a lock token", e.to_string())
        })?;
        // 44 characters with padding: it can never equal Symfony's reserved `__write__` member.
        Ok(Token(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ))
    }

    /// A token received from elsewhere (a key moved between processes, or symfony/lock's).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when it is empty, longer than 1 KiB, or symfony/lock's reserved
    /// `__write__` member (which would pass for a write lock).
    pub fn import(text: String) -> Result<Self> {
        if text.is_empty() || text.len() > MAX_IMPORTED_LEN || text == "__write__" {
            return Err(Error::InvalidArgument {
                message: "A lock token must be a non-empty string of at most 1024 bytes, other than \"__write__\".".into(),
            });
        }
        Ok(Token(text))
    }

    /// The token text, for stores that write it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_symfonys_shape_and_differ() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_eq!(a.as_str().len(), 44);
        assert_ne!(a, b);
        assert_ne!(a.as_str(), "__write__");
    }

    #[test]
    fn imported_tokens_are_checked() {
        assert!(Token::import("abc".into()).is_ok());
        for bad in [String::new(), "__write__".into(), "x".repeat(1025)] {
            assert!(Token::import(bad).is_err());
        }
    }

    #[test]
    fn debug_hides_the_token() {
        let token = Token::generate().unwrap();
        let shown = format!("{token:?}");
        assert!(!shown.contains(token.as_str()));
    }
}
