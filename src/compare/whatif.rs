//! What-if: predictions of HEAD's start-up CPU under a change not made, from the unit costs
//! [`super::unit_costs`] fitted in this run: dropping each added library, BIND_NOW (or lazy
//! binding when HEAD binds at start-up), `-z pack-relative-relocs`, and `-Bsymbolic` /
//! `-fvisibility=hidden` for the objects whose lookups their own definitions answer.
//!
//! In: the two sides' per-object counts and the fitted [`Costs`]. Out: [`WhatIf`]s, each a
//! prediction (never measured) with the arithmetic that makes it.

use super::attribution::WhatIf;
use super::fit::predict;
use super::inputs::Side;
use super::text::num;
use super::unit_costs::{init_x, reloc_x, Costs};

fn us(ns: f64) -> String {
    format!("{:+.1} µs", ns / 1e3)
}

/// ns per start-up lookup of `o`'s: the lookup's own cost plus its probes at `o`'s average.
fn per_lookup(c: &Costs, o: &super::attribution::ObjectInputs, scope: usize) -> Option<f64> {
    let f = c.reloc.as_ref()?;
    let probes = if o.lookups > 0 && o.probes > 0 {
        o.probes as f64 / o.lookups as f64
    } else {
        scope as f64
    };
    Some(f.coef[2] + f.coef[3] * probes)
}

/// The predictions for HEAD.
pub(crate) fn what_if(sides: [&Side; 2], c: &Costs, added: &[String]) -> Vec<WhatIf> {
    let h = sides[1];
    let mut out = Vec::new();
    let scope = h.objects.len();
    for name in added {
        let Some(o) = h.get(name) else { continue };
        let mut ns = 0.0;
        let mut parts = Vec::new();
        if let Some(f) = &c.reloc {
            let v = predict(&reloc_x(o), &f.coef);
            ns += v;
            parts.push(format!("relocation {}", us(-v)));
        }
        if let Some(f) = &c.init {
            let v = predict(&init_x(o), &f.coef);
            ns += v;
            parts.push(format!("initializers {}", us(-v)));
        }
        if let Some(f) = &c.mapping {
            ns += f.coef[1];
            parts.push(format!("search & mapping {}", us(-f.coef[1])));
        }
        out.push(WhatIf {
            change: format!("without {name}"),
            predicted_ns: Some(-ns.round()),
            bound: false,
            basis: format!(
                "{} (its own {} relative relocations, {} lookups, {} probes, {} initializers; lookups other objects make into it would go on to the next object)",
                parts.join(", "),
                num(o.relative as f64),
                num(o.lookups as f64),
                num(o.probes as f64),
                o.initializers
            ),
        });
    }
    if c.reloc.is_some() {
        let lazy: u64 = h.objects.iter().map(|o| o.1.lazy_plt).sum();
        let sum = |pick: &dyn Fn(&super::attribution::ObjectInputs) -> u64| -> f64 {
            h.objects
                .iter()
                .map(|(_, o)| pick(o) as f64 * per_lookup(c, o, scope).unwrap_or(0.0))
                .sum()
        };
        if lazy > 0 {
            let ns = sum(&|o| o.lazy_plt);
            out.push(WhatIf {
                change: "LD_BIND_NOW=1 or -z now".into(),
                predicted_ns: Some(ns.round()),
                bound: false,
                basis: format!(
                    "{} lazy PLT slots become start-up lookups, each priced at its object's probes per lookup (later first calls no longer bind)",
                    num(lazy as f64)
                ),
            });
        } else {
            let eager: u64 = h.objects.iter().map(|o| o.1.plt).sum();
            if eager > 0 {
                let ns = sum(&|o| o.plt);
                out.push(WhatIf {
                    change: "lazy binding (without -z now / LD_BIND_NOW)".into(),
                    predicted_ns: Some(-ns.round()),
                    bound: false,
                    basis: format!(
                        "{} PLT slots bound at start-up would bind on their first call instead (paid then, by every forked child that calls one first)",
                        num(eager as f64)
                    ),
                });
            }
        }
        let unpacked: u64 = h
            .objects
            .iter()
            .map(|o| o.1.relative.saturating_sub(o.1.relr))
            .sum();
        if let Some(f) = &c.reloc {
            if unpacked > 0 {
                out.push(WhatIf {
                    change: "-z pack-relative-relocs".into(),
                    predicted_ns: Some(-(unpacked as f64 * f.coef[1]).round()),
                    bound: true,
                    basis: format!(
                        "at most: {} relative relocations × {:.1} ns; DT_RELR still writes every pointer, it saves reading their {} bytes of RELA entries",
                        num(unpacked as f64),
                        f.coef[1],
                        num(unpacked as f64 * 24.0)
                    ),
                });
            }
        }
        let mut own: Vec<(f64, String, u64)> = h
            .objects
            .iter()
            .skip(1)
            .filter(|o| o.1.self_answered > 0)
            .map(|(k, o)| {
                (
                    o.self_answered as f64 * per_lookup(c, o, scope).unwrap_or(0.0),
                    k.clone(),
                    o.self_answered,
                )
            })
            .collect();
        own.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (ns, k, n) in own.into_iter().take(3) {
            out.push(WhatIf {
                change: format!("-Bsymbolic or -fvisibility=hidden on {k}"),
                predicted_ns: Some(-ns.round()),
                bound: false,
                basis: format!(
                    "{} start-up lookups {k} answers itself would be bound at link time (relative relocations instead)",
                    num(n as f64)
                ),
            });
        }
    }
    out
}
