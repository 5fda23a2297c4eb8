//! compare's results as the comparison document writes them ([`crate::report::schema::comparison`]):
//! one explicit conversion per type, so renaming a field here does not change the document.

use crate::report::schema::comparison as doc;

fn all<T, U: From<T>>(v: Vec<T>) -> Vec<U> {
    v.into_iter().map(U::from).collect()
}

impl From<super::stats::Change> for doc::Change {
    fn from(x: super::stats::Change) -> Self {
        doc::Change {
            base_n: x.base_n,
            head_n: x.head_n,
            base_median: x.base_median,
            head_median: x.head_median,
            change_pct: x.change_pct,
            ci95_pct: x.ci95_pct,
            p_value: x.p_value,
            noise_floor_pct: x.noise_floor_pct,
            significant: x.significant,
        }
    }
}

impl From<super::verdict::Metric> for doc::Metric {
    fn from(x: super::verdict::Metric) -> Self {
        doc::Metric {
            key: x.key,
            label: x.label,
            judged: x.judged,
            gated: x.gated,
            source: x.source,
            change: x.change.map(Into::into),
            missing: x.missing,
        }
    }
}

impl From<super::verdict::Verdict> for doc::Verdict {
    fn from(x: super::verdict::Verdict) -> Self {
        doc::Verdict {
            summary: x.summary,
            metrics: all(x.metrics),
            slower: x.slower,
            faster: x.faster,
            notes: x.notes,
        }
    }
}

impl From<super::factors::Row> for doc::Row {
    fn from(x: super::factors::Row) -> Self {
        doc::Row {
            name: x.name,
            base: x.base,
            head: x.head,
            delta: x.delta,
        }
    }
}

impl From<super::factors::ObjectChange> for doc::ObjectChange {
    fn from(x: super::factors::ObjectChange) -> Self {
        doc::ObjectChange {
            name: x.name,
            path: x.path,
            found_by: x.found_by,
            needed_by: x.needed_by,
            relocations: x.relocations,
            vmas: x.vmas,
            file_bytes: x.file_bytes,
        }
    }
}

impl From<super::factors::ObjectRow> for doc::ObjectRow {
    fn from(x: super::factors::ObjectRow) -> Self {
        doc::ObjectRow {
            name: x.name,
            base_path: x.base_path,
            head_path: x.head_path,
            rows: all(x.rows),
            within_noise: x.within_noise,
        }
    }
}

impl From<super::factors::Factors> for doc::Factors {
    fn from(x: super::factors::Factors) -> Self {
        doc::Factors {
            totals: all(x.totals),
            objects_added: all(x.objects_added),
            objects_removed: all(x.objects_removed),
            objects: all(x.objects),
            phases: all(x.phases),
            categories: all(x.categories),
            after_main_cpu: x.after_main_cpu.map(Into::into),
            after_main: all(x.after_main),
            notes: x.notes,
        }
    }
}

impl From<super::attribution::Term> for doc::Term {
    fn from(x: super::attribution::Term) -> Self {
        doc::Term {
            factor: x.factor,
            base: x.base,
            head: x.head,
            delta: x.delta,
            unit_ns: x.unit_ns,
            ns: x.ns,
        }
    }
}

impl From<super::attribution::Item> for doc::Item {
    fn from(x: super::attribution::Item) -> Self {
        doc::Item {
            object: x.object,
            change: x.change,
            ns: x.ns,
            measured_ns: x.measured_ns,
            terms: all(x.terms),
        }
    }
}

impl From<super::attribution::Part> for doc::Part {
    fn from(x: super::attribution::Part) -> Self {
        doc::Part {
            factor: x.factor,
            ns: x.ns,
            measured_ns: x.measured_ns,
            items: all(x.items),
        }
    }
}

impl From<super::attribution::UnitCost> for doc::UnitCost {
    fn from(x: super::attribution::UnitCost) -> Self {
        doc::UnitCost {
            fit: x.fit,
            unit: x.unit,
            ns: x.ns,
            ci95_ns: x.ci95_ns,
        }
    }
}

impl From<super::attribution::FitInfo> for doc::FitInfo {
    fn from(x: super::attribution::FitInfo) -> Self {
        doc::FitInfo {
            fit: x.fit,
            model: x.model,
            points: x.points,
            r_squared: x.r_squared,
        }
    }
}

impl From<super::attribution::ObjectInputs> for doc::ObjectInputs {
    fn from(x: super::attribution::ObjectInputs) -> Self {
        doc::ObjectInputs {
            side: x.side,
            object: x.object,
            path: x.path,
            relative: x.relative,
            symbolic: x.symbolic,
            plt: x.plt,
            lazy_plt: x.lazy_plt,
            lookups: x.lookups,
            probes: x.probes,
            self_answered: x.self_answered,
            relr: x.relr,
            initializers: x.initializers,
            relocation_ns: x.relocation_ns,
            initializers_ns: x.initializers_ns,
        }
    }
}

impl From<super::attribution::WhatIf> for doc::WhatIf {
    fn from(x: super::attribution::WhatIf) -> Self {
        doc::WhatIf {
            change: x.change,
            predicted_ns: x.predicted_ns,
            bound: x.bound,
            ci95_ns: x.ci95_ns,
            basis: x.basis,
        }
    }
}

impl From<super::attribution::Attribution> for doc::Attribution {
    fn from(x: super::attribution::Attribution) -> Self {
        doc::Attribution {
            measured_delta_ns: x.measured_delta_ns,
            instrumented_delta_ns: x.instrumented_delta_ns,
            explained_ns: x.explained_ns,
            explained_ci95_ns: x.explained_ci95_ns,
            unexplained_ns: x.unexplained_ns,
            explained_share: x.explained_share,
            explained_share_ci95: x.explained_share_ci95,
            parts: all(x.parts),
            unit_costs: all(x.unit_costs),
            fits: all(x.fits),
            inputs: all(x.inputs),
            what_if: all(x.what_if),
            notes: x.notes,
            reconciliation: x.reconciliation.map(Into::into),
        }
    }
}

impl From<super::attribution::Reconciliation> for doc::Reconciliation {
    fn from(x: super::attribution::Reconciliation) -> Self {
        doc::Reconciliation {
            verdict_ns: x.verdict_ns,
            verdict_source: x.verdict_source,
            counted_ns: x.counted_ns,
            stops_correction_ns: x.stops_correction_ns,
            per_object_ns: x.per_object_ns,
            between_runs_ns: x.between_runs_ns,
            by_factor: x
                .by_factor
                .into_iter()
                .map(|(factor, ns)| doc::FactorDelta { factor, ns })
                .collect(),
            explained_ns: x.explained_ns,
            unexplained_ns: x.unexplained_ns,
        }
    }
}

/// `report` renders a saved comparison's reconciliation with the same line as `compare`.
impl From<doc::Reconciliation> for super::attribution::Reconciliation {
    fn from(x: doc::Reconciliation) -> Self {
        super::attribution::Reconciliation {
            verdict_ns: x.verdict_ns,
            verdict_source: x.verdict_source,
            counted_ns: x.counted_ns,
            stops_correction_ns: x.stops_correction_ns,
            per_object_ns: x.per_object_ns,
            between_runs_ns: x.between_runs_ns,
            by_factor: x.by_factor.into_iter().map(|f| (f.factor, f.ns)).collect(),
            explained_ns: x.explained_ns,
            unexplained_ns: x.unexplained_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::report::schema::tests::{assert_valid, PLAIN, PROFILE};
    use crate::report::Document;

    /// A comparison built anew from two saved documents (not read back) writes only keys
    /// docs/comparison.schema.json lists, and every key it requires.
    #[test]
    fn a_comparison_built_from_documents_matches_the_schema_file() {
        let base: Document = serde_json::from_str(PLAIN).unwrap();
        let head: Document = serde_json::from_str(PROFILE).unwrap();
        let none: &[(String, String)] = &[];
        let cmp = super::super::comparison(
            "diff",
            (&base, (Some(Path::new("base.json")), none)),
            (&head, (Some(Path::new("head.json")), none)),
            vec![],
            true,
            Some(crate::config::Gate {
                pct: 5.0,
                only: None,
            }),
        );
        assert_valid(
            "comparison.schema.json",
            &serde_json::to_value(&cmp).unwrap(),
        );
    }
}
