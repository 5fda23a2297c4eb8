//! The command line (clap derive only). Parsed arguments are turned at once into the clap-free
//! option structs of [`crate::config`]; nothing else in the crate sees clap types.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0   success
  1   finding: the analysis completed but a needed library was not found
  2   usage error (bad command line)
  3   the target does not exist, is not a regular file, or cannot be read
  4   the target is not an ELF object (empty, text, a #! script, another format)
  5   the target is a malformed ELF object (truncated, corrupt headers)
  6   the target is an ELF object ldcost does not analyse (32-bit, foreign architecture)
  7   a report could not be written
  70  internal error (a bug in ldcost; please report it)";

/// Where the time of process creation goes: exec, ld.so, fork.
#[derive(Debug, Parser)]
#[command(name = "ldcost", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What ld.so will load for TARGET, how it finds each object, and what linking will cost.
    #[command(after_help = EXIT_CODES)]
    Deps(DepsArgs),
}

#[derive(Debug, clap::Args)]
pub struct DepsArgs {
    /// The executable or shared library to analyse.
    pub target: PathBuf,
    /// Also write the report as JSON to FILE (`-` for standard output, which then carries
    /// only the JSON).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Show the dependencies as a tree, each under the object that loaded it (default).
    #[arg(long, conflicts_with = "flat")]
    pub tree: bool,
    /// Show the dependencies as a flat list in load order (the lookup scope), like ldd.
    #[arg(long)]
    pub flat: bool,
    /// Analyse the target alone without resolving its dependencies (works for foreign
    /// architectures).
    #[arg(long)]
    pub object_only: bool,
}
