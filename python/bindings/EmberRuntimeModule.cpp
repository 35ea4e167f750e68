//===- EmberRuntimeModule.cpp - the fast call path for compiled code ------===//
//
// `_ember_runtime.Kernel` wraps one JIT-compiled function. Calling it checks
// the argument buffers, packs MLIR memref descriptors in C++, takes output
// buffers from a pool (a freed result's pages are reused, so large results do
// not fault on every page each call) and calls the code with the GIL released.
//
//===----------------------------------------------------------------------===//
#include "ember-c/Runtime.h"
#include "ember/Runtime/Runtime.h"
#include "mlir/Bindings/Python/Nanobind.h"
#include "mlir/Bindings/Python/NanobindAdaptors.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

/// Output buffers come from the runtime's one memory pool
/// (lib/Runtime/MemoryPool.cpp), which also serves compiled code's malloc.
struct RuntimePool {
  void *take(size_t bytes) {
    void *p = emberRuntimeAlloc(bytes);
    if (!p)
      throw std::bad_alloc();
    return p;
  }
  void give(void *p, size_t) { emberRuntimeFree(p); }
  void clear() { emberRuntimeClearPool(); }
  size_t pooledBytes() { return emberRuntimePooledBytes(); }
};

RuntimePool &pool() {
  static RuntimePool p;
  return p;
}

struct PooledBuffer {
  void *data;
  size_t bytes;
};

struct ArgSpec {
  std::vector<int64_t> shape;
  int64_t itemsize;
  int64_t nbytes;
};

ArgSpec makeSpec(const std::vector<int64_t> &shape, int64_t itemsize) {
  int64_t n = itemsize;
  for (int64_t d : shape)
    n *= d;
  return ArgSpec{shape, itemsize, n};
}

/// The packed entry point of compiled code's `main`.
void (*mainEntry(EmberExecutable *exe))(void **) {
  auto fn = reinterpret_cast<void (*)(void **)>(emberExecutableLookupPacked(
      exe, mlirStringRefCreateFromCString("_mlir_ciface_main")));
  if (!fn)
    throw std::runtime_error("ember: compiled code has no entry point 'main'");
  return fn;
}

/// One memref descriptor: allocated, aligned, offset, sizes[r], strides[r].
void fillDescriptor(int64_t *d, void *data, const ArgSpec &s) {
  size_t r = s.shape.size();
  std::memcpy(&d[0], &data, sizeof(void *));
  std::memcpy(&d[1], &data, sizeof(void *));
  d[2] = 0;
  int64_t stride = 1;
  for (size_t i = r; i-- > 0;) {
    d[3 + i] = s.shape[i];
    d[3 + r + i] = stride;
    stride *= s.shape[i];
  }
}

//===----------------------------------------------------------------------===//
// Host callbacks
//===----------------------------------------------------------------------===//

/// The Python function that serves `ember.host_callback`:
/// handler(signature address, signature length, operand addresses' address,
/// result addresses' address).
nb::object &hostHandler() {
  static auto *h = new nb::object(); // never destroyed (interpreter teardown)
  return *h;
}

/// The exception a callback raised during the current call on this thread;
/// the kernel re-raises it when the compiled code returns.
struct PendingError {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  explicit operator bool() const { return type != nullptr; }
};
thread_local PendingError pendingError;

extern "C" void emberHostCallbackEntry(
    int64_t *, int64_t *sig, int64_t sigOffset, int64_t sigSize, int64_t,
    int64_t *, int64_t *args, int64_t argsOffset, int64_t, int64_t, int64_t *,
    int64_t *results, int64_t resultsOffset, int64_t, int64_t) {
  nb::gil_scoped_acquire gil;
  if (pendingError || !hostHandler().is_valid())
    return; // an earlier callback of this call failed: skip the rest
  // The callback's Python (NumPy included) keeps subnormals.
  unsigned mode = emberRuntimeLeaveFloatMode();
  try {
    hostHandler()((intptr_t)(sig + sigOffset), sigSize,
                  (intptr_t)(args + argsOffset),
                  (intptr_t)(results + resultsOffset));
  } catch (nb::python_error &e) {
    e.restore();
    PyErr_Fetch(&pendingError.type, &pendingError.value,
                &pendingError.traceback);
  }
  emberRuntimeRestoreFloatMode(mode);
}

/// Raises the pending callback error, if any, after freeing `results`.
void raisePendingError(std::vector<PooledBuffer *> &results);

/// Frees `results` and raises MemoryError for an allocation of `bytes`.
[[noreturn]] void outOfMemory(std::vector<PooledBuffer *> &results,
                              size_t bytes);

class Kernel {
public:
  /// Compiles `module`; with `objectPath`, also writes its object code
  /// there (the persistent compilation cache).
  Kernel(MlirModule module, int optLevel,
         std::vector<std::vector<int64_t>> inShapes,
         std::vector<int64_t> inItemsizes,
         std::vector<std::vector<int64_t>> outShapes,
         std::vector<int64_t> outItemsizes, std::string objectPath) {
    std::string error;
    auto onError = [](MlirStringRef msg, void *user) {
      static_cast<std::string *>(user)->append(msg.data, msg.length);
    };
    exe = objectPath.empty()
              ? emberExecutableCreate(module, optLevel, onError, &error)
              : emberExecutableCreateKeepingObject(module, optLevel, onError,
                                                   &error);
    if (!exe)
      throw std::runtime_error("ember: JIT compilation failed: " + error);
    init(inShapes, inItemsizes, outShapes, outItemsizes);
    if (!objectPath.empty())
      emberExecutableWriteObject(
          exe, mlirStringRefCreate(objectPath.data(), objectPath.size()));
  }

  /// Loads object code from the persistent compilation cache.
  Kernel(nb::bytes object, std::vector<std::vector<int64_t>> inShapes,
         std::vector<int64_t> inItemsizes,
         std::vector<std::vector<int64_t>> outShapes,
         std::vector<int64_t> outItemsizes) {
    std::string error;
    exe = emberExecutableLoadObject(
        object.c_str(), object.size(),
        [](MlirStringRef msg, void *user) {
          static_cast<std::string *>(user)->append(msg.data, msg.length);
        },
        &error);
    if (!exe)
      throw std::runtime_error("ember: loading cached code failed: " + error);
    init(inShapes, inItemsizes, outShapes, outItemsizes);
  }

  void init(const std::vector<std::vector<int64_t>> &inShapes,
            const std::vector<int64_t> &inItemsizes,
            const std::vector<std::vector<int64_t>> &outShapes,
            const std::vector<int64_t> &outItemsizes) {
    fn = mainEntry(exe);
    for (size_t i = 0; i < inShapes.size(); ++i)
      own.add(own.ins, inShapes[i], inItemsizes[i]);
    for (size_t i = 0; i < outShapes.size(); ++i)
      own.add(own.outs, outShapes[i], outItemsizes[i]);
  }
  ~Kernel() {
    if (exe)
      emberExecutableDestroy(exe);
  }

  nb::list call(nb::sequence args) {
    size_t n = nb::len(args);
    std::vector<PyObject *> objs(n);
    for (size_t i = 0; i < n; ++i)
      objs[i] = args[i].ptr();
    return wrap(run(objs.data(), n));
  }

  /// Calls code compiled for every size (python/ember/_src/dynamic_shapes.py)
  /// with this call's shapes: the arguments' and the results' (which the
  /// caller computes from the dimension variables).
  nb::list callShaped(nb::sequence args,
                      const std::vector<std::vector<int64_t>> &inShapes,
                      const std::vector<std::vector<int64_t>> &outShapes) {
    size_t n = nb::len(args);
    if (inShapes.size() != ins.size() || outShapes.size() != outs.size())
      throw nb::value_error("ember: wrong number of shapes");
    Specs specs;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (inShapes[i].size() != ins[i].shape.size())
        throw nb::value_error("ember: an argument's rank differs");
      specs.add(specs.ins, inShapes[i], ins[i].itemsize);
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outShapes[i].size() != outs[i].shape.size())
        throw nb::value_error("ember: a result's rank differs");
      specs.add(specs.outs, outShapes[i], outs[i].itemsize);
    }
    std::vector<PyObject *> objs(n);
    for (size_t i = 0; i < n; ++i)
      objs[i] = args[i].ptr();
    return wrap(run(objs.data(), n, specs));
  }

  static nb::list wrap(const std::vector<PooledBuffer *> &results) {
    nb::list out;
    for (PooledBuffer *buf : results)
      out.append(wrapOne(buf));
    return out;
  }

  /// `buf` as a uint8 NumPy array owning it.
  static nb::object wrapOne(PooledBuffer *buf) {
    nb::capsule owner = ownerOf(buf);
    size_t shape[1] = {buf->bytes};
    return nb::cast(nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(buf->data, 1,
                                                                 shape, owner));
  }

  static nb::capsule ownerOf(PooledBuffer *buf) {
    return nb::capsule(buf, [](void *p) noexcept {
      auto *b = static_cast<PooledBuffer *>(p);
      pool().give(b->data, b->bytes);
      delete b;
    });
  }

  /// Runs the code on `n` buffer-protocol objects; returns the output buffers.
  std::vector<PooledBuffer *> run(PyObject **args, size_t n) {
    return run(args, n, own);
  }

  /// The arguments' and results' specs of a call, and the descriptors' size.
  struct Specs {
    std::vector<ArgSpec> ins, outs;
    size_t descWords = 0;
    int64_t bytes = 0;
    void add(std::vector<ArgSpec> &to, const std::vector<int64_t> &shape,
             int64_t itemsize) {
      to.push_back(makeSpec(shape, itemsize));
      descWords += 3 + 2 * shape.size();
      bytes += to.back().nbytes;
    }
  };

  /// One call's argument views (held until it ends), descriptors and
  /// result buffers (freed unless taken).
  struct Call {
    std::vector<Py_buffer> views;
    size_t got = 0;
    std::vector<int64_t> descs;
    std::vector<void *> descPtrs, argv;
    std::vector<PooledBuffer *> results;
    Call() = default;
    Call(const Call &) = delete;
    ~Call() {
      for (size_t i = 0; i < got; ++i)
        PyBuffer_Release(&views[i]);
      for (PooledBuffer *b : results)
        if (b) {
          pool().give(b->data, b->bytes);
          delete b;
        }
    }
  };

  /// Views `n` buffer-protocol objects as the arguments and allocates the
  /// results of a call with `specs`; where `outData` gives a result's
  /// memory (non-null), the call writes it there and `c.results` skips it.
  void prepare(Call &c, PyObject **args, size_t n, const Specs &specs,
               const std::vector<char *> *outData = nullptr) {
    const std::vector<ArgSpec> &ins = specs.ins, &outs = specs.outs;
    if (n != ins.size())
      throw nb::type_error(("expected " + std::to_string(ins.size()) +
                            " arguments, got " + std::to_string(n))
                               .c_str());
    c.views.resize(n);
    c.descs.resize(specs.descWords);
    c.descPtrs.resize(ins.size() + outs.size());
    c.argv.resize(ins.size() + outs.size());
    size_t w = 0, a = 0;
    for (size_t i = 0; i < n; ++i) {
      if (PyObject_GetBuffer(args[i], &c.views[i], PyBUF_C_CONTIGUOUS) != 0)
        throw nb::python_error();
      ++c.got;
      if (c.views[i].len != ins[i].nbytes)
        throw nb::value_error(("argument " + std::to_string(i) + " has " +
                               std::to_string(c.views[i].len) +
                               " bytes, expected " +
                               std::to_string(ins[i].nbytes))
                                  .c_str());
      fillDescriptor(&c.descs[w], c.views[i].buf, ins[i]);
      c.descPtrs[a] = &c.descs[w];
      c.argv[a] = &c.descPtrs[a];
      w += 3 + 2 * ins[i].shape.size();
      ++a;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      const ArgSpec &s = outs[i];
      void *data = outData ? (*outData)[i] : nullptr;
      if (!data) {
        data = emberRuntimeAlloc(s.nbytes);
        if (!data && s.nbytes)
          outOfMemory(c.results, s.nbytes);
        c.results.push_back(new PooledBuffer{data, (size_t)s.nbytes});
      }
      fillDescriptor(&c.descs[w], data, s);
      c.descPtrs[a] = &c.descs[w];
      c.argv[a] = &c.descPtrs[a];
      w += 3 + 2 * s.shape.size();
      ++a;
    }
  }

  /// The results of a call that ended (`lost`: an allocation of `failed`
  /// bytes failed), or the error it raised.
  static std::vector<PooledBuffer *> finish(Call &c, int lost, size_t failed) {
    if (lost)
      outOfMemory(c.results, failed);
    if (pendingError)
      raisePendingError(c.results);
    return std::move(c.results);
  }

  std::vector<PooledBuffer *> run(PyObject **args, size_t n,
                                  const Specs &specs) {
    Call c;
    prepare(c, args, n, specs);
    // Small calls keep the GIL: releasing it costs more than the call.
    size_t failed = 0;
    int lost;
    if (specs.bytes < kReleaseGilBytes) {
      lost = emberRuntimeCallChecked(fn, c.argv.data(), &failed);
    } else {
      nb::gil_scoped_release release;
      lost = emberRuntimeCallChecked(fn, c.argv.data(), &failed);
    }
    return finish(c, lost, failed);
  }

  /// Calls a program partitioned over the in-process devices, device i on
  /// its own thread with the arguments `perDevice[i]` (its blocks);
  /// returns each device's results. `shared[j]`, where not None, is
  /// (bytes, [each device's byte offset]): result j is one buffer of that
  /// size, each device writing its block at its offset, and each device's
  /// list holds that whole buffer.
  nb::list callOnDevices(nb::sequence perDevice, nb::sequence shared) {
    size_t d = nb::len(perDevice);
    if (nb::len(shared) != outs.size())
      throw nb::value_error("ember: one entry per result expected");
    // The shared results' buffers (freed unless taken).
    Call wholes;
    std::vector<std::vector<char *>> outData(d,
                                             std::vector<char *>(outs.size()));
    for (size_t j = 0; j < outs.size(); ++j) {
      if (shared[j].is_none()) {
        wholes.results.push_back(nullptr);
        continue;
      }
      auto spec = nb::cast<std::pair<int64_t, std::vector<int64_t>>>(shared[j]);
      if (spec.second.size() != d)
        throw nb::value_error("ember: one offset per device expected");
      for (int64_t off : spec.second)
        if (off < 0 || off + outs[j].nbytes > spec.first)
          throw nb::value_error("ember: a block outside its result");
      void *data = emberRuntimeAlloc(spec.first);
      if (!data && spec.first)
        outOfMemory(wholes.results, spec.first);
      wholes.results.push_back(new PooledBuffer{data, (size_t)spec.first});
      for (size_t k = 0; k < d; ++k)
        outData[k][j] = static_cast<char *>(data) + spec.second[k];
    }
    std::vector<Call> calls(d);
    std::vector<void **> argvs(d);
    for (size_t k = 0; k < d; ++k) {
      nb::sequence args = nb::borrow<nb::sequence>(perDevice[k]);
      size_t n = nb::len(args);
      std::vector<PyObject *> objs(n);
      for (size_t i = 0; i < n; ++i)
        objs[i] = args[i].ptr();
      prepare(calls[k], objs.data(), n, own, &outData[k]);
      argvs[k] = calls[k].argv.data();
    }
    size_t failed = 0;
    int lost;
    {
      nb::gil_scoped_release release;
      lost = emberRuntimeRunOnDevices(fn, argvs.data(), (int)d, &failed);
    }
    std::vector<std::vector<PooledBuffer *>> owned(d);
    for (size_t k = 0; k < d; ++k)
      owned[k] = finish(calls[k], lost, failed);
    std::vector<nb::object> whole(outs.size());
    for (size_t j = 0; j < outs.size(); ++j)
      if (wholes.results[j]) {
        whole[j] = wrapOne(wholes.results[j]);
        wholes.results[j] = nullptr;
      }
    nb::list out;
    for (size_t k = 0; k < d; ++k) {
      nb::list mine;
      size_t next = 0;
      for (size_t j = 0; j < outs.size(); ++j)
        mine.append(whole[j].is_valid() ? whole[j] : wrapOne(owned[k][next++]));
      out.append(mine);
    }
    return out;
  }

  static constexpr int64_t kReleaseGilBytes = 1 << 16;

