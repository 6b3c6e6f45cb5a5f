// The CUDA backend's kernels as host code calls them: one call per op, enqueued in order on
// a stream. One source, two builds of it: cuda/kernels_gpu.cu (nvcc, launches on the
// device) and cuda/kernels_cpu_exec.cpp (g++, the kernels' own source run on the CPU by
// cuda/cpu_exec, for tests and --cuda-on-cpu). Every pointer here is device memory (host
// memory in the CPU execution); views are those of backend/ops.h in the Rows layout.
// Plain C++: no CUDA header, so the backend's host code compiles without nvcc.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/ops.h"
#include "cuda/stream.h"

namespace ember::cuda {

// The keys and values of one layer, as attention reads them from the paged pool
// (backend/kv_view.h), for a step's sequences: sequence r's table is table + r * table_stride.
// What changes from step to step lives in device memory, in the tables:
//   table[0] = first_slot, table[1] = n_tokens, table[2 + i] = physical block i;
// the sequence holds ordinals [first_slot, n_tokens), ordinal o sits in physical row
// table[2 + (o - first_slot) / block_size] * block_size + o % block_size of k and v and holds
// the key at position o; ordinals below first_slot were given back (sliding window). The
// launch depends only on the fields here, never on the tables' contents, so a CUDA graph
// captured once replays for any length up to `capacity`.
struct DevKV {
  DType k_type = DType::F16;
  DType v_type = DType::F16;
  const void* k = nullptr;       // pool rows of n_head_kv * head_dim elements
  const void* v = nullptr;
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
  const int32_t* table = nullptr;  // device array of kDevKVHeader + capacity / block_size entries
  int block_size = 32;             // a multiple of 32
  int64_t capacity = 0;            // keys the table can hold from first_slot: a multiple of block_size
  int64_t table_stride = 0;        // ints from one sequence's table to the next
};
constexpr int kDevKVHeader = 2;  // first_slot, n_tokens

// A step's queries by sequence: run r is queries [bounds[r], bounds[r + 1]) (bounds a device
// array of n + 1 query numbers) and reads the r-th table of a DevKV. max_rows, the longest
// run, sizes the launch (host-known, so the launch does not read the bounds).
struct DevRuns {
  const int32_t* bounds = nullptr;
  int n = 0;
  int64_t max_rows = 0;
};

// The DevKV of a layer's KVView (backend/kv_view.h; its storage and types) whose sequences'
// tables (header and room for capacity_blocks blocks each) start at the device array
// `table`, table_stride ints apart.
inline DevKV dev_kv(const KVView& v, const int32_t* table, int64_t capacity_blocks, int64_t table_stride) {
  DevKV d;
  d.k_type = v.k_type;
  d.v_type = v.v_type;
  d.k = v.k;
  d.v = v.v;
  d.k_row_bytes = v.k_row_bytes;
  d.v_row_bytes = v.v_row_bytes;
  d.table = table;
  d.block_size = v.block_size;
  d.capacity = capacity_blocks * v.block_size;
  d.table_stride = table_stride;
  return d;
}

// The experts of one 3-D weight tensor as matmul_id reads them: expert e is w0 with data at
// w0.data + e * expert_bytes (cuda/weight_store.cpp uploads a tensor's experts so).
struct ExpertSet {
  MatView w0;               // expert 0: type, shape, row stride, device data
  size_t expert_bytes = 0;  // from one expert's data to the next
  int n_expert = 0;
};

class Kernels {
 public:
  virtual ~Kernels() = default;
  virtual const char* name() const = 0;  // "gpu" or "cpu_exec"

  // out[t] = table[ids[t]] as f32: any weight type (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
  // Q8_0, Q2_K..Q6_K) or KV type; ids is a device array of n row numbers.
  virtual void get_rows(const MatView& table, const int32_t* ids, int64_t n, F32Mat out, Stream s) const = 0;
  // y = x / sqrt(mean(x^2) + eps) * w (w may be null), row by row; y may alias x.
  virtual void rms_norm(const MatView& x, const float* w, float eps, F32Mat y, Stream s) const = 0;
  // In place, row t of x rotated for position pos[t] (device array), heads of head_dim.
  virtual void rope(F32Mat x, int head_dim, const int32_t* pos, const RopeParams& p, Stream s) const = 0;
  virtual void add(F32Mat a, const MatView& b, Stream s) const = 0;   // a += b; b.rows == 1 broadcasts
  // a[r] += b[ids[r]] (ops::add_id: a MoE projection's expert biases); ids a device array of
  // a.rows expert numbers.
  virtual void add_id(F32Mat a, const MatView& b, const int32_t* ids, Stream s) const = 0;
  virtual void scale(F32Mat a, float v, Stream s) const = 0;         // a *= v
  virtual void softcap(F32Mat a, float cap, Stream s) const = 0;     // a = cap * tanh(a / cap)
  // Row r of src (f32) written in `type` (a KV type, backend/kv_types.h, as ops::store_row) to
  // dst + rows[r] * dst_row_bytes; rows is a device array of src.rows row numbers.
  virtual void store_rows(const MatView& src, DType type, void* dst, size_t dst_row_bytes, const int32_t* rows,
                          Stream s) const = 0;
  // y = x w^T for a weight of any weight type; scratch holds matmul_scratch_bytes(w, x.rows).
  // x is f32, or for quantised w a Q8_1 view of quantize_normed's output (scratch unused).
  virtual size_t matmul_scratch_bytes(const MatView& w, int64_t n_tokens) const = 0;
  virtual void matmul(const MatView& w, const MatView& x, F32Mat y, void* scratch, Stream s) const = 0;

