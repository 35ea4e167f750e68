// RUN: ember-rule-coverage | FileCheck %s
// Every op of the dialect has the rules its traits promise (the tool exits
// non-zero and prints MISSING otherwise); a few samples of each kind:
// CHECK-DAG: ember.add: jvp (linear) transpose batch
// CHECK-DAG: ember.mul: jvp transpose batch
// CHECK-DAG: ember.sin: jvp batch
// CHECK-DAG: ember.vjp: rules in the passes
// CHECK-DAG: ember.psum: jvp (linear) transpose batch
// CHECK-DAG: ember.axis_index: jvp batch
// CHECK: all {{[0-9]+}} ember ops have their rules
