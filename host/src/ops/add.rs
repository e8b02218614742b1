//! The add family: the automatic add (the tuned [`AutoPlan`], reached
//! through `Gpu::binary(BinaryOp::Add, …)`), and the seed's variants by name
//! for the studies (`gpu.studies().add(Variant::…)`), with their checks.

use kernels_gpu::launch::grid_for;
use kernels_gpu::ops::{BinaryOp, OpKernel, OpKind};
use kernels_gpu::verify::{COUNT_BLOCK, COUNT_MISMATCH, MARK_VISITS};
use kernels_gpu::Dtype;

use crate::device::gpu::{Gpu, Stream};
use crate::device::pdl::Pdl;
use crate::error::{Error, Result};
use crate::launch::operands::{split_for, AutoSplit, Operands};
use crate::launch::opts::Plan;
use crate::launch::tuning::{AutoPlan, BulkConfig};
use crate::launch::variant::{LaunchShape, Variant};
use crate::memory::buffer::{AsView, AsViewMut, Element, View, ViewMut};
use crate::raw::{self, MapLaunch, Tail};
use crate::studies::Studies;

/// What the automatic add launches.
pub(crate) enum AddChoice {
    /// The plan's kernel's PDL twin.
    Twin(&'static OpKernel),
    /// The plan's kernel on everything (the split of [`split_for`]) or after
    /// a scalar head.
    Split(AutoSplit),
}

/// The kernels a decision of [`Gpu::add_decide`] names.
fn add_plan_of(dtype: Dtype, addrs: &[u64], decided: &(AutoPlan, AddChoice)) -> Plan {
    match decided {
        (_, AddChoice::Twin(k)) => Plan { kernel: k.name, head: None, pdl: true, norm: None },
        (plan, AddChoice::Split(AutoSplit::Pack)) => Plan::one(plan.variant.name()),
        (plan, AddChoice::Split(AutoSplit::Peel(head))) => Plan {
            kernel: plan.variant.name(),
            head: Some((Variant::scalar(dtype).name(), *head)),
            pdl: false,
            norm: None,
        },
        (_, AddChoice::Split(AutoSplit::Scalar)) => Plan::one(Variant::widest_for(dtype, addrs).name()),
    }
}

impl Studies<'_> {
    /// Queues `out = a + b` with an explicit add variant (the seed's V1–V6 and
    /// the later ones) and default launch settings.
    ///
    /// Errors (nothing is launched): dtype of the variant differs from `T`; lengths
    /// differ; an operand is not aligned as the variant needs. `n = 0` is a no-op.
    pub fn add<'a, T: Element>(
        &self,
        variant: Variant,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.add_with(variant, LaunchShape::default(), a, b, out, stream)
    }

    /// As [`Studies::add`], with explicit launch settings.
    pub fn add_with<'a, T: Element>(
        &self,
        variant: Variant,
        cfg: LaunchShape,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.add_tiled(variant, cfg, None, (a.into_view(), b.into_view(), out.into_view_mut()), stream)
    }

    /// As [`Studies::add_with`] for a bulk-copy variant, with explicit tiling.
    ///
    /// Errors as [`Studies::add_with`], and: the variant is not a bulk variant; the
    /// device is older than sm_90; the tiling is invalid or needs more shared
    /// memory than a block may have.
    #[allow(clippy::too_many_arguments)]
    pub fn add_bulk_with<'a, T: Element>(
        &self,
        variant: Variant,
        cfg: LaunchShape,
        bulk: BulkConfig,
        a: impl AsView<'a, T>,
        b: impl AsView<'a, T>,
        out: impl AsViewMut<'a, T>,
        stream: &Stream,
    ) -> Result<()> {
        self.add_tiled(variant, cfg, Some(bulk), (a.into_view(), b.into_view(), out.into_view_mut()), stream)
    }

    /// [`Studies::add_with`] and [`Studies::add_bulk_with`] (`bulk` given).
    fn add_tiled<T: Element>(
        &self,
        variant: Variant,
        cfg: LaunchShape,
        bulk: Option<BulkConfig>,
        (a, b, mut out): (View<'_, T>, View<'_, T>, ViewMut<'_, T>),
        stream: &Stream,
    ) -> Result<()> {
        if bulk.is_some() && !variant.is_bulk() {
            return Err(Error::Shape { kernel: variant.name(), detail: "not a bulk-copy variant".into() });
        }
        self.check_args(variant, cfg, &a, &b, &out)?;
        self.check_stream_owned(variant.name(), stream)?;
        if let Some(bulk) = bulk {
            bulk.check(variant.name(), variant.bulk_store(), self.info().shared_per_block_optin)?;
        }
        self.launch_tiled(variant, cfg, bulk.unwrap_or_default(), &a, &b, &mut out, stream.raw())
    }

    /// Counts elements where `x` and `y` differ in bits, NaN matching any NaN, on
    /// the device. Blocks until the count is known.
    pub fn count_mismatches<T: Element>(&self, x: View<'_, T>, y: View<'_, T>, stream: &Stream) -> Result<u64> {
        if x.len() != y.len() {
            let detail = format!("x has {} elements, y {}", x.len(), y.len());
            return Err(Error::Shape { kernel: "count_mismatches", detail });
        }
        let name = match T::DTYPE {
            Dtype::F32 => COUNT_MISMATCH[0],
            Dtype::F16 => COUNT_MISMATCH[1],
            Dtype::Bf16 => COUNT_MISMATCH[2],
        };
        self.check_owned(name, [x.owner(), y.owner()], stream)?;
        let mut counter = self.upload(&[0u64])?;
        let grid = grid_for(x.len() as u64, 1, COUNT_BLOCK, 65_536);
        let _live = self.shared.bind()?;
        let f = self.shared.func(name)?;
        // SAFETY: the kernel is the one its name names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_mismatch_count(f, grid, COUNT_BLOCK, &x, &y, &mut counter.view_mut(), stream.raw()) }?;
        stream.synchronize()?;
        Ok(counter.to_vec()?[0])
    }

    /// Queues the visit marker: adds 1 to `marks[i]` each time the grid-stride
    /// walk the add kernels use, with `lanes` elements per group and launched with
    /// `cfg` exactly as [`Studies::add_with`] would, visits element `i`.
    ///
    /// A correct walk raises every mark by exactly one, whatever the grid cap; the
    /// tests use it to prove that a grid clamped at the hardware limit still covers
    /// every index once, and a kernel author can check a launch setting the same
    /// way. `lanes` must be 1, 2, 4 or 8 (the widths of [`Variant::lanes`]).
    pub fn mark_visits<'a>(
        &self,
        lanes: u32,
        cfg: LaunchShape,
        marks: impl AsViewMut<'a, i32>,
        stream: &Stream,
    ) -> Result<()> {
        let mut marks = marks.into_view_mut();
        let Some(&(name, _)) = MARK_VISITS.iter().find(|(_, l)| *l == lanes) else {
            return Err(Error::Shape {
                kernel: "mark_visits",
                detail: format!("lanes = {lanes}; must be 1, 2, 4 or 8"),
            });
        };
        cfg.check(name)?;
        self.check_owned(name, [marks.owner()], stream)?;
        let grid = grid_for(marks.len() as u64, lanes, cfg.block, cfg.max_grid);
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_mark_visits(self.shared.func(name)?, grid, cfg.block, &mut marks, stream.raw()) }
    }
}

