//! perf_event_open counters (being written).
