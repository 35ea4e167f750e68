//===- Devices.cpp - in-process devices as threads ------------------------===//
//
// A program partitioned over the CPU devices of one process (#22) is the
// program one process of an MPI job would run: MLIR's convert-shard-to-mpi
// writes its collectives as MPI calls, and ember-mpi-to-llvm names them
// ember_devices_MPI_* (Runtime.def, EMBER_DEVICE_MPI_ENTRY). Each device runs
// the program on a thread of its own; these functions are those calls among
// the threads, with MPICH's ABI (its handles for communicators, datatypes
// and reduction ops), so that one compiled program serves both.
//
// What convert-shard-to-mpi emits is here: the rank, the world's size,
// communicators split off the world (a mesh of several axes), all-reduce.
// A collective is entered by every member of its communicator; reductions
// combine the members' buffers in rank order (the same bits on every
// device). A device whose program stops early (an allocation failed)
// breaks the group: the others leave their waits through the
// allocation-failure path instead of waiting forever.
//
// Why not MPI itself: an MPI library gives one rank per process, and
// in-process devices share a process; the few collectives the partitioner
// emits are a barrier and a loop each here.
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"
#include "ember-c/Runtime.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {
// MPICH's handles (mpi.h).
constexpr int kCommWorld = 0x44000000;
constexpr int kCommNull = 0x04000000;
constexpr int kUndefined = -32766;
constexpr int kOpMax = 0x58000001, kOpMin = 0x58000002, kOpSum = 0x58000003,
              kOpProd = 0x58000004, kOpLand = 0x58000005, kOpBand = 0x58000006,
              kOpLor = 0x58000007, kOpBor = 0x58000008, kOpLxor = 0x58000009,
              kOpBxor = 0x5800000a;
// Communicators split off the world get handles from here on.
constexpr int kFirstSplit = 0x44100000;

/// A communicator: its members (device ranks, in group-rank order) and the
/// state of the collective they are in.
struct Group {
  std::vector<int> members;
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  std::atomic<uint64_t> generation{0};
  std::vector<const void *> slots; // a pointer per member
  std::vector<int> ints;           // two ints per member (Comm_split)

  explicit Group(std::vector<int> ms)
      : members(std::move(ms)), slots(members.size()),
        ints(2 * members.size()) {}

  int rankOf(int device) const {
    auto it = std::find(members.begin(), members.end(), device);
    return it == members.end() ? -1 : (int)(it - members.begin());
  }
};

/// The devices of the running call: the world and the communicators split
/// off it (kept for the call, found again by their members).
struct Devices {
  std::mutex m;
  std::atomic<bool> broken{false};
  std::unique_ptr<Group> world;
  std::map<std::pair<int, std::vector<int>>, int> splitIds;
  std::vector<std::unique_ptr<Group>> splits;
};

Devices &devices() {
  static Devices *d = new Devices;
  return *d;
}

thread_local int deviceRank = -1;

/// Leaves a wait of a broken group: jumps to the thread's guard (the call
/// is abandoned as when an allocation fails).
void leaveBroken() { ember::runtime::allocationFailed(0); }

Group *groupOf(int comm) {
  Devices &d = devices();
  if (comm == kCommWorld)
    return d.world.get();
  std::lock_guard<std::mutex> g(d.m);
  int k = comm - kFirstSplit;
  if (k < 0 || k >= (int)d.splits.size())
    return nullptr;
  return d.splits[k].get();
}

/// Waits until every member has arrived at this point of the group;
/// `publish` runs under the group's lock before arriving.
template <typename F> void barrier(Group &g, F publish) {
  std::unique_lock<std::mutex> lock(g.m);
  publish();
  uint64_t gen = g.generation;
  if (++g.arrived == (int)g.members.size()) {
    g.arrived = 0;
    ++g.generation;
    g.cv.notify_all();
    return;
  }
  // Yields a while first (the members are usually close behind, and there
  // may be more devices than cores), then sleeps.
  lock.unlock();
  for (int k = 0; k < 256 && g.generation.load() == gen; ++k)
    std::this_thread::yield();
  lock.lock();
  while (g.generation.load() == gen) {
    if (devices().broken.load()) {
      lock.unlock();
      leaveBroken();
      return;
    }
    g.cv.wait_for(lock, std::chrono::milliseconds(50));
  }
}

void barrier(Group &g) {
  barrier(g, [] {});
}

enum class Kind { Float, Signed, Unsigned, Bool, Unknown };

