//! Many adds in one launch ([`Gpu::add_many`], a foreach add), the ceiling
//! kernels (read-only, write-only, copy) and the visit markers of the bulk and
//! foreach walks.

use kernels_gpu::foreach::{ADD_MANY, ADD_MANY_INLINE, ADD_MANY_INLINE_PDL, ADD_MANY_PDL, MARK_MANY};
use kernels_gpu::verify::{MARK_TILES, MARK_UNROLLED};
use kernels_gpu::Dtype;

use crate::device::gpu::{Gpu, Stream};
use crate::error::{Error, Result};
use crate::launch::variant::LaunchShape;
use crate::memory::buffer::{AsView, AsViewMut, Element, View, ViewMut};
use crate::raw::{self, Ceiling};
use crate::studies::Studies;

/// One operand triple of a foreach add: `out = a + b`.
pub type Triple<'a, T> = (View<'a, T>, View<'a, T>, ViewMut<'a, T>);

/// (table kernel, inline-list kernel) of a dtype, or their PDL twins.
fn many_kernel(dtype: Dtype, pdl: bool) -> (&'static str, &'static str) {
    let i = match dtype {
        Dtype::F32 => 0,
        Dtype::F16 => 1,
        Dtype::Bf16 => 2,
    };
    if pdl {
        (ADD_MANY_PDL[i], ADD_MANY_INLINE_PDL[i])
    } else {
        (ADD_MANY[i], ADD_MANY_INLINE[i])
    }
}

impl Gpu {
    /// Whether a foreach launch of `elements` in all of `dtype` on `stream`
    /// uses the PDL twins: the stream's [`crate::Pdl`] setting and plan, as
    /// for the element-wise operations (any alignment: the walk checks each
    /// triple's).
    fn many_pdl(&self, dtype: Dtype, elements: usize, stream: &Stream) -> bool {
        stream.pdl().pays(self.info(), elements, (16 / dtype.size()) as u32)
    }
}

/// A foreach add whose table is already on the device; made by [`AddManyPlan::new`]; its graph: [`AddManyPlan::graph`].
pub struct AddManyPlan<'a> {
    pub(crate) table: raw::ManyTable<'a>,
    pub(crate) name: &'static str,
    dtype: Dtype,
    elements: usize,
    pub(crate) gpu: Gpu,
    len: usize,
    _outputs: std::marker::PhantomData<&'a mut ()>,
}

impl<'a> AddManyPlan<'a> {
    /// As [`Gpu::add_many`] on `gpu`, but the table is uploaded once now: the plan's
    /// [`AddManyPlan::launch`] is a single kernel launch with no copy, and can
    /// be captured in a CUDA graph ([`AddManyPlan::graph`]). The plan borrows
    /// the operands for as long as it exists.
    pub fn new<T: Element>(gpu: &Gpu, ops: Vec<Triple<'a, T>>) -> Result<AddManyPlan<'a>> {
        let (name, _) = many_kernel(T::DTYPE, false);
        let operands = gpu.many_operands(name, &ops)?;
        let _live = gpu.shared.bind()?;
        let table = raw::many_table(&gpu.shared.ctx, &operands)?;
        let elements = ops.iter().map(|t| t.0.len()).sum();
        Ok(AddManyPlan {
            table,
            name,
            dtype: T::DTYPE,
            elements,
            gpu: gpu.clone(),
            len: ops.len(),
            _outputs: std::marker::PhantomData,
        })
    }

    /// Queues the whole list (one kernel launch, no copy) on `stream`, with
    /// PDL where the stream's setting says so.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.gpu.check_stream_owned(self.name, stream)?;
        let _live = self.gpu.shared.bind()?;
        let pdl = self.gpu.many_pdl(self.dtype, self.elements, stream);
        let (name, _) = many_kernel(self.dtype, pdl);
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_many_table(self.gpu.shared.func(name)?, &self.table, stream.raw(), pdl) }
    }

    /// Triples in the list (empty ones included).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty list.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Gpu {
    /// Queues `out_i = a_i + b_i` for every triple of `ops` in **one** kernel
    /// launch, all on `stream`: a single triple is a plain `Gpu::binary(BinaryOp::Add, …)`; up
    /// to 32 triples travel in the kernel's parameters; a longer list's table (40
    /// bytes per triple, 4 per chunk of 4096 elements) is copied to
    /// stream-ordered device memory first.
    ///
    /// Lengths and alignments may differ between triples: each is walked with
    /// 128-bit accesses when its three operands are 16-byte aligned, element by
    /// element otherwise; results are bit-exact like every add. Errors (nothing
    /// is queued): a triple's lengths differ (`LengthMismatch`, naming the
    /// kernel); a buffer or the stream belongs to another `Gpu`. An empty list
    /// or empty triples are no-ops.
    pub fn add_many<'a, T: Element>(
        &self,
        ops: impl IntoIterator<Item = Triple<'a, T>>,
        stream: &Stream,
    ) -> Result<()> {
        let (name, _) = many_kernel(T::DTYPE, false);
        self.check_stream_owned(name, stream)?;
        let mut ops: Vec<Triple<'a, T>> = ops.into_iter().collect();
        let operands = self.many_operands(name, &ops)?;
        if ops.len() == 1 {
            if let Some((a, b, out)) = ops.pop() {
                // One triple: the plain add (same kernels, nothing to look up).
                return self.binary(kernels_gpu::ops::BinaryOp::Add, a, b, out, stream);
            }
        }
        let _live = self.shared.bind()?;
        let pdl = self.many_pdl(T::DTYPE, ops.iter().map(|t| t.0.len()).sum(), stream);
        let (table, inline) = many_kernel(T::DTYPE, pdl);
        let k = raw::ManyKernels { table: self.shared.func(table)?, inline: self.shared.func(inline)?, pdl };
        // SAFETY: the kernel is the foreach kernels `table` and `inline` name, resolved by those names from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_many(k, &operands, stream.raw()) }
    }

    pub(crate) fn many_operands<'a, T: Element>(
        &self,
        name: &'static str,
        ops: &[Triple<'a, T>],
    ) -> Result<Vec<raw::ManyOperand<'a>>> {
        ops.iter()
            .map(|(a, b, c)| {
                self.check_buffers_owned(name, [a.owner(), b.owner(), c.owner()])?;
                raw::many_operand(name, a, b, c, [a.use_as_input(), b.use_as_input(), c.use_as_output()])
            })
            .collect()
    }
}

