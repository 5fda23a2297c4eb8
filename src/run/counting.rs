//! perf's account of where each counted figure came from, as the profile document writes it.
//! The conversions live here, in the driver: `report` may not use `perf` (a capture module),
//! and `perf` may not use `report` (`report` uses `profile`, which uses `perf`).

use crate::perf;
use crate::report::schema::profile as doc;

impl From<perf::Source> for doc::Source {
    fn from(s: perf::Source) -> Self {
        match s {
            perf::Source::Perf => doc::Source::Perf,
            perf::Source::PerfUserMode => doc::Source::PerfUserMode,
            perf::Source::ProcSchedstat => doc::Source::ProcSchedstat,
            perf::Source::ProcStat => doc::Source::ProcStat,
        }
    }
}

impl From<doc::Source> for perf::Source {
    fn from(s: doc::Source) -> Self {
        match s {
            doc::Source::Perf => perf::Source::Perf,
            doc::Source::PerfUserMode => perf::Source::PerfUserMode,
            doc::Source::ProcSchedstat => perf::Source::ProcSchedstat,
            doc::Source::ProcStat => perf::Source::ProcStat,
        }
    }
}

impl From<perf::Counting> for doc::Counting {
    fn from(c: perf::Counting) -> Self {
        doc::Counting {
            sources: c.sources.into_iter().map(|(k, s)| (k, s.into())).collect(),
            fallback: c.fallback.map(|f| doc::Fallback {
                paranoid: f.paranoid,
                refusal: f.refusal,
                missing: f.missing,
                fix: f.fix,
            }),
        }
    }
}

impl From<doc::Counting> for perf::Counting {
    fn from(c: doc::Counting) -> Self {
        perf::Counting {
            sources: c.sources.into_iter().map(|(k, s)| (k, s.into())).collect(),
            fallback: c.fallback.map(|f| perf::Fallback {
                paranoid: f.paranoid,
                refusal: f.refusal,
                missing: f.missing,
                fix: f.fix,
            }),
        }
    }
}
