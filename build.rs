//! Refuses a thread-safe (ZTS) PHP before anything is compiled against it: support for PHP threads is work in
//! progress (docs/ARCHITECTURE.md, "PHP threads"), and without this check the mismatch only shows as a symbol error
//! when PHP loads the module. `DEADBOLT_ZTS_IN_PROGRESS` set lets the thread suite (scripts/test-threads.sh) build
//! for its ZTS PHP; nothing else sets it. It also tells the code which PHP it is built for where the engine's wording
//! differs (src/php_param.rs).
//!
//! The PHP is the one ext-php-rs builds against: `$PHP`, else the binary `$PHP_CONFIG --php-binary` names, else
//! `php` on PATH. When none runs, ext-php-rs reports that itself.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PHP");
    println!("cargo:rerun-if-env-changed=PHP_CONFIG");
    println!("cargo:rerun-if-env-changed=DEADBOLT_ZTS_IN_PROGRESS");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(php_zval_value_name)");
    let php = php_binary();
    let facts = Command::new(&php)
        .args([
            "-n",
            "-r",
            "echo (int) PHP_ZTS, ' ', PHP_VERSION, ' ', PHP_VERSION_ID;",
        ])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned());
    let Some(facts) = facts else {
        return;
    };
    let mut parts = facts.split_whitespace();
    let (zts, version, version_id) = (parts.next(), parts.next().unwrap_or("?"), parts.next());
    if zts == Some("1") && std::env::var_os("DEADBOLT_ZTS_IN_PROGRESS").is_none() {
        eprintln!(
            "error: {php} is a thread-safe (ZTS) PHP {version}. Deadbolt supports non-thread-safe (NTS) PHP \
             only (Debian's php packages and the official php images are NTS); set PHP_CONFIG to an NTS PHP's \
             php-config."
        );
        std::process::exit(1);
    }
    // PHP 8.3 names a given `true` or object in its TypeErrors by value (`zend_zval_value_name`),
    // 8.2 by type: src/php_param.rs words them as the engine it is built for.
    let version_id: u32 = version_id.and_then(|id| id.parse().ok()).unwrap_or(0);
    if version_id >= 80300 {
        println!("cargo::rustc-cfg=php_zval_value_name");
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
