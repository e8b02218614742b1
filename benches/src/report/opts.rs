//! The report's options (its command line, through clap's derive).

use std::path::PathBuf;

use gpukern::{Dtype, Variant};

/// What to measure (the report's command line; see `report --help`).
#[derive(Clone, Debug, clap::Args)]
pub struct Opts {
    /// Smallest n = 2^N of the main sweep.
    #[arg(long = "min-log2", default_value_t = 10)]
    pub min_log2: u32,
    /// Largest n = 2^N of the main sweep (at most 31).
    #[arg(long = "max-log2", default_value_t = 28)]
    pub max_log2: u32,
    /// Dtypes, comma-separated: f32,f16,bf16.
    #[arg(long = "dtype", value_delimiter = ',', value_parser = parse_dtype, default_values = ["f32", "f16", "bf16"])]
    pub dtypes: Vec<Dtype>,
    /// Kernels, comma-separated (e.g. add_f32x4,add_f16x8_pack); default all.
    #[arg(long = "variant", value_delimiter = ',', value_parser = parse_variant)]
    pub variants: Vec<Variant>,
    /// CUDA device index.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Threads per block for the main sweep.
    #[arg(long, default_value_t = 256)]
    pub block: u32,
    /// Also time the peers: torch.add and torch._foreach_add through peers.py (if
    /// python3 has torch) and CUB's DeviceTransform (if nvcc is here).
    #[arg(long)]
    pub peers: bool,
    /// Skip the CPU baseline.
    #[arg(long = "no-cpu", action = clap::ArgAction::SetFalse)]
    pub cpu: bool,
    /// Skip the block-size and grid-size sweeps.
    #[arg(long = "no-sweep", action = clap::ArgAction::SetFalse)]
    pub sweep: bool,
    /// Skip the seed-003 studies (matmul, count, coalescing, transpose, fusion).
    #[arg(long = "no-studies", action = clap::ArgAction::SetFalse)]
    pub studies: bool,
    /// Skip the chains section (16 dependent operations: plain, PDL, graphs, torch).
    #[arg(long = "no-chains", action = clap::ArgAction::SetFalse)]
    pub chains: bool,
    /// Skip the norms section (RMSNorm, LayerNorm, softmax beside neg and torch).
    #[arg(long = "no-norms", action = clap::ArgAction::SetFalse)]
    pub norms: bool,
    /// In the norms section, time torch eager only (torch.compile of every
    /// op × dtype × shape takes minutes of compiling).
    #[arg(long = "no-torch-compile")]
    pub no_torch_compile: bool,
    /// Skip the norms section's plan study (every plan at six shapes).
    #[arg(long = "no-norms-study", action = clap::ArgAction::SetFalse)]
    pub norms_study: bool,
    /// The norms section alone (with its torch columns under --peers): the
    /// main sweep at 2^20 only, no other section, no other peer.
    #[arg(long = "norms-only")]
    pub norms_only: bool,
    /// Skip the lead sections (tuning sweep, ceiling, add_many).
    #[arg(long = "no-lead", action = clap::ArgAction::SetFalse)]
    pub lead: bool,
    /// Skip the element-wise operations (sub, mul, div, min, max, neg, abs,
    /// relu, axpby beside add at 2^20, 2^24, 2^28).
    #[arg(long = "no-ops", action = clap::ArgAction::SetFalse)]
    pub ops: bool,
    /// A first look: the main sweep at 2^20, 2^24 and 2^28 only, no other section
    /// (peers only if --peers is given too).
    #[arg(long)]
    pub quick: bool,
    /// Where report.{md,json,svg} and the other plots go.
    #[arg(long, default_value = "report-out")]
    pub out: PathBuf,
}

fn parse_dtype(s: &str) -> Result<Dtype, String> {
    Dtype::ALL.into_iter().find(|d| d.name() == s).ok_or(format!("unknown dtype {s} (f32, f16, bf16)"))
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    Variant::from_name(s).ok_or(format!("unknown variant {s}"))
}

impl Opts {
    /// Checks the size range and applies `--quick` and the defaults that depend
    /// on other options.
    pub fn normalized(mut self) -> Result<Opts, String> {
        if self.min_log2 > self.max_log2 || self.max_log2 > 31 {
            return Err(format!("bad size range 2^{}..2^{}", self.min_log2, self.max_log2));
        }
        if self.variants.is_empty() {
            self.variants = Variant::ALL.to_vec();
        }
        self.variants.retain(|v| self.dtypes.contains(&v.dtype()));
        if self.norms_only {
            (self.cpu, self.sweep, self.studies, self.lead, self.ops) = (false, false, false, false, false);
            (self.chains, self.norms, self.min_log2, self.max_log2) = (false, true, 20, 20);
        }
        if self.quick {
            (self.cpu, self.sweep, self.studies, self.lead, self.ops) = (false, false, false, false, false);
            self.chains = false;
            self.norms = false;
        }
        Ok(self)
    }

    /// The n of the main sweep.
    pub fn sizes(&self) -> Vec<usize> {
        if self.quick {
            [20u32, 24, 28]
                .into_iter()
                .filter(|&k| (self.min_log2..=self.max_log2).contains(&k))
                .map(|k| 1 << k)
                .collect()
        } else {
            (self.min_log2..=self.max_log2).map(|k| 1usize << k).collect()
        }
    }
}
