package rootless

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wanlab/internal/rundir"
)

// Environment variables between a command, its copy inside the namespace
// and the keeper.
const (
	// ForceEnv set to 1 makes root take the rootless path too, as the
	// --rootless flag does.
	ForceEnv = "WANLAB_ROOTLESS"
	// keeperEnv tells a wanlab process that it is the keeper (Keeper).
	keeperEnv = "WANLAB_ROOTLESS_KEEPER"
	// lockFDEnv names the descriptor of the keeper's lock that a command
	// inside the namespace holds shared for its whole life, so that the
	// keeper does not end under it (see Keeper).
	lockFDEnv = "WANLAB_ROOTLESS_LOCKFD"
	// cwdEnv is the directory the command was started in. nsenter's
	// --wd opens it before entering the mount namespace, which leaves
	// the command in a directory its own root does not reach (getcwd(3)
	// fails); Inside enters it again by name instead.
	cwdEnv = "WANLAB_ROOTLESS_CWD"
)

// Files of the user's directory.
const (
	keeperFile = "keeper.json" // the keeper's pid and namespace
	keeperLog  = "keeper.log"  // the keeper's standard error
	startLock  = ".start.lock" // one command at a time finds or starts the keeper
	keeperLock = ".keeper.lock"
)

// Needed reports whether a command that builds or reaches testbeds must
// first enter the user's namespace: it is not root, or force (the
// --rootless flag) or ForceEnv asks for the rootless path as root, and it
// is not inside the namespace already.
func Needed(force bool) bool {
	if rundir.Rootless() {
		return false
	}
	return force || os.Geteuid() != 0 || os.Getenv(ForceEnv) == "1"
}

// Enter replaces the process with the command args (os.Args: the program
// and its arguments) run inside the user's namespace, in the same
// directory, with the same environment, standard streams and terminal; the
// keeper that holds the namespace is started first if none is running. It
// returns only if that cannot be done, with an error that says why and what
// to do.
func Enter(args []string) error {
	if len(args) == 0 {
		return errors.New("rootless: no command to run in the user namespace")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return errors.New("rootless: nsenter is not on PATH; it joins the user namespace that lets wanlab run without root: install util-linux (it comes with every distribution), or run wanlab as root")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("rootless: find wanlab's own binary: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("rootless: the current directory: %w (cd to one that exists)", err)
	}
	dir, err := UserDir()
	if err != nil {
		return err
	}
	start, err := lock(filepath.Join(dir, startLock), unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer start.Close()
	hold, err := lock(filepath.Join(dir, keeperLock), unix.LOCK_SH)
	if err != nil {
		return err
	}
	k, ok := findKeeper(dir)
	if !ok {
		if k, err = startKeeper(exe, dir); err != nil {
			hold.Close()
			return err
		}
	}
	start.Close()
	// The shared lock goes with the command into the namespace and lasts
	// as long as it does: the keeper ends only when no command holds it.
	if _, err := unix.FcntlInt(hold.Fd(), unix.F_SETFD, 0); err != nil {
		return fmt.Errorf("rootless: %w", err)
	}
	env := append(cleanEnv(os.Environ()),
		rundir.Env+"="+dir,
		lockFDEnv+"="+strconv.Itoa(int(hold.Fd())),
		cwdEnv+"="+cwd)
	argv := append([]string{"nsenter", "--target", strconv.Itoa(k.PID), "--user", "--mount", "--net",
		// The user is root inside already (the namespace maps nothing
		// else), and the namespace denies setgroups(2), which nsenter
		// would otherwise call.
		"--preserve-credentials",
		"--", exe}, args[1:]...)
	err = unix.Exec(nsenter, argv, env)
	return fmt.Errorf("rootless: run nsenter: %w", err)
}

// Begin is what a program that may use the namespace does first: started
// as the keeper, it runs the keeper and exits; started by Enter, it returns
// to its directory (Inside), or exits with status 1 saying why it cannot.
func Begin() {
	if IsKeeper() {
		os.Exit(Keeper())
	}
	if err := Inside(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
}

// Inside prepares a command that Enter started inside the namespace: it
// returns to the directory the command was started in, and keeps the
// keeper's lock held without passing it on to the programs it starts. It
// does nothing elsewhere.
func Inside() error {
	fd, err := strconv.Atoi(os.Getenv(lockFDEnv))
	os.Unsetenv(lockFDEnv)
	if err == nil && fd > 2 {
		unix.CloseOnExec(fd)
	}
	cwd := os.Getenv(cwdEnv)
	os.Unsetenv(cwdEnv)
	if cwd == "" {
		return nil
	}
	if err := os.Chdir(cwd); err != nil {
		return fmt.Errorf("rootless: the directory %s is not there inside the user namespace: %w (cd to another)", cwd, err)
	}
	// As a shell's cd would: programs that trust $PWD see the truth.
	os.Setenv("PWD", cwd)
	return nil
}

// cleanEnv drops the variables of this package from env.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case rundir.Env, keeperEnv, lockFDEnv, cwdEnv:
			continue
		}
		out = append(out, kv)
	}
	return out
}

// lock opens (creating it) the lock file path and takes the flock how.
func lock(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("rootless: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("rootless: lock %s: %w", path, err)
	}
	return f, nil
}