impl Gpu {
    /// What the automatic add does for `n` elements of `dtype` at operand
    /// addresses `addrs`, with `pdl` (explicit launch settings, `user`, keep
    /// the plain kernels; so does a bulk plan: the twins are 128-bit kernels).
    pub(crate) fn add_decide(
        &self,
        dtype: Dtype,
        n: usize,
        addrs: &[u64],
        pdl: Pdl,
        user: bool,
    ) -> (AutoPlan, AddChoice) {
        let plan = AutoPlan::new(dtype, n, self.info().has_sm90());
        let kind = OpKind::Binary(BinaryOp::Add);
        let twin = (!user && !plan.variant.is_bulk())
            .then(|| self.pdl_choice(pdl, kind, dtype, n, addrs))
            .flatten()
            .filter(|k| k.name.strip_suffix("_pdl") == Some(plan.variant.name()));
        let choice = match twin {
            Some(k) => AddChoice::Twin(k),
            None => AddChoice::Split(split_for(addrs, n, dtype.size(), plan.variant.align() as u64)),
        };
        (plan, choice)
    }

    /// [`Gpu::add_decide`] as the kernels it names.
    pub(crate) fn add_plan(&self, dtype: Dtype, n: usize, addrs: &[u64], pdl: Pdl, user: bool) -> Plan {
        add_plan_of(dtype, addrs, &self.add_decide(dtype, n, addrs, pdl, user))
    }

