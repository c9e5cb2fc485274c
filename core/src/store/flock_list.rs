//! An operator's listing of a flock store's directory (`deadbolt list`): its lock files that
//! someone holds or waits for, with the kernel's view of them (`flock_holders`). A lock file's
//! name is symfony/lock's (`sf.<name, sanitized and cut at 50 bytes>.<hash>.lock`) and cannot be
//! turned back into the resource's name: a listing shows file names.

use std::fs;
use std::io;

use std::path::PathBuf;

use super::FlockStore;
use crate::holder::LockState;
use crate::store::flock_files::FileId;
use crate::store::flock_holders;
use crate::store::flock_path::push_slug;
use crate::{Error, Result};

impl FlockStore {
    /// The lock files in this store's directory held or waited for now, in name order, with their
    /// holders and waiters; only those whose name begins as a resource named `prefix...` would
    /// (the prefix sanitized as the file name rule does it).
    ///
    /// # Errors
    /// Storage when the directory or `/proc/locks` cannot be read.
    pub fn list(&self, prefix: &[u8]) -> Result<Vec<(String, LockState)>> {
        let failed = |e: io::Error| {
            Error::storage(
                format!("The lock files of {} could not be listed: {e}.", self.name),
                e,
            )
        };
        let mut start = String::from("sf.");
        push_slug(&mut start, prefix);
        let dir = PathBuf::from(&self.dir_prefix);
        let mut files = Vec::new();
        for entry in fs::read_dir(&dir).map_err(failed)? {
            let entry = entry.map_err(failed)?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if !name.starts_with(&start) || !name.ends_with(".lock") {
                continue;
            }
            // A file removed since the directory was read is not listed.
            if let Some(id) = FileId::at(&dir.join(&name)).map_err(failed)? {
                files.push((name, id.proc_locks_name()));
            }
        }
        files.sort();
        let ids: Vec<String> = files.iter().map(|(_, id)| id.clone()).collect();
        let states = flock_holders::states_of(&ids).map_err(failed)?;
        Ok(files
            .into_iter()
            .zip(states)
            .filter(|(_, state)| !state.holders.is_empty() || !state.waiters.is_empty())
            .map(|((name, _), state)| (name, state))
            .collect())
    }
}
