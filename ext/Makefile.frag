# Appended to phpize's Makefile by config.m4: the module is built by cargo, for the PHP configure was run against.
# Cargo decides what is out of date, so the rule always asks it.
$(phplibdir)/deadbolt.so: deadbolt-cargo-build
	@mkdir -p $(phplibdir)
	cp $(DEADBOLT_CARGO_TARGET_DIR)/release/libdeadbolt.so $@

deadbolt-cargo-build:
	cd $(DEADBOLT_CRATE_DIR) && PHP=$(PHP_EXECUTABLE) PHP_CONFIG=$(DEADBOLT_PHP_CONFIG) \
	  CARGO_TARGET_DIR=$(DEADBOLT_CARGO_TARGET_DIR) $(DEADBOLT_CARGO) build --release --locked

.PHONY: deadbolt-cargo-build
