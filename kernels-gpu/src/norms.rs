//! The row reductions along the last dimension: RMSNorm (with the fused
//! residual add), LayerNorm, softmax and log-softmax, f32/f16/bf16 with f32
//! accumulation. Portable module; the bf16 kernels also in the sm_90 module
//! ([`sm90_kernel_names`]), and the cluster kernels only there, as are the
//! PDL twins of every norm and cluster kernel ([`pdl_twin`]: `<name>_pdl`,
//! the same body behind `gpukern_device::hopper::pdl_enter`).
//!
//! One kernel per (family, dtype, `K`), all with the same parameter list
//! ([`NormKernel`]); `K` is how many 16-byte chunks of its row a thread holds
//! in registers. Runtime flags pick the rest: a warp or the whole block per row
//! ([`FLAG_WARP`]), 128-bit or element accesses ([`FLAG_VEC`]), the family's
//! variant ([`FLAG_ALT`]: the residual of `add_rms_norm`, the log of
//! `log_softmax`) and the mode ([`MODE_FULL`], or the two passes of a row
//! split over several blocks: [`MODE_STATS`], [`MODE_APPLY`]).
//!
//! # The order of every reduction (what the CPU reference replays)
//! A row is cut into segments of `seg` elements (one segment unless the row is
//! split), each handled by a group of `g` threads (32, or the block). A segment
//! is cut into chunks of `L` elements (`L` = 16 bytes / element size); thread
//! `t` of the group owns chunks `t, t + g, t + 2g, …` and accumulates its
//! elements in increasing index order, starting from `+0.0` (a sum) or `-inf`
//! (a max). The group then combines its threads' values: within each warp a
//! butterfly over lane masks 16, 8, 4, 2, 1 (lane `i` computes `op(own,
//! lane i^m)`); for groups of several warps, the warps' totals (lane 0's),
//! padded to 32 with the identity (`+0.0`, `-inf`), go through a second
//! butterfly. Segments are combined in segment order by the functions of
//! [`order`]. The accesses (128-bit or not) never change the order.

pub mod order;

#[cfg(target_arch = "nvptx64")]
mod cluster;
#[cfg(target_arch = "nvptx64")]
mod device;
#[cfg(target_arch = "nvptx64")]
mod entries;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod pipe;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod pipe_entries;
#[cfg(target_arch = "nvptx64")]
mod row;

use crate::Dtype;

/// A thread's chunks held in registers: each family has a kernel per value.
pub const NORM_KS: [u32; 4] = [1, 2, 4, 8];

/// Flag: one warp per row (several rows per block) instead of the block.
pub const FLAG_WARP: u32 = 1;
/// Flag: 128-bit accesses (every operand and pitch 16-byte aligned).
pub const FLAG_VEC: u32 = 2;
/// Flag: the family's variant: the residual of `add_rms_norm` and
/// `add_layer_norm` ([`has_residual`]), or `log_softmax`.
pub const FLAG_ALT: u32 = 4;

/// Whether a launch of `fam` with `flags` adds a residual first (`h = x +
/// residual`, rounded, then the norm of `h`): the variant of the two
/// normalisations; softmax's variant is the log.
#[inline(always)]
pub const fn has_residual(fam: Family, flags: u32) -> bool {
    // Written as the families that have one, tested first: in a softmax
    // kernel (`fam` a constant) the check folds away before the flag is read.
    (matches!(fam, Family::Rms) || matches!(fam, Family::Layer)) && flags & FLAG_ALT != 0
}
/// Mode: statistics and output in one launch (the row in one group).
pub const MODE_FULL: u32 = 0;
/// Mode: first pass of a split row: each segment's statistics into `part`
/// (and `add_rms_norm`'s `h`).
pub const MODE_STATS: u32 = 8;
/// Mode: second pass of a split row: the segments' statistics combined, the
/// output written.
pub const MODE_APPLY: u32 = 16;
/// The bits of the mode.
pub const MODE_MASK: u32 = 24;
/// f32 words per segment in the statistics buffer `part`.
pub const PART_WORDS: usize = 2;
/// The most threads a group (the block) may have.
pub const MAX_GROUP: u32 = 1024;

/// The kernel families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// `rms_norm` and `add_rms_norm`.
    Rms,
    /// `layer_norm`.
    Layer,
    /// `softmax` and `log_softmax`.
    Softmax,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 3] = [Family::Rms, Family::Layer, Family::Softmax];
    /// Lower-case name, as in the kernels' names.
    pub const fn name(self) -> &'static str {
        match self {
            Family::Rms => "rms",
            Family::Layer => "layer",
            Family::Softmax => "softmax",
        }
    }
}