    /// The automatic add on a stream already checked to belong to this
    /// context: on 16-byte aligned operands the tuned [`AutoPlan`] (on sm_90
    /// devices bulk-copy kernels for large f32 and f16 adds, 1024-thread
    /// blocks from 2^22 elements; elsewhere the seed's widest per-thread
    /// variant); when all three are misaligned alike, a short head by the
    /// scalar kernel and the rest as if aligned; otherwise the widest variant
    /// whose alignment all three meet. `user`'s block size and grid cap
    /// replace the tuned ones (a bulk kernel then gets one 16-byte pack per
    /// thread per tile).
    pub(crate) fn add_auto_raw<T: Element>(
        &self,
        user: Option<LaunchShape>,
        a: View<'_, T>,
        b: View<'_, T>,
        mut out: ViewMut<'_, T>,
        raw: raw::Queue<'_>,
        pdl: Pdl,
    ) -> Result<Plan> {
        let (dtype, n) = (T::DTYPE, a.len());
        let addrs = [a.addr(), b.addr(), out.addr()];
        let decided = self.add_decide(dtype, n, &addrs, pdl, user.is_some());
        let done = add_plan_of(dtype, &addrs, &decided);
        let (plan, choice) = decided;
        let split = match choice {
            AddChoice::Twin(k) => {
                // The plan's kernel behind `pdl_enter`, with the plan's block.
                let (ops, cfg) = (Operands { a, b: Some(b), out, scales: None }, LaunchShape::with_block(plan.block));
                self.check_map(k, cfg, &ops)?;
                // SAFETY: the kernel handle was resolved by this table row's own name from
                // this Gpu's modules, so the row's inputs, tail and alignment are its own.
                unsafe { self.map_launch_raw(k, self.shared.func(k.name)?, cfg, ops, raw, true) }?;
                return Ok(done);
            }
            AddChoice::Split(split) => split,
        };
        let (widest, cfg, bulk) = match user {
            None => (plan.variant, LaunchShape::with_block(plan.block), plan.bulk),
            Some(cfg) => {
                let tile_bytes = (cfg.block.max(1) * 16).min(BulkConfig::MAX_TILE_BYTES);
                (plan.variant, cfg, BulkConfig { tile_bytes, stages: 1 })
            }
        };
        self.check_args(widest, cfg, &a, &b, &out)?;
        match split {
            AutoSplit::Peel(head) => {
                let scalar = Variant::scalar(dtype);
                let (mut out_head, mut out_rest) = out.split_at_mut(head)?;
                let (ah, bh) = (a.slice(..head)?, b.slice(..head)?);
                self.launch_tiled(scalar, cfg, BulkConfig::default(), &ah, &bh, &mut out_head, raw)?;
                self.launch_tiled(widest, cfg, bulk, &a.slice(head..)?, &b.slice(head..)?, &mut out_rest, raw)?;
            }
            AutoSplit::Pack => self.launch_tiled(widest, cfg, bulk, &a, &b, &mut out, raw)?,
            AutoSplit::Scalar => {
                // Misaligned by different amounts: the widest per-thread variant they allow.
                let variant = Variant::widest_for(dtype, &addrs);
                let cfg = user.unwrap_or_default();
                self.launch_tiled(variant, cfg, BulkConfig::default(), &a, &b, &mut out, raw)?;
            }
        }
        Ok(done)
    }

