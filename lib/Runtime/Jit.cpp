//===- Jit.cpp - JIT compilation for the host CPU -------------------------===//
#include "ember-c/Runtime.h"

#include "RuntimeEntries.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/SmallVectorMemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
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

void *ember::runtime::registeredSymbol(const char *name) {
  std::lock_guard<std::mutex> lock(symbolsMutex);
  for (auto &kv : extraSymbols())
    if (kv.first == name)
      return kv.second;
  return nullptr;
}

/// Compiled code: object files linked by an ORC LLJIT, and their image
/// (emberExecutableWriteObject's bytes) when asked to keep it.
struct EmberExecutable {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string image;
  void (*fini)(void **) = nullptr;

  /// Runs the module's initializers, if any (initializersToEntryPoints).
  void initialize() {
    auto init = jit->lookup("_mlir__mlir_ciface_ember_init");
    if (!init) {
      llvm::consumeError(init.takeError());
      return;
    }
    auto done = jit->lookup("_mlir__mlir_ciface_ember_fini");
    if (done)
      fini = done->toPtr<void (*)(void **)>();
    else
      llvm::consumeError(done.takeError());
    init->toPtr<void (*)(void **)>()(nullptr);
  }

  ~EmberExecutable() {
    if (fini)
      fini(nullptr);
  }
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
  using Target =
      std::pair<llvm::orc::SymbolMap *, llvm::orc::MangleAndInterner *>;
  Target target{&map, &interner};
  auto bindInto = [](const char *name, void *fn, void *user) {
    auto [m, in] = *static_cast<Target *>(user);
    (*m)[(*in)(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                         llvm::JITSymbolFlags::Exported};
  };
  ember::runtime::bindCudaEntries(bindInto, &target);
  ember::runtime::bindDeviceMpiEntries(bindInto, &target);
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

/// Global constructors and destructors (a gpu.binary's module loads and
/// unloads) become the entry points `ember_init` and `ember_fini`, which
/// the executable calls after linking and before it is destroyed: the JIT
/// links object files itself and runs no initializers. Returns whether the
/// module had any.
static bool initializersToEntryPoints(llvm::Module &m) {
  bool any = false;
  for (auto [global, name] :
       {std::pair{"llvm.global_ctors", "_mlir__mlir_ciface_ember_init"},
        std::pair{"llvm.global_dtors", "_mlir__mlir_ciface_ember_fini"}}) {
    llvm::GlobalVariable *table = m.getNamedGlobal(global);
    if (!table)
      continue;
    any = true;
    // {priority, function, data} entries, run in priority order (ties in
    // table order); destructors in the reverse order.
    std::vector<std::pair<uint64_t, llvm::Function *>> calls;
    if (auto *entries = llvm::dyn_cast_or_null<llvm::ConstantArray>(
            table->getInitializer()))
      for (llvm::Value *op : entries->operands()) {
        auto *entry = llvm::cast<llvm::ConstantStruct>(op);
        auto *priority = llvm::cast<llvm::ConstantInt>(entry->getOperand(0));
        if (auto *fn = llvm::dyn_cast<llvm::Function>(entry->getOperand(1)))
          calls.emplace_back(priority->getZExtValue(), fn);
      }
    std::stable_sort(calls.begin(), calls.end(),
                     [](auto &a, auto &b) { return a.first < b.first; });
    if (llvm::StringRef(global) == "llvm.global_dtors")
      std::reverse(calls.begin(), calls.end());
    table->eraseFromParent();
    llvm::LLVMContext &ctx = m.getContext();
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                         {llvm::PointerType::get(ctx, 0)},
                                         /*isVarArg=*/false);
    auto *entry = llvm::Function::Create(
        type, llvm::GlobalValue::ExternalLinkage, name, m);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
    for (auto &[priority, fn] : calls)
      b.CreateCall(fn);
    b.CreateRetVoid();
  }
  return any;
}

/// The callable entry points of a module: for each function that callers
/// look up, `_mlir_<name>(void **args)` loads the arguments from `args`,
/// calls it and stores its result through `args[n]` (MLIR's ExecutionEngine
/// convention, which embedders and Python use). Modules lowered by Ember
/// expose their C-interface functions (`_mlir_ciface_<name>`) only; other
/// modules every function defined outside.
static void addPackedEntryPoints(llvm::Module &m) {
  auto isCInterface = [](const llvm::Function &f) {
    return !f.isDeclaration() && f.getName().starts_with("_mlir_ciface_");
  };
  bool cInterfaceOnly = llvm::any_of(m, isCInterface);
  std::vector<llvm::Function *> entries;
  for (llvm::Function &f : m)
    if (!f.isDeclaration() && !f.hasLocalLinkage() &&
        (!cInterfaceOnly || isCInterface(f)))
      entries.push_back(&f);
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(ctx);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  for (llvm::Function *f : entries) {
    auto *wrapper = llvm::Function::Create(
        type, llvm::GlobalValue::ExternalLinkage, "_mlir_" + f->getName(), m);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
    llvm::Value *args = wrapper->getArg(0);
    std::vector<llvm::Value *> values;
    for (llvm::Argument &param : f->args()) {
      llvm::Value *slot =
          b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, args, param.getArgNo()));
      values.push_back(b.CreateLoad(param.getType(), slot));
    }
    llvm::Value *result = b.CreateCall(f, values);
    if (!result->getType()->isVoidTy())
      b.CreateStore(result, b.CreateLoad(ptr, b.CreateConstGEP1_64(
                                                  ptr, args, f->arg_size())));
    b.CreateRetVoid();
  }
}

