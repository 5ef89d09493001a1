import { arch } from 'node:os';

/**
 * A seccomp deny-list for the sandbox, compiled by hand into a classic BPF program (the format
 * `bwrap --seccomp FD` reads: an array of `struct sock_filter`). Denied calls fail with EPERM
 * (the box's Python sees a PermissionError); everything else is allowed — the namespaces and
 * rlimits are the main walls, this removes kernel attack surface a data-analysis kernel never
 * needs (ptrace, mount, keyrings, bpf, io_uring, new namespaces, module loading, …).
 *
 * Only x86_64 is supported: on other architectures `compileSeccompDenyList()` returns undefined
 * and the box runs under namespaces and rlimits only (the preflight reports it).
 */

// <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h>
const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_JMP_JGE_K = 0x35;
const BPF_JMP_JSET_K = 0x45;
const BPF_RET_K = 0x06;
const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;
/** seccomp_data: nr at 0, arch at 4, args[0] (low word, little-endian) at 16. */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0 = 16;

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: no nested namespaces. */
const CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;

/** x86_64 syscall numbers denied with EPERM. */
export const DENIED_SYSCALLS_X86_64: Readonly<Record<string, number>> = {
  ptrace: 101,
  syslog: 103,
  uselib: 134,
  personality: 135,
  vhangup: 153,
  pivot_root: 155,
  _sysctl: 156,
  adjtimex: 159,
  chroot: 161,
  acct: 163,
  settimeofday: 164,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  sethostname: 170,
  setdomainname: 171,
  iopl: 172,
  ioperm: 173,
  init_module: 175,
  delete_module: 176,
  quotactl: 179,
  nfsservctl: 180,
  lookup_dcookie: 212,
  clock_settime: 227,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  migrate_pages: 256,
  unshare: 272,
  move_pages: 279,
  perf_event_open: 298,
  fanotify_init: 300,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  clock_adjtime: 305,
  setns: 308,
  process_vm_readv: 310,
  process_vm_writev: 311,
  kcmp: 312,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  pidfd_getfd: 438,
  mount_setattr: 442,
  quotactl_fd: 443,
};

const CLONE_X86_64 = 56;
const CLONE3_X86_64 = 435;

type Insn = [code: number, jt: number, jf: number, k: number];

/** The compiled program for this machine, or undefined where no syscall table is known. */
export function compileSeccompDenyList(machine: string = arch()): Buffer | undefined {
  if (machine !== 'x64') return undefined;
  const denied = Object.values(DENIED_SYSCALLS_X86_64);
  const program: Insn[] = [];
  // 0: a foreign ABI could name other syscalls by these numbers: kill
  program.push([BPF_LD_W_ABS, 0, 0, OFFSET_ARCH]);
  program.push([BPF_JMP_JEQ_K, 1, 0, AUDIT_ARCH_X86_64]);
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS]);
  program.push([BPF_LD_W_ABS, 0, 0, OFFSET_NR]);
  // layout after the checks below (BPF jumps only forward):
  // [ALLOW] [clone: load flags, deny namespace flags, ALLOW] [DENY EPERM] [DENY ENOSYS]
  const checks = 1 /* x32 */ + denied.length + 1 /* clone3 */ + 1; /* clone */
  const allowAt = program.length + checks;
  const cloneCheckAt = allowAt + 1;
  const epermAt = allowAt + 4;
  const enosysAt = allowAt + 5;
  const jumpTo = (target: number) => target - (program.length + 1);
  program.push([BPF_JMP_JGE_K, jumpTo(epermAt), 0, X32_SYSCALL_BIT]);
  for (const nr of denied) program.push([BPF_JMP_JEQ_K, jumpTo(epermAt), 0, nr]);
  // glibc falls back from clone3 to clone on ENOSYS; clone's flags can then be checked (clone3 passes a pointer)
  program.push([BPF_JMP_JEQ_K, jumpTo(enosysAt), 0, CLONE3_X86_64]);
  program.push([BPF_JMP_JEQ_K, jumpTo(cloneCheckAt), 0, CLONE_X86_64]);
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  program.push([BPF_LD_W_ABS, 0, 0, OFFSET_ARG0]);
  program.push([BPF_JMP_JSET_K, jumpTo(epermAt), 0, CLONE_NAMESPACE_FLAGS]);
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS]);
  for (const [code, jt, jf] of program) {
    if (jt < 0 || jt > 255 || jf < 0 || jf > 255 || code > 0xffff) throw new Error('seccomp: jump out of range');
  }
  const buffer = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    buffer.writeUInt16LE(code, i * 8);
    buffer.writeUInt8(jt, i * 8 + 2);
    buffer.writeUInt8(jf, i * 8 + 3);
    buffer.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return buffer;
}