/// The kind and size of an MPICH builtin datatype handle (its size is the
/// handle's second byte).
std::pair<Kind, int> datatype(int h) {
  int size = (h >> 8) & 0xff;
  switch (h & 0xff) {
  case 0x0a: // MPI_FLOAT
  case 0x0b: // MPI_DOUBLE
    return {Kind::Float, size};
  case 0x01: // MPI_CHAR
  case 0x03: // MPI_SHORT
  case 0x05: // MPI_INT
  case 0x07: // MPI_LONG
  case 0x09: // MPI_LONG_LONG_INT
  case 0x37: // MPI_INT8_T .. MPI_INT64_T
  case 0x38:
  case 0x39:
  case 0x3a:
    return {Kind::Signed, size};
  case 0x06: // MPI_UNSIGNED
  case 0x0d: // MPI_BYTE
  case 0x3b: // MPI_UINT8_T .. MPI_UINT64_T
  case 0x3c:
  case 0x3d:
  case 0x3e:
    return {Kind::Unsigned, size};
  case 0x3f: // MPI_C_BOOL
    return {Kind::Bool, size};
  default:
    return {Kind::Unknown, size};
  }
}

template <typename T> void combine(T *acc, const T *x, int64_t n, int op) {
  for (int64_t i = 0; i < n; ++i) {
    T a = acc[i], b = x[i];
    switch (op) {
    case kOpMax:
      acc[i] = a < b ? b : a;
      break;
    case kOpMin:
      acc[i] = b < a ? b : a;
      break;
    case kOpSum:
      acc[i] = a + b;
      break;
    case kOpProd:
      acc[i] = a * b;
      break;
    case kOpLand:
      acc[i] = (a != T(0)) && (b != T(0));
      break;
    case kOpLor:
      acc[i] = (a != T(0)) || (b != T(0));
      break;
    case kOpLxor:
      acc[i] = (a != T(0)) != (b != T(0));
      break;
    default:
      if constexpr (std::is_integral_v<T>) {
        if (op == kOpBand)
          acc[i] = a & b;
        else if (op == kOpBor)
          acc[i] = a | b;
        else if (op == kOpBxor)
          acc[i] = a ^ b;
      }
      break;
    }
  }
}

template <typename T>
void reduceAll(void *recv, const std::vector<const void *> &parts, int64_t n,
               int op) {
  auto *out = static_cast<T *>(recv);
  std::memcpy(out, parts[0], n * sizeof(T));
  for (size_t p = 1; p < parts.size(); ++p)
    combine(out, static_cast<const T *>(parts[p]), n, op);
}

/// recv = op over the members' buffers, in rank order; false for a
/// datatype this does not know.
bool reduceParts(void *recv, const std::vector<const void *> &parts, int64_t n,
                 int dtype, int op) {
  auto [kind, size] = datatype(dtype);
  switch (kind) {
  case Kind::Float:
    if (size == 4)
      return reduceAll<float>(recv, parts, n, op), true;
    if (size == 8)
      return reduceAll<double>(recv, parts, n, op), true;
    return false;
  case Kind::Signed:
    if (size == 1)
      return reduceAll<int8_t>(recv, parts, n, op), true;
    if (size == 2)
      return reduceAll<int16_t>(recv, parts, n, op), true;
    if (size == 4)
      return reduceAll<int32_t>(recv, parts, n, op), true;
    if (size == 8)
      return reduceAll<int64_t>(recv, parts, n, op), true;
    return false;
  case Kind::Unsigned:
  case Kind::Bool:
    if (size == 1)
      return reduceAll<uint8_t>(recv, parts, n, op), true;
    if (size == 2)
      return reduceAll<uint16_t>(recv, parts, n, op), true;
    if (size == 4)
      return reduceAll<uint32_t>(recv, parts, n, op), true;
    if (size == 8)
      return reduceAll<uint64_t>(recv, parts, n, op), true;
    return false;
  default:
    return false;
  }
}

constexpr int kErrType = 3, kErrComm = 5, kErrOp = 9;

/// The threads of devices 1, 2, ... (device 0 is the caller's), kept
/// between calls: started as a call asks for more.
class DeviceThreads {
public:
  static DeviceThreads &get() {
    static DeviceThreads *t = new DeviceThreads; // workers outlive exit
    return *t;
  }

  /// Runs job(i) for i in [0, n) at once, job(0) on this thread.
  void run(int n, const std::function<void(int)> &job) {
    {
      std::lock_guard<std::mutex> g(m);
      while ((int)workers.size() < n - 1) {
        int k = (int)workers.size() + 1;
        workers.emplace_back([this, k, seen = generation] { work(k, seen); });
        workers.back().detach();
      }
      current = &job;
      devices = n;
      pending = n - 1;
      ++generation;
    }
    wake.notify_all();
    job(0);
    std::unique_lock<std::mutex> g(m);
    done.wait(g, [&] { return pending == 0; });
    current = nullptr;
  }

private:
  void work(int k, uint64_t seen) {
    emberRuntimeEnterFloatMode(); // (a device thread runs compiled code only)
    for (;;) {
      std::unique_lock<std::mutex> g(m);
      wake.wait(g, [&] { return generation != seen; });
      seen = generation;
      if (k >= devices)
        continue;
      const std::function<void(int)> *job = current;
      g.unlock();
      (*job)(k);
      g.lock();
      if (--pending == 0)
        done.notify_one();
    }
  }

