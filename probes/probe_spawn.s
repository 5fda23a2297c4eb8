# ldcost probe: posix_spawn() in a loop (glibc: clone(CLONE_VM|CLONE_VFORK) on a separate
# stack, then execve). The child always execs; its signal mask is the target's own, through
# the posix_spawnattr_t the tracer built (POSIX_SPAWN_SETSIGMASK).
#
#   for (i = 0; i < n; i++):
#       t0 = now(); err = posix_spawn(&pid, path, NULL, attr, argv, envp); t1 = now();
#       wait4(pid, &status, 0, &child_rusage); t2 = now();
#       getrusage(RUSAGE_THREAD, &parent_rusage);
#   end
#   int3
    .text
    .globl ldcost_probe_spawn
    .globl ldcost_probe_spawn_end
    .p2align 4
ldcost_probe_spawn:
    syscall                       # offset 0: the tracer's syscall stub
    int3
    nop
    nop                           # offset 4: the entry point
    mov %rdi, %r12
    mov P_RECORDS(%r12), %r13
    xor %r14d, %r14d
    call .Lspawn_now
    mov %rax, P_T_START(%r12)
    mov $98, %eax
    mov $1, %edi
    lea P_RU_START(%r12), %rsi
    syscall
.Lspawn_loop:
    cmp P_N(%r12), %r14
    jae .Lspawn_done
    call .Lspawn_now
    mov %rax, R_T0(%r13)
    movq $0, R_PID(%r13)
    lea R_PID(%r13), %rdi         # pid_t *pid
    mov P_PATH(%r12), %rsi        # path
    xor %edx, %edx                # file actions: none
    mov P_ATTR(%r12), %rcx        # attributes
    mov P_ARGV(%r12), %r8
    mov P_ENVP(%r12), %r9
    call *P_SPAWN_FN(%r12)
    test %eax, %eax
    jz 1f
    neg %eax                      # posix_spawn returns the errno: report -errno
    movslq %eax, %rax
    jmp .Lspawn_fail
1:  movslq R_PID(%r13), %rbx
    call .Lspawn_now
    mov %rax, R_T1(%r13)
.Lspawn_wait:
    mov $61, %eax
    mov %rbx, %rdi
    lea R_STATUS(%r13), %rsi
    xor %edx, %edx
    lea R_CHILD_RU(%r13), %r10
    syscall
    cmp $-4, %rax
    je .Lspawn_wait
    test %rax, %rax
    js .Lspawn_fail
    call .Lspawn_now
    mov %rax, R_T2(%r13)
    mov $98, %eax
    mov $1, %edi
    lea R_PARENT_RU(%r13), %rsi
    syscall
    inc %r14
    mov %r14, P_DONE(%r12)
    add $R_SIZE, %r13
    jmp .Lspawn_loop
.Lspawn_fail:
    mov %rax, P_ERROR(%r12)
.Lspawn_done:
    call .Lspawn_now
    mov %rax, P_T_END(%r12)
    int3
    ud2

.Lspawn_now:
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
ldcost_probe_spawn_end:
