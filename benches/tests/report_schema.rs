//! The last full committed report (`results/nvidia-h200/session-2026-11-24/report-full-6343f44.json`,
//! every section, 2^10..2^28) still reads into the
//! typed sections and renders: a change to their serde structs or to the
//! Markdown/plots that no longer fits the JSON a GPU run wrote fails here, in CI.

use gpukern_benches::foreach::ForeachRow;
use gpukern_benches::hopper::{CeilingRow, TuneRow};
use gpukern_benches::report::lead::LeadRow;
use gpukern_benches::report::{markdown, plots};
use serde_json::Value;

/// Embedded at build time, so the test runs the same from a bundle on a GPU machine.
const COMMITTED: &str = include_str!("../../results/nvidia-h200/session-2026-11-24/report-full-6343f44.json");

fn committed() -> Value {
    serde_json::from_str(COMMITTED).expect("valid JSON")
}

#[test]
fn typed_sections_read_the_committed_report() {
    let r = committed();
    let lead: Vec<LeadRow> = serde_json::from_value(r["lead"].clone()).expect("lead rows");
    let foreach: Vec<ForeachRow> = serde_json::from_value(r["foreach"].clone()).expect("foreach rows");
    let ceiling: Vec<CeilingRow> = serde_json::from_value(r["ceiling"].clone()).expect("ceiling rows");
    let tuning: Vec<TuneRow> = serde_json::from_value(r["tuning"].clone()).expect("tuning rows");
    assert_eq!(lead.len(), 27, "9 sizes from 2^20 to 2^28 for three dtypes");
    assert_eq!(foreach.len(), 36, "4 list lengths x 3 sizes x 3 dtypes");
    assert!(!ceiling.is_empty() && !tuning.is_empty());
    assert!(lead.iter().all(|l| l.vs_best_peer.is_some()), "the committed run had peers");
    assert!(tuning.iter().all(|t| t.verified) && foreach.iter().all(|f| f.verified));
}

/// The older sections read into their typed rows too, with the counts a full
/// run writes.
#[test]
fn older_sections_read_into_their_typed_rows() {
    use gpukern_benches::ops::OpRow;
    use gpukern_benches::report::schema::*;
    let r = committed();
    fn rows<T: serde::de::DeserializeOwned>(r: &Value, key: &str) -> Vec<T> {
        serde_json::from_value(r[key].clone()).unwrap_or_else(|e| panic!("{key}: {e}"))
    }
    let main: Vec<MainRow> = rows(&r, "rows");
    let auto: Vec<AutoRow> = rows(&r, "auto");
    let blocks: Vec<BlockRow> = rows(&r, "block_sweep");
    let batched: Vec<BatchedRow> = rows(&r, "batched");
    let grid: Vec<GridRow> = rows(&r, "grid_sweep");
    let cpu: Vec<CpuRow> = rows(&r, "cpu");
    let kernels: Vec<KernelRow> = rows(&r, "kernels");
    let roofline: Vec<RooflineRow> = rows(&r, "roofline");
    let peers: Vec<PeerRow> = rows(&r, "peers");
    let studies: Vec<Study> = rows(&r, "studies");
    let ops: Vec<OpRow> = rows(&r, "ops");
    assert_eq!(main.len(), 31 * 19, "every add variant at 2^10..2^28");
    assert_eq!(auto.len(), 3 * 19);
    assert_eq!(ops.len(), 19 * 3 * 3, "nineteen operations (the activations too), three dtypes, three sizes");
    assert_eq!(roofline.len(), 3);
    assert!(main.iter().all(|m| m.verified) && auto.iter().all(|a| a.verified) && ops.iter().all(|o| o.verified));
    assert!(studies.iter().all(|s| s.verified()) && cpu.iter().all(|c| c.verified));
    // The committed run skipped the block/grid sweeps and the CPU baseline
    // (--no-sweep --no-cpu, for the device budget): those sections are empty
    // there; `rows` above still checks that they read.
    let _ = (blocks, grid);
    assert!(!batched.is_empty() && !kernels.is_empty() && !peers.is_empty());
    let chains: Vec<gpukern_benches::report::chains::ChainRow> = rows(&r, "chains");
    assert!(chains.iter().all(|c| c.verified) && chains.len() == 2 * 2 * 8, "add and mixed, f32 and bf16, 2^12..2^26");
}

/// The whole committed report is the serde form of `Report`: it reads into it,
/// and writing it back gives the same JSON, field for field.
#[test]
fn the_committed_report_is_the_serde_form_of_report() {
    use gpukern_benches::report::schema::Report;
    let r = committed();
    let typed: Report = serde_json::from_value(r.clone()).expect("the committed report reads into Report");
    assert_eq!(serde_json::to_value(&typed).expect("serialises"), r, "a field the struct does not carry, or lost");
}

#[test]
fn the_committed_report_renders() {
    let r = committed();
    let md = markdown::markdown(&r);
    for section in [
        "## Lead at 2^24 and 2^28",
        "## Lead with L2 warm",
        "## At n = 2^28",
        "## Where the ceiling is",
        "## Many small adds",
    ] {
        assert!(md.contains(section), "report.md lacks {section}");
    }
    for svg in [plots::gbps_vs_n(&r), plots::roofline(&r), plots::bars(&r), plots::lead(&r)] {
        assert!(svg.starts_with("<svg") && !svg.contains("plot failed"), "{}", &svg[..svg.len().min(200)]);
    }
}

/// The lead tables of the committed report: every dtype at 2^20..2^28 cold and
/// 2^16..2^22 warm, each row measured in the rounds, with its worst round.
#[test]
fn the_committed_lead_tables_cover_every_size_in_rounds() {
    use gpukern_benches::report::lead::{LeadRow, ROUNDS};
    let r = committed();
    for (key, logs) in [("lead", 20..=28u32), ("lead_warm", 16..=22)] {
        let rows: Vec<LeadRow> = serde_json::from_value(r[key].clone()).expect(key);
        for dtype in ["f32", "f16", "bf16"] {
            let ns: Vec<u32> = rows.iter().filter(|x| x.dtype == dtype).map(|x| x.n.trailing_zeros()).collect();
            assert_eq!(ns, logs.clone().collect::<Vec<_>>(), "{key} {dtype}");
        }
        for x in &rows {
            assert_eq!(x.rounds, ROUNDS, "{key} {} 2^{}", x.dtype, x.n.trailing_zeros());
            let (med, min) = (x.vs_best_peer.expect("peers ran"), x.vs_best_peer_min.expect("peers ran"));
            assert!(min <= med && min > 0.5, "{key} {}: {min} {med}", x.dtype);
        }
    }
}
