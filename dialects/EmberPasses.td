//===- EmberPasses.td - ember passes ----------------------*- tablegen -*-===//
#ifndef EMBER_PASSES_TD
#define EMBER_PASSES_TD

include "mlir/Pass/PassBase.td"

def EmberToLinalgPass : Pass<"ember-to-linalg", "ModuleOp"> {
  let summary = "Lower ember ops to linalg, tensor, arith, math, complex and scf";
  let description = [{
    Rewrites every `ember` op into upstream dialects on tensors. Unsigned
    integer element types become signless (the signedness picks the arith op),
    also in function signatures.

    Before:
    ```mlir
    %0 = ember.add %a, %b : tensor<4xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<4xf32>
    %0 = linalg.generic {...} ins(%a, %b) outs(%e) {
      ^bb0(%x: f32, %y: f32, %o: f32):
        %s = arith.addf %x, %y : f32
        linalg.yield %s : f32
    } -> tensor<4xf32>
    ```
  }];
  let dependentDialects = [
    "linalg::LinalgDialect", "tensor::TensorDialect", "arith::ArithDialect",
    "math::MathDialect", "scf::SCFDialect", "complex::ComplexDialect",
    "func::FuncDialect", "memref::MemRefDialect", "bufferization::BufferizationDialect"
  ];
  let options = [
    Option<"runtimeGemm", "runtime-gemm", "bool", /*default=*/"true",
           "Lower large f32/f64 dot_general to calls of the runtime's GEMM "
           "entry points (the CPU target); false: every product is a "
           "linalg.generic">,
    Option<"cudaGemm", "cuda-gemm", "bool", /*default=*/"false",
           "Lower large f32/f64/f16/bf16 dot_general to calls of "
           "ember_cuda_gemm, cuBLAS on device buffers (the CUDA target; "
           "excludes runtime-gemm)">,
    Option<"deviceBuffers", "device-buffers", "bool", /*default=*/"false",
           "Runtime calls (host callbacks) get row-major buffers, with no "
           "run-time layout check (the CUDA target: its buffers are device "
           "memory, which host code must not inspect)">,
    Option<"runtimeSort", "runtime-sort", "bool", /*default=*/"true",
           "Lower sort to a call of the runtime's O(n log n) ember_sort_keys "
           "(the CPU target); false: a data-parallel rank sort, O(n^2) per "
           "lane (the CUDA target)">
  ];
}

def EmberOutlineRepeatedKernelsPass
    : Pass<"ember-outline-repeated-kernels", "ModuleOp"> {
  let summary = "Share one function between identical loop nests on buffers";
  let description = [{
    Models repeat themselves: the layers of a network, and their backward
    passes, are the same loop nests on different buffers. After
    bufferization, this pass finds `linalg` ops on buffers (outside loops)
    that are equal up to their operands, moves each such group into one
    private function, marked `noinline` (`passthrough`, which
    `convert-func-to-llvm` keeps), and calls it from every place;
    constants the op uses are cloned into the function. LLVM then optimizes
    and compiles each distinct loop nest once: for a 20-layer MLP's forward
    and backward pass, 3 functions instead of 60 loop nests. An op that
    occurs once stays where it is.

    Before:
    ```mlir
    linalg.generic {...} ins(%a : memref<64x256xf32>) outs(%b : memref<64x256xf32>) {...}
    linalg.generic {...} ins(%c : memref<64x256xf32>) outs(%d : memref<64x256xf32>) {...}
    ```
    After:
    ```mlir
    call @__ember_kernel(%a, %b) : (memref<64x256xf32>, memref<64x256xf32>) -> ()
    call @__ember_kernel(%c, %d) : (memref<64x256xf32>, memref<64x256xf32>) -> ()
    func.func private @__ember_kernel(%x: memref<64x256xf32>, %y: memref<64x256xf32>)
        attributes {passthrough = ["noinline"]} {
      linalg.generic {...} ins(%x : memref<64x256xf32>) outs(%y : memref<64x256xf32>) {...}
      return
    }
    ```
  }];
  let options = [
    Option<"outlineAllAbove", "outline-all-above", "int64_t", /*default=*/"0",
           "In a function with at least this many candidate loop nests, "
           "outline every one, including those that occur once (0: never)">
  ];
  let dependentDialects = ["func::FuncDialect"];
}

