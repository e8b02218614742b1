//! Many small adds in one launch (`add_many`), timed against a plan (table
//! already on the device) and a loop of single adds; `torch._foreach_add` is
//! filled in from the peers. The JSON schema is [`ForeachRow`].

use gpukern::half::{bf16, f16};
use gpukern::reference::ReferenceAdd;
use gpukern::{DeviceVec, Dtype, Element, Gpu, Stream, Triple, ViewMut};
use serde::{Deserialize, Serialize};

use crate::{add_bytes, median};

type Res<T> = Result<T, String>;

fn e(err: gpukern::Error) -> String {
    err.to_string()
}

/// One list size of the foreach add.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ForeachRow {
    pub dtype: String,
    pub tensors: usize,
    pub elements: usize,
    /// `add_many`: table upload and one launch, device time per add.
    pub us_per_add: f64,
    /// The same list from a plan (table already on the device): one launch.
    pub plan_us_per_add: f64,
    /// One `add_auto` launch per triple, back to back on the stream.
    pub loop_us_per_add: f64,
    /// `torch._foreach_add` on the same lists, when torch is present.
    pub torch_us_per_add: Option<f64>,
    pub verified: bool,
    pub input_sets: usize,
}

/// Shortest spin before a foreach timing; it grows to three times what the host
/// needs to queue one call, so the events time the GPU's work, not the host's.
const FOREACH_SPIN_NS: u64 = 300_000;

/// The list of input set `set`: `tensors` triples of `elements`, reading `a` and
/// `b` at the set's offset and writing `out`, the set's part of the output.
fn triples<'a, T: Element>(
    a: &'a DeviceVec<T>,
    b: &'a DeviceVec<T>,
    out: ViewMut<'a, T>,
    set: usize,
    tensors: usize,
    elements: usize,
) -> gpukern::Result<Vec<Triple<'a, T>>> {
    let base = set * tensors * elements;
    let mut rest = out;
    let mut list = Vec::with_capacity(tensors);
    for i in 0..tensors {
        let (mine, tail) = rest.into_split_at(elements)?;
        let r = base + i * elements..base + (i + 1) * elements;
        list.push((a.slice(r.clone())?, b.slice(r)?, mine));
        rest = tail;
    }
    Ok(list)
}

/// The list of input set `set`, its outputs cut from the set's part of `c`.
fn set_list<'a, T: Element>(
    a: &'a DeviceVec<T>,
    b: &'a DeviceVec<T>,
    c: &'a mut DeviceVec<T>,
    set: usize,
    tensors: usize,
    elements: usize,
) -> gpukern::Result<Vec<Triple<'a, T>>> {
    let list = tensors * elements;
    triples(a, b, c.slice_mut(set * list..(set + 1) * list)?, set, tensors, elements)
}

/// Median device µs per add of `reps` calls of `queue(i)` (after 3 untimed),
/// each behind a spin three times as long as the host needs to queue one call.
fn per_add(
    gpu: &Gpu,
    stream: &Stream,
    tensors: usize,
    reps: usize,
    mut queue: impl FnMut(usize, &Stream) -> gpukern::Result<()>,
) -> Res<f64> {
    let host = std::time::Instant::now();
    queue(0, stream).map_err(e)?;
    let spin = FOREACH_SPIN_NS.max(3 * host.elapsed().as_nanos() as u64);
    stream.synchronize().map_err(e)?;
    let mut t = Vec::with_capacity(reps);
    for i in 0..reps + 3 {
        gpu.studies().spin(stream, spin).map_err(e)?;
        let ms = stream.time(|s| queue(i, s)).map_err(e)?;
        if i >= 3 {
            t.push(ms as f64 * 1e3 / tensors as f64);
        }
    }
    Ok(median(&mut t))
}

/// Times `add_many` over lists of `tensors` triples of `elements` each, rotating
/// disjoint lists so that one list never finds the last one's data in L2.
pub fn foreach<T: ReferenceAdd>(gpu: &Gpu, tensors: usize, elements: usize, stream: &Stream) -> Res<ForeachRow> {
    let list = tensors * elements;
    let bytes = add_bytes(T::DTYPE, list);
    let sets = ((4 * gpu.info().l2_bytes).div_ceil(bytes) as usize).clamp(1, 8);
    let host_a = crate::random_inputs::<T>(list * sets, 11);
    let host_b = crate::random_inputs::<T>(list * sets, 12);
    let a = gpu.upload(&host_a).map_err(e)?;
    let b = gpu.upload(&host_b).map_err(e)?;
    let mut c = gpu.alloc::<T>(list * sets).map_err(e)?;
    // Verify set 0 bit for bit.
    c.fill(T::from_bits32(0xdead_beef)).map_err(e)?;
    gpu.add_many(set_list(&a, &b, &mut c, 0, tensors, elements).map_err(e)?, stream).map_err(e)?;
    stream.synchronize().map_err(e)?;
    let got = c.slice(..list).map_err(e)?.to_vec().map_err(e)?;
    let want = crate::reference_par(&host_a[..list], &host_b[..list]);
    let verified = crate::first_mismatch_par(&got, &want).is_none();

    let reps = 30;
    let us = per_add(gpu, stream, tensors, reps, |i, s| {
        gpu.add_many(set_list(&a, &b, &mut c, i % sets, tensors, elements)?, s)
    })?;
    let lop = per_add(gpu, stream, tensors, reps.min(10), |i, s| {
        set_list(&a, &b, &mut c, i % sets, tensors, elements)?
            .into_iter()
            .try_for_each(|(x, y, z)| gpu.binary(gpukern::BinaryOp::Add, x, y, z, s))
    })?;
    // Plans: one per set, their tables uploaded once.
    let mut outs = Vec::with_capacity(sets);
    let mut rest = c.view_mut();
    for _ in 0..sets {
        let (head, tail) = rest.into_split_at(list).map_err(e)?;
        outs.push(head);
        rest = tail;
    }
    let plans = outs
        .into_iter()
        .enumerate()
        .map(|(set, out)| gpukern::AddManyPlan::new(gpu, triples(&a, &b, out, set, tensors, elements)?))
        .collect::<gpukern::Result<Vec<_>>>()
        .map_err(e)?;
    let plan = per_add(gpu, stream, tensors, reps, |i, s| plans[i % sets].launch(s))?;
    Ok(ForeachRow {
        dtype: T::DTYPE.name().into(),
        tensors,
        elements,
        us_per_add: us,
        plan_us_per_add: plan,
        loop_us_per_add: lop,
        torch_us_per_add: None,
        verified,
        input_sets: sets,
    })
}

/// Every list size of the issue: 1, 10, 100, 1000 triples of 2^10, 2^13, 2^16.
pub fn foreach_all(gpu: &Gpu, dtypes: &[Dtype], stream: &Stream) -> Res<Vec<ForeachRow>> {
    let mut rows = Vec::new();
    for &d in dtypes {
        for elements in [1usize << 10, 1 << 13, 1 << 16] {
            for tensors in [1usize, 10, 100, 1000] {
                rows.push(match d {
                    Dtype::F32 => foreach::<f32>(gpu, tensors, elements, stream)?,
                    Dtype::F16 => foreach::<f16>(gpu, tensors, elements, stream)?,
                    Dtype::Bf16 => foreach::<bf16>(gpu, tensors, elements, stream)?,
                });
            }
        }
    }
    Ok(rows)
}