private:
  EmberExecutable *exe = nullptr;
  void (*fn)(void **) = nullptr;
  Specs own; // the shapes the code was compiled for
  const std::vector<ArgSpec> &ins = own.ins, &outs = own.outs;
};

[[noreturn]] void outOfMemory(std::vector<PooledBuffer *> &results,
                              size_t bytes) {
  for (PooledBuffer *b : results) {
    if (b && b->data)
      pool().give(b->data, b->bytes);
    delete b;
  }
  results.clear();
  std::string msg = "ember: out of memory: could not allocate " +
                    std::to_string(bytes) + " bytes";
  PyErr_SetString(PyExc_MemoryError, msg.c_str());
  throw nb::python_error();
}

void raisePendingError(std::vector<PooledBuffer *> &results) {
  for (PooledBuffer *b : results) {
    pool().give(b->data, b->bytes);
    delete b;
  }
  results.clear();
  PyErr_Restore(pendingError.type, pendingError.value, pendingError.traceback);
  pendingError = PendingError();
  throw nb::python_error();
}

/// The first CUDA error the runtime recorded (and clears it), or "".
std::string takeCudaError() {
  char buffer[2048];
  size_t n = emberCudaTakeError(buffer, sizeof(buffer));
  return n ? std::string(buffer) : std::string();
}

