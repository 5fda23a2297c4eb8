# ldcost probe: vfork() in a loop, as seed 003's vfork variant ("why copy your page tables
# when you're going to throw them away?"). The child shares the parent's memory and stack
# until it execs or exits, so its path uses registers and syscalls only, never the stack.
#
#   for (i = 0; i < n; i++):
#       t0 = now(); pid = vfork();                 // raw syscall 58
#       if (pid == 0) execve(...) or _exit(code)
#       t1 = now();                                 // the child has exec'd or exited
#       wait4(pid, &status, 0, &child_rusage); t2 = now();
#       getrusage(RUSAGE_THREAD, &parent_rusage);
#   end
#   int3
    .text
    .globl ldcost_probe_vfork
    .globl ldcost_probe_vfork_end
    .p2align 4
ldcost_probe_vfork:
    syscall                       # offset 0: the tracer's syscall stub
    int3
    nop
    nop                           # offset 4: the entry point
    mov %rdi, %r12
    mov P_RECORDS(%r12), %r13
    xor %r14d, %r14d
    call .Lvfork_now
    mov %rax, P_T_START(%r12)
    mov $98, %eax
    mov $1, %edi
    lea P_RU_START(%r12), %rsi
    syscall
.Lvfork_loop:
    cmp P_N(%r12), %r14
    jae .Lvfork_done
    call .Lvfork_now
    mov %rax, R_T0(%r13)
    mov $58, %eax                 # vfork
    syscall
    test %rax, %rax
    jz .Lvfork_child
    js .Lvfork_fail
    mov %rax, %rbx
    mov %rax, R_PID(%r13)
    call .Lvfork_now
    mov %rax, R_T1(%r13)
.Lvfork_wait:
    mov $61, %eax
    mov %rbx, %rdi
    lea R_STATUS(%r13), %rsi
    xor %edx, %edx
    lea R_CHILD_RU(%r13), %r10
    syscall
    cmp $-4, %rax
    je .Lvfork_wait
    test %rax, %rax
    js .Lvfork_fail
    call .Lvfork_now
    mov %rax, R_T2(%r13)
    mov $98, %eax
    mov $1, %edi
    lea R_PARENT_RU(%r13), %rsi
    syscall
    inc %r14
    mov %r14, P_DONE(%r12)
    add $R_SIZE, %r13
    jmp .Lvfork_loop
.Lvfork_fail:
    mov %rax, P_ERROR(%r12)
.Lvfork_done:
    call .Lvfork_now
    mov %rax, P_T_END(%r12)
    int3
    ud2

.Lvfork_child:
    cmpq $2, P_ACTION(%r12)
    je .Lvfork_exec
    mov P_CODE(%r12), %rdi
    mov $231, %eax                # exit_group(code)
    syscall
    ud2
.Lvfork_exec:
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
    cmpq $0, P_PDEATH(%r12)
    je 2f
    mov $157, %eax                # prctl(PR_SET_PDEATHSIG, SIGKILL)
    mov $1, %edi
    mov $9, %esi
    syscall
    mov $110, %eax                # getppid()
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
3:  mov $127, %edi
    mov $231, %eax
    syscall
    ud2

.Lvfork_now:
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
ldcost_probe_vfork_end:
