# Thin front over CMake. Every target that builds first makes sure the dependencies exist.
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
DEMO_MODEL ?= models/demo.gguf

.PHONY: all deps build test bench debug asan fuzz clean demo third_party

all: build

deps:
	@tools/setup-deps

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	@$(BUILD)/ember bench-ops

debug: deps
	@cmake -S . -B build-debug -G Ninja -DCMAKE_BUILD_TYPE=Debug $(CMAKE_ARGS) >/dev/null
	@cmake --build build-debug -j $(JOBS)

asan: deps
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_SANITIZE=ON -DEMBER_CUDA=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest --output-on-failure -j $(JOBS)

# libFuzzer needs clang; FUZZ_SECONDS bounds each target's run.
FUZZ_SECONDS ?= 60
fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_FUZZ=ON -DEMBER_CUDA=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_gguf
	@mkdir -p build-fuzz/corpus && build-fuzz/fuzz_gguf -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -dict=tests/fuzz/gguf.dict build-fuzz/corpus tests/fuzz/seeds

# Copies CLI11, fmt and doctest headers (and ../shared, the tests' data) into third_party/ so
# the tree builds and tests on machines without Debian packages (GPU machines): carry
# third_party/ along with the source.
third_party:
	@tools/vendor-deps

demo: build
	@tools/demo

clean:
	@rm -rf build build-debug build-asan build-fuzz
