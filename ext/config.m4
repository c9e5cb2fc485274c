dnl Deadbolt for phpize, PIE and PECL-style tooling: `phpize && ./configure && make && make install` in this
dnl directory. Deadbolt is written in Rust, so configure checks the PHP it builds for and finds cargo, and make runs
dnl cargo against that PHP (its php-config and php binary) and puts the .so into modules/, which `make install`
dnl copies into that PHP's extension directory. This lives in ext/ so that phpize's generated Makefile never
dnl overwrites the project's own Makefile at the top.

PHP_ARG_ENABLE([deadbolt],
  [whether to enable Deadbolt],
  [AS_HELP_STRING([--enable-deadbolt], [Enable Deadbolt, Symfony-Lock-compatible locks (default: yes)])],
  [yes], [no])

if test "$PHP_DEADBOLT" != "no"; then
  dnl Thread-safe (ZTS: FrankenPHP, the -zts images) and NTS PHP alike; say which, as the build log's first fact.
  AC_MSG_CHECKING([whether $PHP_CONFIG describes a thread-safe (ZTS) PHP])
  if grep -q '^#define ZTS 1' "$phpincludedir/main/php_config.h" 2>/dev/null; then
    AC_MSG_RESULT([yes: Deadbolt is built for PHP threads])
  else
    AC_MSG_RESULT([no])
  fi

  AC_PATH_PROG([DEADBOLT_CARGO], [cargo], [no], [$PATH:$HOME/.cargo/bin])
  if test "$DEADBOLT_CARGO" = "no"; then
    AC_MSG_ERROR([cargo (Rust 1.85 or newer) is needed to build Deadbolt from source: rustup, or Debian's cargo and rustc packages; with libclang-dev for bindgen. A server without Rust can install a pre-built release instead (README: Install).])
  fi

  DEADBOLT_CRATE_DIR=`cd "$abs_srcdir/.." && pwd`
  if test ! -f "$DEADBOLT_CRATE_DIR/Cargo.toml"; then
    AC_MSG_ERROR([no Cargo.toml in $DEADBOLT_CRATE_DIR: run phpize in the ext/ directory of a Deadbolt source tree])
  fi
  DEADBOLT_PHP_CONFIG=`command -v "$PHP_CONFIG"`
  dnl Cargo's build directory: CARGO_TARGET_DIR when set, else the source tree's target/.
  DEADBOLT_CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$DEADBOLT_CRATE_DIR/target}

  PHP_SUBST(DEADBOLT_CARGO)
  PHP_SUBST(DEADBOLT_CRATE_DIR)
  PHP_SUBST(DEADBOLT_PHP_CONFIG)
  PHP_SUBST(DEADBOLT_CARGO_TARGET_DIR)
  dnl No C sources: the one module is the cargo build's output (the rule is in Makefile.frag).
  PHP_MODULES='$(phplibdir)/deadbolt.so'
  PHP_ADD_MAKEFILE_FRAGMENT([$abs_srcdir/Makefile.frag])
fi