void raiseIfCudaError(const char *where) {
  std::string error = takeCudaError();
  if (!error.empty())
    throw std::runtime_error(std::string("CUDA error ") + where + ": " + error);
}

/// A block of GPU memory from the runtime's caching allocator (an array's
/// data on the GPU), returned to it when the object dies.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) : bytes(bytes) {
    ptr = emberCudaAlloc(bytes);
    raiseIfCudaError("allocating device memory");
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (ptr)
      emberCudaFree(ptr);
  }

  /// A device copy of a C-contiguous buffer-protocol object.
  static std::unique_ptr<DeviceBuffer> fromHost(nb::handle host) {
    Py_buffer view;
    if (PyObject_GetBuffer(host.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0)
      throw nb::python_error();
    std::unique_ptr<DeviceBuffer> buf;
    try {
      buf = std::make_unique<DeviceBuffer>(view.len);
    } catch (...) {
      PyBuffer_Release(&view);
      throw;
    }
    emberCudaCopy(buf->ptr, view.buf, view.len);
    PyBuffer_Release(&view);
    raiseIfCudaError("copying an array to the device");
    return buf;
  }

  /// The bytes, copied into a host pool buffer (a uint8 NumPy array).
  nb::object toHost() const {
    void *host = emberRuntimeAlloc(bytes);
    if (!host && bytes) {
      PyErr_SetString(PyExc_MemoryError, "ember: out of host memory");
      throw nb::python_error();
    }
    auto *buf = new PooledBuffer{host, bytes};
    nb::capsule owner = Kernel::ownerOf(buf);
    emberCudaCopy(host, ptr, bytes);
    raiseIfCudaError("copying an array to the host");
    size_t shape[1] = {bytes};
    return nb::cast(
        nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(host, 1, shape, owner));
  }

  void *ptr = nullptr;
  size_t bytes = 0;
};

/// Compiled code of the cuda target: host code JIT-compiled here, kernels
/// loaded by the driver when it is created (gpu.binary's initializers).
/// A call copies the arguments into device memory (the runtime's caching
/// allocator), runs the host code (launches on the runtime's stream) and
/// copies the results back into pool buffers.
class CudaKernel {
public:
  CudaKernel(MlirModule module, int optLevel,
             std::vector<std::vector<int64_t>> inShapes,
             std::vector<int64_t> inItemsizes,
             std::vector<std::vector<int64_t>> outShapes,
             std::vector<int64_t> outItemsizes) {
    if (emberCudaDeviceCount() == 0) {
      MlirStringRef why = emberCudaUnavailableReason();
      throw std::runtime_error("no CUDA GPU to run on: " +
                               std::string(why.data, why.length));
    }
    takeCudaError(); // (a stale error is not this executable's)
    std::string error;
    exe = emberExecutableCreate(
        module, optLevel,
        [](MlirStringRef msg, void *user) {
          static_cast<std::string *>(user)->append(msg.data, msg.length);
        },
        &error);
    if (!exe)
      throw std::runtime_error("ember: JIT compilation failed: " + error);
    raiseIfCudaError("while loading the kernels");
    fn = mainEntry(exe);
    for (size_t i = 0; i < inShapes.size(); ++i)
      specs.push_back(makeSpec(inShapes[i], inItemsizes[i]));
    numIns = specs.size();
    for (size_t i = 0; i < outShapes.size(); ++i)
      specs.push_back(makeSpec(outShapes[i], outItemsizes[i]));
  }
  ~CudaKernel() {
    if (exe)
      emberExecutableDestroy(exe);
  }

