//! Stage: the seed experiments. In: the seeds' programs (`probes/`, embedded) and the
//! libraries, linkages and counts an experiment asks for. Out: built programs and the figures
//! they print, for `ldcost experiment` to compare and explain.
//!
//! [`seeds`] builds the seeds' own programs (forktime, forktest, fork/vfork + execl and their
//! child) with the system compiler, static or dynamic, with the seeds' unused libraries, and
//! parses their output. Everything here runs programs; nothing needs root.

pub mod erik;
pub mod micah;
pub mod plot;
pub mod section;
pub mod seeds;
