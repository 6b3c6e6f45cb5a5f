// Which weight types have a packed AVX-512 VNNI kernel (see matmul_packed_avx512.h).
// Built like the kernels (twice, see avx512_intrinsics.h); nothing here runs before the
// CPU check: the kernels are made on the first call, not by static initialisers.
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/matmul_packed_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

namespace {

// The AVX2 kernel's groups (weights are packed once at load, whatever level reads them),
// read by another tile function.
PackedKernel reading_groups_of(const PackedKernel& avx2, TileFn tile) {
  PackedKernel k = avx2;
  k.tile = tile;
  return k;
}

}  // namespace

const PackedKernel* packed_kernel(DType w) {
  static const PackedKernel q4_0 = reading_groups_of(kPackedQ4_0x8Avx2, tile_q4_0);
  static const PackedKernel q5_0 = reading_groups_of(kPackedQ5_0x8Avx2, tile_q5_0);
  static const PackedKernel q4_1 = reading_groups_of(kPackedQ4_1x8Avx2, tile_q4_1);
  static const PackedKernel q5_1 = reading_groups_of(kPackedQ5_1x8Avx2, tile_q5_1);
  static const PackedKernel q8_0 = reading_groups_of(kPackedQ8_0x8Avx2, tile_q8_0);
  static const PackedKernel q4_k = reading_groups_of(kPackedQ4_Kx8Avx2, tile_q4_k);
  static const PackedKernel q5_k = reading_groups_of(kPackedQ5_Kx8Avx2, tile_q5_k);
  static const PackedKernel q6_k = reading_groups_of(kPackedQ6_Kx8Avx2, tile_q6_k);
  static const PackedKernel mxfp4 = reading_groups_of(kPackedMXFP4x8Avx2, tile_mxfp4);
  switch (w) {
    case DType::Q4_0: return &q4_0;
    case DType::Q5_0: return &q5_0;
    case DType::Q4_1: return &q4_1;
    case DType::Q5_1: return &q5_1;
    case DType::Q8_0: return &q8_0;
    case DType::Q4_K: return &q4_k;
    case DType::Q5_K: return &q5_k;
    case DType::Q6_K: return &q6_k;
    case DType::MXFP4: return &mxfp4;
    default: return nullptr;
  }
}

}  // namespace ember::cpu::EMBER_AVX512_NS
