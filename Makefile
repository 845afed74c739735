# Convenience front end over CMake. `make run` and `make test` are the two
# commands in README.md.
BUILD ?= build
JOBS ?= $(shell nproc)
RUN_ARGS ?= ubd0=$(BUILD)/rootfs.ext4 rw mem=1024m loglevel=8 init=/sbin/init

.PHONY: deps configure build rootfs run test bench install clean

deps:
	./tools/install-deps

configure: deps
	cmake -S . -B $(BUILD) -G Ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

rootfs: build
	./tools/build-rootfs --build-dir $(BUILD)

run: rootfs
	$(BUILD)/flatux $(RUN_ARGS)

# The whole suite runs twice: with the default syscall entry (auto: sites
# rewritten at their first call where the host allows), then every test
# that runs guests again with each guest call trapping (SIGSYS). Tests that
# do not depend on the entry, or pick one themselves, run once; so do the
# long soaks and the Python suite (minutes each), whose calls the guest
# tests already cover in both modes.
MODE_INDEPENDENT = ^(unit|freestanding|fuzz|mkimage|bench|soak|docs)\.|^python_suite$$|\.native$$|\.flatux-(rewrite|trap|page0|auto)$$|^e2e\.strace\.modes

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300
	cd $(BUILD) && FLATUX_SYSCALL_ENTRY=trap ctest --output-on-failure -j $(JOBS) --timeout 300 \
	  -E '$(MODE_INDEPENDENT)'

# flatux and flatux-oci (the OCI runtime: flatux under that name) in PREFIX/bin.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: rootfs  # the flatux-img column boots the no-MMU busybox it builds
	python3 bench/run --build $(BUILD)

clean:
	rm -rf $(BUILD)