  /// Runs the program on device buffers (arguments, in order); returns the
  /// results in new device buffers. Nothing is copied.
  std::vector<DeviceBuffer *> callDevice(std::vector<DeviceBuffer *> args) {
    if (args.size() != numIns)
      throw nb::type_error(("expected " + std::to_string(numIns) +
                            " arguments, got " + std::to_string(args.size()))
                               .c_str());
    size_t words = 0;
    for (const ArgSpec &s : specs)
      words += 3 + 2 * s.shape.size();
    std::vector<int64_t> descs(words);
    std::vector<void *> descPtrs(specs.size()), argv(specs.size());
    std::vector<std::unique_ptr<DeviceBuffer>> results;
    size_t w = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      const ArgSpec &s = specs[i];
      void *data;
      if (i < numIns) {
        if (!args[i] || (int64_t)args[i]->bytes != s.nbytes)
          throw nb::value_error(
              ("argument " + std::to_string(i) + " has the wrong size")
                  .c_str());
        data = args[i]->ptr;
      } else {
        results.push_back(std::make_unique<DeviceBuffer>(s.nbytes));
        data = results.back()->ptr;
      }
      fillDescriptor(&descs[w], data, s);
      descPtrs[i] = &descs[w];
      argv[i] = &descPtrs[i];
      w += 3 + 2 * s.shape.size();
    }
    {
      nb::gil_scoped_release unlocked;
      size_t failedBytes = 0;
      // Asynchronous dispatch: the launches are queued on the runtime's
      // stream and the results are returned in flight; reading them
      // (toHost) or block_until_ready waits.
      emberRuntimeCallChecked(fn, argv.data(), &failedBytes);
    }
    if (pendingError) {
      std::vector<PooledBuffer *> none;
      raisePendingError(none);
    }
    raiseIfCudaError("running the program");
    std::vector<DeviceBuffer *> out;
    for (auto &r : results)
      out.push_back(r.release());
    return out;
  }

  /// Runs the program on host buffers: copies them in and the results out.
  nb::list call(nb::sequence args) {
    std::vector<std::unique_ptr<DeviceBuffer>> in;
    std::vector<DeviceBuffer *> ptrs;
    for (size_t i = 0, n = nb::len(args); i < n; ++i) {
      in.push_back(DeviceBuffer::fromHost(args[i]));
      ptrs.push_back(in.back().get());
    }
    nb::list out;
    for (DeviceBuffer *r : callDevice(ptrs)) {
      std::unique_ptr<DeviceBuffer> owned(r);
      out.append(owned->toHost());
    }
    return out;
  }

private:
  EmberExecutable *exe = nullptr;
  void (*fn)(void **) = nullptr;
  std::vector<ArgSpec> specs; // arguments, then results
  size_t numIns = 0;
};

/// The C++ dispatch path of `ember.jit`: for calls whose arguments are all
/// ember Arrays (no keywords), looks the compiled kernel up by the arguments'
/// signatures, calls it and builds the result Arrays without running Python.
class FastJit {
public:
  explicit FastJit(nb::object arrayType) : arrayType(std::move(arrayType)) {}

  void insert(nb::tuple key, nb::object kernel, nb::tuple outAvals,
              nb::tuple outSigs, nb::tuple outDescrs, bool single) {
    // The entry holds the kernel object itself: the jit cache may evict its
    // Executable (and another thread clear this cache) while a call runs.
    nb::cast<Kernel *>(kernel); // (a Kernel, or a TypeError here)
    cache[key] =
        nb::make_tuple(std::move(kernel), outAvals, outSigs, outDescrs, single);
  }

  void clear() { cache.clear(); }

