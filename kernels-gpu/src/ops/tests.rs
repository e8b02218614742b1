//! The table's own checks: one kernel per (operation, dtype, pattern), named for it.

use super::*;

#[test]
fn every_combination_has_exactly_one_kernel_named_for_it() {
    assert_eq!(OP_KERNELS.len(), OpKind::ALL.len() * (3 * 2 + 1));
    for kind in OpKind::ALL {
        for dtype in Dtype::ALL {
            for pattern in OpPattern::ALL {
                let hits: std::vec::Vec<_> =
                    OP_KERNELS.iter().filter(|k| k.kind == kind && k.dtype == dtype && k.pattern == pattern).collect();
                let expected = usize::from(pattern != OpPattern::PackSm90 || dtype == Dtype::Bf16);
                assert_eq!(hits.len(), expected, "{kind:?} {dtype:?} {pattern:?}");
                let Some(k) = op_kernel(kind, dtype, pattern) else { continue };
                assert_eq!(k, hits[0]);
                assert_eq!(k.needs_sm90(), k.name.ends_with("_sm90"), "{}", k.name);
                assert!(k.name.starts_with(kind.name()) && k.name.contains(dtype.name()), "{}", k.name);
                assert_eq!(k.name.ends_with(dtype.name()), pattern == OpPattern::Scalar, "{}", k.name);
            }
        }
    }
}

#[test]
fn activations_are_the_unary_ops_with_a_math_function() {
    for op in UnaryOp::ALL {
        assert_eq!(op.activation().is_some(), UnaryOp::ACTIVATIONS.contains(&op), "{op:?}");
        assert!(OpKind::ALL.contains(&OpKind::Unary(op)), "{op:?}");
    }
    let exp = UnaryOp::Exp.activation().expect("exp is an activation");
    assert_eq!(exp(1.0).to_bits(), gpukern_device::math::exp(1.0).to_bits());
    let names: std::vec::Vec<_> = UnaryOp::ALL.iter().map(|o| o.name()).collect();
    assert_eq!(names.iter().collect::<std::collections::BTreeSet<_>>().len(), names.len(), "names are unique");
}

#[test]
fn add_rows_name_the_seed_kernels() {
    for k in OP_KERNELS.iter().filter(|k| k.kind == OpKind::Binary(BinaryOp::Add) && !k.needs_sm90()) {
        let seed = crate::add::ADD_KERNELS.iter().find(|a| a.name == k.name).expect(k.name);
        assert_eq!((seed.dtype, seed.lanes, seed.align()), (k.dtype, k.lanes(), k.align()), "{}", k.name);
    }
}
