# Deadbolt: the front door. `make demo` and `make test` work on a fresh Debian 12 or Debian 13 machine.
# PHP_CONFIG=/path/to/php-config selects another installed PHP (the php beside it runs the tests).
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
ifdef PHP_CONFIG
export PHP_CONFIG
endif

TARGET_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
SO         := $(TARGET_DIR)/release/libdeadbolt.so
# The build tree's PHP: the extension just built, never an installed copy (scripts/php.sh says how).
RUN_PHP    := bash scripts/php.sh $(SO)
PHPUNIT    := bash scripts/phpunit.sh $(SO)
RUN_DIR    := $(TARGET_DIR)/test-run

.PHONY: all deps build build-tests demo check test test-rust test-php test-valgrind test-soak test-debian13 test-platforms \
        test-dist test-phpize test-threads test-parts lint bench install uninstall dist clean

all: build

deps:
	@bash scripts/bootstrap.sh

# ext-php-rs reads PHP's headers through $PHP / $PHP_CONFIG; both name the PHP chosen above.
build: deps
	PHP=$$(bash scripts/php-binary.sh) cargo build --release --locked -p deadbolt -p deadbolt-cli

demo: build
	@bash scripts/demo.sh $(SO)

## The developers' fast lane (a few minutes on a built tree): formatting, lints, the engine's tests and the PHPUnit
## suites without the slow group (the failover, chaos, sentinel and refresher runs), against a private redis-server.
check: build lint test-rust
	@bash scripts/test-php.sh $(SO) $(RUN_DIR) --exclude-group slow

## Everything `make test` runs on this machine: formatting, lints, the engine's tests, the PHP suites against the
## built .so (short versions of the php-fpm, worker, chaos and fuzz runs included; again against Valkey and
## symfony/lock 7.4 where the platform has them), a subset of them under valgrind, the phpize build, and the thread
## suite (a thread-safe PHP built from source). `make test-debian13` runs the same on Debian 13 (THREADS=no: the
## thread suite once per CI run, on the host; test-dist runs PHP threads in a Debian 13 root with the -zts package),
## `make test-dist` the packages; .ci/run runs all three.
TEST_PARTS := lint test-rust test-php test-valgrind test-phpize $(if $(filter no,$(THREADS)),,test-threads)
test: build $(TEST_PARTS)

# What `make test` runs after the build, in order (.ci/run times each one).
test-parts:
	@echo $(TEST_PARTS)

# CLIPPY=no skips clippy (make test-debian13: the host's compiler and the same sources give the same verdict).
lint:
	cargo fmt --all -- --check
	@if [ "$(CLIPPY)" != no ]; then set -x; \
	  PHP=$$(bash scripts/php-binary.sh) cargo clippy --workspace --all-targets --locked -- -D warnings; fi
	@php=$$(bash scripts/php-binary.sh); for f in $$(find stubs examples bench tests php -name '*.php' 2>/dev/null); do \
	  $$php -n -l $$f >/dev/null || exit 1; done

# The Rust tests: the engine's (core) and the command's (cli). The extension crate has none of its own (its
# behaviour is tested from PHP; clippy checks its code in every target), so its test build, against one PHP's
# headers, is not made: the engine's test build is the same on every platform of one compiler, and make
# test-debian13 runs the host's against Debian 13's servers.
ENGINE_CRATES := -p deadbolt-core -p deadbolt-cli

# The engine's tests compiled, not run (.ci/run does it before its lanes, and the Debian 13 lane runs them).
build-tests: deps
	cargo test $(ENGINE_CRATES) --locked --no-run

test-rust:
	cargo test $(ENGINE_CRATES) --locked

# Private servers on free loopback ports live exactly as long as the PHP suites (scripts/test-php.sh).
test-php:
	@bash scripts/test-php.sh $(SO) $(RUN_DIR)

# The PHPUnit subset of scripts/valgrind-suite.sh under valgrind: no invalid access, no definite leak in
# the extension.
test-valgrind:
	DEADBOLT_SO=$(SO) bash scripts/valgrind-suite.sh

# phpize && ./configure && make && make install (staged) in a copy of the tree, as PIE runs it.
test-phpize:
	@bash scripts/test-phpize.sh $(TARGET_DIR)

