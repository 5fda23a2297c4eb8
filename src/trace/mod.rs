//! Live processes under ptrace (being written).