/// One norm kernel: `norm_<family>_<dtype>_k<K>(x, r, w, b, y, h, part, rows,
/// cols, x_pitch, y_pitch, eps, flags, seg)`, pointers to the dtype (`part`
/// to f32), `rows`, `cols`, `seg`, `flags` u32, the pitches u64 (elements),
/// `eps` f32. Grid: (row groups, segments); block: 32·w threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NormKernel {
    /// Entry point.
    pub name: &'static str,
    /// Family.
    pub family: Family,
    /// Element type.
    pub dtype: Dtype,
    /// Chunks per thread.
    pub k: u32,
    /// Its PDL twin (sm_90 module): `name` + `_pdl`, the same kernel behind
    /// `gpukern_device::hopper::pdl_enter`.
    pub pdl: &'static str,
}

macro_rules! norm_table {
    ($($name:literal $fam:ident $dt:ident $k:literal),* $(,)?) => {
        /// Every norm kernel (portable module).
        pub const NORM_KERNELS: [NormKernel; 36] = [$(NormKernel {
            name: $name, family: Family::$fam, dtype: Dtype::$dt, k: $k, pdl: concat!($name, "_pdl"),
        }),*];
    };
}
norm_table!(
    "norm_rms_f32_k1" Rms F32 1, "norm_rms_f32_k2" Rms F32 2, "norm_rms_f32_k4" Rms F32 4, "norm_rms_f32_k8" Rms F32 8,
    "norm_rms_f16_k1" Rms F16 1, "norm_rms_f16_k2" Rms F16 2, "norm_rms_f16_k4" Rms F16 4, "norm_rms_f16_k8" Rms F16 8,
    "norm_rms_bf16_k1" Rms Bf16 1, "norm_rms_bf16_k2" Rms Bf16 2, "norm_rms_bf16_k4" Rms Bf16 4,
    "norm_rms_bf16_k8" Rms Bf16 8,
    "norm_layer_f32_k1" Layer F32 1, "norm_layer_f32_k2" Layer F32 2, "norm_layer_f32_k4" Layer F32 4,
    "norm_layer_f32_k8" Layer F32 8,
    "norm_layer_f16_k1" Layer F16 1, "norm_layer_f16_k2" Layer F16 2, "norm_layer_f16_k4" Layer F16 4,
    "norm_layer_f16_k8" Layer F16 8,
    "norm_layer_bf16_k1" Layer Bf16 1, "norm_layer_bf16_k2" Layer Bf16 2, "norm_layer_bf16_k4" Layer Bf16 4,
    "norm_layer_bf16_k8" Layer Bf16 8,
    "norm_softmax_f32_k1" Softmax F32 1, "norm_softmax_f32_k2" Softmax F32 2, "norm_softmax_f32_k4" Softmax F32 4,
    "norm_softmax_f32_k8" Softmax F32 8,
    "norm_softmax_f16_k1" Softmax F16 1, "norm_softmax_f16_k2" Softmax F16 2, "norm_softmax_f16_k4" Softmax F16 4,
    "norm_softmax_f16_k8" Softmax F16 8,
    "norm_softmax_bf16_k1" Softmax Bf16 1, "norm_softmax_bf16_k2" Softmax Bf16 2,
    "norm_softmax_bf16_k4" Softmax Bf16 4, "norm_softmax_bf16_k8" Softmax Bf16 8,
);

/// Chunks per thread of the cluster kernels.
pub const CLUSTER_KS: [u32; 3] = [2, 4, 8];
/// Most blocks in a cluster the plans use (16 is the non-portable size the
/// H100 and H200 allow).
pub const MAX_CLUSTER: u32 = 16;

/// Entry point of the cluster kernel of `(family, dtype, k)` (sm_90 module):
/// the kernel of [`NORM_KERNELS`] with `_cluster` appended, launched as
/// clusters of the row's segments along y (the blocks exchange their segment
/// statistics through distributed shared memory; one pass over the row).
pub fn cluster_kernel(family: Family, dtype: Dtype, k: u32) -> Option<&'static str> {
    let i = NORM_KERNELS.iter().position(|n| n.family == family && n.dtype == dtype && n.k == k)?;
    CLUSTER_KS.contains(&k).then(|| CLUSTER_NAMES[i])
}

