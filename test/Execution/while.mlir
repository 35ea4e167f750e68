// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}

func.func private @doubling(%x: tensor<f32>) -> tensor<f32> {
  %lim = ember.constant dense<100.0> : tensor<f32>
  %r = ember.while (%x) : tensor<f32> cond {
  ^bb0(%c: tensor<f32>):
    %p = ember.compare LT, %c, %lim : (tensor<f32>, tensor<f32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<f32>):
    %n = ember.add %c, %c : tensor<f32>
    ember.yield %n : tensor<f32>
  }
  return %r : tensor<f32>
}

func.func @main() {
  // Each lane doubles until it reaches 100: 1 -> 128, 30 -> 120, 200 stays.
  %x = ember.constant dense<[1.0, 30.0, 200.0, 99.0]> : tensor<4xf32>
  %y = ember.vmap @doubling(%x) batched [true] size 4 : (tensor<4xf32>) -> tensor<4xf32>
  %u = tensor.cast %y : tensor<4xf32> to tensor<*xf32>
  // CHECK: [128,  120,  200,  198]
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
