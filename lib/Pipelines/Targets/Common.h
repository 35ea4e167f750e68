//===- Common.h - pipeline text the targets share ---------------*- C++ -*-===//
//
// Targets lower the same way from linalg on tensors to buffers; each adds
// its own passes before and after (as string literals, so that a target's
// stage stays one constant).
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_PIPELINES_TARGETS_COMMON_H
#define EMBER_PIPELINES_TARGETS_COMMON_H

/// Elementwise fusion, then one-shot bufferization with results as
/// out-parameters, deallocation, and the buffer clean-ups every target
/// needs; ends with copies as linalg.copy.
#define EMBER_FUSE_AND_BUFFERIZE                                               \
  "linalg-generalize-named-ops,linalg-fuse-elementwise-ops,"                   \
  "canonicalize,"                                                              \
  "ember-drop-optimization-barriers,"                                          \
  "ember-avoid-buffer-copies,"                                                 \
  "eliminate-empty-tensors,"                                                   \
  "ember-unique-results,"                                                      \
  "ember-privatize-parallel-loops,"                                            \
  "one-shot-bufferize{bufferize-function-boundaries "                          \
  "allow-return-allocs-from-loops "                                            \
  "function-boundary-type-conversion=identity-layout-map "                     \
  "unknown-type-conversion=identity-layout-map},"                              \
  "buffer-results-to-out-params{hoist-static-allocs=true "                     \
  "modify-public-functions=true},"                                             \
  "canonicalize,"                                                              \
  "buffer-deallocation-pipeline,"                                              \
  "convert-bufferization-to-memref,"                                           \
  "ember-widen-bool-buffers,"                                                  \
  "ember-lower-copies,"

#endif // EMBER_PIPELINES_TARGETS_COMMON_H
