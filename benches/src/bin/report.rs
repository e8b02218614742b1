//! `cargo xtask report`: how close each add variant comes to the memory wall, and
//! how it compares with torch and CUB. This binary only wires the command line to
//! `gpukern_benches::report`, where each section lives in its own module.

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};
use gpukern_benches::report::{self, markdown, plots, record, Opts};
use serde_json::Value;

/// GB/s of every add variant vs n, verified bit-exact, against the peak, the
/// measured copy, torch and CUB; writes report.{md,json,svg}, roofline.svg,
/// bars.svg and lead.svg.
#[derive(Parser)]
#[command(name = "report", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    opts: Opts,
    /// What goes to stdout: the main table (md) or the whole report (json).
    #[arg(long, value_enum, default_value_t = Format::Md)]
    format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Md,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Redraw report.md and the plots from a report's JSON (no GPU needed).
    Render {
        /// The report.json to draw from.
        #[arg(long)]
        from: PathBuf,
        /// Where report.md and the SVGs go.
        #[arg(long)]
        out: PathBuf,
    },
    /// Write verify.json from a GPU test run (used by run.sh test).
    VerifyRecord {
        /// The cases file the tests appended to (GPUKERN_CASES).
        #[arg(long)]
        cases: String,
        /// The test log.
        #[arg(long)]
        log: String,
        /// How the tests were run, for the record.
        #[arg(long)]
        command: String,
        /// Where verify.json goes.
        #[arg(long)]
        out: String,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Render { from, out }) => render(&from, &out),
        Some(Command::VerifyRecord { cases, log, command, out }) => record::verify_record(&cases, &log, &command, &out),
        None => cli.opts.normalized().and_then(|o| run(&o, cli.format)),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// Writes report.md and the three plots of `r` into `out`.
fn write_rendered(r: &Value, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let files = [
        ("report.md", markdown::markdown(r)),
        ("report.svg", plots::gbps_vs_n(r)),
        ("roofline.svg", plots::roofline(r)),
        ("bars.svg", plots::bars(r)),
        ("lead.svg", plots::lead(r)),
    ];
    for (name, text) in files {
        std::fs::write(out.join(name), text).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

fn run(o: &Opts, format: Format) -> Result<(), String> {
    let started = std::time::Instant::now();
    let (report, failures) = report::measure(o)?;
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    std::fs::write(o.out.join("report.json"), &json).map_err(|e| e.to_string())?;
    write_rendered(&report, &o.out)?;
    match format {
        Format::Json => println!("{json}"),
        Format::Md => println!("{}", markdown::main_table(&report, None)),
    }
    eprintln!(
        "wrote {}/report.md, report.json, report.svg, roofline.svg, bars.svg, lead.svg in {:.0} s",
        o.out.display(),
        started.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        return Err(format!("{} variant(s) failed verification: {}", failures.len(), failures.join("; ")));
    }
    Ok(())
}

/// `report render --from report.json --out DIR`.
fn render(from: &Path, out: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(from).map_err(|e| format!("{}: {e}", from.display()))?;
    let r: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", from.display()))?;
    write_rendered(&r, out)?;
    println!("rendered {}/report.md and its plots from {}", out.display(), from.display());
    Ok(())
}
