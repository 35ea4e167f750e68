// RUN: ember-opt --help | FileCheck %s
// The Ember passes and the named CPU pipeline are registered.
// CHECK-DAG: --ember-autodiff
// CHECK-DAG: --ember-batch
// CHECK-DAG: --ember-cpu-pipeline
// CHECK-DAG: --ember-inline-custom
// CHECK-DAG: --ember-lower-copies
// CHECK-DAG: --ember-math-approx
// CHECK-DAG: --ember-to-linalg
// CHECK-DAG: --ember-unique-results
// CHECK-DAG: --ember-avoid-buffer-copies
// The named stages and the per-target pipelines.
// CHECK-DAG: --ember-expand-transforms
// CHECK-DAG: --ember-transforms
// CHECK-DAG: --ember-optimize
// CHECK-DAG: --ember-cpu-codegen