// keeper is the record of a running keeper.
type keeper struct {
	PID int `json:"pid"`
	// UserNS is the readlink(2) of its /proc/PID/ns/user, so that a pid
	// reused by another process is not taken for the keeper.
	UserNS string `json:"userns"`
}

// findKeeper reads the keeper's record and returns a process to join the
// namespace through: the keeper, if it still runs. If it was killed while
// other processes still run in the namespace (a detached testbed's), one of
// them: the namespace lives as long as they do, and a new one would not
// see their testbeds.
func findKeeper(dir string) (keeper, bool) {
	var k keeper
	b, err := os.ReadFile(filepath.Join(dir, keeperFile))
	if err != nil || json.Unmarshal(b, &k) != nil || k.PID <= 0 || k.UserNS == "" {
		return k, false
	}
	if own, err := os.Readlink("/proc/self/ns/user"); err != nil || own == k.UserNS {
		return k, false
	}
	if joinable(k.PID, k.UserNS) {
		return k, true
	}
	if pid, ok := memberOf(k.UserNS, 0); ok {
		return keeper{PID: pid, UserNS: k.UserNS}, true
	}
	return k, false
}

// memberOf returns a process other than except that is in the user
// namespace userns and joinable. Only the user's own processes can be in
// it; others' /proc/PID/ns cannot be read, and are passed over. ok is false
// when there is none (or /proc cannot be read).
func memberOf(userns string, except int) (pid int, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != except && joinable(pid, userns) {
			return pid, true
		}
	}
	return 0, false
}

// joinable reports whether process pid is in the user namespace userns
// and can be joined through: a zombie keeps its credentials, and so its
// user namespace, but no longer its other namespaces.
func joinable(pid int, userns string) bool {
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid))
	if err != nil || ns != userns {
		return false
	}
	for _, kind := range []string{"mnt", "net"} {
		if _, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, kind)); err != nil {
			return false
		}
	}
	return true
}

// startKeeper starts a keeper in a new user and mount namespace, waits
// until it is ready, and records it.
func startKeeper(exe, dir string) (keeper, error) {
	logf, err := os.OpenFile(filepath.Join(dir, keeperLog), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return keeper{}, fmt.Errorf("rootless: %w", err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return keeper{}, fmt.Errorf("rootless: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Args = []string{"wanlab", "(rootless keeper)"}
	cmd.Env = append(cleanEnv(os.Environ()), keeperEnv+"=1", rundir.Env+"="+dir)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A network namespace of its own too: the one wanlab's main
		// thread stays in and returns to (netns.Do), which the user
		// must own to re-enter; the machine's own is not theirs.
		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWNET,
		// The user is root inside, and nobody else is mapped: no
		// /etc/subuid range and no setuid newuidmap are needed.
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		// An unprivileged process may map its group only once
		// setgroups(2) is denied in the namespace.
		GidMappingsEnableSetgroups: false,
		// Its own session: Ctrl-C at the terminal of the command that
		// started it does not reach it.
		Setsid: true,
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return keeper{}, userNSRefused(err)
	}
	ready := make([]byte, 1)
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, _ := r.Read(ready); n != 1 {
		cmd.Process.Kill()
		cmd.Wait()
		log, _ := os.ReadFile(filepath.Join(dir, keeperLog))
		return keeper{}, fmt.Errorf("rootless: the user namespace's keeper did not start: %s", strings.TrimSpace(string(log)))
	}
	k := keeper{PID: cmd.Process.Pid}
	if k.UserNS, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/user", k.PID)); err != nil {
		return keeper{}, fmt.Errorf("rootless: the keeper ended at once: %w", err)
	}
	b, _ := json.Marshal(k)
	tmp := filepath.Join(dir, "."+keeperFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return keeper{}, fmt.Errorf("rootless: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, keeperFile)); err != nil {
		return keeper{}, fmt.Errorf("rootless: %w", err)
	}
	// Not waited for: it outlives this command (and is reaped by init
	// once this process has gone).
	cmd.Process.Release()
	return k, nil
}

// userNSRefused explains a kernel's refusal to create a user namespace:
// which setting forbids it, and that root still works.
func userNSRefused(err error) error {
	var why []string
	if v := sysctl("user/max_user_namespaces"); v == "0" {
		why = append(why, "user.max_user_namespaces is 0 (sysctl -w user.max_user_namespaces=15000)")
	}
	if v := sysctl("kernel/unprivileged_userns_clone"); v == "0" {
		why = append(why, "kernel.unprivileged_userns_clone is 0 (sysctl -w kernel.unprivileged_userns_clone=1)")
	}
	if v := sysctl("kernel/apparmor_restrict_unprivileged_userns"); v == "1" {
		why = append(why, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1: allow wanlab with an AppArmor profile granting `userns,`, or set the sysctl to 0)")
	}
	if len(why) == 0 {
		why = append(why, "user.max_user_namespaces, kernel.unprivileged_userns_clone or an LSM forbids it")
	}
	return fmt.Errorf("rootless: this kernel does not let an ordinary user create a user namespace (%v): %s; or run wanlab as root (sudo)", err, strings.Join(why, "; "))
}

// sysctl reads /proc/sys/NAME, or "" if it does not exist.
func sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
