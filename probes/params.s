# ldcost fork probes: the parameter block and the per-iteration record.
#
# The tracer (src/trace/inject.rs) writes the parameter block into the probe's page in the
# target, points rdi at it, rsp at the top of the probe's own stack, rip at the probe's entry,
# and lets the target run. The probe ends with int3 (SIGTRAP to the tracer). Nothing in the
# loop stops the target. The layout here and ProbeParams / ProbeRecord in
# src/trace/inject.rs must agree (a test checks the offsets).

# Parameter block (in the probe's page: inherited by children, unlike the records).
.set P_N,          0      # iterations
.set P_ACTION,     8      # child action: 0 _exit(code), 1 call exit_fn(code), 2 execve
.set P_EXIT_FN,    16     # exit() to call (the target's PLT slot, or libc's exit)
.set P_EXIT_ALT,   24     # if not 0: odd iterations call this one instead (A/B of lazy binding)
.set P_PATH,       32     # execve: path
.set P_ARGV,       40     # execve: argv
.set P_ENVP,       48     # execve: envp
.set P_RECORDS,    56     # the records (a MADV_DONTFORK mapping, pre-faulted)
.set P_SPAWN_FN,   64     # posix_spawn() (probe_spawn only)
.set P_CODE,       72     # exit status of the child for actions 0 and 1
.set P_CLOCK_FN,   80     # the vDSO's clock_gettime, or 0 for the syscall
.set P_DONE,       88     # out: iterations completed
.set P_ERROR,      96     # out: -errno of the first failed fork/spawn/wait, else 0
.set P_T_START,    104    # out: CLOCK_MONOTONIC ns at the start of the loop
.set P_T_END,      112    # out: ... and at its end
.set P_RU_START,   120    # out: getrusage(RUSAGE_THREAD) at the start (struct rusage, 144 bytes)
.set P_SIGMASK,    264    # the target's own signal mask, restored in the child before execve
.set P_PDEATH,     272    # execve: the child asks for SIGKILL when its parent dies
.set P_PPID,       280    # execve: the parent's pid (the getppid check after PR_SET_PDEATHSIG)
.set P_ATTR,       288    # posix_spawn: posix_spawnattr_t * (the target's signal mask for the child)
.set P_FORK_FN,    296    # probe_fork: libc's fork(), or 0 for the raw fork syscall
.set P_DEVNULL,    304    # "/dev/null": the child's stdin, stdout and stderr (the target's
                          # output must stay its own: exit() would flush its stdio buffers)
.set P_FLAGS,      312    # probe_fork: bit 0 "lean": no clock, no getrusage and no child rusage in
                          # the loop (only fork and wait4, as the seed forktest), for the rates
.set P_RU_END,     320    # out: getrusage(RUSAGE_THREAD) at the end (after P_T_END)
.set P_SIZE,       464

# One record per iteration.
.set R_T0,         0      # CLOCK_MONOTONIC ns before fork/vfork/posix_spawn
.set R_T1,         8      # ... when it returned in the parent
.set R_T2,         16     # ... when wait4 returned (the child is reaped)
.set R_PID,        24     # the child's pid
.set R_STATUS,     32     # wait4 status
.set R_CHILD_RU,   48     # the child's struct rusage, from wait4
.set R_PARENT_RU,  192    # getrusage(RUSAGE_THREAD) of the parent after the reap
.set R_SIZE,       336
