//===- Parallel.cpp - rows of a loop nest on several threads -------------===//
//
// `ember_parallel_for(task, ctx, lo, hi)` runs task(ctx, a, b) on contiguous
// pieces [a, b) of [lo, hi), one per thread: the caller takes the first
// piece and waits for the pool's workers. `ember-parallel-calls` emits the
// calls (docs/decisions.md, "Threads"). The pool starts on first use with
// EMBER_NUM_THREADS threads (default: the host's cores), less one for the
// caller. A caller that finds the pool busy (another Python thread, say)
// runs its rows itself.
//
//===----------------------------------------------------------------------===//
#include "ember-c/Runtime.h"

#include "RuntimeEntries.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {
using Task = void (*)(void *, int64_t, int64_t);

/// Spins until `ready()` or for `kSpin`, whichever is first. The caller
/// waiting for the workers' pieces spins before sleeping (waking a sleeping
/// thread takes about 0.1 ms here), and so do workers between jobs when
/// OpenBLAS's products run on them too (when OpenBLAS has threads of its
/// own, a spinning worker takes the core those compute on: the MLP and CNN
/// steps ran 25-50% slower).
template <typename F> bool spinFor(F ready) {
  constexpr auto kSpin = std::chrono::microseconds(200);
  auto until = std::chrono::steady_clock::now() + kSpin;
  for (int k = 0;; ++k) {
    if (ready())
      return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if ((k & 63) == 63 && std::chrono::steady_clock::now() > until)
      return false;
  }
}

thread_local bool inPiece = false;

/// runGuarded for a piece of a job, with inPiece set (products there choose
/// their kernel knowing OpenBLAS has one thread: SmallGemm.cpp).
size_t runPiece(Task task, void *ctx, int64_t a, int64_t b) {
  inPiece = true;
  size_t lost = ember::runtime::runGuarded(task, ctx, a, b);
  inPiece = false;
  return lost;
}

class Pool {
public:
  static Pool &get() {
    static Pool *pool = new Pool; // never destroyed: workers outlive exit
    return *pool;
  }

  void setThreads(int n) {
    std::lock_guard<std::mutex> busy(submit);
    wanted = std::max(1, n);
  }

  int threads() const { return wanted; }

  /// Runs the pieces; returns 0, or the size of an allocation a piece
  /// failed to get (each piece runs under its own guard, so that no lock is
  /// left held: the caller reports the failure after this returns).
  size_t run(Task task, void *ctx, int64_t lo, int64_t hi) {
    if (inPiece) // (a device's thread: DeviceWork)
      return ember::runtime::runGuarded(task, ctx, lo, hi);
    int64_t n = hi - lo;
    std::unique_lock<std::mutex> busy(submit, std::try_to_lock);
    int parts = (int)std::min<int64_t>(wanted, n);
    if (!busy.owns_lock() || parts < 2)
      return runPiece(task, ctx, lo, hi);
    return runParts(task, ctx, lo, n, parts);
  }

  /// Runs job(ctx, i) for i in [0, n), all at the same time (the jobs may
  /// wait for each other, as OpenBLAS's threads do): on the pool's workers
  /// when it is free and large enough, else on threads started for them.
  void runConcurrently(void (*job)(void *, int64_t), void *ctx, int64_t n) {
    if (n < 2) {
      if (n == 1)
        job(ctx, 0);
      return;
    }
    struct Each {
      void (*job)(void *, int64_t);
      void *ctx;
    } each{job, ctx};
    Task task = [](void *c, int64_t a, int64_t b) {
      auto *e = static_cast<Each *>(c);
      for (int64_t i = a; i < b; ++i)
        e->job(e->ctx, i);
    };
    std::unique_lock<std::mutex> busy(submit, std::try_to_lock);
    if (busy.owns_lock() && wanted >= n) {
      runParts(task, &each, 0, n, (int)n); // one job per piece
      return;
    }
    busy = {};
    std::vector<std::thread> extra;
    for (int64_t i = 1; i < n; ++i)
      extra.emplace_back([&, i] {
        emberRuntimeEnterFloatMode();
        job(ctx, i);
      });
    job(ctx, 0);
    for (auto &t : extra)
      t.join();
  }

private:
  size_t runParts(Task task, void *ctx, int64_t lo, int64_t n, int parts) {
    start(parts - 1);
    {
      std::lock_guard<std::mutex> g(m);
      job = {task, ctx, lo, n, parts};
      pending = parts - 1;
      failed = 0;
      ++generation;
    }
    wake.notify_all();
    size_t mine = runPiece(task, ctx, lo, lo + n / parts);
    if (!spinFor([&] { return pending.load() == 0; })) {
      std::unique_lock<std::mutex> g(m);
      done.wait(g, [&] { return pending.load() == 0; });
    }
    std::lock_guard<std::mutex> g(m);
    return mine ? mine : failed;
  }

  struct Job {
    Task task;
    void *ctx;
    int64_t lo, n;
    int parts;
  };

  Pool() {
    const char *env = std::getenv("EMBER_NUM_THREADS");
    int n = env ? std::atoi(env) : (int)std::thread::hardware_concurrency();
    wanted = std::max(1, n);
  }