/// The callable entry points of a module lowered by Ember are the packed
/// wrappers of its C-interface functions (`_mlir__mlir_ciface_<name>`).
/// Every other defined function gets internal linkage, so that the optimizer
/// may inline a single-use function into its caller: otherwise `main` stays
/// a separate function called with hundreds of scalar arguments (unpacked
/// memref descriptors), and instruction selection of that call alone took a
/// third of the codegen time of a large program (docs/design.md, "Compile
/// time"). Modules without C-interface functions (embedders compiling their
/// own) are left as they are.
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

/// Moves each alloca of a constant element count outside its function's
/// entry block to the start of the entry block. The translation of a
/// `gpu.launch_func` (MLIR's offloading translation) allocates the kernel's
/// parameter array where the launch is: inside a host loop that took new
/// stack on every iteration (LLVM frees allocas only at the function's
/// return), and a loop of some 30,000 launches overflowed the stack. Sound
/// for the host code of the cuda target, where each such slot serves the
/// calls of one iteration (the driver copies the parameters at the launch),
/// and what Clang does with every fixed-size local.
static void hoistAllocasToEntry(llvm::Module &m) {
  for (llvm::Function &f : m) {
    if (f.isDeclaration())
      continue;
    llvm::BasicBlock &entry = f.getEntryBlock();
    llvm::SmallVector<llvm::AllocaInst *> moved;
    for (llvm::BasicBlock &block : f)
      if (&block != &entry)
        for (llvm::Instruction &inst : block)
          if (auto *alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst))
            if (llvm::isa<llvm::ConstantInt>(alloca->getArraySize()))
              moved.push_back(alloca);
    for (llvm::AllocaInst *alloca : moved)
      alloca->moveBefore(entry.getFirstInsertionPt());
  }
}

static bool timePasses() {
  static const bool enabled = [] {
    const char *v = std::getenv("EMBER_LLVM_TIME_PASSES");
    if (v && *v && std::strcmp(v, "0") != 0)
      llvm::TimePassesIsEnabled = true;
    return llvm::TimePassesIsEnabled;
  }();
  return enabled;
}

/// LLVM's default module pipeline at `optLevel` (as clang -O<n>), or with
/// `light` a few cheap function passes (scalar replacement, CSE, combining,
/// CFG simplification) for glue code. With EMBER_LLVM_TIME_PASSES set, the
/// time of each optimizer pass is printed to stderr after each compile.
static void optimize(llvm::Module &m, llvm::TargetMachine *machine,
                     int optLevel, bool light) {
  bool timing = timePasses();
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
  llvm::ModulePassManager mpm;
  if (light) {
    llvm::cantFail(pb.parsePassPipeline(
        mpm, "function(sroa<modify-cfg>,early-cse,"
             "instcombine<no-verify-fixpoint>,simplifycfg)"));
  } else {
    llvm::OptimizationLevel level = optLevel == 1 ? llvm::OptimizationLevel::O1
                                    : optLevel == 2
                                        ? llvm::OptimizationLevel::O2
                                        : llvm::OptimizationLevel::O3;
    mpm = pb.buildPerModuleDefaultPipeline(level);
  }
  mpm.run(m, mam);
  if (timing)
    si.getTimePasses().print();
}

