//! `squall bench`: micro-benchmarks of engine parts, printed as tables of
//! figures measured side by side in one run (`bloom`: squall's key filter
//! against the bloomfilter crate; see `squall_bloom_bench`), and the
//! coordinator's scheduling rate (`scheduler`; see `crate::scheduler_bench`).

use std::process::ExitCode;

use datafusion::error::{DataFusionError, Result};
use squall_bloom_bench::keys::Distribution;
use squall_bloom_bench::{BenchOptions, header, lines, run, summary};
use squall_core::config::SquallConfig;

use super::BenchCommand;

pub(super) async fn bench_command(command: BenchCommand) -> Result<ExitCode> {
    match command {
        BenchCommand::Scheduler {
            tasks,
            stages,
            config,
        } => {
            let run = crate::scheduler_bench::run(tasks, stages, &config).await?;
            println!(
                "{} stages of about {} no-op tasks each, {} completion messages",
                run.stages,
                run.tasks / run.stages.max(1),
                run.messages
            );
            println!("{}", run.line());
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Bloom {
            keys,
            hits,
            probe_rows,
            rounds,
            fpp,
            distributions,
            seed,
        } => {
            let distributions = if distributions.is_empty() {
                Distribution::ALL.to_vec()
            } else {
                distributions
                    .iter()
                    .map(|d| parse_distribution(d))
                    .collect::<Result<_>>()?
            };
            let options = BenchOptions {
                distributions,
                keys,
                hit_fractions: hits,
                probe_rows,
                rounds,
                // squall.bloom.fpp, as the engine sizes its filters.
                fpp: fpp.unwrap_or(SquallConfig::default().bloom.fpp),
                seed,
            };
            println!("{}", header(&options));
            let cases = run(&options, |case| println!("{}", lines(case)))
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            println!("{}", summary(&cases));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn parse_distribution(name: &str) -> Result<Distribution> {
    Distribution::ALL
        .into_iter()
        .find(|d| d.to_string() == name)
        .ok_or_else(|| {
            DataFusionError::Configuration(format!(
                "unknown key distribution {name:?} (dense, orderkey or partsupp)"
            ))
        })
}
