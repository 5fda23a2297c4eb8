# ldcost probe: fork() in a loop, as the seeds' forktime and forktest do.
#
#   for (i = 0; i < n; i++):
#       t0 = now(); pid = fork(); t1 = now();      // libc's fork(), or the raw syscall
#       if (pid == 0) child_action(i);             // _exit(code) | exit_fn(code) | execve
#       wait4(pid, &status, 0, &child_rusage); t2 = now();
#       getrusage(RUSAGE_THREAD, &parent_rusage);
#   end
#   t_end = now(); getrusage(RUSAGE_THREAD, &ru_end)
#   int3
#
# Lean (P_FLAGS bit 0): the loop is only `pid = fork(); wait4(pid, &status, 0, NULL)`, as the
# seed forktest's (fork, wait). The getrusage, the child's rusage and the three clock reads
# cost the parent 2-4 us per fork here (3-7% of a static program's fork, measured against
# a C loop with and without them), so the rates (forks per second by parent CPU and by wall
# time) come from a lean loop, bracketed by t_start/ru_start and t_end/ru_end.
#
# In: rdi = parameter block (params.s), rsp = the probe's own 16-byte aligned stack.
# Registers: r12 params, r13 current record, r14 i, rbx child pid.
    .text
    .globl ldcost_probe_fork
    .globl ldcost_probe_fork_end
    .p2align 4
ldcost_probe_fork:
    syscall                       # offset 0: the tracer's syscall stub (syscall; int3)
    int3
    nop
    nop                           # offset 4: the entry point
    mov %rdi, %r12
    mov P_RECORDS(%r12), %r13
    xor %r14d, %r14d
    call .Lfork_now
    mov %rax, P_T_START(%r12)
    mov $98, %eax                 # getrusage(RUSAGE_THREAD, &ru_start)
    mov $1, %edi
    lea P_RU_START(%r12), %rsi
    syscall
.Lfork_loop:
    cmp P_N(%r12), %r14
    jae .Lfork_done
    testq $1, P_FLAGS(%r12)
    jnz .Lfork_call
    call .Lfork_now
    mov %rax, R_T0(%r13)
.Lfork_call:
    mov P_FORK_FN(%r12), %rax
    test %rax, %rax
    jz .Lfork_raw
    call *%rax                    # libc fork(): -1 and errno on failure
    movslq %eax, %rax
    cmp $-1, %rax
    jne .Lfork_returned
    mov $-11, %rax                # report it as EAGAIN-like: the errno is in the target's TLS
    jmp .Lfork_fail
.Lfork_raw:
    mov $57, %eax                 # fork
    syscall
.Lfork_returned:
    test %rax, %rax
    jz .Lfork_child
    js .Lfork_fail
    mov %rax, %rbx
    mov %rax, R_PID(%r13)
    testq $1, P_FLAGS(%r12)
    jnz .Lfork_lean_wait
    call .Lfork_now
    mov %rax, R_T1(%r13)
.Lfork_wait:
    mov $61, %eax                 # wait4(pid, &status, 0, &child_rusage)
    mov %rbx, %rdi
    lea R_STATUS(%r13), %rsi
    xor %edx, %edx
    lea R_CHILD_RU(%r13), %r10
    syscall
    cmp $-4, %rax                 # EINTR: again
    je .Lfork_wait
    test %rax, %rax
    js .Lfork_fail
    call .Lfork_now
    mov %rax, R_T2(%r13)
    mov $98, %eax                 # getrusage(RUSAGE_THREAD, &parent_rusage)
    mov $1, %edi
    lea R_PARENT_RU(%r13), %rsi
    syscall
.Lfork_next:
    inc %r14
    mov %r14, P_DONE(%r12)
    add $R_SIZE, %r13
    jmp .Lfork_loop