  /// The result, or None when the slow path must run.
  nb::object call(nb::args args, nb::kwargs kwargs) {
    if (kwargs.size() != 0)
      return nb::none();
    size_t n = args.size();
    nb::tuple key = nb::steal<nb::tuple>(PyTuple_New(n));
    std::vector<PyObject *> values(n);
    PyObject *sigName = sigStr.ptr(), *valueName = valueStr.ptr();
    for (size_t i = 0; i < n; ++i) {
      PyObject *a = PyTuple_GET_ITEM(args.ptr(), i);
      if ((PyObject *)Py_TYPE(a) != arrayType.ptr())
        return nb::none();
      PyObject *sig = PyObject_GetAttr(a, sigName);
      if (!sig)
        throw nb::python_error();
      PyTuple_SET_ITEM(key.ptr(), i, sig);
      PyObject *v = PyObject_GetAttr(a, valueName);
      if (!v)
        throw nb::python_error();
      values[i] = v;
      Py_DECREF(v); // the Array keeps its value alive during the call
    }
    PyObject *found = PyDict_GetItem(cache.ptr(), key.ptr());
    if (!found)
      return nb::none();
    // A reference of our own: the kernel and the entry outlive a clear() by
    // another thread while this one runs the kernel without the GIL.
    nb::object entryRef = nb::borrow(found);
    PyObject *entry = entryRef.ptr();
    Kernel *kernel = nb::cast<Kernel *>(nb::handle(PyTuple_GET_ITEM(entry, 0)));
    PyObject *outAvals = PyTuple_GET_ITEM(entry, 1);
    PyObject *outSigs = PyTuple_GET_ITEM(entry, 2);
    PyObject *outDescrs = PyTuple_GET_ITEM(entry, 3);
    bool single = PyTuple_GET_ITEM(entry, 4) == Py_True;
    std::vector<PooledBuffer *> bufs = kernel->run(values.data(), n);
    size_t m = bufs.size();
    nb::tuple results = nb::steal<nb::tuple>(PyTuple_New(m));
    for (size_t i = 0; i < m; ++i) {
      PyObject *sig = PyTuple_GET_ITEM(outSigs, i);
      PyObject *shapeTuple = PyTuple_GET_ITEM(sig, 0);
      int nd = (int)PyTuple_GET_SIZE(shapeTuple);
      npy_intp dims[32];
      for (int d = 0; d < nd; ++d)
        dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shapeTuple, d));
      PyArray_Descr *descr = (PyArray_Descr *)PyTuple_GET_ITEM(outDescrs, i);
      Py_INCREF(descr);
      PyObject *arr =
          PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, nullptr,
                               bufs[i]->data, NPY_ARRAY_C_CONTIGUOUS, nullptr);
      nb::capsule owner = Kernel::ownerOf(bufs[i]);
      if (!arr)
        throw nb::python_error();
      if (PyArray_SetBaseObject((PyArrayObject *)arr, owner.release().ptr()) !=
          0)
        throw nb::python_error();
      PyTypeObject *t = (PyTypeObject *)arrayType.ptr();
      PyObject *obj = t->tp_alloc(t, 0);
      if (!obj || PyObject_SetAttr(obj, valueName, arr) != 0 ||
          PyObject_SetAttr(obj, avalStr.ptr(), PyTuple_GET_ITEM(outAvals, i)) !=
              0 ||
          PyObject_SetAttr(obj, sigName, sig) != 0) {
        Py_XDECREF(arr);
        Py_XDECREF(obj);
        throw nb::python_error();
      }
      Py_DECREF(arr);
      PyTuple_SET_ITEM(results.ptr(), i, obj);
    }
    if (single)
      return nb::borrow(PyTuple_GET_ITEM(results.ptr(), 0));
    return results;
  }

private:
  nb::object arrayType;
  nb::dict cache;
  nb::str sigStr{"_sig"}, valueStr{"_value"}, avalStr{"aval"};
};

} // namespace

static int initNumpy() {
  import_array1(-1);
  return 0;
}

