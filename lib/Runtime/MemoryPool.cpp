//===- MemoryPool.cpp - the one memory pool of the runtime ----------------===//
//
// Compiled code's malloc/calloc/free (the JIT binds those names to
// ember_malloc/ember_calloc/ember_free, Runtime.def) and the output buffers
// of Python's fast call path (emberRuntimeAlloc/emberRuntimeFree) come from
// one pool.
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"

#include "ember-c/Runtime.h"

#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {
/// Freed blocks are kept per exact size for the next request of that size:
/// glibc would return large blocks to the kernel and page-fault them in again
/// on every call (for a scan over 100 steps, each residual buffer is
/// megabytes), and Python's results of one shape are freed and asked for
/// again call after call. Compiled code's blocks under 64 KiB are left to
/// malloc (no lock on the small temporaries of a loop); Python's output
/// buffers are kept at every size. At most 1 GiB is kept. Every block has a
/// 64-byte header holding its size and whether it is kept; kept blocks are
/// 64-byte aligned (Python's output buffers need it), compiled code's small
/// blocks have malloc's 16-byte alignment.
class MemoryPool {
public:
  static constexpr size_t kHeader = 64, kMinPooled = size_t(64) << 10;

  void *take(size_t n, bool zero, bool aligned) {
    bool keep = aligned || n >= kMinPooled;
    if (keep) {
      std::lock_guard<std::mutex> lock(mu);
      auto it = blocks.find(n);
      if (it != blocks.end() && !it->second.empty()) {
        char *raw = it->second.back();
        it->second.pop_back();
        pooled -= n;
        if (zero)
          std::memset(raw + kHeader, 0, n);
        return raw + kHeader;
      }
    }
    if (n > SIZE_MAX - 2 * kHeader)
      return nullptr;
    // Kept blocks are all 64-byte aligned: a block freed by compiled code
    // may serve a later aligned request of the same size.
    char *raw;
    if (keep) {
      raw = static_cast<char *>(std::aligned_alloc(
          kHeader, (n + 2 * kHeader - 1) / kHeader * kHeader));
      if (raw && zero)
        std::memset(raw + kHeader, 0, n);
    } else {
      raw = static_cast<char *>(zero ? std::calloc(1, n + kHeader)
                                     : std::malloc(n + kHeader));
    }
    if (!raw)
      return nullptr;
    reinterpret_cast<size_t *>(raw)[0] = n;
    reinterpret_cast<size_t *>(raw)[1] = keep;
    return raw + kHeader;
  }

  void give(void *p) {
    if (!p)
      return;
    char *raw = static_cast<char *>(p) - kHeader;
    size_t n = reinterpret_cast<size_t *>(raw)[0];
    if (reinterpret_cast<size_t *>(raw)[1]) {
      std::lock_guard<std::mutex> lock(mu);
      if (pooled + n <= kMaxPooled) {
        blocks[n].push_back(raw);
        pooled += n;
        return;
      }
    }
    std::free(raw);
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto &kv : blocks)
      for (char *raw : kv.second)
        std::free(raw);
    blocks.clear();
    pooled = 0;
  }

  size_t pooledBytes() {
    std::lock_guard<std::mutex> lock(mu);
    return pooled;
  }

private:
  static constexpr size_t kMaxPooled = size_t(1) << 30;
  std::mutex mu;
  std::unordered_map<size_t, std::vector<char *>> blocks;
  size_t pooled = 0;
};

MemoryPool &pool() {
  static auto *p =
      new MemoryPool; // leaked: compiled code and capsules may outlive us
  return *p;
}
} // namespace

// Allocation failures of compiled code. A call of compiled code runs under a
// guard (a jmp_buf per thread); when compiled code's malloc fails, the call
// is abandoned by a longjmp back to its guard, which reports the size, and
// Python raises MemoryError instead of compiled code writing through a null
// pointer. Only frames of compiled code (C, no destructors) and the guard's
// own lie in between; the abandoned call's temporaries are not freed. The
// pool's threads run their pieces under guards of their own, and the caller
// reports a piece's failure once every piece has ended (Parallel.cpp).
namespace {
thread_local std::jmp_buf *innermostGuard = nullptr;
thread_local size_t failedBytes = 0;
} // namespace

void ember::runtime::allocationFailed(size_t bytes) {
  if (!innermostGuard)
    return;
  failedBytes = bytes;
  std::longjmp(*innermostGuard, 1);
}

size_t ember::runtime::runGuarded(void (*task)(void *, int64_t, int64_t),
                                  void *ctx, int64_t a, int64_t b) {
  std::jmp_buf guard;
  std::jmp_buf *outer = innermostGuard;
  innermostGuard = &guard;
  if (setjmp(guard) != 0) {
    innermostGuard = outer;
    return failedBytes;
  }
  task(ctx, a, b);
  innermostGuard = outer;
  return 0;
}

int emberRuntimeCallChecked(void (*fn)(void **), void **args, size_t *bytes) {
  std::jmp_buf guard;
  std::jmp_buf *outer = innermostGuard;
  innermostGuard = &guard;
  const volatile unsigned mode = emberRuntimeEnterFloatMode();
  if (setjmp(guard) != 0) {
    emberRuntimeRestoreFloatMode(mode);
    innermostGuard = outer;
    if (bytes)
      *bytes = failedBytes;
    return 1;
  }
  fn(args);
  emberRuntimeRestoreFloatMode(mode);
  innermostGuard = outer;
  return 0;
}

extern "C" void *ember_malloc(size_t n) {
  void *p = pool().take(n, false, false);
  if (!p && n)
    ember::runtime::allocationFailed(n);
  return p;
}
extern "C" void *ember_calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) {
    ember::runtime::allocationFailed(SIZE_MAX);
    return nullptr;
  }
  void *p = pool().take(count * size, true, false);
  if (!p && count * size)
    ember::runtime::allocationFailed(count * size);
  return p;
}
extern "C" void ember_free(void *p) { pool().give(p); }

void *emberRuntimeAlloc(size_t bytes) {
  return pool().take(bytes, false, true);
}
void emberRuntimeFree(void *p) { pool().give(p); }
size_t emberRuntimePooledBytes(void) { return pool().pooledBytes(); }
void emberRuntimeClearPool(void) { pool().clear(); }