## The long versions: 50k php-fpm requests, 80k worker operations, minutes of chaos, 100k fuzzed calls,
## the whole PHPUnit suite under valgrind. A summary of what was driven goes to target/soak-report.txt.
test-soak: build
	@rm -f $(TARGET_DIR)/soak-report.txt; mkdir -p $(RUN_DIR)
	@bash scripts/redis-stop.sh $(RUN_DIR)/redis >/dev/null 2>&1 || true
	@port=$$(bash scripts/redis-start.sh $(RUN_DIR)/redis) && \
	  trap 'bash scripts/redis-stop.sh $(RUN_DIR)/redis' EXIT && \
	  for suite in tests/Runtime tests/Chaos tests/Fuzz; do \
	    DEADBOLT_SOAK=1 DEADBOLT_REPORT=$(TARGET_DIR)/soak-report.txt DEADBOLT_REDIS_PORT=$$port \
	      $(PHPUNIT) $$suite || exit 1; \
	  done
	SOAK=1 DEADBOLT_SO=$(SO) bash scripts/valgrind-suite.sh
	@cat $(TARGET_DIR)/soak-report.txt 2>/dev/null || true

## The second platform: a Debian 13 root under target/roots/ (debootstrap, cached), the project built there with
## the host's Rust toolchain, and `make test` run there against its PHP 8.4, Redis 8.0 and Valkey.
test-debian13:
	@bash scripts/test-debian13.sh

## The platforms beyond this machine and Debian 13, with the portable subset of the suites (phpunit.xml.dist's
## "portable" testsuite says which and why): PHP 8.5 (Debian sid + experimental, x86_64) and Debian 13 on arm64
## (cross-built, run under qemu-user-static). Builds every arm64 .so that make dist packages.
test-platforms:
	@bash scripts/test-platforms.sh

## Binary packages for every PHP this machine builds for: x86_64 PHP 8.2 (the host), 8.4 (Debian 13 root), 8.5
## (php85 root); arm64 PHP 8.2, 8.4, 8.5 (cross-built). A PIE tarball each, a .deb for Debian's own PHPs (8.2, 8.4),
## and SHA256SUMS, in target/dist/.
dist: build
	@bash scripts/dist.sh

## The -zts tarballs beyond make dist's x86_64 PHP 8.4 one: arm64 PHP 8.4 (cross-compiled, checked under qemu) and
## x86_64 PHP 8.2, each against a ZTS PHP built from source, installed there with PHP threads sharing a lock
## (scripts/zts-extra.sh). Not part of make dist / .ci/run: each PHP build is 9 CPU-minutes.
zts-extra:
	@bash scripts/zts-extra.sh

## The packages installed where nothing but PHP is: fresh Debian 12 and 13 roots, and a /usr/local layout; the .deb,
## the tarball's install.sh, and make install / make uninstall in each (scripts/test-dist.sh).
test-dist: dist
	@bash scripts/test-dist.sh

## Thread-safe PHP: Deadbolt built for a ZTS PHP 8.4 with its embed SAPI (built from source into target/zts-php), in
## a host of our own running PHP requests in many threads of one process, natively and under helgrind
## (scripts/test-threads.sh).
test-threads:
	@bash scripts/test-threads.sh

