//===- Jit.cpp - JIT compilation for the host CPU -------------------------===//
#include "ember-c/Runtime.h"

#include "RuntimeEntries.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

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

/// Compiled code: an MLIR ExecutionEngine (compiled here), or an ORC LLJIT
/// holding object code loaded from the persistent cache.
struct EmberExecutable {
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::unique_ptr<llvm::orc::LLJIT> loaded;
};

/// Every entry point and libc alias of Runtime.def, and the embedder's hooks
/// (extraSymbols), for the JIT's symbol table.
static llvm::orc::SymbolMap
runtimeSymbols(llvm::orc::MangleAndInterner &interner) {
  std::lock_guard<std::mutex> lock(symbolsMutex);
  llvm::orc::SymbolMap map;
  auto bind = [&](const char *name, void *fn) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                           llvm::JITSymbolFlags::Exported};
  };
#define EMBER_RUNTIME_ENTRY(NAME, PARAMS)                                      \
  bind(#NAME, (void *)&ember::runtime::params::NAME);
#define EMBER_RUNTIME_ALIAS(LIBC, NAME) bind(#LIBC, (void *)&NAME);
#include "ember/Runtime/Runtime.def"
  for (auto &[n, addr] : extraSymbols())
    map[interner(n)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                        llvm::JITSymbolFlags::Exported};
  return map;
}

static void initializeNativeTarget() {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    return true;
  }();
  (void)initialized;
}

static void report(void (*onError)(MlirStringRef, void *), void *userData,
                   const std::string &msg) {
  if (onError)
    onError(mlirStringRefCreate(msg.data(), msg.size()), userData);
}

/// The callable entry points of a module lowered by Ember are the packed
/// wrappers ExecutionEngine generates for C-interface functions
/// (`_mlir__mlir_ciface_<name>`). Every other defined function gets internal
/// linkage, so that the optimizer may inline a single-use function into its
/// caller and drop the packed wrappers nobody looks up: otherwise `main`
/// stays a separate function called with hundreds of scalar arguments
/// (unpacked memref descriptors) from two wrappers, and instruction selection
/// of those calls alone took a third of the codegen time of a large program
/// (docs/design.md, "Compile time"). Modules without C-interface functions
/// (embedders compiling their own) are left as they are.
static void internalizeNonEntries(llvm::Module &m) {
  auto isEntry = [](const llvm::Function &f) {
    return f.getName().starts_with("_mlir__mlir_ciface_");
  };
  if (llvm::none_of(m, [&](const llvm::Function &f) {
        return !f.isDeclaration() && isEntry(f);
      }))
    return;
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && !isEntry(f))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
}

/// LLVM's default module pipeline at `optLevel` (as clang -O<n>). With
/// EMBER_LLVM_TIME_PASSES set, the time of each optimizer pass is printed to
/// stderr after each compile (code generation's passes: `mlir-runner
/// --time-passes` on the dumped LLVM dialect, docs/design.md).
static void optimize(llvm::Module &m, llvm::TargetMachine *machine,
                     int optLevel) {
  static const bool timePasses = [] {
    const char *v = std::getenv("EMBER_LLVM_TIME_PASSES");
    if (v && *v && std::strcmp(v, "0") != 0)
      llvm::TimePassesIsEnabled = true;
    return llvm::TimePassesIsEnabled;
  }();
  if (optLevel <= 0)
    return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassInstrumentationCallbacks pic;
  llvm::StandardInstrumentations si(m.getContext(), /*DebugLogging=*/false);
  si.registerCallbacks(pic, &mam);
  llvm::PipelineTuningOptions tuning;
  llvm::PassBuilder pb(machine, tuning, std::nullopt, &pic);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  pb.buildPerModuleDefaultPipeline(level).run(m, mam);
  if (timePasses)
    si.getTimePasses().print();
}

