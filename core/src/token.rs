//! Owner tokens. Same format as symfony/lock's (base64 of 32 random bytes, 44 characters), so a
//! Deadbolt token is indistinguishable from a Symfony one in shared stores.
//!
//! Tokens come from a ChaCha12 generator (rand's `StdRng`, a CSPRNG) seeded once per process from
//! the operating system: no `getrandom(2)` per lock. It is per-process state ([`PerProcess`]): a
//! forked child seeds its own, so parent and child never draw the same stream.

use crate::sync::Mutex;

use base64::Engine as _;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use crate::process::PerProcess;
use crate::{Error, Result};

/// This process's token generator, seeded on first use (`None` until then).
static GENERATOR: PerProcess<Mutex<Option<StdRng>>> = PerProcess::new();

/// Longest token accepted from outside.
const MAX_IMPORTED_LEN: usize = 1024;

/// A lock owner's secret token. Its `Debug` never prints the value.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Token(String);

impl Token {
    /// Draws a fresh token from this process's generator.
    ///
    /// # Errors
    /// [`Error::Storage`] when the OS has no randomness to seed it with (never seen in practice).
    pub fn generate() -> Result<Self> {
        let mut bytes = [0u8; 32];
        let mut generator = GENERATOR.get_or_init(|| Mutex::new(None)).lock();
        let generator = match &mut *generator {
            Some(generator) => generator,
            empty => empty.insert(StdRng::from_seed(os_seed()?)),
        };
        generator.fill_bytes(&mut bytes);
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

/// 32 bytes from the operating system, to seed a generator with.
/// Makes this process's generator cell now; it is seeded at the first draw (`crate::threads`).
pub(crate) fn set_up() {
    GENERATOR.get_or_init(|| Mutex::new(None));
}

fn os_seed() -> Result<[u8; 32]> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| Error::storage("No random bytes available for a lock token", e.to_string()))?;
    Ok(seed)
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

    /// Runs in a forked child of the test process, which has one thread (other tests draw tokens
    /// in parallel here): it draws a token, forks, and both write the next token they draw.
    #[test]
    fn a_forked_child_draws_other_tokens_than_its_parent() {
        let mut pipe = [0; 2];
        let mut drawn = [0u8; 88];
        // SAFETY: pipes and forks whose children only draw tokens, write them and exit.
        unsafe {
            assert_eq!(libc::pipe(pipe.as_mut_ptr()), 0);
            let parent = libc::fork();
            assert!(parent >= 0);
            if parent == 0 {
                Token::generate().unwrap();
                let child = libc::fork();
                let token = Token::generate().unwrap();
                if child == 0 {
                    libc::write(pipe[1], token.as_str().as_ptr().cast(), 44);
                    libc::_exit(0);
                }
                libc::waitpid(child, std::ptr::null_mut(), 0);
                libc::write(pipe[1], token.as_str().as_ptr().cast(), 44);
                libc::_exit(0);
            }
            libc::close(pipe[1]);
            let mut read = 0;
            while read < drawn.len() {
                let n = libc::read(
                    pipe[0],
                    drawn[read..].as_mut_ptr().cast(),
                    drawn.len() - read,
                );
                assert!(n > 0, "the forked processes wrote {read} bytes");
                read += n as usize;
            }
            libc::waitpid(parent, std::ptr::null_mut(), 0);
            libc::close(pipe[0]);
        }
        assert_ne!(
            drawn[..44],
            drawn[44..],
            "the child continued its parent's stream"
        );
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
