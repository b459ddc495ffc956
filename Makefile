# The two set-up commands of README.md: `make run` and `make test`. Each installs what is missing
# (scripts/bootstrap.sh, Debian packages only), builds, then runs.
PRESET ?= release
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)
EXAMPLE ?= examples/llama3.1_8B-BF16-pretrain.yaml

.PHONY: all deps configure build cli run test pip-check bench asan tsan fuzz fuzz-long mutation-fuzz \
        format clean

all: build

deps:
	@bash scripts/bootstrap.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The first answer needs only the CLI and its libraries; `make test` builds the rest.
cli: configure
	@cmake --build $(BUILD) -j $(JOBS) --target projector

run: cli
	$(BUILD)/projector both --config $(EXAMPLE)

test: build
	ctest --preset $(PRESET) -j $(JOBS)

# `pip install --no-build-isolation .` into a fresh venv, then the module and the `projector` command
# from another directory (docs/python.md). CMAKE_BUILD_PARALLEL_LEVEL sets the package build's jobs.
pip-check: deps
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) bash scripts/check_pip_install.sh

bench: build
	$(BUILD)/projector_bench --benchmark_min_time=0.2

asan:
	@$(MAKE) test PRESET=asan

# The sweep tests (the only multi-threaded code) under ThreadSanitizer.
tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS)

# libFuzzer targets (clang, ASan + UBSan): one run of FUZZ_SECONDS per target through ctest.
FUZZ_SECONDS ?= 60
fuzz: deps
	@cmake --preset fuzz -DPROJECTOR_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	ctest --preset fuzz -j $(JOBS)

# Before a release: 10 minutes per target (docs/fuzzing.md), at the lowest CPU priority.
fuzz-long:
	@nice -n 19 $(MAKE) fuzz FUZZ_SECONDS=600

# The CLI mutation fuzzer (scripts/mutation_fuzz.py) on the ASan + UBSan build.
mutation-fuzz: deps
	@cmake --preset asan >/dev/null
	@cmake --build build/asan --target projector -j $(JOBS)
	nice -n 19 python3 scripts/mutation_fuzz.py --binary build/asan/projector --cases 2000 \
	  --jobs $(JOBS) --out build/asan/mutation-fuzz

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.h' 'web/*.js')

clean:
	rm -rf build
