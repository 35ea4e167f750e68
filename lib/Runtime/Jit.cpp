//===- Jit.cpp - JIT compilation for the host CPU -------------------------===//
#include "ember-c/Runtime.h"

#include "RuntimeEntries.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {
std::mutex symbolsMutex;
std::vector<std::pair<std::string, void *>> &extraSymbols() {
  static auto *v = new std::vector<std::pair<std::string, void *>>;
  return *v;
}
} // namespace

void emberRuntimeRegisterSymbol(MlirStringRef name, void *address) {
  std::lock_guard<std::mutex> lock(symbolsMutex);
  std::string n(name.data, name.length);
  for (auto &kv : extraSymbols())
    if (kv.first == n) {
      kv.second = address;
      return;
    }
  extraSymbols().emplace_back(n, address);
}

struct EmberExecutable {
  std::unique_ptr<mlir::ExecutionEngine> engine;
};

static void report(void (*onError)(MlirStringRef, void *), void *userData,
                   const std::string &msg) {
  if (onError)
    onError(mlirStringRefCreate(msg.data(), msg.size()), userData);
}

EmberExecutable *emberExecutableCreate(MlirModule module, int optLevel,
                                       void (*onError)(MlirStringRef, void *),
                                       void *userData) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    return true;
  }();
  (void)initialized;
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    report(onError, userData, llvm::toString(builder.takeError()));
    return nullptr;
  }
  auto level = optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : optLevel == 2 ? llvm::CodeGenOptLevel::Default
               : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                               : llvm::CodeGenOptLevel::None;
  builder->setCodeGenOptLevel(level);
  // Contract a*b+c into fused multiply-adds where the CPU has them, as XLA's
  // CPU backend does (results then match JAX's bit for bit more often).
  builder->getOptions().AllowFPOpFusion = llvm::FPOpFusion::Fast;
  auto tm = builder->createTargetMachine();
  if (!tm) {
    report(onError, userData, llvm::toString(tm.takeError()));
    return nullptr;
  }
  llvm::TargetMachine *machine = tm->get();
  std::string cpu = machine->getTargetCPU().str();
  std::string features = machine->getTargetFeatureString().str();
  auto optimize =
      mlir::makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, machine);
  // Functions carry the host CPU and features so that the optimizer's cost
  // model (vectorization above all) targets this machine.
  auto transformer = [&](llvm::Module *m) -> llvm::Error {
    for (llvm::Function &f : *m) {
      if (f.isDeclaration())
        continue;
      f.addFnAttr("target-cpu", cpu);
      f.addFnAttr("target-features", features);
    }
    return optimize(m);
  };
  mlir::ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = level;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  auto engine =
      mlir::ExecutionEngine::create(unwrap(module), options, std::move(*tm));
  if (!engine) {
    report(onError, userData, llvm::toString(engine.takeError()));
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(symbolsMutex);
    (*engine)->registerSymbols([&](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap map;
      auto bind = [&](const char *name, void *fn) {
        map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                               llvm::JITSymbolFlags::Exported};
      };
      // Every entry point and libc alias of Runtime.def; hooks come from
      // the embedder (extraSymbols).
#define EMBER_RUNTIME_ENTRY(NAME, PARAMS)                                      \
  bind(#NAME, (void *)&ember::runtime::params::NAME);
#define EMBER_RUNTIME_ALIAS(LIBC, NAME) bind(#LIBC, (void *)&NAME);
#include "ember/Runtime/Runtime.def"
      for (auto &[n, addr] : extraSymbols())
        map[interner(n)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                            llvm::JITSymbolFlags::Exported};
      return map;
    });
  }
  auto *exe = new EmberExecutable;
  exe->engine = std::move(*engine);
  return exe;
}

void *emberExecutableLookupPacked(EmberExecutable *exe, MlirStringRef name) {
  auto fn = exe->engine->lookupPacked(unwrap(name));
  if (!fn) {
    llvm::consumeError(fn.takeError());
    return nullptr;
  }
  return reinterpret_cast<void *>(*fn);
}

void emberExecutableDestroy(EmberExecutable *exe) { delete exe; }
