#include "cuda/cpu_exec/block.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "util/error.h"

namespace ember::cpu_exec {

namespace {

thread_local Block* tl_block = nullptr;

// Fibers outlive launches (mapping 1024 stacks per launch would cost more than the kernel).
std::vector<std::unique_ptr<Fiber>>& fiber_pool(size_t n) {
  thread_local std::vector<std::unique_ptr<Fiber>> pool;
  while (pool.size() < n) pool.push_back(std::make_unique<Fiber>());
  return pool;
}

bool same_site(const SourceSite& a, const SourceSite& b) {
  return a.line == b.line && std::strcmp(a.file, b.file) == 0;
}

uint3 coords(int t, dim3 d) {
  const unsigned u = static_cast<unsigned>(t);
  return {u % d.x, u / d.x % d.y, u / (d.x * d.y)};
}

}  // namespace

// The path from cuda/ or tests/ on: short, and the same on every machine.
std::string site_name(const SourceSite& where) {
  const char* file = where.file;
  for (const char* dir : {"/cuda/", "/tests/"})
    if (const char* p = std::strstr(file, dir)) file = p + 1;
  return fmt::format("{}:{}", file, where.line);
}

Block::Block(dim3 block_dim, Order order, uint64_t seed)
    : n_threads_(static_cast<int>(block_dim.x * block_dim.y * block_dim.z)),
      order_(order),
      rng_(seed),
      fibers_(fiber_pool(static_cast<size_t>(n_threads_))),
      threads_(static_cast<size_t>(n_threads_)),
      open_(static_cast<size_t>((n_threads_ + kWarpLanes - 1) / kWarpLanes)),
      exited_lanes_(open_.size()),
      barrier_lanes_(open_.size()) {}

Block::~Block() = default;

Block& Block::current() {
  if (tl_block == nullptr || tl_block->current_ < 0)
    fail(ErrorKind::Internal, "cpu_exec: a CUDA synchronisation or warp collective called outside a kernel launch");
  return *tl_block;
}

void Block::run(const std::function<void()>& body) {
  if (tl_block != nullptr) fail(ErrorKind::Internal, "cpu_exec: a launch from inside a kernel is not emulated");
  struct Installed {
    explicit Installed(Block* b) { tl_block = b; }
    ~Installed() { tl_block = nullptr; }
  } installed(this);
  body_ = &body;
  failure_ = nullptr;
  exited_ = barrier_arrived_ = 0;
  ready_.clear();
  for (auto& ex : exchanges_) spare_exchanges_.push_back(std::move(ex));
  exchanges_.clear();
  for (auto& warp : open_) warp.clear();
  std::fill(exited_lanes_.begin(), exited_lanes_.end(), 0u);
  std::fill(barrier_lanes_.begin(), barrier_lanes_.end(), 0u);
  for (int t = 0; t < n_threads_; ++t) {
    threads_[static_cast<size_t>(t)] = Thread{};
    Fiber& fiber = *fibers_[static_cast<size_t>(t)];
    if (!fiber.parked()) fiber.reset(&Block::fiber_main);
    ready_.push_back(t);
  }
  while (exited_ < n_threads_) {
    if (ready_.empty()) {
      current_ = -1;
      fail(ErrorKind::Internal, "cpu_exec: block ({},{},{}): deadlock: {}", blockIdx.x, blockIdx.y, blockIdx.z,
           describe_waits());
    }
    current_ = pick_next();
    threadIdx = coords(current_, blockDim);
    fibers_[static_cast<size_t>(current_)]->resume(scheduler_);
    if (failure_) {
      current_ = -1;
      std::rethrow_exception(failure_);
    }
  }
  current_ = -1;
}

// A fiber's life: the kernel body and the exit checks, once per block it runs, parked between
// blocks (a fresh start costs two system calls, for the signal mask). A fiber that a failed
// launch left waiting is started afresh by the next run(). An exception cannot cross a
// fiber's bottom frame, so it is carried to run() instead.
void Block::fiber_main() {
  Fiber::started(tl_block->scheduler_);
  for (;;) {
    Block& b = *tl_block;  // the block of this round: a parked fiber wakes in the next launch
    try {
      (*b.body_)();
      b.thread_exits();
    } catch (...) {
      b.failure_ = std::current_exception();
    }
    b.fibers_[static_cast<size_t>(b.current_)]->park(b.scheduler_);
  }
}

void Block::thread_exits() {
  if (barrier_arrived_ > 0)
    fail_here(fmt::format("returns while {} threads wait at __syncthreads at {}", barrier_arrived_,
                          site_name(barrier_site_)));
  for (const auto& ex : open_[static_cast<size_t>(current_ / kWarpLanes)])
    if (ex->mask & (1u << lane()))
      fail_here(fmt::format("returns while lanes {:#010x} wait for it in {} at {}", ex->arrived, ex->op,
                            site_name(ex->where)));
  threads_[static_cast<size_t>(current_)].state = State::Exited;
  exited_lanes_[static_cast<size_t>(current_ / kWarpLanes)] |= 1u << lane();
  ++exited_;
}

// Round-robin takes the longest-waiting thread; shuffled any ready one, uniformly.
int Block::pick_next() {
  if (order_ == Order::Shuffled)
    std::swap(ready_[std::uniform_int_distribution<size_t>(0, ready_.size() - 1)(rng_)], ready_.front());
  const int t = ready_.front();
  ready_.pop_front();
  return t;
}

void Block::make_ready(int thread) {
  threads_[static_cast<size_t>(thread)].state = State::Ready;
  ready_.push_back(thread);
}

void Block::wait() { fibers_[static_cast<size_t>(current_)]->suspend(scheduler_); }

void Block::sync_threads(SourceSite where) {
  for (int t = 0; exited_ > 0 && t < n_threads_; ++t)
    if (threads_[static_cast<size_t>(t)].state == State::Exited)
      fail_here(fmt::format("reaches __syncthreads at {} after thread {} returned without reaching it",
                            site_name(where), thread_name(t)));
  for (const auto& ex : open_[static_cast<size_t>(current_ / kWarpLanes)])
    if (ex->mask & (1u << lane()))
      fail_here(fmt::format("reaches __syncthreads at {} while lanes {:#010x} wait for it in {} at {}",
                            site_name(where), ex->arrived, ex->op, site_name(ex->where)));
  if (barrier_arrived_ == 0) {
    barrier_site_ = where;
  } else if (!same_site(where, barrier_site_)) {
    fail_here(fmt::format("reaches __syncthreads at {} while {} threads wait at the one at {} (divergent barriers)",
                          site_name(where), barrier_arrived_, site_name(barrier_site_)));
  }
  threads_[static_cast<size_t>(current_)] = Thread{State::AtBarrier, where, "__syncthreads"};
  barrier_lanes_[static_cast<size_t>(current_ / kWarpLanes)] |= 1u << lane();
  if (++barrier_arrived_ == n_threads_) {
    barrier_arrived_ = 0;
    std::fill(barrier_lanes_.begin(), barrier_lanes_.end(), 0u);
    for (int t = 0; t < n_threads_; ++t) make_ready(t);  // in index order, the last arriver too
  }
  wait();
}

const Exchange& Block::exchange(const char* op, uint32_t mask, int width, const void* value, size_t bytes,
                                SourceSite where) {
  if (!(mask & (1u << lane())))
    fail_here(fmt::format("calls {} at {} with mask {:#010x}, which leaves out its own lane {}", op, site_name(where),
                          mask, lane()));
  check_joinable(mask, op, where);
  Exchange& ex = open_exchange(op, mask, width, where);
  if (bytes > 0) std::memcpy(ex.values[static_cast<size_t>(lane())].data(), value, bytes);
  ex.arrived |= 1u << lane();
  threads_[static_cast<size_t>(current_)] = Thread{State::InExchange, where, op};
  if (ex.arrived == mask) close_exchange(current_ / kWarpLanes, ex);
  wait();
  return ex;
}

void Block::done_reading(const Exchange& ex) {
  const auto it = std::find_if(exchanges_.begin(), exchanges_.end(), [&](const auto& p) { return p.get() == &ex; });
  if (--(*it)->unread == 0) {
    spare_exchanges_.push_back(std::move(*it));
    exchanges_.erase(it);
  }
}

// A collective may only wait for lanes that exist and can still arrive.
void Block::check_joinable(uint32_t mask, const char* op, SourceSite where) const {
  const int warp = current_ / kWarpLanes;
  const int lanes = std::min(kWarpLanes, n_threads_ - warp * kWarpLanes);
  const uint32_t present = lanes == kWarpLanes ? ~0u : (1u << lanes) - 1;
  if (mask & ~present)
    fail_here(fmt::format("calls {} at {} with mask {:#010x}, but its warp has only lanes {:#010x}", op,
                          site_name(where), mask, present));
  // The lowest such lane is named; the per-warp masks keep this O(1) per call (it runs for
  // every lane of every collective).
  const uint32_t stuck = mask & (exited_lanes_[static_cast<size_t>(warp)] | barrier_lanes_[static_cast<size_t>(warp)]);
  if (stuck == 0) return;
  const int l = std::countr_zero(stuck);
  const Thread& other = threads_[static_cast<size_t>(warp * kWarpLanes + l)];
  if (other.state == State::Exited)
    fail_here(fmt::format("calls {} at {} with mask {:#010x}, but lane {} has returned", op, site_name(where), mask, l));
  fail_here(fmt::format("calls {} at {} with mask {:#010x}, but lane {} waits at __syncthreads at {}", op,
                        site_name(where), mask, l, site_name(other.where)));
}

// The collective this lane joins: the open one over the same lanes, or a new one. Lanes of
// one warp may run disjoint collectives at once (two half-warps); overlapping ones that
// differ in mask, op or width can never all complete, which is the divergence to report.
Exchange& Block::open_exchange(const char* op, uint32_t mask, int width, SourceSite where) {
  auto& open = open_[static_cast<size_t>(current_ / kWarpLanes)];
  for (Exchange* ex : open) {
    if (!(ex->mask & mask)) continue;
    if (ex->mask != mask || (ex->op != op && std::strcmp(ex->op, op) != 0) || ex->width != width)
      fail_here(fmt::format(
          "calls {}(mask {:#010x}, width {}) at {} while lanes {:#010x} wait in {}(mask {:#010x}, "
          "width {}) at {} (divergent warp collective)",
          op, mask, width, site_name(where), ex->arrived, ex->op, ex->mask, ex->width, site_name(ex->where)));
    return *ex;
  }
  // A spare one from an earlier collective of this launch, if any, cleared as a new one.
  if (spare_exchanges_.empty()) {
    exchanges_.push_back(std::make_unique<Exchange>());
  } else {
    exchanges_.push_back(std::move(spare_exchanges_.back()));
    spare_exchanges_.pop_back();
    *exchanges_.back() = Exchange{};
  }
  Exchange& ex = *exchanges_.back();
  ex.op = op;
  ex.mask = mask;
  ex.width = width;
  ex.where = where;
  open.push_back(&ex);
  return ex;
}

void Block::close_exchange(int warp, Exchange& ex) {
  auto& open = open_[static_cast<size_t>(warp)];
  open.erase(std::find(open.begin(), open.end(), &ex));
  ex.unread = std::popcount(ex.mask);
  for (int l = 0; l < kWarpLanes; ++l)
    if (ex.mask & (1u << l)) make_ready(warp * kWarpLanes + l);  // in lane order, the last arriver too
}

// "threads 0-15: __shfl_xor_sync at f:12; threads 16-31: returned": runs of equal states.
std::string Block::describe_waits() const {
  static constexpr const char* kStates[] = {"ready", "at", "in", "returned"};
  std::string out;
  for (int t = 0; t < n_threads_;) {
    const Thread& first = threads_[static_cast<size_t>(t)];
    int end = t + 1;
    while (end < n_threads_ && threads_[static_cast<size_t>(end)].state == first.state &&
           same_site(threads_[static_cast<size_t>(end)].where, first.where))
      ++end;
    out +=
        fmt::format("{}threads {}-{} {}", out.empty() ? "" : "; ", t, end - 1, kStates[static_cast<int>(first.state)]);
    if (first.state == State::AtBarrier || first.state == State::InExchange)
      out += fmt::format(" {} at {}", first.op, site_name(first.where));
    t = end;
  }
  return out;
}

std::string Block::thread_name(int thread) const {
  const uint3 c = coords(thread, blockDim);
  return fmt::format("({},{},{}) [warp {} lane {}]", c.x, c.y, c.z, thread / kWarpLanes, thread % kWarpLanes);
}

void Block::fail_here(const std::string& what) const {
  fail(ErrorKind::Internal, "cpu_exec: block ({},{},{}) thread {}: {}", blockIdx.x, blockIdx.y, blockIdx.z,
       thread_name(current_), what);
}

}  // namespace ember::cpu_exec