static EmberExecutable *create(MlirModule module, int optLevel, bool keepObject,
                               void (*onError)(MlirStringRef, void *),
                               void *userData) {
  initializeNativeTarget();
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
  // Functions carry the host CPU and features so that the optimizer's cost
  // model (vectorization above all) targets this machine.
  auto transformer = [cpu, features, machine,
                      optLevel](llvm::Module *m) -> llvm::Error {
    for (llvm::Function &f : *m) {
      if (f.isDeclaration())
        continue;
      f.addFnAttr("target-cpu", cpu);
      f.addFnAttr("target-features", features);
    }
    internalizeNonEntries(*m);
    optimize(*m, machine, optLevel);
    return llvm::Error::success();
  };
  mlir::ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = level;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  options.enableObjectDump = keepObject;
  auto engine =
      mlir::ExecutionEngine::create(unwrap(module), options, std::move(*tm));
  if (!engine) {
    report(onError, userData, llvm::toString(engine.takeError()));
    return nullptr;
  }
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    return runtimeSymbols(interner);
  });
  auto *exe = new EmberExecutable;
  exe->engine = std::move(*engine);
  return exe;
}

EmberExecutable *emberExecutableCreate(MlirModule module, int optLevel,
                                       void (*onError)(MlirStringRef, void *),
                                       void *userData) {
  return create(module, optLevel, /*keepObject=*/false, onError, userData);
}

EmberExecutable *
emberExecutableCreateKeepingObject(MlirModule module, int optLevel,
                                   void (*onError)(MlirStringRef, void *),
                                   void *userData) {
  return create(module, optLevel, /*keepObject=*/true, onError, userData);
}

bool emberExecutableWriteObject(EmberExecutable *exe, MlirStringRef path) {
  if (!exe->engine)
    return false;
  exe->engine->dumpToObjectFile(unwrap(path));
  return true;
}

EmberExecutable *emberExecutableLoadObject(const void *data, size_t size,
                                           void (*onError)(MlirStringRef,
                                                           void *),
                                           void *userData) {
  initializeNativeTarget();
  auto fail = [&](llvm::Error e) -> EmberExecutable * {
    report(onError, userData, llvm::toString(std::move(e)));
    return nullptr;
  };
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return fail(jit.takeError());
  llvm::orc::JITDylib &lib = (*jit)->getMainJITDylib();
  // libc and libm from the process, the runtime's entry points by address.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return fail(process.takeError());
  lib.addGenerator(std::move(*process));
  llvm::orc::MangleAndInterner interner(lib.getExecutionSession(),
                                        (*jit)->getDataLayout());
  if (auto e = lib.define(llvm::orc::absoluteSymbols(runtimeSymbols(interner))))
    return fail(std::move(e));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(static_cast<const char *>(data), size), "ember-cached");
  if (auto e = (*jit)->addObjectFile(std::move(buffer)))
    return fail(std::move(e));
  auto *exe = new EmberExecutable;
  exe->loaded = std::move(*jit);
  return exe;
}

MlirStringRef emberRuntimeHostCpu(void) {
  static const std::string text = [] {
    std::vector<std::string> on;
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      if (f.getValue())
        on.push_back(f.getKey().str());
    std::sort(on.begin(), on.end());
    std::string out = llvm::sys::getHostCPUName().str();
    for (const std::string &f : on)
      out += "," + f;
    return out;
  }();
  return mlirStringRefCreate(text.data(), text.size());
}

void *emberExecutableLookupPacked(EmberExecutable *exe, MlirStringRef name) {
  if (exe->loaded) {
    // The packed wrapper ExecutionEngine generated: "_mlir_" + name.
    auto addr = exe->loaded->lookup(("_mlir_" + unwrap(name)).str());
    if (!addr) {
      llvm::consumeError(addr.takeError());
      return nullptr;
    }
    return addr->toPtr<void *>();
  }
  auto fn = exe->engine->lookupPacked(unwrap(name));
  if (!fn) {
    llvm::consumeError(fn.takeError());
    return nullptr;
  }
  return reinterpret_cast<void *>(*fn);
}

void emberExecutableDestroy(EmberExecutable *exe) { delete exe; }
