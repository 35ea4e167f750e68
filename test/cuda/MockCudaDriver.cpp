//===- MockCudaDriver.cpp - a stand-in CUDA driver for the runtime's tests ===//
//
// The driver API entry points lib/Runtime/Cuda.cpp loads, over host memory,
// for testing the CUDA runtime on machines without a GPU
// (EMBER_CUDA_DRIVER=<this library>; test/python/test_cuda_runtime.py).
// Memory calls work (device memory is host memory), modules must be PTX
// with an entry, and launches are recorded, not run: kernels need a GPU.
// mock_cuda_log() returns what happened, one call per line.
// EMBER_MOCK_CUDA_FAIL=<function> makes that function fail with
// CUDA_ERROR_LAUNCH_FAILED (719); EMBER_MOCK_CUDA_DEVICES sets the count.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {
std::mutex mutex;
std::string log;
std::map<void *, size_t> live;

struct Module {
  std::string ptx;
};
struct Function {
  std::string name;
};

void note(const std::string &line) {
  std::lock_guard<std::mutex> lock(mutex);
  log += line + "\n";
}

bool fails(const char *name) {
  const char *f = std::getenv("EMBER_MOCK_CUDA_FAIL");
  return f && std::strcmp(f, name) == 0;
}
} // namespace

#define FAIL_IF_ASKED(NAME)                                                    \
  if (fails(#NAME)) {                                                          \
    note("fail " #NAME);                                                       \
    return 719;                                                                \
  }

extern "C" {
const char *mock_cuda_log() {
  static std::string copy;
  std::lock_guard<std::mutex> lock(mutex);
  copy = log;
  return copy.c_str();
}

void mock_cuda_clear_log() {
  std::lock_guard<std::mutex> lock(mutex);
  log.clear();
}

size_t mock_cuda_live_blocks() {
  std::lock_guard<std::mutex> lock(mutex);
  return live.size();
}

int cuInit(unsigned) {
  FAIL_IF_ASKED(cuInit)
  return 0;
}

int cuGetErrorName(int code, const char **name) {
  switch (code) {
  case 1:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return 0;
  case 2:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return 0;
  case 218:
    *name = "CUDA_ERROR_INVALID_PTX";
    return 0;
  case 719:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    return 0;
  default:
    return 1;
  }
}

int cuDeviceGetCount(int *count) {
  const char *n = std::getenv("EMBER_MOCK_CUDA_DEVICES");
  *count = n ? std::atoi(n) : 1;
  return 0;
}

int cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return 0;
}

int cuDeviceGetName(char *name, int length, int) {
  std::strncpy(name, "Ember mock GPU", length);
  return 0;
}

int cuDevicePrimaryCtxRetain(void **context, int) {
  static int primary;
  *context = &primary;
  return 0;
}

int cuCtxSetCurrent(void *) { return 0; }

int cuStreamCreate(void **stream, unsigned) {
  static int stream0;
  *stream = &stream0;
  note("cuStreamCreate");
  return 0;
}

int cuStreamSynchronize(void *) {
  FAIL_IF_ASKED(cuStreamSynchronize)
  note("cuStreamSynchronize");
  return 0;
}

int cuStreamWaitEvent(void *, void *, unsigned) { return 0; }
int cuEventCreate(void **event, unsigned) {
  *event = new int(0);
  return 0;
}
int cuEventDestroy_v2(void *event) {
  delete static_cast<int *>(event);
  return 0;
}
int cuEventRecord(void *, void *) { return 0; }
int cuEventSynchronize(void *) { return 0; }

int cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
  FAIL_IF_ASKED(cuMemAlloc_v2)
  void *block = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  *p = reinterpret_cast<unsigned long long>(block);
  std::lock_guard<std::mutex> lock(mutex);
  live[block] = bytes;
  log += "cuMemAlloc " + std::to_string(bytes) + "\n";
  return 0;
}

int cuMemFree_v2(unsigned long long p) {
  void *block = reinterpret_cast<void *>(p);
  std::lock_guard<std::mutex> lock(mutex);
  if (!live.erase(block))
    return 1;
  std::free(block);
  log += "cuMemFree\n";
  return 0;
}

int cuMemcpyAsync(unsigned long long dst, unsigned long long src, size_t bytes,
                  void *) {
  std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
              bytes);
  note("cuMemcpyAsync " + std::to_string(bytes));
  return 0;
}

int cuMemsetD32Async(unsigned long long dst, unsigned value, size_t n, void *) {
  auto *p = reinterpret_cast<uint32_t *>(dst);
  for (size_t i = 0; i < n; ++i)
    p[i] = value;
  return 0;
}

int cuMemsetD16Async(unsigned long long dst, unsigned short value, size_t n,
                     void *) {
  auto *p = reinterpret_cast<uint16_t *>(dst);
  for (size_t i = 0; i < n; ++i)
    p[i] = value;
  return 0;
}

int cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                       int *options, void **values) {
  const char *text = static_cast<const char *>(image);
  if (fails("cuModuleLoadDataEx") || !std::strstr(text, ".entry")) {
    for (unsigned i = 0; i < n; ++i)
      if (options[i] == 5) // CU_JIT_ERROR_LOG_BUFFER
        std::strcpy(static_cast<char *>(values[i]), "mock: no .entry in PTX");
    note("fail cuModuleLoadDataEx");
    return 218;
  }
  *module = new Module{text};
  std::string opts;
  for (unsigned i = 0; i < n; ++i)
    if (options[i] == 7) // CU_JIT_OPTIMIZATION_LEVEL
      opts = " O" + std::to_string(reinterpret_cast<intptr_t>(values[i]));
  note("cuModuleLoadDataEx" + opts);
  return 0;
}

int cuModuleGetFunction(void **function, void *module, const char *name) {
  auto *m = static_cast<Module *>(module);
  if (m->ptx.find(std::string(".entry ") + name) == std::string::npos)
    return 1;
  *function = new Function{name};
  note(std::string("cuModuleGetFunction ") + name);
  return 0;
}

int cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  note("cuModuleUnload");
  return 0;
}

int cuFuncSetAttribute(void *, int attribute, int value) {
  note("cuFuncSetAttribute " + std::to_string(attribute) + " " +
       std::to_string(value));
  return 0;
}

int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned smem, void *,
                   void **, void **) {
  FAIL_IF_ASKED(cuLaunchKernel)
  note("cuLaunchKernel " + static_cast<Function *>(function)->name + " grid " +
       std::to_string(gx) + "," + std::to_string(gy) + "," +
       std::to_string(gz) + " block " + std::to_string(bx) + "," +
       std::to_string(by) + "," + std::to_string(bz) + " smem " +
       std::to_string(smem));
  return 0;
}

int cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *,
                           const uint64_t *dims, const uint64_t *strides,
                           const unsigned *box, const unsigned *, int,
                           int swizzle, int, int) {
  std::string line =
      "cuTensorMapEncodeTiled dtype " + std::to_string(dtype) + " dims";
  for (unsigned i = 0; i < rank; ++i)
    line += " " + std::to_string(dims[i]);
  line += " strides";
  for (unsigned i = 0; i + 1 < rank; ++i)
    line += " " + std::to_string(strides[i]);
  line += " box";
  for (unsigned i = 0; i < rank; ++i)
    line += " " + std::to_string(box[i]);
  line += " swizzle " + std::to_string(swizzle);
  std::memset(map, 0xab, 128);
  note(line);
  return 0;
}

int cuLaunchKernelEx(const void *, void *, void **, void **) {
  note("cuLaunchKernelEx");
  return 0;
}
} // extern "C"