static llvm::CodeGenOptLevel codeGenLevel(int optLevel) {
  return optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
         : optLevel == 2 ? llvm::CodeGenOptLevel::Default
         : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                         : llvm::CodeGenOptLevel::None;
}

using ObjectFile = std::unique_ptr<llvm::MemoryBuffer>;

/// Optimizes `m` and compiles it to an object file for the host.
static llvm::Expected<ObjectFile>
compileModule(llvm::Module &m, llvm::orc::JITTargetMachineBuilder builder,
              int optLevel, bool glue) {
  // Glue code (no loops) is compiled by the fast instruction selector.
  builder.setCodeGenOptLevel(glue ? llvm::CodeGenOptLevel::None
                                  : codeGenLevel(optLevel));
  auto machine = builder.createTargetMachine();
  if (!machine)
    return machine.takeError();
  m.setDataLayout((*machine)->createDataLayout());
  m.setTargetTriple((*machine)->getTargetTriple());
  optimize(m, machine->get(), optLevel, glue);
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager pm;
  if ((*machine)->addPassesToEmitFile(pm, os, nullptr,
                                      llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the host target cannot emit objects");
  pm.run(m);
  return std::make_unique<llvm::SmallVectorMemoryBuffer>(
      std::move(bytes), "ember-object", /*RequiresNullTerminator=*/false);
}

/// Glue code: a function without loops (the traced program once its loop
/// nests are functions of their own, `ember-outline-repeated-kernels`).
static bool isGlue(const llvm::Function &f) {
  llvm::SmallVector<
      std::pair<const llvm::BasicBlock *, const llvm::BasicBlock *>>
      backEdges;
  llvm::FindFunctionBackedges(f, backEdges);
  return backEdges.empty();
}

/// A program with this many instructions of glue code compiles its glue and
/// its loops apart, on two threads: the glue through a few cheap passes and
/// the fast instruction selector (LLVM's full pipeline spends most of a large
/// program's compile on it, for no measurable run time: design.md, "Compile
/// time"), the loops at `optLevel`. EMBER_SPLIT_GLUE_INSTRUCTIONS overrides
/// it (0 splits every program with glue and loops: how the test suite runs
/// the split on small programs).
static size_t splitGlueInstructions() {
  static const size_t n = [] {
    const char *v = std::getenv("EMBER_SPLIT_GLUE_INSTRUCTIONS");
    return v && *v ? static_cast<size_t>(std::strtoull(v, nullptr, 10))
                   : size_t(2000);
  }();
  return n;
}

/// Which part of a split compile defines each global value (true: glue), or
/// nothing when the module compiles whole. Values referenced from the other
/// part become hidden external symbols.
static std::optional<llvm::DenseMap<const llvm::GlobalValue *, bool>>
partition(llvm::Module &m) {
  llvm::DenseMap<const llvm::GlobalValue *, bool> glue;
  size_t glueSize = 0, loopFunctions = 0;
  for (llvm::Function &f : m) {
    if (f.isDeclaration())
      continue;
    bool g = isGlue(f);
    glue[&f] = g;
    if (g)
      glueSize += f.getInstructionCount();
    else
      ++loopFunctions;
  }
  if (glueSize < splitGlueInstructions() || glueSize == 0 || loopFunctions == 0)
    return std::nullopt;
  // The functions (parts) using a value, through constant expressions.
  auto usersOf = [&](const llvm::GlobalValue &v) {
    llvm::SmallVector<bool, 2> parts;
    llvm::SmallVector<const llvm::User *> work(v.users());
    while (!work.empty()) {
      const llvm::User *u = work.pop_back_val();
      if (auto *inst = llvm::dyn_cast<llvm::Instruction>(u))
        parts.push_back(glue.lookup(inst->getFunction()));
      else if (auto *gv = llvm::dyn_cast<llvm::GlobalValue>(u))
        parts.push_back(glue.count(gv) ? glue.lookup(gv) : false);
      else
        work.append(u->user_begin(), u->user_end());
    }
    return parts;
  };
  // Variables live with their first user (loops when shared).
  for (llvm::GlobalVariable &v : m.globals())
    if (!v.isDeclaration()) {
      auto parts = usersOf(v);
      glue[&v] = !parts.empty() && llvm::all_of(parts, [&](bool p) {
        return p == parts.front();
      }) && parts.front();
    }
  for (auto &[v, isGlue] : glue) {
    auto *value = const_cast<llvm::GlobalValue *>(v);
    if (!value->hasLocalLinkage())
      continue;
    if (llvm::any_of(usersOf(*value), [&](bool p) { return p != isGlue; })) {
      value->setLinkage(llvm::GlobalValue::ExternalLinkage);
      value->setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
  }
  return glue;
}

/// The bytes of emberExecutableWriteObject: one object file as it is, or
/// several after a magic, their count and each one's size.
static const char kObjectsMagic[8] = {'E', 'M', 'B', 'R', 'O', 'B', 'J', 'S'};

static std::string imageOf(const std::vector<ObjectFile> &objects) {
  if (objects.size() == 1)
    return objects.front()->getBuffer().str();
  std::string out(kObjectsMagic, sizeof(kObjectsMagic));
  auto put = [&](uint64_t n) {
    out.append(reinterpret_cast<const char *>(&n), sizeof(n));
  };
  put(objects.size());
  for (const ObjectFile &o : objects) {
    put(o->getBufferSize());
    out += o->getBuffer().str();
  }
  return out;
}

static llvm::Expected<std::vector<llvm::StringRef>>
objectsOfImage(llvm::StringRef image) {
  if (!image.starts_with(llvm::StringRef(kObjectsMagic, sizeof(kObjectsMagic))))
    return std::vector<llvm::StringRef>{image};
  llvm::StringRef rest = image.drop_front(sizeof(kObjectsMagic));
  auto take = [&](uint64_t &n) {
    if (rest.size() < sizeof(n))
      return false;
    std::memcpy(&n, rest.data(), sizeof(n));
    rest = rest.drop_front(sizeof(n));
    return true;
  };
  uint64_t count = 0;
  std::vector<llvm::StringRef> objects;
  if (!take(count))
    return llvm::createStringError("truncated object image");
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t size = 0;
    if (!take(size) || size > rest.size())
      return llvm::createStringError("truncated object image");
    objects.push_back(rest.take_front(size));
    rest = rest.drop_front(size);
  }
  return objects;
}

/// An LLJIT holding `objects`, with libc and libm from the process and the
/// runtime's entry points.
static llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>>
link(std::vector<ObjectFile> objects) {
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return jit.takeError();
  llvm::orc::JITDylib &lib = (*jit)->getMainJITDylib();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  lib.addGenerator(std::move(*process));
  llvm::orc::MangleAndInterner interner(lib.getExecutionSession(),
                                        (*jit)->getDataLayout());
  if (auto e = lib.define(llvm::orc::absoluteSymbols(runtimeSymbols(interner))))
    return std::move(e);
  for (ObjectFile &o : objects)
    if (auto e = (*jit)->addObjectFile(std::move(o)))
      return std::move(e);
  return std::move(*jit);
}

static EmberExecutable *create(MlirModule module, int optLevel, bool keepObject,
                               void (*onError)(MlirStringRef, void *),
                               void *userData) {
  initializeNativeTarget();
  auto fail = [&](llvm::Error e) -> EmberExecutable * {
    report(onError, userData, llvm::toString(std::move(e)));
    return nullptr;
  };
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return fail(builder.takeError());
  // Contract a*b+c into fused multiply-adds where the CPU has them, as XLA's
  // CPU backend does (results then match JAX's bit for bit more often);
  // not in a module marked `ember.fp_contract = false` (a transformation
  // called outside jit, which JAX evaluates op by op: Runtime.h).
  bool contract = true;
  mlir::ModuleOp mod = unwrap(module);
  if (auto flag = mod->getAttrOfType<mlir::BoolAttr>("ember.fp_contract")) {
    contract = flag.getValue();
    mod->removeAttr("ember.fp_contract");
  }
  builder->getOptions().AllowFPOpFusion =
      contract ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
  // (A module of the cuda target: host code around GPU kernels.)
  bool gpuHost = mod->hasAttr("gpu.container_module");
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m =
      mlir::translateModuleToLLVMIR(unwrap(module), *context);
  if (!m)
    return fail(llvm::createStringError(
        "the module could not be translated to LLVM IR"));
  if (gpuHost)
    hoistAllocasToEntry(*m);
  // Functions carry the host CPU and features so that the optimizer's cost
  // model (vectorization above all) targets this machine.
  std::string cpu = builder->getCPU();
  std::string features = builder->getFeatures().getString();
  for (llvm::Function &f : *m) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", cpu);
    f.addFnAttr("target-features", features);
  }
  bool initializers = initializersToEntryPoints(*m);
  addPackedEntryPoints(*m);
  internalizeNonEntries(*m);

  std::vector<ObjectFile> objects;
  auto parts = optLevel > 0 && !initializers ? partition(*m) : std::nullopt;
  if (!parts) {
    auto object = compileModule(*m, *builder, optLevel, /*glue=*/false);
    if (!object)
      return fail(object.takeError());
    objects.push_back(std::move(*object));
  } else {
    // Each part compiles on its own thread, in a context of its own: the
    // module goes through bitcode, and each part drops the other's bodies.
    llvm::SmallVector<char, 0> bitcode;
    {
      llvm::raw_svector_ostream os(bitcode);
      llvm::WriteBitcodeToFile(*m, os);
    }
    llvm::StringSet<> glueNames;
    for (auto &[v, isGlue] : *parts)
      if (isGlue)
        glueNames.insert(v->getName());
    m.reset();
    context.reset();
    std::vector<ObjectFile> compiled(2);
    std::string errors[2];
    auto compilePart = [&](int part) {
      bool glue = part == 0;
      llvm::LLVMContext ctx;
      auto pm = llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()),
                                "ember"),
          ctx);
      if (!pm) {
        errors[part] = llvm::toString(pm.takeError());
        return;
      }
      for (llvm::Function &f : **pm)
        if (!f.isDeclaration() && glueNames.contains(f.getName()) != glue)
          f.deleteBody();
      for (llvm::GlobalVariable &v : (*pm)->globals())
        if (!v.isDeclaration() && glueNames.contains(v.getName()) != glue) {
          v.setInitializer(nullptr);
          v.setLinkage(llvm::GlobalValue::ExternalLinkage);
        }
      auto object = compileModule(**pm, *builder, optLevel, glue);
      if (!object)
        errors[part] = llvm::toString(object.takeError());
      else
        compiled[part] = std::move(*object);
    };
    if (timePasses()) { // one report at a time
      compilePart(0);
      compilePart(1);
    } else {
      std::thread loops(compilePart, 1);
      compilePart(0);
      loops.join();
    }
    for (int part = 0; part < 2; ++part) {
      if (!errors[part].empty())
        return fail(llvm::createStringError(errors[part]));
      objects.push_back(std::move(compiled[part]));
    }
  }
  std::string image = keepObject ? imageOf(objects) : std::string();
  auto jit = link(std::move(objects));
  if (!jit)
    return fail(jit.takeError());
  auto *exe = new EmberExecutable;
  exe->jit = std::move(*jit);
  exe->image = std::move(image);
  if (initializers)
    exe->initialize();
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
  if (exe->image.empty())
    return false;
  std::error_code ec;
  llvm::raw_fd_ostream os(unwrap(path), ec);
  if (ec)
    return false;
  os << exe->image;
  return !os.has_error();
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
  auto parts =
      objectsOfImage(llvm::StringRef(static_cast<const char *>(data), size));
  if (!parts)
    return fail(parts.takeError());
  std::vector<ObjectFile> objects;
  for (llvm::StringRef part : *parts)
    objects.push_back(
        llvm::MemoryBuffer::getMemBufferCopy(part, "ember-cached"));
  auto jit = link(std::move(objects));
  if (!jit)
    return fail(jit.takeError());
  auto *exe = new EmberExecutable;
  exe->jit = std::move(*jit);
  exe->initialize();
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
  auto addr = exe->jit->lookup(("_mlir_" + unwrap(name)).str());
  if (!addr) {
    llvm::consumeError(addr.takeError());
    return nullptr;
  }
  return addr->toPtr<void *>();
}

void emberExecutableDestroy(EmberExecutable *exe) { delete exe; }
