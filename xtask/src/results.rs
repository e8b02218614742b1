//! `import-results`: a GPU run's records into `results/<gpu>/`, and the README's
//! results block regenerated from them.

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

/// Rewrites the README between the results markers: the n = max table of
/// report.md and the plot, so the README never drifts from the committed results.
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
    .map(|(f, alt)| format!("![{alt}]({rel}/{f})\n\n"))
    .collect();
    let block = format!(
        "<!-- results:begin (written by `cargo xtask import-results`; do not edit) -->\n\
         Measured on **{}**, driver {}, commit `{}`; theoretical peak {:.0} GB/s, measured device-to-device copy {:.0} GB/s.\n\n\
         {lead}{ops}{heading}:\n\n{table}\n\n\
         ![GB/s vs n]({rel}/report.svg)\n\n{extra}Full report: [{rel}/report.md]({rel}/report.md).\n<!-- results:end -->",
        json["gpu"].as_str().unwrap_or("?"),
        json["driver"].as_str().unwrap_or("?"),
        json["git_commit"].as_str().unwrap_or("?").get(..12).unwrap_or("?"),
        json["peak_gbps"].as_f64().unwrap_or(0.0),
        json["copy_gbps"].as_f64().unwrap_or(0.0),
    );
    let readme_path = root().join("README.md");
    let readme = std::fs::read_to_string(&readme_path).map_err(|e| e.to_string())?;
    let (Some(a), Some(b)) = (readme.find("<!-- results:begin"), readme.find("<!-- results:end -->")) else {
        return Err("README.md has no results markers".into());
    };
    let new = format!("{}{}{}", &readme[..a], block, &readme[b + "<!-- results:end -->".len()..]);
    std::fs::write(&readme_path, new).map_err(|e| e.to_string())?;
    println!("README.md results block regenerated from {rel}");
    Ok(())
}