  // Fused ops (issue #19), each equal to the unfused sequence named.
  // rope(k, head_dim, pos, p) then store_rows(k, type, dst, dst_row_bytes, rows), one launch.
  virtual void rope_store_rows(F32Mat k, int head_dim, const int32_t* pos, const RopeParams& p, DType type, void* dst,
                               size_t dst_row_bytes, const int32_t* rows, Stream s) const = 0;
  // The q8_1 bytes matmul would quantise rms_norm(x, w, eps) to, without the f32 round trip:
  // x.rows packed rows of x.cols / 32 blocks (quantize_normed_bytes), to pass to matmul and
  // matmul_glu as x = MatView{DType::Q8_1, x.cols, x.rows, dtype_row_bytes(Q8_1, x.cols), xq}
  // for quantised weights (float weights take rms_norm's f32 output instead).
  virtual size_t quantize_normed_bytes(int64_t cols, int64_t n_tokens) const = 0;
  virtual void quantize_normed(const MatView& x, const float* w, float eps, void* xq, Stream s) const = 0;
  // out = act(x w_gate^T) * (x w_up^T) (matmul, matmul, glu) with x quantised once; x as for
  // matmul; scratch holds matmul_glu_scratch_bytes(w_gate, x.rows).
  virtual size_t matmul_glu_scratch_bytes(const MatView& w, int64_t n_tokens) const = 0;
  virtual void matmul_glu(const MatView& w_gate, const MatView& w_up, Activation act, const MatView& x, F32Mat out,
                          void* scratch, Stream s) const = 0;
  // ops::attention of each run of q's rows over its sequence's paged cache, in one launch
  // (q_pos a device array of q.rows positions); scratch holds
  // attention_scratch_bytes(p, q.rows, runs.max_rows, kv.capacity).
  virtual size_t attention_scratch_bytes(const AttentionParams& p, int64_t n_q, int64_t max_run_rows,
                                         int64_t capacity) const = 0;
  virtual void attention(const MatView& q, const int32_t* q_pos, const DevRuns& runs, const DevKV& kv,
                         const AttentionParams& p, F32Mat out, void* scratch, Stream s) const = 0;

  // Mixture of experts (matmul_id.cuh, moe.cuh); ids and weights are device arrays.
  // ops::moe_route of the router logits; r.selection_bias, when set, is device memory.
  virtual void moe_route(const MatView& logits, const MoeRouting& r, int32_t* ids, float* weights,
                         Stream s) const = 0;
  // y = ops::matmul_id(experts, x, ids, n_used) with y.rows slots (x.rows or x.rows * n_used);
  // x as for matmul; scratch holds matmul_id_scratch_bytes(e, x.rows, y.rows).
  virtual size_t matmul_id_scratch_bytes(const ExpertSet& e, int64_t x_rows, int64_t n_slots) const = 0;
  virtual void matmul_id(const ExpertSet& e, const MatView& x, const int32_t* ids, int n_used, F32Mat y, void* scratch,
                         Stream s) const = 0;
  // out = act(gate) * up, element by element (ops::glu).
  virtual void glu(Activation act, const MatView& gate, const MatView& up, F32Mat out, Stream s) const = 0;
  // ops::moe_combine (weights a device array).
  virtual void moe_combine(const MatView& experts, const float* weights, int n_used, const MatView& shared,
                           const MatView& shared_gate, F32Mat out, Stream s) const = 0;
};

// The kernels run on the CPU by cuda/cpu_exec (every build).
const Kernels& cpu_exec_kernels();
// The kernels on the current CUDA device (builds with nvcc only).
const Kernels& gpu_kernels();

}  // namespace ember::cuda
