# llamacpp-build.sh: sourced by the tools that compare ember with llama.cpp. It builds
# llama.cpp ONCE into a cache outside the repository from the llama-cpp-python source
# package on PyPI (it vendors llama.cpp's sources under vendor/llama.cpp). The version and
# the sdist's sha256 are pinned below; a mismatch aborts.
#
# Build flags: CPU only (GGML_CUDA=OFF), GGML_NATIVE=OFF with GGML_AVX=ON GGML_AVX2=ON
# GGML_FMA=ON GGML_F16C=ON and AVX-512 OFF, i.e. the same ISA level ember's *_avx2.cpp
# kernels use, so the comparison is engine vs engine, not -march=native vs not. Static
# libs, Release. The server tools are configured in (no web UI: an empty asset table, no
# download) so that any caller's targets share one configuration; only the targets a
# caller names are built.
#
# `llamacpp_use_native` (call before llamacpp_build) switches to a second build with
# GGML_NATIVE=ON, llama.cpp's own default (-march=native: AVX-512 and VNNI where the CPU
# has them), for comparisons where each engine runs at its best on the machine.
#
# Provides: $LLAMACPP_BIN (the binaries' folder) and `llamacpp_build TARGET...`, which
# builds whichever of TARGET... is missing (under a lock: a second caller waits).
# Environment: EMBER_LLAMACPP_CACHE (default ~/.cache/ember-llamacpp),
# EMBER_LLAMACPP_JOBS (parallel jobs, default 2; the build runs under nice -n 10).

LLAMA_CPP_PYTHON_VERSION=0.3.36
LLAMA_CPP_PYTHON_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e

LLAMACPP_CACHE=${EMBER_LLAMACPP_CACHE:-$HOME/.cache/ember-llamacpp}/$LLAMA_CPP_PYTHON_VERSION
LLAMACPP_SRC=$LLAMACPP_CACHE/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp
LLAMACPP_BUILD=$LLAMACPP_CACHE/build
LLAMACPP_BIN=$LLAMACPP_BUILD/bin
LLAMACPP_JOBS=${EMBER_LLAMACPP_JOBS:-2}
LLAMACPP_ISA_FLAGS=()

