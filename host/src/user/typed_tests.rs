//! Tests of the typed-kernel checks that need no GPU.

use crate::user::signature::{check_signature, describe};
use gpukern_device::kernel::{input, output, scalar, Bf16Bits, KERNEL_MAGIC, KERNEL_VERSION};

fn bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn entry() -> Result<Option<Vec<u32>>, String> {
    Ok(Some(vec![8, 8, 8, 8, 4]))
}

#[test]
fn a_matching_manifest_and_entry_pass() {
    let params = [input::<f32>(), output::<f32>(), scalar::<f32>()];
    let good = bytes(&[KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 1, 2, 1, 3, 1]);
    assert_eq!(check_signature(&good, &params, &[], entry()), Ok(()));
}

#[test]
fn mismatches_name_the_parameter_and_both_types() {
    let params = [input::<f32>(), output::<f32>(), scalar::<f32>()];
    let check = |words: &[u32]| check_signature(&bytes(words), &params, &[], entry()).unwrap_err();
    // Another element type: the handle's and the kernel's, in Rust words.
    let e = check(&[KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 12, 2, 1, 3, 1]);
    assert_eq!(e, "parameter 0: this handle expects `&[f32]`, the kernel takes `&[f16]`");
    // Another kind.
    let e = check(&[KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 1, 1, 1, 3, 1]);
    assert_eq!(e, "parameter 1: this handle expects `&mut [f32]`, the kernel takes `&[f32]`");
    let e = check(&[KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 1, 2, 1, 3, 2]);
    assert_eq!(e, "parameter 2: this handle expects `f32`, the kernel takes `f64`");
    // Another count: both lists.
    let e = check(&[KERNEL_MAGIC, KERNEL_VERSION, 2, 1, 1, 2, 1]);
    assert_eq!(e, "the kernel takes 2 parameters (&[f32], &mut [f32]), this handle passes 3 (&[f32], &mut [f32], f32)");
    // Not a manifest, another version, a count that disagrees with the words.
    assert!(check(&[0, 0, 0, 0]).contains("not a typed-kernel manifest"));
    assert!(check(&[KERNEL_MAGIC]).contains("not a typed-kernel manifest"));
    assert!(check(&[KERNEL_MAGIC, KERNEL_VERSION + 1, 3, 1, 1, 2, 1, 3, 1]).contains("version"));
    assert!(check(&[KERNEL_MAGIC, KERNEL_VERSION, 4, 1, 1, 2, 1, 3, 1]).contains("malformed"));
    assert!(check(&[KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 1, 2, 1, 3]).contains("malformed"));
}

#[test]
fn mismatches_name_the_parameter_by_name_where_the_handle_knows_it() {
    let params = [input::<f32>(), output::<f32>(), scalar::<f32>()];
    let names = ["x", "partial", "k"];
    let check = |words: &[u32], entry| check_signature(&bytes(words), &params, &names, entry).unwrap_err();
    let e = check(&[KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 1, 2, 3, 3, 1], entry());
    assert_eq!(e, "parameter 1 `partial`: this handle expects `&mut [f32]`, the kernel takes `&mut [u32]`");
    let good = [KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 1, 2, 1, 3, 1];
    let e = check(&good, Ok(Some(vec![8, 8, 8, 8, 8])));
    assert_eq!(e, "parameter 2 `k` (`f32`): the PTX entry's slot 4 is 8 bytes, the handle passes 4");
    // Fewer names than parameters (a hand-written signature): the index alone.
    let e = check_signature(&bytes(&good), &params, &names[..1], Ok(Some(vec![8, 8, 8, 8, 8]))).unwrap_err();
    assert!(e.starts_with("parameter 2 (`f32`)"), "{e}");
}

#[test]
fn entry_mismatches_name_the_parameter() {
    let params = [input::<f32>(), output::<f32>(), scalar::<f32>()];
    let good = bytes(&[KERNEL_MAGIC, KERNEL_VERSION, 3, 1, 1, 2, 1, 3, 1]);
    let e = check_signature(&good, &params, &[], Ok(Some(vec![8, 8, 8, 8, 8]))).unwrap_err();
    assert_eq!(e, "parameter 2 (`f32`): the PTX entry's slot 4 is 8 bytes, the handle passes 4");
    let e = check_signature(&good, &params, &[], Ok(Some(vec![8, 8, 8, 8]))).unwrap_err();
    assert!(e.contains("4 parameter slots, the handle passes 5"), "{e}");
    assert!(check_signature(&good, &params, &[], Ok(None)).unwrap_err().contains("no such .entry"));
    let e = check_signature(&good, &params, &[], Err("`.entry k` is defined twice".into())).unwrap_err();
    assert!(e.contains("defined twice"), "{e}");
}

#[test]
fn every_kernel_elem_has_a_host_type_and_a_name() {
    use crate::user::typed::{HostElem, ParamOf};
    use gpukern_device::kernel::{F16Bits, Scalar};
    fn host<T: HostElem>() -> (u32, usize, usize) {
        (T::CODE, std::mem::size_of::<T>(), std::mem::size_of::<T::Host>())
    }
    let all = [
        host::<f32>(),
        host::<f64>(),
        host::<u32>(),
        host::<i32>(),
        host::<u64>(),
        host::<i64>(),
        host::<u16>(),
        host::<i16>(),
        host::<u8>(),
        host::<i8>(),
        host::<Bf16Bits>(),
        host::<F16Bits>(),
    ];
    // Codes 1..=12, each once, each with a host type of its size and a name.
    for (i, (code, d, h)) in all.iter().enumerate() {
        assert_eq!(*code, i as u32 + 1);
        assert_eq!(d, h);
        assert!(!describe(3, *code).starts_with('<'), "{code}");
    }
    assert_eq!(<Scalar<i8> as ParamOf>::PARAM, scalar::<i8>());
    assert_eq!(describe(1, 99), "&[<element code 99>]");
}