# Benchmarks print tables (never asserted); Redis, memcached and PostgreSQL ones get their own private server.
bench: build
	$(RUN_PHP) bench/flock.php
	$(RUN_PHP) bench/sysv.php
	$(RUN_PHP) bench/symfony_store.php
	$(RUN_PHP) bench/memory.php
	@bash scripts/memcached-stop.sh $(RUN_DIR)/bench-memcached >/dev/null 2>&1 || true
	@port=$$(bash scripts/memcached-start.sh $(RUN_DIR)/bench-memcached) && \
	  trap 'bash scripts/memcached-stop.sh $(RUN_DIR)/bench-memcached' EXIT && \
	  DEADBOLT_MEMCACHED_PORT=$$port $(RUN_PHP) bench/memcached.php
	@bash scripts/postgres-stop.sh $(RUN_DIR)/bench-postgres >/dev/null 2>&1 || true
	@bash scripts/mariadb-stop.sh $(RUN_DIR)/bench-mariadb >/dev/null 2>&1 || true
	@port=$$(bash scripts/postgres-start.sh $(RUN_DIR)/bench-postgres) && \
	  trap 'bash scripts/postgres-stop.sh $(RUN_DIR)/bench-postgres; bash scripts/mariadb-stop.sh $(RUN_DIR)/bench-mariadb' EXIT && \
	  mysql_port=$$(bash scripts/mariadb-start.sh $(RUN_DIR)/bench-mariadb) && \
	  DEADBOLT_POSTGRES_PORT=$$port $(RUN_PHP) bench/postgres.php && \
	  DEADBOLT_POSTGRES_PORT=$$port DEADBOLT_MYSQL_PORT=$$mysql_port $(RUN_PHP) bench/pdo.php && \
	  DEADBOLT_MYSQL_PORT=$$mysql_port $(RUN_PHP) bench/mysql.php
	@bash scripts/redis-stop.sh $(RUN_DIR)/bench-redis >/dev/null 2>&1 || true
	@port=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-redis) && \
	  trap 'bash scripts/redis-stop.sh $(RUN_DIR)/bench-redis' EXIT && \
	  DEADBOLT_REDIS_PORT=$$port $(RUN_PHP) bench/redis.php && \
	  DEADBOLT_REDIS_PORT=$$port $(RUN_PHP) bench/redis.php --pin=one 5000 64 3 && \
	  if [ "$$(nproc)" -ge 2 ]; then DEADBOLT_REDIS_PORT=$$port $(RUN_PHP) bench/redis.php --pin=two 5000 64 3; fi && \
	  DEADBOLT_REDIS_PORT=$$port $(RUN_PHP) bench/functions.php && \
	  DEADBOLT_REDIS_PORT=$$port $(RUN_PHP) bench/contention.php --procs=1,4,8,16 && \
	  DEADBOLT_REDIS_PORT=$$port $(RUN_PHP) bench/contention.php --procs=1,4,8,16,32 --think=1000 --no-png && \
	  DEADBOLT_REDIS_PORT=$$port $(RUN_PHP) bench/semaphore.php
	@bash scripts/redis-stop.sh $(RUN_DIR)/bench-replica >/dev/null 2>&1 || true
	@port=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-redis) && \
	  replica=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-replica) && \
	  trap 'bash scripts/redis-stop.sh $(RUN_DIR)/bench-redis; bash scripts/redis-stop.sh $(RUN_DIR)/bench-replica' EXIT && \
	  $(RUN_PHP) bench/replicas.php --port=$$port --replica-port=$$replica
	@for i in 1 2 3; do bash scripts/redis-stop.sh $(RUN_DIR)/bench-master$$i >/dev/null 2>&1 || true; done
	@p1=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-master1) && \
	  p2=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-master2) && \
	  p3=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-master3) && \
	  trap 'for i in 1 2 3; do bash scripts/redis-stop.sh $(RUN_DIR)/bench-master$$i; done' EXIT && \
	  $(RUN_PHP) bench/quorum.php --ports=$$p1,$$p2,$$p3 && \
	  $(RUN_PHP) bench/quorum.php --ports=$$p1,$$p2,$$p3 --delay-ms=1 300 3
	@for i in 1 2 3; do bash scripts/redis-stop.sh $(RUN_DIR)/bench-cluster$$i >/dev/null 2>&1 || true; done
	@p1=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-cluster1 --cluster-enabled yes) && \
	  p2=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-cluster2 --cluster-enabled yes) && \
	  p3=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-cluster3 --cluster-enabled yes) && \
	  trap 'for i in 1 2 3; do bash scripts/redis-stop.sh $(RUN_DIR)/bench-cluster$$i; done' EXIT && \
	  $(RUN_PHP) bench/cluster.php --ports=$$p1,$$p2,$$p3

# Installs the built extension for every SAPI of this PHP (or $PHP_CONFIG's) and says what it wrote;
# `make uninstall` removes exactly that (scripts/install-binary.sh keeps the list, and picks the PHP the same way
# as the build: beside $PHP_CONFIG, else `php`). Builds first when nothing is
# built yet; an existing build is installed as it is (a machine without Rust can install a build tree's .so).
install: $(SO)
	@bash scripts/install-binary.sh install $(SO)

uninstall:
	@bash scripts/install-binary.sh uninstall

$(SO):
	$(MAKE) build

# Unmounts what a killed Debian root run left under target/roots first: cargo clean would delete through those
# mounts (the host's /dev, the bind-mounted checkout).
clean:
	@bash scripts/debian-root.sh unmount
	cargo clean
