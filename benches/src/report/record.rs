//! `report verify-record`: turns a GPU test run (the cases file and the test log)
//! into `results/<gpu>/verify.json`, with the commit and the PTX it ran.

use serde_json::{json, Value};

use super::{driver_string, git_commit, sha256_hex};

/// Writes the record of a test run to `out`.
/// `report verify-record --cases FILE --log FILE --command CMD --out FILE`
pub fn verify_record(cases_path: &str, log_path: &str, command: &str, out: &str) -> Result<(), String> {
    let gpu = gpukern::Gpu::new(0).map_err(|e| e.to_string())?;
    let cases_text = std::fs::read_to_string(cases_path).unwrap_or_default();
    let cases: Vec<Value> = cases_text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    // A skipped case (too little memory) is neither a pass nor a failure: it is
    // listed with its reason so that the record shows what did not run.
    let skipped: Vec<&Value> = cases.iter().filter(|c| c["skipped"] == true).collect();
    let failed: Vec<&Value> = cases.iter().filter(|c| c["ok"] != true && c["skipped"] != true).collect();
    let log = std::fs::read_to_string(log_path).map_err(|e| format!("{log_path}: {e}"))?;
    // libtest summary lines: "test result: ok. 19 passed; 0 failed; 0 ignored; ..."
    let (mut passed, mut failed_tests, mut ignored) = (0u64, 0u64, 0u64);
    for line in log.lines().filter(|l| l.starts_with("test result:")) {
        let num = |key: &str| {
            line.split(';')
                .find(|p| p.contains(key))
                .and_then(|p| {
                    p.split_whitespace()
                        .rev()
                        .nth(1)
                        .and_then(|x| x.parse::<u64>().ok())
                        .or_else(|| p.split_whitespace().find_map(|x| x.parse::<u64>().ok()))
                })
                .unwrap_or(0)
        };
        passed += num(" passed");
        failed_tests += num(" failed");
        ignored += num(" ignored");
    }
    // The accuracy cases carry measurements (max ulp and where, correctly
    // rounded counts), so they are kept whole, pass or fail.
    let measured = |test: &str| cases.iter().filter(|c| c["test"] == test).cloned().collect::<Vec<Value>>();
    let failing_tests: Vec<&str> = log.lines().filter(|l| l.starts_with("test ") && l.ends_with("FAILED")).collect();
    let (ran, left) = which_ran(&log, command);
    let record = json!({
        "gpu": gpu.info().name,
        "driver": driver_string(&gpu),
        "git_commit": git_commit(),
        "ptx_sha256": sha256_hex(gpukern::PTX.as_bytes()),
        "ptx_sm90_sha256": sha256_hex(gpukern::PTX_SM90.as_bytes()),
        "command": command,
        "cases": cases.len(),
        "cases_passed": cases.len() - failed.len() - skipped.len(),
        "failures": failed.len(),
        "failed_cases": failed,
        "skipped": skipped.len(),
        "skipped_cases": skipped,
        "tests_passed": passed,
        "tests_failed": failed_tests,
        "tests_ignored": ignored,
        "failing_tests": failing_tests,
        // Which tests this run ran (binary::test), and which it left to
        // another command (`run.sh test` skips the exhaustive sweeps, which
        // `run.sh exhaustive` runs and records).
        "tests_run": ran,
        "tests_left_to_another_command": left,
        "math_exhaustive": measured("math_exhaustive"),
        "activation_rounding": measured("activation_rounding"),
    });
    std::fs::write(out, serde_json::to_string_pretty(&record).unwrap_or_default())
        .map_err(|e| format!("{out}: {e}"))?;
    println!(
        "verify record: {} cases, {} failures, {} skipped; tests {passed} passed, {failed_tests} failed, {ignored} ignored -> {out}",
        cases.len(),
        failed.len(),
        skipped.len()
    );
    if !failed.is_empty() || failed_tests > 0 {
        return Err("verification failed".into());
    }
    Ok(())
}

/// The tests a run's log shows run (`binary::test`, from the `=== binary`
/// headers and libtest's `test name ... ok|FAILED` lines), and the names its
/// command skipped (`--skip NAME`).
fn which_ran(log: &str, command: &str) -> (Vec<String>, Vec<String>) {
    let mut binary = "";
    let mut ran = Vec::new();
    for line in log.lines() {
        if let Some(b) = line.strip_prefix("=== ") {
            binary = b.trim();
        } else if let Some(rest) = line.strip_prefix("test ") {
            let Some((name, result)) = rest.split_once(" ... ") else { continue };
            if result.starts_with("ok") || result.starts_with("FAILED") {
                ran.push(format!("{binary}::{}", name.trim()));
            }
        }
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let left = words.windows(2).filter(|w| w[0] == "--skip").map(|w| w[1].trim_end_matches([';', ')']).to_string());
    (ran, left.collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_record_says_which_tests_ran_and_which_were_left() {
        let log = "=== gpukern-gpu_math\nrunning 2 tests\ntest math_sweeps_cover_exactly_their_output ... ok\n\
                   test math_exhaustive ... ignored\n=== gpukern-errors\ntest device_assert ... FAILED\n";
        let (ran, left) =
            super::which_ran(log, "./run.sh test (each with --include-ignored --skip math_exhaustive; x)");
        assert_eq!(ran, ["gpukern-gpu_math::math_sweeps_cover_exactly_their_output", "gpukern-errors::device_assert"]);
        assert_eq!(left, ["math_exhaustive"]);
    }
}