macro_rules! cluster_names {
    ($($n:literal),* $(,)?) => {
        /// `NORM_KERNELS[i].name` + `_cluster` (k = 1 has none: empty).
        const CLUSTER_NAMES: [&str; 36] = [$($n),*];
        /// Their PDL twins (`_cluster_pdl`; empty where there is no cluster kernel).
        const CLUSTER_PDL_NAMES: [&str; 36] = [$(if $n.is_empty() { "" } else { concat!($n, "_pdl") }),*];
    };
}
cluster_names!(
    "",
    "norm_rms_f32_k2_cluster",
    "norm_rms_f32_k4_cluster",
    "norm_rms_f32_k8_cluster",
    "",
    "norm_rms_f16_k2_cluster",
    "norm_rms_f16_k4_cluster",
    "norm_rms_f16_k8_cluster",
    "",
    "norm_rms_bf16_k2_cluster",
    "norm_rms_bf16_k4_cluster",
    "norm_rms_bf16_k8_cluster",
    "",
    "norm_layer_f32_k2_cluster",
    "norm_layer_f32_k4_cluster",
    "norm_layer_f32_k8_cluster",
    "",
    "norm_layer_f16_k2_cluster",
    "norm_layer_f16_k4_cluster",
    "norm_layer_f16_k8_cluster",
    "",
    "norm_layer_bf16_k2_cluster",
    "norm_layer_bf16_k4_cluster",
    "norm_layer_bf16_k8_cluster",
    "",
    "norm_softmax_f32_k2_cluster",
    "norm_softmax_f32_k4_cluster",
    "norm_softmax_f32_k8_cluster",
    "",
    "norm_softmax_f16_k2_cluster",
    "norm_softmax_f16_k4_cluster",
    "norm_softmax_f16_k8_cluster",
    "",
    "norm_softmax_bf16_k2_cluster",
    "norm_softmax_bf16_k4_cluster",
    "norm_softmax_bf16_k8_cluster",
);

/// Entry point of the pipelined kernel of `(family, dtype, k)` (sm_90
/// module): the kernel of [`NORM_KERNELS`] with `_pipe` appended, whose
/// persistent blocks walk row groups with the rows brought into shared
/// memory by `cp.async.bulk` through a ring of stages (`gpukern_device::ring`),
/// then reduce exactly as that kernel does (same order, same bits).
pub fn pipe_kernel(family: Family, dtype: Dtype, k: u32) -> Option<&'static str> {
    let i = NORM_KERNELS.iter().position(|n| n.family == family && n.dtype == dtype && n.k == k)?;
    Some(PIPE_NAMES[i])
}

/// Every pipelined kernel's entry point.
pub fn pipe_kernel_names() -> impl Iterator<Item = &'static str> {
    PIPE_NAMES.into_iter()
}

macro_rules! pipe_names {
    ($($n:literal),* $(,)?) => {
        /// `NORM_KERNELS[i].name` + `_pipe`.
        const PIPE_NAMES: [&str; 36] = [$(concat!($n, "_pipe")),*];
    };
}
pipe_names!(
    "norm_rms_f32_k1",
    "norm_rms_f32_k2",
    "norm_rms_f32_k4",
    "norm_rms_f32_k8",
    "norm_rms_f16_k1",
    "norm_rms_f16_k2",
    "norm_rms_f16_k4",
    "norm_rms_f16_k8",
    "norm_rms_bf16_k1",
    "norm_rms_bf16_k2",
    "norm_rms_bf16_k4",
    "norm_rms_bf16_k8",
    "norm_layer_f32_k1",
    "norm_layer_f32_k2",
    "norm_layer_f32_k4",
    "norm_layer_f32_k8",
    "norm_layer_f16_k1",
    "norm_layer_f16_k2",
    "norm_layer_f16_k4",
    "norm_layer_f16_k8",
    "norm_layer_bf16_k1",
    "norm_layer_bf16_k2",
    "norm_layer_bf16_k4",
    "norm_layer_bf16_k8",
    "norm_softmax_f32_k1",
    "norm_softmax_f32_k2",
    "norm_softmax_f32_k4",
    "norm_softmax_f32_k8",
    "norm_softmax_f16_k1",
    "norm_softmax_f16_k2",
    "norm_softmax_f16_k4",
    "norm_softmax_f16_k8",
    "norm_softmax_bf16_k1",
    "norm_softmax_bf16_k2",
    "norm_softmax_bf16_k4",
    "norm_softmax_bf16_k8",
);

