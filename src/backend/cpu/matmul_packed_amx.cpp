// Which weight types have a packed AMX int8 kernel (see matmul_packed_amx.h). Built with the
// AMX flags like the kernels; nothing here runs before the CPU check: the kernels are made
// on the first call, not by static initialisers.
#include "backend/cpu/avx512_intrinsics.h"
#define EMBER_AMX_KERNEL
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/matmul_packed_amx.h"
#include "backend/cpu/matmul_packed_avx2.h"

namespace ember::cpu::amx {

namespace {

// The AVX2 kernel's groups read by another tile function.
PackedKernel reading_groups_of(const PackedKernel& avx2, TileFn tile) {
  PackedKernel k = avx2;
  k.tile = tile;
  return k;
}

}  // namespace

const PackedKernel* packed_kernel(DType w) {
  static const PackedKernel q4_0 = reading_groups_of(kPackedQ4_0x8Avx2, tile_q4_0);
  static const PackedKernel q8_0 = reading_groups_of(kPackedQ8_0x8Avx2, tile_q8_0);
  static const PackedKernel q4_k = reading_groups_of(kPackedQ4_Kx8Avx2, tile_q4_k);
  static const PackedKernel q5_k = reading_groups_of(kPackedQ5_Kx8Avx2, tile_q5_k);
  static const PackedKernel q6_k = reading_groups_of(kPackedQ6_Kx8Avx2, tile_q6_k);
  switch (w) {
    case DType::Q4_0: return &q4_0;
    case DType::Q8_0: return &q8_0;
    case DType::Q4_K: return &q4_k;
    case DType::Q5_K: return &q5_k;
    case DType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

}  // namespace ember::cpu::amx
