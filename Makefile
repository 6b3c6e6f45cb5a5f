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

# libFuzzer needs clang. Every tests/fuzz/fuzz_*.cpp is built, then run in turn for
# FUZZ_SECONDS (tests/fuzz/run: corpora, seeds, dictionaries); the first crash or sanitizer
# report stops it and fails.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = $(basename $(notdir $(wildcard tests/fuzz/fuzz_*.cpp)))
fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_FUZZ=ON -DEMBER_CUDA=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	@tests/fuzz/run build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Copies CLI11, fmt and doctest headers (and ../shared, the tests' data) into third_party/ so
# the tree builds and tests on machines without Debian packages (GPU machines): carry
# third_party/ along with the source.
third_party:
	@tools/vendor-deps

demo: build
	@tools/demo

clean:
	@rm -rf build build-debug build-asan build-fuzz
