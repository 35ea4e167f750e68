// Parses an ember module, runs the ember CPU pipeline and prints the result.
#include "ember/IR/EmberDialect.h"
#include "ember/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

int main() {
  mlir::DialectRegistry registry;
  mlir::ember::registerEmberDialects(registry);
  mlir::MLIRContext ctx(registry);
  const char *src = R"mlir(
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = ember.tanh %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    })mlir";
  auto module = mlir::parseSourceString<mlir::ModuleOp>(src, &ctx);
  if (!module)
    return 1;
  mlir::PassManager pm(&ctx);
  mlir::ember::buildCpuPipeline(pm);
  if (mlir::failed(pm.run(*module)))
    return 2;
  llvm::outs() << "consumer: lowered to LLVM dialect, "
               << (module->lookupSymbol("main") ? "main present"
                                                : "main missing")
               << "\n";
  return 0;
}
