"""`ember.experimental.pallas.mosaic_gpu`: JAX's `plgpu` API, run by an
interpreter on the CPU that reports synchronization errors (see
`ember._src.pallas.mosaic_gpu`)."""

from ember._src.pallas.mosaic_gpu import ACC as ACC
from ember._src.pallas.mosaic_gpu import GMEM as GMEM
from ember._src.pallas.mosaic_gpu import SMEM as SMEM
from ember._src.pallas.mosaic_gpu import TMEM as TMEM
from ember._src.pallas.mosaic_gpu import Barrier as Barrier
from ember._src.pallas.mosaic_gpu import BlockSpec as BlockSpec
from ember._src.pallas.mosaic_gpu import ClusterBarrier as ClusterBarrier
from ember._src.pallas.mosaic_gpu import CompilerParams as CompilerParams
from ember._src.pallas.mosaic_gpu import CopyPartition as CopyPartition
from ember._src.pallas.mosaic_gpu import InterpretError as InterpretError
from ember._src.pallas.mosaic_gpu import Layout as Layout
from ember._src.pallas.mosaic_gpu import LoweringSemantics as LoweringSemantics
from ember._src.pallas.mosaic_gpu import NDLoopInfo as NDLoopInfo
from ember._src.pallas.mosaic_gpu import SwizzleTransform as SwizzleTransform
from ember._src.pallas.mosaic_gpu import TilingTransform as TilingTransform
from ember._src.pallas.mosaic_gpu import TransposedRef as TransposedRef
from ember._src.pallas.mosaic_gpu import WarpMesh as WarpMesh
from ember._src.pallas.mosaic_gpu import async_load_tmem as async_load_tmem
from ember._src.pallas.mosaic_gpu import async_store_tmem as async_store_tmem
from ember._src.pallas.mosaic_gpu import barrier_arrive as barrier_arrive
from ember._src.pallas.mosaic_gpu import barrier_wait as barrier_wait
from ember._src.pallas.mosaic_gpu import broadcasted_iota as broadcasted_iota
from ember._src.pallas.mosaic_gpu import commit_smem as commit_smem
from ember._src.pallas.mosaic_gpu import commit_smem_to_gmem_group as commit_smem_to_gmem_group
from ember._src.pallas.mosaic_gpu import commit_tmem as commit_tmem
from ember._src.pallas.mosaic_gpu import copy_gmem_to_smem as copy_gmem_to_smem
from ember._src.pallas.mosaic_gpu import copy_smem_to_gmem as copy_smem_to_gmem
from ember._src.pallas.mosaic_gpu import emit_pipeline as emit_pipeline
from ember._src.pallas.mosaic_gpu import (
    emit_pipeline_warp_specialized as emit_pipeline_warp_specialized,
)
from ember._src.pallas.mosaic_gpu import find_swizzle as find_swizzle
from ember._src.pallas.mosaic_gpu import kernel as kernel
from ember._src.pallas.mosaic_gpu import layout_cast as layout_cast
from ember._src.pallas.mosaic_gpu import load as load
from ember._src.pallas.mosaic_gpu import nd_loop as nd_loop
from ember._src.pallas.mosaic_gpu import planar_snake as planar_snake
from ember._src.pallas.mosaic_gpu import set_max_registers as set_max_registers
from ember._src.pallas.mosaic_gpu import tcgen05_commit_arrive as tcgen05_commit_arrive
from ember._src.pallas.mosaic_gpu import tcgen05_mma as tcgen05_mma
from ember._src.pallas.mosaic_gpu import transpose_ref as transpose_ref
from ember._src.pallas.mosaic_gpu import wait_load_tmem as wait_load_tmem
from ember._src.pallas.mosaic_gpu import wait_smem_to_gmem as wait_smem_to_gmem
from ember._src.pallas.mosaic_gpu import wgmma as wgmma
from ember._src.pallas.mosaic_gpu import wgmma_accumulator_load as wgmma_accumulator_load
from ember._src.pallas.mosaic_gpu import wgmma_wait as wgmma_wait
