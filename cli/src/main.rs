//! `deadbolt`: an operator's command for Deadbolt's locks, built on the engine (`deadbolt-core`)
//! without PHP. Who holds a resource and who waits (`status`), the resources held in a store
//! (`list`), a forced release (`release --force`), and a metrics file (`metrics`); each with
//! `--json`. The exit status is the answer a script branches on (see `EXIT STATUS` in the help).

mod render;
mod store;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use store::OpenStore;

/// The exit statuses, as the help's `EXIT STATUS` section lists them.
mod exit {
    /// Done; for `status`, `list` and `release`: something was held.
    pub const OK: u8 = 0;
    /// Done, and nothing was held (`status`: the resource is free; `list`: no lock;
    /// `release --force`: there was no holder to release).
    pub const NOTHING_HELD: u8 = 1;
    /// A usage error: unknown command or option, a malformed STORE, `release` without `--force`.
    pub const USAGE: u8 = 2;
    /// The store (or the metrics file) failed: unreachable, refused, unreadable.
    pub const FAILURE: u8 = 3;
}

const ABOUT: &str = "Who holds Deadbolt's locks, forced release, and metrics, without PHP";

const LONG_ABOUT: &str = "\
deadbolt asks a lock store what the PHP API's inspection asks it: who holds a resource (mode, \
process id, host, label, when it was taken, when it expires, the token's digest) and who waits \
for it. It releases a resource whoever holds it, and prints a php-fpm pool's shared metrics file.

STORE is the connection string the application gives Deadbolt\\Store\\StoreFactory:
  flock                 the system temporary directory ($TMPDIR, else /tmp)
  flock:///DIR, /DIR    the lock files in DIR (a path without a scheme is a directory)
  semaphore, semaphore?hash=md5
                        System V semaphores (IPC keys as symfony/lock 6.0+ derive them, or 5.4)
  redis://..., rediss://...
                        a Redis DSN, with every option the application may use: a password in \
the DSN or password_env=NAME (read from this command's environment), redis_sentinel=SERVICE, \
redis_cluster=1 and host[...], tls_ca, timeout, read_timeout
Passwords are never printed: stores are named by endpoint only.

A flock lock file's name (sf.<name>.<hash>.lock) cannot be turned back into its resource's \
name: `list` shows file names; `status` and `release` take the resource's name. flock keeps no \
record of when a lock was taken and has no tokens: those columns stay empty.";

const AFTER_LONG_HELP: &str = "\
EXIT STATUS:
  0  done; status: the resource is held; list: at least one lock is listed;
     release --force: it had at least one holder
  1  done, nothing held: status: the resource is free; list: no lock is listed;
     release --force: it had no holder
  2  usage error: unknown command or option, a malformed STORE or DSN, release without --force
  3  failure: the store cannot be reached or read, the metrics file cannot be read
Errors go to standard error, in the engine's words (the words of the PHP exceptions' messages).

EXAMPLES:
  deadbolt status /var/lib/report-app/locks myapp:prod:daily-report
  deadbolt list --json /var/lib/report-app/locks
  export REDIS_PASSWORD=...   # read from the environment: never in the DSN, nor in ps
  DSN='redis://locks.internal:6379?password_env=REDIS_PASSWORD'
  deadbolt status \"$DSN\" orders:42
  deadbolt list \"$DSN\" orders:
  deadbolt release --force \"$DSN\" orders:42
  deadbolt metrics /run/deadbolt/php-fpm.metrics
  deadbolt status /var/lib/report-app/locks myapp:prod:daily-report >/dev/null && echo busy";

