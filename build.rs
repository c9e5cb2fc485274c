//! Tells the code which PHP it is built for where the engine's wording differs (src/php_param.rs). Thread-safe (ZTS)
//! and non-thread-safe PHP alike: ext-php-rs reads which one from the PHP itself (its `php_zts` cfg), and a module
//! built for one is refused by the other when PHP loads it, in PHP's own words ("build ID ... NTS" / "TS").
//!
//! With the `helgrind` feature it also checks that valgrind's headers are where crabgrind looks for them: without
//! them crabgrind still compiles, and every announcement then panics at run time (seen: an arm64 cross build whose
//! module aborted PHP at startup).
//!
//! The PHP is the one ext-php-rs builds against: `$PHP`, else the binary `$PHP_CONFIG --php-binary` names, else
//! `php` on PATH. When none runs, ext-php-rs reports that itself.

use std::process::Command;

fn main() {
    if std::env::var_os("CARGO_FEATURE_HELGRIND").is_some() {
        require_valgrind_headers();
    }
    println!("cargo:rerun-if-env-changed=PHP");
    println!("cargo:rerun-if-env-changed=PHP_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(php_zval_value_name)");
    let php = php_binary();
    let version_id = Command::new(&php)
        .args(["-n", "-r", "echo PHP_VERSION_ID;"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
    let Some(version_id) = version_id else {
        return;
    };
    // PHP 8.3 names a given `true` or object in its TypeErrors by value (`zend_zval_value_name`),
    // 8.2 by type: src/php_param.rs words them as the engine it is built for.
    let version_id: u32 = version_id.trim().parse().unwrap_or(0);
    if version_id >= 80300 {
        println!("cargo::rustc-cfg=php_zval_value_name");
    }
}

/// crabgrind's places: `$VALGRIND_INCLUDE`, pkg-config's `valgrind`, the compiler's default include path.
fn require_valgrind_headers() {
    println!("cargo:rerun-if-env-changed=VALGRIND_INCLUDE");
    let by_env = std::env::var_os("VALGRIND_INCLUDE").map(|dir| {
        std::path::Path::new(&dir)
            .join("valgrind/valgrind.h")
            .is_file()
    });
    let by_pkg_config = || {
        Command::new("pkg-config")
            .args(["--exists", "valgrind"])
            .status()
            .is_ok_and(|status| status.success())
    };
    let by_default = || std::path::Path::new("/usr/include/valgrind/valgrind.h").is_file();
    if !by_env.unwrap_or_else(|| by_pkg_config() || by_default()) {
        eprintln!(
            "error: the helgrind feature needs valgrind's headers (valgrind/valgrind.h): Debian's valgrind \
             package, or VALGRIND_INCLUDE=<dir holding valgrind/>"
        );
        std::process::exit(1);
    }
}

fn php_binary() -> String {
    if let Ok(php) = std::env::var("PHP") {
        return php;
    }
    if let Ok(config) = std::env::var("PHP_CONFIG") {
        if let Ok(out) = Command::new(&config).arg("--php-binary").output() {
            let binary = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if out.status.success() && !binary.is_empty() {
                return binary;
            }
        }
    }
    "php".to_owned()
}