llamacpp_use_native() {
    LLAMACPP_BUILD=$LLAMACPP_CACHE/build-native
    LLAMACPP_BIN=$LLAMACPP_BUILD/bin
    LLAMACPP_ISA_FLAGS=(-DGGML_NATIVE=ON)
    # Without AMX: on a Sapphire Rapids VM (amx_tile/int8/bf16 in /proc/cpuinfo) 0.3.36's AMX
    # buffer type segfaults in ggml::cpu::amx::tensor_traits::compute_forward on the first
    # prompt (llama-bench, llama-perplexity; --repack 0 avoids it). ember has no AMX kernels,
    # so the comparison keeps every other native instruction.
    if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
        LLAMACPP_ISA_FLAGS+=("-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
                             "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
    fi
}

llamacpp_die() { echo "llamacpp-build: $*" >&2; exit 1; }

llamacpp_fetch_sources() {
    local tarball=$LLAMACPP_CACHE/dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
    mkdir -p "$LLAMACPP_CACHE/dl"
    if [[ ! -f $tarball ]]; then
        python3 -m pip download --no-deps --no-binary :all: \
            "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$LLAMACPP_CACHE/dl" >&2 \
            || llamacpp_die "pip download of llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION failed"
    fi
    echo "$LLAMA_CPP_PYTHON_SHA256  $tarball" | sha256sum -c --quiet - \
        || llamacpp_die "sha256 mismatch for $tarball (expected $LLAMA_CPP_PYTHON_SHA256)"
    [[ -f $LLAMACPP_SRC/CMakeLists.txt ]] || tar -xzf "$tarball" -C "$LLAMACPP_CACHE"
}

llamacpp_missing() {
    local t
    for t in "$@"; do [[ -x $LLAMACPP_BIN/$t ]] || return 0; done
    return 1
}

# llamacpp_configure BUILD_DIR FLAG...: the shared configuration, plus FLAG... (later flags win).
llamacpp_configure() {
    local dir=$1
    shift
    nice -n 10 cmake -S "$LLAMACPP_SRC" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF \
        -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
        -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF -DGGML_BMI2=ON -DGGML_OPENMP=ON \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_APP=OFF "$@" >&2
}

llamacpp_build() {
    llamacpp_missing "$@" || return 0
    mkdir -p "$LLAMACPP_CACHE"
    exec 9>"$LLAMACPP_CACHE/.build.lock"
    flock 9
    if ! llamacpp_missing "$@"; then flock -u 9; return 0; fi
    llamacpp_fetch_sources
    echo "building llama.cpp ($LLAMA_CPP_PYTHON_VERSION: $*) into $LLAMACPP_BUILD (nice, -j$LLAMACPP_JOBS)" >&2
    llamacpp_configure "$LLAMACPP_BUILD" "${LLAMACPP_ISA_FLAGS[@]}"
    nice -n 10 cmake --build "$LLAMACPP_BUILD" -j"$LLAMACPP_JOBS" --target "$@" >&2
    flock -u 9
}

# The same sources with llama.cpp's CUDA backend (GGML_CUDA=ON), for the GPU comparisons of
# tools/gpu-goals: `llamacpp_build_cuda ARCHS TARGET...` builds TARGET... for the CUDA
# architectures ARCHS ("90") into $LLAMACPP_CUDA_BIN. It never downloads (GPU machines have
# no network): the sources must already be in the cache, extracted, as the sdist
# ($LLAMACPP_TARBALL) or as the trimmed archive llamacpp_pack_trimmed makes where there is a
# network ($LLAMACPP_TRIMMED: the sdist is 73 MiB, more than a GPU machine is sent).
LLAMACPP_TARBALL=$LLAMACPP_CACHE/dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
LLAMACPP_TRIMMED=$LLAMACPP_CACHE/dl/llama.cpp-$LLAMA_CPP_PYTHON_VERSION-trimmed.tar.gz
LLAMACPP_CUDA_BUILD=$LLAMACPP_CACHE/build-cuda
LLAMACPP_CUDA_BIN=$LLAMACPP_CUDA_BUILD/bin

llamacpp_build_cuda() {
    local archs=$1 t
    shift
    [[ -f $LLAMACPP_SRC/CMakeLists.txt || -f $LLAMACPP_TARBALL || -f $LLAMACPP_TRIMMED ]] ||
        llamacpp_die "no llama.cpp sources in $LLAMACPP_CACHE (fetch them where there is a network)"
    if [[ ! -f $LLAMACPP_SRC/CMakeLists.txt && -f $LLAMACPP_TRIMMED ]]; then
        tar -xzf "$LLAMACPP_TRIMMED" -C "$LLAMACPP_CACHE"
    fi
    [[ -f $LLAMACPP_SRC/CMakeLists.txt ]] || llamacpp_fetch_sources
    for t in "$@"; do [[ -x $LLAMACPP_CUDA_BIN/$t ]] || break; done
    [[ -x $LLAMACPP_CUDA_BIN/$t ]] && return 0
    echo "building llama.cpp with CUDA ($LLAMA_CPP_PYTHON_VERSION, sm $archs: $*) into $LLAMACPP_CUDA_BUILD (-j$LLAMACPP_JOBS)" >&2
    llamacpp_configure "$LLAMACPP_CUDA_BUILD" -DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$archs" -DGGML_NATIVE=ON \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF
    nice -n 10 cmake --build "$LLAMACPP_CUDA_BUILD" -j"$LLAMACPP_JOBS" --target "$@" >&2
}

# Where there is a network: fetches the sdist (checked) and keeps only what a CUDA build of
# llama-bench reads, as $LLAMACPP_TRIMMED (vendor/llama.cpp without its docs, model
# vocabularies, tests and benches); the sdist and its extracted tree are removed.
llamacpp_pack_trimmed() {
    llamacpp_fetch_sources
    local top=llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp
    tar -czf "$LLAMACPP_TRIMMED" -C "$LLAMACPP_CACHE" --anchored \
        --exclude="$top/docs" --exclude="$top/models" --exclude="$top/tests" --exclude="$top/benches" "$top" ||
        llamacpp_die "could not pack $LLAMACPP_TRIMMED"
    rm -rf "$LLAMACPP_TARBALL" "$LLAMACPP_CACHE/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
}
