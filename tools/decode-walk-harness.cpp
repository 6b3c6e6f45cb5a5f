// decode-walk-harness: how fast a one-token Q8_0 decode loop reads memory, walked as two
// far-apart row groups with software prefetch (ember's `avx2` decode) or four without it
// (`avx2-4streams`), against a plain read of the same bytes in the same walks. A standalone
// experiment, not part of the build: the loop is a copy of the packed Q8_0 AVX2 kernel's
// (src/backend/cpu/matmul_packed_q8_0_avx2.cpp) on random codes, so that the walk is the
// only thing that differs. Variants run in turn in short slices, many rounds, and each
// variant's median GB/s and median ratio to the first are printed (the ratio of neighbouring
// slices follows the machine's bandwidth drift, which is why it is the figure to read).
//
//   g++ -O2 -mavx2 -mfma -mf16c -std=c++20 -pthread tools/decode-walk-harness.cpp -o /tmp/walks
//   /tmp/walks [K=4096, a multiple of 64] [THREADS=2] [ROUNDS=60]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kRows = 4096;                          // rows of each matrix
constexpr size_t kScaleBytes = 16, kCodeBytes = 256;     // per block of 8 rows x 32
constexpr size_t kPrefetchDistance = 2048;               // ember's kPrefetchDistance
constexpr size_t kMemoryBytes = size_t{600} << 20;       // matrices cycled, beyond the caches

struct Activation {  // one block of a q8 activation row
  float d;
  int8_t qs[32];
};

// Groups gs[0..G) for one token, as the packed kernel does (scales first, then codes).
template <int G, bool kPrefetch>
[[gnu::noinline]] void kernel(const uint8_t* const* gs, int64_t nb, const Activation* a, float* y) {
  __m256 acc[G];
  for (int i = 0; i < G; ++i) acc[i] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i dot[G];
    for (int i = 0; i < G; ++i) {
      const uint8_t* codes = gs[i] + nb * kScaleBytes + b * kCodeBytes;
      if constexpr (kPrefetch) {
        _mm_prefetch(reinterpret_cast<const char*>(gs[i] + b * kScaleBytes + kPrefetchDistance), _MM_HINT_T0);
        for (size_t o = 0; o < kCodeBytes; o += 64)
          _mm_prefetch(reinterpret_cast<const char*>(codes + kPrefetchDistance + o), _MM_HINT_T0);
      }
      dot[i] = _mm256_setzero_si256();
    }
    for (int q = 0; q < 8; ++q) {
      int32_t a4;
      std::memcpy(&a4, a[b].qs + 4 * q, 4);
      const __m256i av = _mm256_set1_epi32(a4);
      for (int i = 0; i < G; ++i) {
        const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(gs[i] + nb * kScaleBytes + b * kCodeBytes + 32 * q));
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(av, w));
        dot[i] = _mm256_add_epi32(dot[i], _mm256_madd_epi16(pairs, ones));
      }
    }
    for (int i = 0; i < G; ++i) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gs[i] + b * kScaleBytes)));
      acc[i] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(a[b].d)), _mm256_cvtepi32_ps(dot[i]), acc[i]);
    }
  }
  for (int i = 0; i < G; ++i) _mm256_storeu_ps(y + 8 * i, acc[i]);
}

// The same bytes in the same walk, only summed.
template <int G>
[[gnu::noinline]] void plain_read(const uint8_t* const* gs, int64_t nb, const Activation*, float* y) {
  __m256i sum = _mm256_setzero_si256();
  for (int64_t b = 0; b < nb; ++b)
    for (int i = 0; i < G; ++i) {
      for (int q = 0; q < 8; ++q)
        sum = _mm256_add_epi32(sum, _mm256_load_si256(reinterpret_cast<const __m256i*>(gs[i] + nb * kScaleBytes + b * kCodeBytes + 32 * q)));
      sum = _mm256_add_epi32(sum, _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gs[i] + b * kScaleBytes))));
    }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), sum);
}

using Walk = void (*)(const uint8_t* const*, int64_t, const Activation*, float*);
struct Variant {
  const char* name;
  Walk walk;
  int groups;
};

// One matrix-vector product: each thread its share of the groups, G far-apart ones at a time.
void run_matrix(const Variant& v, const uint8_t* matrix, size_t group_bytes, int64_t nb, int threads,
                const Activation* act, std::vector<float>& y) {
  const int64_t n_groups = kRows / 8;
  auto share = [&](int t) {
    const int64_t g0 = n_groups * t / threads, g1 = n_groups * (t + 1) / threads, step = (g1 - g0) / v.groups;
    for (int64_t i = 0; i < step; ++i) {
      const uint8_t* gs[4];
      for (int j = 0; j < v.groups; ++j) gs[j] = matrix + (g0 + i + j * step) * group_bytes;
      v.walk(gs, nb, act, y.data() + 8 * (g0 + i));
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(share, t);
  share(0);
  for (std::thread& th : pool) th.join();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t k = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 60;
  const int64_t nb = k / 32;
  const size_t group_bytes = static_cast<size_t>(nb) * (kScaleBytes + kCodeBytes);
  const size_t matrix_bytes = group_bytes * (kRows / 8);
  const int n_matrices = static_cast<int>(std::max<size_t>(2, kMemoryBytes / matrix_bytes));
  auto* mem = static_cast<uint8_t*>(std::aligned_alloc(64, matrix_bytes * n_matrices));
  for (size_t i = 0; i < matrix_bytes * n_matrices; ++i) mem[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  std::vector<Activation> act(static_cast<size_t>(nb));
  for (Activation& a : act) {
    a.d = 0.01f;
    for (int j = 0; j < 32; ++j) a.qs[j] = static_cast<int8_t>(j - 16);
  }
  std::vector<float> y(kRows + 64);
  const Variant variants[] = {
      {"kernel, 2 groups, prefetch (avx2)", kernel<2, true>, 2},
      {"kernel, 4 groups, no prefetch (avx2-4streams)", kernel<4, false>, 4},
      {"kernel, 2 groups, no prefetch", kernel<2, false>, 2},
      {"kernel, 4 groups, prefetch", kernel<4, true>, 4},
      {"plain read, 2 groups", plain_read<2>, 2},
      {"plain read, 4 groups", plain_read<4>, 4},
  };
  constexpr size_t n = sizeof(variants) / sizeof(variants[0]);
  std::vector<double> gbs[n];
  for (int r = 0; r < rounds; ++r)
    for (size_t v = 0; v < n; ++v) {
      const auto t0 = std::chrono::steady_clock::now();
      double seconds = 0;
      int64_t calls = 0;
      for (int m = 0; seconds < 0.08; m = (m + 1) % n_matrices, ++calls) {
        run_matrix(variants[v], mem + m * matrix_bytes, group_bytes, nb, threads, act.data(), y);
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      gbs[v].push_back(static_cast<double>(calls) * static_cast<double>(matrix_bytes) / seconds / 1e9);
    }
  std::printf("k %lld, %d threads, %d rounds of 80 ms slices\n", static_cast<long long>(k), threads, rounds);
  for (size_t v = 0; v < n; ++v) {
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) ratio.push_back(gbs[v][r] / gbs[0][r]);
    std::printf("%-48s median %6.2f GB/s, median ratio to the first %.3f\n", variants[v].name, median(gbs[v]),
                median(ratio));
  }
  std::free(mem);
}