def EmberSplitRowsPass : Pass<"ember-split-rows", "ModuleOp"> {
  let summary = "Move large loop nests into functions of the rows of their first loop";
  let description = [{
    A linalg op on buffers whose first loop is parallel and whose iteration
    space has at least `min-elements` points (`min-elements-in-loops` for an
    op inside a loop, such as a scan's body, whose every iteration pays the
    pool's wake-up) becomes a call
    of a private function `(lo, hi, operands...)` marked `ember.rows`, which
    computes the rows [lo, hi) of the first loop on subviews of the operands
    (`linalg.index 0` is shifted by `lo`). The call covers every row, so the
    program means the same; `ember-parallel-calls` later runs the rows on
    the runtime's threads. Ops whose maps use the first loop other than as
    one plain dimension, or with an output that does not depend on it, stay.
    An op with loop ranges known only at run time (a program compiled for
    every size) is split too, its call under an `scf.if` on the iteration
    space reaching the threshold (and at least two rows), the op itself in
    the `else` branch.

    An `scf.for` marked `ember.parallel` (lowered from an `ember.while` with
    `parallel`, spec rule while_c5: a Pallas grid's independent points)
    becomes, the same way, a call of an `ember.rows` function running its
    iterations [lo, hi) on the buffers it uses, when what the loop carries
    is only integer counters (each `arg + constant`: rewritten from the
    iteration number) and it calls no runtime function other than the
    products, sorts and decompositions (a host callback or a run-time stack
    keeps it sequential, as does any other carried value). Linalg ops inside
    such a loop are not split themselves.

    Before:
    ```mlir
    linalg.generic {...} ins(%a : memref<512x512xf32>) outs(%b : memref<512x512xf32>) {...}
    ```
    After:
    ```mlir
    call @__ember_rows(%c0, %c512, %a, %b) : (index, index, memref<512x512xf32>, memref<512x512xf32>) -> ()
    func.func private @__ember_rows(%lo: index, %hi: index, %x: memref<512x512xf32>, %y: memref<512x512xf32>)
        attributes {ember.rows} {
      %n = arith.subi %hi, %lo : index
      %xs = memref.subview %x[%lo, 0] [%n, 512] [1, 1] : ...
      %ys = memref.subview %y[%lo, 0] [%n, 512] [1, 1] : ...
      linalg.generic {...} ins(%xs : ...) outs(%ys : ...) {...}
      return
    }
    ```
  }];
  let options = [
    Option<"minElements", "min-elements", "int64_t", /*default=*/"131072",
           "Smallest iteration space worth splitting over threads">,
    Option<"minElementsInLoops", "min-elements-in-loops", "int64_t",
           /*default=*/"2097152",
           "Smallest iteration space worth splitting inside a loop">
  ];
  let dependentDialects = ["func::FuncDialect", "memref::MemRefDialect",
                           "arith::ArithDialect", "scf::SCFDialect"];
}

def EmberParallelCallsPass : Pass<"ember-parallel-calls", "ModuleOp"> {
  let summary = "Run calls of `ember.rows` functions on the runtime's threads";
  let description = [{
    On the LLVM dialect, after `ember-split-rows` and the conversion: each
    call `@f(lo, hi, args...)` of an `llvm.func` marked `ember.rows` becomes
    a call of the runtime's `ember_parallel_for(@f_task, frame, lo, hi)`,
    where `frame` is a stack slot (in the caller's entry block) holding
    `args`, and the new internal function `@f_task(frame, a, b)` loads them
    and calls `@f(a, b, args...)`. The runtime runs the task on contiguous
    pieces of [lo, hi), one per thread (lib/Runtime/Parallel.cpp).
  }];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

def EmberLowerCopiesPass : Pass<"ember-lower-copies"> {
  let summary = "Rewrite memref.copy into linalg.copy so that it lowers to loops";
  let description = [{
    Bufferization and `buffer-results-to-out-params` produce `memref.copy`,
    which `finalize-memref-to-llvm` turns into a call to the `memrefCopy`
    runtime function whenever a side is strided. Ember's JIT-compiled code
    must not depend on the MLIR runner libraries, so the copies become
    `linalg.copy` and then plain loops that LLVM can vectorize.

    A copy from a fresh buffer (`memref.alloc` in the copy's block, used
    only before the copy or freed after it) into an argument of the
    function's entry block that nothing else uses (an out-parameter) is
    removed instead: the buffer becomes the out-parameter. This is the copy
    `buffer-results-to-out-params` leaves when a function returns what a
    call wrote into a buffer of the caller. A copy between two views of the
    same elements (two equal `memref.subview`s of one buffer, which
    bufferization leaves when a slice of a ref's buffer is updated in place)
    is removed too.

    Before:
    ```mlir
    memref.copy %a, %b : memref<4xf32, strided<[2]>> to memref<4xf32>
    ```
    After:
    ```mlir
    linalg.copy ins(%a : memref<4xf32, strided<[2]>>) outs(%b : memref<4xf32>)
    ```
  }];
  let dependentDialects = ["linalg::LinalgDialect"];
}

def EmberMathApproxPass : Pass<"ember-math-approx"> {
  let summary = "Replace f32 exp/log/tanh/expm1/log1p with inline polynomials";
  let description = [{
    Libm calls block loop vectorization. For the transcendental functions
    models use most (exp, expm1, log, log1p, log2, tanh) on f32, this pass
    applies MLIR's polynomial approximations (a few ulp of error), so that
    elementwise loops become straight-line arithmetic LLVM can vectorize.
    Other functions and other precisions keep their libm calls.

    Before:
    ```mlir
    %y = math.tanh %x : f32
    ```
    After: arithmetic on %x only (clamp, rational polynomial), no call.
  }];
  let dependentDialects = ["arith::ArithDialect", "math::MathDialect"];
}

def EmberArithExpandPass : Pass<"ember-arith-expand"> {
  let summary = "Expand the arith ops LLVM lowering lacks, keeping float min/max";
  let description = [{
    Upstream `arith-expand` also rewrites `arith.maximumf`/`minimumf` (and
    `maxnumf`/`minnumf`) into compare-and-select chains. In a reduction loop
    that chain hides the min/max from LLVM's loop vectorizer, which does
    vectorize the `llvm.maximum`/`llvm.minimum` intrinsics that
    `convert-arith-to-llvm` produces (a NaN-propagating max over 10M f32 went
    from 23 ms to a memory-bound loop). This pass applies the other upstream
    expansions only: ceil/floor division and bf16 extension/truncation.

    Before:
    ```mlir
    %q = arith.ceildivsi %a, %b : i32
    %m = arith.maximumf %x, %y : f32
    ```
    After: `%q` is computed with divsi/cmpi/select; `%m` is unchanged.
  }];
  let dependentDialects = ["arith::ArithDialect"];
}

def EmberNarrowFloatsPass : Pass<"ember-narrow-floats", "ModuleOp"> {
  let summary = "Compute on 8- and 4-bit floats in f32, and convert them with integer ops";
  let description = [{
    LLVM has no 8- or 4-bit float types (the LLVM type converter stores them
    as integers of their width). This pass leaves no arith op on them but
    bit casts and selects:

    - every other arith op on them (add, compare, max, int/float
      conversions, ...) computes in f32 and rounds back once (upstream
      `arith-emulate-unsupported-floats`'s patterns; exact for a single
      IEEE operation, as XLA:CPU computes them);
    - a constant becomes an integer constant of its bits and a bit cast;
    - an extension to f32 reads a table of the type's values
      (`memref.global` with one f32 per bit pattern, computed by
      `llvm::APFloat`);
    - a truncation from f32 rounds to nearest, ties to even, with integer
      and f32 ops: the f32 quantum of the result's binade (the type's
      smallest one below its normal range), `math.roundeven` of the
      quotient, then the type's own encoding; overflow gives infinity, NaN
      (types without infinities) or the largest value (types without
      NaN), as XLA converts. Other float types convert through f32.

    Before:
    ```mlir
    %y = arith.addf %a, %b : f8E4M3FN
    ```
    After:
    ```mlir
    %ab = arith.bitcast %a : f8E4M3FN to i8
    %ai = arith.index_cast ...           // the table's index
    %af = memref.load %table[%ai] : memref<256xf32>
    ...                                   // the same for %b
    %s = arith.addf %af, %bf : f32
    ...                                   // rounding to the type's bits
    %y = arith.bitcast %bits : i8 to f8E4M3FN
    ```
  }];
  let dependentDialects = ["arith::ArithDialect", "math::MathDialect",
                           "memref::MemRefDialect"];
}

def EmberWidenNarrowIntsPass : Pass<"ember-widen-narrow-ints", "ModuleOp"> {
  let summary = "Compute ember ops on 2- and 4-bit integers in 8-bit ones";
  let description = [{
    As XLA's CPU compiler does (S4 to S8): every ember op (without regions)
    with an operand or result of 2- or 4-bit integers (`i2`, `i4`, `ui2`,
    `ui4`; ml_dtypes' int2/int4/uint2/uint4) is rebuilt on 8-bit integers of
    the same signedness, its narrow operands converted up (sign- or
    zero-extended) and its narrow results converted back (wrapping), so
    each op wraps as the narrow type would. Constants are rebuilt with their
    values extended. What is left on the narrow types are conversions and
    the ops that only carry values (function arguments and results, loops,
    branches, refs' ops), which `ember-to-linalg` stores as bytes (the value
    in the low bits, as ml_dtypes keeps it).

    Before:
    ```mlir
    %0 = ember.add %a, %b : tensor<4xi4>
    ```
    After:
    ```mlir
    %0 = ember.convert %a : (tensor<4xi4>) -> tensor<4xi8>
    %1 = ember.convert %b : (tensor<4xi4>) -> tensor<4xi8>
    %2 = ember.add %0, %1 : tensor<4xi8>
    %3 = ember.convert %2 : (tensor<4xi8>) -> tensor<4xi4>
    ```
  }];
  let dependentDialects = ["::mlir::ember::EmberDialect"];
}

def EmberWidenBoolBuffersPass : Pass<"ember-widen-bool-buffers", "ModuleOp"> {
  let summary = "Give memrefs of i1 an i8 element type (stores extend, loads truncate)";
  let description = [{
    MLIR 22's `finalize-memref-to-llvm` cannot load or store i1 elements, yet
    the ownership-based deallocation pipeline creates `memref<?xi1>` buffers
    for ownership flags known only at run time (results of `scf.if`
    from `ember.case`, or of loops). This pass rewrites every memref of i1 to
    one of i8: `memref.store` zero-extends, `memref.load` truncates, and other
    ops, function signatures and calls take the converted types.

    Before:
    ```mlir
    %m = memref.alloc() : memref<2xi1>
    memref.store %b, %m[%i] : memref<2xi1>
    ```
    After:
    ```mlir
    %m = memref.alloc() : memref<2xi8>
    %e = arith.extui %b : i1 to i8
    memref.store %e, %m[%i] : memref<2xi8>
    ```
  }];
  let dependentDialects = ["arith::ArithDialect", "memref::MemRefDialect"];
}

def EmberExpandTransformsPass : Pass<"ember-expand-transforms", "ModuleOp"> {
  let summary = "Expand every transformation op (jvp, vjp, vmap, custom rules) to a fixed point";
  let description = [{
    Expands `ember.jvp`, `ember.vjp` (as `ember-autodiff` does) and
    `ember.vmap` (as `ember-batch` does), innermost first, alternating until
    none is left, so transformations nest to any depth (`grad` of `vmap` of
    `grad` ...). An op whose function can never become free of
    transformation ops (a function that transforms itself) is an error.
    Then the calls of custom rules that nothing differentiates any more
    (`ember.custom_jvp_call`, `ember.custom_vjp_call`) are inlined, as
    `ember-inline-custom` does. This is the first pass of `ember-transforms`.

    Before:
    ```mlir
    func.func private @g(%x: tensor<f32>) -> tensor<f32> {
      %y, %dx = ember.vjp @f(%x) cotangents(%one) wrt [0] : ...
      return %dx : tensor<f32>
    }
    %r = ember.vmap @g(%xs) batched [true] size 8 : ...
    ```
    After: the batched adjoint code of `@f`, inlined; no transformation op
    and no custom-rule call is left.

    With `keep-kernel-calls`, calls of Pallas kernels' interpreters that
    carry the kernel recorded for the TPU target stay calls (of their
    batched clones, whose recorded kernels ember-batch batches as JAX's
    pallas_call batching rule does), so the TPU target can still emit each
    kernel as a Mosaic custom call. ember-autodiff keeps them too: the
    kernels of a custom_vjp's fwd and bwd, and those off the differentiated
    path, stay calls; one on the differentiated path is an error (a kernel
    has no derivative rule; JAX's Pallas TPU kernels are differentiated
    through a custom_vjp).
  }];
  let options = [
    Option<"keepKernelCalls", "keep-kernel-calls", "bool", /*default=*/"false",
           "Keep calls of functions that carry a recorded TPU kernel "
           "(ember_tpu.kernel_module) instead of inlining them">,
    Option<"keepDeviceVmaps", "keep-device-vmaps", "bool", /*default=*/"false",
           "Keep the vmaps whose lanes are devices (shard_map, pmap: "
           "`ember.device_axis`) for StableHLO out, which writes them as "
           "manual computations; those a transformation of their function "
           "waits for are expanded after all">,
  ];
  let dependentDialects = ["func::FuncDialect"];
}

def EmberAutodiffPass : Pass<"ember-autodiff", "ModuleOp"> {
  let summary = "Expand ember.jvp and ember.vjp into plain ember IR";
  let description = [{
    Replaces each transformation op, innermost first, by the body of a derived
    function, inlined at the op. `ember.jvp @f` becomes `@f_jvp` that computes `f` and
    propagates tangents op by op with each op's JVP rule. `ember.vjp @f`
    becomes `@f_vjp`: the JVP code of `f` is built with symbolic tangent
    seeds, the ops that depend on the seeds (the linear part) are transposed
    in reverse order with each op's transpose rule, and the linear forward ops
    are erased, so the result holds the primal computation followed by the
    adjoint. Calls inside the differentiated function are inlined first, so
    nested transformations (grad of grad) are repeated applications.

    Before:
    ```mlir
    %y, %g = ember.vjp @f(%x) cotangents(%one) wrt [0] : ...
    ```
    After: the ops of `f` on `%x`, then the adjoint ops; `%y` and `%g` are
    their results. Follow with `symbol-dce` (the differentiated private
    functions are no longer used), `canonicalize` and `cse` for compact code
    (the CPU pipeline does).
  }];
  let dependentDialects = ["func::FuncDialect"];
}

def EmberBatchPass : Pass<"ember-batch", "ModuleOp"> {
  let summary = "Expand ember.vmap into batched ember IR";
  let description = [{
    Replaces each `ember.vmap @f` whose callee contains no other
    transformation (innermost first) by the batched body of `f`, inlined at
    the op. Values that depend on a batched input carry the batch dimension
    first; each op is rewritten by its batching rule (BatchableOpInterface):
    elementwise ops broadcast their unbatched operands, dot_general gains a
    batch dimension, dynamic slices with batched indices become gathers, so
    the result has no loops. Transformations of other kinds that wait on a
    vmap are left for `ember-autodiff`; `ember-expand-transforms` alternates the two.

    Before:
    ```mlir
    %y = ember.vmap @f(%xs) batched [true] size 8 : (tensor<8x3xf32>) -> tensor<8xf32>
    ```
    After: the ops of `f` on `tensor<8x3xf32>` values.
  }];
  let dependentDialects = ["func::FuncDialect"];
}

def EmberHoistScanInputsPass : Pass<"ember-hoist-scan-inputs", "ModuleOp"> {
  let summary = "Compute a counted loop's per-row work on outer arrays before the loop";
  let description = [{
    In an `ember.while` with a `trip_count` n, finds the rows the body reads
    from arrays defined outside the loop (`ember.dynamic_slice` of a whole row
    at `+-i + c` for a counter `i` that starts at a constant and grows by one)
    and the pure ops that depend only on those rows and on values from outside.
    When that work contains an `ember.dot_general`, it is outlined into a new
    function, applied to all n rows at once before the loop with `ember.vmap`
    (expanded by `ember-expand-transforms` in `ember-optimize`: n small GEMMs become one large one), and the
    loop reads its row of the results. Results are kept only up to 256 MiB per
    loop; rows read out of bounds (clamped) stay in the loop.

    Before (a scan step reading row %i of %xs):
    ```mlir
    %x = ember.dynamic_slice %xs[%i, %z, %z], sizes = [1, 32, 64] : ...
    %x2 = ember.reshape %x : (tensor<1x32x64xf32>) -> tensor<32x64xf32>
    %u = ember.dot_general %x2, %w, ... -> tensor<32x256xf32>
    ```
    After: `%all = ember.vmap @scan_inputs(%xs, %w) batched [true, false]
    size 100` before the loop, and `%u` is row `%i` of `%all` in it.
  }];
  let dependentDialects = ["func::FuncDialect"];
}

def EmberInlineCustomPass : Pass<"ember-inline-custom", "ModuleOp"> {
  let summary = "Inline the functions of custom-derivative calls after differentiation";
  let description = [{
    Once every transformation is expanded, `ember.custom_jvp_call` and
    `ember.custom_vjp_call` are plain calls of their callee: this pass inlines
    it. A remaining `ember.custom_linear` means forward-mode differentiation of
    a custom_vjp function, which has no rule: it is reported as an error.

    Before:
    ```mlir
    %y = ember.custom_jvp_call @f jvp @f_jvp(%x) segments [1, 0, 0] : ...
    ```
    After: the ops of `@f` applied to `%x`.
  }];
  let dependentDialects = ["func::FuncDialect"];
}

def EmberDropOptimizationBarriersPass : Pass<"ember-drop-optimization-barriers"> {
  let summary = "Replace ember.optimization_barrier by its operands";
  let description = [{
    `ember.optimization_barrier` keeps CSE and fusion from merging a
    computation with the same computation on the barrier's operands (the
    recomputation of a checkpointed function with its forward pass). The CPU
    pipeline keeps it through `ember-to-linalg` and the last CSE and runs this
    pass right before bufferization, which has nothing to merge.

    Before:
    ```mlir
    %y = ember.optimization_barrier %x : tensor<3xf32>
    %z = linalg.generic ... ins(%y ...)
    ```
    After: `%z = linalg.generic ... ins(%x ...)`.
  }];
}

def EmberScalarizeLoopCountersPass : Pass<"ember-scalarize-loop-counters", "ModuleOp"> {
  let summary = "Carry a loop's integer counters as scalars, and fold extracts of host-computable tensors";
  let description = [{
    On linalg on tensors. An `scf.for` carrying a rank-0 integer tensor whose
    start and next value are computable without reading a buffer (arith
    constants, `tensor.from_elements`, rank-0 `linalg.generic` ops of arith
    ops on such values) carries the scalar instead: the loop's counters
    (`lax.scan`'s index, autodiff's iteration count) stay in registers on
    the CPU and on the host for a GPU, where each would otherwise be a device
    buffer read back every iteration. The tensor is rebuilt with
    `tensor.from_elements` for other uses. Then every `tensor.extract` of a
    rank-0 integer tensor computable that way becomes the scalar computation.

    Before:
    ```mlir
    %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%k = %cst) -> (tensor<i32>) {
      %x = tensor.extract %k[] : tensor<i32>
      %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = []}
          ins(%k, %one : tensor<i32>, tensor<i32>) outs(%e : tensor<i32>) {...addi...}
      scf.yield %n : tensor<i32>
    }
    ```
    After: `iter_args(%k = %c0_i32) -> (i32)`, `%x` is `%k`, and the loop
    yields `arith.addi %k, %c1_i32`.
  }];
  let dependentDialects = ["arith::ArithDialect", "tensor::TensorDialect"];
}

def EmberUniqueResultsPass : Pass<"ember-unique-results", "ModuleOp"> {
  let summary = "Give every result of a public function its own tensor";
  let description = [{
    A function may return the same value at several positions (after CSE, or
    by construction). Each result becomes a caller-provided buffer later
    (`buffer-results-to-out-params`), which does not handle a buffer returned
    twice. This pass copies every repeated tensor result (and every returned
    argument after its first use as a result) into a fresh tensor with
    `linalg.copy`, so each result has its own buffer.

    Before:
    ```mlir
    return %0, %0 : tensor<3xf32>, tensor<3xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<3xf32>
    %1 = linalg.copy ins(%0 : tensor<3xf32>) outs(%e : tensor<3xf32>) -> tensor<3xf32>
    return %0, %1 : tensor<3xf32>, tensor<3xf32>
    ```
  }];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect"];
}


def EmberPrivatizeParallelLoopsPass
    : Pass<"ember-privatize-parallel-loops", "ModuleOp"> {
  let summary = "Give each iteration of a parallel loop its own undefined tensors";
  let description = [{
    Runs just before one-shot bufferization. Loop-invariant code motion
    moves `tensor.empty` (and `bufferization.alloc_tensor` without a copy)
    out of loops; bufferization then gives such a tensor one buffer that
    every iteration overwrites, which is right for a sequential loop (no
    iteration reads what another left in an undefined tensor) but a race
    when the iterations run at the same time. Inside each `scf.for` marked
    `ember.parallel` (a parallel `ember.while`, spec rule while_c5, which
    `ember-split-rows` runs on the threads), every use of such a tensor
    defined outside the loop gets its own clone, placed just before the
    user.

    Before:
    ```mlir
    %e = tensor.empty() : tensor<128xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      %y = linalg.generic ... outs(%e : tensor<128xf32>) ...
    } {ember.parallel}
    ```
    After: `%e` is cloned inside the loop, just before the generic.
  }];
  let dependentDialects = ["tensor::TensorDialect"];
}

def EmberAvoidBufferCopiesPass
    : Pass<"ember-avoid-buffer-copies", "ModuleOp"> {
  let summary = "Reorder and duplicate cheap tensor ops so that bufferization copies less";
  let description = [{
    Runs just before one-shot bufferization, which copies a tensor whenever
    writing it in place would clobber a value still to be read. Two shapes
    of program make such copies without need:

    - **A fill shared by several destinations** (CSE merges the identical
      `tensor.empty` + fill of two reductions): the second op writing it gets
      a copy of the filled buffer. Each destination use after the first
      gets its own clone of the fill (a generalized `linalg.fill`: an
      all-parallel generic writing a scalar everywhere), placed just before
      the user, so each writes a fresh buffer, and a fill that precedes its
      reduction directly can be folded into it (`ember-linalg-to-gpu`).
    - **A read after an in-place write of the same tensor**: a
      `tensor.extract_slice` or `tensor.extract` of `%t` placed after an op
      that takes `%t` as its destination (`tensor.insert_slice`, a linalg
      op's init) forces a copy of `%t`. The read moves above the write when
      its operands are defined there (both are pure, so the order of the
      two does not change any value); autodiff's reverse loops read a
      cotangent slice after zeroing it. A final `tensor.insert_slice` that
      only the block's terminator uses sinks to just before it (or before
      the first write into a ref's buffer, `materialize_in_destination`,
      which stays after every computation), so reads placed after it come
      first.

    Before:
    ```mlir
    %w = tensor.insert_slice %z into %t[%i] [1] [1] : tensor<1xf32> into tensor<100xf32>
    %r = tensor.extract_slice %t[%i] [1] [1] : tensor<100xf32> to tensor<1xf32>
    ```
    After: `%r` comes first, and `%w` writes `%t`'s buffer in place.
  }];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect"];
}

def EmberLinalgToGPUPass : Pass<"ember-linalg-to-gpu", "ModuleOp"> {
  let summary = "Map bufferized linalg.generic ops and host buffers onto gpu.launch kernels";
  let description = [{
    The CUDA target's mapping onto the device, after bufferization. Every
    `linalg.generic` in host code becomes one `gpu.launch`:

    - without reduction dimensions, or with fewer than 128 reduced elements
      per output (or several outputs), one thread per point of the parallel
      iteration space (flattened, 256 threads per block, a bounds check),
      running any reduction serially;
    - with one output whose body is a single combiner that
      `gpu.all_reduce` knows (add, mul, min/max, and/or/xor) over f32, f64,
      i32 or i64, one block per output point: its 256 threads reduce
      strided elements from the neutral value, `gpu.all_reduce` combines
      them, and thread 0 combines the total with the output's initial value.
      A fill of the output that the reduction directly follows is folded
      into it (thread 0 combines with the fill's value; no fill kernel).
    - without reductions and with at least 65536 points, four points per
      thread: with `vectorize` (the default), when the innermost dimension's
      size is a multiple of 4, every output and every input that varies
      along it is contiguous there (static identity-like layout, element
      of at most 4 bytes), and no output is read, four contiguous points
      with one `vector.load`/`vector.store` per operand (aligned to four
      elements; the kernel checks the base addresses at run time and takes
      the scalar path otherwise), inputs constant along the innermost
      dimension loaded once; else four points 256 apart, every load before
      any store.

    With `merge-kernels` (the default), consecutive launches of 256-thread
    blocks (nothing with memory effects between them) whose buffers do not
    conflict (neither writes a buffer the other reads or writes, buffers
    compared through views) become one launch: blocks [0, g1) run the
    first body, the next g2 the second with their block index less g1.

    Host buffers become device buffers (`memref.alloc`/`dealloc` to
    `gpu.alloc`/`dealloc`, `memref.copy` of identity layouts to
    `gpu.memcpy`); a constant (`memref.get_global`) is copied to the device
    at the function's entry and freed at its returns; a scalar host code
    reads or writes (a loop predicate) goes through a one-thread kernel and
    a copy. A host loop without results whose body is only scalar
    arithmetic, loads and stores (how scatter and sort lower) moves whole
    into a one-thread kernel. A call of an external function (a CPU runtime
    entry point) is an error. The module becomes a `gpu.container_module`; run
    `gpu-kernel-outlining` next.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%a : memref<1024xf32>) outs(%o : memref<1024xf32>) { ... }
    ```
    After:
    ```mlir
    gpu.launch blocks(%b, ...) in (%gx = %c4, ...) threads(%t, ...) in (%bx = %c256, ...) {
      %i = ... %b * 256 + %t
      scf.if %i < 1024 { load %a[%i], body, store %o[%i] }
      gpu.terminator
    }
    ```
  }];
  let options = [
    Option<"vectorize", "vectorize", "bool", /*default=*/"true",
           "large elementwise kernels move 4 contiguous elements per thread "
           "with vector loads and stores where operands allow">,
    Option<"mergeKernels", "merge-kernels", "bool", /*default=*/"true",
           "consecutive independent launches become one">
  ];
  let dependentDialects = ["gpu::GPUDialect", "scf::SCFDialect",
                           "memref::MemRefDialect", "arith::ArithDialect",
                           "affine::AffineDialect", "vector::VectorDialect"];
}

def EmberGPUToNVVMPass : Pass<"ember-gpu-to-nvvm"> {
  let summary = "Lower ember_gpu kernel ops to typed NVVM ops";
  let description = [{
    Rewrites every `ember_gpu` op into the NVVM ops it stands for (see
    docs/spec.md, "The ember_gpu kernel dialect"): a shared-memory buffer
    becomes an `!llvm.ptr<3>` to its first element (plus the barrier's
    offset), TMA destinations are cast to the cluster's shared window
    (`!llvm.ptr<7>`), and TMA coordinates are reversed into the innermost-
    first order of `cp.async.bulk.tensor`. Runs inside `gpu.module`s before
    `convert-gpu-to-nvvm`; the CUDA pipeline's `nvvm` stage does so.

    Before:
    ```mlir
    ember_gpu.barrier_arrive %bars[%i], expect_tx = %bytes : memref<2xi64, #gpu.address_space<workgroup>>
    ```
    After:
    ```mlir
    %p = ... address of %bars[%i] as !llvm.ptr<3>
    nvvm.mbarrier.arrive.expect_tx %p, %bytes : !llvm.ptr<3>, i32
    ```
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def EmberGPUHoistAllocasPass : Pass<"ember-gpu-hoist-allocas"> {
  let summary = "Move fixed-size stack buffers of a GPU kernel to its entry block";
  let description = [{
    In every `gpu.func` under the op it runs on, a `memref.alloca` of
    static shape inside a loop or a conditional, or later in the entry block
    (which lowering its conditionals to branches would split), moves to the
    start of the kernel's entry block. LLVM keeps only entry-block allocas in registers (SROA, mem2reg); one left in a
    loop body becomes a local-memory stack frame on the GPU. Sound for the
    kernels `ember-gpu-kernel` builds, whose loop-carried values live in
    buffers allocated before the loop: every alloca inside a loop body is
    a temporary of one iteration.

    Before:
    ```mlir
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloca() : memref<4xf32>
      ...
    }
    ```
    After:
    ```mlir
    %t = memref.alloca() : memref<4xf32>
    scf.for %i = %c0 to %n step %c1 {
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def EmberGPUDeferWaitsPass : Pass<"ember-gpu-defer-waits", "ModuleOp"> {
  let summary = "Drop the host's waits for the GPU where stream order suffices";
  let description = [{
    Runs after `gpu-async-region`, which ends every chain of asynchronous GPU
    operations with a blocking `gpu.wait` before the next host operation with
    side effects: before a function returns, and before every call. Ember's
    CUDA runtime runs all work on one stream (every `mgpuStreamCreate` returns
    it), so work enqueued later is ordered after work enqueued earlier without
    the host waiting. This pass erases a blocking `gpu.wait` directly before

    - `func.return`: results stay in flight; whoever reads them on the host
      synchronizes (the runtime's copies out, `block_until_ready`), which is
      JAX's asynchronous dispatch;
    - a call of a runtime entry on device buffers (`ember_cuda_*`, which
      enqueue on the same stream), or of a function that does nothing else
      with memory: no host load or store and no other call (the helpers that
      call `ember_cuda_gemm`), checked through nested calls;

    and before anything, when the chain it waits for (followed through the async
      dependencies) holds only kernels, device allocations and frees, and
      copies into device memory: the host cannot read device memory, so
      nothing it does next depends on that work having finished (the waits
      gpu-async-region puts before every loop, branch and deallocation
      chain, which synchronized the stream several times per scan step).

    Waits for chains that copy into host memory (before host reads of
    device data, or before calls, which might read it) stay, as do chains
    whose tokens come from elsewhere.

    Before:
    ```mlir
    %t = gpu.launch_func async [%t0] @k::@k ...
    gpu.wait [%t]
    return
    ```
    After:
    ```mlir
    %t = gpu.launch_func async [%t0] @k::@k ...
    return
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def EmberTPUKernelPass : Pass<"ember-tpu-kernel", "ModuleOp"> {
  let summary = "Rewrite traced Pallas TPU kernels into Mosaic's kernel form";
  let description = [{
    Every `func.func` with `ember_tpu.grid_args = N` is a kernel (or block
    index map) traced as a function of values: N grid indices as 0-d i32
    tensors, then one tensor per buffer; `ember_tpu.arg_spaces` gives each
    buffer's memory space, and `ember_tpu.result_args` the buffer each result
    is stored into (without it, results are returned as scalars: an index
    map). The function becomes Mosaic's form (docs/spec.md, "The ember_tpu
    kernel dialect"): i32 grid arguments, memrefs in `#ember_tpu.memory_space`
    spaces read with `vector.load` (SMEM buffers with `memref.load`), the body
    on vectors (arith, math, vector, scf and `ember_tpu` ops: matmul, iota,
    transpose), written back with `ember_tpu.vector_store`. Ops without a
    kernel form are reported at their location.

    Before:
    ```mlir
    func.func @k(%i: tensor<i32>, %x: tensor<8x128xf32>, %o: tensor<8x128xf32>)
        -> tensor<8x128xf32> attributes {ember_tpu.grid_args = 1 : i64, ...} {
      %e = ember.exp %x : tensor<8x128xf32>
      return %e : tensor<8x128xf32>
    }
    ```
    After:
    ```mlir
    func.func @k(%i: i32, %x: memref<8x128xf32, #ember_tpu.memory_space<vmem>>,
                 %o: memref<8x128xf32, #ember_tpu.memory_space<vmem>>) {
      %v = vector.load %x[%c0, %c0] : ... -> vector<8x128xf32>
      %e = math.exp %v : vector<8x128xf32>
      ember_tpu.vector_store %o[%c0, %c0], %e {strides = array<i32>} : ...
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::ember_tpu::EmberTPUDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"];
}

def EmberTPUInferLayoutPass : Pass<"ember-tpu-infer-layout", "ModuleOp"> {
  let summary = "Assign vector-register layouts to a TPU kernel's vectors and insert relayouts";
  let description = [{
    For a kernel in Mosaic's form (after `ember-tpu-kernel`), the model of
    Mosaic's `infer-vector-layout` and `relayout-insertion` on a TPU v5e:
    records on every op with vectors the layouts it needs of its operands
    (`ember_tpu.in_layouts`) and those it makes (`ember_tpu.out_layouts`),
    `#ember_tpu.layout<bitwidth, {sublane_offset, lane_offset}, (rows,
    cols)[, implicit_dim]>` (unit for values that are not vectors), and
    puts an `ember_tpu.relayout` before every use whose operand was made in
    another layout. Fails, at the op, for vectors or VMEM/SMEM buffers a
    TPU cannot hold (elements wider than 32 bits, complex numbers). Mosaic
    infers its own layouts when it compiles the kernel
    (`needs_layout_passes`), so serialized kernels carry none: the pass
    checks kernels before they are serialized and shows their layouts in
    `as_text("mosaic")`; its rules agree with libtpu's on the cross-check
    programs' kernels (test/data/tpu/mosaic_layouts.json).

    Before:
    ```mlir
    %a = vector.load %x[%c0, %c0] : memref<8x128xf32, ...>, vector<8x128xf32>
    %two = arith.constant dense<2.0> : vector<8x128xf32>
    %p = arith.mulf %a, %two : vector<8x128xf32>
    ```
    After:
    ```mlir
    %a = vector.load %x[%c0, %c0] {ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]} : ...
    %two = arith.constant {ember_tpu.out_layouts = [#ember_tpu.layout<32, {*, *}, (8, 128)>]} dense<2.0> : vector<8x128xf32>
    %r = ember_tpu.relayout %two : vector<8x128xf32> from #ember_tpu.layout<32, {*, *}, (8, 128)> to #ember_tpu.layout<32, {0, 0}, (8, 128)>
    %p = arith.mulf %a, %r {ember_tpu.in_layouts = [...], ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]} : vector<8x128xf32>
    ```
  }];
}

def EmberPartitionPass : Pass<"ember-partition", "ModuleOp"> {
  let summary = "Partition functions with sharded arguments into SPMD form over a `shard.grid`";
  let description = [{
    Runs on linalg on tensors (after `ember-to-linalg`). A function whose
    arguments or results carry `ember.split_axes` (per tensor dimension, the
    axes of the module's one `shard.grid` it is split over, as
    `shard.sharding`'s `split_axes`) becomes the program of one process of
    the grid: split arguments are that process's blocks, results are whole
    (replicated) unless they carry `ember.split_axes` too.

    Shardings are propagated forward from the arguments through the ops'
    `ShardingInterface` (what MLIR's `sharding-propagation` calls; the pass
    itself asserts when the users of one value ask for different
    shardings), every value and use is annotated with `shard.shard`, MLIR's
    `shard-partition` runs, and the resharding collectives it leaves are
    rewritten into
    ones `convert-shard-to-mpi` lowers: `all_slice` takes the process's block
    with `tensor.extract_slice` at its `process_multi_index`, `all_gather`
    inserts the block into zeros and sums the integer view of the buffer
    with `all_reduce` (exact for every element type: each element has one
    non-zero contributor). The function is marked `ember.partition =
    "spmd"`.

    ember-to-linalg keeps the products of a module with split functions as
    contraction loop nests (which upstream partitioning covers); after
    partitioning, every such loop nest of the module becomes an
    `ember.dot_general` again (plus its initial value where that is not
    zeros) and ember-to-linalg runs once more to give it to the runtime's
    GEMM.

    Upstream partitioning asserts on IR it does not cover, so it runs only
    on functions whose ops it is known to handle (`arith.constant`,
    `tensor.empty`, `linalg` structured ops whose bodies capture no tensor,
    `func.return`) and whose every value the propagation annotated. Any
    other function is still given the same calling convention, computing
    on whole arrays: split arguments are gathered at the entry, split
    results sliced at the exit (`ember.partition = "gathered"`).

    Before:
    ```mlir
    shard.grid @grid(shape = 2)
    func.func @f(%x: tensor<8x4xf32> {ember.split_axes = [[0]]}) -> tensor<4xf32> {
      ... linalg.reduce over dimension 0 ...
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<4x4xf32>) -> tensor<4xf32> attributes {ember.partition = "spmd"} {
      ... linalg.reduce of the block ...
      %r = shard.all_reduce %p on @grid grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    }
    ```
  }];
  // (With what the nested ember-to-linalg creates.)
  let dependentDialects = [
    "::mlir::shard::ShardDialect", "::mlir::ember::EmberDialect",
    "linalg::LinalgDialect", "tensor::TensorDialect", "arith::ArithDialect",
    "math::MathDialect", "scf::SCFDialect", "complex::ComplexDialect",
    "func::FuncDialect", "memref::MemRefDialect",
    "bufferization::BufferizationDialect"];
}

def EmberShardToMpiPass : Pass<"ember-shard-to-mpi", "ModuleOp"> {
  let summary = "Lower a partitioned module's collectives to MPI (MPICH)";
  let description = [{
    Runs MLIR's `convert-shard-to-mpi` on a module `ember-partition`
    partitioned, with the module's DLTI entry `MPI:Implementation` set to
    MPICH unless the module names another (the ABI the `mpi` dialect's
    lowering to LLVM follows); upstream reads the module's
    `MPI:comm_world-rank`, if any, as this process's rank. When the grid is one-dimensional and its size equals the
    module's `MPI:comm_world-size`, the communicators
    `convert-shard-to-mpi` splits off `MPI_COMM_WORLD` for each collective
    (one per call, never freed) are the world itself, so the collectives
    use `MPI_COMM_WORLD`. The `shard.grid` ops are removed. Without a
    `shard.grid` the pass does nothing.
  }];
  // (With what the nested convert-shard-to-mpi creates.)
  let dependentDialects = [
    "::mlir::mpi::MPIDialect", "::mlir::DLTIDialect",
    "affine::AffineDialect", "arith::ArithDialect", "memref::MemRefDialect",
    "scf::SCFDialect", "bufferization::BufferizationDialect"];
}

def EmberMpiToLlvmPass : Pass<"ember-mpi-to-llvm", "ModuleOp"> {
  let summary = "Lower `mpi` dialect ops to calls of MPICH's C API";
  let description = [{
    Applies MLIR's MPI-to-LLVM patterns (the ABI from the module's
    `MPI:Implementation` DLTI entry) with the LLVM type converter, in the
    CPU pipeline next to the other conversions to the LLVM dialect; memref
    operands become unrealized casts that `finalize-memref-to-llvm` and
    `reconcile-unrealized-casts` resolve. In a module with the unit
    attribute `ember.device_threads` (a program partitioned over the CPU
    devices of one process, each a thread), the MPI functions are the
    runtime's `ember_devices_MPI_*` (Runtime.def, `EMBER_DEVICE_MPI_ENTRY`),
    which implement them among the threads with MPICH's ABI; an MPI
    function without one is an error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // EMBER_PASSES_TD
