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