.Lfork_lean_wait:
    mov $61, %eax                 # wait4(pid, &status, 0, NULL)
    mov %rbx, %rdi
    lea R_STATUS(%r13), %rsi
    xor %edx, %edx
    xor %r10d, %r10d
    syscall
    cmp $-4, %rax                 # EINTR: again
    je .Lfork_lean_wait
    test %rax, %rax
    js .Lfork_fail
    jmp .Lfork_next
.Lfork_fail:
    mov %rax, P_ERROR(%r12)
.Lfork_done:
    call .Lfork_now
    mov %rax, P_T_END(%r12)
    mov $98, %eax                 # getrusage(RUSAGE_THREAD, &ru_end)
    mov $1, %edi
    lea P_RU_END(%r12), %rsi
    syscall
    int3
    ud2

# The child. It never returns into the loop.
.Lfork_child:
    cmpq $0, P_DEVNULL(%r12)      # stdin/stdout/stderr to /dev/null (registers only)
    je 4f
    mov $2, %eax                  # open("/dev/null", O_RDWR)
    mov P_DEVNULL(%r12), %rdi
    mov $2, %esi
    xor %edx, %edx
    syscall
    test %rax, %rax
    js 4f
    mov %rax, %rbx
    mov $33, %eax                 # dup2(fd, 0), (fd, 1), (fd, 2)
    mov %rbx, %rdi
    xor %esi, %esi
    syscall
    mov $33, %eax
    mov %rbx, %rdi
    mov $1, %esi
    syscall
    mov $33, %eax
    mov %rbx, %rdi
    mov $2, %esi
    syscall
    cmp $2, %rbx
    jbe 4f
    mov $3, %eax                  # close(fd)
    mov %rbx, %rdi
    syscall
4:
    mov P_ACTION(%r12), %rax
    cmp $2, %rax
    je .Lfork_exec
    cmp $1, %rax
    jne .Lfork_exit_raw
    mov P_EXIT_FN(%r12), %rax
    mov P_EXIT_ALT(%r12), %rcx
    test %rcx, %rcx
    jz 1f
    test $1, %r14
    jz 1f
    mov %rcx, %rax
1:  mov P_CODE(%r12), %rdi
    call *%rax                    # exit(code): atexit handlers, stdio, lazy binding
.Lfork_exit_raw:
    mov P_CODE(%r12), %rdi
    mov $231, %eax                # exit_group(code), what _exit() does
    syscall
    ud2
.Lfork_exec:
    cmpq $0, P_PDEATH(%r12)
    je 2f
    mov $157, %eax                # prctl(PR_SET_PDEATHSIG, SIGKILL)
    mov $1, %edi
    mov $9, %esi
    syscall
    mov $110, %eax                # getppid(): the parent may have died before the prctl
    syscall
    cmp P_PPID(%r12), %rax
    jne 3f
2:  mov $14, %eax                 # rt_sigprocmask(SIG_SETMASK, &target_mask, NULL, 8)
    mov $2, %edi
    lea P_SIGMASK(%r12), %rsi
    xor %edx, %edx
    mov $8, %r10d
    syscall
    mov $59, %eax                 # execve(path, argv, envp)
    mov P_PATH(%r12), %rdi
    mov P_ARGV(%r12), %rsi
    mov P_ENVP(%r12), %rdx
    syscall
3:  mov $127, %edi                # exec failed: _exit(127), as a shell does
    mov $231, %eax
    syscall
    ud2

# now(): CLOCK_MONOTONIC in ns, in rax; through the vDSO when P_CLOCK_FN is set.
.Lfork_now:
    sub $24, %rsp
    mov $1, %edi
    mov %rsp, %rsi
    mov P_CLOCK_FN(%r12), %rax
    test %rax, %rax
    jz 1f
    call *%rax
    jmp 2f
1:  mov $228, %eax
    syscall
2:  mov (%rsp), %rax
    imul $1000000000, %rax, %rax
    add 8(%rsp), %rax
    add $24, %rsp
    ret
ldcost_probe_fork_end:
