//! `import-results`: a GPU run's records into `results/<gpu>/`, and the
//! blocks generated from them: the run's summary in `results/<gpu>/README.md`
//! and the GPU's headline table in the top README.

use std::path::{Path, PathBuf};

use super::{root, Res};

/// Files a GPU run may produce that belong under `results/<gpu>/`.
const RESULT_FILES: [&str; 10] = [
    "report.json",
    "report.md",
    "report.svg",
    "roofline.svg",
    "bars.svg",
    "lead.svg",
    "verify.json",
    "sanitizer.json",
    "cases.jsonl",
    "bench.log",
];

pub(crate) fn import_results(dirs: &[String]) -> Res {
    if dirs.is_empty() {
        return Err("give the folders of a GPU run (e.g. the report's --out and run.sh test's OUT)".into());
    }
    let mut gpu_dir: Option<PathBuf> = None;
    let mut files = Vec::new();
    for d in dirs {
        for f in RESULT_FILES {
            let p = Path::new(d).join(f);
            if p.is_file() {
                if f.ends_with(".json") && gpu_dir.is_none() {
                    let v: serde_json::Value =
                        serde_json::from_str(&std::fs::read_to_string(&p).map_err(|e| e.to_string())?)
                            .map_err(|e| format!("{}: {e}", p.display()))?;
                    if let Some(g) = v["gpu"].as_str() {
                        let slug: String =
                            g.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
                        gpu_dir = Some(root().join("results").join(slug.trim_matches('-')));
                    }
                }
                files.push((f, p));
            }
        }
    }
    let dest = gpu_dir.ok_or("no report.json or verify.json with a `gpu` field in those folders")?;
    std::fs::create_dir_all(&dest).map_err(|e| e.to_string())?;
    for (name, from) in &files {
        let to = dest.join(name);
        if to.canonicalize().ok() == from.canonicalize().ok() {
            continue; // importing the results folder itself: nothing to copy
        }
        if to.exists() {
            // Copies of read-only fetched files are read-only too; replace them.
            std::fs::remove_file(&to).map_err(|e| format!("{}: {e}", to.display()))?;
        }
        std::fs::copy(from, &to).map_err(|e| format!("copy {}: {e}", from.display()))?;
        let mut perms = std::fs::metadata(&to).map_err(|e| e.to_string())?.permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&to, perms).map_err(|e| e.to_string())?;
        println!("{} -> {}", from.display(), dest.join(name).display());
    }
    readme_results(&dest)
}

/// Rewrites the generated blocks: in `results/<gpu>/README.md`, the run's
/// summary (the lead table, the element-wise operations, the n = max table of
/// report.md and the plots); in the top README, the GPU's headline table. So
/// neither drifts from the committed results.
fn readme_results(dest: &Path) -> Res {
    let md = std::fs::read_to_string(dest.join("report.md")).map_err(|e| format!("report.md: {e}"))?;
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dest.join("report.json")).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let start = md.find("## At n = ").ok_or("report.md has no `## At n =` section")?;
    let section = &md[start..];
    let table: String = section.lines().skip(2).take_while(|l| l.starts_with('|')).collect::<Vec<_>>().join("\n");
    let rel = dest.strip_prefix(root()).unwrap_or(dest).display().to_string();
    let heading = section.lines().next().unwrap_or("").trim_start_matches("## ");
    // The lead table (automatic path vs the best of CUB and torch), when the run had peers.
    let lead = md
        .find("## Lead at 2^24 and 2^28")
        .map(|i| {
            let t: Vec<&str> = md[i..].lines().skip(2).take_while(|l| l.starts_with('|')).collect();
            format!("Lead of the automatic path over the best peer (CUB `DeviceTransform`, `torch.add`), same run:\n\n{}\n\n", t.join("\n"))
        })
        .unwrap_or_default();
    // The element-wise operations, when the run measured them.
    let ops = md
        .find("## Element-wise operations")
        .map(|i| {
            let t: Vec<&str> = md[i..].lines().skip(1).skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).collect();
            format!("Every element-wise operation through the automatic choice, beside `add` and torch, same run:\n\n{}\n\n", t.join("\n"))
        })
        .unwrap_or_default();
    // The other plots, when the run drew them.
    let extra: String = [
        ("lead.svg", "Ratio to the best peer against n, L2 cold and warm"),
        ("roofline.svg", "Roofline"),
        ("bars.svg", "Every variant at the largest n, beside the peers"),
    ]
    .iter()
    .filter(|(f, _)| dest.join(f).is_file())
    .map(|(f, alt)| format!("![{alt}]({f})\n\n"))
    .collect();
    let sha = |k: &str| json[k].as_str().unwrap_or("?").get(..8).unwrap_or("?").to_string();
    let facts = format!(
        "driver {}, commit `{}`, PTX sha256 `{}…` (sm_70) and `{}…` (sm_90); theoretical peak {:.0} GB/s, measured device-to-device copy {:.0} GB/s.",
        json["driver"].as_str().unwrap_or("?"),
        json["git_commit"].as_str().unwrap_or("?").get(..12).unwrap_or("?"),
        sha("ptx_sha256"),
        sha("ptx_sm90_sha256"),
        json["peak_gbps"].as_f64().unwrap_or(0.0),
        json["copy_gbps"].as_f64().unwrap_or(0.0),
    );
    let gpu = json["gpu"].as_str().unwrap_or("?");
    // The run's own README: its plots and the full report sit beside it.
    let block = format!(
        "{BEGIN} (written by `cargo xtask import-results`; do not edit) -->\n\
         Measured on **{gpu}**, {facts}\n\n{lead}{ops}{heading}:\n\n{table}\n\n\
         ![GB/s vs n](report.svg)\n\n{extra}Full report: [report.md](report.md).\n{END}"
    );
    let own = dest.join("README.md");
    let text = std::fs::read_to_string(&own).unwrap_or_else(|_| format!("# {gpu}\n\n"));
    std::fs::write(&own, replace_block(&text, BEGIN, END, &block)).map_err(|e| e.to_string())?;
    println!("{rel}/README.md: results block regenerated");
    // The top README: one headline table per GPU, between that GPU's markers.
    let slug = dest.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let (begin, end) = (format!("<!-- results:{slug}:begin"), format!("<!-- results:{slug}:end -->"));
    let readme_path = root().join("README.md");
    let readme = std::fs::read_to_string(&readme_path).map_err(|e| e.to_string())?;
    if !readme.contains(&begin) || !readme.contains(&end) {
        println!("README.md has no `{begin}` block: add one where {slug}'s headline table belongs");
        return Ok(());
    }
    let headline = format!(
        "{begin} (written by `cargo xtask import-results`; do not edit) -->\n\
         **{gpu}** ([record]({rel}/README.md)): {facts}\n\n{}\n{end}",
        headline_table(&md),
    );
    std::fs::write(&readme_path, replace_block(&readme, &begin, &end, &headline)).map_err(|e| e.to_string())?;
    println!("README.md: {slug}'s headline table regenerated from {rel}");
    Ok(())
}

/// The markers of a results README's generated block.
const BEGIN: &str = "<!-- results:begin";
const END: &str = "<!-- results:end -->";

/// `text` with the block from `begin` to `end` (markers included) replaced by
/// `block`, or with `block` appended when it has none.
fn replace_block(text: &str, begin: &str, end: &str, block: &str) -> String {
    match (text.find(begin), text.find(end)) {
        (Some(a), Some(b)) if a < b => format!("{}{}{}", &text[..a], block, &text[b + end.len()..]),
        _ => format!("{}\n{block}\n", text.trim_end()),
    }
}

/// The lead at 2^24 and 2^28 from report.md, a few columns: the automatic
/// path's GB/s, the best peer's, their ratio, and the 16-launch bursts with
/// PDL against torch's.
fn headline_table(md: &str) -> String {
    let mut out = String::from(
        "| dtype | n | GB/s (% of peak) | best peer GB/s | vs best peer (worst round) | burst + PDL vs torch burst |\n\
         |---|---|---:|---:|---:|---:|\n",
    );
    let Some(i) = md.find("## Lead at 2^24 and 2^28") else {
        return "(this run has no lead table: run the report with --peers)\n".into();
    };
    for row in md[i..].lines().skip(4).take_while(|l| l.starts_with('|')) {
        let c: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        if c.len() < 13 {
            continue;
        }
        let peer = c[5].parse::<f64>().unwrap_or(0.0).max(c[6].parse::<f64>().unwrap_or(0.0));
        out +=
            &format!("| {} | {} | {} ({}%) | {peer:.0} | {} ({}) | {} |\n", c[0], c[1], c[3], c[4], c[7], c[8], c[12]);
    }
    out
}
