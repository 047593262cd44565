package bridgeport

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// progName names the drop program, as `bpftool prog` lists it; filterName
// names its filter, as `tc filter show` lists it. Release and RestoreStale
// know wanlab's filter by it.
const (
	progName   = "wanlab_drop"
	filterName = "wanlab-port-drop"
)

// tcActShot is TC_ACT_SHOT (linux/pkt_cls.h): a direct-action classifier
// that returns it drops the frame.
const tcActShot = 2

// progLoadAttr is the head of union bpf_attr (linux/bpf.h) as
// BPF_PROG_LOAD reads it, up to expected_attach_type; the kernel takes a
// shorter attr as if the rest were zero.
type progLoadAttr struct {
	progType           uint32
	insnCnt            uint32
	insns              uint64
	license            uint64
	logLevel           uint32
	logSize            uint32
	logBuf             uint64
	kernVersion        uint32
	progFlags          uint32
	progName           [unix.BPF_OBJ_NAME_LEN]byte
	progIfindex        uint32
	expectedAttachType uint32
}

// dropProgram is `r0 = TC_ACT_SHOT; exit`, each instruction a struct
// bpf_insn {code, dst_reg:4 src_reg:4, off, imm} read as a little-endian
// word (BPF_ALU64|BPF_MOV|BPF_K into r0, then BPF_JMP|BPF_EXIT).
var dropProgram = [2]uint64{
	unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_K | tcActShot<<32,
	unix.BPF_JMP | unix.BPF_EXIT,
}

// loadProgram is loadDrop; a variable so that tests can make Take fail
// half-way.
var loadProgram = loadDrop

// loadDrop loads dropProgram as a BPF_PROG_TYPE_SCHED_CLS program and
// returns its file descriptor, which the caller closes once a filter
// holds the program.
func loadDrop() (int, error) {
	// The license only gates the GPL-only helpers, of which the program
	// calls none.
	license := []byte("GPL\x00")
	insns := dropProgram
	attr := progLoadAttr{
		progType: unix.BPF_PROG_TYPE_SCHED_CLS,
		insnCnt:  uint32(len(insns)),
		insns:    uint64(uintptr(unsafe.Pointer(&insns[0]))),
		license:  uint64(uintptr(unsafe.Pointer(&license[0]))),
	}
	copy(attr.progName[:], progName)
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(&insns)
	runtime.KeepAlive(license)
	if errno != 0 {
		return -1, fmt.Errorf("bridgeport: load the drop program (bpf BPF_PROG_LOAD): %w; a kernel without eBPF (CONFIG_BPF_SYSCALL) cannot hold a port", errno)
	}
	// The kernel makes a program's descriptor close-on-exec itself.
	return int(fd), nil
}