  std::mutex m;
  std::condition_variable wake, done;
  std::vector<std::thread> workers;
  const std::function<void(int)> *current = nullptr;
  int devices = 0, pending = 0;
  uint64_t generation = 0;
};
} // namespace

//===----------------------------------------------------------------------===//
// The MPI functions compiled code calls (MPICH's signatures).
//===----------------------------------------------------------------------===//

extern "C" {
int ember_devices_MPI_Init(void *, void *) { return 0; }
int ember_devices_MPI_Finalize() { return 0; }

int ember_devices_MPI_Comm_rank(int comm, int *rank) {
  Group *g = groupOf(comm);
  if (!g || deviceRank < 0)
    return kErrComm;
  *rank = g->rankOf(deviceRank);
  return 0;
}

int ember_devices_MPI_Comm_size(int comm, int *size) {
  Group *g = groupOf(comm);
  if (!g)
    return kErrComm;
  *size = (int)g->members.size();
  return 0;
}

int ember_devices_MPI_Allreduce(const void *send, void *recv, int count,
                                int dtype, int op, int comm) {
  Group *g = groupOf(comm);
  if (!g)
    return kErrComm;
  int me = g->rankOf(deviceRank);
  int size = datatype(dtype).second;
  if (datatype(dtype).first == Kind::Unknown)
    return kErrType;
  if (op < kOpMax || op > kOpBxor)
    return kErrOp;
  // Each member's contribution is copied first: with MPI_IN_PLACE (or a
  // receive buffer that is another member's send buffer) the results are
  // written where the contributions were.
  int64_t bytes = (int64_t)count * size;
  std::vector<char> mine(bytes);
  std::memcpy(mine.data(), send == (void *)-1 ? recv : send, bytes);
  barrier(*g, [&] { g->slots[me] = mine.data(); });
  bool known = reduceParts(recv, g->slots, count, dtype, op);
  barrier(*g); // (every member has read every contribution)
  return known ? 0 : kErrType;
}

int ember_devices_MPI_Comm_split(int comm, int color, int key, int *newcomm) {
  Group *g = groupOf(comm);
  if (!g)
    return kErrComm;
  int me = g->rankOf(deviceRank);
  barrier(*g, [&] {
    g->ints[2 * me] = color;
    g->ints[2 * me + 1] = key;
  });
  if (color == kUndefined) {
    *newcomm = kCommNull;
  } else {
    // The members of my color, ordered by key, then by rank in `comm`: the
    // same list on each of them, so they find the same communicator (one
    // per list for the whole call, however often the program splits).
    std::vector<std::pair<int, int>> order;
    for (int r = 0; r < (int)g->members.size(); ++r)
      if (g->ints[2 * r] == color)
        order.push_back({g->ints[2 * r + 1], r});
    std::sort(order.begin(), order.end());
    std::vector<int> members;
    for (auto [k, r] : order)
      members.push_back(g->members[r]);
    Devices &d = devices();
    std::lock_guard<std::mutex> lock(d.m);
    auto [it, fresh] =
        d.splitIds.insert({{comm, members}, (int)d.splits.size()});
    if (fresh)
      d.splits.push_back(std::make_unique<Group>(members));
    *newcomm = kFirstSplit + it->second;
  }
  barrier(*g); // (every member has read the colors)
  return 0;
}
} // extern "C"

void ember::runtime::bindDeviceMpiEntries(void (*bind)(const char *, void *,
                                                       void *),
                                          void *user) {
#define EMBER_DEVICE_MPI_ENTRY(NAME)                                           \
  bind("ember_devices_" #NAME,                                                 \
       reinterpret_cast<void *>(&ember_devices_##NAME), user);
#include "ember/Runtime/Runtime.def"
}

//===----------------------------------------------------------------------===//
// The C API (ember-c/Runtime.h)
//===----------------------------------------------------------------------===//

int emberRuntimeRunOnDevices(void (*fn)(void **), void ***args, int n,
                             size_t *failed) {
  static std::mutex oneCall; // one partitioned call at a time
  std::lock_guard<std::mutex> busy(oneCall);
  Devices &d = devices();
  {
    std::lock_guard<std::mutex> lock(d.m);
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i)
      all[i] = i;
    d.world = std::make_unique<Group>(all);
    d.splitIds.clear();
    d.splits.clear();
    d.broken = false;
  }
  std::vector<size_t> lost(n, 0);
  std::vector<int> bad(n, 0);
  ember::runtime::OneBlasThreadScope oneBlasThread;
  DeviceThreads::get().run(n, [&](int i) {
    ember::runtime::DeviceWork onDevice;
    deviceRank = i;
    bad[i] = emberRuntimeCallChecked(fn, args[i], &lost[i]);
    deviceRank = -1;
    if (bad[i])
      d.broken = true; // (the others see it at their next wait)
  });
  // The device whose allocation failed first names the size (the others
  // left a broken group with 0).
  int result = 0;
  *failed = 0;
  for (int i = 0; i < n; ++i)
    if (bad[i]) {
      result = 1;
      *failed = std::max(*failed, lost[i]);
    }
  return result;
}
