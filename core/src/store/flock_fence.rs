//! The flock store's fencing counter: a decimal number that is the whole content of the lock
//! file, read and bumped under the exclusive lock. symfony/lock never reads the file's content, so
//! the files stay compatible.
//!
//! A lock file can be removed (a temp cleaner, `rm`) and made anew, empty: a counter kept only in
//! it would start again and hand out tokens already given. So the next token is one past the
//! stored one or the wall clock in microseconds, whichever is larger (the Redis store's rule,
//! with the server's clock there): a new file's first token is above every token drawn before it,
//! as long as the clock does not go back and fewer than a million tokens a second are drawn.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Longest fencing counter read back from a lock file (a u64 in decimal).
const FENCE_DIGITS: u64 = 20;

/// Reads the decimal counter that is the whole content of `file` (empty: 0), and replaces it with
/// the next one: one past it, or `floor` (the clock, see the module) when that is larger. The file is mode 0666 in a shared directory, so its content is checked, not
/// trusted: anything but digits, or a counter at its end, fails the call rather than hand out a
/// token that does not grow.
pub fn bump_counter(file: &mut File, floor: u64) -> io::Result<u64> {
    let mut text = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    Read::by_ref(file)
        .take(FENCE_DIGITS + 1)
        .read_to_end(&mut text)?;
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_owned());
    let current = match text.as_slice() {
        [] => 0,
        digits if digits.iter().all(u8::is_ascii_digit) => std::str::from_utf8(digits)
            .ok()
            .and_then(|digits| digits.parse::<u64>().ok())
            .ok_or_else(|| invalid("the fencing counter in it is out of range"))?,
        _ => return Err(invalid("it holds something other than a fencing counter")),
    };
    let next = current
        .checked_add(1)
        .ok_or_else(|| invalid("its fencing counter is at its maximum"))?
        .max(floor);
    let next_text = next.to_string();
    file.seek(SeekFrom::Start(0))?;
    file.write_all(next_text.as_bytes())?;
    file.set_len(next_text.len() as u64)?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bump(content: &[u8]) -> (io::Result<u64>, Vec<u8>) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(content).unwrap();
        let next = bump_counter(&mut file, 0);
        let mut after = Vec::new();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.read_to_end(&mut after).unwrap();
        (next, after)
    }

    #[test]
    fn the_counter_grows_and_is_the_whole_file() {
        assert_eq!(bump(b"").0.unwrap(), 1);
        let (next, after) = bump(b"41");
        assert_eq!((next.unwrap(), after.as_slice()), (42, &b"42"[..]));
        let (next, after) = bump(b"99");
        assert_eq!((next.unwrap(), after.as_slice()), (100, &b"100"[..]));
    }

    /// Issue 25, item 3: a removed and recreated file restarted the counter at 1.
    #[test]
    fn the_clock_is_the_floor_so_a_new_file_never_repeats_a_token() {
        let mut file = tempfile::tempfile().unwrap();
        assert_eq!(
            bump_counter(&mut file, 1_000).unwrap(),
            1_000,
            "an empty file starts at the floor"
        );
        assert_eq!(
            bump_counter(&mut file, 1_000).unwrap(),
            1_001,
            "one past when the clock lags"
        );
        assert_eq!(bump_counter(&mut file, 5_000).unwrap(), 5_000);
    }

    #[test]
    fn a_counter_that_is_not_one_fails_instead_of_restarting_or_repeating() {
        for content in [
            &b"8\n8"[..],
            b"garbage",
            b" 7",
            b"18446744073709551615",
            b"99999999999999999999",
            b"123456789012345678901234",
        ] {
            let (next, after) = bump(content);
            assert!(next.is_err(), "{:?}", String::from_utf8_lossy(content));
            assert_eq!(after, content, "left as it was");
        }
    }
}