#[derive(Parser)]
#[command(
    name = "deadbolt",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_long_help = AFTER_LONG_HELP,
    propagate_version = true
)]
struct Cli {
    /// Print one JSON object on standard output instead of text
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Who holds RESOURCE and who waits for it (exit 0: held, 1: free)
    #[command(after_long_help = AFTER_LONG_HELP)]
    Status {
        /// The store: flock, flock:///DIR, a directory, semaphore, or a Redis DSN
        store: String,
        /// The resource's name, as the application gives it to createLock()
        resource: String,
    },
    /// The locks held or waited for in STORE, with their holders (exit 0: some, 1: none)
    #[command(
        long_about = "The locks held or waited for in STORE, with their holders and waiters.\n\n\
            Redis: the sorted sets whose names begin with PREFIX (SCAN ... TYPE zset), Deadbolt's \
            own keys left out; on a Redis Cluster, every primary in turn.\n\
            flock: the lock files in the directory, named by file (sf.<name>.<hash>.lock: the \
            resource's name sanitized and cut, which cannot be turned back into it); PREFIX is \
            matched against the sanitized name.",
        after_long_help = AFTER_LONG_HELP
    )]
    List {
        /// The store: flock, flock:///DIR, a directory, semaphore, or a Redis DSN
        store: String,
        /// Only resources whose names begin with PREFIX (default: all)
        prefix: Option<String>,
    },
    /// Release RESOURCE whoever holds it (needs --force)
    #[command(
        long_about = "Release RESOURCE whoever holds it, and print how many holders it had.\n\n\
            Its holders find the lock gone at their next call (lost, as if it had expired); a \
            waiter gets it as after a release. Redis: the lock's key and records go. flock: the \
            lock file is removed (a Deadbolt holder notices at its next call; a symfony/lock \
            holder is not told and keeps working under a lock that excludes nobody).",
        after_long_help = AFTER_LONG_HELP
    )]
    Release {
        /// Release even though another process holds the lock: it loses it
        #[arg(long)]
        force: bool,
        /// The store: flock, flock:///DIR, a directory, semaphore, or a Redis DSN
        store: String,
        /// The resource's name
        resource: String,
    },
    /// Print a metrics file (deadbolt.metrics_file) in Prometheus's text format
    #[command(after_long_help = AFTER_LONG_HELP)]
    Metrics {
        /// The file php.ini's deadbolt.metrics_file names
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            return ExitCode::from(if usage { exit::USAGE } else { exit::OK });
        }
    };
    match run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("deadbolt: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// Why a command did not do its job: the message for standard error, and the exit status.
pub struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: exit::USAGE,
        }
    }

    /// An engine error: a malformed argument is a usage error, anything else a failure.
    fn engine(e: &deadbolt_core::Error) -> Self {
        let code = match e.kind() {
            deadbolt_core::ErrorKind::InvalidArgument | deadbolt_core::ErrorKind::InvalidTtl => {
                exit::USAGE
            }
            _ => exit::FAILURE,
        };
        Failure {
            message: e.to_string(),
            code,
        }
    }
}

fn run(cli: &Cli) -> Result<u8, Failure> {
    let json = cli.json;
    let held = |held: bool| if held { exit::OK } else { exit::NOTHING_HELD };
    match &cli.command {
        Command::Status { store, resource } => {
            let store = OpenStore::open(store)?;
            let state = store
                .inspecting()
                .inspect(resource.as_bytes())
                .map_err(|e| Failure::engine(&e))?;
            render::status(json, store.name(), resource, &state);
            Ok(held(!state.holders.is_empty()))
        }
        Command::List { store, prefix } => {
            let store = OpenStore::open(store)?;
            let listed = store.list(prefix.as_deref().unwrap_or("").as_bytes())?;
            render::list(json, store.name(), store.lists_files(), &listed);
            Ok(held(!listed.is_empty()))
        }
        Command::Release {
            force,
            store,
            resource,
        } => {
            if !force {
                return Err(Failure::usage(
                    "release needs --force: it releases the lock whoever holds it, and its \
                     holders lose it (they find it gone at their next call). Check who holds it \
                     with `deadbolt status STORE RESOURCE` first.",
                ));
            }
            let store = OpenStore::open(store)?;
            let count = store
                .inspecting()
                .force_release(resource.as_bytes())
                .map_err(|e| Failure::engine(&e))?;
            render::released(json, store.name(), resource, count);
            Ok(held(count > 0))
        }
        Command::Metrics { file } => {
            if json {
                let snapshot = deadbolt_core::metrics_file_snapshot(file)
                    .map_err(|e| Failure::engine(&e).at_least_failure())?;
                render::metrics_json(&snapshot);
            } else {
                let text = deadbolt_core::metrics_file_prometheus(file)
                    .map_err(|e| Failure::engine(&e).at_least_failure())?;
                print!("{text}");
            }
            Ok(exit::OK)
        }
    }
}

impl Failure {
    /// A metrics file that cannot be read is a failure, whatever the engine calls it.
    fn at_least_failure(mut self) -> Self {
        self.code = exit::FAILURE;
        self
    }
}