    /// Checks everything about an add but the stream.
    pub(crate) fn check_args<T: Element>(
        &self,
        variant: Variant,
        cfg: LaunchShape,
        a: &View<'_, T>,
        b: &View<'_, T>,
        out: &ViewMut<'_, T>,
    ) -> Result<()> {
        let name = variant.name();
        if variant.needs_sm90() && !self.info().has_sm90() {
            let (major, minor) = self.info().compute_capability;
            return Err(Error::Unsupported { kernel: name, needs: "9.0", has: format!("{major}.{minor}") });
        }
        if variant.dtype() != T::DTYPE {
            return Err(Error::DtypeMismatch { kernel: name, expected: variant.dtype().name(), got: T::DTYPE.name() });
        }
        if a.len() != b.len() || a.len() != out.len() {
            return Err(Error::LengthMismatch { kernel: name, a: a.len(), b: b.len(), out: out.len() });
        }
        cfg.check(name)?;
        self.check_buffers_owned(name, [a.owner(), b.owner(), out.owner()])
    }

    pub(crate) fn launch_add_raw<T: Element>(
        &self,
        variant: Variant,
        cfg: LaunchShape,
        a: &View<'_, T>,
        b: &View<'_, T>,
        out: &mut ViewMut<'_, T>,
        stream: raw::Queue<'_>,
    ) -> Result<()> {
        self.launch_tiled(variant, cfg, BulkConfig::default(), a, b, out, stream)
    }

    /// Launches any add variant; `bulk` is used by the bulk-copy ones only.
    #[allow(clippy::too_many_arguments)]
    fn launch_tiled<T: Element>(
        &self,
        variant: Variant,
        cfg: LaunchShape,
        bulk: BulkConfig,
        a: &View<'_, T>,
        b: &View<'_, T>,
        out: &mut ViewMut<'_, T>,
        stream: raw::Queue<'_>,
    ) -> Result<()> {
        let n = a.len();
        let size = T::DTYPE.size() as u32;
        let launch = MapLaunch {
            name: variant.name(),
            func: self.shared.func(variant.name())?,
            inputs: 2,
            tail: if variant.is_bulk() {
                Tail::Tiling(raw::BulkLaunch {
                    tile_bytes: bulk.tile_bytes,
                    stages: bulk.stages,
                    bulk_store: variant.bulk_store(),
                    shared_limit: self.info().shared_per_block_optin,
                })
            } else {
                Tail::None
            },
            grid: if variant.is_bulk() {
                // One block per whole tile (or enough for the remainder's groups).
                kernels_gpu::bulk::grid_for(n as u64, size, bulk.tile_bytes, cfg.block, cfg.max_grid)
            } else if let Some(unroll) = variant.unroll() {
                // The unrolled walk: a block per tile of `unroll` packs per thread.
                kernels_gpu::launch::unrolled_grid(n as u64, variant.lanes(), unroll, cfg.block, cfg.max_grid)
            } else {
                // Same lane count the kernel walks with: one thread per lane group.
                grid_for(n as u64, variant.lanes(), cfg.block, cfg.max_grid)
            },
            block: cfg.block,
            align: variant.align(),
            pdl: false,
        };
        let _live = self.shared.bind()?;
        // SAFETY: `launch.func` is `variant`'s kernel, resolved by its name from this
        // Gpu's own modules; the add table's row fixes `inputs`, `tail` and `align`.
        unsafe { raw::launch_map(&launch, a, Some(b), out, stream) }.map_err(|e| self.shared.fault_of(e))
    }
}