  /// Starts workers until there are `n`; worker k takes piece k. A new
  /// worker waits for the job after the current generation.
  void start(int n) {
    uint64_t now;
    {
      std::lock_guard<std::mutex> g(m);
      now = generation;
    }
    while ((int)workers.size() < n) {
      int k = (int)workers.size() + 1;
      workers.emplace_back([this, k, now] { work(k, now); });
      workers.back().detach();
    }
  }

  void work(int k, uint64_t seen) {
    emberRuntimeEnterFloatMode(); // (a worker runs compiled code only)
    for (;;) {
      // A short spin first when OpenBLAS's products run here: they come in
      // runs (a network's layers), and waking a sleeping worker costs
      // about 0.1 ms a product.
      if (spinning)
        spinFor([&] { return generation.load() != seen; });
      std::unique_lock<std::mutex> g(m);
      wake.wait(g, [&] { return generation.load() != seen; });
      seen = generation.load();
      Job j = job;
      if (k >= j.parts)
        continue;
      g.unlock();
      int64_t a = j.lo + j.n * k / j.parts, b = j.lo + j.n * (k + 1) / j.parts;
      size_t lost = runPiece(j.task, j.ctx, a, b);
      g.lock();
      if (lost)
        failed = lost;
      if (--pending == 0)
        done.notify_one();
    }
  }

  std::mutex submit; // one job at a time
  std::mutex m;
  std::condition_variable wake, done;
  std::vector<std::thread> workers;
  Job job{};
  std::atomic<int> pending{0};
  size_t failed = 0; // an allocation a worker's piece failed to get
  std::atomic<uint64_t> generation{0};
  std::atomic<int> wanted{1};

public:
  std::atomic<bool> spinning{false}; // workers spin between jobs
};
} // namespace

bool ember::runtime::inParallelPiece() { return inPiece; }

ember::runtime::DeviceWork::DeviceWork() : wasInPiece(inPiece) {
  inPiece = true;
}
ember::runtime::DeviceWork::~DeviceWork() { inPiece = wasInPiece; }

namespace {
/// OpenBLAS's thread count, lowered to one while parallel jobs run: a
/// product inside a piece (a Pallas grid's points on the threads) then runs
/// on its core instead of asking the busy pool for threads, and its bits do
/// not depend on how many threads the job had.
class OneBlasThread {
public:
  OneBlasThread() {
    if (!set)
      return;
    std::lock_guard<std::mutex> g(m);
    if (jobs++ == 0 && (saved = get()) > 1)
      set(1);
  }
  ~OneBlasThread() {
    if (!set)
      return;
    std::lock_guard<std::mutex> g(m);
    if (--jobs == 0 && saved > 1)
      set(saved);
  }

  static inline int (*get)() = nullptr;
  static inline void (*set)(int) = nullptr;

private:
  static inline std::mutex m;
  static inline int jobs = 0, saved = 0;
};
} // namespace

ember::runtime::OneBlasThreadScope::OneBlasThreadScope()
    : held(new OneBlasThread) {}
ember::runtime::OneBlasThreadScope::~OneBlasThreadScope() {
  delete static_cast<OneBlasThread *>(held);
}

namespace ember::runtime::params {
void ember_parallel_for(Addr task, Addr ctx, I64 lo, I64 hi) {
  size_t bytes;
  {
    OneBlasThread one;
    bytes = Pool::get().run(reinterpret_cast<Task>(task),
                            reinterpret_cast<void *>(ctx), lo, hi);
  }
  if (bytes)
    ember::runtime::allocationFailed(bytes);
}
} // namespace ember::runtime::params

void emberRuntimeSetOpenblasThreadControl(void *getNumThreads,
                                          void *setNumThreads) {
  OneBlasThread::get = reinterpret_cast<int (*)()>(getNumThreads);
  OneBlasThread::set = reinterpret_cast<void (*)(int)>(setNumThreads);
}

void emberRuntimeSetNumThreads(int n) { Pool::get().setThreads(n); }

namespace {
/// OpenBLAS's caller-managed threading (0.3.27 and later): its parallel
/// work arrives as `numjobs` jobs, `dojob(i, jobdata + i * size, extra)`,
/// which run on the pool's workers instead of OpenBLAS's own threads, so
/// that the two do not hold the cores in turn (OpenBLAS's threads spin for
/// a while after each product, on the core the next loop nest's rows want).
/// The jobs of one product wait for each other, so they run at once.
using OpenblasDojob = void (*)(int, void *, int);

void openblasThreads(int /*sync*/, OpenblasDojob dojob, int numjobs,
                     size_t size, void *jobdata, int extra) {
  struct Ctx {
    OpenblasDojob dojob;
    char *data;
    size_t size;
    int extra;
  } ctx{dojob, static_cast<char *>(jobdata), size, extra};
  // (Run synchronously also when OpenBLAS allows otherwise: it returns
  // after every job completed.)
  Pool::get().runConcurrently(
      [](void *c, int64_t i) {
        auto *x = static_cast<Ctx *>(c);
        x->dojob((int)i, x->data + i * x->size, x->extra);
      },
      &ctx, numjobs);
}
} // namespace

void emberRuntimeUseForOpenblas(void *setCallback) {
  using Setter =
      void (*)(void (*)(int, OpenblasDojob, int, size_t, void *, int));
  reinterpret_cast<Setter>(setCallback)(&openblasThreads);
  Pool::get().spinning = true;
}

int emberRuntimeNumThreads(void) { return Pool::get().threads(); }