impl Studies<'_> {
    /// Runs the foreach walk over `marks` lists with `lanes` (4: f32, 8: f16 and
    /// bf16) elements per group, adding 1 to every mark it visits; each list is
    /// one "triple". A correct walk leaves every mark raised by exactly one.
    /// Blocks until the walk is done.
    pub fn mark_visits_many<'a>(&self, lanes: u32, marks: Vec<ViewMut<'a, i32>>, stream: &Stream) -> Result<()> {
        let Some(&(name, _)) = MARK_MANY.iter().find(|(_, l)| *l == lanes) else {
            return Err(Error::Shape {
                kernel: "mark_visits_many",
                detail: format!("lanes = {lanes}; must be 4 or 8"),
            });
        };
        self.check_owned(name, marks.iter().map(|m| m.owner()), stream)?;
        let operands: Vec<raw::ManyOperand<'_>> = marks.iter().map(|m| raw::many_marks(m, m.use_as_output())).collect();
        let _live = self.shared.bind()?;
        // Markers always walk a table in device memory (there is no inline marker).
        let table = raw::many_table(&self.shared.ctx, &operands)?;
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_many_table(self.shared.func(name)?, &table, stream.raw(), false) }?;
        // The table is freed at the end of this call; freeing waits for the walk.
        stream.synchronize()
    }

    /// Queues the bulk kernels' tiled walk (whole tiles of `tile` elements by
    /// block, packs of `lanes` by thread, then the remainder in lane groups) over
    /// `marks`, launched as the bulk add with `cfg` would be: 1 is added to every
    /// mark visited. `lanes` is 4 (f32) or 8 (f16, bf16); `tile` a multiple of it.
    pub fn mark_visits_tiles<'a>(
        &self,
        lanes: u32,
        tile: u64,
        cfg: LaunchShape,
        marks: impl AsViewMut<'a, i32>,
        stream: &Stream,
    ) -> Result<()> {
        let mut marks = marks.into_view_mut();
        let Some(&(name, _)) = MARK_TILES.iter().find(|(_, l)| *l == lanes) else {
            return Err(Error::Shape {
                kernel: "mark_visits_tiles",
                detail: format!("lanes = {lanes}; must be 4 or 8"),
            });
        };
        cfg.check(name)?;
        self.check_owned(name, [marks.owner()], stream)?;
        let elem = 16 / lanes; // the element size of the add kernel this walk stands for
        let bad = |why: &str| Error::Shape { kernel: name, detail: format!("tile of {tile} elements {why}") };
        if tile == 0 {
            return Err(bad("must be at least 1"));
        }
        let tile_bytes =
            tile.checked_mul(elem as u64).and_then(|b| u32::try_from(b).ok()).ok_or_else(|| bad("is too large"))?;
        let grid = kernels_gpu::bulk::grid_for(marks.len() as u64, elem, tile_bytes, cfg.block, cfg.max_grid);
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_mark_tiles(self.shared.func(name)?, grid, cfg.block, tile, lanes, &mut marks, stream.raw())
        }
    }

    /// Queues the unrolled kernels' walk (tiles of `unroll × block` packs of
    /// `lanes` elements by block, the partial tile pack by pack, then the last
    /// elements) over `marks`, launched as the unrolled add with `cfg` would be:
    /// 1 is added to every mark visited. `lanes` is 4 or 8, `unroll` 2 or 4.
    pub fn mark_visits_unrolled<'a>(
        &self,
        lanes: u32,
        unroll: u32,
        cfg: LaunchShape,
        marks: impl AsViewMut<'a, i32>,
        stream: &Stream,
    ) -> Result<()> {
        let mut marks = marks.into_view_mut();
        let Some(&(name, _, _)) = MARK_UNROLLED.iter().find(|(_, l, u)| *l == lanes && *u == unroll) else {
            return Err(Error::Shape {
                kernel: "mark_visits_unrolled",
                detail: format!("lanes = {lanes}, unroll = {unroll}; must be 4 or 8, and 2 or 4"),
            });
        };
        cfg.check(name)?;
        self.check_owned(name, [marks.owner()], stream)?;
        let grid = kernels_gpu::launch::unrolled_grid(marks.len() as u64, lanes, unroll, cfg.block, cfg.max_grid);
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe { raw::launch_mark_visits(self.shared.func(name)?, grid, cfg.block, &mut marks, stream.raw()) }
    }

    /// Queues the read-only ceiling kernel: sums `a` and `b` (16-byte aligned
    /// words of equal length) and writes the sum to `sink[0]` only if it equals
    /// `key`. Its time is what reading the two inputs of an add costs alone.
    pub fn ceiling_read<'a>(
        &self,
        block: u32,
        a: impl AsView<'a, u32>,
        b: impl AsView<'a, u32>,
        sink: impl AsViewMut<'a, u32>,
        key: u32,
        stream: &Stream,
    ) -> Result<()> {
        let (a, b, mut sink) = (a.into_view(), b.into_view(), sink.into_view_mut());
        let name = kernels_gpu::ceiling::CEILING[0];
        LaunchShape::with_block(block).check(name)?;
        self.check_owned(name, [a.owner(), b.owner(), sink.owner()], stream)?;
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_ceiling(
                name,
                self.shared.func(name)?,
                block,
                Ceiling::Read { a: &a, b: &b, sink: &mut sink, key },
                stream.raw(),
            )
        }
    }

    /// Queues the write-only ceiling kernel: `c[i] = value` for every word.
    pub fn ceiling_fill<'a>(&self, block: u32, c: impl AsViewMut<'a, u32>, value: u32, stream: &Stream) -> Result<()> {
        let mut c = c.into_view_mut();
        let name = kernels_gpu::ceiling::CEILING[1];
        LaunchShape::with_block(block).check(name)?;
        self.check_owned(name, [c.owner()], stream)?;
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_ceiling(name, self.shared.func(name)?, block, Ceiling::Fill { c: &mut c, value }, stream.raw())
        }
    }

    /// Queues the copy ceiling kernel (128-bit loads and stores): `c = a`.
    pub fn ceiling_copy<'a>(
        &self,
        block: u32,
        a: impl AsView<'a, u32>,
        c: impl AsViewMut<'a, u32>,
        stream: &Stream,
    ) -> Result<()> {
        let (a, mut c) = (a.into_view(), c.into_view_mut());
        let name = kernels_gpu::ceiling::CEILING[2];
        LaunchShape::with_block(block).check(name)?;
        self.check_owned(name, [a.owner(), c.owner()], stream)?;
        let _live = self.shared.bind()?;
        // SAFETY: the kernel is the one `name` names, resolved by that name from
        // this Gpu's own modules (the library's PTX, built from kernels-gpu, whose
        // table fixes its parameter list as this launch passes it).
        unsafe {
            raw::launch_ceiling(name, self.shared.func(name)?, block, Ceiling::Copy { a: &a, c: &mut c }, stream.raw())
        }
    }
}
