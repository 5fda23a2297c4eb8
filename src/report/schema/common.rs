//! The small values every section is built of: a figure's [`Summary`] over runs and a sample's
//! [`Category`], converted from and back to [`crate::attribute`]'s own types.

use serde::{Deserialize, Serialize};

use crate::attribute::{categories, stats};

/// One figure over runs ([`stats::Summary`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// 95% confidence interval of the median.
    pub ci95: (f64, f64),
}

impl From<stats::Summary> for Summary {
    fn from(x: stats::Summary) -> Self {
        Summary {
            n: x.n,
            median: x.median,
            min: x.min,
            max: x.max,
            ci95: x.ci95,
        }
    }
}

impl From<Summary> for stats::Summary {
    fn from(x: Summary) -> Self {
        stats::Summary {
            n: x.n,
            median: x.median,
            min: x.min,
            max: x.max,
            ci95: x.ci95,
        }
    }
}

/// Where the time of a sample went ([`categories::Category`]). The snake_case names are the
/// taxonomy's stable identifiers ([`categories::Category::name`]), which the folded files
/// write too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    PageTableCopy,
    VmaDup,
    ForkOther,
    CowFault,
    FileFault,
    AnonFault,
    ExitTeardown,
    Wait,
    ExecKernel,
    LdsoMapping,
    LdsoRelocation,
    SymbolLookup,
    LazyBinding,
    Initializers,
    TlsSetup,
    CpuFeatures,
    LdsoOther,
    Application,
    KernelOther,
    Instrumentation,
    Unknown,
}

impl From<categories::Category> for Category {
    fn from(c: categories::Category) -> Self {
        use categories::Category as C;
        match c {
            C::PageTableCopy => Category::PageTableCopy,
            C::VmaDup => Category::VmaDup,
            C::ForkOther => Category::ForkOther,
            C::CowFault => Category::CowFault,
            C::FileFault => Category::FileFault,
            C::AnonFault => Category::AnonFault,
            C::ExitTeardown => Category::ExitTeardown,
            C::Wait => Category::Wait,
            C::ExecKernel => Category::ExecKernel,
            C::LdsoMapping => Category::LdsoMapping,
            C::LdsoRelocation => Category::LdsoRelocation,
            C::SymbolLookup => Category::SymbolLookup,
            C::LazyBinding => Category::LazyBinding,
            C::Initializers => Category::Initializers,
            C::TlsSetup => Category::TlsSetup,
            C::CpuFeatures => Category::CpuFeatures,
            C::LdsoOther => Category::LdsoOther,
            C::Application => Category::Application,
            C::KernelOther => Category::KernelOther,
            C::Instrumentation => Category::Instrumentation,
            C::Unknown => Category::Unknown,
        }
    }
}

impl From<Category> for categories::Category {
    fn from(c: Category) -> Self {
        use categories::Category as C;
        match c {
            Category::PageTableCopy => C::PageTableCopy,
            Category::VmaDup => C::VmaDup,
            Category::ForkOther => C::ForkOther,
            Category::CowFault => C::CowFault,
            Category::FileFault => C::FileFault,
            Category::AnonFault => C::AnonFault,
            Category::ExitTeardown => C::ExitTeardown,
            Category::Wait => C::Wait,
            Category::ExecKernel => C::ExecKernel,
            Category::LdsoMapping => C::LdsoMapping,
            Category::LdsoRelocation => C::LdsoRelocation,
            Category::SymbolLookup => C::SymbolLookup,
            Category::LazyBinding => C::LazyBinding,
            Category::Initializers => C::Initializers,
            Category::TlsSetup => C::TlsSetup,
            Category::CpuFeatures => C::CpuFeatures,
            Category::LdsoOther => C::LdsoOther,
            Category::Application => C::Application,
            Category::KernelOther => C::KernelOther,
            Category::Instrumentation => C::Instrumentation,
            Category::Unknown => C::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every category is written under the taxonomy's own name (the one the folded files
    /// use), reads back as itself, and the conversions are inverse.
    #[test]
    fn categories_are_written_under_the_taxonomys_names() {
        for c in categories::Category::ALL {
            let doc = Category::from(c);
            let text = serde_json::to_string(&doc).unwrap();
            assert_eq!(text, format!("\"{}\"", c.name()));
            let back: Category = serde_json::from_str(&text).unwrap();
            assert_eq!(categories::Category::from(back), c);
        }
        assert!(serde_json::from_str::<Category>("\"no_such_category\"").is_err());
    }

    #[test]
    fn a_summary_is_written_with_its_fields_in_order() {
        let s = Summary::from(stats::Summary {
            n: 3,
            median: 2.0,
            min: 1.0,
            max: 4.5,
            ci95: (1.0, 4.5),
        });
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(
            text,
            r#"{"n":3,"median":2.0,"min":1.0,"max":4.5,"ci95":[1.0,4.5]}"#
        );
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert_eq!(stats::Summary::from(back), stats::Summary::from(s));
    }
}
