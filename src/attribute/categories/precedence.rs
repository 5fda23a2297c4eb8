//! The precedence rules: which of a stack's matching frames decides, and how context changes
//! what a teardown, on-behalf or in-fork frame means (the module documentation of
//! [`super`] says it in prose).
//!
//! In: a call stack, leaf first, as anything that is a [`StackFrame`]. Out: its [`Category`].
//! Allocates nothing; the rules come from the compiled table ([`super::table`]).

use super::table::{clean_name, is_ldso_object, kernel_rule, table, user_rule, Kind, Table};
use super::Category::{self, *};
use super::StackFrame;

/// What the user part of a stack says, or None when there is no user frame.
fn classify_user<F: StackFrame>(t: &Table, stack: &[F]) -> Option<Category> {
    let mut any_user = false;
    let mut named = None;
    let mut in_ldso = false;
    let mut known = false;
    for f in stack.iter().filter(|f| !f.is_kernel()) {
        any_user = true;
        let ldso = f.object().is_some_and(is_ldso_object);
        let name = clean_name(f.name());
        if let Some(rule) = user_rule(t, name, ldso) {
            if rule.kind == Kind::Encloses {
                return Some(rule.category);
            }
            named = named.or(Some(rule.category));
        }
        in_ldso |= ldso;
        known |= f
            .object()
            .is_some_and(|o| !o.is_empty() && o != "[unknown]")
            || !(name.is_empty() || name == "[unknown]");
    }
    if !any_user {
        return None;
    }
    Some(match named {
        Some(c) => c,
        None if in_ldso => LdsoOther,
        None if known => Application,
        None => Unknown,
    })
}

/// The category of a call stack, leaf first. See the module documentation for the precedence.
pub fn classify<F: StackFrame>(stack: &[F]) -> Category {
    let t = table();
    // One pass over the kernel frames: the innermost deciding rule, the innermost in-fork rule,
    // and the context that gives teardown, on-behalf and in-fork frames their meaning.
    let mut first: Option<(usize, Category, Kind)> = None;
    let mut first_in_fork: Option<usize> = None;
    let (mut exec, mut exit, mut dup_mmap, mut any_kernel) = (false, false, false, false);
    for (i, f) in stack.iter().enumerate() {
        if !f.is_kernel() {
            continue;
        }
        any_kernel = true;
        let name = clean_name(f.name());
        let Some((cat, kind)) = kernel_rule(t, name) else {
            continue;
        };
        if kind == Kind::InFork {
            first_in_fork = first_in_fork.or(Some(i));
        } else if first.is_none() {
            // A fixed rule decides alone unless an in-fork frame below it waits for dup_mmap.
            if kind == Kind::Fixed && first_in_fork.is_none() {
                return cat;
            }
            first = Some((i, cat, kind));
        }
        if kind == Kind::Fixed {
            exec |= cat == ExecKernel;
            exit |= cat == ExitTeardown;
            dup_mmap |= cat == VmaDup;
        }
        exit |= name == "exit_mmap";
    }
    // Kernel work someone asked for: exec's, or the user side's.
    let on_behalf = |exec: bool| -> Category {
        if exec {
            return ExecKernel;
        }
        match classify_user(t, stack) {
            Some(LdsoOther) => LdsoMapping,
            Some(Application) | Some(Unknown) | None => KernelOther,
            Some(c) => c,
        }
    };
    if let Some(j) = first_in_fork.filter(|_| dup_mmap) {
        if first.is_none_or(|(i, _, _)| j < i) {
            return VmaDup;
        }
    }
    match first {
        Some((_, cat, Kind::Fixed)) => cat,
        Some((_, _, Kind::Teardown)) if exec => ExecKernel,
        Some((_, _, Kind::Teardown)) if exit => ExitTeardown,
        Some((i, _, Kind::Teardown)) => {
            // Unmapping inside a syscall made for someone (munmap, mmap over a reservation).
            let asked = stack[i..].iter().filter(|f| f.is_kernel()).any(|f| {
                kernel_rule(t, clean_name(f.name())).is_some_and(|(_, k)| k == Kind::OnBehalf)
            });
            if asked {
                on_behalf(false)
            } else {
                ExitTeardown
            }
        }
        Some((_, _, _)) => on_behalf(exec),
        None => match classify_user(t, stack) {
            Some(Application) | Some(Unknown) | None if any_kernel => KernelOther,
            Some(c) => c,
            None => Unknown,
        },
    }
}

/// Rule 5, phase-aware: a user-mode sample (no kernel frame) whose stack decided nothing but
/// [`Application`] or [`LdsoOther`] (no enclosing or named frame: code without frame pointers,
/// such as a static constructor, or an anonymous stretch of ld.so) takes the category of the
/// phase it fell in, `phase` (initializers in a `call_init` span, relocation in a
/// `_dl_relocate_object` span). Whatever the stack decided otherwise stands: faults stay faults,
/// kernel samples stay kernel, a named frame keeps its category.
pub fn in_phase<F: StackFrame>(cat: Category, stack: &[F], phase: Option<Category>) -> Category {
    match phase {
        Some(p)
            if matches!(cat, Application | LdsoOther)
                && !stack.is_empty()
                && stack.iter().all(|f| !f.is_kernel()) =>
        {
            p
        }
        _ => cat,
    }
}

#[cfg(test)]
mod tests {
    use super::super::FrameRef;
    use super::*;

    fn user(name: &'static str, object: &'static str) -> FrameRef<'static> {
        FrameRef {
            name,
            object: Some(object),
            kernel: false,
        }
    }

    #[test]
    fn the_phase_decides_user_samples_no_frame_decided() {
        let app = [user("llvm::foo", "libLLVM.so")];
        let ldso = [user("[unknown]", "ld-linux-x86-64.so.2")];
        let named = [user("do_lookup_x", "ld-linux-x86-64.so.2")];
        let kernel = [
            FrameRef {
                name: "ksys_write",
                object: None,
                kernel: true,
            },
            user("llvm::foo", "libLLVM.so"),
        ];
        let init = Some(Initializers);
        assert_eq!(in_phase(classify(&app), &app, init), Initializers);
        assert_eq!(
            in_phase(classify(&ldso), &ldso, Some(LdsoRelocation)),
            LdsoRelocation
        );
        assert_eq!(in_phase(classify(&named), &named, init), SymbolLookup);
        assert_eq!(in_phase(classify(&kernel), &kernel, init), KernelOther);
        assert_eq!(in_phase(classify(&app), &app, None), Application);
        let empty: [FrameRef; 0] = [];
        assert_eq!(in_phase(Unknown, &empty, init), Unknown);
    }
}