/// Bytes of one ring slot of the pipelined plan: `rows_per_group` rows of
/// `cols` elements of `lanes` per 16-byte chunk, each as its whole chunks,
/// twice with the residual (`add_rms_norm`), rounded up to 128
/// (`gpukern_device::ring::ring_slot_bytes`). The kernel and the host's
/// launch use this one definition.
pub const fn pipe_slot_bytes(lanes: u32, cols: u32, rows_per_group: u32, residual: bool) -> u64 {
    let ins = if residual { 2 } else { 1 };
    gpukern_device::ring::ring_slot_bytes(rows_per_group as u64 * ins * (cols / lanes) as u64 * 16)
}

/// The kernels of [`NORM_KERNELS`] the sm_90 module holds too, under the same
/// names: the bf16 ones, whose rounding there is one `cvt.rn.bf16.f32` per
/// element instead of the integer rounding's seven instructions and a branch
/// (the same bits; NaN stays NaN). The host resolves these names from the
/// sm_90 module where it is loaded.
pub fn sm90_kernel_names() -> impl Iterator<Item = &'static str> {
    NORM_KERNELS.iter().filter(|k| k.dtype == Dtype::Bf16).map(|k| k.name)
}

/// Every cluster kernel's entry point.
pub fn cluster_kernel_names() -> impl Iterator<Item = &'static str> {
    CLUSTER_NAMES.into_iter().filter(|n| !n.is_empty())
}

/// The PDL twin (sm_90 module) of the norm or cluster kernel named `plain`:
/// the same kernel behind `gpukern_device::hopper::pdl_enter`, which the host
/// launches, and only it, with the programmatic-serialisation attribute.
pub fn pdl_twin(plain: &str) -> Option<&'static str> {
    let norm = NORM_KERNELS.iter().find(|k| k.name == plain).map(|k| k.pdl);
    norm.or_else(|| CLUSTER_NAMES.iter().position(|&n| !n.is_empty() && n == plain).map(|i| CLUSTER_PDL_NAMES[i]))
}

/// Every norm PDL twin's entry point (sm_90 module): one per kernel of
/// [`NORM_KERNELS`] and per cluster kernel.
pub fn pdl_kernel_names() -> impl Iterator<Item = &'static str> {
    NORM_KERNELS.iter().map(|k| k.pdl).chain(CLUSTER_PDL_NAMES.into_iter().filter(|n| !n.is_empty()))
}

/// The kernel of `(family, dtype, k)`, if `k` is one of [`NORM_KS`].
pub fn norm_kernel(family: Family, dtype: Dtype, k: u32) -> Option<&'static NormKernel> {
    NORM_KERNELS.iter().find(|n| n.family == family && n.dtype == dtype && n.k == k)
}

/// Elements per 16-byte chunk of a dtype.
pub const fn chunk_lanes(dtype: Dtype) -> u32 {
    16 / dtype.size() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_match_their_fields() {
        for k in NORM_KERNELS {
            assert_eq!(k.name, std::format!("norm_{}_{}_k{}", k.family.name(), k.dtype.name(), k.k));
            assert_eq!(norm_kernel(k.family, k.dtype, k.k), Some(&k));
        }
        for f in Family::ALL {
            for d in Dtype::ALL {
                for k in NORM_KS {
                    assert!(norm_kernel(f, d, k).is_some());
                }
            }
        }
        assert_eq!(norm_kernel(Family::Rms, Dtype::F32, 3), None);
        for k in NORM_KERNELS {
            let c = cluster_kernel(k.family, k.dtype, k.k);
            assert_eq!(
                c.map(std::string::String::from),
                CLUSTER_KS.contains(&k.k).then(|| std::format!("{}_cluster", k.name))
            );
        }
        assert_eq!(cluster_kernel_names().count(), 27);
    }

    #[test]
    fn every_norm_kernel_has_one_twin() {
        let plain = NORM_KERNELS.iter().map(|k| k.name).chain(cluster_kernel_names());
        let mut twins = std::vec::Vec::new();
        for name in plain {
            let twin = pdl_twin(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(twin, std::format!("{name}_pdl"));
            twins.push(twin);
        }
        assert_eq!(twins, pdl_kernel_names().collect::<std::vec::Vec<_>>());
        assert_eq!(twins.len(), 36 + 27);
        for no in ["", "norm_rms_f32_k1_pdl", "norm_rms_f32_k1_cluster", "add_f32"] {
            assert_eq!(pdl_twin(no), None, "{no:?}");
        }
    }
}