NB_MODULE(_ember_runtime, m) {
  if (initNumpy() != 0)
    throw nb::python_error();
  nb::class_<FastJit>(m, "FastJit")
      .def(nb::init<nb::object>(), nb::arg("array_type"))
      .def("insert", &FastJit::insert, nb::arg("key"), nb::arg("kernel"),
           nb::arg("out_avals"), nb::arg("out_sigs"), nb::arg("out_descrs"),
           nb::arg("single"))
      .def("clear", &FastJit::clear)
      .def("__call__", &FastJit::call);
  m.doc() = "Ember's JIT and fast call path";
  nb::class_<Kernel>(m, "Kernel")
      .def(nb::init<MlirModule, int, std::vector<std::vector<int64_t>>,
                    std::vector<int64_t>, std::vector<std::vector<int64_t>>,
                    std::vector<int64_t>, std::string>(),
           nb::arg("module"), nb::arg("opt_level"), nb::arg("in_shapes"),
           nb::arg("in_itemsizes"), nb::arg("out_shapes"),
           nb::arg("out_itemsizes"), nb::arg("object_path") = "")
      .def(nb::init<nb::bytes, std::vector<std::vector<int64_t>>,
                    std::vector<int64_t>, std::vector<std::vector<int64_t>>,
                    std::vector<int64_t>>(),
           nb::arg("object"), nb::arg("in_shapes"), nb::arg("in_itemsizes"),
           nb::arg("out_shapes"), nb::arg("out_itemsizes"))
      .def("__call__", &Kernel::call, nb::arg("args"))
      .def("call_on_devices", &Kernel::callOnDevices, nb::arg("per_device"),
           nb::arg("shared"))
      .def("call_shaped", &Kernel::callShaped, nb::arg("args"),
           nb::arg("in_shapes"), nb::arg("out_shapes"));
  nb::class_<CudaKernel>(m, "CudaKernel")
      .def(nb::init<MlirModule, int, std::vector<std::vector<int64_t>>,
                    std::vector<int64_t>, std::vector<std::vector<int64_t>>,
                    std::vector<int64_t>>(),
           nb::arg("module"), nb::arg("opt_level"), nb::arg("in_shapes"),
           nb::arg("in_itemsizes"), nb::arg("out_shapes"),
           nb::arg("out_itemsizes"))
      .def("__call__", &CudaKernel::call, nb::arg("args"))
      .def("call_device", &CudaKernel::callDevice, nb::arg("args"),
           nb::rv_policy::take_ownership);
  nb::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def_static(
          "from_host",
          [](nb::handle host) {
            return DeviceBuffer::fromHost(host).release();
          },
          nb::arg("host"), nb::rv_policy::take_ownership)
      .def("to_host", &DeviceBuffer::toHost)
      .def_ro("nbytes", &DeviceBuffer::bytes)
      .def_prop_ro("pointer", [](const DeviceBuffer &buffer) {
        return reinterpret_cast<uintptr_t>(buffer.ptr);
      });
  m.def("cuda_device_count", &emberCudaDeviceCount);
  m.def("cuda_unavailable_reason", [] {
    MlirStringRef s = emberCudaUnavailableReason();
    return std::string(s.data, s.length);
  });
  m.def("cuda_allocator_stats", [] {
    size_t allocations = 0, cached = 0;
    emberCudaAllocatorStats(&allocations, &cached);
    return nb::make_tuple(allocations, cached);
  });
  m.def("cuda_release_cache", &emberCudaReleaseCache);
  m.def(
      "cuda_synchronize",
      [] {
        {
          nb::gil_scoped_release unlocked;
          emberCudaSynchronize();
        }
        raiseIfCudaError("running on the GPU");
      },
      "Waits for the work queued on the GPU; raises its first error.");
  m.def("pooled_bytes", [] { return pool().pooledBytes(); });
  m.def("host_cpu", [] {
    MlirStringRef s = emberRuntimeHostCpu();
    return std::string(s.data, s.length);
  });
  m.def(
      "set_cblas_gemm",
      [](uintptr_t sgemm, uintptr_t dgemm) {
        emberRuntimeSetCblasGemm(reinterpret_cast<void *>(sgemm),
                                 reinterpret_cast<void *>(dgemm));
      },
      nb::arg("sgemm"), nb::arg("dgemm"));
  m.def(
      "set_lapack_function",
      [](const std::string &name, uintptr_t fn) {
        return emberRuntimeSetLapackFunction(
            MlirStringRef{name.data(), name.size()},
            reinterpret_cast<void *>(fn));
      },
      nb::arg("name"), nb::arg("fn"));
  m.def(
      "set_fft_function",
      [](uintptr_t fn) {
        emberRuntimeSetFftFunction(reinterpret_cast<EmberFftFunction>(fn));
      },
      nb::arg("fn"));
  m.def(
      "set_host_callback_handler",
      [](nb::object handler) {
        hostHandler() = std::move(handler);
        emberRuntimeRegisterSymbol(
            mlirStringRefCreateFromCString("ember_host_callback"),
            reinterpret_cast<void *>(&emberHostCallbackEntry));
      },
      nb::arg("handler"));
  m.def("clear_pool", [] { pool().clear(); });
  m.def("set_num_threads", &emberRuntimeSetNumThreads, nb::arg("n"));
  m.def(
      "use_for_openblas",
      [](uintptr_t setCallback) {
        emberRuntimeUseForOpenblas(reinterpret_cast<void *>(setCallback));
      },
      nb::arg("set_callback"));
  m.def(
      "set_openblas_thread_control",
      [](uintptr_t get, uintptr_t set) {
        emberRuntimeSetOpenblasThreadControl(reinterpret_cast<void *>(get),
                                             reinterpret_cast<void *>(set));
      },
      nb::arg("get_num_threads"), nb::arg("set_num_threads"));
  m.def("num_threads", &emberRuntimeNumThreads);
  m.def(
      "runtime_tables",
      [] {
        // Runtime.def, as Python sees it: entry points compiled code calls,
        // callback type codes and the ids of user errors of passes.
        nb::list entries;
        for (const auto &e : mlir::ember::runtime::entryPoints())
          entries.append(nb::str(e.name.data(), e.name.size()));
        nb::dict codes, errors;
#define EMBER_TYPE_CODE(CODE, NAME) codes[nb::int_(CODE)] = nb::str(NAME);
#define EMBER_ERROR_KIND(ENUM, ID, EXC) errors[nb::str(ID)] = nb::str(#EXC);
#include "ember/Runtime/Runtime.def"
        nb::dict tables;
        tables["entry_points"] = entries;
        tables["type_codes"] = codes;
        tables["error_kinds"] = errors;
        return tables;
      },
      "The tables of include/ember/Runtime/Runtime.def.");
}
