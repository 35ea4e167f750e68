// RUN: ember-opt %s -ember-arith-expand | FileCheck %s

// Float min/max stay single ops (LLVM vectorizes their intrinsics in
// reductions); ceil/floor division and bf16 conversions are expanded.
// CHECK-LABEL: func @expand
// CHECK-NOT: arith.ceildivsi
// CHECK-NOT: arith.floordivsi
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.minnumf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.extf
// CHECK: return
func.func @expand(%a: i32, %b: i32, %x: f32, %y: f32, %h: bf16) -> (i32, i32, f32, f32, f32) {
  %0 = arith.ceildivsi %a, %b : i32
  %1 = arith.floordivsi %a, %b : i32
  %2 = arith.maximumf %x, %y : f32
  %3 = arith.minnumf %x, %y : f32
  %4 = arith.extf %h : bf16 to f32
  return %0, %1, %2, %3, %4 : i32, i32, f32, f32, f32
}
