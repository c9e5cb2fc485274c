# Deadbolt: the front door. `make demo` and `make test` work on a fresh Debian 12 machine.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)

SO        := $(CURDIR)/target/release/libdeadbolt.so
PHP       := php -d extension=$(SO)
PHPUNIT   := /usr/bin/phpunit
RUN_DIR   := $(CURDIR)/target/test-run

.PHONY: all deps build demo test test-rust test-php test-valgrind test-soak lint bench install uninstall stubs clean

all: build

deps:
	@bash scripts/bootstrap.sh

build: deps
	cargo build --release --locked

demo: build
	@bash scripts/demo.sh $(SO)

## Everything CI runs: formatting, lints, the engine's tests, the PHP suites against the built .so (short
## versions of the php-fpm, worker, chaos and fuzz runs included), and a subset of them under valgrind.
test: build lint test-rust test-php test-valgrind

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	@for f in $$(find stubs examples bench tests -name '*.php'); do php -l $$f >/dev/null || exit 1; done

test-rust:
	cargo test --workspace --locked

# A private redis-server on a free loopback port lives exactly as long as the PHP suites.
test-php:
	@bash scripts/redis-stop.sh $(RUN_DIR)/redis >/dev/null 2>&1 || true
	@port=$$(bash scripts/redis-start.sh $(RUN_DIR)/redis) && \
	  trap 'bash scripts/redis-stop.sh $(RUN_DIR)/redis' EXIT && \
	  echo "redis-server on 127.0.0.1:$$port" && \
	  DEADBOLT_SO=$(SO) DEADBOLT_REDIS_PORT=$$port $(PHP) $(PHPUNIT) -c phpunit.xml.dist

# Benchmarks print tables (never asserted); Redis ones get their own private redis-server.
# The PHPUnit subset of scripts/valgrind-suite.sh under valgrind: no invalid access, no definite leak in
# the extension.
test-valgrind:
	bash scripts/valgrind-suite.sh

## The long versions: 50k php-fpm requests, 80k worker operations, minutes of chaos, 100k fuzzed calls,
## the whole PHPUnit suite under valgrind. A summary of what was driven goes to target/soak-report.txt.
test-soak: build
	@rm -f target/soak-report.txt; mkdir -p $(RUN_DIR)
	@bash scripts/redis-stop.sh $(RUN_DIR)/redis >/dev/null 2>&1 || true
	@port=$$(bash scripts/redis-start.sh $(RUN_DIR)/redis) && \
	  trap 'bash scripts/redis-stop.sh $(RUN_DIR)/redis' EXIT && \
	  for suite in tests/Runtime tests/Chaos tests/Fuzz; do \
	    DEADBOLT_SOAK=1 DEADBOLT_REPORT=$(CURDIR)/target/soak-report.txt DEADBOLT_SO=$(SO) DEADBOLT_REDIS_PORT=$$port \
	      $(PHP) $(PHPUNIT) -c phpunit.xml.dist $$suite || exit 1; \
	  done
	SOAK=1 bash scripts/valgrind-suite.sh
	@cat target/soak-report.txt 2>/dev/null || true

bench: build
	$(PHP) bench/flock.php
	$(PHP) bench/memory.php
	@bash scripts/redis-stop.sh $(RUN_DIR)/bench-redis >/dev/null 2>&1 || true
	@port=$$(bash scripts/redis-start.sh $(RUN_DIR)/bench-redis) && \
	  trap 'bash scripts/redis-stop.sh $(RUN_DIR)/bench-redis' EXIT && \
	  DEADBOLT_REDIS_PORT=$$port $(PHP) bench/redis.php && \
	  DEADBOLT_REDIS_PORT=$$port $(PHP) bench/contention.php --procs=1,4,8,16 && \
	  DEADBOLT_REDIS_PORT=$$port $(PHP) bench/contention.php --procs=8 --think=1000 --no-png

# Installs the extension for every SAPI of PHP 8.2 (CLI and FPM): `php -m` then lists deadbolt.
install: build
	install -m 0755 $(SO) $$(php-config --extension-dir)/deadbolt.so
	echo "extension=deadbolt.so" > /etc/php/8.2/mods-available/deadbolt.ini
	phpenmod -v 8.2 deadbolt
	@php -m | grep -qx deadbolt && echo "deadbolt installed: $$(php-config --extension-dir)/deadbolt.so"

uninstall:
	phpdismod -v 8.2 deadbolt || true
	rm -f /etc/php/8.2/mods-available/deadbolt.ini $$(php-config --extension-dir)/deadbolt.so

clean:
	cargo clean
