// RUN: ember-opt %s -ember-to-linalg -split-input-file -verify-diagnostics

// Only the ref ops use a ref (LowerRefs.cpp): a call passing one on would
// write the buffer behind the caller's threaded values.

func.func private @g(%r: !ember.ref<tensor<3xf32>>)

func.func @passes_ref_on(%r: !ember.ref<tensor<3xf32>>, %x: tensor<3xf32>) {
  ember.ref_set %r, %x : !ember.ref<tensor<3xf32>>
  // expected-error @+1 {{'func.call' op uses a ref argument of 'passes_ref_on': only ember.ref_get, ref_set, ref_swap and ref_addupdate may (ember-to-linalg)}}
  func.call @g(%r) : (!ember.ref<tensor<3xf32>>) -> ()
  return
}
