# Convenience front end over CMake. `make run` and `make test` are the two
# commands in README.md.
BUILD ?= build
JOBS ?= $(shell nproc)
RUN_ARGS ?= run -- /usr/bin/python3 -c 'print(42)'

.PHONY: deps configure build run test bench clean

deps:
	./tools/install-deps

configure: deps
	cmake -S . -B $(BUILD) -G Ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/flatux $(RUN_ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

bench: build
	python3 bench/run --build $(BUILD)

clean:
	rm -rf $(BUILD)
