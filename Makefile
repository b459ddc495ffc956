# The two set-up commands of README.md: `make run` and `make test`. Each installs what is missing
# (scripts/bootstrap.sh, Debian packages only), builds, then runs.
PRESET ?= release
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)
EXAMPLE ?= examples/llama3.1_8B-BF16-pretrain.yaml

.PHONY: all deps configure build run test bench asan tsan format clean

all: build

deps:
	@bash scripts/bootstrap.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/projector both --config $(EXAMPLE)

test: build
	ctest --preset $(PRESET) -j $(JOBS)

bench: build
	$(BUILD)/projector_bench --benchmark_min_time=0.2

asan:
	@$(MAKE) test PRESET=asan

# The sweep tests (the only multi-threaded code) under ThreadSanitizer.
tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS)

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.h' 'web/*.js')

clean:
	rm -rf build
