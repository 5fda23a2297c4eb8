//! Symbol addresses from ELF files and build-id debug files (being written).
