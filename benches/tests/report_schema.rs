//! The committed report (`results/nvidia-h200/report.json`) still reads into the
//! typed sections and renders: a change to their serde structs or to the
//! Markdown/plots that no longer fits the JSON a GPU run wrote fails here, in CI.

use gpukern_benches::foreach::ForeachRow;
use gpukern_benches::hopper::{CeilingRow, TuneRow};
use gpukern_benches::lead::LeadRow;
use gpukern_benches::report::{markdown, plots};
use serde_json::Value;

/// Embedded at build time, so the test runs the same from a bundle on a GPU machine.
const COMMITTED: &str = include_str!("../../results/nvidia-h200/report.json");

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

#[test]
fn the_committed_report_renders() {
    let r = committed();
    let md = markdown::markdown(&r);
    for section in ["## Lead at 2^24 and 2^28", "## At n = 2^28", "## Where the ceiling is", "## Many small adds"] {
        assert!(md.contains(section), "report.md lacks {section}");
    }
    for svg in [plots::gbps_vs_n(&r), plots::roofline(&r), plots::bars(&r)] {
        assert!(svg.starts_with("<svg") && !svg.contains("plot failed"), "{}", &svg[..svg.len().min(200)]);
    }
}
